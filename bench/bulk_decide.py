"""Bulk decisions: one request approving N selected work items (`POST /work/bulk`,
workqueue.views.bulk_decide), each through `decide` with its own snapshot in its own transaction.

    .venv/bin/python bench/bulk_decide.py [--quick] [--items 200] [--rounds 3]

Runs of bench/processes/bench-approval are cloned (bench/fixtures.py) so the person has 1,000
open items; each round selects N of them (with the snapshots the inbox showed) and sends one bulk
approval with a real session (Django's test client, in process: middleware, session, view,
template). Prints the request's wall time, the time per item, and the SQL statements per item.
"""

import datetime as dt
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200, help="items per bulk request (default 200)")
    parser.add_argument("--rounds", type=int, help="bulk requests (default 3, quick 1)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    results = common.Results("bulk_decide")
    print(common.context_line())
    timings, per_item_statements = [], []
    with common.bench_database():
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        from bench import fixtures
        from kernel import clock
        from runs.models import WorkItem

        common.publish("bench-approval", "approver=approvers")
        now = clock.now()
        user, template = fixtures.approver_and_template(started_at=now - dt.timedelta(hours=1))
        fixtures.clone_runs(template, args.items * rounds + 100,
                            started_at=lambda i: now - dt.timedelta(minutes=i % 600),
                            inputs=lambda i: {"vendorName": f"vendor-{i}", "amount": i})
        common.analyze()
        client = Client()
        client.force_login(user)
        client.get("/")  # warm: compiled definitions, templates
        for round_number in range(rounds):
            items = list(WorkItem.objects.filter(state="open").select_related("run").order_by("created_at", "id")
                         [: args.items])
            data = {"items": [item.pk for item in items], "decision": "approved", "note": "",
                    "request_id": str(uuid.uuid4()), "back": ""}
            data.update({f"snapshot.{item.pk}": item.run.snapshot for item in items})
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.post("/work/bulk", data)
                elapsed = time.perf_counter() - started
            body = response.content.decode()
            applied = body.count('data-outcome="applied"')
            if response.status_code != 200 or applied != len(items):
                raise SystemExit(f"round {round_number}: {response.status_code}, {applied} of {len(items)} applied")
            timings.append(elapsed)
            per_item_statements.append(len(captured.captured_queries) / len(items))
            print(f"round {round_number + 1}: {len(items)} items in {elapsed * 1000:.0f} ms "
                  f"({elapsed * 1000 / len(items):.1f} ms per item), "
                  f"{len(captured.captured_queries)} statements ({per_item_statements[-1]:.1f} per item)", flush=True)

    best = min(timings)
    results.add(f"bulk approval of {args.items} items, one request", round(best * 1000), "ms (best)",
                note=f"{rounds} rounds: " + ", ".join(f"{t * 1000:.0f}" for t in timings) + " ms")
    results.add("time per item", round(best * 1000 / args.items, 2), "ms")
    results.add("statements per item", round(max(per_item_statements), 1), "statements", "bounded",
                len(set(round(s, 1) for s in per_item_statements)) == 1,
                note=" / ".join(f"{s:.1f}" for s in per_item_statements))
    common.finish(results, args.json)


if __name__ == "__main__":
    main()
