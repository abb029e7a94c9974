"""Webhooks (issue 28): subscriptions, the payload's schema, the hot path's one INSERT, signing
and rotation, where a webhook may go, retries, pausing, the delivery log and "send again".

Deliveries go to a real HTTP receiver on loopback that verifies every signature with the
`standardwebhooks` library (tests/support/webhook_receiver.py); the worker's passes are called
in process here. The same with a real Celery worker on Redis, the receiver down and the worker
killed mid-delivery: tests/reliability/test_webhooks_delivery.py.
"""

import datetime as dt
import io
import json
import random
from pathlib import Path

import jsonschema
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from kernel import clock
from runs.models import Notice
from tests.support.flows import LINK, decide, do_agent_step
from tests.support.webhook_receiver import Receiver
from tests.test_statement_budget import PROCESS as THREE_STEPS
from tests.test_work_notices import INVOICE_CHECK
from webhooks.models import KINDS, Attempt, Delivery, Subscription
from webhooks.services import addresses, events, fanout, sending, signing, subscriptions

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "webhooks" / "payload.schema.json").read_text())
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER_SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"


@pytest.fixture
def team(publish, make_person, make_agent):
    publish(INVOICE_CHECK, {"clerks": "clerks", "finance": "finance"})
    return {"agent": make_agent("screener"), "clerk": make_person("clerk1@example.com", groups=["clerks"]),
            "fin": make_person("fin@example.com", groups=["finance"]),
            "ops": make_person("ops@example.com", operator=True)}


@pytest.fixture
def private_allowed(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on loopback
    settings.WEBHOOK_TIMEOUT_SECONDS = 1.0


def command(*args) -> list[str]:
    out = io.StringIO()
    call_command("webhooks", *args, stdout=out)
    return out.getvalue().splitlines()


def start(team, number="INV-1", mode="live") -> str:
    return team["agent"].ok("start_run", process="invoice-check", mode=mode, inputs={
        "invoiceNumber": number, "supplier": "Acme Steel GmbH", "total": 4800})["run"]["id"]


def run_to_the_end(team, run_id: str) -> None:
    do_agent_step(team["agent"], run_id, "screen", {"cleared": True})
    decide(team["clerk"], run_id, "book_invoice", "completed", output={"ledgerRef": "LR-7"})
    decide(team["fin"], run_id, "approve_payment", "approved")


def deliver() -> tuple[int, int, int]:
    made = fanout.fan_out(clock.now())
    return (made, *sending.send_due(clock.now))


# ---------------------------------------------------------------- subscriptions


def test_the_command_adds_lists_and_removes_a_subscription_printing_its_secret(org, private_allowed):
    added = command("add", "http://127.0.0.1:9/hooks/erp", "--kinds", "run.ended,run.started", "--process",
                    "invoice-check")
    subscription = Subscription.objects.get()
    assert added == [f"{subscription.pk}\thttp://127.0.0.1:9/hooks/erp\tkinds: run.started,run.ended\t"
                     "process: invoice-check\ttest runs: no\tactive", subscription.secret]
    assert subscription.secret.startswith("whsec_") and signing.valid_secret(subscription.secret)
    assert (subscription.kinds, subscription.test_runs) == (["run.started", "run.ended"], False)
    command("add", "http://127.0.0.1:9/other", "--kinds", "step.ready", "--test-runs", "--secret", SECRET)
    assert Subscription.objects.get(url="http://127.0.0.1:9/other").secret == SECRET
    listed = command("list")
    assert len(listed) == 2 and listed[1].endswith("process: every process\ttest runs: yes\tactive")
    assert command("remove", str(subscription.pk)) == [
        f"removed webhook subscription {subscription.pk} (http://127.0.0.1:9/hooks/erp)"]
    assert Subscription.objects.count() == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--kinds", "run.ended,run.exploded"],
     "unknown event kind(s): run.exploded; the kinds are " + ", ".join(KINDS)),
    (["--kinds", ","], "name at least one event kind: " + ", ".join(KINDS)),
    (["--kinds", "run.ended", "--secret", "hunter2"],
     "a secret is whsec_ followed by at least 24 bytes in base64 (leave it out and one is made for you)"),
])
def test_a_bad_subscription_is_refused_with_why_and_nothing_is_kept(org, private_allowed, args, message):
    with pytest.raises(CommandError) as refused:
        command("add", "http://127.0.0.1:9/hooks", *args)
    assert str(refused.value) == message
    assert not Subscription.objects.exists()


HINT = "; webhooks go to public addresses only (WEBHOOK_ALLOW_PRIVATE=true allows private networks and loopback)"


@pytest.mark.parametrize(("url", "code", "message"), [
    ("http://127.0.0.1/hooks", "loopback", "http://127.0.0.1/hooks: 127.0.0.1 is a loopback address" + HINT),
    ("http://localhost:8080/hooks", "loopback",
     "http://localhost:8080/hooks: localhost resolves to 127.0.0.1, which is a loopback address" + HINT),
    ("https://10.1.2.3/hooks", "private", "https://10.1.2.3/hooks: 10.1.2.3 is a private address" + HINT),
    ("http://[::1]/hooks", "loopback", "http://[::1]/hooks: ::1 is a loopback address" + HINT),
    ("ftp://example.com/x", "scheme", "'ftp://example.com/x': a webhook URL starts with https:// (or http://)"),
])
def test_private_and_loopback_addresses_are_refused_unless_allowed(org, settings, url, code, message):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(addresses.Refused) as refused:
        subscriptions.add(organization=org, url=url, kinds=["run.ended"], now=clock.now())
    assert (refused.value.code, refused.value.message) == (code, message)
    with pytest.raises(CommandError) as by_command:
        command("add", url, "--kinds", "run.ended")
    assert str(by_command.value) == message
    assert not Subscription.objects.exists()
    if code != "scheme":
        settings.WEBHOOK_ALLOW_PRIVATE = True
        subscriptions.add(organization=org, url=url, kinds=["run.ended"], now=clock.now())


def test_link_local_is_refused_even_when_private_addresses_are_allowed(org, private_allowed):
    with pytest.raises(addresses.Refused) as refused:
        subscriptions.add(organization=org, url="http://169.254.169.254/latest/meta-data", kinds=["run.ended"],
                          now=clock.now())
    assert refused.value.code == "link_local"
    assert refused.value.message == ("http://169.254.169.254/latest/meta-data: 169.254.169.254 is a link-local "
                                     "address; webhooks never go to link-local, multicast or reserved addresses")


def test_a_redirect_to_a_forbidden_address_is_not_followed(team, org, private_allowed):
    with Receiver([SECRET]) as receiver:
        subscriptions.add(organization=org, url=receiver.url, kinds=["run.started"], secret=SECRET, now=clock.now())
        receiver.behaviour = "redirect:http://169.254.169.254/latest/meta-data"
        start(team)
        assert deliver() == (1, 0, 1)
        attempt = Attempt.objects.get()
        assert attempt.status_code is None
        assert attempt.error.startswith("refused: http://169.254.169.254/latest/meta-data: 169.254.169.254 is a "
                                        "link-local address")
        receiver.behaviour = f"redirect:http://127.0.0.1:{receiver.port}/moved"  # allowed: followed
        Delivery.objects.update(next_attempt_at=clock.now())
        assert deliver() == (0, 1, 0)
        assert [r.answered for r in receiver.received] == [307, 307, 204]


def test_a_private_address_after_a_redirect_is_refused_when_not_allowed(team, org, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    answer = sending.http.post("http://localhost:9/hooks", b"{}", {})
    assert answer.status is None and answer.error.startswith(
        "refused: http://localhost:9/hooks: localhost resolves to 127.0.0.1, which is a loopback address")


# ---------------------------------------------------------------- the hot path


def test_one_insert_when_a_subscription_hears_none_when_none_does(publish, agent, org, is_postgres, private_allowed):
    publish(THREE_STEPS)

    def claim_and_submit(run_id):
        agent.ok("get_work")
        with CaptureQueriesContext(connection) as queries:
            token = agent.ok("claim", runId=run_id, stepId="one")["token"]
            agent.ok("submit", token=token, output={"a": 1}, evidence=LINK, summary="Done.")
        return [q["sql"] for q in queries.captured_queries
                if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN"))]

    quiet = claim_and_submit(agent.ok("start_run", process="three-steps", inputs={})["run"]["id"])
    assert not any('"runs_notice"' in q for q in quiet)
    subscriptions.add(organization=org, url="http://127.0.0.1:9/h", kinds=["step.ready"], now=clock.now())
    heard = claim_and_submit(agent.ok("start_run", process="three-steps", inputs={})["run"]["id"])
    notice_writes = [q for q in heard if '"runs_notice"' in q]
    assert len(notice_writes) == 1 and notice_writes[0].startswith('INSERT INTO "runs_notice"')
    assert len(heard) == len(quiet) + 1, "\n".join(heard)
    audit_inserts = sum(q.startswith('INSERT INTO "agentprocess_auditevent"') for q in heard)
    assert len(heard) - audit_inserts <= 13  # the budget of claim + submit (12) and this one INSERT
    rows = Notice.objects.filter(delivery=Notice.WEBHOOK)
    assert [(row.kind, row.about[0]["step"]) for row in rows] == [("step.ready", "one"), ("step.ready", "two")]


def test_a_subscription_to_other_kinds_or_another_process_or_test_runs_adds_nothing(team, org, private_allowed):
    subscriptions.add(organization=org, url="http://127.0.0.1:9/a", kinds=["run.cancelled"], now=clock.now())
    subscriptions.add(organization=org, url="http://127.0.0.1:9/b", kinds=["run.started"], process="other",
                      now=clock.now())
    subscriptions.add(organization=org, url="http://127.0.0.1:9/c", kinds=["step.ready"], now=clock.now())
    start(team, mode="test")
    start(team)
    assert not Notice.objects.filter(kind="run.started").exists()
    assert Notice.objects.filter(kind="step.ready").count() == 1  # the live run's; the test run's is not heard


# ---------------------------------------------------------------- delivery, end to end in process


def test_a_run_from_start_to_end_sends_each_event_once_in_order_signed(team, org, private_allowed):
    with Receiver([SECRET]) as receiver:
        subscriptions.add(organization=org, url=receiver.url, kinds=list(KINDS), secret=SECRET, now=clock.now())
        run_id = start(team)
        run_to_the_end(team, run_id)
        made, delivered, failed = deliver()
        assert (made, failed) == (delivered, 0)
        got = receiver.accepted()
    payloads = [json.loads(r.body) for r in got]
    assert [p["type"] for p in payloads] == ["run.started", "step.ready", "work_item.waiting", "work_item.decided",
                                             "work_item.waiting", "work_item.decided", "run.ended"]
    assert all(r.verified_with == [0] for r in got)
    assert len({r.headers["webhook-id"] for r in got}) == len(got)
    for payload in payloads:
        jsonschema.validate(payload, SCHEMA, format_checker=jsonschema.FormatChecker())
    ended = payloads[-1]["data"]
    assert ended["outcome"] == "paid" and ended["run"] == {"id": run_id, "businessKey": "INV-1", "test": False}
    assert ended["process"] == {"name": "invoice-check", "version": 1}
    assert ended["links"]["run"].endswith(f"/runs/{run_id}")
    assert ended["links"]["getRun"]["arguments"] == {"runId": run_id}
    decided = payloads[3]["data"]
    assert decided["decision"] == "completed" and decided["links"]["workItem"].endswith(f"/work/{decided['workItem']}")
    assert "4800" not in got[0].body and "Acme" not in got[0].body  # no inputs' values but the business key
    assert Delivery.objects.filter(state=Delivery.DELIVERED).count() == len(got)


def test_a_failing_receiver_is_retried_with_growing_pauses_and_nothing_goes_out_of_order(team, org, private_allowed):
    with Receiver([SECRET]) as receiver:
        subscriptions.add(organization=org, url=receiver.url, kinds=["run.started", "step.ready"], secret=SECRET,
                          now=clock.now())
        receiver.behaviour = "503"
        start(team)
        assert deliver() == (2, 0, 1)  # the second event of the run waits for the first
        attempt = Attempt.objects.get()
        assert (attempt.status_code, attempt.answer) == (503, "busy, try later")
        pause = attempt.next_retry_at - attempt.at
        assert dt.timedelta(seconds=14) <= pause <= dt.timedelta(seconds=31)
        assert deliver() == (0, 0, 0)  # not due yet
        receiver.behaviour = "slow"  # then no answer within the timeout
        Delivery.objects.update(next_attempt_at=clock.now())
        assert deliver() == (0, 0, 1)
        timed_out = Attempt.objects.order_by("id").last()
        assert (timed_out.status_code, timed_out.error) == (None, "no answer within 1 s")
        assert timed_out.latency_ms >= 1000
        receiver.behaviour = "ok"
        Delivery.objects.update(next_attempt_at=clock.now())
        assert deliver() == (0, 2, 0)
        got = receiver.accepted()
    assert [json.loads(r.body)["type"] for r in got] == ["run.started", "step.ready"]
    first = Delivery.objects.get(kind="run.started")
    tries = [r for r in receiver.received if json.loads(r.body)["type"] == "run.started"]
    assert first.attempts == len(tries) == 3 and {r.headers["webhook-id"] for r in tries} == {first.webhook_id}


def test_backoff_doubles_with_jitter_and_retries_span_more_than_a_day(settings):
    pauses = [sending.pause_after(n, random.Random(n)) for n in range(1, 40)]
    for n, pause in enumerate(pauses, 1):  # between half and all of 30 s doubled n-1 times, at most 2 h
        full = min(dt.timedelta(seconds=30) * 2 ** (n - 1), dt.timedelta(hours=2))
        assert full / 2 <= pause <= full, n
    assert max(pauses) <= dt.timedelta(hours=2) and min(pauses[10:]) >= dt.timedelta(hours=1)
    assert len({p for p in pauses}) == len(pauses)  # jittered: no two alike
    assert settings.WEBHOOK_RETRY_HOURS >= 24


def test_a_subscription_that_keeps_failing_is_paused_and_the_operators_are_told(team, org, private_allowed, settings):
    with Receiver([SECRET]) as receiver:
        subscription = subscriptions.add(organization=org, url=receiver.url, kinds=["run.started"], secret=SECRET,
                                         now=clock.now())
        receiver.behaviour = "503"
        start(team)
        assert deliver() == (1, 0, 1)
        Delivery.objects.update(next_attempt_at=clock.now(), retrying_since=clock.now() - dt.timedelta(hours=25))
        assert deliver() == (0, 0, 1)
        subscription.refresh_from_db()
        assert subscription.paused_at is not None
        assert subscription.paused_reason.startswith("gave up on run.started msg_")
        assert subscription.paused_reason.endswith("after 2 attempts over 24 h: HTTP 503")
        told = Notice.objects.get(kind="webhook_paused")
        assert told.recipient == "ops@example.com" and told.subject == f"Webhook paused: {receiver.url}"
        assert f"manage.py webhooks resume {subscription.pk}" in told.body
        start(team, "INV-2")
        receiver.behaviour = "ok"
        assert deliver() == (1, 0, 0)  # paused: made, not sent
        command("resume", str(subscription.pk))
        assert deliver() == (0, 2, 0)  # the given-up one and the waiting one, none lost
    assert sorted(json.loads(r.body)["data"]["run"]["businessKey"] for r in receiver.accepted()) == ["INV-1", "INV-2"]


def test_send_again_delivers_once_more_with_the_same_webhook_id(team, org, private_allowed):
    with Receiver([SECRET]) as receiver:
        subscriptions.add(organization=org, url=receiver.url, kinds=["run.started"], secret=SECRET, now=clock.now())
        start(team)
        deliver()
        delivery = Delivery.objects.get()
        sending.send_again(organization=org, delivery_id=delivery.pk, now=clock.now())
        assert deliver() == (0, 1, 0)
        got = receiver.accepted()
    assert len(got) == 2 and got[0].headers["webhook-id"] == got[1].headers["webhook-id"] == delivery.webhook_id
    assert got[0].body == got[1].body
    assert list(Attempt.objects.filter(delivery=delivery).values_list("status_code", flat=True)) == [204, 204]


def test_at_most_the_limit_of_deliveries_go_to_one_receiver_at_once(settings):
    settings.WEBHOOK_CONCURRENCY_PER_URL = 2
    first, second, third = (sending._Slot("https://erp.example.com/a") for _ in range(3))
    assert first.__enter__() and second.__enter__()
    assert not third.__enter__()
    assert sending._Slot("https://other.example.com/a").__enter__()  # another receiver
    first.__exit__(None, None, None)
    assert third.__enter__()


# ---------------------------------------------------------------- signing and rotation


def test_during_the_grace_period_both_secrets_verify_after_it_only_the_new(org, private_allowed):
    subscription = subscriptions.add(organization=org, url="http://127.0.0.1:9/h", kinds=["run.ended"],
                                     secret=SECRET, now=clock.now())
    now = clock.now()
    rotated = subscriptions.rotate(organization=org, subscription_id=subscription.pk, secret=OTHER_SECRET,
                                   grace_hours=2, now=now)
    body = '{"id":"evt_1"}'
    during = signing.headers(rotated, "msg_x", body, now + dt.timedelta(hours=1))
    assert len(during["webhook-signature"].split(" ")) == 2

    def verifies(secret, headers, at):
        # the library checks the timestamp against its own clock: verify as of `at`
        try:
            Webhook(secret).verify(body, {**headers, "webhook-timestamp": headers["webhook-timestamp"]})
            return True
        except WebhookVerificationError as error:
            assert str(error) == "No matching signature found"
            return False

    at_now = signing.headers(rotated, "msg_x", body, now)
    assert verifies(SECRET, at_now, now) and verifies(OTHER_SECRET, at_now, now)
    after = signing.headers(rotated, "msg_x", body, now + dt.timedelta(hours=2, seconds=1))
    assert len(after["webhook-signature"].split(" ")) == 1
    assert Webhook(OTHER_SECRET).sign("msg_x", now + dt.timedelta(hours=2, seconds=1), body) == after["webhook-signature"]
    assert Webhook(SECRET).sign("msg_x", now + dt.timedelta(hours=2, seconds=1), body) != after["webhook-signature"]
    lines = command("rotate", str(subscription.pk))
    assert lines[0].startswith("the old secret still signs until ") and lines[1].startswith("whsec_")


# ---------------------------------------------------------------- the operators' delivery log


PASSWORD = "correct-horse-42"


@pytest.fixture
def signed_in(team, make_person):
    from django.test import Client

    make_person("ops2@example.com", operator=True, password=PASSWORD)
    make_person("clerk9@example.com", groups=["clerks"], password=PASSWORD)

    def client_of(email):
        client = Client()
        assert client.login(username=email, password=PASSWORD)
        return client

    return client_of


def test_the_delivery_log_shows_attempts_and_send_again_delivers_with_the_same_webhook_id(
        team, org, private_allowed, signed_in):
    with Receiver([SECRET]) as receiver:
        subscription = subscriptions.add(organization=org, url=receiver.url, kinds=["run.started"], secret=SECRET,
                                         now=clock.now())
        receiver.behaviour = "503"
        start(team, "INV-77")
        deliver()
        receiver.behaviour = "ok"
        Delivery.objects.update(next_attempt_at=clock.now())
        deliver()
        ops = signed_in("ops2@example.com")
        listing = ops.get("/operators/webhooks/").content.decode()
        assert receiver.url in listing and "1 delivered, 0 waiting" in listing
        page = ops.get(f"/operators/webhooks/{subscription.pk}").content.decode()
        delivery = Delivery.objects.get()
        attempts = list(Attempt.objects.filter(delivery=delivery).order_by("id"))
        assert "INV-77" in page and delivery.webhook_id in page and "Delivered" in page
        assert f"status 503 in {attempts[0].latency_ms} ms" in page and "Answer: <code>busy, try later</code>" in page
        assert f"status 204 in {attempts[1].latency_ms} ms" in page
        sent = ops.post(f"/operators/webhooks/{subscription.pk}/deliveries/{delivery.pk}/send-again")
        assert sent.status_code == 302 and sent["Location"] == f"/operators/webhooks/{subscription.pk}"
        assert deliver() == (0, 1, 0)
        got = receiver.accepted()
    assert [r.headers["webhook-id"] for r in got] == [delivery.webhook_id] * 2


def test_replay_since_sends_every_delivery_since_then_again(team, org, private_allowed, signed_in):
    with Receiver([SECRET]) as receiver:
        subscription = subscriptions.add(organization=org, url=receiver.url, kinds=["run.started", "step.ready"],
                                         secret=SECRET, now=clock.now())
        start(team, "INV-1")
        deliver()
        ops = signed_in("ops2@example.com")
        answer = ops.post(f"/operators/webhooks/{subscription.pk}/replay", {"since": "2020-01-01T00:00"})
        assert answer.status_code == 302
        assert deliver() == (0, 2, 0)
        refused = ops.post(f"/operators/webhooks/{subscription.pk}/replay", {"since": "yesterday"})
        assert refused.status_code == 400 and "is not a date and time like 2026-10-06T09:00" in refused.content.decode()
        got = receiver.accepted()
    assert [json.loads(r.body)["type"] for r in got] == ["run.started", "step.ready"] * 2


def test_only_operators_see_the_log_and_only_their_organizations(team, org, private_allowed, signed_in,
                                                                  make_person):
    subscription = subscriptions.add(organization=org, url="http://127.0.0.1:9/h", kinds=["run.started"],
                                     now=clock.now())
    start(team)
    fanout.fan_out(clock.now())
    delivery = Delivery.objects.get()
    clerk = signed_in("clerk9@example.com")
    assert clerk.get(f"/operators/webhooks/{subscription.pk}").status_code == 403
    assert clerk.post(f"/operators/webhooks/{subscription.pk}/deliveries/{delivery.pk}/send-again").status_code == 403
    make_person("ops@other.example", operator=True, password=PASSWORD, org_slug="other")
    other = signed_in("ops@other.example")
    assert other.get(f"/operators/webhooks/{subscription.pk}").status_code == 404
    assert other.post(f"/operators/webhooks/{subscription.pk}/deliveries/{delivery.pk}/send-again").status_code == 404
    assert receiver_free(other.get("/operators/webhooks/").content.decode(), "http://127.0.0.1:9/h")
    assert Delivery.objects.get().attempts == 0


def receiver_free(page: str, url: str) -> bool:
    return url not in page and "No subscriptions yet." in page


# ---------------------------------------------------------------- chat notices (Slack, Teams)


def test_a_groups_slack_and_teams_channels_get_its_work_with_the_link_and_business_key(team, org, private_allowed):
    with Receiver() as slack, Receiver() as teams, Receiver() as finance:
        command("add", slack.url, "--format", "slack", "--group", "clerks")
        lines = command("add", teams.url, "--format", "teams", "--group", "clerks")
        assert "\tteams channel of clerks\tkinds: work_item.waiting,work_item.overdue,run.escalated\t" in lines[0]
        command("add", finance.url, "--format", "slack", "--group", "finance", "--kinds", "run.escalated")
        run_id = start(team, "INV-2026-0042")
        do_agent_step(team["agent"], run_id, "screen", {"cleared": True})
        assert deliver()[1:] == (2, 0)
        item = Delivery.objects.filter(subscription__format="slack").get().payload
        got_slack, got_teams = [json.loads(r.body) for r in slack.accepted()], [json.loads(r.body) for r in teams.accepted()]
        assert finance.received == []  # another group's channel, and not a kind it hears of
    work_item = Delivery.objects.filter(subscription__format="teams").get().payload["potentialAction"][0]["targets"][0]["uri"]
    assert work_item.startswith("http") and "/work/w_" in work_item
    assert got_slack == [item] == [{"text": f"New work for clerks: Book invoice – INV-2026-0042 (invoice-check, run {run_id})."
                                            f" <{work_item}|Open it>"}]
    assert got_teams == [{"@type": "MessageCard", "@context": "https://schema.org/extensions",
                          "summary": "New work for clerks", "title": "New work for clerks",
                          "text": f"Book invoice – INV-2026-0042 (invoice-check, run {run_id}).",
                          "potentialAction": [{"@type": "OpenUri", "name": "Open it",
                                               "targets": [{"os": "default", "uri": work_item}]}]}]


def test_an_escalation_goes_to_the_operators_channel(team, org, private_allowed):
    with Receiver() as operators:
        command("add", operators.url, "--format", "slack", "--group", org.operators.name)
        run_id = start(team, "INV-9")
        token = team["agent"].ok("claim", runId=run_id, stepId="screen")["token"]
        team["agent"].ok("escalate", token=token, note="The sanctions site is down.")
        deliver()
        got = [json.loads(r.body)["text"] for r in operators.accepted()]
    assert len(got) == 1 and got[0].startswith(f"Escalation waiting for {org.operators.name}: Screen – INV-9 (")


@pytest.mark.parametrize(("args", "message"), [
    (["--format", "slack"], "a slack channel tells one group of its work: name it with --group"),
    (["--format", "teams", "--group", "nobody"], "default has no group 'nobody'"),
    (["--format", "slack", "--group", "clerks", "--kinds", "run.ended"],
     "a chat channel hears of work_item.waiting, work_item.overdue, run.escalated only, not run.ended"),
    (["--kinds", "run.ended", "--group", "clerks"], "--group is for chat channels (--format slack or teams)"),
])
def test_a_bad_chat_channel_is_refused(team, org, private_allowed, args, message):
    with pytest.raises(CommandError) as refused:
        command("add", "http://127.0.0.1:9/chat", *args)
    assert str(refused.value) == message
    assert not Subscription.objects.exists()


def test_overdue_work_goes_to_its_groups_channel_and_as_a_webhook(team, org, private_allowed):
    from runs.services.sweep import sweep_dues

    with Receiver() as finance, Receiver([SECRET]) as oncall:
        command("add", finance.url, "--format", "slack", "--group", "finance")
        subscriptions.add(organization=org, url=oncall.url, kinds=["work_item.overdue"], secret=SECRET, now=clock.now())
        run_id = start(team, "INV-3")
        do_agent_step(team["agent"], run_id, "screen", {"cleared": True})
        decide(team["clerk"], run_id, "book_invoice", "completed", output={"ledgerRef": "LR-3"})
        deliver()
        assert finance.accepted()[0].body.startswith('{"text":"New work for finance: Approve payment – INV-3')
        sweep_dues(clock.now() + dt.timedelta(hours=2))
        deliver()
        overdue = json.loads(finance.accepted()[1].body)["text"]
        event = json.loads(oncall.accepted()[0].body)
    assert overdue.startswith("Overdue for finance: Approve payment – INV-3 (invoice-check, run ")
    assert event["type"] == "work_item.overdue" and event["data"]["step"] == "approve_payment"
    assert overdue.endswith(f"<{event['data']['links']['workItem']}|Open it>")


def test_the_log_keeps_deliveries_done_for_the_configured_days_and_never_drops_a_waiting_one(
        team, org, private_allowed, settings):
    settings.WEBHOOK_LOG_DAYS = 30
    subscriptions.add(organization=org, url="http://127.0.0.1:9/h", kinds=["run.started", "step.ready"],
                      now=clock.now())
    start(team)
    fanout.fan_out(clock.now())
    done, waiting = Delivery.objects.order_by("id")
    Delivery.objects.filter(pk=done.pk).update(state=Delivery.DELIVERED)
    Attempt.objects.create(organization=org, delivery=done, at=clock.now(), status_code=204)
    assert sending.forget_before(clock.now() + dt.timedelta(days=29)) == 0
    assert sending.forget_before(clock.now() + dt.timedelta(days=31)) == 1
    assert list(Delivery.objects.all()) == [waiting] and not Attempt.objects.exists()
