from runs.presenters import context_view
from runs.services.decisions import check_before_decide
from runs.services.decisions import decide as make_decision

from .registry import tool


def _unpacked(arguments: dict) -> dict:
    return {"run_id": arguments["runId"], "work_item_id": arguments["workItemId"], "snapshot": arguments["snapshot"],
            "decision": arguments["decision"], "output": arguments.get("output"), "evidence": arguments.get("evidence"),
            "summary": arguments.get("summary"), "next_choice": arguments.get("next"), "reason": arguments.get("reason")}


def _check(identity, arguments, now, write):
    return check_before_decide(identity=identity, now=now, write=write, **_unpacked(arguments))


@tool("decide", write=True, prepare=_check,
      description="A person decides a work item: completed, approved, rejected, returned or failed.")
def decide(identity, arguments, now, prepared=None) -> dict:
    return context_view(make_decision(identity=identity, now=now, verdict=prepared, note=arguments.get("note"),
                                      **_unpacked(arguments)))
