"""submit and escalate (spec §3.3, §6 rule 3): the holder of a live lease completes or hands off."""

from django.db import transaction

from kernel import audit
from kernel.errors import ToolError, not_accepted
from kernel.identity import Identity
from kernel.models import EventKind

from . import checks
from .acceptance import accept
from .engine import RunContext
from .leases import check_lease, verified_lease
from .writes import HandoffNote, Refused, Write


def _claimed(identity: Identity, token: str, now):
    """The run, locked, and the step this token's lease is on, refused in the order of spec §3.5
    and tools.md (check_lease)."""
    lease = verified_lease(identity, token)
    ctx = RunContext.for_write(organization=identity.organization, run_id=lease.run_id, now=now,
                               actor=audit.Actor.of(identity))
    state = check_lease(identity, lease, ctx.states.get(lease.step_id), ctx.run, now)
    return ctx, state, lease


def check_verdict(ctx: RunContext, step, state, record: dict, verdict: dict | None, generation: int | None) -> dict:
    """check-1 §3 on an objectively accepted submission: the verdict (asked now unless it was asked
    before the transaction). A blocking fail is refused, the verdict left for the next attempt."""
    if verdict is None:
        verdict = checks.evaluate(ctx, step, record)
    if not step.advisory and verdict["verdict"] == "fail":
        lines = checks.issue_lines(step, verdict)
        raise Refused(not_accepted(lines), HandoffNote(state.pk, generation, {"issues": lines, "check": verdict}))
    ctx.record(EventKind.CHECK_VERDICT, step_id=step.id, data={"verdict": verdict["verdict"],
                                                               "advisory": verdict["advisory"]})
    return verdict


def held_for_person(ctx: RunContext, step, record: dict, verdict: dict) -> bool:
    """An unsure verdict holds the submission for a person (True); any other is recorded on the
    completion (check-1 §3)."""
    if not step.advisory and verdict["verdict"] == "unsure":
        ctx.hold_for_person(step.id, record=record, verdict=verdict)
        return True
    record["check"] = verdict
    return False


def check_before_submit(*, identity: Identity, token: str, output: dict, evidence, summary: str, next_choice,
                        reason, now, write: Write) -> dict | None:
    """Before the write's transaction: the verdict for a submission to a checked step that passes
    the objective rules, so no row lock is held while the evaluator thinks. None when there is
    nothing to check (or the write is a replay); the write itself then reports any error."""
    try:
        lease = verified_lease(identity, token)
        if not lease.checked or write.replayed:
            return None
        ctx = RunContext.read(organization=identity.organization, run_id=lease.run_id, now=now)
        state = check_lease(identity, lease, ctx.states.get(lease.step_id), ctx.run, now)
    except ToolError:
        return None
    step = ctx.step(state.step_id)
    issues, record = accept(ctx=ctx, step=step, output=output, evidence=evidence, summary=summary,
                            next_choice=next_choice, reason=reason, by=identity.ref, summary_required=True)
    if issues or not step.check:
        return None
    return checks.evaluate(ctx, step, record)


@transaction.atomic(savepoint=False)
def submit(*, identity: Identity, token: str, output, evidence, summary, next_choice, reason, now,
           verdict: dict | None = None) -> RunContext:
    ctx, state, lease = _claimed(identity, token, now)
    step = ctx.step(state.step_id)
    issues, record = accept(ctx=ctx, step=step, output=output, evidence=evidence, summary=summary,
                            next_choice=next_choice, reason=reason, by=identity.ref, summary_required=True)
    if issues:
        raise Refused(not_accepted(issues), HandoffNote(state.pk, lease.generation, {"issues": issues}))
    checked = check_verdict(ctx, step, state, record, verdict, lease.generation) if step.check else None
    ctx.record(EventKind.SUBMISSION_ACCEPTED, step_id=step.id,
               data={"leaseGeneration": lease.generation, "next": next_choice, "reason": reason})
    if checked and held_for_person(ctx, step, record, checked):
        ctx.save()
        return ctx
    ctx.complete(step.id, record, route=next_choice if step.routes else None)
    ctx.save()
    return ctx


@transaction.atomic(savepoint=False)
def escalate(*, identity: Identity, token: str, note: str, now) -> RunContext:
    ctx, state, _lease = _claimed(identity, token, now)
    ctx.escalate(state.step_id, note=note, by=identity.ref)
    ctx.save()
    return ctx
