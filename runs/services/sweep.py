"""The sweeps Celery beat runs (spec §2.2 waits and due, §3.3 leases). Each takes `now`, so tests
call them directly with any clock; each touches only rows that are due (indexed), and is safe when
two sweeps or a redelivered task run at once (row locks with SKIP LOCKED, one effect per crossing).
"""

import datetime as dt
import itertools
import logging
from dataclasses import dataclass, field

from django.db import connection, transaction

from kernel import audit, clock, observe, sql
from kernel.models import EventKind, Organization
from kernel.organizations import organization_by_id
from webhooks.services import events as webhook_events

from ..models import UNFINISHED, StepState, StepStatus, Upload, organization_of_upload_path
from . import locks, outbox, stored_files
from .engine import RunContext
from .notifications import OverdueNotice, messages_for, overdue_notices

log = logging.getLogger(__name__)
BATCH = 500
# A stored file no upload row refers to is removed only once it is this old: far longer than any
# upload takes between storing its bytes and committing its row (which holds the file's lock too).
ORPHAN_FILE_AGE = dt.timedelta(hours=1)


@dataclass
class SweepReport:
    leases: int = 0
    timers: int = 0
    overdue: int = 0
    notices: list[OverdueNotice] = field(default_factory=list)
    sent: int = 0  # notices sent from the outbox in this pass (any earlier ones due included)
    unsent: int = 0  # notices whose sending failed in this pass: retried later
    orphan_files: int | None = None  # stored files removed; None: not looked for in this pass

    def __str__(self):
        text = (f"leases released: {self.leases}, timers fired: {self.timers}, overdue crossings: {self.overdue}, "
                f"notices sent: {self.sent}, notices to retry: {self.unsent}")
        return text if self.orphan_files is None else f"{text}, orphan files removed: {self.orphan_files}"


def sweep(now: dt.datetime, *, orphan_files: bool = False) -> SweepReport:
    """Every timer sweep; with `orphan_files` also the storage walk, which beat runs hourly only
    (runs.tasks.sweep_orphan_files) and `manage.py sweep` every time."""
    report = SweepReport()
    report.leases = sweep_leases(now)
    report.timers = sweep_timers(now)
    report.overdue, report.notices = sweep_dues(now)
    # The crossings' notices were queued with them; now send every notice that is due (these and
    # any that failed before), each marked as it goes.
    report.sent, report.unsent = outbox.send_due(now)
    if orphan_files:
        report.orphan_files = sweep_orphan_files(now)
    return report


@observe.swept("leases")
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


@observe.swept("timers")
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


@observe.swept("dues", items=lambda result: result[0])
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
                events = [audit.event(EventKind.OVERDUE, organization_id=s.organization_id, actor=audit.SERVER,
                                      at=now, run_id=s.run_id, step_id=s.step_id,
                                      data={"due": clock.iso(s.due_at), "test": s.run.mode == "test"})
                          for s in crossed]
                audit.write(events)
                live = [s for s in crossed if s.run.mode != "test"]  # a test run is marked, never notified
                batch = overdue_notices(live)
                hooks = [row for s, event in zip(crossed, events, strict=True)
                         for row in webhook_events.rows_for(s.run, [event], now)]
                outbox.queue(messages_for(batch, now) + hooks)  # in the crossing's transaction: never lost
                notices += batch
        crossings += len(crossed)
        if len(crossed) < BATCH:
            return crossings, notices



@observe.swept("orphan_files")
def sweep_orphan_files(now: dt.datetime) -> int:
    """Remove stored files that no upload row refers to, older than ORPHAN_FILE_AGE: bytes a
    crash left between storing them and committing their row. Each removal is in the audit log
    (and the server log)."""
    removed = 0
    for batch in itertools.batched(stored_files.stored_before(now - ORPHAN_FILE_AGE), BATCH):
        sizes = dict(batch)
        referenced = set(Upload.objects.filter(file__in=list(sizes)).values_list("file", flat=True))
        removed += sum(_remove_orphan(name, size, now) for name, size in sizes.items() if name not in referenced)
    return removed


def _remove_orphan(name: str, size: int, now: dt.datetime) -> bool:
    with transaction.atomic():
        # An upload of these bytes holds the file's lock until its row is committed: skip it.
        if not locks.stored_file(name, wait=False) or Upload.objects.filter(file=name).exists():
            return False
        organization_id = organization_of_upload_path(name)
        if organization_id is not None and Organization.objects.filter(pk=organization_id).exists():
            audit.record(EventKind.ORPHAN_FILE_REMOVED, organization_id=organization_id, actor=audit.SERVER, at=now,
                         data={"file": name, "bytes": size})
        stored_files.remove(name)  # last: a storage that fails rolls the record back
    log.warning("removed %s (%d bytes): a stored file no upload refers to", name, size)
    return True
