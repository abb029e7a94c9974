"""submit and escalate (spec §3.3, §6 rule 3): the holder of a live lease completes or hands off."""

from django.db import transaction

from kernel.errors import ToolError, not_accepted
from kernel.identity import Identity

from ..models import IdempotencyRecord, StepState
from . import checks
from .acceptance import accept
from .engine import RunContext
from .leases import check_lease, verified_lease


def _claimed(identity: Identity, token: str, now):
    lease = verified_lease(identity, token)
    ctx = RunContext.load(organization=identity.organization, run_id=lease.run_id, now=now)
    state = check_lease(identity, lease, ctx.states.get(lease.step_id), ctx.run, now)
    return ctx, state, lease


def record_handoff(state_id: int, generation: int | None, additions: dict) -> None:
    """After a refusal, keep what the next attempt needs (spec §3.3 handoff: issues, check);
    run data is untouched."""
    with transaction.atomic():
        states = StepState.objects.select_for_update().filter(pk=state_id)
        if generation is not None:
            states = states.filter(lease_gen=generation)
        state = states.first()
        if state is not None:
            state.handoff = {**(state.handoff or {}), **additions}
            state.save(update_fields=["handoff"])


def settle_check(ctx: RunContext, step, state, record: dict, verdict: dict | None, generation: int | None) -> bool:
    """Apply check-1 §3 to an objectively accepted submission. Returns True when the step was held
    for a person (unsure); raises not_accepted on a blocking fail; otherwise records the verdict."""
    if verdict is None:
        verdict = checks.evaluate(ctx, step, record)
    if not step.advisory and verdict["verdict"] == "fail":
        lines = checks.issue_lines(step, verdict)
        raise not_accepted(lines, after_rollback=lambda: record_handoff(
            state.pk, generation, {"issues": lines, "check": verdict}))
    if not step.advisory and verdict["verdict"] == "unsure":
        ctx.hold_for_person(step.id, record=record, verdict=verdict)
        return True
    record["check"] = verdict
    return False


def check_before_submit(identity: Identity, arguments: dict, now) -> dict | None:
    """Outside the write's transaction: the verdict for a submission to a checked step that passes
    the objective rules, so no row lock is held while the evaluator thinks. None when there is
    nothing to check; the write itself then reports any error."""
    try:
        lease = verified_lease(identity, arguments["token"])
        if not lease.checked or IdempotencyRecord.objects.filter(
                organization=identity.organization, request_id=arguments["requestId"]).exists():
            return None
        ctx = RunContext.load(organization=identity.organization, run_id=lease.run_id, now=now, lock=False)
        state = check_lease(identity, lease, ctx.states.get(lease.step_id), ctx.run, now)
    except ToolError:
        return None
    step = ctx.step(state.step_id)
    issues, record = accept(ctx=ctx, step=step, output=arguments["output"], evidence=arguments.get("evidence"),
                            summary=arguments["summary"], next_choice=arguments.get("next"),
                            reason=arguments.get("reason"), by=identity.ref, summary_required=True)
    if issues or not step.check:
        return None
    return checks.evaluate(ctx, step, record)


def submit(*, identity: Identity, token: str, output, evidence, summary, next_choice, reason, now,
           verdict: dict | None = None) -> RunContext:
    ctx, state, lease = _claimed(identity, token, now)
    step = ctx.step(state.step_id)
    issues, record = accept(ctx=ctx, step=step, output=output, evidence=evidence, summary=summary,
                            next_choice=next_choice, reason=reason, by=identity.ref, summary_required=True)
    if issues:
        raise not_accepted(issues, after_rollback=lambda: record_handoff(state.pk, lease.generation,
                                                                         {"issues": issues}))
    if step.check and settle_check(ctx, step, state, record, verdict, lease.generation):
        ctx.save()
        return ctx
    ctx.complete(step.id, record, route=next_choice if step.routes else None)
    ctx.save()
    return ctx


def escalate(*, identity: Identity, token: str, note: str, now) -> RunContext:
    ctx, state, _lease = _claimed(identity, token, now)
    ctx.escalate(state.step_id, note=note, by=identity.ref)
    ctx.save()
    return ctx
