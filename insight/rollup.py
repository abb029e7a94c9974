"""The rollup of ended runs (issue 27, point 6: "a rollup table kept current ... by the sweep; never by
loading rows into Python"). The beat sweep (insight/tasks.py) folds the runs of each organization
that ended since its mark into AttemptRoll, EventRoll, RunRoll and TookRoll, INSERT ... SELECT statements over the
audit log and the runs using the dashboard's own definitions (figures.attempts_sql, figures.step_event_counts),
then moves the mark, all in one transaction. The dashboard reads those rows for ended runs and the
audit log for the rest (figures.Scope.rolled), so today's figures stay current between sweeps.

A run that has ended gets no more attempts or step events, so its rows never change; the mark stays
MARGIN behind the clock so a run whose ending is still being committed is not passed over."""

import datetime as dt

from django.db import connection, transaction

from kernel import sql
from kernel.models import AuditEvent, Organization
from kernel.states import RunState
from runs.models import Run

from . import figures
from .models import AttemptRoll, EventRoll, RollMark, RunRoll, TookRoll

MARGIN = dt.timedelta(minutes=5)
EPOCH = figures.EPOCH


def roll(now: dt.datetime) -> int:
    """Fold every run that ended before now - MARGIN and is not rolled up yet; how many runs."""
    until = now - MARGIN
    rolled = 0
    for organization_id in Organization.objects.values_list("pk", flat=True):
        rolled += _roll_organization(organization_id, until)
    return rolled


def _roll_organization(organization_id: int, until: dt.datetime) -> int:
    RollMark.objects.get_or_create(organization_id=organization_id, defaults={"rolled_until": EPOCH})
    with transaction.atomic():
        # One sweep at a time per organization: the second waits here and then finds the mark moved.
        mark = RollMark.objects.select_for_update().get(organization_id=organization_id)
        if mark.rolled_until >= until:
            return 0
        run_table, ended_at = sql.table(Run), sql.adapt(Run, "ended_at", until)
        runs = (f"SELECT id FROM {run_table} WHERE organization_id = %s AND ended_at IS NOT NULL "
                f"AND ended_at >= %s AND ended_at < %s")
        runs_params = [organization_id, sql.adapt(Run, "ended_at", mark.rolled_until), ended_at]
        attempts, params = figures.attempts_sql(organization_id, runs, runs_params)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM ({runs}) r", runs_params)
            count = cursor.fetchone()[0]
            if count:
                cursor.execute(
                    f"INSERT INTO {sql.table(AttemptRoll)} (organization_id, process_name, version_number, mode, day, "
                    f"step_id, done, actor, actor_kind, waited, worked, took, attempts) "
                    f"SELECT r.organization_id, r.process_name, r.version_number, r.mode, "
                    f"{figures.bucket('a.ready_at', 'day')}, COALESCE(a.step_id, ''), (a.done_at IS NOT NULL), "
                    f"COALESCE(a.actor, ''), COALESCE(a.actor_kind, ''), a.waited, a.worked, a.took, COUNT(*) "
                    f"FROM ({attempts}) a JOIN {run_table} r ON r.id = a.run_id "
                    f"GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12", params)
                columns = ", ".join(figures.STEP_EVENT_LABELS.values())
                cursor.execute(
                    f"INSERT INTO {sql.table(EventRoll)} (organization_id, process_name, version_number, mode, day, "
                    f"step_id, {columns}) "
                    f"SELECT r.organization_id, r.process_name, r.version_number, r.mode, "
                    f"{figures.bucket('e.at', 'day')}, COALESCE(e.step_id, ''), {figures.step_event_counts()} "
                    f"FROM (SELECT run_id, step_id, at, kind, actor_kind, data FROM {sql.table(AuditEvent)} "
                    f"WHERE organization_id = %s AND run_id IN ({runs}) "
                    f"AND kind IN ({figures._words(figures.STEP_EVENT_KINDS)})) e "
                    f"JOIN {run_table} r ON r.id = e.run_id GROUP BY 1, 2, 3, 4, 5, 6",
                    [organization_id, *runs_params])
                failed = "COALESCE(outcome, '') = 'failed'"
                key = "organization_id, process_name, version_number, mode"
                cursor.execute(
                    f"INSERT INTO {sql.table(RunRoll)} ({key}, day, started, ended, cancelled, failed) "
                    f"SELECT {key}, b, SUM(s), SUM(e), SUM(c), SUM(x) FROM ("
                    f"SELECT {key}, {figures.bucket('started_at', 'day')} AS b, 1 AS s, 0 AS e, 0 AS c, 0 AS x "
                    f"FROM {run_table} WHERE id IN ({runs}) UNION ALL "
                    f"SELECT {key}, {figures.bucket('ended_at', 'day')}, 0, "
                    f"CASE WHEN state = '{RunState.ENDED}' AND NOT {failed} THEN 1 ELSE 0 END, "
                    f"CASE WHEN state = '{RunState.CANCELLED}' THEN 1 ELSE 0 END, "
                    f"CASE WHEN state = '{RunState.ENDED}' AND {failed} THEN 1 ELSE 0 END "
                    f"FROM {run_table} WHERE id IN ({runs})) moves GROUP BY 1, 2, 3, 4, 5",
                    runs_params + runs_params)
                # The slowest few of each day keep their run (the dashboard's slowest ten come from
                # them); the others are counted by how long they took.
                day, took = figures.bucket("ended_at", "day"), figures.seconds_between("started_at", "ended_at")
                cursor.execute(
                    f"INSERT INTO {sql.table(TookRoll)} ({key}, day, took, runs, run_id) "
                    f"SELECT {key}, day, took, COUNT(*), CASE WHEN rank_ <= {figures.SLOWEST} THEN id ELSE '' END "
                    f"FROM (SELECT {key}, id, {day} AS day, {took} AS took, "
                    f"ROW_NUMBER() OVER (PARTITION BY {key}, {day} ORDER BY {took} DESC, id) AS rank_ "
                    f"FROM {run_table} WHERE id IN ({runs}) AND state = '{RunState.ENDED}') e "
                    f"GROUP BY 1, 2, 3, 4, 5, 6, 8", runs_params)
        mark.rolled_until = until
        mark.save(update_fields=["rolled_until"])
        return count
