from runs.presenters import context_view
from runs.services.submissions import escalate as hand_over

from .registry import tool


@tool("escalate", write=True, description="Hand a claimed step to a person with a note; the token stops working.")
def escalate(identity, arguments, now) -> dict:
    return context_view(hand_over(identity=identity, token=arguments["token"], note=arguments["note"], now=now))
