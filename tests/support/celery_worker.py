"""A real Celery worker with beat (`celery worker -B`) on real Redis against the test database, for
the tests that need the sweeps run by beat and not by the test (issue 5; issue 27's alerts)."""

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from tests.conftest import redis_reachable, service_unavailable

from .live import database_url

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def celery_worker(tmp_path: Path, url: str, **env):
    """Start a worker with beat on the Redis database `url` (flushed first); yields its log's path.
    `env`: settings for the worker (e.g. SWEEP_INTERVAL_SECONDS="0.5")."""
    if not redis_reachable(url):
        service_unavailable(f"Redis is not reachable at {url}")
    import redis

    redis.Redis.from_url(url).flushdb()
    environment = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict), "REDIS_URL": url,
                   "CELERY_BROKER_URL": url, **env}
    log = tmp_path / "celery.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "agentprocess", "worker", "-B", "--pool", "solo",
         "-s", str(tmp_path / "beat-schedule"), "--loglevel", "INFO"],
        cwd=ROOT, env=environment, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    try:
        yield log
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def wait_for(condition, log: Path, seconds: float = 20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    pytest.fail("the worker did not sweep in time; its log:\n" + log.read_text()[-4000:])
