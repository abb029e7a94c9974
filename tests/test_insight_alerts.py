"""Process insight's alerts (issue 27, point 5): an operator's rule on a figure, evaluated by the
sweep, told once when it starts and once when it clears (an audit event and a notice through the
outbox each), never twice for the same state; and a real Celery worker with beat doing it."""

import datetime as dt
import time

import pytest
from django.core import mail

from insight import alerts
from insight.models import AlertRule
from kernel import clock
from kernel.errors import ToolError
from kernel.models import AuditEvent, NoticePreference
from runs.models import Notice
from runs.services.sweep import sweep
from tests.conftest import redis_url
from tests.support.celery_worker import celery_worker, wait_for

from .test_check_profile import evaluator  # noqa: F401 (the scripted evaluator fixture)
from .test_insight_figures import history  # noqa: F401 (the known history fixture)

PROCESS = """---
name: invoice-check
description: An agent checks an invoice, finance approves it.
inputs:
  invoice: string
steps:
  - id: check
    agent: Check the invoice.
    next: approve
  - id: approve
    person: approver
    approve: Approve the invoice.
    next: done
  - id: done
    finish: paid
---
Invoices.
"""


def kinds(*names):
    return list(AuditEvent.objects.filter(kind__in=names).order_by("id").values_list("kind", flat=True))


def test_a_rule_is_refused_with_every_issue_and_only_operators_set_one(history):
    ops, fin = history["ops"].identity, history["fin"].identity
    with pytest.raises(ToolError) as refused:
        alerts.set_rule(identity=ops, process="checked-vendor", figure="median_wait", step="", threshold=-1, days=14,
                        now=clock.now())
    assert refused.value.code == "invalid"
    assert refused.value.issues == ["step: required for this figure", "days: one of 7, 30, 90",
                                    "threshold: a number, 0 or more"]
    with pytest.raises(ToolError) as refused:
        alerts.set_rule(identity=ops, process="checked-vendor", figure="rework_rate", step="decline", threshold=2,
                        days=7, now=clock.now())
    assert refused.value.issues == ["step: not a step people or agents work in checked-vendor (check_vendor, approve)",
                                    "threshold: a rate is at most 1 (100 %)"]
    with pytest.raises(ToolError) as refused:
        alerts.set_rule(identity=fin, process="checked-vendor", figure="overdue", step="", threshold=1, days=7,
                        now=clock.now())
    assert refused.value.code == "forbidden"
    with pytest.raises(ToolError) as refused:
        alerts.set_rule(identity=ops, process="no-such", figure="overdue", step="", threshold=1, days=7,
                        now=clock.now())
    assert refused.value.code == "not_found"
    assert not AlertRule.objects.exists() and kinds("alert_rule_set") == []


def test_the_rules_values_over_the_known_history(history):
    ops = history["ops"].identity
    now = clock.now()  # T0 + 2 d 6 h: the whole history is within 7 days

    def value(figure, step="", days=7):
        rule = alerts.set_rule(identity=ops, process="checked-vendor", figure=figure, step=step, threshold=0,
                               days=days, now=now)
        return alerts.value_of(rule, ops.organization, now)

    assert value("overdue") == 2.0
    assert value("overdue", "approve") == 2.0
    assert value("overdue_rate") == round(2 / 11, 4)
    assert value("overdue_rate", "approve") == 0.4
    assert value("median_wait", "approve") == 3600.0
    assert value("median_work", "check_vendor") == 7200.0
    assert value("rework_rate", "approve") == 0.2
    assert value("escalation_rate", "check_vendor") == round(1 / 6, 4)
    assert value("open_runs") == 1.0 and value("open_runs", "check_vendor") == 0.0
    assert kinds("alert_rule_set") == ["alert_rule_set"] * 10


def test_a_rule_fires_once_when_crossing_and_clears_once(history, settings):
    settings.PUBLIC_BASE_URL = "https://flow.example.com"
    ops = history["ops"]
    NoticePreference.objects.create(user=history["fin"].identity.user, organization=ops.identity.organization,
                                    kind="overdue", delivery="off", updated_at=clock.now())  # not an operator anyway
    rule = alerts.set_rule(identity=ops.identity, process="checked-vendor", figure="median_wait", step="approve",
                           threshold=30 * 60, days=7, now=clock.now())
    mail.outbox.clear()
    assert alerts.sweep(clock.now()) == (1, 0)  # the median wait in approve is 1 h, above 30 min
    assert alerts.sweep(clock.now()) == (0, 0)  # the same state: nothing told again
    rule.refresh_from_db()
    assert (rule.firing, rule.value, rule.changed_at) == (True, 3600.0, clock.now())
    fired = AuditEvent.objects.get(kind="alert_fired")
    assert (fired.actor, fired.step_id) == ("server", "approve")
    assert fired.data == {"rule": rule.pk, "process": "checked-vendor", "figure": "median_wait", "value": 3600.0,
                          "threshold": 1800.0, "says": "Median wait in approve above 30 min over 7 days"}
    [notice] = Notice.objects.filter(kind="alert")
    assert notice.recipient == "ops@example.com"  # operators only
    assert notice.subject == "Alert started: checked-vendor: Median wait in approve above 30 min over 7 days"
    sweep(clock.now())  # the outbox sends it
    [message] = [m for m in mail.outbox if m.subject.startswith("Alert")]
    assert message.to == ["ops@example.com"]
    assert "Now: 1 h." in message.body
    assert "https://flow.example.com/insight/checked-vendor/?period=7" in message.body

    # Nine days on, the week holds no approval: no value, so the alert clears, once.
    clock.advance(dt.timedelta(days=9))
    assert alerts.sweep(clock.now()) == (0, 1)
    assert alerts.sweep(clock.now()) == (0, 0)
    rule.refresh_from_db()
    assert (rule.firing, rule.value) == (False, None)
    assert kinds("alert_fired", "alert_cleared") == ["alert_fired", "alert_cleared"]
    assert [n.subject.split(":")[0] for n in Notice.objects.filter(kind="alert").order_by("id")] == [
        "Alert started", "Alert cleared"]


def test_an_operator_who_turned_alerts_off_gets_no_notice(history, make_person):
    ops = history["ops"]
    make_person("ops2@example.com", operator=True)
    NoticePreference.objects.create(user=ops.identity.user, organization=ops.identity.organization, kind="alert",
                                    delivery="off", updated_at=clock.now())
    alerts.set_rule(identity=ops.identity, process="checked-vendor", figure="open_runs", step="", threshold=0, days=7,
                    now=clock.now())
    assert alerts.sweep(clock.now()) == (1, 0)
    assert list(Notice.objects.filter(kind="alert").values_list("recipient", flat=True)) == ["ops2@example.com"]
    assert kinds("alert_fired") == ["alert_fired"]  # the audit event does not depend on who hears


# ---------------------------------------------------------------- a real worker and beat


@pytest.fixture
def worker(tmp_path):
    with celery_worker(tmp_path, redis_url(), SWEEP_INTERVAL_SECONDS="0.5", ALERT_SWEEP_SECONDS="0.5") as log:
        yield log


@pytest.mark.redis
@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_celery_beat_fires_and_clears_an_alert_once_each(worker, publish, agent, make_person):
    publish(PROCESS, {"approver": "finance"})
    ops = make_person("ops@example.com", operator=True)
    alerts.set_rule(identity=ops.identity, process="invoice-check", figure="open_runs", step="check", threshold=1,
                    days=7, now=clock.now())
    first, second = (agent.ok("start_run", process="invoice-check", inputs={"invoice": f"INV-{n}"})["run"]["id"]
                     for n in (1, 2))
    wait_for(lambda: kinds("alert_fired") == ["alert_fired"], worker)  # two runs wait in check: above 1
    wait_for(lambda: Notice.objects.filter(kind="alert", sent_at__isnull=False).count() == 1, worker)
    ops.ok("cancel", runId=second, reason="Sent twice.")
    wait_for(lambda: kinds("alert_fired", "alert_cleared") == ["alert_fired", "alert_cleared"], worker)
    time.sleep(2)  # several more sweeps: the state is unchanged, nothing is told again
    assert kinds("alert_fired", "alert_cleared") == ["alert_fired", "alert_cleared"]
    notices = list(Notice.objects.filter(kind="alert").order_by("id").values_list("recipient", "subject"))
    assert notices == [
        ("ops@example.com", "Alert started: invoice-check: Open runs in check above 1 over 7 days"),
        ("ops@example.com", "Alert cleared: invoice-check: Open runs in check above 1 over 7 days")]
    assert AlertRule.objects.get().firing is False and AlertRule.objects.get().value == 1.0
    assert first
    log = worker.read_text()
    assert "Alert started: invoice-check" in log  # the console mail backend printed the mail
