"""The embedded default: agents against `./dev run`'s set-up (SQLite file, one uvicorn process, no
Redis), over REST, with one and four agents.

    .venv/bin/python bench/embedded.py [--quick] [--agents 1,4] [--duration 15]

A fresh SQLite database in a temporary folder (migrated, bench/processes/bench-three-steps
published), runs pre-started through the start_run service, then K agent processes
(bench/agent.py) loop get_work -> claim -> submit for the window. SQLite takes one writer at a time
(settings: IMMEDIATE transactions, WAL), so this is the figure of a team trying the server on a
laptop, not of a deployment; there is no target, only the figure beside the PostgreSQL ones.
"""

import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench import throughput  # noqa: E402


def prestart(count: int) -> None:
    """`count` runs made by the start_run service (the PostgreSQL benchmarks clone them with COPY)."""
    from django.db import connections

    from kernel import clock
    from kernel.identity import identity_from_api_token
    from kernel.organizations import create_agent, default_organization
    from runs.services.start import start_run

    _agent, token = create_agent(default_organization(), "bench-starter-embedded")
    identity = identity_from_api_token(token)
    for i in range(count):
        start_run(identity=identity, process="bench-three-steps", version=None,
                  inputs={"reference": f"bench-{i}", "amount": i}, mode="live", now=clock.now())
    connections.close_all()


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--agents", default="1,4", help="comma-separated K values (default 1,4)")
    parser.add_argument("--duration", type=float, help="measured seconds per phase (default 15, quick 6)")
    parser.add_argument("--warmup", type=float, help="unmeasured seconds per phase (default 3, quick 2)")
    args = parser.parse_args(argv)
    duration = args.duration or (6.0 if args.quick else 15.0)
    warmup = args.warmup if args.warmup is not None else (2.0 if args.quick else 3.0)
    ks = [int(k) for k in args.agents.split(",")]
    results = common.Results("embedded")
    print(common.context_line())
    with tempfile.TemporaryDirectory(prefix="bench-embedded-") as folder:
        database = {"DATABASE_URL": f"sqlite:///{Path(folder) / 'db.sqlite3'}"}
        common.setup_django(database)
        seconds = common.migrate()
        print(f"# SQLite database in {folder}, migrated in {seconds:.1f} s; one uvicorn process, no Redis "
              f"(./dev run); {duration:.0f} s measured per phase after {warmup:.0f} s warm-up", flush=True)
        common.publish("bench-three-steps")
        tokens = throughput.make_agents(max(ks))
        # Generous: up to 150 cycles/s for every phase's window, three cycles a run.
        prestart(sum(math.ceil(150 * (duration + warmup + 2) / 3) for _ in ks))
        env = common.server_env(database)
        for key in ("REDIS_URL", "CELERY_BROKER_URL", "CACHE_URL"):
            env.pop(key, None)
        server = common.start_server(workers=1, env=env, log_name="embedded")
        phases = []
        try:
            for k in ks:
                phase = throughput.run_phase(server, tokens, transport="rest", agents=k, duration=duration,
                                             warmup=warmup, mcp_era="modern")
                phases.append(phase)
                throughput.print_phase(phase)
        finally:
            server.stop()
    for phase in phases:
        lat, k = phase["latency_ms"], phase["agents"]
        rate = phase["cycles_per_s"]
        results.add(f"SQLite (./dev run) REST K={k} step cycles", rate, "/s",
                    note=f"claim p50/p99 {lat['claim']['p50']}/{lat['claim']['p99']} ms, submit "
                         f"{lat['submit']['p50']}/{lat['submit']['p99']} ms; server CPU "
                         f"{round(1000 * phase['cpu']['workers_cores'] / rate, 1) if rate else '-'} ms per cycle; "
                         f"claims lost per cycle {phase['lost_claims_per_cycle']}")
    results.details = {"duration": duration, "phases": phases}
    common.finish(results, args.json)


if __name__ == "__main__":
    main()
