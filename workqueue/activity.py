"""The run's timeline for people: every audit event in order, in plain words (issue 14).

No rules here: the events come from the audit log as the services wrote them; this module only
words them for finance and operations staff and groups them by who acted.
"""

from dataclasses import dataclass, field

from kernel.models import ActorKind, AuditEvent, EventKind
from processes.maps import humanize

WHO = {
    "people": (ActorKind.PERSON, ActorKind.OPERATOR, ActorKind.ADMIN),
    "agents": (ActorKind.AGENT,),
    "server": (ActorKind.SERVER,),
}
WHO_LABELS = (("", "Everything"), ("people", "People"), ("agents", "Agents"), ("server", "The server"))
DECISION_VERBS = {"approved": "approved", "rejected": "rejected", "completed": "completed", "failed": "failed",
                  "returned": "returned"}


@dataclass
class Entry:
    at: object
    kind: str
    actor: str
    actor_kind: str
    sentence: str
    note: str | None = None
    issues: list[str] = field(default_factory=list)
    work_item_id: str | None = None
    request_id: str | None = None

    @property
    def kind_label(self) -> str:
        return EventKind(self.kind).label


def _step(event: AuditEvent) -> str:
    return f"“{humanize(event.step_id)}”" if event.step_id else "the run"


def _who(event: AuditEvent) -> str:
    return "The server" if event.actor_kind == ActorKind.SERVER else event.actor


def _ready(event: AuditEvent) -> str:
    data, step = event.data, _step(event)
    kind = data.get("kind")
    if kind in ("task", "approve"):
        assigned = data.get("assignedTo") or {}
        whom = f"group {assigned['group']}" if "group" in assigned else assigned.get("person", "a person")
        return f"{step} is waiting for {whom}"
    if kind in ("wait", "wait_until"):
        return f"{step} waits until {data.get('until')}"
    if kind == "wait_for":
        return f"{step} waits for the event “{data.get('event')}”"
    if kind == "parallel":
        return f"{step} started its branches: " + ", ".join(humanize(b) for b in data.get("branches", []))
    return f"{step} is ready for an agent"


def _sentence(event: AuditEvent) -> str:
    data, step, who = event.data, _step(event), _who(event)
    match event.kind:
        case EventKind.RUN_STARTED:
            test = " as a test run" if data.get("mode") == "test" else ""
            return f"{who} started the run{test} (version {data.get('version')})"
        case EventKind.STEP_READY:
            return _ready(event)
        case EventKind.STEP_CLAIMED:
            return f"{who} took {step}"
        case EventKind.LEASE_RENEWED:
            return f"{who} is still working on {step}"
        case EventKind.LEASE_LAPSED:
            return f"{data.get('heldBy') or 'The agent'} stopped answering on {step}; it is ready again"
        case EventKind.SUBMISSION_ACCEPTED:
            route = f", choosing “{humanize(data['next'])}”" if data.get("next") else ""
            return f"{who} finished {step}{route}"
        case EventKind.SUBMISSION_REFUSED:
            return f"{who}'s work on {step} was not accepted"
        case EventKind.CHECK_VERDICT:
            return f"The check of {step} answered “{data.get('verdict')}”"
        case EventKind.ESCALATED:
            return f"{who} handed {step} to the operators"
        case EventKind.RETURNED:
            return f"{who} sent {step} back for another attempt"
        case EventKind.DECIDED:
            return f"{who} {DECISION_VERBS.get(data.get('decision'), data.get('decision'))} {step}"
        case EventKind.REWORK:
            return f"The rejection sent the run back to “{humanize(data.get('to'))}”"
        case EventKind.BRANCHES_JOINED:
            return f"Every branch of {step} is finished"
        case EventKind.WAIT_ELAPSED:
            return f"The wait {step} is over"
        case EventKind.WAIT_TIMED_OUT:
            return f"{step} stopped waiting for “{data.get('event')}”; the run goes on at “{humanize(data.get('next'))}”"
        case EventKind.OVERDUE:
            return f"{step} is overdue"
        case EventKind.NOTICE_SENT:
            return f"An overdue notice about {step} went to {data.get('to')}"
        case EventKind.EVENT_SENT:
            return f"{who} sent the event “{data.get('event')}”"
        case EventKind.EVENT_HELD:
            return f"The event “{data.get('event')}” is kept until a step waits for it"
        case EventKind.EVENT_CONSUMED:
            return f"{step} received the event “{data.get('event')}” from {data.get('sentBy')}"
        case EventKind.EVENT_DISCARDED:
            return f"The unused event “{data.get('event')}” was dropped when the run ended"
        case EventKind.STEP_FAILED:
            return f"{step} failed"
        case EventKind.RUN_ENDED:
            return f"The run ended: {data.get('outcome')}"
        case EventKind.RUN_CANCELLED:
            return f"{who} cancelled the run"
    return f"{EventKind(event.kind).label} ({who})"


def entry(event: AuditEvent) -> Entry:
    data = event.data or {}
    # A return is told by the decision just before it, note included.
    note = None if event.kind == EventKind.RETURNED else data.get("note") or data.get("reason") or data.get("progress")
    return Entry(at=event.at, kind=event.kind, actor=event.actor, actor_kind=event.actor_kind,
                 sentence=_sentence(event), note=note if isinstance(note, str) else None,
                 issues=list(data.get("issues") or []), work_item_id=event.work_item_id,
                 request_id=event.request_id)


def timeline(events, who: str = "") -> list[Entry]:
    """Every event, oldest first; `who` keeps only people's, agents' or the server's."""
    kinds = WHO.get(who)
    return [entry(event) for event in events if kinds is None or event.actor_kind in kinds]
