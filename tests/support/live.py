"""A real server process for tests: `uvicorn agentprocess.asgi:application` on a loopback port,
talking to the pytest-django test database (SQLite file or PostgreSQL).

Use the `live_server_url` fixture (it pulls in `transactional_db`, so rows the test writes are
committed and the server process sees them, and the tables are emptied after each test):

    def test_something(live_server_url, agent): ...

One server process runs per test module (`live_asgi_server`); its log is attached to the report of
every failing test that used it. `start_live_server()` starts one with other settings.
Registered in tests/conftest.py with `pytest_plugins = ["tests.support.live"]`.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from .actors import WRITES

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 60
# The server process refuses other Host headers on /mcp, as a production one would.
DEFAULT_ENV = {"ALLOWED_HOSTS": "127.0.0.1,localhost"}
_FAILED_TEST_LOG = pytest.StashKey()


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen
    log_path: Path

    def log(self, since: int = 0) -> str:
        with self.log_path.open("rb") as log:
            log.seek(since)
            return log.read().decode("utf-8", "replace")

    def log_size(self) -> int:
        return self.log_path.stat().st_size


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL (django-environ syntax) for the database Django is connected to right now;
    inside a test that is the test database."""
    engine, name = settings_dict["ENGINE"], settings_dict["NAME"]
    if engine == "django.db.backends.sqlite3":
        if not name or name == ":memory:" or str(name).startswith("file:"):
            pytest.fail(f"a live server needs a SQLite test database in a file, not {name!r}: set TEST NAME")
        return f"sqlite:///{Path(name).resolve()}"
    if engine.startswith("django.db.backends.postgresql"):
        user = quote(settings_dict.get("USER") or "", safe="")
        password = settings_dict.get("PASSWORD") or ""
        credentials = f"{user}:{quote(password, safe='')}@" if password else (f"{user}@" if user else "")
        host = quote(settings_dict.get("HOST") or "", safe="")  # a socket directory is percent-encoded
        port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
        options = {key: value for key, value in (settings_dict.get("OPTIONS") or {}).items()
                   if isinstance(value, str | int)}
        query = f"?{urlencode(options)}" if options else ""
        return f"postgres://{credentials}{host}{port}/{quote(name, safe='')}{query}"
    pytest.fail(f"no live server support for the database engine {engine}")


def answers(url: str) -> bool:
    """Something serves HTTP there (any status counts)."""
    try:
        urllib.request.urlopen(url, timeout=2)
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


@contextmanager
def serving(process: subprocess.Popen, probe_url: str, what: str, log: Callable[[], str],
            startup_seconds: float = STARTUP_SECONDS) -> Iterator[None]:
    """The block runs once `probe_url` answers; the process is stopped when it ends (terminated,
    killed if it lingers). A process that exits or never answers fails with its log."""
    try:
        deadline = time.monotonic() + startup_seconds
        while not answers(probe_url):
            if process.poll() is not None:
                raise RuntimeError(f"{what} exited with {process.returncode}:\n{log()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not answer within {startup_seconds} s:\n{log()}")
            time.sleep(0.1)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def start_live_server(db_url: str, workdir: Path, env: dict[str, str] | None = None,
                      workers: int = 1, port: int = 0) -> Iterator[LiveServer]:
    """Run the ASGI app in a uvicorn subprocess (`workers` worker processes) until the block ends;
    `port` 0 picks a free one (pass a server's port again to restart it where its clients expect it)."""
    # Bind the port here and hand the socket over (--fd): no window for another process to take it.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # uvicorn reads an --fd socket as AF_UNIX and so never sets TCP_NODELAY on what it accepts;
    # accepted sockets inherit it from here (without it every keep-alive answer came ~40 ms late).
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    log_path = workdir / "server.log"
    process_env = {
        **os.environ,
        **DEFAULT_ENV,
        "DATABASE_URL": db_url,
        "PUBLIC_BASE_URL": url,
        "MEDIA_ROOT": str(workdir / "media"),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "agentprocess.asgi:application",
             "--fd", str(listener.fileno()), "--workers", str(workers), "--log-level", "info"],
            cwd=ROOT, env=process_env, stdout=log, stderr=subprocess.STDOUT, pass_fds=(listener.fileno(),),
        )
    listener.close()
    server = LiveServer(url=url, process=process, log_path=log_path)
    # /mcp without a token: a quick 401, no database needed.
    with serving(process, url + "/mcp", "the live server", server.log):
        yield server


def rest(base: str, tool: str, bearer: str, /, **arguments) -> dict:
    """One tool call over HTTP to a live server (a fresh requestId for a write); the envelope's
    data, asserting the call succeeded."""
    if tool in WRITES:
        arguments["requestId"] = str(uuid.uuid4())
    request = urllib.request.Request(f"{base}/api/v1/tools/{tool}", data=json.dumps(arguments).encode(),
                                     method="POST", headers={"Content-Type": "application/json",
                                                             "Authorization": f"Bearer {bearer}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            envelope = json.loads(response.read())
    except urllib.error.HTTPError as refused:
        envelope = json.loads(refused.read())
    assert envelope["ok"], (base, tool, envelope)
    return envelope["data"]


@pytest.fixture(scope="module")
def live_asgi_server(django_db_setup, tmp_path_factory) -> Iterator[LiveServer]:
    """One server process for the module, on the test database pytest-django created."""
    from django.db import connection

    with start_live_server(database_url(connection.settings_dict), tmp_path_factory.mktemp("live")) as server:
        yield server


@pytest.fixture
def live_server_url(transactional_db, live_asgi_server, request) -> str:
    """The base URL of the module's live server (no trailing slash)."""
    if live_asgi_server.process.poll() is not None:
        pytest.fail(f"the live server has exited:\n{live_asgi_server.log()}")
    request.node.stash[_FAILED_TEST_LOG] = (live_asgi_server, live_asgi_server.log_size())
    return live_asgi_server.url


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test using `live_asgi_server` directly: its log from here on is the test's."""
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, LiveServer) and _FAILED_TEST_LOG not in item.stash:
            item.stash[_FAILED_TEST_LOG] = (value, value.log_size())
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach what the server logged during a failing test to that test's report."""
    report = yield
    entry = item.stash.get(_FAILED_TEST_LOG, None)
    if entry is not None and report.failed:
        server, since = entry
        report.sections.append((f"live server log ({call.when})", server.log(since) or "(empty)"))
    return report
