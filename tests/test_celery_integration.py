"""A real Celery worker and beat on real Redis sweep the database (issue 5): a lapsed lease returns to
`ready` with its progress in the handoff, and a wait whose time has passed is continued — by the
worker, not by the test."""

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from runs.models import StepState
from tests.conftest import redis_reachable, redis_url, service_unavailable
from tests.support.live import database_url

pytestmark = [pytest.mark.redis, pytest.mark.live, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[1]

PROCESS = """---
name: timed
description: An agent step, then a wait until a moment in the run's inputs.
inputs:
  at: datetime
steps:
  - id: work
    agent: Do the work.
  - id: hold
    wait_until: inputs.at
  - id: after
    agent: Carry on.
  - id: end
    finish: done
---
Timed.
"""


@pytest.fixture
def worker(tmp_path, settings):
    url = redis_url().rsplit("/", 1)[0] + "/15"  # a database of its own, flushed before use
    if not redis_reachable(url):
        service_unavailable(f"Redis is not reachable at {url}")
    import redis

    redis.Redis.from_url(url).flushdb()
    settings.LEASE_SECONDS = 2
    env = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict), "REDIS_URL": url,
           "CELERY_BROKER_URL": url, "LEASE_SECONDS": "2", "SWEEP_INTERVAL_SECONDS": "0.5"}
    log = tmp_path / "celery.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "agentprocess", "worker", "-B", "--pool", "solo",
         "-s", str(tmp_path / "beat-schedule"), "--loglevel", "INFO"],
        cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    yield log
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def wait_for(condition, log, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    pytest.fail("the worker did not sweep in time; its log:\n" + log.read_text()[-4000:])


def test_worker_and_beat_release_a_lapsed_lease_and_continue_a_wait(worker, publish, agent):
    publish(PROCESS)
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=8)).isoformat()
    run_id = agent.ok("start_run", process="timed", inputs={"at": soon})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="work")["token"]
    agent.ok("renew", token=token, progress="Half of the work is done.")

    work = StepState.objects.filter(run_id=run_id, step_id="work")
    wait_for(lambda: work.get().state == "ready", worker)
    state = work.get()
    assert state.handoff == {"progress": "Half of the work is done."}
    assert state.claimed_by is None

    token = agent.ok("claim", runId=run_id, stepId="work")["token"]
    agent.ok("submit", token=token, output={}, summary="Finished it.")
    hold = StepState.objects.filter(run_id=run_id, step_id="hold")
    assert hold.get().state == "waiting"  # its time has not come yet: only the worker can continue it
    wait_for(lambda: hold.get().state == "done", worker)
    assert StepState.objects.get(run_id=run_id, step_id="after").state == "ready"
    assert "runs.tasks.sweep" in worker.read_text()
