from agentprocess.clock import iso
from processes.definition import definition_for
from runs.presenters import data_view
from runs.services.leases import claim as take

from .registry import tool


@tool("claim", write=True, description="Claim a ready agent step under a lease: token, expiry, step, handoff, body, run data.")
def claim(identity, arguments, now) -> dict:
    lease = take(identity=identity, run_id=arguments["runId"], step_id=arguments["stepId"], now=now)
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
