from runs.presenters import agent_work_entry, person_work_entry
from runs.selectors import claimable_steps, person_work

from .registry import tool


@tool("get_work", write=False,
      description="For an agent: ready agent steps it may claim, each with the exact claim call. For a person: their "
                  "open work items, each with the exact decide call. Oldest first, paged.")
def get_work(identity, arguments, now) -> dict:
    limit = int(arguments.get("limit", 20))  # the schema's integer admits 20.0
    cursor, process = arguments.get("cursor"), arguments.get("process")
    if identity.is_agent:
        rows, next_cursor = claimable_steps(identity, now=now, limit=limit, cursor=cursor, process=process)
        return {"items": [agent_work_entry(state, run, now) for state, run in rows], "nextCursor": next_cursor}
    rows, next_cursor = person_work(identity, limit=limit, cursor=cursor, process=process)
    return {"items": [person_work_entry(item, now) for item in rows], "nextCursor": next_cursor}
