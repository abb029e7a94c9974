"""Audit export: how fast `audit_export` streams the log, and that its memory does not grow with it.

    .venv/bin/python bench/audit_export.py [--quick] [--events 100000]

Fills the audit log with N events (shaped like a run's: a small JSON payload each, one run per
ten events) and streams it through the command's own code path (kernel.audit.events -> the JSONL
and CSV writers) to /dev/null: events per second, and the peak Python memory traced during the
export of N/10 and of N events (tracemalloc) with their ratio — about 1 when memory is constant.
"""

import datetime as dt
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402

BATCH = 5000


def fill(organization_id: int, count: int, start: int) -> None:
    from kernel import audit
    from kernel.models import AuditEvent, EventKind

    at = dt.datetime(2026, 10, 6, tzinfo=dt.UTC)
    kinds = [EventKind.STEP_READY, EventKind.STEP_CLAIMED, EventKind.SUBMISSION_ACCEPTED, EventKind.DECIDED]
    for first in range(start, start + count, BATCH):
        AuditEvent.objects.bulk_create([
            audit.event(kinds[n % 4], organization_id=organization_id, actor=audit.SERVER,
                        at=at + dt.timedelta(seconds=n), run_id=f"r_bench{n // 10:08d}", step_id="screen",
                        data={"note": "Checked both lists; no hits.", "n": n})
            for n in range(first, min(first + BATCH, start + count))])


def _stream(fmt: str, limit: int) -> int:
    from kernel import audit

    until = dt.datetime(2026, 10, 6, tzinfo=dt.UTC) + dt.timedelta(seconds=limit)
    lines, _ = audit.FORMATS[fmt]
    count = 0
    with open("/dev/null", "w") as sink:
        for line in lines(audit.events(until=until)):
            sink.write(line)
            count += 1
    return count


def export(fmt: str, limit: int) -> tuple[int, float, int]:
    """(lines, seconds, peak traced bytes) of streaming the first `limit` events: timed without
    tracemalloc (it slows Python down several times), then traced in a second pass."""
    started = time.perf_counter()
    count = _stream(fmt, limit)
    seconds = time.perf_counter() - started
    tracemalloc.start()
    _stream(fmt, limit)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return count, seconds, peak


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, help="events in the log (default 100000, quick 20000)")
    args = parser.parse_args(argv)
    total = args.events or (20_000 if args.quick else 100_000)
    results = common.Results("audit_export")
    print(common.context_line())
    with common.bench_database():
        from kernel.organizations import default_organization

        organization = default_organization()
        started = time.perf_counter()
        fill(organization.id, total, 0)
        print(f"# {total:,} events written in {time.perf_counter() - started:.1f} s", flush=True)
        common.analyze()
        small_n = total // 10
        rows = {}
        for fmt in ("jsonl", "csv"):
            small = export(fmt, small_n)
            large = export(fmt, total)
            rows[fmt] = (small, large)
            print(f"{fmt}: {large[0]:,} lines in {large[1]:.2f} s ({large[0] / large[1]:,.0f}/s); peak memory "
                  f"{small[2] / 1e6:.2f} MB at {small_n:,} events, {large[2] / 1e6:.2f} MB at {total:,}", flush=True)
    for fmt, (small, large) in rows.items():
        results.add(f"audit_export --format {fmt}, {total:,} events", round(large[0] / large[1]), "events/s",
                    note=f"{large[1]:.2f} s")
        ratio = large[2] / small[2]
        results.add(f"audit_export {fmt} peak memory, {total:,} / {small_n:,} events", round(ratio, 2), "×",
                    "≈ 1 (constant)", ratio < 1.5,
                    note=f"{large[2] / 1e6:.2f} MB vs {small[2] / 1e6:.2f} MB (tracemalloc peak)")
    common.finish(results, args.json)


if __name__ == "__main__":
    main()
