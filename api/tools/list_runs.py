from runs.presenters import run_list_entry
from runs.selectors import runs_list

from .registry import tool


@tool("list_runs", write=False, description="Runs of this organization, newest first; filter by process, state and inputs.")
def list_runs(identity, arguments, now) -> dict:
    rows, next_cursor = runs_list(identity, process=arguments.get("process"), state=arguments.get("state"),
                                  inputs=arguments.get("inputs"), limit=int(arguments.get("limit", 20)),
                                  cursor=arguments.get("cursor"))
    return {"items": [run_list_entry(run) for run in rows], "nextCursor": next_cursor}
