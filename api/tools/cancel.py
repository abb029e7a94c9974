from runs.presenters import context_view
from runs.services.cancel import cancel as stop

from .registry import tool


@tool("cancel", write=True, description="An operator cancels an active or waiting run with a reason.")
def cancel(identity, arguments, now) -> dict:
    return context_view(stop(identity=identity, run_id=arguments["runId"], reason=arguments["reason"], now=now))
