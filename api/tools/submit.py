from runs.presenters import context_view
from runs.services.submissions import check_before_submit
from runs.services.submissions import submit as hand_in

from .registry import tool


@tool("submit", write=True, prepare=check_before_submit,
      description="Submit output, evidence, summary and the chosen next for a claimed step; accepted, or every issue at once.")
def submit(identity, arguments, now, prepared=None) -> dict:
    ctx = hand_in(identity=identity, token=arguments["token"], output=arguments["output"],
                  evidence=arguments.get("evidence"), summary=arguments["summary"],
                  next_choice=arguments.get("next"), reason=arguments.get("reason"), now=now, verdict=prepared)
    return context_view(ctx)
