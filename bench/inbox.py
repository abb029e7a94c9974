"""Inbox: server time and SQL statement count of the inbox page (`/`, workqueue.views.inbox) for a
person with 10k open work items.

    .venv/bin/python bench/inbox.py [--quick] [--sizes 100,1000,10000] [--requests 30]

Runs of bench/processes/bench-approval (one approval of the `approvers` group) are cloned from one
`start_run` made (bench/fixtures.py) — each with its open work item — started at random over the
last four days, so about half are past their `due: 2d` (overdue badges). The person signs in with a
real session (Django's test client, in process: middleware, session and user look-ups, view,
template) and GETs `/`; also page 100 (`?page=100`, the deepest page at 10k items), the overdue
filter and a free-text search, every queue view (mine, my groups, done by me), the sorts, the
held-by filter, an amount range and the list's own refresh, with three saved views counted on every
page. Server time is the wall time of the request in process; the
statement count is taken on a separate request (capturing queries costs a little time).
"""

import datetime as dt
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402

PAGES = {
    "inbox": "/", "page 100": "/?page=100", "overdue": "/?overdue=1", "search": "/?q=vendor-4242",
    # The queue views, sorts and typed filters (issue 15, point 2); the person has 3 saved views.
    "mine": "/?view=mine", "my groups": "/?view=groups", "done by me": "/?view=done",
    "sort waiting": "/?sort=waiting", "sort process": "/?sort=process", "held nobody": "/?held=nobody",
    "amount range": "/?process=bench-approval&input.amount.min=1000&input.amount.max=5000",
    "refresh": "/?partial=1",
}
SAVED_VIEWS = {"Large": "input.amount.min=5000&process=bench-approval", "Late": "overdue=1",
               "Acme": "q=vendor-42"}


def measure(client, url: str, requests: int) -> tuple[list[float], int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(3):  # warm: compiled definitions, templates
        response = client.get(url)
        if response.status_code != 200:
            raise SystemExit(f"GET {url} answered {response.status_code}")
    values = []
    for _ in range(requests):
        started = time.perf_counter()
        client.get(url)
        values.append(time.perf_counter() - started)
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    return values, len(captured.captured_queries)


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help="open work items (default 100,1000,10000; quick 100,10000)")
    parser.add_argument("--requests", type=int, help="timed requests per page and size (default 30, quick 10)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("100,10000" if args.quick else "100,1000,10000")).split(",")]
    requests = args.requests or (10 if args.quick else 30)
    results = common.Results("inbox")
    print(common.context_line())
    rows = []
    with common.bench_database():
        from django.test import Client

        from bench import fixtures
        from kernel import clock
        from kernel.organizations import default_organization

        common.publish("bench-approval", "approver=approvers")
        organization = default_organization()
        now = clock.now()
        user, template = fixtures.approver_and_template(started_at=now - dt.timedelta(days=5))
        rng = random.Random(10)
        loaded = 1
        client = Client()
        client.force_login(user)  # a real session row, as signing in makes
        from runs.models import SavedView

        for name, query in SAVED_VIEWS.items():
            SavedView.objects.create(organization=organization, user=user, name=name, query=query, created_at=now)
        for size in sizes:
            ids = fixtures.clone_runs(template, size - loaded,
                                      started_at=lambda i: now - dt.timedelta(minutes=rng.uniform(1, 5760)),
                                      inputs=lambda i: {"vendorName": f"vendor-{i}", "amount": i})
            problems = fixtures.check_clone(template, ids[0])
            if problems:
                raise SystemExit("a cloned run differs from start_run's: " + "; ".join(problems))
            loaded = size
            common.analyze()
            row = {"size": size}
            for name, url in PAGES.items():
                values, statements = measure(client, url, requests)
                row[name] = {**common.summary_ms(values), "statements": statements}
            rows.append(row)
            print(f"{size:>6} open items: " + "; ".join(
                f"{name} p50 {row[name]['p50']} ms p95 {row[name]['p95']} ms, {row[name]['statements']} statements"
                for name in PAGES), flush=True)

    top = rows[-1]
    constant = all(len({row[name]["statements"] for row in rows}) == 1 for name in PAGES)
    for row in rows:
        is_top = row is top and row["size"] >= 10_000
        results.add(f"inbox @ {row['size']:,} open items", row["inbox"]["p50"], "ms (p50)",
                    "< 150 ms" if is_top else "", (row["inbox"]["p50"] < 150) if is_top else None,
                    note=f"p95 {row['inbox']['p95']} ms; {row['inbox']['statements']} statements")
    results.add("inbox statements, " + " / ".join(f"{r['size']:,}" for r in rows),
                top["inbox"]["statements"], "statements", "constant", constant,
                note=" / ".join(str(r["inbox"]["statements"]) for r in rows))
    for name in [page for page in PAGES if page != "inbox"]:
        results.add(f"inbox {name} @ {top['size']:,}", top[name]["p50"], "ms (p50)",
                    note=f"p95 {top[name]['p95']} ms; {top[name]['statements']} statements; {PAGES[name]}")
    results.details = {"rows": rows}
    common.finish(results, args.json)


if __name__ == "__main__":
    main()
