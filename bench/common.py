"""Shared plumbing of the benchmarks: the bench database, Django set-up, a uvicorn server, CPU
accounting from /proc, percentiles and the figures table.

Benchmarks print figures; they never assert timings. Every benchmark uses its own PostgreSQL
database (default `agentprocess_bench`), created at the start and dropped at the end; the
databases `test` and `test_*` (other sessions' test runs) are refused by name.
"""

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PYTHON = ROOT / ".venv" / "bin" / "python"
UVICORN = ROOT / ".venv" / "bin" / "uvicorn"
GRANIAN = ROOT / "var" / "bench-site" / "bin" / "granian"  # bench/requirements.txt
# The ASGI server the benchmarks start: uvicorn (the README's default) or granian (BENCH_SERVER=granian).
SERVERS = ("uvicorn", "granian")
PROCESSES = BENCH / "processes"

PG_HOST = os.environ.get("BENCH_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("BENCH_PG_PORT", "5432"))
PG_USER = os.environ.get("BENCH_PG_USER", "postgres")
DB_NAME = os.environ.get("BENCH_DB", "agentprocess_bench")

# The server set-up the throughput and floor benchmarks use (flags override; see README "Benchmarks").
# One worker per core, as deployed (deploy/agentprocess.env WEB_WORKERS): on this 2-core machine at
# K=16, 2 workers did 234 cycles/s with p99 claim/submit 42/49 ms, 3 did 221 with 75/85 ms and 4 did
# 187 (each worker already serves many calls at once on its threads; more only contend for the cores).
DEFAULT_WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))
POOL_ENV = {"DB_POOL": "1", "DB_POOL_SIZE": os.environ.get("BENCH_DB_POOL_SIZE", "4")}
NO_POOL_ENV = {"DB_POOL": "0"}
# Tools the bench needs beyond requirements.txt (bench/requirements.txt), installed here rather than
# into .venv so the project's environment stays exactly what requirements.txt makes it.
BENCH_SITE = ROOT / "var" / "bench-site"


# ----------------------------------------------------------------------------- database


def _check_name(name: str) -> str:
    lowered = name.lower()
    if lowered in ("test", "postgres", "template0", "template1") or lowered.startswith("test_"):
        raise SystemExit(f"refusing to use database {name!r}: it belongs to others (test runs, the server)")
    return name


def database_url(name: str = DB_NAME) -> str:
    return f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{_check_name(name)}"


def _admin_connection():
    import psycopg

    return psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True,
                           connect_timeout=5)


def create_database(name: str = DB_NAME) -> None:
    _check_name(name)
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')


def drop_database(name: str = DB_NAME) -> None:
    _check_name(name)
    with contextlib.suppress(Exception), _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def postgres_reachable() -> bool:
    try:
        _admin_connection().close()
        return True
    except Exception:  # noqa: BLE001
        return False


def server_env(extra: dict | None = None, settings_module: str = "agentprocess.settings") -> dict:
    """The environment of a bench server process or of Django in this process."""
    env = dict(os.environ)
    env.update({
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": settings_module,
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "EMAIL_URL": "memorymail://",
        "ALLOWED_HOSTS": "*",
        # BENCH_PYTHONPATH: extra import paths for the servers only (e.g. a folder holding
        # psycopg_pool, to measure DB_POOL=1 without installing into .venv).
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("BENCH_PYTHONPATH", ""),
                                                    str(BENCH_SITE) if BENCH_SITE.is_dir() else ""])),
    })
    env.update(extra or {})
    return env


def setup_django(extra: dict | None = None) -> None:
    """Django in this process, on the bench database (created and migrated by the caller)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.update(server_env(extra))
    # The harness itself opens plain connections: a pool would keep sessions on the bench database
    # open, and PostgreSQL refuses to copy or drop a database that is in use.
    os.environ["DB_POOL"] = "0"
    import warnings

    warnings.filterwarnings("ignore", message="No directory at")  # WhiteNoise: no collectstatic here
    import django

    django.setup()


def migrate() -> float:
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    return time.perf_counter() - started


TEMPLATE_NAME = f"{DB_NAME}_template"


def _schema_key() -> str:
    """What the migrated schema depends on: our migrations and the pinned requirements."""
    import hashlib

    digest = hashlib.sha256((ROOT / "requirements.txt").read_bytes())
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def _template_current(admin) -> bool:
    row = admin.execute(
        "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", [TEMPLATE_NAME]
    ).fetchone()
    return bool(row) and row[0] == _schema_key()


def drop_template() -> None:
    drop_database(TEMPLATE_NAME)


@contextlib.contextmanager
def bench_database(extra_env: dict | None = None, keep: bool = False):
    """Create the bench database, set Django up on it (migrated); drop it at the end.

    Migrating takes ~20 s on this machine, so the first benchmark keeps a migrated copy as
    `<db>_template` (keyed by a hash of the migrations) and the next ones clone it. bench/run.py
    drops the template at the end; a benchmark run alone drops it too (BENCH_KEEP_TEMPLATE=1 keeps it).
    """
    if not postgres_reachable():
        raise SystemExit(f"PostgreSQL is not reachable at {PG_HOST}:{PG_PORT} (user {PG_USER})")
    _check_name(TEMPLATE_NAME)
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        cloned = _template_current(admin)
        if cloned:
            admin.execute(f'CREATE DATABASE "{DB_NAME}" TEMPLATE "{TEMPLATE_NAME}"')
        else:
            admin.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE_NAME}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{DB_NAME}"')
    try:
        setup_django(extra_env)
        if cloned:
            print(f"# bench database {DB_NAME} cloned from {TEMPLATE_NAME}", flush=True)
        else:
            seconds = migrate()
            print(f"# bench database {DB_NAME} created and migrated in {seconds:.1f} s", flush=True)
            from django.db import connections

            connections.close_all()
            with _admin_connection() as admin:
                admin.execute(f'CREATE DATABASE "{TEMPLATE_NAME}" TEMPLATE "{DB_NAME}"')
                admin.execute(f"COMMENT ON DATABASE \"{TEMPLATE_NAME}\" IS '{_schema_key()}'")
        yield
    finally:
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        if keep or os.environ.get("BENCH_KEEP_DB"):
            print(f"# bench database {DB_NAME} kept (BENCH_KEEP_DB)")
        else:
            drop_database()
        if not os.environ.get("BENCH_KEEP_TEMPLATE"):
            drop_template()


def publish(folder: str, *bind: str) -> int:
    """`manage.py import_process bench/processes/<folder> --publish` in process; the version's pk."""
    import io

    from django.core.management import call_command

    from processes.models import Process

    out = io.StringIO()
    args = [str(PROCESSES / folder), "--publish"]
    for binding in bind:
        args += ["--bind", binding]
    call_command("import_process", *args, stdout=out)
    return Process.objects.get(name=folder).latest_version_id


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


# ----------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    process: subprocess.Popen
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    kind: str = "uvicorn"

    def worker_pids(self) -> list[int]:
        """The server's worker processes (for uvicorn, not multiprocessing's resource tracker)."""
        if self.kind == "granian":  # granian's workers are its direct children
            return children(self.process.pid) or [self.process.pid]
        pids = []
        for pid in children(self.process.pid):
            with contextlib.suppress(OSError):
                if b"spawn_main" in (Path("/proc") / str(pid) / "cmdline").read_bytes():
                    pids.append(pid)
        return pids or [self.process.pid]  # --workers 1 serves in the main process

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def server_kind() -> str:
    kind = os.environ.get("BENCH_SERVER", "uvicorn")
    if kind not in SERVERS:
        raise SystemExit(f"BENCH_SERVER must be one of {', '.join(SERVERS)}, not {kind!r}")
    return kind


def start_server(*, workers: int, env: dict, log_name: str = "server",
                 app: str = "agentprocess.asgi:application", port: int | None = None) -> Server:
    """`uvicorn agentprocess.asgi:application --workers N` on a free loopback port, as deployed
    (README "Deploying"), access log off (--log-level warning as `./dev run`)."""
    port = port or free_port()
    log_path = ROOT / "var" / f"bench-{log_name}.log"
    log_path.parent.mkdir(exist_ok=True)
    log = log_path.open("wb")
    kind = server_kind()
    if kind == "granian" and not (ensure_bench_requirements() and GRANIAN.is_file()):
        raise SystemExit("BENCH_SERVER=granian needs granian (bench/requirements.txt), which could not be installed")
    if kind == "granian":
        command = [str(GRANIAN), "--interface", "asgi", app, "--host", "127.0.0.1", "--port", str(port),
                   "--workers", str(workers), "--log-level", "warning", "--no-access-log"]
    else:
        command = [str(UVICORN), app, "--host", "127.0.0.1", "--port", str(port),
                   "--workers", str(workers), "--log-level", "warning", "--no-access-log"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    server = Server(process, port, log_path, kind)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited; see {log_path}:\n{log_path.read_text()[-3000:]}")
        if _answers(server.url) and len(server.worker_pids()) >= workers:
            # Every worker must have imported Django before the clock starts.
            time.sleep(1.0)
            return server
        time.sleep(0.2)
    server.stop()
    raise SystemExit(f"the server did not answer within 60 s; see {log_path}")


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url + "/api/v1/tools/describe", data=b"{}", timeout=2)
    except urllib.error.HTTPError:
        return True  # 401 without a token: Django answers
    except OSError:
        return False
    return True


# ----------------------------------------------------------------------------- /proc


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return sorted(found)


def _stat_fields(pid: int) -> list[str]:
    return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int, with_children: bool = False) -> float:
    """utime + stime (and the reaped children's, when asked) of one process, in seconds."""
    try:
        fields = _stat_fields(pid)
    except OSError:
        return 0.0
    # After the ")": state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    ticks = int(fields[11]) + int(fields[12])
    if with_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / CLOCK_TICKS


def rss_mb(pid: int) -> float:
    for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def postgres_pids() -> tuple[int | None, list[int]]:
    """(postmaster, every postgres process) on this machine. The postmaster is the postgres
    process whose parent is not one; exited backends' CPU is in its reaped-children time."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if (entry / "comm").read_text().strip() in ("postgres", "postmaster"):
                    parents[int(entry.name)] = int(_stat_fields(int(entry.name))[1])
    roots = [pid for pid, parent in parents.items() if parent not in parents]
    return (roots[0] if len(roots) == 1 else None), sorted(parents)


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine from /proc/stat."""
    parts = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + parts[4]
    total = sum(parts[:8])
    return (total - idle) / CLOCK_TICKS, total / CLOCK_TICKS


@dataclass
class CpuSample:
    workers: dict[int, float]
    postgres: float
    machine_busy: float
    machine_total: float


def cpu_sample(worker_pids: list[int]) -> CpuSample:
    postmaster, pids = postgres_pids()
    pg = sum(cpu_seconds(pid) for pid in pids if pid != postmaster)
    if postmaster:
        pg += cpu_seconds(postmaster, with_children=True)
    busy, total = machine_cpu()
    return CpuSample({pid: cpu_seconds(pid) for pid in worker_pids}, pg, busy, total)


def cpu_delta(before: CpuSample, after: CpuSample, seconds: float) -> dict:
    """CPU used over the window, in cores (1.0 = one core busy the whole time)."""
    workers = {pid: (after.workers.get(pid, 0) - before.workers.get(pid, 0)) / seconds for pid in after.workers}
    wall = after.machine_total - before.machine_total
    return {
        "workers_cores": round(sum(workers.values()), 2),
        "per_worker_cores": [round(v, 2) for v in workers.values()],
        # Every PostgreSQL process on the machine: other sessions' test databases count here too.
        "postgres_cores": round((after.postgres - before.postgres) / seconds, 2),
        "machine_busy_pct": round(100 * (after.machine_busy - before.machine_busy) / wall, 1) if wall else None,
        "machine_busy_cores": round((after.machine_busy - before.machine_busy) / seconds, 2),
    }


def others_cores(cpu: dict) -> float:
    """CPU the machine spent on anything but the parties measured (other sessions' work)."""
    ours = cpu.get("workers_cores", 0) + cpu.get("postgres_cores", 0) + cpu.get("agents_cores", 0)
    return round(max(0.0, cpu["machine_busy_cores"] - ours), 2)


# ----------------------------------------------------------------------------- statistics


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


def summary_ms(values: list[float]) -> dict:
    return {"n": len(values), "p50": ms(percentile(values, 50)), "p95": ms(percentile(values, 95)),
            "p99": ms(percentile(values, 99)), "max": ms(max(values) if values else None)}


# ----------------------------------------------------------------------------- figures


@dataclass
class Figure:
    benchmark: str
    name: str
    value: float | None
    unit: str = ""
    target: str = ""
    met: bool | None = None
    note: str = ""


@dataclass
class Results:
    benchmark: str
    figures: list[Figure] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def add(self, name, value, unit="", target="", met=None, note="") -> Figure:
        figure = Figure(self.benchmark, name, value, unit, target, met, note)
        self.figures.append(figure)
        return figure

    def to_json(self) -> dict:
        return {"benchmark": self.benchmark, "figures": [asdict(f) for f in self.figures], "details": self.details}


def fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    return str(value)


def table(figures: list[dict]) -> str:
    """The figures as a fixed-width table: benchmark, figure, value, unit, target, verdict."""
    rows = [("benchmark", "figure", "value", "unit", "target", "", "note")]
    for f in figures:
        verdict = {True: "met", False: "MISSED", None: ""}[f["met"]]
        rows.append((f["benchmark"], f["name"], fmt(f["value"]), f["unit"], f["target"], verdict, f["note"]))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [str(cell).rjust(widths[i]) if i == 2 else str(cell).ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def ensure_bench_requirements() -> bool:
    """Install bench/requirements.txt into var/bench-site (once per version of that file), without
    dependencies: they are in .venv already, and a second copy on the path would shadow it.
    False when that fails (offline): the bench then runs without DB_POOL and without --profile."""
    import hashlib

    wanted = hashlib.sha256((BENCH / "requirements.txt").read_bytes()).hexdigest()
    stamp = BENCH_SITE / ".requirements.sha256"
    if stamp.is_file() and stamp.read_text() == wanted:
        return True
    done = subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade",
                           "--no-deps",
                           "--target", str(BENCH_SITE), "-r", str(BENCH / "requirements.txt")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(f"# could not install bench/requirements.txt into {BENCH_SITE}:\n{done.stderr[-1500:]}", flush=True)
        return False
    stamp.write_text(wanted)
    return True


def default_db_env() -> dict:
    """The server's database settings: Django's connection pool (DB_POOL=1, the application's
    default; psycopg_pool comes with requirements.txt)."""
    return dict(POOL_ENV)


def py_spy() -> str | None:
    path = BENCH_SITE / "bin" / "py-spy"
    return str(path) if path.is_file() else None


def parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="smaller sizes and shorter runs (a smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON (used by bench/run.py)")
    return parser


def finish(results: Results, json_path: str | None) -> None:
    figures = [asdict(f) for f in results.figures]
    print()
    print(table(figures))
    if json_path:
        Path(json_path).write_text(json.dumps(results.to_json(), indent=2, default=str))


def context_line() -> str:
    load = os.getloadavg()
    return (f"# machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
            f"(other sessions' work on this machine shows here and skews figures)")
