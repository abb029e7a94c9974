"""How people see a process's fields (issue 21): one label per field, amounts in a currency, the
columns of a list of objects.

The PROCESS.md format does not change and a published version never changes (spec §6 rule 5: the
content hash covers the file only), so these facts are rows beside the version
(`FieldPresentation`), keyed by a field path: `inputs.<name>` or `steps.<step id>.output.<name>`.
Admin edits them (audited); publishing carries them over to the next version while the field still
exists with the same type. Pages read them here and nowhere else: `field_label` is the only rule
for a field's label, on every page.
"""

import re
from dataclasses import asdict, dataclass, field

from django.core.cache import cache
from django.db import transaction

from kernel import audit, clock
from kernel.models import EventKind

from .currencies import decimals_of
from .definition import Definition, definition_for
from .fields import field_type, normalize
from .models import FieldPresentation, ProcessVersion

# Pages read the facts from the cache (shared by every worker); an admin change deletes its keys
# when it commits, and the lifetime bounds what a read racing that change could keep.
CACHE_SECONDS = 300
LABEL_CHARS = 80
MOST_DECIMALS = 8
MOST_COLUMNS = 30
COLUMN_TYPES = {"string": "text", "number": "number", "boolean": "yes or no", "date": "date"}


def human_key(name) -> str:
    """A field's key as people read it: `vendorName` and `vendor_name` read "Vendor name"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(name or ""))
    words = re.sub(r"[_-]+", " ", spaced).strip().lower()
    return words[:1].upper() + words[1:]


@dataclass(frozen=True)
class Column:
    """One column of a list of objects: the key in each row, its heading, its type."""

    name: str
    label: str = ""
    type: str = "string"
    currency: str = ""

    @property
    def heading(self) -> str:
        return self.label or human_key(self.name)


@dataclass(frozen=True)
class FieldFacts:
    """What admin declared for one field; empty: the field as its name and type say."""

    label: str = ""
    currency: str = ""
    decimals: int | None = None
    columns: tuple[Column, ...] = field(default_factory=tuple)

    @property
    def places(self) -> int | None:
        """The decimals an amount shows at least: the declared ones, else the currency's."""
        if self.decimals is not None:
            return self.decimals
        return decimals_of(self.currency) if self.currency else None

    @property
    def empty(self) -> bool:
        return not (self.label or self.currency or self.decimals is not None or self.columns)

    def stored(self) -> dict:
        """The facts as the audit log keeps them."""
        return {"label": self.label, "currency": self.currency, "decimals": self.decimals,
                "columns": [asdict(column) for column in self.columns]}


NO_FACTS = FieldFacts()


def field_label(name, facts: FieldFacts | None = None) -> str:
    """The one label of a field on every page: admin's label, else the name in words. (The
    process's description of the field is help text under it, not the label.)"""
    return (facts.label if facts else "") or human_key(name)


def input_path(name: str) -> str:
    return f"inputs.{name}"


def output_path(step_id: str, name: str) -> str:
    return f"steps.{step_id}.output.{name}"


class Presentation:
    """The facts of one version's fields, by path."""

    def __init__(self, facts: dict[str, FieldFacts] | None = None):
        self.facts = facts or {}

    def of(self, path: str) -> FieldFacts:
        return self.facts.get(path, NO_FACTS)

    def input(self, name: str) -> FieldFacts:
        return self.of(input_path(name))

    def output(self, step_id: str, name: str) -> FieldFacts:
        return self.of(output_path(step_id, name))


def _facts(row: FieldPresentation) -> FieldFacts:
    columns = tuple(Column(**{key: column.get(key, "") or default for key, default in
                              (("name", ""), ("label", ""), ("type", "string"), ("currency", ""))})
                    for column in row.columns or [] if isinstance(column, dict))
    return FieldFacts(label=row.label, currency=row.currency, decimals=row.decimals, columns=columns)


def _key(version_id: int) -> str:
    return f"field-presentation:{version_id}"


def _name_key(organization_id: int, process: str, number: int) -> str:
    return f"field-presentation:{organization_id}:{process}:{number}"


def presentations_for(version_ids) -> dict[int, Presentation]:
    """The presentation of each version (a version without facts has an empty one): from the
    cache, else one query for all that are missing."""
    wanted = {pk for pk in version_ids if pk is not None}
    cached = cache.get_many([_key(pk) for pk in wanted]) if wanted else {}
    found = {pk: cached[_key(pk)] for pk in wanted if _key(pk) in cached}
    missing = wanted - found.keys()
    if missing:
        fresh: dict[int, dict[str, FieldFacts]] = {pk: {} for pk in missing}
        for row in FieldPresentation.objects.filter(version_id__in=missing):
            fresh[row.version_id][row.path] = _facts(row)
        cache.set_many({_key(pk): facts for pk, facts in fresh.items()}, CACHE_SECONDS)
        found.update(fresh)
    return {pk: Presentation(facts) for pk, facts in found.items()}


def presentation_for(version_id: int | None) -> Presentation:
    return presentations_for([version_id])[version_id] if version_id is not None else Presentation()


def presentation_of_number(organization, *, process: str, number: int) -> Presentation:
    """The presentation of a published version named by its process and number (cached, else
    one query)."""
    key = _name_key(organization.id, process, number)
    facts = cache.get(key)
    if facts is None:
        rows = FieldPresentation.objects.filter(version__process__organization=organization,
                                                version__process__name=process, version__number=number)
        facts = {row.path: _facts(row) for row in rows}
        cache.set(key, facts, CACHE_SECONDS)
    return Presentation(facts)


def _forget(version: ProcessVersion) -> None:
    """Drop the cached facts of a version now and again once the change has committed (a page
    read in between may have cached the facts from before it)."""
    keys = [_key(version.pk), _name_key(version.process.organization_id, version.process.name, version.number)]
    cache.delete_many(keys)
    transaction.on_commit(lambda: cache.delete_many(keys))


# ---------------------------------------------------------------- which fields a version has


def declared_fields(definition: Definition) -> dict[str, dict]:
    """path -> normalized spec of every field a version declares: inputs, then each step's output,
    in the file's order."""
    paths = {input_path(name): normalize(spec) for name, spec in definition.inputs.items()}
    for step in definition.steps:
        for name, spec in (step.output or {}).items():
            paths[output_path(step.id, name)] = normalize(spec)
    return paths


def _shape(spec: dict) -> tuple:
    """What must stay the same for facts to carry over: the type, and a list's item type."""
    items = spec.get("items")
    return spec["type"], items["type"] if items else None


def is_rows(spec: dict) -> bool:
    """A list of objects: filled and shown as a table of columns."""
    return _shape(spec) == ("list", "object")


# ---------------------------------------------------------------- the rules


def facts_issues(spec: dict, facts: FieldFacts) -> list[str]:
    """Every reason these facts do not fit the field `spec` (normalized); empty when they do."""
    issues = []
    if len(facts.label) > LABEL_CHARS or "\n" in facts.label:
        issues.append(f"label: at most {LABEL_CHARS} characters on one line")
    if facts.currency:
        if decimals_of(facts.currency) is None:
            issues.append(f'currency: "{facts.currency}" is not an ISO 4217 currency code (like USD, EUR, JPY)')
        elif spec["type"] != "number":
            issues.append("currency: only a number field is an amount in a currency")
    if facts.decimals is not None:
        if not facts.currency:
            issues.append("decimals: only an amount in a currency has decimals")
        elif not 0 <= facts.decimals <= MOST_DECIMALS:
            issues.append(f"decimals: a whole number from 0 to {MOST_DECIMALS}")
    if facts.columns:
        issues += _column_issues(spec, facts.columns)
    return issues


def _column_issues(spec: dict, columns) -> list[str]:
    if not is_rows(spec):
        return ["columns: only a list of objects has columns"]
    if len(columns) > MOST_COLUMNS:
        return [f"columns: at most {MOST_COLUMNS}"]
    issues, seen = [], set()
    for line, column in enumerate(columns, start=1):
        where = f"columns, line {line}"
        if not column.name:
            issues.append(f"{where}: a name is needed")
        elif column.name in seen:
            issues.append(f'{where}: "{column.name}" is named twice')
        seen.add(column.name)
        if column.type not in COLUMN_TYPES:
            issues.append(f'{where}: type "{column.type}" is not one of {", ".join(COLUMN_TYPES.values())}')
        if len(column.label) > LABEL_CHARS or len(column.name) > 64:
            issues.append(f"{where}: a name of at most 64 and a label of at most {LABEL_CHARS} characters")
        if column.currency:
            if column.type != "number":
                issues.append(f"{where}: only a number column has a currency")
            elif decimals_of(column.currency) is None:
                issues.append(f'{where}: "{column.currency}" is not an ISO 4217 currency code (like USD, EUR, JPY)')
    return issues


class FactsRefused(Exception):
    def __init__(self, issues: list[str]):
        super().__init__("; ".join(issues))
        self.issues = issues


@transaction.atomic
def declare(*, version: ProcessVersion, definition: Definition, path: str, facts: FieldFacts,
            actor: audit.Actor) -> bool:
    """Set (or, with empty facts, clear) how a field of a published version is shown; whether
    anything changed. Refused with every issue when the path is not a field of the version or
    the facts do not fit it; the audit log records who changed what, before and after."""
    spec = declared_fields(definition).get(path)
    if spec is None:
        raise FactsRefused([f"{path}: not a field of {version}"])
    issues = facts_issues(spec, facts)
    if issues:
        raise FactsRefused(issues)
    row = FieldPresentation.objects.select_for_update().filter(version=version, path=path).first()
    before = _facts(row) if row else NO_FACTS
    if before == facts:
        return False
    if facts.empty:
        row.delete()
    else:
        values = {"label": facts.label, "currency": facts.currency, "decimals": facts.decimals,
                  "columns": [asdict(column) for column in facts.columns],
                  "organization_id": version.organization_id}
        FieldPresentation.objects.update_or_create(version=version, path=path, defaults=values)
    _forget(version)
    audit.record(EventKind.FIELD_PRESENTATION, organization_id=version.process.organization_id, actor=actor,
                 at=clock.now(), data={"process": version.process.name, "version": version.number, "path": path,
                                       "before": None if before.empty else before.stored(),
                                       "after": None if facts.empty else facts.stored()})
    return True


def carry_over(*, previous: ProcessVersion | None, version: ProcessVersion, definition: Definition) -> list[str]:
    """Copy the previous version's facts to a newly published one, for every field it still has
    with the same type (a currency stays on a number, columns on a list of objects); the paths
    carried. Part of the publication, which the audit log records."""
    if previous is None:
        return []
    before, now = declared_fields(definition_for(previous.pk)), declared_fields(definition)
    carried = [FieldPresentation(version=version, organization_id=version.organization_id, path=row.path, label=row.label, currency=row.currency,
                                 decimals=row.decimals, columns=row.columns)
               for row in FieldPresentation.objects.filter(version=previous)
               if row.path in now and row.path in before and _shape(before[row.path]) == _shape(now[row.path])]
    FieldPresentation.objects.bulk_create(carried)
    _forget(version)
    return [row.path for row in carried]


KEY_CHARS = 80


def business_key(inputs: dict, declared: dict) -> str:
    """What people call a run, on every page (inbox, operators, work item, run, runs list, bulk
    results) and in webhooks' payloads: the first input its version declares as text (the vendor, the invoice number; not a
    person's address), shortened to KEY_CHARS. The declared inputs are required: without them a
    person's address would pass for a name."""
    for name, spec in declared.items():
        value = (inputs or {}).get(name)
        if field_type(spec) == "string" and isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            return text if len(text) <= KEY_CHARS else text[: KEY_CHARS - 1] + "…"
    return ""
