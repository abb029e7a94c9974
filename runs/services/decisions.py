"""decide (spec §3.4, tools.md): a person completes a work item, under the same rules as submit."""

from django.db import transaction

from kernel import audit
from kernel.clock import iso
from kernel.errors import Issue, ToolError, forbidden, invalid, not_accepted, not_found, stale
from kernel.identity import Identity
from kernel.models import EventKind

from ..models import Decision, WorkItem, WorkItemState
from ..selectors import is_assigned, work_item_of_run
from ..visibility import ensure_visible
from . import checks
from .acceptance import accept
from .engine import RunContext, already_decided
from .submissions import check_verdict, held_for_person
from .writes import Write

NEEDS_NOTE = (Decision.REJECTED, Decision.RETURNED, Decision.FAILED)
NOTE_OPTIONAL = (Decision.APPROVED,)  # kept with the approval when given; `completed` takes none
ESCALATION_DECISIONS = [Decision.RETURNED, Decision.COMPLETED, Decision.FAILED]
DECISIONS = {
    "task": [Decision.COMPLETED, Decision.FAILED],
    "approve": [Decision.APPROVED, Decision.REJECTED, Decision.FAILED],
    "agent": ESCALATION_DECISIONS,  # an agent step only reaches a person by escalation
}


def decisions_for(item: WorkItem) -> list[str]:
    """What a work item accepts (tools.md): an escalated step, whatever its kind, is returned,
    completed or failed."""
    allowed = ESCALATION_DECISIONS if item.escalation is not None else DECISIONS[item.kind]
    return [decision.value for decision in allowed]  # plain strings on the wire


def note_rule(allowed: list[str]) -> tuple[list[str], list[str]]:
    """(the decisions among `allowed` that need a note, those that take one when given)."""
    return [d for d in allowed if d in NEEDS_NOTE], [d for d in allowed if d in NOTE_OPTIONAL]


def argument_issues(*, decision, output, evidence, summary, next_choice, reason, note) -> list[str]:
    """Combinations tools.md makes `invalid`, whatever the item."""
    issues = []
    if decision != Decision.COMPLETED:
        issues += [f"{name}: only with decision completed" for name, value in
                   (("output", output), ("evidence", evidence), ("summary", summary), ("next", next_choice),
                    ("reason", reason)) if value is not None]
    elif note is not None:
        issues.append("note: not with decision completed")
    return issues


def _item(ctx: RunContext, work_item_id: str) -> WorkItem:
    item = work_item_of_run(work_item_id, ctx.run)
    if item is not None and item.state == WorkItemState.DECIDED:
        raise already_decided(item)
    if item is None or item.state != WorkItemState.OPEN:
        raise not_found(f"run {ctx.run.id} has no work item {work_item_id}")
    return item


def _check_person(identity: Identity, item: WorkItem) -> None:
    if not identity.is_person or not identity.human_presence:
        raise forbidden("only a person decides; this credential is not a person's own")
    if not is_assigned(identity, item):
        raise forbidden("this work item is not assigned to you")


@transaction.atomic(savepoint=False)
def decide(*, identity: Identity, run_id: str, work_item_id: str, snapshot: str, decision: str, output=None,
           evidence=None, summary=None, next_choice=None, reason=None, note=None, now,
           verdict: dict | None = None) -> RunContext:
    ctx = RunContext.for_write(organization=identity.organization, run_id=run_id, now=now,
                               actor=audit.Actor.of(identity))
    ensure_visible(identity, ctx.run)  # a run the person may not see does not exist for them
    ctx.ensure_open()  # spec §3.5: run_ended before every check but the schema's
    issues = argument_issues(decision=decision, output=output, evidence=evidence, summary=summary,
                             next_choice=next_choice, reason=reason, note=note)
    if issues:
        raise invalid("these arguments do not go with this decision", issues)
    item = _item(ctx, work_item_id)
    if snapshot != ctx.run.snapshot:
        raise stale("the run data changed since this snapshot was read; read the run again")
    _check_person(identity, item)

    allowed = decisions_for(item)
    if decision not in allowed:
        raise not_accepted([Issue("decision", f'"{decision}" is not accepted on this item; one of {", ".join(allowed)}',
                                  "decision_not_accepted")])
    if decision in NEEDS_NOTE and (note is None or not note.strip()):
        raise not_accepted([Issue("note", "required", "note_missing")])

    step = ctx.step(item.step_id)
    by = identity.ref
    ctx.close_item(item, decision=decision, by=by)
    ctx.record(EventKind.DECIDED, step_id=step.id, work_item_id=item.id,
               data={"decision": str(decision), "note": note, "escalated": item.escalation is not None})
    if decision == Decision.COMPLETED:
        _complete(ctx, item, step, by=by, output=output, evidence=evidence, summary=summary,
                  next_choice=next_choice, reason=reason, verdict=verdict)
    elif decision == Decision.APPROVED:
        record = {"decision": "approved", "by": by, "at": iso(ctx.now)}
        if note is not None:
            record["note"] = note
        ctx.complete(step.id, record)
    elif decision == Decision.REJECTED:
        ctx.reject(step.id, note=note, by=by)
    elif decision == Decision.RETURNED:
        ctx.return_escalated(step.id, note=note, by=by)
    elif decision == Decision.FAILED:
        ctx.release_candidate(step.id)
        ctx.fail_step(step.id, by=by, note=note)
    else:  # pragma: no cover - the schema allows only the five decisions
        raise ToolError("invalid", f"unknown decision {decision}")
    ctx.save()
    return ctx


def _complete(ctx: RunContext, item: WorkItem, step, *, by, output, evidence, summary, next_choice, reason,
              verdict) -> None:
    """`completed`: the same acceptance as a submission (summary optional for people). On an
    escalation held by an unsure check, the candidate stands in for what the person leaves out and
    is not checked again; an ordinary task with a check is checked (check-1 §3)."""
    state = ctx.states[step.id]
    held = state.candidate if item.escalation is not None else None
    held_verdict = ctx.release_candidate(step.id) if held else None
    if held and output is None:
        candidate = held["record"]
        output, evidence = candidate.get("output"), candidate.get("evidence")
        summary = summary if summary is not None else candidate.get("summary")
        next_choice = next_choice if next_choice is not None else candidate.get("next")
        reason = reason if reason is not None else candidate.get("reason")
    problems, record = accept(ctx=ctx, step=step, output=output if output is not None else {}, evidence=evidence,
                              summary=summary, next_choice=next_choice, reason=reason, by=by, summary_required=False)
    if problems:
        raise not_accepted(problems)
    if held_verdict is not None:
        record["check"] = held_verdict
    elif item.escalation is None and step.check:
        if held_for_person(ctx, step, record, check_verdict(ctx, step, state, record, verdict, None)):
            return
    ctx.complete(step.id, record, route=next_choice if step.routes else None)


def check_before_decide(*, identity: Identity, run_id: str, work_item_id: str, snapshot: str, decision: str,
                        output, evidence, summary, next_choice, reason, now, write: Write) -> dict | None:
    """Before the write's transaction: the check verdict for a person completing an ordinary task
    that has a check (an escalated step is not checked again). None when there is nothing to check
    (or the write is a replay); the write itself then reports any error."""
    if decision != Decision.COMPLETED:
        return None
    try:
        if write.replayed:
            return None
        ctx = RunContext.read(organization=identity.organization, run_id=run_id, now=now)
        ensure_visible(identity, ctx.run)  # never ask the evaluator about a run hidden from the caller
    except ToolError:
        return None
    item = work_item_of_run(work_item_id, ctx.run, open_only=True)
    if item is None or item.escalation is not None or ctx.run.is_over:
        return None
    step = ctx.step(item.step_id)
    if not step.check or snapshot != ctx.run.snapshot:
        return None
    issues, record = accept(ctx=ctx, step=step, output=output or {}, evidence=evidence, summary=summary,
                            next_choice=next_choice, reason=reason, by=identity.ref, summary_required=False)
    if issues:
        return None
    return checks.evaluate(ctx, step, record)
