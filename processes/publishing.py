"""Import, bind and publish (spec §6.5, §7). Admin, CLI and demo set-up all come through here."""

from django.db import transaction
from django.db.models import Max

from kernel import audit, clock
from kernel.capabilities import offered_profiles, offered_tools
from kernel.models import EventKind
from kernel.organizations import OrganizationError, organization_group

from .hashing import content_hash
from .models import Process, ProcessDraft, ProcessVersion
from .parsing import parse_process_file
from .validation import role_names, step_kind, validate


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


@transaction.atomic
def import_draft(*, organization, source: str, folder_name: str | None = None, created_by=None,
                 actor: audit.Actor = audit.COMMAND_LINE) -> ProcessDraft:
    """Create a draft holding the source text and every issue found in it."""
    frontmatter, _body, issues = format_issues(source, folder_name)
    name = frontmatter.get("name") if frontmatter and isinstance(frontmatter.get("name"), str) else ""
    roles = role_names(frontmatter) if frontmatter and not issues else []
    draft = ProcessDraft.objects.create(
        organization=organization,
        name=name[:64],
        folder_name=folder_name or "",
        # A NUL character is refused (an issue above) and cannot be stored by PostgreSQL; the draft
        # keeps the text with it made visible, so the issues can still be shown.
        source=source.replace("\x00", "\ufffd"),
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


@transaction.atomic
def publish(*, draft: ProcessDraft, published_by=None, actor: audit.Actor | None = None) -> ProcessVersion:
    """Publish the draft as the next version of its process, or refuse with every issue."""
    if draft.issues:
        raise PublishRefused(list(draft.issues))  # fix the file and import it again
    frontmatter, body, issues = format_issues(draft.source, draft.folder_name or None)
    if frontmatter is not None and not issues:
        roles = role_names(frontmatter)
        issues += [f'role "{role}" is not bound to a group' for role in roles if not draft.bindings.get(role)]
        issues += missing_tool_issues(frontmatter)
    if issues:
        raise PublishRefused(issues)

    process, _ = Process.objects.select_for_update().get_or_create(
        organization=draft.organization, name=frontmatter["name"]
    )
    last = process.versions.aggregate(last=Max("number"))["last"] or 0
    version = ProcessVersion.objects.create(
        process=process,
        number=last + 1,
        content_hash=content_hash(frontmatter, body),
        source=draft.source,
        frontmatter=frontmatter,
        body=body,
        bindings={role: draft.bindings[role] for role in role_names(frontmatter)},
        published_by=published_by,
    )
    process.latest_version = version
    process.description = frontmatter["description"]
    process.save(update_fields=["latest_version", "description"])
    draft.published_version = version
    draft.save(update_fields=["published_version"])
    audit.record(EventKind.PROCESS_PUBLISHED, organization_id=draft.organization_id,
                 actor=actor or (audit.Actor.admin(published_by) if published_by else audit.COMMAND_LINE),
                 at=clock.now(), data={"process": process.name, "version": version.number,
                                       "contentHash": version.content_hash})
    return version
