"""submit and escalate (spec §3.3, §6 rule 3): the holder of a live lease completes or hands off."""

from django.db import transaction

from agentprocess.errors import not_accepted
from agentprocess.identity import Identity

from ..models import StepState
from .acceptance import accept
from .engine import RunContext
from .leases import check_lease, verified_lease


def _claimed(identity: Identity, token: str, now):
    lease = verified_lease(identity, token)
    ctx = RunContext.load(organization=identity.organization, run_id=lease.run_id, now=now)
    state = check_lease(identity, lease, ctx.states.get(lease.step_id), ctx.run, now)
    return ctx, state, lease


def record_handoff_issues(state_id: int, generation: int, issues: list[str]) -> None:
    """After a refusal, keep its issues for the next attempt (spec §3.3 handoff); run data is untouched."""
    with transaction.atomic():
        state = StepState.objects.select_for_update().filter(pk=state_id, lease_gen=generation).first()
        if state is not None:
            state.handoff = {**(state.handoff or {}), "issues": issues}
            state.save(update_fields=["handoff"])


def submit(*, identity: Identity, token: str, output, evidence, summary, next_choice, reason, now) -> RunContext:
    ctx, state, lease = _claimed(identity, token, now)
    step = ctx.step(state.step_id)
    issues, record = accept(ctx=ctx, step=step, output=output, evidence=evidence, summary=summary,
                            next_choice=next_choice, reason=reason, by=identity.ref, summary_required=True)
    if issues:
        raise not_accepted(issues, after_rollback=lambda: record_handoff_issues(state.pk, lease.generation, issues))
    ctx.complete(step.id, record, route=next_choice if step.routes else None)
    ctx.save()
    return ctx


def escalate(*, identity: Identity, token: str, note: str, now) -> RunContext:
    ctx, state, _lease = _claimed(identity, token, now)
    ctx.escalate(state.step_id, note=note, by=identity.ref)
    ctx.save()
    return ctx
