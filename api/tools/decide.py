from runs.presenters import context_view
from runs.services.decisions import check_before_decide
from runs.services.decisions import decide as make_decision

from .registry import tool


@tool("decide", write=True, prepare=check_before_decide,
      description="A person decides a work item: completed, approved, rejected, returned or failed.")
def decide(identity, arguments, now, prepared=None) -> dict:
    ctx = make_decision(
        identity=identity, run_id=arguments["runId"], work_item_id=arguments["workItemId"],
        snapshot=arguments["snapshot"], decision=arguments["decision"], output=arguments.get("output"),
        evidence=arguments.get("evidence"), summary=arguments.get("summary"), next_choice=arguments.get("next"),
        reason=arguments.get("reason"), note=arguments.get("note"), now=now, verdict=prepared,
    )
    return context_view(ctx)
