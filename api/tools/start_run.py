from runs.presenters import context_view
from runs.services.start import start_run as start

from .registry import tool


@tool("start_run", write=True, description="Start a run of a published process with typed inputs; returns the run view.")
def start_run(identity, arguments, now) -> dict:
    ctx = start(identity=identity, process=arguments["process"], version=arguments.get("version"),
                inputs=arguments["inputs"], mode=arguments.get("mode", "live"), now=now)
    return context_view(ctx)
