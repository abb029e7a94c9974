"""The sweeps Celery beat runs (spec §2.2 waits and due, §3.3 leases). Each takes `now`, so tests
call them directly with any clock; each touches only rows that are due (indexed), and is safe when
two sweeps or a redelivered task run at once (row locks with SKIP LOCKED, one effect per crossing).
"""

import datetime as dt
import logging
from dataclasses import dataclass, field

from django.db import connection, transaction

from kernel import audit, clock, sql
from kernel.models import EventKind
from kernel.organizations import organization_by_id

from ..models import UNFINISHED, StepState, StepStatus
from . import locks, outbox
from .engine import RunContext
from .notifications import OverdueNotice, messages_for, overdue_notices

log = logging.getLogger(__name__)
BATCH = 500


@dataclass
class SweepReport:
    leases: int = 0
    timers: int = 0
    overdue: int = 0
    notices: list[OverdueNotice] = field(default_factory=list)
    sent: int = 0  # notices sent from the outbox in this pass (any earlier ones due included)
    unsent: int = 0  # notices whose sending failed in this pass: retried later

    def __str__(self):
        return (f"leases released: {self.leases}, timers fired: {self.timers}, overdue crossings: {self.overdue}, "
                f"notices sent: {self.sent}, notices to retry: {self.unsent}")


def sweep(now: dt.datetime) -> SweepReport:
    report = SweepReport()
    report.leases = sweep_leases(now)
    report.timers = sweep_timers(now)
    report.overdue, report.notices = sweep_dues(now)
    # The crossings' notices were queued with them; now send every notice that is due (these and
    # any that failed before), each marked as it goes.
    report.sent, report.unsent = outbox.send_due(now)
    return report


def sweep_leases(now: dt.datetime) -> int:
    """Lapsed claims go back to `ready`, keeping the last progress note for the next claimant's
    handoff — what engine.effective_handoff shows for a lapsed claim before any sweep (every call
    already treats it as ready; this makes the stored state say so). One set-based UPDATE per batch,
    rows taken with SKIP LOCKED so a second sweep takes others."""
    table = sql.table(StepState)
    if connection.vendor == "postgresql":
        with_progress = "COALESCE(handoff, '{}'::jsonb) || jsonb_build_object('progress', progress)"
    else:
        with_progress = "json_set(COALESCE(handoff, '{}'), '$.progress', progress)"
    released = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, organization_id, run_id, step_id, lease_gen, claimed_by, progress FROM {table} "
                f"WHERE state = '{StepStatus.CLAIMED}' AND lease_expires_at <= %s "
                f"ORDER BY lease_expires_at LIMIT %s{locks.skip_locked_subquery()}",
                [sql.adapt(StepState, "lease_expires_at", now), BATCH])
            lapsed = cursor.fetchall()
            if lapsed:
                cursor.execute(
                    f"UPDATE {table} SET state = '{StepStatus.READY}', "
                    f"handoff = CASE WHEN progress IS NULL OR progress = '' THEN handoff ELSE {with_progress} END, "
                    "claimed_by = NULL, lease_expires_at = NULL, progress = NULL, lease_gen = lease_gen + 1 "
                    f"WHERE id IN ({', '.join(['%s'] * len(lapsed))})", [row[0] for row in lapsed])
                audit.write([audit.event(EventKind.LEASE_LAPSED, organization_id=org, actor=audit.SERVER, at=now,
                                         run_id=run_id, step_id=step_id,
                                         data={"leaseGeneration": gen, "heldBy": holder, "progress": progress})
                             for _id, org, run_id, step_id, gen, holder, progress in lapsed])
        released += len(lapsed)
        if len(lapsed) < BATCH:
            return released


def sweep_timers(now: dt.datetime) -> int:
    """Waits whose time came: `wait` and `wait_until` continue, a `wait_for` times out.
    A batch of runs per transaction: locked together (SKIP LOCKED, so a concurrent sweep takes
    others), their steps loaded in one statement, each run moved on in memory and saved."""
    fired, seen = 0, set()
    while True:
        due = [row for row in StepState.objects.filter(state=StepStatus.WAITING, wake_at__lte=now)
               .order_by("wake_at").values_list("run_id", "organization_id", "step_id")[:BATCH]
               if (row[0], row[2]) not in seen]
        if not due:
            return fired
        seen.update((run_id, step_id) for run_id, _, step_id in due)
        fired += _fire_batch(due, now)


def _fire_batch(due: list[tuple[str, int, str]], now: dt.datetime) -> int:
    steps_by_run: dict[str, list[str]] = {}
    organization_of: dict[str, int] = {}
    for run_id, organization_id, step_id in due:
        steps_by_run.setdefault(run_id, []).append(step_id)
        organization_of[run_id] = organization_id
    fired = 0
    with transaction.atomic(), sql.batched_updates():
        runs, states = locks.runs_for_sweep(list(steps_by_run))
        for run in runs:
            if run.is_over:
                continue
            run.organization = organization_by_id(organization_of[run.id])
            ctx = RunContext(run, states.get(run.id, []), now)
            for step_id in steps_by_run[run.id]:
                state = ctx.states.get(step_id)
                if state is None or state.state != StepStatus.WAITING or state.wake_at is None or state.wake_at > now:
                    continue  # fired by another sweep, or moved on meanwhile
                ctx.wake(step_id)
                fired += 1
            ctx.save()
    return fired


def sweep_dues(now: dt.datetime) -> tuple[int, list[OverdueNotice]]:
    """Each `due` crossing is marked once and notified once (never for a test run)."""
    crossings = 0
    notices: list[OverdueNotice] = []
    while True:
        with transaction.atomic():
            crossed = locks.crossed_dues(
                StepState.objects.select_related("run")
                .filter(due_at__lte=now, due_notified_at__isnull=True, state__in=UNFINISHED)
                .order_by("due_at"), BATCH)
            if crossed:
                StepState.objects.filter(pk__in=[s.pk for s in crossed]).update(due_notified_at=now)
                audit.write([audit.event(EventKind.OVERDUE, organization_id=s.organization_id, actor=audit.SERVER,
                                         at=now, run_id=s.run_id, step_id=s.step_id,
                                         data={"due": clock.iso(s.due_at), "test": s.run.mode == "test"})
                             for s in crossed])
                live = [s for s in crossed if s.run.mode != "test"]  # a test run is marked, never notified
                batch = overdue_notices(live)
                outbox.queue(messages_for(batch, now))  # in the crossing's transaction: never lost
                notices += batch
        crossings += len(crossed)
        if len(crossed) < BATCH:
            return crossings, notices

