from kernel.clock import iso
from processes.definition import definition_for
from runs.presenters import data_view
from runs.services.leases import claim as take
from runs.services.leases import claimable

from .registry import tool


def _read_step(identity, arguments, now, write):
    return claimable(identity=identity, run_id=arguments["runId"], step_id=arguments["stepId"], now=now)


@tool("claim", write=True, prepare=_read_step,
      description="Claim a ready agent step under a lease: token, expiry, step, handoff, body, run data.")
def claim(identity, arguments, now, prepared=None) -> dict:
    lease = take(identity=identity, run_id=arguments["runId"], step_id=arguments["stepId"], now=now, found=prepared)
    run = lease.state.run
    step = definition_for(run.version_id).step(lease.state.step_id)
    return {
        "token": lease.token,
        "expiresAt": iso(lease.expires_at),
        "mode": run.mode,
        "step": {"id": step.id, "instructions": step.text, **step.requirements},
        "handoff": lease.state.handoff,
        "body": definition_for(run.version_id).body,
        "data": data_view(run),
    }
