from runs.presenters import context_view
from runs.services.engine import RunContext
from runs.visibility import ensure_visible

from .registry import tool


@tool("get_run", write=False, description="The run view: run data, step states, open work items, body. Never a token.")
def get_run(identity, arguments, now) -> dict:
    ctx = RunContext.read(organization=identity.organization, run_id=arguments["runId"], now=now)
    ensure_visible(identity, ctx.run)
    return context_view(ctx)
