"""The run engine: one loaded run, its step states in memory, and every transition of spec §3.

A service loads a RunContext (taking the run row lock first), applies one action through it, and
saves it. Every automatic transition the action triggers (finishes, past waits, held events,
forks and joins) is applied before save, so the returned view already shows them (spec §4).
"""

import copy
import datetime as dt
from collections import deque

from django.contrib.auth import get_user_model

from kernel import audit, clock, sql
from kernel.errors import ConflictIssue, ToolError, conflict, no_such_run, not_found, run_ended
from kernel.models import EventKind
from processes.definition import JOIN, Definition, StepDef, definition_for
from processes.fields import parse_datetime
from webhooks.services import events as webhook_events

from ..models import (
    CLAIMABLE,
    ENDED_STATES,
    UNFINISHED,
    Event,
    Run,
    RunState,
    StepState,
    StepStatus,
    WorkItem,
    WorkItemState,
)
from . import checks, locks, notifications, outbox, rundata

SERVER = "server"

STATE_FIELDS = [
    "state", "ready_since", "activated_seq", "completed_seq", "routed_to", "due_at", "due_notified_at",
    "wake_at", "claimed_by", "lease_gen", "lease_expires_at", "progress", "handoff", "candidate",
]


RUN_FIELDS = ("state", "outcome", "ended_by", "ended_at", "ended_note", "steps_data", "snapshot", "seq", "updated_at")


def _values(state: StepState) -> tuple:
    # JSON fields are copied so that a change made in place is still seen as a change.
    return tuple(copy.deepcopy(value) if isinstance(value, dict | list) else value
                 for value in (getattr(state, name) for name in STATE_FIELDS))


def lapsed(state: StepState, now: dt.datetime) -> bool:
    """A claim whose lease has ended counts as ready at once (spec §3.3), sweep or no sweep."""
    return state.state == StepStatus.CLAIMED and state.lease_expires_at is not None and state.lease_expires_at <= now


def visible_state(state: StepState, now: dt.datetime) -> str | None:
    return StepStatus.READY if lapsed(state, now) else state.state


def effective_handoff(state: StepState, now: dt.datetime) -> dict | None:
    """What the previous attempt left (spec §3.3); a lapsed lease contributes its last progress note."""
    handoff = dict(state.handoff or {})
    if lapsed(state, now) and state.progress:
        handoff["progress"] = state.progress
    return handoff or None


class RunContext:
    def __init__(self, run: Run, states: list[StepState], now: dt.datetime | None = None, *,
                 actor: audit.Actor = audit.SERVER):
        self.run = run
        self.now = now or clock.now()
        # Who causes what this context does (from authentication; the server for sweeps), and the
        # audit events of it, written by save() in the same transaction.
        self.actor = actor
        self.events: list = []
        self.definition: Definition = definition_for(run.version_id)
        self.states: dict[str, StepState] = {state.step_id: state for state in states}
        # Values as loaded, so save() writes only the columns that changed.
        self._loaded = {state.step_id: _values(state) for state in states}
        self._dirty: set[str] = set()
        self._new_items: list[WorkItem] = []
        self._closed_items: list[WorkItem] = []
        self._items: list[WorkItem] | None = None
        self._data_changed = False
        self._remove_open_items = False
        # Steps sent back for rework in this write, {step: {by, note}}: their people hear "returned" (notifications).
        self._sent_back: dict[str, dict] = {}

    # --- loading --------------------------------------------------------------------------
    @classmethod
    def for_write(cls, *, organization, run_id: str, now=None, actor: audit.Actor = audit.SERVER) -> "RunContext":
        """The run of the organization (not_found otherwise) with its row and its steps' rows
        locked (runs/services/locks.py), so concurrent writes to one run serialize."""
        run, states = locks.run_for_write(organization=organization, run_id=run_id)
        return cls(run, states, now, actor=actor)

    @classmethod
    def read(cls, *, organization, run_id: str, now=None) -> "RunContext":
        """The run as it stands, without locks: for views, and for work done before a write."""
        runs = sql.select(Run, "id = %s AND organization_id = %s", [run_id, organization.id])
        if not runs:
            raise no_such_run(run_id)
        run = runs[0]
        run.organization = organization
        return cls(run, sql.select(StepState, "run_id = %s AND organization_id = %s ORDER BY id",
                                   [run.id, organization.id]), now)

    def ensure_open(self) -> None:
        if self.run.state in ENDED_STATES:
            raise run_ended()

    # --- the audit log ----------------------------------------------------------------------
    def record(self, kind: EventKind, *, step_id: str | None = None, work_item_id: str | None = None,
               data: dict | None = None, actor: audit.Actor | None = None) -> None:
        """An event of this run, written with the run by save()."""
        self.events.append(audit.event(kind, organization_id=self.run.organization_id, actor=actor or self.actor,
                                       at=self.now, run_id=self.run.id, step_id=step_id,
                                       work_item_id=work_item_id, data=data))

    # --- accessors ------------------------------------------------------------------------
    def step(self, step_id: str) -> StepDef:
        return self.definition.step(step_id)

    def state_of(self, step_id: str) -> StepState:
        return self.states[step_id]

    @property
    def steps_data(self) -> dict:
        return self.run.steps_data

    def open_items(self) -> list[WorkItem]:
        """Open work items of the run (queried only when some step could have one)."""
        if self.run.state in ENDED_STATES:
            return []
        if self._items is None:
            waiting = any(s.state == StepStatus.WAITING and s.kind in ("task", "approve", "agent") for s in self.states.values())
            self._items = list(WorkItem.objects.filter(run=self.run, state=WorkItemState.OPEN)) if waiting else []
        new_ids = {item.id for item in self._new_items}
        closed = {item.id for item in self._closed_items}
        return [i for i in self._items if i.id not in new_ids and i.id not in closed] + [
            i for i in self._new_items if i.state == WorkItemState.OPEN
        ]

    def _touch(self, state: StepState) -> None:
        self._dirty.add(state.step_id)

    def _next_seq(self) -> int:
        self.run.seq += 1
        return self.run.seq

    def _set_data_changed(self) -> None:
        self._data_changed = True

    # --- completing -----------------------------------------------------------------------
    def complete(self, step_id: str, record: dict | None, *, route: str | None = None) -> None:
        """The step is done with `record` as its current completion; continue along its route."""
        step, state = self.step(step_id), self.states[step_id]
        target = route or step.next
        state.state = StepStatus.DONE
        state.completed_seq = self._next_seq()
        state.routed_to = target
        self._clear_attempt(state)
        self._touch(state)
        if record is not None:
            rundata.record_completion(self.steps_data, step_id, record)
            self._set_data_changed()
        self._continue(step, target)

    def _continue(self, step: StepDef, target: str | None) -> None:
        if self.run.state in ENDED_STATES or target is None:
            return
        if target == JOIN:
            self._join_if_complete(step.parallel)
        else:
            self.activate(target)

    def _join_if_complete(self, parallel_id: str) -> None:
        """Join (profile parallel-1 §3): when every branch reached `join`, the parallel step is done."""
        parallel = self.step(parallel_id)
        fork_seq = self.states[parallel_id].activated_seq or 0
        for entry in parallel.entries:
            joined = any(
                self.states[s.id].state == StepStatus.DONE
                and self.states[s.id].routed_to == JOIN
                and (self.states[s.id].completed_seq or 0) > fork_seq
                for s in self.definition.steps
                if s.parallel == parallel_id and s.branch == entry
            )
            if not joined:
                return
        self.record(EventKind.BRANCHES_JOINED, step_id=parallel_id, actor=audit.SERVER)
        self.complete(parallel_id, None)

    # --- activating -----------------------------------------------------------------------
    def activate(self, step_id: str) -> None:
        """Make a step ready and apply every automatic transition that follows (iteratively)."""
        pending = deque([step_id])
        while pending and self.run.state not in ENDED_STATES:
            step = self.step(pending.popleft())
            state = self.states[step.id]
            self._start_attempt(step, state)
            follow = getattr(self, f"_enter_{step.kind}")(step, state)
            if follow:
                pending.extend(follow)

    def _start_attempt(self, step: StepDef, state: StepState) -> None:
        state.ready_since = self.now
        state.activated_seq = self._next_seq()
        state.due_at = self.now + step.due if step.due else None
        state.due_notified_at = None
        state.wake_at = None
        state.routed_to = None
        self._clear_attempt(state)
        state.handoff = None
        self._touch(state)

    @staticmethod
    def _clear_attempt(state: StepState) -> None:
        if state.claimed_by or state.lease_expires_at:
            state.lease_gen += 1  # any outstanding token goes stale
        state.claimed_by = None
        state.lease_expires_at = None
        state.progress = None
        state.candidate = None
        state.wake_at = None

    def _enter_agent(self, step, state):
        state.state = StepStatus.READY
        self.record(EventKind.STEP_READY, step_id=step.id, actor=audit.SERVER, data={"kind": step.kind})
        return None

    def _enter_task(self, step, state):
        state.state = StepStatus.WAITING
        assignment = self._assignment(step)
        if assignment is None:
            return None
        group, person = assignment
        item = self._open_item(step, state, kind=step.kind, group=group, person=person)
        self.record(EventKind.STEP_READY, step_id=step.id, work_item_id=item.id, actor=audit.SERVER,
                    data={"kind": step.kind, "assignedTo": _assigned(item)})
        return None

    _enter_approve = _enter_task

    def _enter_wait(self, step, state):
        state.state = StepStatus.WAITING
        state.wake_at = self.now + step.wait
        self._record_waiting(step, state)
        return None

    def _record_waiting(self, step, state) -> None:
        data = {"kind": step.kind, "until": clock.iso(state.wake_at)}
        if step.kind == "wait_for":
            data["event"] = step.value
        self.record(EventKind.STEP_READY, step_id=step.id, actor=audit.SERVER, data=data)

    def _enter_wait_until(self, step, state):
        raw = self._value_at(step.value)
        moment = parse_datetime(raw) if isinstance(raw, str) else None
        if moment is None:
            problem = "is missing" if raw is None else "is not a datetime"
            self.fail_step(step.id, by=SERVER, note=f"wait_until: {step.value} {problem}")
            return None
        if moment <= self.now:
            self._complete_wait(step, state)
            return None
        state.state = StepStatus.WAITING
        state.wake_at = moment
        self._record_waiting(step, state)
        return None

    def _enter_wait_for(self, step, state):
        state.state = StepStatus.WAITING
        event = None if self.run._state.adding else (  # a run being started has no events yet
            Event.objects.filter(run=self.run, name=step.value, consumed_by__isnull=True, discarded_at__isnull=True)
            .order_by("id")
            .first()
        )
        state.wake_at = self.now + step.timeout if step.timeout else None
        self._record_waiting(step, state)
        if event is not None:
            self.deliver_event(step.id, event)
        return None

    def _enter_finish(self, step, state):
        state.state = StepStatus.DONE
        state.completed_seq = self._next_seq()
        self.end(state=RunState.ENDED, outcome=step.value, by=SERVER, note=None)
        return None

    def _enter_parallel(self, step, state):
        # Fork (parallel-1 §3): the parallel step waits, every branch entry is ready in this write.
        state.state = StepStatus.WAITING
        self.record(EventKind.STEP_READY, step_id=step.id, actor=audit.SERVER,
                    data={"kind": step.kind, "branches": list(step.entries)})
        return list(step.entries)

    # --- waits and events -------------------------------------------------------------------
    def _complete_wait(self, step: StepDef, state: StepState) -> None:
        self.record(EventKind.WAIT_ELAPSED, step_id=step.id, actor=audit.SERVER)
        self.complete(step.id, {"by": SERVER, "at": clock.iso(self.now)})

    def wake(self, step_id: str) -> None:
        """A wait's timer passed: continue, or for a wait_for take on_timeout (default: next)."""
        step, state = self.step(step_id), self.states[step_id]
        if step.kind == "wait_for":
            self.record(EventKind.WAIT_TIMED_OUT, step_id=step.id, actor=audit.SERVER,
                        data={"event": step.value, "next": step.timeout_target})
            self.complete(step.id, {"by": SERVER, "at": clock.iso(self.now)}, route=step.timeout_target)
        else:
            self._complete_wait(step, state)

    def deliver_event(self, step_id: str, event: Event) -> None:
        """A wait_for consumes the event: the sender is `by`, the event data the output (spec §3.6)."""
        event.consumed_by = step_id
        event.consumed_at = self.now
        event.save(update_fields=["consumed_by", "consumed_at"])
        self.record(EventKind.EVENT_CONSUMED, step_id=step_id, actor=audit.SERVER,
                    data={"event": event.name, "eventId": event.pk, "sentBy": event.sent_by})
        record = {"output": event.data if event.data is not None else {}, "by": event.sent_by,
                  "at": clock.iso(self.now)}
        self.complete(step_id, record)

    def waiting_for(self, name: str) -> StepDef | None:
        """The wait_for step currently waiting for this event name, if any (oldest activation first)."""
        candidates = [
            self.step(s.step_id) for s in self.states.values()
            if s.state == StepStatus.WAITING and s.kind == "wait_for" and self.step(s.step_id).value == name
        ]
        candidates.sort(key=lambda d: self.states[d.id].activated_seq or 0)
        return candidates[0] if candidates else None

    # --- people -------------------------------------------------------------------------------
    def _assignment(self, step: StepDef) -> tuple[str | None, str | None] | None:
        """(group, person) for a person step; None after failing the run when a path resolves to nothing."""
        person = step.person
        if person == "initiator":
            return None, self.run.initiator.email if self.run.initiator else None
        if "." not in person:
            return self.definition.bindings[person], None
        value = self._value_at(person)
        if not isinstance(value, str) or not value:
            self.fail_step(step.id, by=SERVER, note=f"person: {person} resolves to nothing")
            return None
        user = get_user_model().objects.filter(
            email__iexact=value, member__organization_id=self.run.organization_id, is_active=True
        ).first()
        if user is None:
            self.fail_step(step.id, by=SERVER, note=f'person: {person} is "{value}", who is not a person in this organization')
            return None
        return None, user.email

    def _open_item(self, step: StepDef, state: StepState, *, kind: str, group=None, person=None, escalation=None):
        item = WorkItem(
            organization_id=self.run.organization_id,
            run=self.run,
            step_state=state,
            step_id=step.id,
            kind=kind,
            assigned_group=group,
            assigned_person=person,
            escalation=escalation,
            due_at=state.due_at,
            created_at=self.now,
        )
        self._new_items.append(item)
        return item

    def escalate(self, step_id: str, *, note: str, by: str) -> WorkItem:
        """The agent gives the step to a person: it waits on the operators' queue (spec §3.3)."""
        state = self.states[step_id]
        state.state = StepStatus.WAITING
        state.lease_gen += 1
        state.claimed_by = None
        state.lease_expires_at = None
        self._touch(state)
        escalation = {"note": note, "by": by, "at": clock.iso(self.now)}
        operators = self.run.organization.operators.name
        item = self._open_item(self.step(step_id), state, kind="agent", group=operators, escalation=escalation)
        self.record(EventKind.ESCALATED, step_id=step_id, work_item_id=item.id, data={"note": note})
        return item

    def close_item(self, item: WorkItem, *, decision: str, by: str) -> None:
        item.state = WorkItemState.DECIDED
        item.decision = decision
        item.decided_by = by
        item.decided_at = self.now
        self._closed_items.append(item)

    def reject(self, step_id: str, *, note: str, by: str) -> None:
        """An approval is rejected: its decision and note become current, then the run goes back to
        on_reject, or ends `rejected` with the note when there is none (spec §3.2, §3.5)."""
        step, state = self.step(step_id), self.states[step_id]
        state.state = StepStatus.DONE
        state.completed_seq = self._next_seq()
        self._touch(state)
        rundata.record_completion(self.steps_data, step_id,
                                  {"decision": "rejected", "note": note, "by": by, "at": clock.iso(self.now)})
        self._set_data_changed()
        if step.on_reject:
            self._sent_back[step.on_reject] = {"by": by, "note": note}  # notice hook (issue 15)
            self.reject_into(step_id, step.on_reject)
        else:
            self.end(state=RunState.ENDED, outcome="rejected", by=by, note=note)

    def return_escalated(self, step_id: str, *, note: str, by: str) -> None:
        """An escalated step goes back: the note travels in handoff.returned (spec §3.4) to the next
        claim, or for a task to its assignee's new work item. The due clock does not restart."""
        step, state = self.step(step_id), self.states[step_id]
        verdict = self.release_candidate(step_id)
        self.record(EventKind.RETURNED, step_id=step_id, data={"note": note})
        state.handoff = {**(state.handoff or {}), "returned": {"note": note, "by": by, "at": clock.iso(self.now)}}
        if verdict is not None:
            # check-1 §3: the same attempt continues; "the agent's handoff.issues carries the same
            # lines" as the verdict that held it (its failed and unsure questions).
            state.handoff["check"] = verdict
            state.handoff["issues"] = checks.issue_lines(step, verdict, results=("fail", "unsure"))
        self._touch(state)
        if step.kind == "task":
            assignment = self._assignment(step)
            if assignment is not None:
                self._sent_back[step_id] = {"by": by, "note": note}  # notice hook (issue 15)
                item = self._open_item(step, state, kind="task", group=assignment[0], person=assignment[1])
                self.record(EventKind.STEP_READY, step_id=step.id, work_item_id=item.id, actor=audit.SERVER,
                            data={"kind": step.kind, "assignedTo": _assigned(item)})
            return
        state.state = StepStatus.READY
        state.ready_since = self.now
        self.record(EventKind.STEP_READY, step_id=step.id, actor=audit.SERVER, data={"kind": step.kind})

    def hold_for_person(self, step_id: str, *, record: dict, verdict: dict) -> WorkItem:
        """check-1 unsure: hold the submission as the step's candidate and escalate the step to the
        operators, with the verdict in escalation.check and in run data at steps.<id>.check."""
        step, state = self.step(step_id), self.states[step_id]
        entry = self.steps_data.get(step_id)
        state.candidate = {"record": record, "verdict": verdict, "existed": entry is not None,
                           "previous_check": (entry or {}).get("check")}
        self.steps_data.setdefault(step_id, {"history": []})["check"] = verdict
        self._set_data_changed()
        state.state = StepStatus.WAITING
        state.lease_gen += 1
        state.claimed_by = None
        state.lease_expires_at = None
        self._touch(state)
        escalation = {"note": "The check was unsure about this submission: complete it (with the candidate or your "
                              "own output), return it with a note, or fail the run.",
                      "by": SERVER, "at": clock.iso(self.now), "check": verdict, "candidate": record}
        operators = self.run.organization.operators.name
        item = self._open_item(step, state, kind=step.kind, group=operators, escalation=escalation)
        self.record(EventKind.ESCALATED, step_id=step_id, work_item_id=item.id, actor=audit.SERVER,
                    data={"note": escalation["note"], "check": verdict["verdict"]})
        return item

    def release_candidate(self, step_id: str) -> dict | None:
        """Undo hold_for_person's mark in run data; returns the held verdict (None if nothing was held)."""
        state = self.states[step_id]
        held = state.candidate
        if not held:
            return None
        entry = self.steps_data.get(step_id, {})
        if held.get("previous_check") is not None:
            entry["check"] = held["previous_check"]
        else:
            entry.pop("check", None)
        if not held.get("existed") and set(entry) <= {"history"} and not entry.get("history"):
            self.steps_data.pop(step_id, None)
        self._set_data_changed()
        state.candidate = None
        self._touch(state)
        return held.get("verdict")

    def reject_into(self, approval_id: str, target_id: str) -> None:
        """Rework (spec §3.1; parallel-1 §3): steps completed since the target became ready move to
        history and show null, except the rejecting approval; then the target is ready again. A
        target never reached has nothing completed after it: nothing moves."""
        target = self.step(target_id)
        retired = []
        since = self.states[target_id].activated_seq
        if since is None:
            # A target the run never reached (an alternative route): nothing completed after it,
            # so nothing moves to history; the work already done stays readable to its new worker.
            self.record(EventKind.REWORK, step_id=approval_id, data={"to": target_id, "movedToHistory": retired})
            self.activate(target_id)
            return
        scope = [s for s in self.definition.steps if s.branch == target.branch] if target.parallel else self.definition.steps
        for step in scope:
            state = self.states[step.id]
            if step.id in (approval_id, target_id) or state.state != StepStatus.DONE or (state.completed_seq or 0) <= since:
                continue
            entry = self.steps_data.get(step.id)
            if entry and rundata.retire_current(entry):
                self._set_data_changed()
                retired.append(step.id)
            state.state = None
            state.routed_to = None
            self._touch(state)
        self.record(EventKind.REWORK, step_id=approval_id, data={"to": target_id, "movedToHistory": retired})
        self.activate(target_id)

    # --- ending -------------------------------------------------------------------------------
    def fail_step(self, step_id: str, *, by: str, note: str) -> None:
        """The step fails and so does the run (a `failed` decision, or a path resolving to nothing)."""
        state = self.states[step_id]
        if by == SERVER:  # a person's `failed` decision is recorded as the decision
            self.record(EventKind.STEP_FAILED, step_id=step_id, actor=audit.SERVER, data={"note": note})
        rundata.record_completion(self.steps_data, step_id, {"decision": "failed", "note": note, "by": by,
                                                              "at": clock.iso(self.now)})
        self._set_data_changed()
        self.end(state=RunState.ENDED, outcome="failed", by=by, note=note)
        state.state = StepStatus.FAILED
        state.completed_seq = self._next_seq()
        self._touch(state)

    def end(self, *, state: str, outcome: str | None, by: str, note: str | None) -> None:
        """End or cancel (spec §3.5): unfinished steps cancelled, open work items removed, tokens dead."""
        run = self.run
        if state == RunState.CANCELLED:
            self.record(EventKind.RUN_CANCELLED, data={"reason": note})
        else:
            self.record(EventKind.RUN_ENDED, actor=self.actor if by != SERVER else audit.SERVER,
                        data={"outcome": outcome, "note": note})
        run.state = state
        run.outcome = outcome
        run.ended_by = by
        run.ended_at = self.now
        run.ended_note = note
        for step_state in self.states.values():
            if step_state.state in UNFINISHED:
                step_state.state = StepStatus.CANCELLED
                self._clear_attempt(step_state)
                self._touch(step_state)
        for item in self._new_items:
            item.state = WorkItemState.REMOVED
        self._remove_open_items = True

    # --- saving -------------------------------------------------------------------------------
    def save(self) -> None:
        run = self.run
        if run.state not in ENDED_STATES:
            busy = any(s.state in CLAIMABLE for s in self.states.values())
            run.state = RunState.ACTIVE if busy else RunState.WAITING
        if self._data_changed:
            run.snapshot = rundata.snapshot_of(run.inputs, run.steps_data)
        run.updated_at = self.now
        if run._state.adding:
            run.save(force_insert=True)
            for state in self.states.values():
                state.run = run
            StepState.objects.bulk_create(self.states.values())
        else:
            sql.update_row(Run, run.pk, {name: getattr(run, name) for name in RUN_FIELDS})
            for step_id in sorted(self._dirty):
                state, loaded = self.states[step_id], self._loaded[step_id]
                changed = {f: v for f, v, old in zip(STATE_FIELDS, _values(state), loaded, strict=True) if v != old}
                sql.update_row(StepState, state.pk, changed)
        for item in self._closed_items:
            # Conditional: the item may have been read before the run was locked (selectors
            # `work_item_read_already`); one decided meanwhile is refused, never decided twice.
            closed = WorkItem.objects.filter(pk=item.pk, state=WorkItemState.OPEN).update(
                state=item.state, decision=item.decision, decided_by=item.decided_by, decided_at=item.decided_at)
            if not closed:
                raise _no_longer_open(item.pk)
        if self._remove_open_items:
            WorkItem.objects.filter(run=run, state=WorkItemState.OPEN).update(state=WorkItemState.REMOVED)
            held = Event.objects.filter(run=run, consumed_by__isnull=True, discarded_at__isnull=True)
            for event_id, name in held.values_list("id", "name"):
                self.record(EventKind.EVENT_DISCARDED, actor=audit.SERVER, data={"event": name, "eventId": event_id})
            held.update(discarded_at=self.now)
            if self._items is not None:
                for item in self._items:
                    item.state = WorkItemState.REMOVED
        outbox_rows = []
        if self._new_items:
            WorkItem.objects.bulk_create(self._new_items)
            # Notice hook (issue 15, point 6): only for a live run's open items.
            outbox_rows = notifications.work_notices(run, self._new_items, caused_by=self.actor.ref,
                                                     sent_back=self._sent_back, now=self.now)
        # Webhook hook (issue 28): the events a subscription hears of, no look-up. With the
        # notices' rows, at most one INSERT into the outbox; none when nobody listens.
        outbox.queue(outbox_rows + webhook_events.rows_for(run, self.events, self.now))
        audit.write(self.events)
        self.events = []

    def _value_at(self, path: str):
        """The value a path names in run data: inputs.<f> or steps.<id>.output.<f>; None if absent."""
        parts = path.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            return self.run.inputs.get(parts[1])
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "output":
            output = (self.steps_data.get(parts[1]) or {}).get("output") or {}
            return output.get(parts[3])
        return None


def already_decided(item: WorkItem) -> ToolError:
    return conflict(ConflictIssue.ALREADY_DECIDED, f"this work item was already decided ({item.decision}) by "
                                                   f"{item.decided_by} at {item.decided_at:%Y-%m-%dT%H:%M:%SZ}")


def _no_longer_open(work_item_id: str) -> ToolError:
    """Why an item could not be closed: decided meanwhile, or no longer open (a run's write removed it)."""
    item = WorkItem.objects.get(pk=work_item_id)
    if item.state == WorkItemState.DECIDED:
        return already_decided(item)
    return not_found(f"run {item.run_id} has no work item {work_item_id}")


def _assigned(item: WorkItem) -> dict:
    return {"group": item.assigned_group} if item.assigned_group else {"person": item.assigned_person}
