"""Limits: the stack's floor, measured by the same harness on the same server set-up, and pgbench on
the same PostgreSQL, with the ratios of our figures to them.

    .venv/bin/python bench/limits.py [--quick] [--agents 16] [--workers 2] [--duration 15]

One server, `uvicorn bench.floor:application --workers N`: the application plus two routes served
like the REST tools (bench/floor.py), with the same database settings as bench/throughput.py. Back to back, with K agent processes (bench/agent.py):

1. our step cycles: get_work -> claim -> submit over REST (as bench/throughput.py);
2. the floor: POST /bench/floor, authenticated by the same bearer look-up, then one indexed read and
   one write in a transaction (an idempotency-record look-up and insert);
3. no-op: POST /bench/noop, no authentication and no database (uvicorn + the ASGI route + one thread hop).

Target: our step cycles per second ≥ 50% of (floor requests per second ÷ 3), a cycle being three
calls. Then pgbench into its own database (`<bench db>_pgbench`, created and dropped here):
initialised at scale --scale, a select-only run and a TPC-B-like run with K clients, for context.
"""

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench import throughput  # noqa: E402

PGBENCH_DB = f"{common.DB_NAME}_pgbench"


def pgbench(scale: int, clients: int, seconds: int) -> dict:
    tool = shutil.which("pgbench")
    if tool is None:
        return {"error": "pgbench is not installed (apt-get install postgresql-client)"}
    common.create_database(PGBENCH_DB)
    try:
        base = [tool, "-h", common.PG_HOST, "-p", str(common.PG_PORT), "-U", common.PG_USER]
        started = time.perf_counter()
        subprocess.run([*base, "-i", "-q", "-s", str(scale), PGBENCH_DB], check=True, capture_output=True)
        init_seconds = time.perf_counter() - started
        out = {"scale": scale, "clients": clients, "seconds": seconds, "init_seconds": round(init_seconds, 1)}
        threads = min(clients, 2)
        for name, extra in (("select_only", ["-S"]), ("tpcb_like", [])):
            done = subprocess.run([*base, "-n", "-c", str(clients), "-j", str(threads), "-T", str(seconds), *extra,
                                   PGBENCH_DB], check=True, capture_output=True, text=True)
            tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", done.stdout)
            latency = re.search(r"latency average = ([\d.]+) ms", done.stdout)
            out[name] = {"tps": float(tps.group(1)) if tps else None,
                         "latency_ms": float(latency.group(1)) if latency else None}
            print(f"pgbench {name}: {out[name]['tps']} tps, latency average {out[name]['latency_ms']} ms "
                  f"({clients} clients, {threads} threads, {seconds} s, scale {scale})", flush=True)
        return out
    finally:
        common.drop_database(PGBENCH_DB)


def floor_phase(server, tokens, *, path: str, agents: int, duration: float, warmup: float) -> dict:
    outputs, cpu = throughput.run_agents(server, tokens, transport=path, agents=agents, duration=duration,
                                         warmup=warmup)
    latencies = [v for o in outputs for v in o["latencies"].get("request", [])]
    ok = sum(o["counts"].get("requests", 0) for o in outputs)
    failures = {k: v for o in outputs for k, v in o["counts"].items() if k != "requests"}
    return {"path": path, "agents": agents, "requests_per_s": round(ok / duration, 1), "failures": failures,
            "latency_ms": common.summary_ms(latencies), "cpu": cpu}


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--workers", type=int, default=common.DEFAULT_WORKERS)
    parser.add_argument("--duration", type=float, help="measured seconds per phase (default 15, quick 6)")
    parser.add_argument("--warmup", type=float, help="unmeasured seconds per phase (default 3, quick 2)")
    parser.add_argument("--db-env", help="server database settings (default: as bench/throughput.py)")
    parser.add_argument("--scale", type=int, help="pgbench scale factor (default 16, quick 4)")
    parser.add_argument("--pgbench-seconds", type=int, help="seconds per pgbench run (default 10, quick 5)")
    args = parser.parse_args(argv)
    duration = args.duration or (6.0 if args.quick else 15.0)
    warmup = args.warmup if args.warmup is not None else (2.0 if args.quick else 3.0)
    db_env = throughput.parse_env(args.db_env) if args.db_env else common.default_db_env()
    k = args.agents
    results = common.Results("limits")
    print(common.context_line())
    print(f"# server: uvicorn bench.floor:application (the application plus the floor routes) --workers "
          f"{args.workers}; {db_env}; "
          f"K={k}; {duration:.0f} s measured per phase after {warmup:.0f} s warm-up", flush=True)
    with common.bench_database():
        common.publish("bench-three-steps")
        tokens = throughput.make_agents(k)
        template = throughput.make_template()
        throughput.prestart(template, max(300, int(350 * (duration + warmup + 2) / 3)))
        server = common.start_server(workers=args.workers, env=common.server_env(db_env), log_name="limits",
                                     app="bench.floor:application")
        try:
            ours = throughput.run_phase(server, tokens, transport="rest", agents=k, duration=duration,
                                        warmup=warmup, mcp_era="modern")
            throughput.print_phase(ours)
            floors = {}
            for path in ("floor", "noop"):
                floors[path] = floor_phase(server, tokens, path=path, agents=k, duration=duration, warmup=warmup)
                phase = floors[path]
                cpu = phase["cpu"]
                print(f"{path:>5} K={k}: {phase['requests_per_s']:.0f} requests/s, p50/p95/p99 "
                      f"{phase['latency_ms']['p50']}/{phase['latency_ms']['p95']}/{phase['latency_ms']['p99']} ms; "
                      f"cpu cores: workers {cpu['workers_cores']}, postgres {cpu['postgres_cores']}, agents "
                      f"{cpu['agents_cores']}, other processes {cpu['others_cores']}"
                      + (f"; failures {phase['failures']}" if phase["failures"] else ""), flush=True)
        finally:
            server.stop()
    bench = pgbench(args.scale or (4 if args.quick else 16), k, args.pgbench_seconds or (5 if args.quick else 10))

    floor, noop = floors["floor"], floors["noop"]
    results.add(f"our step cycles, REST K={k}", ours["cycles_per_s"], "/s", note="same server as the floor")
    results.add(f"floor: auth + 1 read + 1 write, K={k}", floor["requests_per_s"], "req/s",
                note=f"p50 {floor['latency_ms']['p50']} ms, p99 {floor['latency_ms']['p99']} ms")
    results.add(f"no-op request (no auth, no DB), K={k}", noop["requests_per_s"], "req/s",
                note=f"p50 {noop['latency_ms']['p50']} ms, p99 {noop['latency_ms']['p99']} ms")
    if floor["requests_per_s"]:
        share = 100 * ours["cycles_per_s"] / (floor["requests_per_s"] / 3)
        results.add("cycles/s ÷ (floor req/s ÷ 3)", round(share, 1), "%", "≥ 50%", share >= 50)
    if noop["requests_per_s"]:
        results.add("cycles/s ÷ (no-op req/s ÷ 3)", round(100 * ours["cycles_per_s"] / (noop["requests_per_s"] / 3), 1),
                    "%", note="the framework alone")
    for name in ("select_only", "tpcb_like"):
        entry = bench.get(name) or {}
        if entry.get("tps"):
            results.add(f"pgbench {name.replace('_', '-')}, {k} clients", entry["tps"], "tps",
                        note=f"latency avg {entry['latency_ms']} ms; our cycles/s are "
                             f"{100 * ours['cycles_per_s'] / entry['tps']:.1f}% of it")
    if "error" in bench:
        results.add("pgbench", None, note=bench["error"])
    results.details = {"ours": ours, "floor": floor, "noop": noop, "pgbench": bench, "workers": args.workers,
                       "db_env": db_env}
    common.finish(results, args.json)


if __name__ == "__main__":
    main()
