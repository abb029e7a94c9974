"""PostgreSQL connection pool: one dead connection sweeps the pool of the others (issue 13).

Django gives psycopg_pool's `check` to the pool (CONN_HEALTH_CHECKS), so a connection is tested as
it leaves the pool. After PostgreSQL restarts, though, every idle connection is dead, and the pool
tests them one at a time with a growing pause between failures (1, 2, 4 … s: its guard against a
busy loop while the database is down): a worker with 16 idle connections failed requests for
30 seconds after the database was back (measured). So the first failed check also tests every idle
connection at once, in the background (psycopg_pool's own `check()`), and the pool refills with
fresh connections while the request that found the dead one waits its first pause.
"""

import logging
import threading

from psycopg_pool import ConnectionPool

log = logging.getLogger(__name__)
_installed: set[int] = set()
_lock = threading.Lock()


def sweeping_check(pool: ConnectionPool):
    sweeping = threading.Event()

    def sweep() -> None:
        try:
            pool.check()
        except Exception:  # noqa: BLE001 - a failed sweep leaves the pool's own check to do the work
            log.warning("sweeping the connection pool failed", exc_info=True)
        finally:
            sweeping.clear()

    def check(connection) -> None:
        try:
            ConnectionPool.check_connection(connection)
        except Exception:
            if not sweeping.is_set():
                sweeping.set()
                log.warning("a pooled connection was dead: testing every idle connection")
                threading.Thread(target=sweep, name="pool-sweep", daemon=True).start()
            raise

    return check


def install(pool: ConnectionPool | None) -> None:
    """Give the pool the sweeping check (once per pool)."""
    if pool is None or getattr(pool, "_check", None) is None:
        return  # no pool, or health checks are off
    with _lock:
        if id(pool) in _installed:
            return
        pool._check = sweeping_check(pool)  # psycopg_pool keeps the check here (pool.py, 3.2+)
        _installed.add(id(pool))


def on_connection_created(sender, connection, **kwargs) -> None:
    if connection.vendor == "postgresql":
        install(connection.pool)
