"""Webhooks are delivered at least once, in order per run, never lost (issue 28, "done when"): a
real Celery worker with beat on Redis, a real receiver that verifies every signature with the
`standardwebhooks` library (tests/support/webhook_receiver.py). The receiver answers 503 for a
while, then does not answer within the timeout, then the worker is SIGKILLed while a delivery is
in flight; when the receiver and a new worker are back, every event arrives, the first arrival of
each in the order of its run, and a duplicate only ever with the same webhook-id.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from django.db import connection

from kernel import clock
from tests.conftest import redis_reachable, service_unavailable
from tests.reliability.test_work_notices_delivery import wait_for
from tests.support.live import ROOT, database_url
from tests.support.webhook_receiver import Receiver
from tests.test_webhooks import SECRET, run_to_the_end, start, team  # noqa: F401 (team: a fixture)
from webhooks.models import KINDS, Attempt, Delivery
from webhooks.services import subscriptions

BROKER = "redis://127.0.0.1:6379/8"
TIMEOUT = 2  # WEBHOOK_TIMEOUT_SECONDS of the worker

pytestmark = [pytest.mark.redis, pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def broker():
    if not redis_reachable(BROKER):
        service_unavailable(f"Redis is not reachable at {BROKER}")
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    yield BROKER
    redis.Redis.from_url(BROKER).flushdb()


def start_worker(workdir, broker: str) -> subprocess.Popen:
    workdir.mkdir(exist_ok=True)
    env = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict), "REDIS_URL": broker,
           "CELERY_BROKER_URL": broker, "CACHE_URL": "locmem", "WEBHOOK_ALLOW_PRIVATE": "true",
           "WEBHOOK_TIMEOUT_SECONDS": str(TIMEOUT), "WEBHOOK_INTERVAL_SECONDS": "0.5",
           "WEBHOOK_SEND_LEASE_SECONDS": "4", "SWEEP_INTERVAL_SECONDS": "60"}
    log = (workdir / "celery.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "agentprocess", "worker", "-B", "--pool", "solo",
         "-s", str(workdir / "beat-schedule"), "--loglevel", "INFO"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def cut_pauses() -> None:
    """Only the retry pauses are cut short (their growth is tested in tests/test_webhooks.py)."""
    Delivery.objects.filter(state=Delivery.PENDING, attempts__gte=1).update(next_attempt_at=clock.now())


def test_every_event_arrives_once_in_order_through_503s_a_timeout_and_a_killed_worker(team, org, broker, tmp_path,
                                                                                         settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on loopback
    with Receiver([SECRET]) as receiver:
        subscriptions.add(organization=org, url=receiver.url, kinds=list(KINDS), secret=SECRET, now=clock.now())
        receiver.behaviour = "503"
        runs = [start(team, f"INV-{n}") for n in (1, 2)]
        for run_id in runs:
            run_to_the_end(team, run_id)
        worker = start_worker(tmp_path / "worker", broker)
        try:
            wait_for(lambda: Attempt.objects.filter(status_code=503).count() >= 2, 60, "503s")
            receiver.behaviour, receiver.slow_seconds = "slow", TIMEOUT + 2
            cut_pauses()
            wait_for(lambda: Attempt.objects.filter(error=f"no answer within {TIMEOUT} s").exists(), 30, "a timeout")
            # A delivery in flight when the worker dies: the receiver holds the answer for a moment.
            receiver.slow_seconds = 1.0
            receiver.arrived.clear()
            cut_pauses()
            assert receiver.arrived.wait(30), "no delivery arrived"
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(10)
            in_flight = receiver.received[-1].headers["webhook-id"]
            assert Delivery.objects.get(webhook_id=in_flight).state == Delivery.PENDING  # not lost: sent again
            receiver.behaviour = "ok"
            worker = start_worker(tmp_path / "worker", broker)
            cut_pauses()
            wait_for(lambda: Delivery.objects.count() == 14
                     and not Delivery.objects.exclude(state=Delivery.DELIVERED).exists(), 90, "every delivery")
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(15)
        received = list(receiver.received)
    assert all(r.verified_with == [0] for r in received), "every request carries a valid signature"
    ids_of_event = {}
    for r in received:
        ids_of_event.setdefault(json.loads(r.body)["id"], set()).add(r.headers["webhook-id"])
    assert len(ids_of_event) == 14 and all(len(ids) == 1 for ids in ids_of_event.values()), \
        "each event under one webhook-id: duplicates only with the same id"
    assert len(received) > 14  # the retries (503s, the timeout, the delivery in flight when the worker died)
    expected = ["run.started", "step.ready", "work_item.waiting", "work_item.decided", "work_item.waiting",
                "work_item.decided", "run.ended"]
    for run_id in runs:
        firsts, seen = [], set()
        for r in received:
            payload = json.loads(r.body)
            if payload["data"]["run"]["id"] == run_id and payload["id"] not in seen:
                seen.add(payload["id"])
                firsts.append(payload["type"])
        assert firsts == expected, run_id
    accepted = [json.loads(r.body)["id"] for r in received if r.answered == 204]
    assert set(accepted) == set(ids_of_event)  # each accepted by the receiver at least once
    assert in_flight in {r.headers["webhook-id"] for r in received if r.answered == 204}
