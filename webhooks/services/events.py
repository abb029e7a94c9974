"""The hot path's side of webhooks (issue 28, point 3): which of a write's events some
subscription hears of, as outbox rows written with the write.

A write's audit events (what it did) become webhook events by KIND_OF; only those a subscription
of the organization wants are kept (its kinds, its process, test runs only when asked), so a write
nobody listens to pays nothing. What the organization's subscriptions want is kept per process for
CACHE_SECONDS (forgotten at once in the process that changes a subscription), like the
organization itself (kernel/organizations.py): no look-up on the hot path. The rows go to the
notice outbox (runs/services/outbox.py) in the caller's INSERT, delivery "webhook"; the worker
turns each into one delivery per subscription (webhooks/services/fanout.py). An alert rule's
change (alert.fired, alert.cleared) is written the same way by the alert sweep (alert_rows)."""

import time

from kernel.clock import iso
from kernel.models import EventKind
from runs.models import Notice

from ..models import ALERT_KINDS, Subscription

CACHE_SECONDS = 30.0

_wanted: dict[int, tuple[float, tuple[tuple[frozenset, str, bool], ...]]] = {}


def wanted(organization_id: int) -> tuple[tuple[frozenset, str, bool], ...]:
    """(kinds, process or "", test runs) of each subscription of the organization, paused ones too
    (their deliveries wait for them)."""
    cached = _wanted.get(organization_id)
    if cached is None or cached[0] < time.monotonic():
        rows = Subscription.objects.filter(organization_id=organization_id).values_list("kinds", "process", "test_runs")
        cached = _wanted[organization_id] = (time.monotonic() + CACHE_SECONDS,
                                             tuple((frozenset(kinds), process, test) for kinds, process, test in rows))
    return cached[1]


def forget(organization_id: int) -> None:
    _wanted.pop(organization_id, None)


def matches(filters, kind: str, process: str, test: bool) -> bool:
    return any(kind in kinds and (not only or only == process) and (test_runs or not test)
               for kinds, only, test_runs in filters)


def kind_of(event) -> str | None:
    """The webhook kind of an audit event (kernel.audit.event), None when it is none."""
    data = event.data or {}
    match event.kind:
        case EventKind.RUN_STARTED:
            return "run.started"
        case EventKind.STEP_READY if event.work_item_id:
            return "work_item.waiting"
        case EventKind.STEP_READY if data.get("kind") == "agent":
            return "step.ready"
        case EventKind.ESCALATED:
            return "run.escalated"
        case EventKind.DECIDED:
            return "work_item.decided"
        case EventKind.RUN_ENDED:
            return "run.failed" if data.get("outcome") == "failed" else "run.ended"
        case EventKind.RUN_CANCELLED:
            return "run.cancelled"
        case EventKind.OVERDUE:
            return "work_item.overdue"
    return None


def rows_for(run, events, now) -> list[Notice]:
    """The outbox rows of this write's events that a subscription hears of (none when none does)."""
    filters = wanted(run.organization_id)
    if not filters:
        return []
    test = run.mode == "test"
    rows = []
    for event in events:
        kind = kind_of(event)
        if kind is None or not matches(filters, kind, run.process_name, test):
            continue
        data = event.data or {}
        about = {"run": run.id, "step": event.step_id, "workItem": event.work_item_id, "at": iso(event.at)}
        if kind in ("run.ended", "run.failed"):
            about["outcome"] = data.get("outcome")
        elif kind == "run.cancelled":
            about["outcome"] = "cancelled"
        elif kind == "work_item.decided":
            about["decision"] = data.get("decision")
        rows.append(Notice(organization_id=run.organization_id, kind=kind, recipient="", delivery=Notice.WEBHOOK,
                           subject="", body="", about=[about], created_at=now, send_after=now))
    return rows


def alert_rows(organization_id: int, *, firing: bool, process: str, step: str | None, alert: dict, now) -> list[Notice]:
    """The outbox row of an alert rule starting or clearing (insight/alerts.py, in its transaction),
    when a subscription hears of it. It is about no run: a subscription's process filter is the
    rule's process, and alerts count live runs only, so test runs never matter."""
    fired, cleared = ALERT_KINDS
    kind = fired if firing else cleared
    if not matches(wanted(organization_id), kind, process, False):
        return []
    about = {"run": None, "process": process, "step": step, "alert": alert, "at": iso(now)}
    return [Notice(organization_id=organization_id, kind=kind, recipient="", delivery=Notice.WEBHOOK, subject="",
                   body="", about=[about], created_at=now, send_after=now)]
