"""Run every benchmark and print one table of figures against the targets of issue 8.

    .venv/bin/python bench/run.py [--quick] [--only throughput,inbox] [--skip limits]

Each benchmark runs as its own process (`bench/<name>.py --json …`, which also runs alone), one
after the other, on its own PostgreSQL database (created and dropped; `test` and `test_*` are never
touched). The figures are also written to bench/out/latest.json. Benchmarks print figures; they do
not fail on a missed target.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402

BENCHMARKS = ("cycle_cost", "throughput", "embedded", "get_work_scale", "sweep_cost", "inbox", "bulk_decide", "audit_export",
              "backup_restore", "limits")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and shorter runs (about 3 minutes)")
    parser.add_argument("--only", help=f"comma-separated subset of {', '.join(BENCHMARKS)}")
    parser.add_argument("--skip", default="", help="comma-separated benchmarks to leave out")
    args = parser.parse_args()
    chosen = [b.strip() for b in args.only.split(",")] if args.only else list(BENCHMARKS)
    chosen = [b for b in chosen if b not in {s.strip() for s in args.skip.split(",")}]
    unknown = set(chosen) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmarks: {', '.join(sorted(unknown))}")
    if not common.postgres_reachable():
        print(f"PostgreSQL is not reachable at {common.PG_HOST}:{common.PG_PORT} (user {common.PG_USER})")
        return 2

    started = time.monotonic()
    env = {**os.environ, "BENCH_KEEP_TEMPLATE": "1", "PYTHONWARNINGS": "ignore::UserWarning"}
    common.ensure_bench_requirements()
    figures, details, failed = [], {}, []
    try:
        with tempfile.TemporaryDirectory() as folder:
            for name in chosen:
                print(f"\n=== {name} " + "=" * (60 - len(name)), flush=True)
                out = Path(folder) / f"{name}.json"
                command = [str(common.PYTHON), str(common.BENCH / f"{name}.py"), "--json", str(out)]
                if args.quick:
                    command.append("--quick")
                t0 = time.monotonic()
                done = subprocess.run(command, cwd=common.ROOT, env=env)
                if done.returncode != 0 or not out.is_file():
                    failed.append(name)
                    figures.append({"benchmark": name, "name": "did not finish", "value": None, "unit": "",
                                    "target": "", "met": None, "note": f"exit status {done.returncode}"})
                    continue
                result = json.loads(out.read_text())
                figures += result["figures"]
                details[name] = {**result["details"], "seconds": round(time.monotonic() - t0, 1)}
    finally:
        common.drop_template()
    elapsed = time.monotonic() - started
    print("\n=== all figures " + "=" * 52)
    print(common.context_line())
    print(common.table(figures))
    met = sum(1 for f in figures if f["met"] is True)
    missed = [f"{f['benchmark']}: {f['name']}" for f in figures if f["met"] is False]
    print(f"\n{met} targets met, {len(missed)} missed" + (f" ({'; '.join(missed)})" if missed else "")
          + f"; {elapsed / 60:.1f} minutes" + (f"; did not finish: {', '.join(failed)}" if failed else ""))
    out_dir = common.BENCH / "out"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "latest.json").write_text(json.dumps(
        {"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "quick": args.quick, "seconds": round(elapsed),
         "figures": figures, "details": details}, indent=2, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
