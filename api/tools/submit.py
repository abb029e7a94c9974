from runs.presenters import context_view
from runs.services.submissions import check_before_submit
from runs.services.submissions import submit as hand_in

from .registry import tool


def _unpacked(arguments: dict) -> dict:
    return {"token": arguments["token"], "output": arguments["output"], "evidence": arguments.get("evidence"),
            "summary": arguments["summary"], "next_choice": arguments.get("next"), "reason": arguments.get("reason")}


def _check(identity, arguments, now, write):
    return check_before_submit(identity=identity, now=now, write=write, **_unpacked(arguments))


@tool("submit", write=True, prepare=_check,
      description="Submit output, evidence, summary and the chosen next for a claimed step; accepted, or every issue at once.")
def submit(identity, arguments, now, prepared=None) -> dict:
    return context_view(hand_in(identity=identity, now=now, verdict=prepared, **_unpacked(arguments)))
