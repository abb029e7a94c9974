"""Import, bind and publish (spec §6.5, §7). Admin, CLI and demo set-up all come through here."""

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max

from kernel import audit, clock
from kernel.capabilities import offered_profiles, offered_tools
from kernel.models import EventKind
from kernel.organizations import OrganizationError, organization_group

from .hashing import content_hash
from .definition import compile_definition
from .models import Process, ProcessDraft, ProcessVersion
from .parsing import parse_process_file
from .presentation import carry_over
from .validation import role_names, step_kind, validate


@dataclass(frozen=True)
class Published:
    """What a publish did: `created` is False when the file and its bindings equal the latest
    version's, in which case nothing was published and `version` is that current version."""

    version: ProcessVersion
    created: bool

    @property
    def message(self) -> str:
        if self.created:
            return f"published {self.version.process.name} version {self.version.number} {self.version.content_hash}"
        return unchanged_message(self.version)


def unchanged_message(version: ProcessVersion) -> str:
    return f"{version.process.name} unchanged, version {version.number} is current ({version.content_hash})"


class PublishRefused(Exception):
    def __init__(self, issues: list[str]):
        super().__init__("; ".join(issues))
        self.issues = issues


def _step_label(index: int, step) -> str:
    step_id = step.get("id") if isinstance(step, dict) else None
    return f"steps[{index}] ({step_id})" if isinstance(step_id, str) else f"steps[{index}]"


def format_issues(source: str, folder_name: str | None) -> tuple[dict | None, str, list[str]]:
    """Parse and validate against what this server offers now: (frontmatter, body, issues)."""
    parsed = parse_process_file(source)
    if parsed.issues or parsed.frontmatter is None:
        return None, parsed.body, list(parsed.issues)
    issues = validate(parsed.frontmatter, folder_name=folder_name, profiles=offered_profiles())
    return parsed.frontmatter, parsed.body, issues


def missing_tool_issues(frontmatter: dict) -> list[str]:
    """Steps that need a tool this server does not offer (spec §4.2)."""
    tools = set(offered_tools())
    issues = []
    for index, step in enumerate(frontmatter.get("steps") or []):
        if "file" in (step.get("evidence") or []) and "upload" not in tools:
            issues.append(
                f"{_step_label(index, step)}: evidence file needs the upload tool, which this server does not offer"
            )
        if step_kind(step) == "wait_for" and "send_event" not in tools:
            issues.append(
                f"{_step_label(index, step)}: wait_for needs the send_event tool, which this server does not offer"
            )
    return issues


def _examine(source: str, folder_name: str | None) -> tuple[str, list[str], list[str]]:
    """(name, issues, roles) of a draft's text; roles only when the text has no issue."""
    frontmatter, _body, issues = format_issues(source, folder_name)
    name = frontmatter.get("name") if frontmatter and isinstance(frontmatter.get("name"), str) else ""
    roles = role_names(frontmatter) if frontmatter and not issues else []
    return name[:64], issues, roles


def _storable(source: str) -> str:
    """A NUL character is refused (an issue) and cannot be stored by PostgreSQL; the draft keeps
    the text with it made visible, so the issues can still be shown."""
    return source.replace("\x00", "\ufffd")


@transaction.atomic
def import_draft(*, organization, source: str, folder_name: str | None = None, created_by=None,
                 actor: audit.Actor = audit.COMMAND_LINE) -> ProcessDraft:
    """Create a draft holding the source text and every issue found in it. The same text imported
    again while its draft is unpublished is that draft (`reused` is set), not a second copy."""
    stored = _storable(source)
    earlier = ProcessDraft.objects.filter(organization=organization, folder_name=folder_name or "", source=stored,
                                          published_version__isnull=True).order_by("-pk").first()
    if earlier is not None:
        earlier.reused = True
        return earlier
    name, issues, roles = _examine(source, folder_name)
    draft = ProcessDraft.objects.create(
        organization=organization,
        name=name,
        folder_name=folder_name or "",
        source=stored,
        issues=issues,
        roles=roles,
        created_by=created_by,
    )
    audit.record(EventKind.PROCESS_IMPORTED, organization_id=organization.id, actor=actor, at=clock.now(),
                 data={"process": name, "draft": draft.pk, "issues": len(issues)})
    return draft


@transaction.atomic
def bind_roles(*, draft: ProcessDraft, bindings: dict[str, str], actor: audit.Actor = audit.COMMAND_LINE) -> ProcessDraft:
    """Map role names to the organization's groups; a group named here is created when missing."""
    issues = []
    for role, group_name in bindings.items():
        if role not in draft.roles:
            issues.append(f'role "{role}" is not used by this process')
            continue
        try:
            organization_group(draft.organization, group_name.strip())
        except OrganizationError as error:
            issues.append(f'role "{role}": {error}')
    if issues:
        raise PublishRefused(issues)
    draft.bindings = {**draft.bindings, **{role: name.strip() for role, name in bindings.items()}}
    draft.save(update_fields=["bindings"])
    audit.record(EventKind.PROCESS_BOUND, organization_id=draft.organization_id, actor=actor, at=clock.now(),
                 data={"process": draft.name, "draft": draft.pk, "bindings": dict(bindings)})
    return draft


def publish(*, draft: ProcessDraft, published_by=None, actor: audit.Actor | None = None) -> ProcessVersion:
    """Publish the draft and return the current version: the new one, or the latest one when the
    draft changes nothing (see `publish_draft`)."""
    return publish_draft(draft=draft, published_by=published_by, actor=actor).version


@transaction.atomic
def publish_draft(*, draft: ProcessDraft, published_by=None, actor: audit.Actor | None = None) -> Published:
    """Publish the draft as the next version of its process, or refuse with every issue.

    A draft whose content hash and role bindings equal the latest version's publishes nothing
    (and records nothing): a version says something changed. The same file with a role bound to
    another group is a new version, since bindings are fixed at publication."""
    if draft.issues:
        raise PublishRefused(list(draft.issues))  # fix the file (or edit the draft) first
    frontmatter, body, issues = format_issues(draft.source, draft.folder_name or None)
    if frontmatter is not None and not issues:
        roles = role_names(frontmatter)
        issues += [f'role "{role}" is not bound to a group' for role in roles if not draft.bindings.get(role)]
        issues += missing_tool_issues(frontmatter)
    if issues:
        raise PublishRefused(issues)

    # The process row's lock serializes publishers of one process: the comparison with the
    # latest version and the next number are decided by one of them at a time.
    process, _ = Process.objects.select_for_update().get_or_create(
        organization=draft.organization, name=frontmatter["name"]
    )
    digest = content_hash(frontmatter, body)
    bindings = {role: draft.bindings[role] for role in role_names(frontmatter)}
    latest = process.latest_version
    if latest is not None and latest.content_hash == digest and latest.bindings == bindings:
        draft.published_version = latest
        draft.save(update_fields=["published_version"])
        return Published(version=latest, created=False)

    last = process.versions.aggregate(last=Max("number"))["last"] or 0
    version = ProcessVersion.objects.create(
        process=process,
        organization_id=process.organization_id,
        number=last + 1,
        content_hash=digest,
        source=draft.source,
        frontmatter=frontmatter,
        body=body,
        bindings=bindings,
        published_by=published_by,
    )
    # How its fields are shown (labels, currencies, columns) goes on to the new version.
    carry_over(previous=latest, version=version, definition=compile_definition(frontmatter, body, bindings))
    process.latest_version = version
    process.description = frontmatter["description"]
    process.save(update_fields=["latest_version", "description"])
    draft.published_version = version
    draft.save(update_fields=["published_version"])
    audit.record(EventKind.PROCESS_PUBLISHED, organization_id=draft.organization_id,
                 actor=actor or (audit.Actor.admin(published_by) if published_by else audit.COMMAND_LINE),
                 at=clock.now(), data={"process": process.name, "version": version.number,
                                       "contentHash": version.content_hash})
    return Published(version=version, created=True)


def latest_version_of(draft: ProcessDraft) -> ProcessVersion | None:
    """The latest published version of the process the draft names (what its diff compares with)."""
    if not draft.name:
        return None
    process = (Process.objects.select_related("latest_version__process")
               .filter(organization_id=draft.organization_id, name=draft.name).first())
    return process.latest_version if process else None


def publishes_nothing(draft: ProcessDraft, latest: ProcessVersion | None) -> bool:
    """Whether publishing the draft now would create no version: the latest version has its content
    hash and its groups (a role the draft leaves unbound keeps the latest version's group, as the
    forms and the CLI prefill it)."""
    if current_version_if_unchanged(draft, latest) is None:
        return False
    return {role: draft.bindings.get(role) or latest.bindings.get(role) for role in draft.roles} == latest.bindings


def current_version_if_unchanged(draft: ProcessDraft, latest: ProcessVersion | None) -> ProcessVersion | None:
    """`latest` when the draft's content hash equals it: the file changes nothing (its bindings may
    still differ). None for a draft with issues."""
    if latest is None or draft.issues:
        return None
    parsed = parse_process_file(draft.source)
    if parsed.frontmatter is None or latest.content_hash != content_hash(parsed.frontmatter, parsed.body):
        return None
    return latest


@transaction.atomic
def revise_draft(*, draft: ProcessDraft, source: str, actor: audit.Actor = audit.COMMAND_LINE) -> ProcessDraft:
    """Replace an unpublished draft's text and validate it again: every issue of the new text, the
    roles it uses, and the bindings of the roles it still uses kept."""
    draft = ProcessDraft.objects.select_for_update().get(pk=draft.pk)
    if draft.published_version_id is not None:
        number = draft.published_version.number
        raise PublishRefused([f"this draft is already published as version {number}; import the file again to change it"])
    name, issues, roles = _examine(source, draft.folder_name or None)
    draft.name, draft.source, draft.issues, draft.roles = name, _storable(source), issues, roles
    # Bindings stay as they were: publish reads only the roles the text uses.
    draft.save(update_fields=["name", "source", "issues", "roles"])
    audit.record(EventKind.PROCESS_IMPORTED, organization_id=draft.organization_id, actor=actor, at=clock.now(),
                 data={"process": name, "draft": draft.pk, "issues": len(issues), "revised": True})
    return draft
