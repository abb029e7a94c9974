"""Notifications people do not mute (issue 15, point 6; spec §5 "none in test mode"): new work,
escalations waiting, work returned, items assigned, overdue; each person's choice per kind (right
away, summary mail, off); one mail per person per interval; the hot path pays one INSERT.

The outbox itself (never lost, retried, a worker killed mid-send) is in
tests/reliability/test_work_notices_delivery.py with a real Celery worker and SMTP server.
"""

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from kernel import clock
from kernel.errors import ToolError
from kernel.models import NoticePreference
from runs.models import Notice
from runs.services import notifications, outbox, queue
from runs.services.sweep import sweep
from tests.support.flows import decide, do_agent_step, open_item

T0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)  # the hour's summary mail goes at 10:00
PASSWORD = "correct-horse-42"

INVOICE_CHECK = """---
name: invoice-check
description: An agent screens the supplier, a clerk books the invoice, finance approves the payment.
inputs:
  invoiceNumber: string
  supplier: string
  total: number
steps:
  - id: screen
    agent: Screen the supplier against the sanctions lists.
    output: { cleared: boolean }
  - id: book_invoice
    person: clerks
    task: |
      Book the invoice in the ledger and note its reference.
      Check the total against the PDF first.
    output: { ledgerRef: string }
  - id: approve_payment
    person: finance
    approve: Approve the payment to the supplier.
    on_reject: book_invoice
    due: 1h
  - id: done
    finish: paid
---
Invoice check.
"""


@pytest.fixture
def team(publish, make_person, make_agent):
    publish(INVOICE_CHECK, {"clerks": "clerks", "finance": "finance"})
    return {
        "agent": make_agent("screener"),
        "clerk1": make_person("clerk1@example.com", groups=["clerks"], password=PASSWORD),
        "clerk2": make_person("clerk2@example.com", groups=["clerks"], password=PASSWORD),
        "fin": make_person("fin@example.com", groups=["finance"], password=PASSWORD),
        "ops": make_person("ops@example.com", operator=True, password=PASSWORD),
    }


def start(team, number="INV-1", mode="live") -> str:
    run_id = team["agent"].ok("start_run", process="invoice-check", mode=mode,
                              inputs={"invoiceNumber": number, "supplier": "Acme Steel GmbH", "total": 4800})["run"]["id"]
    do_agent_step(team["agent"], run_id, "screen", {"cleared": True})
    return run_id


def deliver(at) -> dict[str, list]:
    """One pass of the outbox at `at`; the mails it sent, by recipient."""
    mail.outbox.clear()
    outbox.send_due(at)
    sent = {}
    for message in mail.outbox:
        sent.setdefault(message.to[0], []).append(message)
    return sent


def minutes(n: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=n)


def choose(person, **deliveries):
    identity = person.identity
    chosen = {choice.kind: choice.delivery for choice in notifications.choices_of(identity)} | deliveries
    notifications.save_choices(identity=identity, chosen=chosen, now=T0)


# ---------------------------------------------------------------- the hot path


def notice_inserts(queries) -> int:
    return sum(q["sql"].startswith(f"INSERT INTO {connection.ops.quote_name(Notice._meta.db_table)}")
               for q in queries.captured_queries)


def test_a_submit_that_makes_work_for_people_adds_one_insert_and_a_test_run_none(team):
    agent = team["agent"]
    counts = {}
    for mode in ("test", "live"):
        run_id = agent.ok("start_run", process="invoice-check", mode=mode,
                          inputs={"invoiceNumber": "1", "supplier": "S", "total": 1})["run"]["id"]
        token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
        with CaptureQueriesContext(connection) as submit:
            agent.ok("submit", token=token, output={"cleared": True}, evidence=[{"kind": "link", "ref": "https://e.x"}],
                     summary="Clear.")
        counts[mode] = (len(submit.captured_queries), notice_inserts(submit))
    assert counts["test"][1] == 0 and counts["live"][1] == 1
    assert counts["live"][0] == counts["test"][0] + 1  # one INSERT, no look-up of people
    event = Notice.objects.get()
    assert (event.delivery, event.recipient, event.kind, event.sent_at) == (Notice.EVENT, "", "new_work", None)


# ---------------------------------------------------------------- new work: the summary mail


def test_new_work_goes_in_one_summary_mail_per_person_per_interval(team):
    with clock.frozen(minutes(5)):
        runs = [start(team, "INV-1")]
    with clock.frozen(minutes(20)):
        runs.append(start(team, "INV-2"))
    with clock.frozen(minutes(50)):
        runs.append(start(team, "INV-3"))
    assert deliver(minutes(55)) == {}  # the interval has not ended
    rows = Notice.objects.exclude(delivery=Notice.EVENT)
    assert sorted(rows.values_list("recipient", "kind", "delivery", "send_after").distinct()) == [
        ("clerk1@example.com", "new_work", "digest", minutes(60)),
        ("clerk2@example.com", "new_work", "digest", minutes(60))]
    assert rows.count() == 6

    sent = deliver(minutes(60))
    assert sorted(sent) == ["clerk1@example.com", "clerk2@example.com"]  # not finance, not operators
    (summary,) = sent["clerk1@example.com"]
    assert summary.subject == "3 new work items"
    items = [open_item(team["clerk1"], run_id, "book_invoice")["id"] for run_id in runs]
    for run_id, item_id in zip(runs, items, strict=True):
        assert f"Book invoice (step book_invoice) in invoice-check, run {run_id}" in summary.body
        assert f"Open it: http://127.0.0.1:8000/work/{item_id}" in summary.body
    assert "Inputs: Invoice number: INV-2; Supplier: Acme Steel GmbH; Total: 4800" in summary.body
    assert "What to do: Book the invoice in the ledger and note its reference." in summary.body
    assert summary.body.startswith("New work for you or your groups:\n\n- Book invoice")
    assert summary.body.endswith("http://127.0.0.1:8000/settings/notifications\n")
    assert summary.content_subtype == "plain" and not summary.alternatives
    assert not Notice.objects.filter(sent_at__isnull=True).exists()
    assert deliver(minutes(61)) == {}  # sent once

    with clock.frozen(minutes(70)):
        late = start(team, "INV-4")
    assert deliver(minutes(119)) == {}
    sent = deliver(minutes(120))
    assert [m.subject for m in sent["clerk1@example.com"]] == ["New work: Book invoice in invoice-check"]
    assert late in sent["clerk1@example.com"][0].body and runs[0] not in sent["clerk1@example.com"][0].body


def test_a_test_run_tells_no_one(team):
    with clock.frozen(minutes(5)):
        run_id = start(team, mode="test")
        decide(team["clerk1"], run_id, "book_invoice", "completed", output={"ledgerRef": "L-1"})
    assert deliver(minutes(60 * 24)) == {}
    assert sweep(minutes(60 * 24)).overdue == 1  # the approval is overdue, and still no one hears
    assert mail.outbox == []
    assert not Notice.objects.exists()
    item = open_item(team["fin"], run_id, "approve_payment")["id"]
    queue.assign(identity=team["ops"].identity, work_item_id=item, to="fin@example.com", now=minutes(60 * 24))
    assert deliver(minutes(60 * 24)) == {}
    assert list(Notice.objects.values_list("delivery", "outcome")) == [("event", "a test run: no one is told")]


def test_work_made_by_my_own_action_is_not_news_to_me(publish, make_person):
    """An employee starts an expense claim whose first step is theirs: no mail about it."""
    from tests.support.spec import EXAMPLES

    publish(EXAMPLES / "expense-approval")
    employee = make_person("sam@example.com")
    make_person("boss@example.com")
    with clock.frozen(T0):
        employee.ok("start_run", process="expense-approval",
                    inputs={"manager": "boss@example.com", "amount": 5, "category": "meals"})
    assert deliver(minutes(60)) == {}
    assert Notice.objects.get(delivery=Notice.EVENT).outcome == "fanned out to 0 of 0 people"


# ---------------------------------------------------------------- returned, escalated, assigned


def test_work_sent_back_goes_to_the_person_who_did_it_right_away_with_the_note(team):
    with clock.frozen(minutes(1)):
        run_id = start(team)
    assert deliver(minutes(1)) == {}  # new work for the clerks: in the hour's summary
    with clock.frozen(minutes(10)):
        decide(team["clerk1"], run_id, "book_invoice", "completed", output={"ledgerRef": "L-77"})
    assert deliver(minutes(10)) == {}  # and for finance
    with clock.frozen(minutes(20)):
        decide(team["fin"], run_id, "approve_payment", "rejected", note="The total does not match the PDF.\nSee p. 2.")
    sent = deliver(minutes(20))
    assert sorted(sent) == ["clerk1@example.com"]  # at once; the reviewer is not told of her own rejection
    (returned,) = sent["clerk1@example.com"]
    item = open_item(team["clerk1"], run_id, "book_invoice")
    assert returned.subject == "Returned to you for rework: Book invoice in invoice-check"
    assert "Sent back by fin@example.com: \u201cThe total does not match the PDF.\u201d" in returned.body
    assert f"/work/{item['id']}" in returned.body
    assert returned.body.startswith("Sent back to you for rework:")

    sent = deliver(minutes(60))  # the hour's summaries
    assert sorted(sent) == ["clerk2@example.com"]
    (summary,) = sent["clerk2@example.com"]  # the first item was decided: only the returned one is news
    assert summary.subject == "New work: Book invoice in invoice-check"
    assert f"/work/{item['id']}" in summary.body
    left_out = Notice.objects.filter(outcome__startswith="left out").values_list("recipient", "outcome")
    assert sorted(left_out) == [
        ("clerk1@example.com", "left out: the item was decided before this notice went"),
        ("clerk2@example.com", "left out: the item was decided before this notice went"),
        ("fin@example.com", "left out: the item was decided before this notice went")]


def test_an_escalation_waits_for_the_operators_in_their_summary(team):
    agent = team["agent"]
    with clock.frozen(minutes(5)):
        run_id = agent.ok("start_run", process="invoice-check",
                          inputs={"invoiceNumber": "INV-9", "supplier": "Globex", "total": 12})["run"]["id"]
        token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
        agent.ok("escalate", token=token, note="The EU sanctions site is down.")
    assert deliver(minutes(30)) == {}
    sent = deliver(minutes(60))
    assert sorted(sent) == ["ops@example.com"]
    (message,) = sent["ops@example.com"]
    assert message.subject == "Escalation waiting: Screen in invoice-check"
    assert "Escalated by a_screener: \u201cThe EU sanctions site is down.\u201d" in message.body
    assert "Inputs: Invoice number: INV-9; Supplier: Globex; Total: 12" in message.body


def test_an_item_assigned_to_me_is_told_right_away_unless_reassigned_before_it_went(team):
    choose(team["clerk1"], assigned="digest")
    with clock.frozen(minutes(1)):
        first, second = start(team, "INV-1"), start(team, "INV-2")
    ops = team["ops"].identity
    item1 = open_item(team["clerk1"], first, "book_invoice")["id"]
    item2 = open_item(team["clerk1"], second, "book_invoice")["id"]
    queue.assign(identity=ops, work_item_id=item1, to="clerk2@example.com", now=minutes(2))
    queue.assign(identity=ops, work_item_id=item2, to="CLERK1@example.com", now=minutes(2))
    sent = deliver(minutes(2))
    assert sorted(sent) == ["clerk2@example.com"]  # clerk1 chose the summary for assignments
    (message,) = sent["clerk2@example.com"]
    assert message.subject == "Assigned to you: Book invoice in invoice-check"
    assert "Assigned to you by ops@example.com" in message.body and f"/work/{item1}" in message.body
    queue.assign(identity=ops, work_item_id=item2, to="clerk2@example.com", now=minutes(3))
    assert [m.subject for m in deliver(minutes(3))["clerk2@example.com"]] == [
        "Assigned to you: Book invoice in invoice-check"]
    sent = deliver(minutes(60))
    (summary,) = sent["clerk1@example.com"]  # item2 is clerk2's now: clerk1 hears only of item1, as new work
    assert summary.subject == "New work: Book invoice in invoice-check"
    assert f"/work/{item1}" in summary.body and f"/work/{item2}" not in summary.body
    assert Notice.objects.get(recipient="clerk1@example.com", kind="assigned").outcome == (
        "left out: the item was reassigned before this notice went")
    assert "clerk2@example.com" not in sent  # told of both items as assigned: no "new work" about them
    # item1's new work and its assignment were fanned out in one pass: only the assignment was made.
    assert list(Notice.objects.filter(recipient="clerk2@example.com", kind="new_work").values_list(
        "about", "outcome")) == [([{"run": second, "step": "book_invoice", "workItem": item2}],
                                  "left out: told as assigned instead")]


# ---------------------------------------------------------------- choices


def test_each_person_chooses_per_kind(team):
    choose(team["clerk1"], new_work="immediately")
    choose(team["clerk2"], new_work="off")
    with clock.frozen(minutes(5)):
        start(team)
    sent = deliver(minutes(5))
    assert sorted(sent) == ["clerk1@example.com"]
    assert sent["clerk1@example.com"][0].subject == "New work: Book invoice in invoice-check"
    assert not Notice.objects.filter(recipient="clerk2@example.com").exists()  # off: not even a row
    assert Notice.objects.get(delivery=Notice.EVENT).outcome == "fanned out to 1 of 2 people"
    assert deliver(minutes(60 * 3)) == {}


def test_kinds_of_one_mail_go_together_with_the_most_pressing_first(team):
    choose(team["clerk2"], assigned="digest")
    with clock.frozen(minutes(1)):
        first, _second = start(team, "INV-1"), start(team, "INV-2")
    item1 = open_item(team["clerk1"], first, "book_invoice")["id"]
    queue.assign(identity=team["ops"].identity, work_item_id=item1, to="clerk2@example.com", now=minutes(2))
    (message,) = deliver(minutes(60))["clerk2@example.com"]
    assert message.subject == "Your work: 1 assigned to you, 1 new"  # item1 is told once, as assigned
    assert message.body.index("An operator assigned these to you:") < message.body.index("New work for you")
    assert message.body.count(f"/work/{item1}") == 1


def test_an_overdue_item_is_told_once_in_a_mail_not_also_as_new_work(team):
    choose(team["ops"], overdue="off")
    with clock.frozen(minutes(1)):
        run_id = start(team)
        decide(team["clerk1"], run_id, "book_invoice", "completed", output={"ledgerRef": "L-1"})
    mail.outbox.clear()
    assert sweep(minutes(120)).overdue == 1
    assert [m.to for m in mail.outbox] == [["fin@example.com"]]  # the operator turned overdue notices off
    (message,) = mail.outbox
    assert message.subject == "Overdue: invoice-check step approve_payment"
    assert "overdue since 2026-10-06T10:01:00Z\n  Inputs: Invoice number: INV-1" in message.body
    assert Notice.objects.get(recipient="fin@example.com", kind="new_work").outcome == (
        "left out: told in the same mail as a more pressing notice")


def test_choices_are_kept_and_a_bad_one_changes_nothing(team):
    clerk = team["clerk1"].identity
    assert [(c.kind, c.delivery) for c in notifications.choices_of(clerk)] == [
        ("new_work", "digest"), ("assigned", "immediately"), ("returned", "immediately"), ("overdue", "immediately")]
    assert "escalation" in [c.kind for c in notifications.choices_of(team["ops"].identity)]
    with pytest.raises(ToolError) as refused:
        notifications.save_choices(identity=clerk, now=T0, chosen={
            "new_work": "weekly", "assigned": "off", "returned": "digest", "escalation": "off"})
    assert refused.value.code == "invalid"
    assert refused.value.issues == ["new_work: 'weekly' is not one of immediately, digest, off", "overdue: missing",
                                    "escalation: not a kind of notice you can receive"]
    assert not NoticePreference.objects.exists()
    kept = notifications.save_choices(identity=clerk, now=T0, chosen={
        "new_work": "off", "assigned": "digest", "returned": "immediately", "overdue": "digest"})
    assert [(c.kind, c.delivery) for c in kept] == [
        ("new_work", "off"), ("assigned", "digest"), ("returned", "immediately"), ("overdue", "digest")]
    notifications.save_choices(identity=clerk, now=T0, chosen={
        "new_work": "immediately", "assigned": "digest", "returned": "immediately", "overdue": "digest"})
    assert NoticePreference.objects.count() == 4
    assert NoticePreference.objects.get(kind="new_work").delivery == "immediately"


# ---------------------------------------------------------------- no N+1


def test_fanning_out_and_sending_take_a_constant_number_of_queries(team, make_person):
    for index in range(3, 8):
        make_person(f"clerk{index}@example.com", groups=["clerks"])
    choose(team["clerk1"], new_work="immediately")

    def measure(runs: int, at) -> tuple[int, int]:
        with clock.frozen(at):
            for index in range(runs):
                start(team, f"INV-{index}")
        with CaptureQueriesContext(connection) as fanning:
            notifications.fan_out(at)
        with CaptureQueriesContext(connection) as sending:
            outbox.send_due(at)
        return len(fanning.captured_queries), len(sending.captured_queries)

    few = measure(2, minutes(1))
    many = measure(20, minutes(2))
    assert many == few, (few, many)
    assert Notice.objects.filter(recipient="clerk7@example.com").count() == 22


# ---------------------------------------------------------------- the settings page


@pytest.fixture
def signed_in(team):
    def make(email, csrf=False):
        client = Client(enforce_csrf_checks=csrf)
        assert client.login(username=email, password=PASSWORD)
        return client

    return make


def form_of(choices: dict) -> dict:
    return {f"notice-{kind}": delivery for kind, delivery in choices.items()}


def test_the_settings_page_shows_each_kind_and_keeps_a_choice(signed_in):
    client = signed_in("clerk1@example.com")
    page = client.get("/settings/notifications")
    html = page.content.decode()
    assert page.status_code == 200
    assert html.count("<fieldset") == 4 and "An escalation waiting" not in html  # not an operator
    assert '<legend>New work for me or my groups</legend>' in html
    assert 'id="notice-new_work-digest" name="notice-new_work" value="digest" checked' in html
    assert 'href="/settings/notifications" aria-current="page">Notifications</a>' in html
    response = client.post("/settings/notifications", form_of(
        {"new_work": "immediately", "assigned": "digest", "returned": "immediately", "overdue": "off"}))
    assert response.status_code == 302 and response["Location"] == "/settings/notifications"
    html = client.get("/settings/notifications").content.decode()
    assert "Your notification settings are saved." in html
    assert 'value="immediately" checked' in html.split('id="kind-new_work"')[1].split("</fieldset>")[0]
    assert 'value="off" checked' in html.split('id="kind-overdue"')[1].split("</fieldset>")[0]
    user = get_user_model().objects.get(email="clerk1@example.com")
    assert dict(NoticePreference.objects.filter(user=user).values_list("kind", "delivery")) == {
        "new_work": "immediately", "assigned": "digest", "returned": "immediately", "overdue": "off"}


def test_the_settings_page_refuses_a_bad_choice_and_keeps_what_was_sent(signed_in):
    client = signed_in("ops@example.com")
    assert client.get("/settings/notifications").content.decode().count("<fieldset") == 6  # escalations and alerts too
    response = client.post("/settings/notifications", form_of(
        {"new_work": "off", "assigned": "hourly", "returned": "digest", "escalation": "immediately"}))
    html = response.content.decode()
    assert response.status_code == 400
    assert "Your choices were not saved" in html
    assert "assigned: &#x27;hourly&#x27; is not one of immediately, digest, off" in html
    assert "overdue: missing" in html
    assert 'value="off" checked' in html.split('id="kind-new_work"')[1].split("</fieldset>")[0]  # as sent
    assert not NoticePreference.objects.exists()


def test_the_settings_page_needs_a_signed_in_person_and_its_csrf_token(signed_in):
    assert Client().get("/settings/notifications")["Location"].startswith("/accounts/login/")
    client = signed_in("clerk2@example.com", csrf=True)
    response = client.post("/settings/notifications", form_of(
        {"new_work": "off", "assigned": "off", "returned": "off", "overdue": "off"}))
    assert response.status_code == 403
    assert not NoticePreference.objects.exists()


def test_no_one_of_another_organization_hears_of_this_ones_work(team, make_person):
    """Even a person of another organization put straight into this one's group (admin bypassing
    the organization's groups) is not told."""
    from django.contrib.auth.models import Group

    make_person("stranger@other.example", org_slug="other")
    get_user_model().objects.get(email="stranger@other.example").groups.add(Group.objects.get(name="clerks"))
    with clock.frozen(minutes(1)):
        start(team)
    assert sorted(deliver(minutes(60))) == ["clerk1@example.com", "clerk2@example.com"]
    assert not Notice.objects.filter(recipient="stranger@other.example").exists()


CHECKED_TASK = """---
name: checked-task
description: A person's task with a check.
steps:
  - id: write_note
    person: writers
    task: Write the release note.
    output: { note: string }
    check: The note names the version.
  - id: done
    finish: written
---
Checked task.
"""


def test_a_check_unsure_of_a_persons_task_waits_for_operators_and_comes_back_to_that_person(
        settings, publish, make_person, make_agent):
    """check-1: an unsure verdict escalates to the operators; returned, the task goes back to the
    person who completed it (right away, with the note), and to the rest of the group as new work."""
    from tests.support.chat_server import ChatServer

    server = ChatServer().start()
    try:
        settings.CHECK_EVALUATOR_URL, settings.CHECK_EVALUATOR_MODEL = server.url, "scripted-evaluator-1"
        settings.CHECK_FAIL = 0.3  # between fail and pass: unsure
        server.script["The note names the version."] = {"yes": 0.62}
        publish(CHECKED_TASK, {"writers": "writers"})
        writer = make_person("w1@example.com", groups=["writers"])
        make_person("w2@example.com", groups=["writers"])
        ops = make_person("ops@example.com", operator=True)
        with clock.frozen(minutes(1)):
            run_id = make_agent("starter").ok("start_run", process="checked-task", inputs={})["run"]["id"]
            decide(writer, run_id, "write_note", "completed", output={"note": "Fixed bugs."})
        sent = deliver(minutes(60))
        assert sorted(sent) == ["ops@example.com"]  # the first task item was decided: left out for w1, w2
        assert sent["ops@example.com"][0].subject == "Escalation waiting: Write note in checked-task"
        assert "The check was unsure about this submission" in sent["ops@example.com"][0].body
        with clock.frozen(minutes(61)):
            decide(ops, run_id, "write_note", "returned", note="Name the version, e.g. 2.1.")
        sent = deliver(minutes(61))
        assert sorted(sent) == ["w1@example.com"]
        assert sent["w1@example.com"][0].subject == "Returned to you for rework: Write note in checked-task"
        assert "Sent back by ops@example.com: \u201cName the version, e.g. 2.1.\u201d" in sent["w1@example.com"][0].body
        assert [m.subject for m in deliver(minutes(120))["w2@example.com"]] == ["New work: Write note in checked-task"]
    finally:
        server.stop()
