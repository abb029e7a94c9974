"""Webhooks of alerts (issue 28, Build point 1: the kinds `alert.fired`, `alert.cleared`): an
operators' alert rule (insight/alerts.py, issue 27) that starts or clears writes its webhook event
to the outbox with its state change, in the same INSERT as the operators' notices; a subscription
to the rule's process receives each change once, signed, with a payload the JSON Schema accepts
(no run: `run` and its links null, `alert` naming the rule and its figure); a subscription to
another process receives none. Events about no run go in order among themselves per subscription.
"""

import io
import json

import jsonschema
import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from insight import alerts
from insight.models import AlertRule
from kernel import clock
from runs.models import Notice
from tests.support.webhook_receiver import Receiver
from tests.test_insight_alerts import PROCESS
from tests.test_webhooks import SCHEMA, SECRET, deliver
from webhooks.admin import SubscriptionForm
from webhooks.models import KINDS, Attempt, Delivery, Subscription
from webhooks.services import subscriptions

PASSWORD = "a-long-password-1"
ALERT_KINDS = ["alert.fired", "alert.cleared"]


@pytest.fixture
def world(publish, agent, make_person, settings):
    """invoice-check with a rule on its open runs in `check` (above 1 fires), an operator."""
    settings.WEBHOOK_ALLOW_PRIVATE, settings.WEBHOOK_TIMEOUT_SECONDS = True, 1.0  # the receivers are on loopback
    settings.PUBLIC_BASE_URL = "https://flow.example.com"
    publish(PROCESS, {"approver": "finance"})
    ops = make_person("ops@example.com", operator=True, password=PASSWORD)
    rule = alerts.set_rule(identity=ops.identity, process="invoice-check", figure="open_runs", step="check",
                           threshold=1, days=7, now=clock.now())
    return {"agent": agent, "ops": ops, "rule": rule, "org": ops.identity.organization}


def start(world, number: str) -> str:
    return world["agent"].ok("start_run", process="invoice-check", inputs={"invoice": number})["run"]["id"]


def valid(payload: dict) -> dict:
    jsonschema.validate(payload, SCHEMA, format_checker=jsonschema.FormatChecker())
    return payload


def test_an_alert_crossing_and_clearing_sends_one_fired_and_one_cleared_to_its_process_only(world):
    org, rule = world["org"], world["rule"]
    with Receiver([SECRET]) as ours, Receiver([SECRET]) as others:
        subscriptions.add(organization=org, url=ours.url, kinds=ALERT_KINDS, process="invoice-check", secret=SECRET,
                          now=clock.now())
        subscriptions.add(organization=org, url=others.url, kinds=ALERT_KINDS, process="warehouse-count",
                          secret=SECRET, now=clock.now())
        first, second = start(world, "INV-1"), start(world, "INV-2")  # two runs wait in check: above 1
        with CaptureQueriesContext(connection) as queries:
            assert alerts.sweep(clock.now()) == (1, 0)
        # The operator's mail and the webhook event: one INSERT, in the transaction of the state change.
        outbox_writes = [q["sql"] for q in queries.captured_queries if '"runs_notice"' in q["sql"]]
        assert len(outbox_writes) == 1 and outbox_writes[0].startswith('INSERT INTO "runs_notice"')
        assert sorted(Notice.objects.filter(kind__in=["alert", "alert.fired"]).values_list("kind", "delivery")) == [
            ("alert", "immediately"), ("alert.fired", Notice.WEBHOOK)]
        assert alerts.sweep(clock.now()) == (0, 0)  # the same state: no second event
        assert deliver() == (1, 1, 0)
        world["ops"].ok("cancel", runId=second, reason="Sent twice.")
        assert alerts.sweep(clock.now()) == (0, 1)
        assert alerts.sweep(clock.now()) == (0, 0)
        assert deliver() == (1, 1, 0)
        got = ours.accepted()
        assert others.received == []
    assert [r.verified_with for r in got] == [[0], [0]]
    assert len({r.headers["webhook-id"] for r in got}) == 2
    fired, cleared = (valid(json.loads(r.body)) for r in got)
    assert [fired["type"], cleared["type"]] == ALERT_KINDS
    says = "Open runs in check above 1 over 7 days"
    assert fired["data"] == {
        "organization": org.slug, "process": {"name": "invoice-check", "version": None}, "run": None,
        "step": "check", "workItem": None, "outcome": None, "decision": None,
        "alert": {"rule": rule.pk, "says": says, "figure": "open_runs", "figureLabel": "Open runs", "unit": "count",
                  "value": 2.0, "valueInWords": "2", "threshold": 1.0, "days": 7},
        "links": {"run": None, "workItem": None, "getRun": None,
                  "insight": "https://flow.example.com/insight/invoice-check/?period=7"}}
    assert cleared["data"]["alert"] == {**fired["data"]["alert"], "value": 1.0, "valueInWords": "1"}
    assert first not in json.dumps([fired, cleared])  # about the process, not a run
    assert list(Delivery.objects.values_list("kind", "run_id", "state")) == [
        ("alert.cleared", "", Delivery.DELIVERED), ("alert.fired", "", Delivery.DELIVERED)]
    assert AlertRule.objects.get().firing is False


def test_nobody_subscribed_to_alerts_means_no_webhook_row(world):
    subscriptions.add(organization=world["org"], url="http://127.0.0.1:9/h", kinds=["run.ended"], now=clock.now())
    subscriptions.add(organization=world["org"], url="http://127.0.0.1:9/g", kinds=["alert.cleared"], now=clock.now())
    start(world, "INV-1"), start(world, "INV-2")
    assert alerts.sweep(clock.now()) == (1, 0)
    assert not Notice.objects.filter(delivery=Notice.WEBHOOK).exists()  # alert.fired: nobody hears of it


def test_a_later_alert_event_waits_for_the_earlier_one_of_the_same_subscription(world):
    """"In order per run" holds for events about no run too: they go in order among themselves."""
    with Receiver([SECRET]) as receiver:
        subscriptions.add(organization=world["org"], url=receiver.url, kinds=ALERT_KINDS, secret=SECRET,
                          now=clock.now())
        start(world, "INV-1")
        second = start(world, "INV-2")
        alerts.sweep(clock.now())
        world["ops"].ok("cancel", runId=second, reason="Sent twice.")
        alerts.sweep(clock.now())
        receiver.behaviour = "503"
        assert deliver() == (2, 0, 1)  # alert.cleared is not tried while alert.fired waits
        assert list(Attempt.objects.values_list("delivery__kind", flat=True)) == ["alert.fired"]
        receiver.behaviour = "ok"
        Delivery.objects.update(next_attempt_at=clock.now())
        assert deliver() == (0, 2, 0)
        got = [json.loads(r.body)["type"] for r in receiver.accepted()]
    assert got == ALERT_KINDS


def test_the_schema_keeps_run_events_and_alert_events_apart(world):
    with Receiver([SECRET]) as receiver:
        subscriptions.add(organization=world["org"], url=receiver.url, kinds=["run.started", *ALERT_KINDS],
                          secret=SECRET, now=clock.now())
        start(world, "INV-1"), start(world, "INV-2")
        alerts.sweep(clock.now())
        deliver()
        got = {payload["type"]: payload for payload in (valid(json.loads(r.body)) for r in receiver.accepted())}
    started, fired = got["run.started"], got["alert.fired"]
    broken = [{**started, "data": {**started["data"], "alert": fired["data"]["alert"]}},  # a run event with an alert
              {**started, "data": {**started["data"], "run": None}},  # a run event without its run
              {**fired, "data": {**fired["data"], "run": started["data"]["run"]}},  # an alert naming a run
              {**fired, "data": {k: v for k, v in fired["data"].items() if k != "alert"}}]  # an alert without one
    for payload in broken:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(payload, SCHEMA)


def test_the_schema_names_every_kind_the_server_sends():
    assert SCHEMA["properties"]["type"]["enum"] == list(KINDS)
    assert SCHEMA["allOf"][0]["if"]["properties"]["type"]["enum"] == ALERT_KINDS


def test_the_cli_admin_and_log_page_take_the_alert_kinds(world):
    out = io.StringIO()
    call_command("webhooks", "add", "http://127.0.0.1:9/oncall", "--kinds", "alert.cleared,alert.fired",
                 "--process", "invoice-check", stdout=out)
    subscription = Subscription.objects.get()
    assert subscription.kinds == ALERT_KINDS
    assert f"{subscription.pk}\thttp://127.0.0.1:9/oncall\tkinds: alert.fired,alert.cleared\t" in out.getvalue()
    choices = [value for value, _label in SubscriptionForm().fields["kinds"].choices]
    assert choices[-2:] == ALERT_KINDS
    start(world, "INV-1"), start(world, "INV-2")
    alerts.sweep(clock.now())
    deliver()  # nothing listens on port 9: a failed attempt
    client = Client()
    assert client.login(username="ops@example.com", password=PASSWORD)
    page = client.get(f"/operators/webhooks/{subscription.pk}")
    assert page.status_code == 200
    assert "invoice-check: Open runs in check above 1 over 7 days · now 2" in page.content.decode()
