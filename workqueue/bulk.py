"""Bulk decisions and bulk cancels (issue 15, point 3).

Each selected item is decided through the `decide` tool with the snapshot of its run as the page
showed it, in its own transaction, exactly as if the person had opened it and pressed the button:
an item whose run changed since is `stale` and nothing is applied to it; one decided by someone
else first is `already_decided` (who and when). Every item gets its own requestId derived from the
form's, so a resent form replays instead of deciding twice.
"""

from dataclasses import dataclass, field

from api.tools import call_tool
from kernel.errors import ConflictIssue
from processes.definition import definitions_for
from runs.models import Run, WorkItem
from runs.visibility import visible_items

from .presenting import business_key, item_name

MOST_ITEMS = 500
BULK_DECISIONS = {"approved": "Approve", "rejected": "Reject", "failed": "Fail"}
ESCALATION_DECISIONS = {"returned": "Return to the agent", "failed": "Fail"}
DECISIONS = {**BULK_DECISIONS, **ESCALATION_DECISIONS}
OUTCOME_LABELS = {
    "applied": "Done",
    "stale": "Changed since you looked: not applied",
    "already_decided": "Already decided by someone else",
    "run_ended": "The run has ended",
    "forbidden": "Not yours to decide",
    "not_accepted": "Not accepted",
    "invalid": "Not possible for this item",
    "not_found": "No longer open",
    "retry": "Could not be done now: try again",
    "cancelled": "Cancelled",
}


@dataclass
class Outcome:
    """What happened to one selected item (or run)."""

    item_id: str
    run_id: str | None
    title: str  # what people call the item or run, as the inbox and the run page do
    outcome: str
    message: str = ""
    issues: list[str] = field(default_factory=list)
    decided_by: str | None = None
    decided_at: object = None
    process: str = ""

    @property
    def label(self) -> str:
        return OUTCOME_LABELS.get(self.outcome, self.outcome)


def _keys(runs) -> dict[str, str]:
    """run id -> its business key, read with its own version's declared inputs (one query)."""
    definitions = definitions_for({run.version_id for run in runs})
    return {run.pk: business_key(run.inputs, definitions[run.version_id].inputs) for run in runs}


def needing_attention_first(outcomes: list["Outcome"]) -> list["Outcome"]:
    """The items a person must look at again on top; within each group, the order selected."""
    return sorted(outcomes, key=lambda outcome: outcome.outcome in ("applied", "cancelled"))


def _outcome_of(error: dict) -> str:
    code, issues = error["code"], error.get("issues") or []
    if code == "conflict":
        if ConflictIssue.ALREADY_DECIDED in issues:
            return "already_decided"
        if ConflictIssue.RUN_ENDED in issues:
            return "run_ended"
    return code


def decide_many(identity, *, selected: list[str], snapshots: dict[str, str], decision: str, note: str,
                request_id: str) -> list[Outcome]:
    """Decide each selected work item with its own snapshot; one Outcome per item, in order."""
    # An item whose run the person may not see is reported exactly as one that never existed.
    items = {item.pk: item for item in visible_items(identity, WorkItem.objects.filter(
        organization=identity.organization, pk__in=selected)).select_related("run")}
    keys = _keys([item.run for item in items.values()])
    outcomes = []
    for item_id in selected:
        item = items.get(item_id)
        if item is None:
            outcomes.append(Outcome(item_id, None, item_id, "not_found", "No such work item in your organization."))
            continue
        title = item_name(item.step_id, keys[item.run_id])
        arguments = {"runId": item.run_id, "workItemId": item.pk, "decision": decision,
                     "snapshot": snapshots.get(item_id, ""), "requestId": f"{request_id}.{item_id}"}
        if note.strip():
            arguments["note"] = note
        envelope = call_tool(identity, "decide", arguments)
        if envelope["ok"]:
            outcomes.append(Outcome(item_id, item.run_id, title, "applied", process=item.run.process_name))
            continue
        error = envelope["error"]
        outcome = Outcome(item_id, item.run_id, title, _outcome_of(error), error["message"],
                          list(error.get("issues") or []), process=item.run.process_name)
        if outcome.outcome == "already_decided":
            item.refresh_from_db(fields=["decided_by", "decided_at", "decision"])
            outcome.decided_by, outcome.decided_at = item.decided_by, item.decided_at
        outcomes.append(outcome)
    return needing_attention_first(outcomes)


def cancel_many(identity, *, run_ids: list[str], reason: str, request_id: str) -> list[Outcome]:
    """Cancel each selected run with one reason (operators); one Outcome per run."""
    runs = {run.pk: run for run in Run.objects.filter(organization=identity.organization, pk__in=run_ids).only(
        "inputs", "process_name", "version_id")}
    keys = _keys(list(runs.values()))
    outcomes = []
    for run_id in run_ids:
        run = runs.get(run_id)
        process = run.process_name if run else ""
        title = (keys[run_id] or process) if run else f"Run {run_id}"
        envelope = call_tool(identity, "cancel", {"runId": run_id, "reason": reason,
                                                  "requestId": f"{request_id}.{run_id}"})
        if envelope["ok"]:
            outcomes.append(Outcome(run_id, run_id, title, "cancelled", process=process))
        else:
            error = envelope["error"]
            outcomes.append(Outcome(run_id, run_id, title, _outcome_of(error), error["message"],
                                    list(error.get("issues") or []), process=process))
    return needing_attention_first(outcomes)


def summary(outcomes: list[Outcome]) -> list[tuple[str, str, int]]:
    """(outcome, label, how many) in a stable order, only those that occurred."""
    counts = {}
    for outcome in outcomes:
        counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
    return [(key, OUTCOME_LABELS.get(key, key), counts[key]) for key in OUTCOME_LABELS if key in counts] + \
        [(key, key, n) for key, n in counts.items() if key not in OUTCOME_LABELS]
