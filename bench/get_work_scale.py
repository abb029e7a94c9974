"""get_work at scale: p50/p99 of an agent's `get_work` with 1k, 10k and 100k ready agent steps.

    .venv/bin/python bench/get_work_scale.py [--quick] [--sizes 1000,10000,100000] [--calls 300]

Runs of bench/processes/bench-three-steps are cloned from one `start_run` made (bench/fixtures.py),
their start instants spread at random over the last day so index order is not insertion order;
ANALYZE after each load (autovacuum may be off, as it is on this machine's PostgreSQL). Each call is
the tool layer in process (`api.tools.call_tool`, as REST and MCP call it) for an agent
identity: the first page (default limit 20), a page deep in the queue (keyset cursor at the middle)
and the first page filtered by process. Also prints the plans of the first-page and deep-page
queries at the largest size (EXPLAIN ANALYZE, BUFFERS).
"""

import datetime as dt
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402


def timed_calls(identity, arguments: dict, calls: int) -> list[float]:
    from api.tools import call_tool

    for _ in range(10):  # warm
        call_tool(identity, "get_work", arguments)
    values = []
    for _ in range(calls):
        started = time.perf_counter()
        envelope = call_tool(identity, "get_work", arguments)
        values.append(time.perf_counter() - started)
        if not envelope["ok"] or not envelope["data"]["items"]:
            raise SystemExit(f"get_work returned no work: {envelope}")
    return values


def middle_cursor(size: int) -> str:
    from kernel import paging
    from runs.models import StepState

    row = (StepState.objects.filter(kind="agent", state="ready").order_by("ready_since", "id")
           .values_list("ready_since", "id")[size // 2])
    return paging.encode(*row)


def plan(identity, arguments: dict) -> str:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from api.tools import call_tool

    with CaptureQueriesContext(connection) as captured:
        call_tool(identity, "get_work", arguments)
    statements = [q["sql"] for q in captured.captured_queries if "runs_stepstate" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statements[0])
        return "\n".join(row[0] for row in cursor.fetchall())


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help="ready agent steps (default 1000,10000,100000; quick 1000,10000)")
    parser.add_argument("--calls", type=int, help="timed calls per size and query (default 300, quick 100)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick else "1000,10000,100000")).split(",")]
    calls = args.calls or (100 if args.quick else 300)
    results = common.Results("get_work")
    print(common.context_line())
    rows = []
    with common.bench_database():
        from kernel import clock
        from kernel.identity import identity_from_api_token
        from kernel.organizations import create_agent, default_organization
        from bench import fixtures
        from bench.throughput import make_template

        common.publish("bench-three-steps")
        template = make_template()
        _agent, token = create_agent(default_organization(), "bench-reader")
        identity = identity_from_api_token(token)
        rng = random.Random(8)
        now = clock.now()
        loaded = 1  # the template run is ready too
        for size in sizes:
            started = time.perf_counter()
            fixtures.clone_runs(template, size - loaded,
                                started_at=lambda i: now - dt.timedelta(seconds=rng.uniform(60, 86_400)),
                                inputs=lambda i: {"reference": f"bench-{i}", "amount": i})
            loaded = size
            common.analyze()
            load_seconds = time.perf_counter() - started
            first = timed_calls(identity, {}, calls)
            deep = timed_calls(identity, {"cursor": middle_cursor(size)}, calls)
            by_process = timed_calls(identity, {"process": "bench-three-steps"}, calls)
            row = {"size": size, "first": common.summary_ms(first), "deep": common.summary_ms(deep),
                   "process": common.summary_ms(by_process), "load_seconds": round(load_seconds, 1)}
            rows.append(row)
            print(f"{size:>7} ready steps (loaded in {load_seconds:.1f} s): get_work p50/p99 first page "
                  f"{row['first']['p50']}/{row['first']['p99']} ms, deep page {row['deep']['p50']}/{row['deep']['p99']}"
                  f" ms, by process {row['process']['p50']}/{row['process']['p99']} ms", flush=True)
        plans = {"first page": plan(identity, {}), "deep page": plan(identity, {"cursor": middle_cursor(sizes[-1])})}
        for name, text in plans.items():
            print(f"\n# plan of the {name} query at {sizes[-1]} ready steps:\n{text}")

    for row in rows:
        results.add(f"get_work p99 @ {row['size']:,} ready", row["first"]["p99"], "ms (p99)",
                    note=f"p50 {row['first']['p50']} ms; deep page p50 {row['deep']['p50']}; "
                         f"by process p50 {row['process']['p50']}")
    base, top = rows[0], rows[-1]
    if len(rows) > 1 and base["first"]["p50"]:
        ratio = top["first"]["p50"] / base["first"]["p50"]
        results.add(f"get_work p50 ratio {top['size'] // 1000}k/{base['size'] // 1000}k", round(ratio, 2), "×",
                    "≤ 1.5×", ratio <= 1.5, note=f"p50 {top['first']['p50']} vs {base['first']['p50']} ms")
        deep_ratio = top["deep"]["p50"] / base["deep"]["p50"]
        results.add(f"deep page p50 ratio {top['size'] // 1000}k/{base['size'] // 1000}k", round(deep_ratio, 2), "×",
                    note="keyset cursor at the middle of the queue")
    results.details = {"rows": rows, "plans": plans}
    common.finish(results, args.json)


if __name__ == "__main__":
    main()
