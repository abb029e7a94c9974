"""Cycle cost: the server's own CPU and SQL per agent step cycle, in process, one agent.

    .venv/bin/python bench/cycle_cost.py [--quick] [--cycles 100] [--rounds 8] [--webhook]

A cycle is get_work -> claim -> submit on bench/processes/bench-three-steps, each call through the
REST rule set in process (`api.rest.respond`: authentication, JSON, the tool layer),
so the figure leaves out only HTTP and the load generators. CPU is this process's own time
(time.process_time), and PostgreSQL's (every postgres process, from /proc), over `--rounds` rounds of `--cycles` cycles; the smallest round is the figure,
since anything else on the machine (other sessions, PostgreSQL's own work) only adds to it. It moves
less from run to run than cycles per second over HTTP, so it is the figure to compare before and
after a change to the hot path (taking the runs side by side: a shared host still shifts it). Also
prints the SQL statements of each call, counted as tests/test_statement_budget.py counts them.
"""

import json
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, help="cycles per round (default 100, quick 50)")
    parser.add_argument("--rounds", type=int, help="rounds; the smallest is reported (default 8, quick 3)")
    parser.add_argument("--verbose", action="store_true", help="print the statements of one cycle")
    parser.add_argument("--webhook", action="store_true",
                        help="a webhook subscription hears of every event: each write pays its outbox INSERT")
    args = parser.parse_args(argv)
    cycles = args.cycles or (50 if args.quick else 100)
    rounds = args.rounds or (3 if args.quick else 8)
    results = common.Results("cycle_cost")
    print(common.context_line())
    with common.bench_database():
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from api.rest import respond
        from bench.agent import LINK, sample_output
        from bench.throughput import make_agents, make_template, prestart

        common.publish("bench-three-steps")
        authorization, rival = (f"Bearer {token}" for token in make_agents(2))
        if args.webhook:
            subscribe_everything()
        template = make_template()
        warm = 30
        prestart(template, (warm + cycles * rounds) // 3 + 10)

        def call(tool: str, arguments: dict) -> dict:
            status, envelope, _headers = respond(authorization, "application/json", tool, json.dumps(arguments).encode())
            if status != 200:
                raise SystemExit(f"{tool} answered {status}: {envelope}")
            return envelope["data"]

        def cycle(item: dict | None = None, statements: dict | None = None) -> None:
            """One cycle; with `item`, claim that item instead of the oldest get_work offers."""
            def timed(tool, arguments):
                if statements is None:
                    return call(tool, arguments)
                with CaptureQueriesContext(connection) as captured:
                    data = call(tool, arguments)
                statements[tool] = [q["sql"] for q in captured.captured_queries]
                return data

            oldest = timed("get_work", {})["items"][0]
            item = item or oldest
            claimed = timed("claim", {"runId": item["runId"], "stepId": item["stepId"], "requestId": str(uuid.uuid4())})
            step = claimed["step"]
            submit = {"token": claimed["token"], "output": sample_output(step.get("output")),
                      "summary": "Benchmark cycle.", "requestId": str(uuid.uuid4())}
            if step.get("evidence"):
                submit["evidence"] = LINK
            timed("submit", submit)

        for _ in range(warm):
            cycle()
        per_round, pg_per_round = [], []
        for _ in range(rounds):
            pg_before = common.cpu_sample([]).postgres
            started = time.process_time()
            for _ in range(cycles):
                cycle()
            per_round.append(1000 * (time.process_time() - started) / cycles)
            pg_per_round.append(1000 * (common.cpu_sample([]).postgres - pg_before) / cycles)
        # The statements of a step in the middle of a run (the first of a fresh run, moving to the
        # second), as tests/test_statement_budget.py pins them.
        run_id = call("start_run", {"process": "bench-three-steps", "inputs": {"reference": "counted", "amount": 1},
                                    "requestId": str(uuid.uuid4())})["run"]["id"]
        listed: dict = {}
        cycle({"runId": run_id, "stepId": "gather"}, listed)
        # A claim lost to another agent (at K=16 about one per cycle): what a refusal costs.
        mine = call("claim", {"runId": run_id, "stepId": "check", "requestId": str(uuid.uuid4())})
        with CaptureQueriesContext(connection) as captured:
            status, lost, _headers = respond(rival, "application/json", "claim", json.dumps(
                {"runId": run_id, "stepId": "check", "requestId": str(uuid.uuid4())}).encode())
        if lost.get("error", {}).get("issues") != ["claimed_by_other"]:
            raise SystemExit(f"the rival's claim was not refused as claimed_by_other: {status} {lost}")
        listed["lost claim"] = [q["sql"] for q in captured.captured_queries]
        del mine
        if args.verbose:
            for tool, texts in listed.items():
                print(f"# {tool}:\n" + "\n".join(f"  {text[:150]}" for text in texts))

    control = ("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT")
    # Counted as tests/test_statement_budget.py pins them: every statement but transaction control.
    counted = {tool: sum(1 for text in texts if not text.startswith(control)) for tool, texts in listed.items()}
    trips = {tool: sum(1 for text in texts if not text.startswith(control[:2])) for tool, texts in listed.items()}

    best, median = min(per_round), sorted(per_round)[len(per_round) // 2]
    pg_best, pg_median = min(pg_per_round), sorted(pg_per_round)[len(pg_per_round) // 2]
    print(f"CPU per cycle in process: min {best:.2f} ms, median {median:.2f} ms over {rounds} rounds of "
          f"{cycles}; PostgreSQL min {pg_best:.2f} ms, median {pg_median:.2f} ms; statements {counted}, with BEGIN and COMMIT {trips}", flush=True)
    results.add("server CPU per step cycle (in process)", round(best, 2), "ms", "≤ 3.5 ms", best <= 3.5,
                note=f"median {median:.2f} ms; {rounds} rounds of {cycles} cycles; no HTTP")
    results.add("round trips of a claim lost to another agent", trips["lost claim"], "",
                note="the token look-up included; " + ", ".join(text.split()[0] for text in listed["lost claim"]))
    results.add("PostgreSQL CPU per step cycle", round(pg_best, 2), "ms",
                note=f"median {pg_median:.2f} ms; every postgres process on the machine, in the same rounds")
    claim_submit = counted["claim"] + counted["submit"]
    budget = 12 + args.webhook  # a subscription that hears of the submit's events: its one outbox INSERT
    results.add("SQL statements per claim + submit" + (" (a webhook subscribed)" if args.webhook else ""),
                claim_submit, "", f"≤ {budget}", claim_submit <= budget,
                note=f"the bearer-token look-up of each call included; {trips['claim'] + trips['submit']} round trips "
                     f"with BEGIN and COMMIT; get_work {counted['get_work']}")
    results.details = {"cpu_ms_per_round": [round(v, 3) for v in per_round],
                       "postgres_cpu_ms_per_round": [round(v, 3) for v in pg_per_round], "statements": listed}
    common.finish(results, args.json)


def subscribe_everything() -> None:
    """A subscription to every kind (a receiver that is never sent to: the bench measures the writes)."""
    from django.conf import settings

    from kernel import clock
    from kernel.organizations import default_organization
    from webhooks.models import KINDS
    from webhooks.services import subscriptions

    settings.WEBHOOK_ALLOW_PRIVATE = True
    subscriptions.add(organization=default_organization(), url="http://127.0.0.1:9/bench", kinds=list(KINDS),
                      now=clock.now())


if __name__ == "__main__":
    main()
