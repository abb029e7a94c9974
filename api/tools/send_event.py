from runs.services.events import send_event as deliver

from .registry import tool


@tool("send_event", write=True, description="Deliver an event to a run; a waiting wait_for consumes it, else it is held.")
def send_event(identity, arguments, now) -> dict:
    consumed_by = deliver(identity=identity, run_id=arguments["runId"], name=arguments["name"],
                          data=arguments.get("data"), now=now)
    return {"consumedBy": consumed_by}
