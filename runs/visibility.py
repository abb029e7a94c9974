"""Who may see a run: one rule for every page, tool, export, bulk result and count (issue 21, point 1).

Spec §3.1: "Run data is visible to everyone who works a step". A person sees a run (its page, its
run data, its files, its work items, its name in a bulk result) when they are an operator, started
it, or work or worked a step of it: a member of a group bound to one of its people steps (or a
group a work item of it was given to), the person a `person` path of it names (in its run data,
reached or not yet), or the one a work item of it was assigned to or decided by. To everyone else
the run does not exist: pages answer 404, tools `not_found` (the same message as for an id that
never existed), lists and counts leave it out. Agents and operators see every run of their
organization (agents keep what the protocol gives them: `get_run` and `list_runs` are for anyone in
the organization, and an agent works steps of any run).

The rule is written once, as a query condition (`_seen`); `can_see` asks it for one run, so a
single run and a list can never disagree.
"""

from django.db.models import Exists, OuterRef, Q
from django.db.models.fields.json import KeyTextTransform

from kernel.errors import no_such_run
from kernel.identity import Identity
from processes.definition import definitions_for
from processes.models import ProcessVersion

from .models import Run, WorkItem


def sees_everything(identity: Identity) -> bool:
    return identity.is_agent or identity.is_operator


def _person_paths(definition) -> set[str]:
    return {step.person for step in definition.steps if step.person and "." in step.person}


def _bound_groups(definition) -> set[str]:
    return {definition.bindings[step.person] for step in definition.steps
            if step.person and "." not in step.person and step.person in definition.bindings}


def _worked_by(identity: Identity) -> Q:
    return (Q(assigned_group__in=list(identity.groups)) | Q(assigned_person__iexact=identity.email)
            | Q(decided_by__iexact=identity.email))


def _seen(identity: Identity, runs, version_ids=None):
    """`runs` narrowed to those the person takes part in (one query, whatever the number of runs).
    `version_ids`: the versions to consider (default: every version of the organization)."""
    email = identity.email or ""
    seen = Q(initiator_id=identity.user.pk) | Q(started_by__iexact=email)
    if version_ids is None:
        version_ids = list(ProcessVersion.objects.filter(process__organization=identity.organization)
                           .values_list("pk", flat=True))
    for version_id, definition in definitions_for(version_ids).items():
        if _bound_groups(definition) & identity.groups:
            seen |= Q(version_id=version_id)
        for index, path in enumerate(sorted(_person_paths(definition))):
            parts = path.split(".")
            key = KeyTextTransform(parts[1], "inputs") if parts[0] == "inputs" else \
                KeyTextTransform(parts[3], KeyTextTransform("output", KeyTextTransform(parts[1], "steps_data")))
            alias = f"person_{version_id}_{index}"
            runs = runs.alias(**{alias: key})
            seen |= Q(version_id=version_id, **{f"{alias}__iexact": email})
    worked = WorkItem.objects.filter(run=OuterRef("pk")).filter(_worked_by(identity))
    return runs.filter(seen | Q(Exists(worked)))


def visible(identity: Identity, runs):
    """The runs of `runs` (a queryset of the identity's organization) the identity may see."""
    if sees_everything(identity):
        return runs
    return _seen(identity, runs)


def visible_items(identity: Identity, items):
    """The work items of `items` whose run the identity may see."""
    if sees_everything(identity):
        return items
    return items.filter(run__in=visible(identity, Run.objects.filter(organization=identity.organization))
                        .values("pk"))


def takes_part_in(identity: Identity, version_ids) -> bool:
    """Whether the identity takes part in a process (its versions' ids): an operator or an agent, or
    a person in a group bound to one of its roles. What the process's figures are shown to (insight);
    the runs inside them are still narrowed by `visible`."""
    if sees_everything(identity):
        return True
    return any(_bound_groups(definition) & identity.groups for definition in definitions_for(version_ids).values())


def can_see(identity: Identity, run: Run) -> bool:
    if sees_everything(identity):
        return True
    if run.organization_id != identity.organization.id:
        return False
    return _seen(identity, Run.objects.filter(pk=run.pk), [run.version_id]).exists()


def ensure_visible(identity: Identity, run: Run) -> None:
    """A run the caller may not see is answered exactly as an id that never existed."""
    if not can_see(identity, run):
        raise no_such_run(run.id)


def visible_run(identity: Identity, run_id: str) -> Run | None:
    """The run of the identity's organization, when the identity may see it (else None)."""
    run = Run.objects.filter(pk=run_id, organization=identity.organization).first()
    return run if run is not None and can_see(identity, run) else None
