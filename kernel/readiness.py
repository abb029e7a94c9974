"""Is this server ready to take traffic (issue 22, point 2; /readyz in api/health.py)?

Three checks: the database answers and has every migration of this checkout applied; the broker
(Redis) answers, when one is configured; the file storage takes a small file and lets it be
deleted. Each runs on a thread of its own with a deadline, so a database that hangs (or a pool
waiting DB_POOL_TIMEOUT for a connection) answers "no answer within 3 s" in time for a load
balancer, and a check still running is joined by the next caller rather than started again. The
verdict is kept for a few seconds: a load balancer probing every second costs the database one
look every CACHE_SECONDS per process.

A reason is a short fixed sentence: never an exception's text, which may name hosts or users.
The exception itself goes to the server log.
"""

import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import cache
from urllib.parse import urlsplit

from django.conf import settings

log = logging.getLogger(__name__)

CHECK_SECONDS = 3.0
CACHE_SECONDS = 5.0
OK, FAILING, SKIPPED = "ok", "failing", "skipped"


class NotReady(Exception):
    """A check's short, secret-free reason."""


# --- the checks --------------------------------------------------------------------------------
@cache
def _migrations_on_disk() -> tuple[frozenset, dict]:
    """Every migration of this checkout (a squashed one in place of those it replaces), and what
    each squashed one replaces. Read once: the files do not change under a running process."""
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(None, ignore_no_migrations=True)
    nodes = frozenset(loader.graph.nodes)
    return nodes, {key: tuple(loader.graph.nodes[key].replaces or ()) for key in nodes}


def database() -> str:
    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:
        log.warning("readiness: the database does not answer: %s: %s", type(error).__name__, error)
        raise NotReady("unreachable") from error
    applied = set(MigrationRecorder(connection).applied_migrations())
    nodes, replaces = _migrations_on_disk()
    missing = sorted(f"{app}.{name}" for app, name in nodes if (app, name) not in applied
                     and not (replaces[(app, name)] and all(old in applied for old in replaces[(app, name)])))
    if missing:
        shown = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
        raise NotReady(f"{len(missing)} migration{'s' if len(missing) != 1 else ''} not applied: {shown}")
    return "reachable and migrated"


def broker_url() -> str | None:
    """The Celery broker when it is a server to reach (Redis); None for the embedded folder broker."""
    url = settings.CELERY_BROKER_URL
    return url if urlsplit(url).scheme in ("redis", "rediss") else None


def broker() -> str:
    import redis

    client = redis.Redis.from_url(broker_url(), socket_connect_timeout=CHECK_SECONDS, socket_timeout=CHECK_SECONDS)
    try:
        client.ping()
    except Exception as error:
        log.warning("readiness: the broker does not answer: %s: %s", type(error).__name__, error)
        raise NotReady("unreachable") from error
    finally:
        client.close()
    return "reachable"


def storage() -> str:
    """A tiny file written and deleted through the storage every upload goes through."""
    from django.conf import settings
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    if settings.FILE_STORAGE == "database":
        # The bytes live in the database (filestore/), whose names must sit in an organization's
        # folder: a probe file has none. Reaching its table on the app's connection is the check;
        # that the database takes writes is the `database` check's.
        from filestore.models import StoredFile

        try:
            StoredFile.objects.order_by().values("pk")[:1].exists()
        except Exception as error:
            log.warning("readiness: the file table cannot be read: %s: %s", type(error).__name__, error)
            raise NotReady("cannot reach the file table") from error
        return "in the database"
    try:
        name = default_storage.save(f"readyz/probe-{uuid.uuid4().hex}", ContentFile(b"ready"))
    except Exception as error:
        log.warning("readiness: the file storage refuses a file: %s: %s", type(error).__name__, error)
        raise NotReady("cannot store a file") from error
    try:
        default_storage.delete(name)
    except Exception as error:
        log.warning("readiness: the file storage keeps a file it was asked to delete: %s: %s",
                    type(error).__name__, error)
        raise NotReady("cannot delete a file") from error
    return "writable"


def checks() -> dict[str, Callable[[], str] | str]:
    """The checks of this configuration; a text instead says why one is skipped."""
    return {"database": database, "broker": broker if broker_url() else "no Redis broker configured",
            "storage": storage}


# --- running them ------------------------------------------------------------------------------
_executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="readiness")
_lock = threading.Lock()
_running: dict[str, Future] = {}
_verdict: tuple[float, dict] | None = None


def _on_own_connection(function: Callable):
    """function() on a readiness thread, whose database connection (if it opened one) is closed
    after: with DB_POOL it goes back to the pool."""
    from django.db import connection

    try:
        return function()
    finally:
        connection.close()


def _start(name: str, function: Callable) -> Future:
    """function() on a readiness thread; while one of that name runs, the caller joins it."""
    with _lock:
        running = _running.get(name)
        if running is None or running.done():
            running = _running[name] = _executor.submit(_on_own_connection, function)
        return running


def bounded(name: str, function: Callable, seconds: float = CHECK_SECONDS):
    """function()'s result, from a readiness thread; TimeoutError when it takes longer than
    `seconds` (it finishes on its own, and the next caller joins it)."""
    try:
        return _start(name, function).result(timeout=seconds)
    except FutureTimeout as late:
        raise TimeoutError(f"{name}: no answer within {seconds:g} s") from late


def _result(name: str, future: Future, deadline: float) -> dict:
    try:
        detail = future.result(timeout=max(deadline - time.monotonic(), 0))
    except FutureTimeout:
        return {"status": FAILING, "reason": f"no answer within {CHECK_SECONDS:g} s"}
    except NotReady as refusal:
        return {"status": FAILING, "reason": str(refusal)}
    except Exception:  # noqa: BLE001 - a check that breaks is a failing check, never a 500
        log.exception("readiness: the %s check failed", name)
        return {"status": FAILING, "reason": "the check failed"}
    return {"status": OK, "reason": detail}


def readiness() -> dict:
    """{"status": "ok" | "failing", "checks": {name: {"status", "reason"}}, "failing": [names]}."""
    global _verdict
    with _lock:
        if _verdict is not None and time.monotonic() - _verdict[0] < CACHE_SECONDS:
            return _verdict[1]
    planned = checks()
    futures = {name: _start(name, check) for name, check in planned.items() if not isinstance(check, str)}
    deadline = time.monotonic() + CHECK_SECONDS
    results = {name: ({"status": SKIPPED, "reason": check} if isinstance(check, str)
                      else _result(name, futures[name], deadline)) for name, check in planned.items()}
    failing = [name for name, result in results.items() if result["status"] == FAILING]
    verdict = {"status": FAILING if failing else OK, "checks": results, "failing": failing}
    with _lock:
        _verdict = (time.monotonic(), verdict)
    return verdict


def forget() -> None:
    """Drop the kept verdict (tests; a check of a changed configuration)."""
    global _verdict
    with _lock:
        _verdict = None
        _running.clear()  # a check still running finishes on its own; nobody waits for it
