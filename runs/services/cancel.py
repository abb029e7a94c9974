"""cancel (spec §3.5): an operator ends an active or waiting run with a reason."""

from django.db import transaction

from kernel import audit
from kernel.errors import forbidden, invalid
from kernel.identity import Identity

from ..models import RunState
from ..visibility import ensure_visible
from .engine import RunContext


@transaction.atomic(savepoint=False)
def cancel(*, identity: Identity, run_id: str, reason: str, now) -> RunContext:
    ctx = RunContext.for_write(organization=identity.organization, run_id=run_id, now=now,
                               actor=audit.Actor.of(identity))
    ensure_visible(identity, ctx.run)  # a run the caller may not see does not exist for them
    ctx.ensure_open()  # spec §3.5: run_ended before every check but the schema's
    if not reason.strip():
        raise invalid("a cancel needs a reason", ["reason: required"])
    if not identity.is_operator:
        raise forbidden("only the organization's operators cancel runs")
    ctx.end(state=RunState.CANCELLED, outcome=None, by=identity.ref, note=reason)
    ctx.save()
    return ctx
