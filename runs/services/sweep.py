"""The sweeps Celery beat runs (spec §2.2 waits and due, §3.3 leases). Each takes `now`, so tests
call them directly with any clock; each touches only rows that are due (indexed), and is safe when
two sweeps or a redelivered task run at once (row locks with SKIP LOCKED, one effect per crossing).
"""

import datetime as dt
import logging
from dataclasses import dataclass, field

from django.db import transaction

from agentprocess.models import Organization

from ..models import StepState
from .engine import CLAIMED, UNFINISHED, WAITING, RunContext, release_lapsed_lease
from .notifications import OverdueNotice, overdue_notices, send_overdue_notices

log = logging.getLogger(__name__)
BATCH = 500


@dataclass
class SweepReport:
    leases: int = 0
    timers: int = 0
    overdue: int = 0
    notices: list[OverdueNotice] = field(default_factory=list)

    def __str__(self):
        return f"leases released: {self.leases}, timers fired: {self.timers}, overdue crossings: {self.overdue}"


def sweep(now: dt.datetime) -> SweepReport:
    report = SweepReport()
    report.leases = sweep_leases(now)
    report.timers = sweep_timers(now)
    report.overdue, report.notices = sweep_dues(now)
    # After the crossings are committed: one message per person, listing all their items.
    send_overdue_notices(report.notices)
    return report


def sweep_leases(now: dt.datetime) -> int:
    """Lapsed claims go back to `ready`, keeping the last progress note for the next claimant.
    (Every call already treats a lapsed claim as ready; this makes the stored state say so.)"""
    released = 0
    while True:
        with transaction.atomic():
            lapsed = list(
                StepState.objects.select_for_update(skip_locked=True)
                .filter(state=CLAIMED, lease_expires_at__lte=now)
                .order_by("lease_expires_at")[:BATCH]
            )
            for state in lapsed:
                release_lapsed_lease(state, now)
            StepState.objects.bulk_update(
                lapsed, ["state", "handoff", "claimed_by", "lease_expires_at", "progress", "lease_gen"])
        released += len(lapsed)
        if len(lapsed) < BATCH:
            return released


def sweep_timers(now: dt.datetime) -> int:
    """Waits whose time came: `wait` and `wait_until` continue, a `wait_for` times out."""
    fired = 0
    due = (
        StepState.objects.filter(state=WAITING, wake_at__lte=now)
        .order_by("wake_at")
        .values_list("run_id", "organization_id", "step_id")
    )
    organizations = {}
    for run_id, organization_id, step_id in list(due[: BATCH * 20]):
        if organization_id not in organizations:
            organizations[organization_id] = Organization.objects.select_related("operators").get(pk=organization_id)
        with transaction.atomic():
            ctx = RunContext.load(organization=organizations[organization_id], run_id=run_id, now=now,
                                  skip_locked=True)
            if ctx is None or ctx.run.is_over:
                continue  # another sweep holds this run, or it ended meanwhile
            state = ctx.states.get(step_id)
            if state is None or state.state != WAITING or state.wake_at is None or state.wake_at > now:
                continue  # already fired by another sweep, or moved on
            ctx.wake(step_id)
            ctx.save()
            fired += 1
    return fired


def sweep_dues(now: dt.datetime) -> tuple[int, list[OverdueNotice]]:
    """Each `due` crossing is marked once and notified once (never for a test run)."""
    crossings = 0
    notices: list[OverdueNotice] = []
    while True:
        with transaction.atomic():
            crossed = list(
                StepState.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("run")
                .filter(due_at__lte=now, due_notified_at__isnull=True, state__in=UNFINISHED)
                .order_by("due_at")[:BATCH]
            )
            if crossed:
                StepState.objects.filter(pk__in=[s.pk for s in crossed]).update(due_notified_at=now)
                live = [s for s in crossed if s.run.mode != "test"]  # a test run is marked, never notified
                notices += overdue_notices(live)
        crossings += len(crossed)
        if len(crossed) < BATCH:
            return crossings, notices

