"""Sweep cost: one `runs.services.sweep.sweep(now)` over 100k runs of which 1k have something due.

    .venv/bin/python bench/sweep_cost.py [--quick] [--sizes 10000,100000] [--due 1000] [--repeats 5]

Runs of bench/processes/bench-sweep (an agent step with `due: 1h`, a `wait: 1h`, a second agent
step) are made from templates the real services produced (start_run, claim, submit, the wait's
wake) and cloned with shifted instants (bench/fixtures.py). The runs with nothing due are half
ended, the rest ready with a due ahead, claimed under a live lease, or waiting on a timer ahead. The
due ones are a third each: a lapsed lease (due still ahead), a wait whose timer passed, a ready step
past its due (one operator, so overdue notices are composed and sent, to the memory mail backend).

Per size: the sweep with nothing due (at an instant before everything), then the sweep with the due
items; the due runs are deleted and cloned afresh before each repeat. Prints time and SQL statement
count; "work proportional to the due items" shows as statements per due item and as the same time
at 10k and 100k runs.
"""

import datetime as dt
import random
import sys
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402

LEASE = dt.timedelta(seconds=600)
HOUR = dt.timedelta(hours=1)


def make_templates(identity, t0: dt.datetime) -> dict:
    """Runs at the states the sweeps look at, made by the services at instant t0."""
    from django.db import transaction

    from bench.fixtures import Template
    from runs.services.engine import RunContext
    from runs.services.leases import claim
    from runs.services.start import start_run
    from runs.services.submissions import submit

    def start():
        return start_run(identity=identity, process="bench-sweep", version=None,
                         inputs={"reference": "template"}, mode="live", now=t0).run.id

    def hand_in(run_id, step_id, output, now):
        lease = claim(identity=identity, run_id=run_id, step_id=step_id, now=now)
        with transaction.atomic():
            submit(identity=identity, token=lease.token, output=output, evidence=None,
                   summary="Benchmark template.", next_choice=None, reason=None, now=now)

    ready = start()
    claimed = start()
    claim(identity=identity, run_id=claimed, step_id="gather", now=t0)
    waiting = start()
    hand_in(waiting, "gather", {"facts": "template"}, t0)
    ended = start()
    hand_in(ended, "gather", {"facts": "template"}, t0)
    with transaction.atomic():
        ctx = RunContext.for_write(organization=identity.organization, run_id=ended, now=t0 + HOUR)
        ctx.wake("pause")
        ctx.save()
    hand_in(ended, "check", {"consistent": True}, t0 + HOUR)
    templates = {name: Template.of(run_id) for name, run_id in
                 (("ready", ready), ("claimed", claimed), ("waiting", waiting), ("ended", ended))}
    assert templates["ended"].run.state == "ended", templates["ended"].run.state
    assert templates["waiting"].states[1].wake_at == t0 + HOUR
    return templates


def load_quiet(templates, count: int, now: dt.datetime, rng: random.Random) -> None:
    """Runs with nothing due at `now`: 50% ended, 20% ready (due ahead), 10% claimed (live lease),
    20% waiting (timer ahead)."""
    from bench.fixtures import clone_runs

    def minutes(low, high):
        return lambda i: now - dt.timedelta(minutes=rng.uniform(low, high))

    shares = (("ended", 0.5, minutes(120, 43_200)), ("ready", 0.2, minutes(1, 50)),
              ("claimed", 0.1, minutes(1, 9)), ("waiting", 0.2, minutes(1, 50)))
    left = count
    for index, (name, share, when) in enumerate(shares):
        n = left if index == len(shares) - 1 else int(count * share)
        clone_runs(templates[name], n, started_at=when, inputs=lambda i: {"reference": f"quiet-{i}"})
        left -= n


def load_due(templates, count: int, now: dt.datetime, rng: random.Random) -> list[str]:
    """Runs with one due item each at `now`: a lapsed lease, a passed timer, a passed due (thirds)."""
    from bench.fixtures import clone_runs

    def minutes(low, high):
        return lambda i: now - dt.timedelta(minutes=rng.uniform(low, high))

    third = count // 3
    ids = clone_runs(templates["claimed"], third, started_at=minutes(11, 50),  # lease lapsed, due ahead
                     inputs=lambda i: {"reference": f"lease-{i}"})
    ids += clone_runs(templates["waiting"], third, started_at=minutes(61, 180),  # timer passed
                      inputs=lambda i: {"reference": f"timer-{i}"})
    ids += clone_runs(templates["ready"], count - 2 * third, started_at=minutes(61, 180),  # due passed
                      inputs=lambda i: {"reference": f"due-{i}"})
    return ids


def one_sweep(now: dt.datetime, count_queries: bool = False) -> tuple[float, object, int | None, dict]:
    """Time `sweep(now)`; with count_queries, run its parts one by one (what sweep() does) to count
    SQL statements and time each part: (seconds, report, statements, {part: (ms, statements)})."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from runs.services import outbox
    from runs.services import sweep as sweeps

    if not count_queries:
        started = time.perf_counter()
        report = sweeps.sweep(now)
        return time.perf_counter() - started, report, None, {}
    report, parts, total, statements = sweeps.SweepReport(), {}, 0.0, 0

    def part(name, call):
        nonlocal total, statements
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            value = call()
            seconds = time.perf_counter() - started
        count = sum(1 for q in captured.captured_queries
                    if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT")))
        parts[name] = (round(seconds * 1000), count)
        total += seconds
        statements += count
        return value

    report.leases = part("leases", lambda: sweeps.sweep_leases(now))
    report.timers = part("timers", lambda: sweeps.sweep_timers(now))
    report.overdue, report.notices = part("dues", lambda: sweeps.sweep_dues(now))
    report.sent, report.unsent = part("notices", lambda: outbox.send_due(now))
    return total, report, statements, parts


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help="total runs (default 10000,100000; quick 10000)")
    parser.add_argument("--due", type=int, default=1000, help="runs with something due (default 1000)")
    parser.add_argument("--repeats", type=int, help="sweeps timed per size (default 5, quick 2)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("10000" if args.quick else "10000,100000")).split(",")]
    repeats = args.repeats or (2 if args.quick else 5)
    results = common.Results("sweep")
    print(common.context_line())
    rows = []
    with common.bench_database():
        from kernel import clock
        from kernel.identity import identity_from_api_token
        from kernel.organizations import create_agent, create_person, default_organization
        from bench import fixtures

        common.publish("bench-sweep")
        organization = default_organization()
        create_person(organization, "operator@example.com", operator=True)
        identity = identity_from_api_token(create_agent(organization, "bench-sweeper")[1])
        # One fixed instant: every clone is placed relative to it and every sweep is given it, so
        # what is due does not drift with the wall clock while the bench loads.
        now = clock.now()
        templates = make_templates(identity, now - dt.timedelta(days=40))
        fixtures.truncate_runs()  # the templates stay in memory; the tables hold only clones
        rng = random.Random(3)
        quiet = 0
        for size in sizes:
            load_quiet(templates, size - args.due - quiet, now, rng)
            quiet = size - args.due
            due_ids = load_due(templates, args.due, now, rng)
            common.analyze()
            idle_seconds, idle_report, idle_statements, _ = one_sweep(now - dt.timedelta(hours=4), count_queries=True)
            timings, reports = [], []
            for repeat in range(repeats + 1):
                if repeat:
                    fixtures.delete_runs(due_ids)
                    due_ids = load_due(templates, args.due, now, rng)
                # The last repeat counts statements part by part (the capture slows it; not in the median).
                seconds, report, statements, parts = one_sweep(now, count_queries=repeat == repeats)
                if repeat < repeats:
                    timings.append(seconds)
                reports.append(report)
            report = reports[-1]
            handled = report.leases + report.timers + report.overdue
            row = {"size": size, "due": args.due, "handled": handled, "report": str(report),
                   "seconds": [round(s, 3) for s in timings], "statements": statements,
                   "idle_seconds": round(idle_seconds, 4), "idle_statements": idle_statements,
                   "idle_report": str(idle_report), "notices": len(report.notices), "parts": parts}
            rows.append(row)
            print(f"{size:>7} runs, {args.due} due: sweep {median(timings) * 1000:.0f} ms median "
                  f"(each {[round(s * 1000) for s in timings]} ms), {statements} statements for {handled} items "
                  f"({report}; {len(report.notices)} notices); nothing due: {idle_seconds * 1000:.1f} ms, "
                  f"{idle_statements} statements\n          by part (ms, statements), counted run: {parts}", flush=True)

    for row in rows:
        middle = median(row["seconds"])
        top = row is rows[-1] and row["size"] >= 100_000
        results.add(f"sweep @ {row['size']:,} runs, {row['due']} due", round(middle * 1000, 1), "ms (median)",
                    "< 1000 ms" if top else "", (middle < 1.0) if top else None,
                    note=f"max {max(row['seconds']) * 1000:.0f} ms; {row['statements']} statements "
                         f"({row['statements'] / max(1, row['handled']):.1f}/item); ms by part: "
                         + ", ".join(f"{name} {ms}" for name, (ms, _n) in row["parts"].items()))
        results.add(f"sweep @ {row['size']:,} runs, nothing due", round(row["idle_seconds"] * 1000, 2), "ms",
                    note=f"{row['idle_statements']} statements")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        ratio = median(last["seconds"]) / median(first["seconds"])
        results.add(f"sweep time {last['size'] // 1000}k/{first['size'] // 1000}k runs (same due)", round(ratio, 2),
                    "×", "≈ 1 (proportional to due)", note=f"statements {first['statements']} vs {last['statements']}")
    results.details = {"rows": rows}
    common.finish(results, args.json)


if __name__ == "__main__":
    main()
