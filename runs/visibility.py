"""Who may see a run in the browser (issue 15, point 5): spec §3.1, "Run data is visible to everyone
who works a step".

A person sees a run (its page, its run data, its files) when they are an operator, started it,
or work or worked a step of it: a member of a group bound to one of its people steps (or a group a
work item of it was given to), the person a `person` path of it names (in its run data, reached or
not yet), or the one a work item of it was assigned to or decided by. Everyone else gets 404, and
the run is not in their runs list. Agents keep what the protocol gives them (get_run and list_runs
are for anyone in the organization, tools.md); this is the people's pages' rule.
"""

from django.db.models import Exists, OuterRef, Q
from django.db.models.fields.json import KeyTextTransform

from kernel.identity import Identity
from processes.definition import definitions_for
from processes.models import ProcessVersion

from .models import Run, WorkItem


def _path_value(run: Run, path: str):
    parts = path.split(".")
    if parts[0] == "inputs" and len(parts) == 2:
        return run.inputs.get(parts[1])
    if parts[0] == "steps" and len(parts) == 4 and parts[2] == "output":
        return ((run.steps_data.get(parts[1]) or {}).get("output") or {}).get(parts[3])
    return None


def _person_paths(definition) -> set[str]:
    return {step.person for step in definition.steps if step.person and "." in step.person}


def _bound_groups(definition) -> set[str]:
    return {definition.bindings[step.person] for step in definition.steps
            if step.person and "." not in step.person and step.person in definition.bindings}


def can_see(identity: Identity, run: Run) -> bool:
    if identity.is_agent or identity.is_operator:
        return True
    email = (identity.email or "").lower()
    if run.initiator_id == identity.user.pk or run.started_by.lower() == email:
        return True
    definition = definitions_for([run.version_id])[run.version_id]
    if _bound_groups(definition) & identity.groups:
        return True
    if any(isinstance(value, str) and value.lower() == email
           for value in (_path_value(run, path) for path in _person_paths(definition))):
        return True
    return WorkItem.objects.filter(run=run).filter(_worked_by(identity)).exists()


def visible_run(identity: Identity, run_id: str) -> Run | None:
    """The run of the identity's organization, when the identity may see it (else None)."""
    run = Run.objects.filter(pk=run_id, organization=identity.organization).first()
    return run if run is not None and can_see(identity, run) else None


def _worked_by(identity: Identity) -> Q:
    return (Q(assigned_group__in=list(identity.groups)) | Q(assigned_person__iexact=identity.email)
            | Q(decided_by__iexact=identity.email))


def visible(identity: Identity, runs):
    """The runs of `runs` (a queryset of the identity's organization) the identity may see: one
    query, whatever the number of runs."""
    if identity.is_agent or identity.is_operator:
        return runs
    email = identity.email or ""
    seen = Q(initiator_id=identity.user.pk) | Q(started_by__iexact=email)
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
