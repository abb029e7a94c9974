"""A real Celery worker and beat on real Redis sweep the database (issue 5): a lapsed lease returns to
`ready` with its progress in the handoff, and a wait whose time has passed is continued — by the
worker, not by the test."""

import datetime as dt
import time

import pytest

from runs.models import StepState
from tests.conftest import redis_url
from tests.support.celery_worker import celery_worker, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.live, pytest.mark.django_db(transaction=True)]

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
    settings.LEASE_SECONDS = 2
    # A Redis database of its own, flushed before use.
    with celery_worker(tmp_path, redis_url().rsplit("/", 1)[0] + "/15", LEASE_SECONDS="2",
                       SWEEP_INTERVAL_SECONDS="0.5") as log:
        yield log


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
