"""start_run (spec §3.2, tools.md): check inputs, pin the version, make the first step ready."""

from django.db import transaction

from kernel import audit
from kernel.errors import invalid, not_found
from kernel.identity import Identity
from kernel.models import EventKind
from processes.definition import definition_for
from processes.fields import check_fields
from processes.models import Process, ProcessVersion

from ..models import Run, StepState
from . import rundata
from .engine import RunContext


@transaction.atomic(savepoint=False)
def start_run(*, identity: Identity, process: str, version: int | None, inputs: dict, mode: str, now) -> RunContext:
    organization = identity.organization
    found = Process.objects.filter(organization=organization, name=process).first()
    if found is None or found.latest_version_id is None:
        raise not_found(f"no published process {process} in this organization")
    if version is None:
        version_id, number = found.latest_version_id, None
    else:
        pinned = ProcessVersion.objects.filter(process=found, number=version).values_list("pk", "number").first()
        if pinned is None:
            raise not_found(f"{process} has no version {version}")
        version_id, number = pinned
    definition = definition_for(version_id)
    if number is None:
        number = ProcessVersion.objects.values_list("number", flat=True).get(pk=version_id)

    issues = check_fields(definition.inputs, inputs, "inputs")
    size_problem = rundata.size_issue(inputs, {})
    if size_problem:
        issues.append(size_problem)
    if identity.is_agent:
        issues += [
            f"steps[{step.position}] ({step.id}): person is initiator, and a run started by an agent has no initiator"
            for step in definition.steps
            if step.person == "initiator"
        ]
    if issues:
        raise invalid("the run cannot start with these inputs", issues)

    run = Run(
        organization=organization,
        version_id=version_id,
        process_name=definition.name,
        version_number=number,
        mode=mode,
        started_by=identity.ref,
        initiator=identity.user if identity.is_person else None,
        inputs=inputs,
        steps_data={},
        snapshot=rundata.snapshot_of(inputs, {}),
        started_at=now,
        updated_at=now,
    )
    states = [
        StepState(run=run, organization=organization, process_name=definition.name, step_id=step.id,
                  position=step.position, kind=step.kind)
        for step in definition.steps
    ]
    ctx = RunContext(run, states, now, actor=audit.Actor.of(identity))
    ctx.record(EventKind.RUN_STARTED, data={"process": definition.name, "version": number, "mode": mode,
                                            "inputsSha256": rundata.digest(inputs)})
    ctx.activate(definition.first.id)
    ctx.save()
    return ctx
