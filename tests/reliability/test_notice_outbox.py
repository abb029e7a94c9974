"""Overdue notices are never lost (issue 13, point 4): the notice is an outbox row written in the
crossing's transaction, sent and marked by the worker, retried with a pause when the mail server
is down, and sent again when a worker died between its commit and its mail.

Spec §2.2 `due`: "When it passes the server marks the step overdue and notifies the assignee and
the organization's operators."
"""

import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from django.db import connection, transaction

from kernel import clock
from kernel.models import AuditEvent
from runs.models import Notice
from runs.services.sweep import sweep, sweep_dues
from tests.conftest import redis_reachable, redis_url, service_unavailable
from tests.support.live import database_url
from tests.support.processes import SCREEN_AND_APPROVE

ROOT = Path(__file__).resolve().parents[2]
T0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)


class Sink:
    """A real SMTP server on loopback that keeps what it receives; `stall` holds every message
    at DATA until released (a mail server that hangs)."""

    def __init__(self):
        self.messages, self.stall, self.connected = [], threading.Event(), threading.Event()
        self.release = threading.Event()
        sink = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                sink.connected.set()
                if sink.stall.is_set():
                    while not sink.release.is_set():
                        import asyncio

                        await asyncio.sleep(0.1)
                sink.messages.append(envelope)
                return "250 OK"

        self.controller = Controller(Handler(), hostname="127.0.0.1", port=free_port())

    @property
    def port(self) -> int:
        return self.controller.port

    def __enter__(self):
        self.controller.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.controller.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def smtp_to(settings, port: int) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, 5
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""


@pytest.fixture
def overdue_run(publish, make_agent, make_person):
    """A run whose screening step is due an hour after T0; the operators hear of it."""
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    make_person("ops@example.com", operator=True)
    with clock.frozen(T0):
        return make_agent("screener").ok("start_run", process="screen-and-approve",
                                         inputs={"vendorName": "Acme"})["run"]["id"]


def test_the_notice_is_queued_in_the_crossings_transaction(overdue_run, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    with pytest.raises(RuntimeError), transaction.atomic():
        sweep_dues(T0 + dt.timedelta(hours=2))
        assert Notice.objects.filter(sent_at__isnull=True).count() == 1
        raise RuntimeError("the crossing's transaction rolls back")
    assert not Notice.objects.exists()  # no crossing, no notice
    sweep_dues(T0 + dt.timedelta(hours=2))
    notice = Notice.objects.get()
    assert (notice.recipient, notice.kind, notice.sent_at) == ("ops@example.com", "overdue", None)
    assert notice.about == [{"run": overdue_run, "step": "screen", "workItem": None}]


def test_a_mail_server_that_is_down_for_a_while_delays_the_notice_but_never_loses_it(overdue_run, settings, caplog):
    down = free_port()  # nothing listens here
    smtp_to(settings, down)
    report = sweep(T0 + dt.timedelta(hours=2))
    assert (report.overdue, report.sent, report.unsent) == (1, 0, 1)
    notice = Notice.objects.get()
    assert notice.attempts == 1 and notice.sent_at is None and "ConnectionRefusedError" in notice.last_error
    assert notice.send_after == T0 + dt.timedelta(hours=2, minutes=1)
    assert "not sent (attempt 1" in caplog.text
    report = sweep(T0 + dt.timedelta(hours=2, seconds=30))  # inside the pause: not even tried
    assert (report.sent, report.unsent, Notice.objects.get().attempts) == (0, 0, 1)
    report = sweep(T0 + dt.timedelta(hours=2, minutes=2))  # still down: the pause doubles
    assert Notice.objects.get().send_after == T0 + dt.timedelta(hours=2, minutes=4)

    with Sink() as sink:
        smtp_to(settings, sink.port)
        report = sweep(T0 + dt.timedelta(hours=2, minutes=5))
        assert (report.sent, report.unsent) == (1, 0)
        assert [message.rcpt_tos for message in sink.messages] == [["ops@example.com"]]
        assert b"Overdue: screen-and-approve step screen" in sink.messages[0].content
    notice = Notice.objects.get()
    assert (notice.attempts, notice.sent_at) == (3, T0 + dt.timedelta(hours=2, minutes=5))
    sent = AuditEvent.objects.get(kind="notice_sent")
    assert (sent.run_id, sent.data) == (overdue_run, {"to": "ops@example.com", "notice": "overdue"})
    assert sweep(T0 + dt.timedelta(hours=3)).sent == 0  # sent once, never again


@pytest.mark.redis
@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_between_the_crossing_and_its_mail_still_delivers_the_notice(overdue_run, tmp_path):
    """A real Celery worker and beat on Redis cross the due and start sending to a mail server that
    hangs; the worker is killed mid-send (SIGKILL: no cleanup). A new worker sends the notice."""
    url = redis_url().rsplit("/", 1)[0] + "/14"
    if not redis_reachable(url):
        service_unavailable(f"Redis is not reachable at {url}")
    import redis

    redis.Redis.from_url(url).flushdb()
    due = StepDue(overdue_run)
    due.make_past()
    with Sink() as sink:
        sink.stall.set()
        first = start_worker(tmp_path / "first", url, sink.port)
        try:
            assert sink.connected.wait(30), "the worker never reached the mail server"
            assert Notice.objects.filter(sent_at__isnull=True).count() == 1  # crossed, committed, unsent
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(10)
        assert sink.messages == []
        sink.stall.clear()
        second = start_worker(tmp_path / "second", url, sink.port)
        try:
            deadline = time.monotonic() + 40  # after the dead worker's hold on the notice (3 s) ran out
            while not sink.messages and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            os.killpg(second.pid, signal.SIGTERM)
            second.wait(10)
        assert [message.rcpt_tos for message in sink.messages] == [["ops@example.com"]]
    notice = Notice.objects.get()
    assert notice.sent_at is not None and Notice.objects.count() == 1  # one crossing, one notice


class StepDue:
    def __init__(self, run_id: str):
        self.run_id = run_id

    def make_past(self) -> None:
        from runs.models import StepState

        StepState.objects.filter(run_id=self.run_id, step_id="screen").update(
            due_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1))


def start_worker(workdir: Path, broker: str, smtp_port: int) -> subprocess.Popen:
    workdir.mkdir()
    env = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict), "REDIS_URL": broker,
           "CELERY_BROKER_URL": broker, "SWEEP_INTERVAL_SECONDS": "0.5", "CACHE_URL": "locmem",
           "EMAIL_URL": f"smtp://127.0.0.1:{smtp_port}", "NOTICE_SEND_LEASE_SECONDS": "3"}
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "agentprocess", "worker", "-B", "--pool", "solo",
         "-s", str(workdir / "beat-schedule"), "--loglevel", "INFO"],
        cwd=ROOT, env=env, stdout=(workdir / "celery.log").open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True)
