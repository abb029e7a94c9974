"""Process insight: server time and SQL statement count of a process's dashboard (`/insight/<name>/`,
its JSON and the HTML page) over 10k and 100k ended runs.

    .venv/bin/python bench/insight.py [--quick] [--sizes 10000,100000] [--requests 10]

A template run of bench/processes/bench-insight is made by the real tools (start, an agent's claim
and submit, an approver's rejection, rework, claim and submit again, the approver takes the item and
approves: 14 audit events); `bench/fixtures.py: clone_runs` copies its run, steps and items and
this module copies its audit events, every instant shifted by the clone's start, spread over the
last 85 days. So 100k runs hold 1.4 million audit events. An operator signs in (a real session)
and GETs the dashboard for the last 90 days (every run counts) as JSON and as the page, and for
the last 7 days as JSON. Server time is the request's wall time in process; statements are counted
on a separate request.
"""

import datetime as dt
import random
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.inbox import measure  # noqa: E402 (one timed GET loop for the pages' benchmarks)

PAGES = {"json 90 days": "/insight/bench-insight/?period=90&format=json",
         "page 90 days": "/insight/bench-insight/?period=90",
         "json 7 days": "/insight/bench-insight/?period=7&format=json"}
EVENTS_PER_RUN = 14


def call(identity, tool: str, **arguments) -> dict:
    from api.tools import call_tool

    if tool != "get_run":  # a write: its own requestId
        arguments["requestId"] = str(uuid.uuid4())
    envelope = call_tool(identity, tool, arguments)
    if not envelope["ok"]:
        raise SystemExit(f"{tool}: {envelope['error']}")
    return envelope["data"]


def template_run(start: dt.datetime):
    """(operator user, the ended template run's id), made by the tools with the clock moved along."""
    from kernel import clock
    from kernel.identity import identity_from_api_token, person_identity
    from kernel.organizations import create_agent, create_person, default_organization
    from runs.services import queue

    organization = default_organization()
    approver, _ = create_person(organization, "approver@example.com", groups=["approvers"])
    operator, _ = create_person(organization, "ops@example.com", operator=True)
    agent = identity_from_api_token(create_agent(organization, "bench-agent")[1])
    person = person_identity(approver)

    def work(run_id):
        token = call(agent, "claim", runId=run_id, stepId="prepare")["token"]
        clock.advance(dt.timedelta(minutes=8))  # within the lease (LEASE_SECONDS, 10 minutes)
        call(agent, "submit", token=token, output={"ready": True}, evidence=[{"kind": "link", "ref": "https://e.x"}],
             summary="Prepared.")

    def approval(run_id):
        view = call(person, "get_run", runId=run_id)
        return view, [item for item in view["workItems"] if item["stepId"] == "approve"][0]

    with clock.frozen(start):
        run_id = call(agent, "start_run", process="bench-insight", inputs={"vendorName": "template", "amount": 1},
                      mode="live")["run"]["id"]
        clock.advance(dt.timedelta(minutes=30))
        work(run_id)
        clock.advance(dt.timedelta(hours=3))
        view, item = approval(run_id)
        call(person, "decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="rejected",
             note="Attach the contract.")
        clock.advance(dt.timedelta(hours=1))
        work(run_id)
        clock.advance(dt.timedelta(hours=2))
        view, item = approval(run_id)
        queue.take(identity=person, work_item_id=item["id"], now=clock.now())
        clock.advance(dt.timedelta(minutes=15))
        view, item = approval(run_id)
        call(person, "decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="approved")
    return operator, run_id


def clone_events(template_run_id: str, run_ids: list[str], offsets: list[dt.timedelta], batch: int = 5000) -> int:
    """Copy the template's audit events for every clone, shifted by its offset; how many were made."""
    from bench import fixtures
    from kernel.models import AuditEvent

    events = list(AuditEvent.objects.filter(run_id=template_run_id).order_by("id"))
    makers = [fixtures._row_maker(AuditEvent, event, ("id", "run_id")) for event in events]
    made = 0
    for first in range(0, len(run_ids), batch):
        chunk = range(first, min(len(run_ids), first + batch))
        ids = iter(fixtures._allocate_ids(AuditEvent, len(chunk) * len(makers)))
        rows = [make(offsets[i], id=next(ids), run_id=run_ids[i]) for i in chunk for make in makers]
        fixtures._copy(AuditEvent, rows)
        made += len(rows)
    return made


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help="ended runs (default 10000,100000; quick 1000,10000)")
    parser.add_argument("--requests", type=int, help="timed requests per page and size (default 10, quick 5)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick else "10000,100000")).split(",")]
    requests = args.requests or (5 if args.quick else 10)
    results = common.Results("insight")
    print(common.context_line())
    rows = []
    with common.bench_database():
        from django.test import Client

        from bench import fixtures
        from insight import rollup
        from insight.models import AttemptRoll, EventRoll, RollMark, RunRoll, TookRoll
        from kernel import clock
        from kernel.models import AuditEvent

        common.publish("bench-insight", "approver=approvers")
        now = clock.now()
        operator, template_id = template_run(now - dt.timedelta(days=86))
        template = fixtures.Template.of(template_id)
        if template.run.state != "ended" or AuditEvent.objects.filter(run_id=template_id).count() != EVENTS_PER_RUN:
            raise SystemExit("the template run did not end with the expected audit events")
        rng = random.Random(27)
        client = Client()
        client.force_login(operator)
        loaded = 1
        for size in sizes:
            starts = [now - dt.timedelta(minutes=rng.uniform(24 * 60, 85 * 24 * 60)) for _ in range(size - loaded)]
            started = time.perf_counter()
            ids = fixtures.clone_runs(template, size - loaded, started_at=lambda i: starts[i],
                                      inputs=lambda i: {"vendorName": f"vendor-{i}", "amount": i})
            events = clone_events(template_id, ids, [start - template.run.started_at for start in starts])
            loaded = size
            rolled_at = time.perf_counter()
            # The clones ended in the past, before the last pass's mark: fold everything again, as
            # the beat sweep would have folded each run within minutes of its end.
            for model in (RollMark, AttemptRoll, EventRoll, RunRoll, TookRoll):
                model.objects.all().delete()
            rolled = rollup.roll(clock.now())
            roll_seconds = time.perf_counter() - rolled_at
            common.analyze()
            total_events = AuditEvent.objects.count()
            print(f"# {size:,} runs, {total_events:,} audit events (loaded {events:,} in "
                  f"{time.perf_counter() - started - roll_seconds:.0f} s; the sweep rolled {rolled:,} ended runs "
                  f"up in {roll_seconds:.1f} s)", flush=True)
            row = {"size": size, "events": total_events, "rolled": rolled, "roll seconds": round(roll_seconds, 1)}
            for name, url in PAGES.items():
                values, statements = measure(client, url, requests)
                row[name] = {**common.summary_ms(values), "statements": statements}
            rows.append(row)
            print(f"{size:>7} ended runs: " + "; ".join(
                f"{name} p50 {row[name]['p50']} ms p95 {row[name]['p95']} ms, {row[name]['statements']} statements"
                for name in PAGES), flush=True)

    top = rows[-1]
    constant = all(len({row[name]["statements"] for row in rows}) == 1 for name in PAGES)
    for row in rows:
        is_top = row is top and row["size"] >= 100_000
        results.add(f"dashboard JSON, 90 days @ {row['size']:,} runs", row["json 90 days"]["p50"], "ms (p50)",
                    "< 300 ms" if is_top else "", (row["json 90 days"]["p50"] < 300) if is_top else None,
                    note=f"p95 {row['json 90 days']['p95']} ms; {row['json 90 days']['statements']} statements; "
                         f"{row['events']:,} audit events; rollup of {row['rolled']:,} runs {row['roll seconds']} s")
        for name in ("page 90 days", "json 7 days"):
            results.add(f"dashboard {name} @ {row['size']:,} runs", row[name]["p50"], "ms (p50)",
                        note=f"p95 {row[name]['p95']} ms; {row[name]['statements']} statements")
    results.add("dashboard statements, " + " / ".join(f"{r['size']:,}" for r in rows),
                top["json 90 days"]["statements"], "statements", "constant", constant,
                note=" / ".join(str(r["json 90 days"]["statements"]) for r in rows))
    results.details = {"rows": rows}
    common.finish(results, args.json)


if __name__ == "__main__":
    main()
