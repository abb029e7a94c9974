"""Due dates (spec §2.2 `due`): overdue computed from the clock everywhere, one notice per crossing."""

import datetime as dt

import pytest
from django.core import mail

from kernel import clock
from runs.services.sweep import sweep
from tests.support.concurrency import run_together
from tests.support.flows import decide, do_agent_step
from tests.support.spec import EXAMPLES

T0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def onboarding(publish, make_person):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    return {
        "fin": make_person("fin@example.com", groups=["finance"]),
        "fin2": make_person("fin2@example.com", groups=["finance"]),
        "ops": make_person("ops@example.com", operator=True),
    }


def to_approval(agent, mode="live"):
    run_id = agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": "A", "amount": 1},
                      mode=mode)["run"]["id"]
    rework(agent, run_id)
    return run_id


def rework(agent, run_id):
    report = agent.ok("upload", fileName="report.txt", contentType="text/plain", contentBase64="b2s=")
    do_agent_step(agent, run_id, "check_vendor", {"cleared": True, "summary": "ok"}, next="approve",
                  evidence=[{"kind": "file", "ref": report["id"]}])


def overdue_flags(agent, run_id):
    view = agent.ok("get_run", runId=run_id)
    return view["steps"][1].get("overdue"), view["workItems"][0]["due"]


def test_overdue_is_computed_from_the_clock_and_notified_once(onboarding, agent):
    with clock.frozen(T0):
        run_id = to_approval(agent)
        assert overdue_flags(agent, run_id) == (False, "2026-10-08T09:00:00Z")
        clock.advance(dt.timedelta(days=2))
        assert overdue_flags(agent, run_id) == (True, "2026-10-08T09:00:00Z")  # before any sweep
        mail.outbox.clear()
        report = sweep(clock.now())
        assert report.overdue == 1
        assert sorted(m.to[0] for m in mail.outbox) == ["fin2@example.com", "fin@example.com", "ops@example.com"]
        message = mail.outbox[0]
        item_id = agent.ok("get_run", runId=run_id)["workItems"][0]["id"]
        assert message.subject == "Overdue: supplier-onboarding step approve"
        assert f"work item {item_id} (step approve) of run {run_id}, overdue since 2026-10-08T09:00:00Z" in message.body
        assert f"http://127.0.0.1:8000/work/{item_id}" in message.body
        clock.advance(dt.timedelta(hours=1))
        mail.outbox.clear()
        assert sweep(clock.now()).overdue == 0
        assert mail.outbox == []


def test_a_repeat_of_the_step_rearms_the_due_clock(onboarding, agent):
    with clock.frozen(T0):
        run_id = to_approval(agent)
        clock.advance(dt.timedelta(days=3))
        sweep(clock.now())
        decide(onboarding["fin"], run_id, "approve", "rejected", note="Attach the EU report too.")
        rework(agent, run_id)
        assert overdue_flags(agent, run_id) == (False, "2026-10-11T09:00:00Z")
        clock.advance(dt.timedelta(days=2))
        mail.outbox.clear()
        assert sweep(clock.now()).overdue == 1
        assert len(mail.outbox) == 3


def test_a_test_run_is_marked_overdue_but_never_notified(onboarding, agent):
    with clock.frozen(T0):
        run_id = to_approval(agent, mode="test")
        clock.advance(dt.timedelta(days=2, seconds=1))
        mail.outbox.clear()
        assert sweep(clock.now()).overdue == 1
        assert mail.outbox == []
        assert overdue_flags(agent, run_id)[0] is True


def test_one_person_with_several_overdue_items_gets_one_digest(onboarding, agent):
    with clock.frozen(T0):
        runs = [to_approval(agent) for _ in range(3)]
        clock.advance(dt.timedelta(days=2))
        mail.outbox.clear()
        assert sweep(clock.now()).overdue == 3
        to_fin = [m for m in mail.outbox if m.to == ["fin@example.com"]]
        assert len(to_fin) == 1
        assert to_fin[0].subject == "3 items are overdue"
        assert all(run_id in to_fin[0].body for run_id in runs)
        assert len(mail.outbox) == 3  # fin, fin2, ops: one each


def test_an_overdue_agent_step_notifies_the_operators(publish, agent, make_person):
    publish(EXAMPLES / "expense-approval")
    make_person("ops@example.com", operator=True)
    employee = make_person("sam@example.com")
    make_person("boss@example.com")
    with clock.frozen(T0):
        run_id = employee.ok("start_run", process="expense-approval",
                             inputs={"manager": "boss@example.com", "amount": 5, "category": "meals"})["run"]["id"]
        decide(employee, run_id, "attach_receipts", "completed", output={"purpose": "Lunch", "lines": [{"a": 1}]},
               evidence=[{"kind": "file", "ref": employee.ok("upload", fileName="r", contentType="text/plain",
                                                              contentBase64="cg==")["id"]}])
        clock.advance(dt.timedelta(hours=4))
        mail.outbox.clear()
        assert sweep(clock.now()).overdue == 1
        assert [m.to for m in mail.outbox] == [["ops@example.com"]]
        assert f"agent step check_policy (step check_policy) of run {run_id}" in mail.outbox[0].body
        assert f"/runs/{run_id}" in mail.outbox[0].body


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_sweeps_send_one_notice_per_crossing(onboarding, agent):
    with clock.frozen(T0):
        for _ in range(20):
            to_approval(agent)
    later = T0 + dt.timedelta(days=2)
    mail.outbox.clear()
    reports = run_together(lambda: sweep(later), timeout=30)
    assert sum(r.overdue for r in reports) == 20
    notices = [n for r in reports for n in r.notices]
    assert len(notices) == 60  # 20 crossings × (fin, fin2, ops), each exactly once
    assert len({(n.recipient, n.run_id) for n in notices}) == 60
    # Each sweep sends its own digests: every crossing appears in exactly one message per person.
    fin_bodies = "".join(m.body for m in mail.outbox if m.to == ["fin@example.com"])
    assert fin_bodies.count("overdue since") == 20
