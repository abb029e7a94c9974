"""The figures of a process's dashboard (issue 27), one function per figure, each one SQL statement
(or two) aggregated in the database: nothing here loads runs, steps or events into Python. The
statements are portable (window functions and CASE, both on SQLite ≥ 3.25 and PostgreSQL), with
the two spellings that differ (seconds between two instants, a day's or a week's bucket, a JSON
member) chosen by vendor, so both databases give the same numbers.

Where the times come from: the audit log (kernel/models.py: AuditEvent), which records every step
becoming ready, every claim (agents) and take (people), every submission and decision, every
escalation, lease lapse, overdue crossing, rework and check verdict, in the transaction of the
change. Which runs count: the runs the viewer may see (runs/visibility.py: `visible`, the one rule
of every surface), of the process, in the chosen mode (live by default), version and search.

Definitions (README "Process insight"):
- an *attempt* of a step begins at each `step_ready` of it (a rework or a return makes a new one);
- *waited*: from ready until claimed (an agent) or taken (a person); an item decided without being
  taken waited until its decision;
- *worked*: from the first claim or take until the attempt's last submission or decision (a lapsed
  lease, an escalation, a check held for a person all count as worked time);
- percentiles are nearest-rank: the median is the ⌈n/2⌉-th smallest value, the 90th percentile the
  ⌈0.9·n⌉-th; times are whole seconds;
- the period counts what happened in it: attempts that became ready, events that occurred, runs
  that started or ended in it.
"""

import datetime as dt
import json
from dataclasses import dataclass

from django.db import connection
from django.db.models import DateTimeField, Q, Subquery, TextField, Value
from django.db.models.functions import Cast, Coalesce

from kernel import sql
from kernel.models import AuditEvent, EventKind
from kernel.states import RunState, StepStatus
from processes.definition import definitions_for
from processes.models import Process, ProcessVersion
from runs import visibility
from runs.models import Run, StepState

from . import heatmap
from .filters import Filters
from .models import AttemptRoll, EventRoll, RollMark, RunRoll, TookRoll

WORKING_KINDS = ("agent", "task", "approve")
HISTOGRAM = (  # (label, upper bound in seconds, exclusive); the last has none
    ("under 1 hour", 3600), ("1–4 hours", 4 * 3600), ("4–8 hours", 8 * 3600), ("8–24 hours", 86400),
    ("1–3 days", 3 * 86400), ("3–7 days", 7 * 86400), ("1–2 weeks", 14 * 86400), ("2 weeks or more", None))
SLOWEST = 10
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)  # before every run: the rollup's mark when nothing is rolled up
OTHER_PEOPLE = ""  # the key of people whose names the viewer may not see


# --- the spellings that differ between the databases ---------------------------------------------

def _postgres() -> bool:
    return connection.vendor == "postgresql"


def seconds_between(start: str, end: str) -> str:
    """Whole seconds from `start` to `end` (SQL expressions of two instants)."""
    if _postgres():
        return f"CAST(ROUND(EXTRACT(EPOCH FROM ({end} - {start}))) AS BIGINT)"
    return f"CAST(ROUND((julianday({end}) - julianday({start})) * 86400) AS INTEGER)"


def bucket(column: str, by: str) -> str:
    """The day (or the Monday of the week) of an instant, in UTC, as a date."""
    if _postgres():
        unit = "week" if by == "week" else "day"
        return f"CAST(date_trunc('{unit}', {column} AT TIME ZONE 'UTC') AS DATE)"
    return f"date({column}, 'weekday 0', '-6 days')" if by == "week" else f"date({column})"


def bucket_of_day(column: str, by: str) -> str:
    """bucket() of a date column (the rollup's day)."""
    if by != "week":
        return column
    if _postgres():
        return f"CAST(date_trunc('week', CAST({column} AS TIMESTAMP)) AS DATE)"
    return f"date({column}, 'weekday 0', '-6 days')"


def json_text(column: str, key: str) -> str:
    if _postgres():
        return f"({column} ->> '{key}')"
    return f"json_extract({column}, '$.{key}')"


def _at(value: dt.datetime):
    return sql.adapt(Run, "started_at", value)


def _day(value) -> str:
    return str(value)[:10]


def _midnight(moment: dt.datetime) -> dt.datetime:
    return moment.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)


# --- scope -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scope:
    """One process's dashboard for one viewer: what the figures are computed over."""

    identity: object
    process: Process
    filters: Filters
    steps: tuple[tuple[str, str, bool], ...]  # (step id, kind, has a check) of every version, latest first

    @property
    def rolled(self) -> bool:
        """Whether the rollup of ended runs (insight/rollup.py) may stand in for their audit events:
        it holds whole days of every run, so not for a viewer who sees some runs only, a search, or
        a period that does not start and end at midnight (an alert's window)."""
        f = self.filters
        return (visibility.sees_everything(self.identity) and not f.q
                and all(moment == _midnight(moment) for moment in (f.since, f.until)))

    def rolled_sql(self, table: str, steps: bool = True) -> tuple[str, list]:
        """WHERE of the rollup's rows of this scope (their day in the period)."""
        f = self.filters
        where = "organization_id = %s AND process_name = %s AND mode = %s AND day >= %s AND day < %s"
        params = [self.identity.organization.id, self.process.name, f.mode, f.since.date(), f.until.date()]
        if f.version:
            where += " AND version_number = %s"
            params.append(f.version)
        if steps:
            names = [step for step, _kind, _check in self.steps] or [""]
            where += f" AND step_id IN ({', '.join(['%s'] * len(names))})"
            params += names
        return f"SELECT * FROM {table} WHERE {where}", params

    def runs_sql(self, unrolled: bool = False) -> tuple[str, list]:
        """SELECT id of the runs the figures count (visibility, process, mode, version, search, and
        alive during the period); `unrolled`: only those not in the rollup (open, or ended since
        its mark; the mark is read in the same statement, so a sweep rolling meanwhile never makes
        a run count twice or not at all)."""
        f = self.filters
        runs = Run.objects.filter(organization=self.identity.organization, process_name=self.process.name,
                                  mode=f.mode, started_at__lt=f.until)
        runs = runs.filter(Q(ended_at__isnull=True) | Q(ended_at__gte=f.since))
        if f.version:
            runs = runs.filter(version_number=f.version)
        if f.q:
            runs = runs.annotate(inputs_text=Cast("inputs", TextField()))
            spellings = {f.q, json.dumps(f.q, ensure_ascii=False)[1:-1], json.dumps(f.q)[1:-1]}
            condition = Q(id__icontains=f.q)
            for spelling in spellings:
                condition |= Q(inputs_text__icontains=spelling)
            runs = runs.filter(condition)
        runs = visibility.visible(self.identity, runs)
        if unrolled:
            mark = RollMark.objects.filter(organization=self.identity.organization).values("rolled_until")
            since = Coalesce(Subquery(mark), Value(EPOCH, output_field=DateTimeField()))  # no mark: nothing rolled
            runs = runs.filter(Q(ended_at__isnull=True) | Q(ended_at__gte=since))
        statement, params = runs.values("id").query.sql_with_params()
        return statement, list(params)


def processes_for(identity) -> list[Process]:
    """The published processes the identity takes part in (visibility.takes_part_in), by name."""
    processes = list(Process.objects.filter(organization=identity.organization, latest_version__isnull=False)
                     .order_by("name"))
    versions = _versions_by_process([p.pk for p in processes])
    return [p for p in processes if visibility.takes_part_in(identity, versions.get(p.pk, []))]


def started_per_day(identity, names: list[str], since: dt.datetime, until: dt.datetime) -> dict[str, list[int]]:
    """process name -> live runs started per day from `since` to `until` (the list's sparklines),
    for every process in one statement, counting the runs the identity may see."""
    if not names:
        return {}
    runs = visibility.visible(identity, Run.objects.filter(
        organization=identity.organization, process_name__in=names, mode="live",
        started_at__gte=since, started_at__lt=until))
    inner, params = runs.values("id").query.sql_with_params()
    statement = (f"SELECT process_name, {bucket('started_at', 'day')} AS b, COUNT(*) FROM {sql.table(Run)} "
                 f"WHERE id IN ({inner}) GROUP BY process_name, b")
    days = (until.date() - since.date()).days
    out = {name: [0] * days for name in names}
    with connection.cursor() as cursor:
        cursor.execute(statement, list(params))
        for name, day, count in cursor.fetchall():
            index = (dt.date.fromisoformat(_day(day)) - since.date()).days
            if 0 <= index < days:
                out[name][index] = int(count)
    return out


def _versions_by_process(process_ids) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for process_id, version_id in ProcessVersion.objects.filter(process_id__in=process_ids) \
            .order_by("-number").values_list("process_id", "pk"):
        out.setdefault(process_id, []).append(version_id)
    return out


def scope_for(identity, name: str, filters: Filters) -> Scope | None:
    """The dashboard's scope, or None when there is no such process or the identity takes no part in
    it (the caller answers 404 alike)."""
    process = Process.objects.filter(organization=identity.organization, name=name,
                                     latest_version__isnull=False).first()
    if process is None:
        return None
    version_ids = _versions_by_process([process.pk]).get(process.pk, [])
    if not visibility.takes_part_in(identity, version_ids):
        return None
    definitions = definitions_for(version_ids)
    steps, seen = [], set()
    for version_id in version_ids:  # newest first: its order wins
        for step in definitions[version_id].steps:
            if step.kind in WORKING_KINDS and step.id not in seen:
                seen.add(step.id)
                steps.append((step.id, step.kind, bool(step.check)))
    return Scope(identity=identity, process=process, filters=filters, steps=tuple(steps))


def version_numbers(process: Process) -> list[int]:
    return list(ProcessVersion.objects.filter(process=process).order_by("number").values_list("number", flat=True))


# --- percentiles ---------------------------------------------------------------------------------

def percentiles(values_sql: str, params: list, keys: int, with_sql: str = "") -> dict[tuple, dict]:
    """key -> {n, p50, p90} of `values_sql`, which selects `keys` key columns k1..kN, a value v and
    a weight w (how many values alike the row stands for: 1 for a row of the audit log, a count for
    the rollup's; NULL values are left out; a value of 0 on every row makes `n` a count). Nearest
    rank, computed in SQL: the row whose running count of weights reaches the rank; at most two rows
    per key come back. `with_sql`: a WITH clause the values read (its parameters first in `params`)."""
    key_columns = ", ".join(f"k{i}" for i in range(1, keys + 1))
    p50, p90 = "(n + 1) / 2", "(9 * n + 9) / 10"
    statement = (
        f"{with_sql}SELECT {key_columns}, n, upto - w, upto, v FROM ("
        f"SELECT {key_columns}, v, w, SUM(w) OVER (PARTITION BY {key_columns} ORDER BY v "
        f"ROWS UNBOUNDED PRECEDING) AS upto, SUM(w) OVER (PARTITION BY {key_columns}) AS n "
        f"FROM ({values_sql}) values_ WHERE v IS NOT NULL) ranked "
        f"WHERE (upto - w < {p50} AND upto >= {p50}) OR (upto - w < {p90} AND upto >= {p90})")
    out: dict[tuple, dict] = {}
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        for row in cursor.fetchall():
            key, (n, before, upto, value) = tuple(row[:keys]), (int(x) for x in row[keys:])
            entry = out.setdefault(key, {"n": n, "p50": None, "p90": None})
            if before < (n + 1) // 2 <= upto:
                entry["p50"] = value
            if before < (9 * n + 9) // 10 <= upto:
                entry["p90"] = value
    return out


# --- the figures ---------------------------------------------------------------------------------

def timeline(scope: Scope) -> list[dict]:
    """Runs started, ended, cancelled and failed per day (or week) of the period, every bucket listed."""
    f = scope.filters
    runs, params = scope.runs_sql(unrolled=scope.rolled)
    run_table = sql.table(Run)
    failed = "COALESCE(outcome, '') = 'failed'"
    statement = (
        f"SELECT {bucket('started_at', f.by)} AS b, 1 AS s, 0 AS e, 0 AS c, 0 AS x FROM {run_table} "
        f"WHERE id IN ({runs}) AND started_at >= %s AND started_at < %s "
        f"UNION ALL SELECT {bucket('ended_at', f.by)}, 0, "
        f"CASE WHEN state = '{RunState.ENDED}' AND NOT {failed} THEN 1 ELSE 0 END, "
        f"CASE WHEN state = '{RunState.CANCELLED}' THEN 1 ELSE 0 END, "
        f"CASE WHEN state = '{RunState.ENDED}' AND {failed} THEN 1 ELSE 0 END FROM {run_table} "
        f"WHERE id IN ({runs}) AND ended_at >= %s AND ended_at < %s")
    window = [_at(f.since), _at(f.until)]
    params = params + window + params + window
    if scope.rolled:
        rolled, rolled_params = scope.rolled_sql(sql.table(RunRoll), steps=False)
        statement += (f" UNION ALL SELECT {bucket_of_day('day', f.by)}, started, ended, cancelled, failed "
                      f"FROM ({rolled}) rolled")
        params += rolled_params
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT b, SUM(s), SUM(e), SUM(c), SUM(x) FROM ({statement}) moves GROUP BY b", params)
        counted = {_day(b): (int(s), int(e), int(c), int(x)) for b, s, e, c, x in cursor.fetchall()}
    out = []
    day = f.since.date()
    if f.by == "week":
        day -= dt.timedelta(days=day.weekday())
    while day < f.until.date():
        s, e, c, x = counted.get(day.isoformat(), (0, 0, 0, 0))
        out.append({"from": day.isoformat(), "started": s, "ended": e, "cancelled": c, "failed": x})
        day += dt.timedelta(days=7 if f.by == "week" else 1)
    return out


def open_by_step(scope: Scope) -> dict[str, int]:
    """Open runs now, by the step they wait in (a run waiting in two branches counts in both)."""
    runs, params = scope.runs_sql(unrolled=scope.rolled)  # an open run is never rolled up
    statement = (
        f"SELECT s.step_id, COUNT(*) FROM {sql.table(StepState)} s JOIN {sql.table(Run)} r ON r.id = s.run_id "
        f"WHERE s.run_id IN ({runs}) AND r.state IN ('{RunState.ACTIVE}', '{RunState.WAITING}') "
        f"AND s.state IN ('{StepStatus.READY}', '{StepStatus.CLAIMED}', '{StepStatus.WAITING}') "
        f"AND s.kind <> 'parallel' GROUP BY s.step_id")
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return {step: int(count) for step, count in cursor.fetchall()}


ATTEMPT_KINDS = (EventKind.STEP_READY, EventKind.STEP_CLAIMED, EventKind.ITEM_TAKEN,
                 EventKind.SUBMISSION_ACCEPTED, EventKind.DECIDED)
STARTS = (EventKind.STEP_CLAIMED, EventKind.ITEM_TAKEN)
DONE = (EventKind.SUBMISSION_ACCEPTED, EventKind.DECIDED)


def _words(kinds) -> str:
    return ", ".join(f"'{kind}'" for kind in kinds)


def attempts_sql(organization_id: int, runs: str, params: list, steps: list[str] | None = None,
                 window: tuple | None = None) -> tuple[str, list]:
    """One row per attempt of a step of the runs `runs` selects (its parameters `params`): run, step,
    ready, started (first claim or take), the last submission or decision's time and who made it,
    and the three durations; only the steps `steps` (all when None), only attempts that became ready
    in `window` (since, until; all when None). Attempts are numbered over the whole life of each run
    (a running count of `step_ready`). The dashboard's and the rollup's one definition."""
    audit = sql.table(AuditEvent)
    in_steps, step_params = "", []
    if steps is not None:
        steps = steps or [""]
        in_steps, step_params = f"AND step_id IN ({', '.join(['%s'] * len(steps))})", list(steps)
    in_window, window_params = "", []
    if window is not None:
        in_window, window_params = "WHERE a.ready_at >= %s AND a.ready_at < %s", [_at(window[0]), _at(window[1])]
    statement = (
        f"SELECT a.run_id, a.step_id, a.ready_at, a.start_at, d.at AS done_at, d.actor, d.actor_kind, "
        f"{seconds_between('a.ready_at', 'COALESCE(a.start_at, d.at)')} AS waited, "
        f"{seconds_between('a.start_at', 'd.at')} AS worked, "
        f"{seconds_between('a.ready_at', 'd.at')} AS took FROM ("
        f"SELECT run_id, step_id, "
        f"MIN(CASE WHEN kind = '{EventKind.STEP_READY}' THEN at END) AS ready_at, "
        f"MIN(CASE WHEN kind IN ({_words(STARTS)}) THEN at END) AS start_at, "
        f"MAX(CASE WHEN kind IN ({_words(DONE)}) THEN id END) AS done_id FROM ("
        f"SELECT id, run_id, step_id, kind, at, SUM(CASE WHEN kind = '{EventKind.STEP_READY}' THEN 1 ELSE 0 END) "
        f"OVER (PARTITION BY run_id, step_id ORDER BY id ROWS UNBOUNDED PRECEDING) AS attempt "
        f"FROM {audit} WHERE organization_id = %s AND run_id IN ({runs}) AND kind IN ({_words(ATTEMPT_KINDS)}) "
        f"{in_steps}) numbered WHERE attempt > 0 GROUP BY run_id, step_id, attempt) a "
        f"LEFT JOIN {audit} d ON d.id = a.done_id {in_window}")
    return statement, [organization_id, *params, *step_params, *window_params]


def _attempts(scope: Scope) -> tuple[str, list]:
    """The scope's attempts, one row per alike (step, done, who, durations) with its weight w: the
    runs not rolled up from the audit log, the rest from the rollup."""
    f = scope.filters
    runs, params = scope.runs_sql(unrolled=scope.rolled)
    live, live_params = attempts_sql(scope.identity.organization.id, runs, params,
                                     [step for step, _kind, _check in scope.steps], (f.since, f.until))
    columns = "step_id, actor, actor_kind, done, waited, worked, took"
    statement = (f"SELECT step_id, actor, actor_kind, (done_at IS NOT NULL) AS done, waited, worked, took, "
                 f"1 AS w FROM ({live}) live")
    if not scope.rolled:
        return statement, live_params
    rolled, rolled_params = scope.rolled_sql(sql.table(AttemptRoll))
    return f"{statement} UNION ALL SELECT {columns}, attempts FROM ({rolled}) rolled", live_params + rolled_params


def attempt_figures(scope: Scope) -> dict[tuple, dict]:
    """Everything computed from the attempts, in one statement (the attempts are gathered once, a
    WITH): (key, item, figure) -> {n, p50, p90} for
    ("step", step, "n" | "waited" | "worked") and (side, who, "n" | "worked" | "took") with side
    agent or person and who a name, OTHER_PEOPLE, or "*" for the whole side; "n" counts."""
    attempts, params = _attempts(scope)
    named = _named_people(scope.identity)
    if named is None:
        who, who_params = "actor", []
    elif named:
        who = f"CASE WHEN actor_kind = 'agent' OR LOWER(actor) IN ({', '.join(['%s'] * len(named))}) " \
              f"THEN actor ELSE '{OTHER_PEOPLE}' END"
        who_params = list(named)
    else:
        who, who_params = f"CASE WHEN actor_kind = 'agent' THEN actor ELSE '{OTHER_PEOPLE}' END", []
    side = "CASE WHEN actor_kind = 'agent' THEN 'agent' ELSE 'person' END"
    with_sql = (f"WITH a AS ({attempts}), d AS (SELECT {side} AS side, {who} AS who, worked, took, w FROM a "
                f"WHERE done) ")
    values = " UNION ALL ".join([
        "SELECT 'step' AS k1, step_id AS k2, 'n' AS k3, 0 AS v, w FROM a",
        "SELECT 'step', step_id, 'waited', waited, w FROM a",
        "SELECT 'step', step_id, 'worked', worked, w FROM a",
        "SELECT side, who, 'n', 0, w FROM d", "SELECT side, who, 'worked', worked, w FROM d",
        "SELECT side, who, 'took', took, w FROM d", "SELECT side, '*', 'n', 0, w FROM d",
        "SELECT side, '*', 'worked', worked, w FROM d", "SELECT side, '*', 'took', took, w FROM d"])
    return percentiles(values, params + who_params, keys=3, with_sql=with_sql)


def steps(scope: Scope, computed: dict | None = None) -> list[dict]:
    """Per working step: attempts, waited and worked (median, p90), overdue, rework, escalations,
    lease expiries, and for a checked step the check's pass / unsure / fail."""
    computed = attempt_figures(scope) if computed is None else computed
    counts = {k2: entry["n"] for (k1, k2, k3), entry in computed.items() if k1 == "step" and k3 == "n"}
    times = {(k2, k3): entry for (k1, k2, k3), entry in computed.items() if k1 == "step"}
    events = _step_events(scope)
    out = []
    for step_id, kind, checked in scope.steps:
        n = counts.get(step_id, 0)
        found = events.get(step_id, {})
        waited = times.get((step_id, "waited"), {})
        worked = times.get((step_id, "worked"), {})
        row = {
            "step": step_id, "kind": kind, "count": n,
            "waited": {"median": waited.get("p50"), "p90": waited.get("p90"), "n": waited.get("n", 0)},
            "worked": {"median": worked.get("p50"), "p90": worked.get("p90"), "n": worked.get("n", 0)},
            "overdue": found.get("overdue", 0), "overdueRate": _rate(found.get("overdue", 0), n),
            "rework": found.get("rework", 0), "reworkRate": _rate(found.get("rework", 0), n),
            "escalations": found.get("escalated", 0), "escalationRate": _rate(found.get("escalated", 0), n),
            "leaseExpiries": found.get("lapsed", 0),
        }
        if checked:
            row["check"] = {"pass": found.get("pass", 0), "unsure": found.get("unsure", 0),
                            "fail": found.get("fail", 0)}
        out.append(row)
    return out


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


STEP_EVENT_KINDS = (EventKind.OVERDUE, EventKind.REWORK, EventKind.ESCALATED, EventKind.LEASE_LAPSED,
                    EventKind.CHECK_VERDICT, EventKind.SUBMISSION_REFUSED)
# label -> the rollup's column (EventRoll)
STEP_EVENT_LABELS = {"overdue": "overdue", "rework": "rework", "escalated": "escalated", "lapsed": "lapsed",
                     "pass": "passed", "unsure": "unsure", "fail": "failed"}


def step_event_counts() -> str:
    """SUM of each label's events (named as the rollup's columns), over audit rows of STEP_EVENT_KINDS:
    overdue crossings, reworks sent back (approvals), escalations by agents, lease lapses, check
    verdicts (a blocking fail is a refused submission carrying the check)."""
    verdict, refused_check = json_text("data", "verdict"), json_text("data", "check")
    conditions = (
        f"kind = '{EventKind.OVERDUE}'",
        f"kind = '{EventKind.REWORK}'",
        f"kind = '{EventKind.ESCALATED}' AND actor_kind = 'agent'",
        f"kind = '{EventKind.LEASE_LAPSED}'",
        f"kind = '{EventKind.CHECK_VERDICT}' AND {verdict} = 'pass'",
        f"kind = '{EventKind.CHECK_VERDICT}' AND {verdict} = 'unsure'",
        f"(kind = '{EventKind.CHECK_VERDICT}' AND {verdict} = 'fail') OR "
        f"(kind = '{EventKind.SUBMISSION_REFUSED}' AND {refused_check} = 'fail')",
    )
    return ", ".join(f"SUM(CASE WHEN {condition} THEN 1 ELSE 0 END) AS {column}"
                     for condition, column in zip(conditions, STEP_EVENT_LABELS.values(), strict=True))


def _step_events(scope: Scope) -> dict[str, dict[str, int]]:
    """step -> counts of what happened to it in the period (one statement): the runs not rolled up
    from the audit log, the rest from the rollup."""
    runs, params = scope.runs_sql(unrolled=scope.rolled)
    f = scope.filters
    columns = ", ".join(STEP_EVENT_LABELS.values())
    statement = (f"SELECT step_id, {step_event_counts()} FROM {sql.table(AuditEvent)} WHERE organization_id = %s "
                 f"AND run_id IN ({runs}) AND kind IN ({_words(STEP_EVENT_KINDS)}) AND at >= %s AND at < %s "
                 f"GROUP BY step_id")
    params = [scope.identity.organization.id, *params, _at(f.since), _at(f.until)]
    if scope.rolled:
        rolled, rolled_params = scope.rolled_sql(sql.table(EventRoll), steps=False)
        sums = ", ".join(f"SUM({column})" for column in STEP_EVENT_LABELS.values())
        statement = (f"SELECT step_id, {sums} FROM ({statement}"
                     f" UNION ALL SELECT step_id, {columns} FROM ({rolled}) rolled) counted GROUP BY step_id")
        params += rolled_params
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return {row[0]: dict(zip(STEP_EVENT_LABELS, (int(v or 0) for v in row[1:]))) for row in cursor.fetchall()}


def _named_people(identity) -> list[str] | None:
    """Whose names the viewer may see among people: None for everyone (operators), else the
    members of the viewer's own groups (lower-cased emails)."""
    if visibility.sees_everything(identity):
        return None
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.filter(groups__name__in=list(identity.groups),
                                            member__organization=identity.organization)
    return sorted({email.lower() for email in users.values_list("email", flat=True)} | {identity.email.lower()})


def workers(scope: Scope, computed: dict | None = None) -> dict:
    """Completions (an attempt's last submission or decision) in the period by agents and by people,
    per agent and per person, with the median worked time and the median time from ready to done.
    People outside the viewer's groups are one row, "other people", unless the viewer is an operator."""
    times = attempt_figures(scope) if computed is None else computed
    counts = {(side, who): entry["n"] for (side, who, what), entry in times.items()
              if side in ("agent", "person") and what == "n" and who != "*"}

    def figures(side, who, n):
        return {"completions": n, "medianWorked": times.get((side, who, "worked"), {}).get("p50"),
                "medianTook": times.get((side, who, "took"), {}).get("p50")}

    out = {}
    for side in ("agent", "person"):
        rows = sorted(((who, n) for (s, who), n in counts.items() if s == side), key=lambda r: (-r[1], r[0]))
        total = sum(n for _who, n in rows)
        out[side + "s"] = {**figures(side, "*", total),
                           "by": [{"name": who or None, **figures(side, who, n)} for who, n in rows]}
    return out


def end_to_end(scope: Scope) -> dict:
    """Runs that ended in the period (not cancelled): median, p90, a histogram, the slowest ten."""
    runs, params = scope.runs_sql(unrolled=scope.rolled)
    f = scope.filters
    took = seconds_between("started_at", "ended_at")
    # id, took, weight: the runs not rolled up one by one, the rest from the rollup
    ended = (f"SELECT id, {took} AS took, 1 AS w FROM {sql.table(Run)} WHERE id IN ({runs}) "
             f"AND state = '{RunState.ENDED}' AND ended_at >= %s AND ended_at < %s")
    params = params + [_at(f.since), _at(f.until)]
    if scope.rolled:
        rolled, rolled_params = scope.rolled_sql(sql.table(TookRoll), steps=False)
        ended += f" UNION ALL SELECT run_id, took, runs FROM ({rolled}) rolled"
        params += rolled_params
    times = percentiles(f"SELECT 'all' AS k1, took AS v, w FROM ({ended}) e", params, keys=1).get(("all",), {})
    cases, bound_params = [], []
    for index, (_label, upper) in enumerate(HISTOGRAM):
        if upper is not None:
            cases.append(f"WHEN took < %s THEN {index}")
            bound_params.append(upper)
    histogram_sql = (f"SELECT CASE {' '.join(cases)} ELSE {len(HISTOGRAM) - 1} END AS b, SUM(w) "
                     f"FROM ({ended}) e GROUP BY 1")
    run_table = sql.table(Run)
    with connection.cursor() as cursor:
        cursor.execute(histogram_sql, bound_params + params)
        counted = {int(b): int(n) for b, n in cursor.fetchall()}
        # The rollup's rows without a run are not among the slowest of their day (TookRoll.run_id).
        cursor.execute(f"SELECT r.id, s.took, r.outcome, r.version_number, r.started_at, r.ended_at FROM ("
                       f"SELECT id, took FROM ({ended}) e WHERE id <> '' ORDER BY took DESC, id LIMIT {SLOWEST}"
                       f") s JOIN {run_table} r ON r.id = s.id ORDER BY s.took DESC, r.id", params)
        slowest = [{"run": run_id, "seconds": int(seconds), "outcome": outcome, "version": version,
                    "startedAt": _iso(sql.from_db(Run, "started_at", started)),
                    "endedAt": _iso(sql.from_db(Run, "ended_at", ended_at))}
                   for run_id, seconds, outcome, version, started, ended_at in cursor.fetchall()]
    return {"ended": times.get("n", 0), "median": times.get("p50"), "p90": times.get("p90"),
            "histogram": [{"label": label, "runs": counted.get(index, 0)} for index, (label, _u) in enumerate(HISTOGRAM)],
            "slowest": slowest}


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def dashboard(scope: Scope) -> dict:
    """Every figure of the dashboard, as the JSON gives it."""
    f = scope.filters
    computed = attempt_figures(scope)
    per_step = steps(scope, computed)
    return {
        "process": scope.process.name,
        "filters": {"from": _iso(f.since), "to": _iso(f.until), "version": f.version, "mode": f.mode,
                    "q": f.q, "by": f.by, "heat": f.heat},
        "timeline": timeline(scope),
        "openByStep": open_by_step(scope),
        "steps": per_step,
        "heatmap": {"figure": f.heat, "steps": heatmap.cells(per_step, f.heat)},
        "workers": workers(scope, computed),
        "endToEnd": end_to_end(scope),
    }
