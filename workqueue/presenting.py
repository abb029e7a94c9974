"""Shapes the tools' answers (run view, work items) into what the templates show. No rules here:
only reading, ordering and formatting of data the tools returned."""

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from decimal import Decimal

from django.utils import formats

from kernel import jsonio
from kernel.states import UNFINISHED
from processes.fields import field_type, is_number
from processes.maps import humanize
from processes.presentation import NO_FACTS, FieldFacts, Presentation, business_key, field_label  # noqa: F401 (business_key: the pages' name for it)
from processes.rendering import render_markdown
from runs.presenters import sent_back

RECORD_KEYS = ("output", "evidence", "summary", "next", "reason", "decision", "note", "check", "by", "at")
KIND_LABELS = {"agent": "Agent", "task": "Task", "approve": "Approval", "wait": "Wait", "wait_until": "Wait until",
               "wait_for": "Wait for event", "finish": "Finish", "parallel": "Parallel"}
ITEM_KIND_LABELS = {"task": "Task", "approve": "Approval", "agent": "Escalation"}
DONE_LABELS = {"completed": "Completed", "approved": "Approved", "rejected": "Rejected",
               "returned": "Returned to the agent", "failed": "Failed"}
NOTE_VERBS = {"rejected": "reject", "returned": "return", "failed": "fail", "approved": "approving"}
DECISION_LABELS = {"completed": "Complete", "approved": "Approve", "rejected": "Reject", "returned": "Return to agent",
                   "failed": "Fail the run"}


def item_kind_label(kind: str, escalated: bool) -> str:
    return "Escalation" if escalated else ITEM_KIND_LABELS.get(kind, kind)


def parse_iso(text) -> dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _without_urls(value):
    """Run data minus the short-lived file URLs (they change on every read)."""
    if isinstance(value, dict):
        return {key: _without_urls(item) for key, item in value.items() if key != "url"}
    if isinstance(value, list):
        return [_without_urls(item) for item in value]
    return value


def _digest(value) -> str:
    try:
        text = jsonio.dumps(_without_urls(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:  # data stored before arguments were limited to 64 levels: still a page
        return "too-deep"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def shown_digest(view: dict) -> str:
    """What the page showed, per part, so a stale decision can say what changed since."""
    data = view["data"]
    return jsonio.dumps({"inputs": _digest(data["inputs"]),
                       "steps": {step_id: _digest(entry) for step_id, entry in data["steps"].items()}},
                      separators=(",", ":"))


def changed_parts(shown: str, view: dict) -> tuple[bool, list[str]]:
    """(inputs changed, step ids whose data changed) between a shown digest and a fresh view."""
    try:
        before = jsonio.loads(shown)
        before_steps = before.get("steps", {}) if isinstance(before, dict) else {}
        before_inputs = before.get("inputs") if isinstance(before, dict) else None
    except (TypeError, ValueError):
        before_steps, before_inputs = None, None
    fresh = jsonio.loads(shown_digest(view))
    order = [step["id"] for step in view["steps"]]
    if before_steps is None or not isinstance(before_steps, dict):
        return False, [step_id for step_id in order if step_id in fresh["steps"]]
    changed = [step_id for step_id in order
               if before_steps.get(step_id) != fresh["steps"].get(step_id)]
    return before_inputs != fresh["inputs"], changed


# ---------------------------------------------------------------- values and their labels


def money(value, currency: str, places: int) -> str:
    """An amount as finance reads it: "USD 12,500.50". The ISO code (unambiguous where "$" is
    not), the page's separators, at least the currency's decimals, and every decimal that was sent
    (spec §2.3: never rounded; 12500.12345 USD shows all five)."""
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    exponent = number.as_tuple().exponent
    sent = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    if isinstance(exponent, int) and exponent > 0:
        number = number.quantize(Decimal(1))  # 1E+3: written out, exactly (no digit is lost)
    text = formats.number_format(number, decimal_pos=max(places, sent), force_grouping=True)
    return f"{currency}\u00a0{text}"


def amount_text(value, facts: FieldFacts | None) -> str | None:
    """A number of a field declared as an amount, with its currency; None for any other value."""
    if facts is None or not facts.currency or not is_number(value):
        return None
    return money(value, facts.currency, facts.places or 0)


@dataclass(frozen=True)
class ShownField:
    """One field's value on a page, under its one label (processes.presentation.field_label)."""

    name: str
    value: object
    facts: FieldFacts = NO_FACTS

    @property
    def label(self) -> str:
        return field_label(self.name, self.facts)


def shown_fields(values, facts_of, declared=(), limit: int | None = None) -> list[ShownField]:
    """The fields of inputs or an output, each with its facts (`facts_of(name)`): the declared
    ones in the file's order (PostgreSQL's jsonb keeps none), then any other."""
    values = values if isinstance(values, dict) else {}
    names = [name for name in declared if name in values] + [name for name in values if name not in declared]
    return [ShownField(name, values[name], facts_of(name)) for name in names[:limit]]


def shown_inputs(inputs, presentation: Presentation | None, declared=(), limit: int | None = None) -> list[ShownField]:
    presentation = presentation or Presentation()
    return shown_fields(inputs, presentation.input, declared, limit)


# ---------------------------------------------------------------- records and timelines


@dataclass
class Record:
    """One completion of a step (current or from history)."""

    step_id: str
    kind: str
    attempt: int
    current: bool
    data: dict
    presentation: Presentation | None = None

    @property
    def title(self) -> str:
        return humanize(self.step_id)

    @property
    def at(self):
        return self.data.get("at")

    @property
    def by(self):
        return self.data.get("by")

    @property
    def output_items(self) -> list[ShownField]:
        presentation = self.presentation or Presentation()
        return shown_fields(self.data.get("output"), lambda name: presentation.output(self.step_id, name))

    @property
    def evidence(self) -> list[dict]:
        return self.data.get("evidence") or []

    def get(self, key):
        return self.data.get(key)


def _completions(step_id: str, kind: str, entry: dict, presentation: Presentation | None) -> list[Record]:
    history = entry.get("history") or []
    records = [Record(step_id, kind, index + 1, False, past, presentation) for index, past in enumerate(history)]
    current = {key: entry[key] for key in RECORD_KEYS if key in entry}
    if current:
        records.append(Record(step_id, kind, len(history) + 1, True, current, presentation))
    return records


@dataclass
class StepPanel:
    id: str
    kind: str
    state: str | None
    due: str | None
    overdue: bool
    current: Record | None
    history: list[Record] = field(default_factory=list)

    @property
    def title(self) -> str:
        return humanize(self.id)

    @property
    def in_progress(self) -> bool:
        return self.state in UNFINISHED

    @property
    def kind_label(self) -> str:
        return KIND_LABELS.get(self.kind, self.kind)


def step_panels(view: dict, presentation: Presentation | None = None, *,
                only_with_data: bool = False) -> list[StepPanel]:
    """Every step in definition order with its state and its current and earlier completions."""
    data = view["data"]["steps"]
    panels = []
    for row in view["steps"]:
        entry = data.get(row["id"]) or {}
        records = _completions(row["id"], row["kind"], entry, presentation)
        current = records[-1] if records and records[-1].current else None
        history = [record for record in records if not record.current]
        if only_with_data and not records:
            continue
        panels.append(StepPanel(id=row["id"], kind=row["kind"], state=row["state"], due=row.get("due"),
                                overdue=bool(row.get("overdue")), current=current, history=history))
    return panels


def file_refs(view: dict) -> set[str]:
    """Every uploaded file run data names as evidence (current and earlier completions)."""
    refs = set()
    for entry in view["data"]["steps"].values():
        for completion in [entry, *(entry.get("history") or [])] if isinstance(entry, dict) else []:
            for item in completion.get("evidence") or [] if isinstance(completion, dict) else []:
                if isinstance(item, dict) and item.get("kind") == "file" and isinstance(item.get("ref"), str):
                    refs.add(item["ref"])
    return refs


def preview_refs(view: dict, step_id: str | None = None, candidate: dict | None = None) -> list[str]:
    """The files a page previews, most relevant first: the evidence of the step under decision
    (its held submission, its current completion), then the current completions of the other steps,
    latest in the process first, then run inputs that name an upload (an id the organization's
    uploads are looked up by; anything else is left out there)."""
    steps = view["data"]["steps"]
    order = [row["id"] for row in view["steps"]]
    if step_id in order:
        order.remove(step_id)
        order.append(step_id)
    completions = [candidate] if isinstance(candidate, dict) else []
    completions += [steps.get(name) for name in reversed(order)]
    refs = []
    for completion in completions:
        for item in (completion.get("evidence") or [] if isinstance(completion, dict) else []):
            if isinstance(item, dict) and item.get("kind") == "file" and isinstance(item.get("ref"), str):
                refs.append(item["ref"])
    for value in (view["data"].get("inputs") or {}).values():
        if isinstance(value, str) and value.startswith("f_") and len(value) <= 24:
            refs.append(value)
    return list(dict.fromkeys(refs))


def item_name(step_id: str, key: str) -> str:
    """What people call a work item: its step in words and its run's business key."""
    return f"{humanize(step_id)} – {key}" if key else humanize(step_id)


def timeline(view: dict, presentation: Presentation | None = None) -> list[Record]:
    """Every completion of every step, earlier attempts included, in the order they happened."""
    positions = {row["id"]: index for index, row in enumerate(view["steps"])}
    records = []
    for row in view["steps"]:
        records += _completions(row["id"], row["kind"], view["data"]["steps"].get(row["id"]) or {}, presentation)
    # Completions carry seconds; within one second earlier attempts go first, then step order.
    return sorted(records, key=lambda r: (r.at or "", r.current, positions[r.step_id], r.attempt))


def input_items(view: dict, presentation: Presentation | None, declared=()) -> list[ShownField]:
    return shown_inputs(view["data"]["inputs"], presentation, declared)


def find_item(view: dict, work_item_id: str) -> dict | None:
    return next((item for item in view["workItems"] if item["id"] == work_item_id), None)


# ---------------------------------------------------------------- inbox rows


def relative(moment: dt.datetime | None, now: dt.datetime) -> str:
    """'in 2d 4h' / '3h ago' for a moment relative to now."""
    if moment is None:
        return ""
    delta = moment - now
    future = delta.total_seconds() >= 0
    seconds = abs(int(delta.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        text = f"{days}d {hours}h" if hours else f"{days}d"
    elif hours:
        text = f"{hours}h {minutes}m" if minutes else f"{hours}h"
    else:
        text = f"{max(minutes, 1)}m" if seconds >= 60 else "<1m"
    return f"in {text}" if future else f"{text} ago"


@dataclass
class InboxEntry:
    id: str
    run_id: str
    process: str
    version: int
    step_id: str
    kind: str
    text: str
    inputs: list[ShownField]
    test: bool
    due_at: dt.datetime | None
    created_at: dt.datetime
    overdue: bool
    due_relative: str
    escalated: bool
    escalation_note: str | None
    sent_back: dict | None = None  # {note, by, at, how}: returned for rework
    held_by: str | None = None
    assigned_by: str | None = None  # the operator who gave it to held_by (None: they took it)
    business_key: str = ""  # the run's name for people (its first text input)
    snapshot: str = ""  # the run's snapshot as this row showed it (bulk decisions send it)
    new: bool = False  # arrived after the person's last look at the inbox
    open: bool = True
    decision: str | None = None
    decided_at: dt.datetime | None = None

    @property
    def decision_label(self) -> str:
        return DONE_LABELS.get(self.decision or "", self.decision or "")

    @property
    def sent_back_line(self) -> str:
        note = (self.sent_back or {}).get("note") or ""
        return note.strip().splitlines()[0] if note.strip() else ""

    @property
    def title(self) -> str:
        return humanize(self.step_id)

    @property
    def name(self) -> str:
        return item_name(self.step_id, self.business_key)

    @property
    def kind_label(self) -> str:
        return item_kind_label(self.kind, self.escalated)


def inbox_entry(item, definition, now, seen_at=None, presentation: Presentation | None = None) -> InboxEntry:
    """One row of the inbox or of an operators' queue; `definition` is the run's version's."""
    run = item.run
    text = ""
    if item.step_id in definition.by_id:
        text = definition.step(item.step_id).text.strip()
    first_line = text.splitlines()[0] if text else ""
    return InboxEntry(
        id=item.id, run_id=run.id, process=run.process_name, version=run.version_number, step_id=item.step_id,
        kind=item.kind, text=first_line[:200], inputs=shown_inputs(run.inputs, presentation, definition.inputs, 4), test=run.mode == "test",
        due_at=item.due_at, created_at=item.created_at, overdue=item.due_at is not None and item.due_at <= now,
        due_relative=relative(item.due_at, now), escalated=item.escalation is not None,
        escalation_note=(item.escalation or {}).get("note"),
        sent_back=sent_back(definition, run.steps_data, item.step_id, item.step_state.handoff)
        if item.escalation is None else None,
        held_by=item.held_by, assigned_by=item.assigned_by, snapshot=run.snapshot,
        business_key=business_key(run.inputs, definition.inputs),
        new=seen_at is not None and item.created_at > seen_at and item.state == "open",
        open=item.state == "open", decision=item.decision, decided_at=item.decided_at,
    )


def note_hint(required: list[str], optional: list[str]) -> str:
    """What the note field says of itself: "required to reject or fail; optional when approving"."""
    parts = []
    if required:
        parts.append("required to " + " or ".join(NOTE_VERBS[d] for d in required))
    if optional:
        parts.append("optional when " + " or ".join(NOTE_VERBS[d] for d in optional))
    return "; ".join(parts)


def with_markdown(previews: list) -> list:
    """Previews of Markdown files carry their text rendered and sanitized (processes/rendering.py)."""
    for preview in previews:
        if preview.kind == "markdown" and preview.available:
            preview.html = render_markdown(preview.data.get("text", ""), under_heading=3)
    return previews
