"""send_event (spec §3.6): events held per run, consumed oldest first by the wait_for they name."""

import re

from django.db import transaction

from kernel import audit
from kernel.errors import forbidden, invalid
from kernel.identity import Identity
from kernel.models import EventKind

from ..models import Event
from . import rundata
from ..visibility import ensure_visible
from .engine import RunContext

EVENT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


def _time_out_passed_waits(ctx: RunContext, name: str) -> None:
    """A wait_for whose timeout has passed is over, sweep or no sweep (as a lapsed lease is): it
    continues at on_timeout now, and the event finds whatever waits after it, or is held."""
    while (waiting := ctx.waiting_for(name)) is not None:
        state = ctx.state_of(waiting.id)
        if state.wake_at is None or state.wake_at > ctx.now:
            return
        ctx.wake(waiting.id)


@transaction.atomic(savepoint=False)
def send_event(*, identity: Identity, run_id: str, name: str, data: dict | None, now) -> str | None:
    """Deliver the event; returns the wait_for step that consumed it, or None when it is held."""
    # Who may send comes first (tools.md: "forbidden otherwise"): it holds for every run id alike,
    # so it tells nothing about which runs exist.
    if not (identity.is_agent or identity.is_operator):
        raise forbidden("events come from agents and operators")
    ctx = RunContext.for_write(organization=identity.organization, run_id=run_id, now=now,
                               actor=audit.Actor.of(identity))
    ensure_visible(identity, ctx.run)  # a run the caller may not see does not exist for them
    ctx.ensure_open()
    issues = []
    if not EVENT_NAME.match(name):
        issues.append(f'name: "{name}" does not match ^[a-z][a-z0-9_-]{{0,63}}$')
    # Held data must still fit once a wait consumes it into run data.
    size_problem = rundata.size_issue(ctx.run.inputs, {**ctx.steps_data, "_event": {"output": data or {}}})
    if size_problem:
        issues.append(size_problem.replace("run data:", "data:", 1))
    if issues:
        raise invalid("the event was not delivered", issues)
    _time_out_passed_waits(ctx, name)
    event = Event.objects.create(run=ctx.run, organization_id=ctx.run.organization_id, name=name, data=data, sent_by=identity.ref, created_at=now)
    waiting = ctx.waiting_for(name)
    ctx.record(EventKind.EVENT_SENT, step_id=waiting.id if waiting else None,
               data={"event": name, "eventId": event.pk, "consumedBy": waiting.id if waiting else None})
    if waiting is not None:
        ctx.deliver_event(waiting.id, event)
    else:
        ctx.record(EventKind.EVENT_HELD, actor=audit.SERVER, data={"event": name, "eventId": event.pk})
    ctx.save()
    return waiting.id if waiting else None
