"""The shapes of tools.md, built in one place: run view, work item, get_work items, list_runs items."""

from kernel.clock import iso
from processes.definition import Definition, definition_for

from .models import UNFINISHED, Run, StepState, WorkItem
from .services import rundata
from .services.decisions import decisions_for
from .services.engine import effective_handoff, visible_state

NEW_REQUEST_ID = "<new UUID>"


def run_summary(run: Run) -> dict:
    return {
        "id": run.id,
        "process": run.process_name,
        "version": run.version_number,
        "mode": run.mode,
        "state": run.state,
        "outcome": run.outcome,
        "ended": {"by": run.ended_by, "at": iso(run.ended_at), "note": run.ended_note} if run.ended_at else None,
        "startedBy": run.started_by,
        "startedAt": iso(run.started_at),
        "updatedAt": iso(run.updated_at),
    }


def data_view(run: Run) -> dict:
    return {"inputs": run.inputs, "steps": rundata.with_file_urls(run.steps_data, run.organization_id, run.id)}


def step_row(state: StepState, now) -> dict:
    row = {"id": state.step_id, "kind": state.kind, "state": visible_state(state, now)}
    if state.due_at is not None and state.state in UNFINISHED:
        row["due"] = iso(state.due_at)
        row["overdue"] = state.due_at <= now
    return row


def work_item_view(item: WorkItem, run: Run, state: StepState, definition: Definition, now) -> dict:
    step = definition.step(item.step_id)
    view = {
        "id": item.id,
        "stepId": item.step_id,
        "kind": item.kind,
        "text": step.text,
        **step.requirements,
        "assignedTo": {"group": item.assigned_group} if item.assigned_group else {"person": item.assigned_person},
        "snapshot": run.snapshot,
        "due": iso(item.due_at),
        "escalation": item.escalation,
        "handoff": effective_handoff(state, now),
        "decide": {
            "tool": "decide",
            "arguments": {"runId": run.id, "workItemId": item.id, "snapshot": run.snapshot, "requestId": NEW_REQUEST_ID},
            "decisions": decisions_for(item),
        },
    }
    if run.mode == "test":
        view["mode"] = "test"
    return view


def run_view(run: Run, states: dict[str, StepState], items: list[WorkItem], now) -> dict:
    definition = definition_for(run.version_id)
    return {
        "run": run_summary(run),
        "data": data_view(run),
        "steps": [step_row(states[step.id], now) for step in definition.steps],
        "workItems": [
            work_item_view(item, run, states[item.step_id], definition, now)
            for item in sorted(items, key=lambda i: (i.created_at, i.id))
        ],
        "body": definition.body,
    }


def context_view(ctx) -> dict:
    return run_view(ctx.run, ctx.states, ctx.open_items(), ctx.now)


def agent_work_entry(state: StepState, run: Run, now) -> dict:
    return {
        "runId": run.id,
        "stepId": state.step_id,
        "process": run.process_name,
        "version": run.version_number,
        "mode": run.mode,
        "readySince": iso(state.ready_since),
        "due": iso(state.due_at),
        "overdue": state.due_at is not None and state.due_at <= now,
        "handoff": effective_handoff(state, now),
        "claim": {"tool": "claim", "arguments": {"runId": run.id, "stepId": state.step_id, "requestId": NEW_REQUEST_ID}},
    }


def person_work_entry(item: WorkItem, now) -> dict:
    run = item.run
    return {
        "runId": run.id,
        "process": run.process_name,
        "version": run.version_number,
        "mode": run.mode,
        "workItem": work_item_view(item, run, item.step_state, definition_for(run.version_id), now),
    }


def run_list_entry(run: Run) -> dict:
    return {
        "id": run.id,
        "process": run.process_name,
        "version": run.version_number,
        "state": run.state,
        "outcome": run.outcome,
        "startedAt": iso(run.started_at),
        "updatedAt": iso(run.updated_at),
        "inputs": run.inputs,
    }


# --- rework: what a step sent back for another attempt left, and who sent it back ---------------

ATTEMPT_FIELDS = ("output", "evidence", "summary", "next", "reason")


def last_attempt(steps_data: dict, step_id: str) -> dict | None:
    """The step's current completion when it is open again (rejected into, spec §3.1: it keeps its
    fields until it completes again): what the person's form starts from. None on a first attempt."""
    entry = steps_data.get(step_id) or {}
    attempt = {name: entry[name] for name in ATTEMPT_FIELDS if name in entry}
    return attempt or None


def sent_back(definition: Definition, steps_data: dict, step_id: str, handoff: dict | None = None) -> dict | None:
    """{note, by, at, how} of the decision that sent this step back for another attempt: an approval
    rejected into it (its note stays current, spec §3.1) or a person returning it (handoff)."""
    returned = (handoff or {}).get("returned")
    if returned:
        return {"note": returned.get("note"), "by": returned.get("by"), "at": returned.get("at"), "how": "returned"}
    for step in definition.steps:
        entry = steps_data.get(step.id) or {}
        if step.on_reject == step_id and entry.get("decision") == "rejected":
            return {"note": entry.get("note"), "by": entry.get("by"), "at": entry.get("at"), "how": "rejected",
                    "approval": step.id}
    return None
