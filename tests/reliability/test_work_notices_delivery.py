"""Notices of people's work are never lost (issue 15, point 6, "done when"): a real Celery worker
and beat on Redis, a real SMTP server on loopback (aiosmtpd). One summary mail per person per
interval, none for a test run, a mail server that is down for a while, and a worker killed
between the write's commit and its mail.

The outbox helpers (the SMTP sink, the worker process) are those of test_notice_outbox.py.
"""

import datetime as dt
import os
import signal
import time

import pytest

from runs.models import Notice
from runs.services import queue
from tests.conftest import redis_reachable, service_unavailable
from tests.reliability.test_notice_outbox import Sink, start_worker
from tests.support.flows import do_agent_step, open_item
from tests.test_work_notices import INVOICE_CHECK

BROKER = "redis://127.0.0.1:6379/7"
WINDOW_SECONDS = 15  # NOTICE_DIGEST_MINUTES=0.25 for the worker

pytestmark = [pytest.mark.redis, pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def broker():
    if not redis_reachable(BROKER):
        service_unavailable(f"Redis is not reachable at {BROKER}")
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    yield BROKER
    redis.Redis.from_url(BROKER).flushdb()


@pytest.fixture
def team(publish, make_person, make_agent):
    publish(INVOICE_CHECK, {"clerks": "clerks", "finance": "finance"})
    return {"agent": make_agent("screener"), "clerk1": make_person("clerk1@example.com", groups=["clerks"]),
            "clerk2": make_person("clerk2@example.com", groups=["clerks"]),
            "fin": make_person("fin@example.com", groups=["finance"]),
            "ops": make_person("ops@example.com", operator=True)}


def start(team, number: str, mode: str = "live") -> str:
    run_id = team["agent"].ok("start_run", process="invoice-check", mode=mode,
                              inputs={"invoiceNumber": number, "supplier": "Acme Steel GmbH", "total": 4800})["run"]["id"]
    do_agent_step(team["agent"], run_id, "screen", {"cleared": True})
    return run_id


def a_fresh_window(seconds_needed: float = 9) -> dt.datetime:
    """Wait, if need be, until at least this much is left of the current summary interval, so
    what the test writes next falls in one interval; returns when that interval ends."""
    while True:
        now = time.time()
        end = (now // WINDOW_SECONDS + 1) * WINDOW_SECONDS
        if end - now >= seconds_needed:
            return dt.datetime.fromtimestamp(end, dt.UTC)
        time.sleep(end - now + 0.05)


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def stop(worker) -> None:
    os.killpg(worker.pid, signal.SIGTERM)
    worker.wait(15)


def by_recipient(messages) -> dict[str, list[str]]:
    mails = {}
    for message in messages:
        mails.setdefault(message.rcpt_tos[0], []).append(message.content.decode())
    return mails


def test_one_summary_per_person_none_for_a_test_run_and_a_mail_server_down_for_a_while(
        team, broker, tmp_path, monkeypatch):
    monkeypatch.setenv("NOTICE_DIGEST_MINUTES", str(WINDOW_SECONDS / 60))
    sink = Sink()  # its port is chosen, nothing listens on it yet: the mail server is down
    window_end = a_fresh_window()
    live = [start(team, f"INV-{n}") for n in (1, 2, 3)]
    test_run = start(team, "INV-T", mode="test")
    escalated = team["agent"].ok("start_run", process="invoice-check",
                                 inputs={"invoiceNumber": "INV-E", "supplier": "Globex", "total": 9})["run"]["id"]
    claim = team["agent"].ok("claim", runId=escalated, stepId="screen")["token"]
    team["agent"].ok("escalate", token=claim, note="The EU sanctions site is down.")
    assert dt.datetime.now(dt.UTC) < window_end, "the writes took longer than the interval"
    assert Notice.objects.filter(delivery=Notice.EVENT).count() == 4  # 3 new work, 1 escalation; none for the test run

    worker = start_worker(tmp_path / "worker", broker, sink.port)
    try:
        failed = wait_for(lambda: list(Notice.objects.filter(attempts__gte=1, sent_at__isnull=True)
                                       .exclude(delivery=Notice.EVENT)), 60, "the first failed sends")
        assert {row.recipient for row in failed} <= {"clerk1@example.com", "clerk2@example.com", "ops@example.com"}
        assert all("ConnectionRefusedError" in row.last_error for row in failed)
        assert all(row.send_after >= window_end + dt.timedelta(seconds=59) for row in failed)  # paused a minute
        wait_for(lambda: "not sent (attempt 1" in (tmp_path / "worker" / "celery.log").read_text(), 10,
                 "the failure in the worker's log")
        with sink:  # the mail server is back
            # Only the pause is cut short (its doubling is tested in test_notice_outbox.py).
            Notice.objects.filter(sent_at__isnull=True).update(send_after=dt.datetime.now(dt.UTC))
            wait_for(lambda: len(sink.messages) >= 3, 30, "three mails")
            time.sleep(3)  # several more sweeps: nothing else goes
            mails = by_recipient(sink.messages)
    finally:
        stop(worker)

    assert sorted(mails) == ["clerk1@example.com", "clerk2@example.com", "ops@example.com"]
    assert all(len(messages) == 1 for messages in mails.values())  # one summary each, never one per item
    for clerk in ("clerk1@example.com", "clerk2@example.com"):
        (body,) = mails[clerk]
        assert "Subject: 3 new work items" in body
        assert all(f"run {run_id}" in body for run_id in live)
        assert test_run not in body
    assert "Subject: Escalation waiting: Screen in invoice-check" in mails["ops@example.com"][0]
    rows = Notice.objects.exclude(delivery=Notice.EVENT)
    assert rows.count() == 7 and not rows.filter(sent_at__isnull=True).exists()
    assert set(rows.values_list("attempts", flat=True)) >= {2}
    assert not rows.filter(recipient="fin@example.com").exists()


def test_a_worker_killed_between_the_commit_and_its_mail_still_delivers_it_once(team, broker, tmp_path, monkeypatch):
    """The assignment commits its event row; a worker fans it out, takes the mail and hangs at the
    mail server's DATA; it is killed (SIGKILL: no clean-up). A new worker sends it, once."""
    monkeypatch.setenv("NOTICE_DIGEST_MINUTES", "60")  # only the assignment is due during the test
    run_id = start(team, "INV-1")
    item = open_item(team["clerk1"], run_id, "book_invoice")["id"]
    queue.assign(identity=team["ops"].identity, work_item_id=item, to="clerk2@example.com",
                 now=dt.datetime.now(dt.UTC))
    with Sink() as sink:
        sink.stall.set()
        first = start_worker(tmp_path / "first", broker, sink.port)
        try:
            assert sink.connected.wait(60), "the worker never reached the mail server"
            assigned = Notice.objects.get(kind="assigned", recipient="clerk2@example.com")
            assert assigned.sent_at is None  # committed, fanned out, taken, not sent
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(10)
        assert sink.messages == []
        sink.stall.clear()
        second = start_worker(tmp_path / "second", broker, sink.port)
        try:
            wait_for(lambda: sink.messages, 40, "the mail, after the dead worker's hold (3 s) ran out")
            time.sleep(2)
        finally:
            stop(second)
        mails = by_recipient(sink.messages)
    assert list(mails) == ["clerk2@example.com"] and len(mails["clerk2@example.com"]) == 1
    assert "Subject: Assigned to you: Book invoice in invoice-check" in mails["clerk2@example.com"][0]
    assert f"/work/{item}" in mails["clerk2@example.com"][0]
    assert Notice.objects.filter(kind="assigned").exclude(delivery=Notice.EVENT).count() == 1  # fanned out once
    assigned.refresh_from_db()
    assert assigned.sent_at is not None and assigned.attempts == 1
