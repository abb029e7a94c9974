"""The browser inbox over the Django test client: the inbox, work item pages and every decision,
run pages with their process map, operator pages, and API tokens (issue 4, point 5)."""

import base64
import datetime as dt
import re
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from kernel import clock
from runs.models import Run, StepState, WorkItem
from tests.support.processes import PARALLEL_REVIEW
from tests.support.spec import CORE_FIXTURES, EXAMPLES, FIXTURES, PROFILE_FIXTURES, spec_present
from tests.test_check_profile import Q1 as CHECK_Q1
from tests.test_check_profile import evaluator, screening, vendor_check  # noqa: F401 - fixtures

PASSWORD = "correct-horse-42"

QUICK_APPROVAL = """---
name: quick-approval
description: Finance approves a spend, then an agent records it.
inputs:
  vendorName: string
  amount: number
steps:
  - id: approve
    person: finance-approver
    approve: Approve the spend when it is justified.
    due: 2d
  - id: record
    agent: Record the approval in the ERP.
    output:
      erpReference: string
  - id: done
    finish: recorded
---

# Quick approval

Finance approves; the agent records it. <script>alert("body")</script>
"""

NO_DUE_APPROVAL = """---
name: open-approval
description: An approval without a due date.
inputs:
  vendorName: string
steps:
  - id: approve
    person: finance-approver
    approve: Approve when you get to it.
  - id: done
    finish: approved
---

# Open approval
"""

VENDOR_REVIEW = """---
name: vendor-review
description: A person reviews a vendor with typed fields, a file and a route choice.
inputs:
  vendorName: string
steps:
  - id: review
    person: reviewers
    task: Review the vendor and record what you found.
    output:
      score: number
      approved: boolean
      reviewedOn: date
      meetingAt: datetime
      tags: { type: list, items: string }
      amounts: { type: list, items: number }
      details: object
      contact: person
      tier: { type: string, one_of: [gold, silver, bronze] }
      comment: { type: string, optional: true }
    evidence: [file]
    due: 1d
    next:
      - { to: accept, when: The vendor passes }
      - { to: decline, when: The vendor fails }
  - id: accept
    finish: accepted
  - id: decline
    finish: declined
---

# Vendor review

Look at **everything**.
"""


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture(autouse=True)
def _fresh_definitions():
    """Compiled definitions are cached by version id; SQLite reuses ids after a test's rollback."""
    from processes import definition

    definition._cache.clear()
    yield
    definition._cache.clear()


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def person_client(make_person):
    """(client, actor) for a signed-in person."""

    def make(email, groups=(), operator=False, org_slug=None, csrf=False):
        actor = make_person(email, groups=groups, operator=operator, password=PASSWORD, org_slug=org_slug)
        client = Client(enforce_csrf_checks=csrf)
        assert client.login(username=email, password=PASSWORD)
        return client, actor

    return make


@pytest.fixture
def quick(publish):
    return publish(QUICK_APPROVAL, {"finance-approver": "finance"})


def start(actor, process, inputs, mode="live"):
    return actor.ok("start_run", process=process, inputs=inputs, mode=mode)


def item_of(view, step_id=None):
    items = [item for item in view["workItems"] if step_id is None or item["stepId"] == step_id]
    assert len(items) == 1, view["workItems"]
    return items[0]


def inbox_ids(html: str) -> list[str]:
    return re.findall(r'<tr class="inbox-row[^"]*" data-work-item="([^"]+)"', html)


def hidden(html: str) -> dict:
    fields = {}
    for name in ("snapshot", "request_id", "shown"):
        match = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)"', html)
        if match:
            fields[name] = match.group(1).replace("&quot;", '"').replace("&amp;", "&")
    return fields


class _FormValues(HTMLParser):
    """What a browser would send for the form with this id: name -> list of values."""

    def __init__(self, form_id):
        super().__init__()
        self.form_id, self.inside, self.values = form_id, False, {}
        self._select = self._select_first = self._textarea = None
        self._selected = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.inside = attrs.get("id") == self.form_id
        if not self.inside:
            return
        name = attrs.get("name")
        if tag == "input" and name and attrs.get("type") not in ("file", "submit"):
            if attrs.get("type") != "checkbox" or "checked" in attrs:
                self.values.setdefault(name, []).append(attrs.get("value", ""))
        elif tag == "select":
            self._select, self._select_first, self._selected = name, None, False
        elif tag == "option" and self._select:
            if self._select_first is None:
                self._select_first = attrs.get("value", "")
            if "selected" in attrs:
                self.values[self._select] = [attrs.get("value", "")]
                self._selected = True
        elif tag == "textarea" and name:
            self._textarea = name
            self.values[name] = [""]

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag == "select" and self._select:
            if not self._selected:
                self.values[self._select] = [self._select_first or ""]
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data):
        if self._textarea:
            self.values[self._textarea][0] += data


def form_values(html: str, form_id: str = "decision-form") -> dict:
    parser = _FormValues(form_id)
    parser.feed(html)
    return {name: values if len(values) > 1 else values[0] for name, values in parser.values.items()}


def page(client, url, status=200) -> str:
    response = client.get(url)
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.content.decode()


def decide_form(client, work_item_id, data, files=None, status=302):
    url = f"/work/{work_item_id}"
    fields = hidden(page(client, url))
    payload = {**fields, **data}
    if files:
        payload.update(files)
    response = client.post(url, payload)
    shown = re.findall(r"field-error\">([^<]*)|<h2>([^<]*)</h2>\s*<p>([^<]*)", response.content.decode())
    assert response.status_code == status, (response.status_code, shown)
    return response


def run_of(run_id) -> Run:
    return Run.objects.get(pk=run_id)


def states_of(run_id) -> dict:
    return dict(StepState.objects.filter(run_id=run_id).values_list("step_id", "state"))


def supplier_at_approval(agent, vendor="Acme", amount=48000, mode="live"):
    """supplier-onboarding: the agent screens and submits, so the approval is waiting."""
    view = start(agent, "supplier-onboarding", {"vendorName": vendor, "amount": amount}, mode)
    run_id = view["run"]["id"]
    claim = agent.ok("claim", runId=run_id, stepId="check_vendor")
    upload = agent.ok("upload", fileName="report.txt", contentType="text/plain",
                      contentBase64=base64.b64encode(b"no hits").decode())
    view = agent.ok("submit", token=claim["token"], output={"cleared": True, "summary": "clear"},
                    evidence=[{"kind": "file", "ref": upload["id"]}], summary="Checked OFAC and EU.",
                    next="approve", reason="No hits")
    return view


def escalated_supplier(agent, vendor="Acme"):
    view = start(agent, "supplier-onboarding", {"vendorName": vendor, "amount": 1000})
    run_id = view["run"]["id"]
    claim = agent.ok("claim", runId=run_id, stepId="check_vendor")
    return agent.ok("escalate", token=claim["token"], note="The OFAC site is down; I cannot finish the screening.")


# ---------------------------------------------------------------- sign-in and layout


@pytest.mark.django_db
def test_inbox_requires_sign_in():
    response = Client().get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_login_page_renders_and_signs_in(make_person):
    make_person("mira@example.com", password=PASSWORD)
    client = Client()
    html = page(client, "/accounts/login/")
    assert 'name="username"' in html and 'name="password"' in html and "csrfmiddlewaretoken" in html
    response = client.post("/accounts/login/", {"username": "mira@example.com", "password": PASSWORD})
    assert response.status_code == 302
    assert "Inbox" in page(client, "/")


def test_logout_is_a_post_form_in_the_navigation(person_client):
    client, _ = person_client("mira@example.com")
    html = page(client, "/")
    assert re.search(r'<form method="post" action="/accounts/logout/"', html)
    assert client.post("/accounts/logout/").status_code == 302
    assert Client().get("/").status_code == 302


def test_navigation_shows_operators_only_to_operators(person_client):
    client, _ = person_client("mira@example.com")
    assert 'href="/operators/"' not in page(client, "/")
    operator, _ = person_client("ops@example.com", operator=True)
    assert 'href="/operators/"' in page(operator, "/")


@pytest.mark.django_db
def test_a_signed_in_user_without_an_organization_gets_a_clear_page():
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user(username="loner", email="loner@example.com", password=PASSWORD)
    client = Client()
    assert client.login(username="loner", password=PASSWORD)
    for url in ("/", "/runs/", "/tokens/", "/operators/"):
        response = client.get(url)
        assert response.status_code == 403
        assert "not in an organization" in response.content.decode()


# ---------------------------------------------------------------- inbox


def test_inbox_sorts_by_due_with_no_due_last_then_oldest(publish, quick, person_client, agent):
    publish(NO_DUE_APPROVAL, {"finance-approver": "finance"})
    client, finance = person_client("fin@example.com", groups=["finance"])
    t0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)
    with clock.frozen(t0):
        no_due_old = item_of(start(agent, "open-approval", {"vendorName": "NoDue-Old"}))["id"]
        clock.advance(dt.timedelta(minutes=1))
        late = item_of(start(agent, "quick-approval", {"vendorName": "Late", "amount": 1}))["id"]  # due t0+2d+1m
        clock.advance(dt.timedelta(minutes=1))
        no_due_new = item_of(start(agent, "open-approval", {"vendorName": "NoDue-New"}))["id"]
        clock.advance(dt.timedelta(minutes=1))
        later = item_of(start(agent, "quick-approval", {"vendorName": "Later", "amount": 2}))["id"]  # due t0+2d+3m
    # One item due sooner than everything, created last.
    with clock.frozen(t0 - dt.timedelta(days=1)):
        soonest = item_of(start(agent, "quick-approval", {"vendorName": "Soonest", "amount": 3}))["id"]
    WorkItem.objects.filter(pk=soonest).update(created_at=t0 + dt.timedelta(hours=1))
    with clock.frozen(t0 + dt.timedelta(hours=2)):
        html = page(client, "/")
    assert inbox_ids(html) == [soonest, late, later, no_due_old, no_due_new]


def test_inbox_ties_on_due_go_oldest_first(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    t0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)
    ids = []
    for index in range(3):
        with clock.frozen(t0 + dt.timedelta(minutes=index)):
            ids.append(item_of(start(agent, "quick-approval", {"vendorName": f"V{index}", "amount": index}))["id"])
    same_due = t0 + dt.timedelta(days=2)
    WorkItem.objects.filter(pk__in=ids).update(due_at=same_due)
    assert inbox_ids(page(client, "/")) == ids


def test_inbox_shows_only_my_items_group_or_direct(publish, quick, person_client, make_person, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    make_person("other@example.com", groups=["legal"])
    mine = item_of(start(agent, "quick-approval", {"vendorName": "Mine", "amount": 1}))["id"]
    other = publish(QUICK_APPROVAL.replace("quick-approval", "legal-approval"), {"finance-approver": "legal"})
    assert other
    theirs = item_of(start(agent, "legal-approval", {"vendorName": "Theirs", "amount": 1}))["id"]
    html = page(client, "/")
    assert inbox_ids(html) == [mine]
    assert theirs not in html


def test_inbox_filters_by_process_kind_overdue_and_input_text(publish, quick, person_client, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    publish(VENDOR_REVIEW, {"reviewers": "finance"})
    client, _ = person_client("fin@example.com", groups=["finance"], operator=True)
    approval = item_of(start(agent, "quick-approval", {"vendorName": "Zebra Supplies", "amount": 10}))["id"]
    task = item_of(start(agent, "vendor-review", {"vendorName": "Müller & \"Söhne\""}))["id"]
    escalation = item_of(escalated_supplier(agent, vendor="Escalated Ltd"))["id"]
    WorkItem.objects.filter(pk=approval).update(due_at=clock.now() - dt.timedelta(hours=1))

    assert set(inbox_ids(page(client, "/"))) == {approval, task, escalation}
    assert inbox_ids(page(client, "/?process=quick-approval")) == [approval]
    assert inbox_ids(page(client, "/?kind=task")) == [task]
    assert inbox_ids(page(client, "/?kind=approve")) == [approval]
    assert inbox_ids(page(client, "/?kind=escalation")) == [escalation]
    assert inbox_ids(page(client, "/?overdue=1")) == [approval]
    assert inbox_ids(page(client, "/?q=zebra")) == [approval]
    assert inbox_ids(page(client, "/?q=m%C3%BCller")) == [task]  # non-ASCII, any case
    assert inbox_ids(page(client, "/?q=%22S%C3%B6hne%22")) == [task]  # quotes inside a value
    assert inbox_ids(page(client, "/?q=escalated&kind=escalation")) == [escalation]
    assert inbox_ids(page(client, "/?q=nothing-like-this")) == []
    html = page(client, "/?process=vendor-review&kind=approve")
    assert "No open work items match these filters." in html


def test_inbox_counts_total_and_overdue_and_pages_by_fifty(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    t0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)
    ids = []
    for index in range(120):
        with clock.frozen(t0 + dt.timedelta(seconds=index)):
            ids.append(item_of(start(agent, "quick-approval", {"vendorName": f"V{index}", "amount": index}))["id"])
    WorkItem.objects.filter(pk__in=ids[:7]).update(due_at=t0)  # overdue
    with clock.frozen(t0 + dt.timedelta(hours=1)):
        first = page(client, "/")
        second = page(client, "/?page=2")
        third = page(client, "/?page=3")
        beyond = page(client, "/?page=99")
        overdue = page(client, "/?overdue=1")
    assert re.search(r'data-count="total"><strong>120</strong>', first)
    assert re.search(r'data-count="overdue"><strong>7</strong>', first)
    assert len(inbox_ids(first)) == 50 and len(inbox_ids(second)) == 50 and len(inbox_ids(third)) == 20
    assert inbox_ids(first) + inbox_ids(second) + inbox_ids(third) == ids
    assert "Page 1 of 3" in first and "Page 3 of 3" in third
    assert inbox_ids(beyond) == inbox_ids(third)
    assert re.search(r'data-count="matching"><strong>7</strong>', overdue)
    assert 'href="?page=2"' in first


def test_inbox_badges_test_runs_and_overdue_items(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    live = item_of(start(agent, "quick-approval", {"vendorName": "Live", "amount": 1}))["id"]
    test = item_of(start(agent, "quick-approval", {"vendorName": "Trial", "amount": 1}, mode="test"))["id"]
    WorkItem.objects.filter(pk=live).update(due_at=clock.now() - dt.timedelta(minutes=5))
    html = page(client, "/")
    rows = dict(re.findall(r'data-work-item="([^"]+)">(.*?)</tr>', html, re.S))
    assert "Test run, no real effects" in rows[test] and "Test run, no real effects" not in rows[live]
    assert "badge-overdue" in rows[live] and "badge-overdue" not in rows[test]


def _bulk_open_items(template_run_id: str, count: int) -> None:
    """`count` more open approval items cloned from one real run (bulk rows: fast, same shape)."""
    run = Run.objects.get(pk=template_run_id)
    state = StepState.objects.get(run=run, step_id="approve")
    item = WorkItem.objects.get(run=run)
    runs, states, items = [], [], []
    for index in range(count):
        clone = Run(organization_id=run.organization_id, version_id=run.version_id, process_name=run.process_name,
                    version_number=run.version_number, mode="test" if index % 7 == 0 else "live", state=run.state,
                    started_by=run.started_by, inputs={"vendorName": f"Vendor {index}", "amount": index},
                    steps_data={}, snapshot=run.snapshot, started_at=run.started_at, updated_at=run.updated_at)
        runs.append(clone)
        step = StepState(run=clone, organization_id=state.organization_id, process_name=state.process_name,
                         step_id="approve", position=state.position, kind="approve", state="waiting",
                         ready_since=state.ready_since, due_at=state.due_at)
        states.append(step)
        due = None if index % 5 == 0 else item.due_at + dt.timedelta(minutes=index % 300 - 150)
        items.append(WorkItem(organization_id=item.organization_id, run=clone, step_state=step, step_id="approve",
                              kind="approve", assigned_group=item.assigned_group, due_at=due,
                              created_at=item.created_at + dt.timedelta(seconds=index)))
    Run.objects.bulk_create(runs, batch_size=500)
    StepState.objects.bulk_create(states, batch_size=500)
    WorkItem.objects.bulk_create(items, batch_size=500)


def _count_queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_inbox_uses_a_constant_number_of_queries_with_5000_items(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance", "legal", "ops"])
    template = start(agent, "quick-approval", {"vendorName": "Template", "amount": 1})["run"]["id"]
    _bulk_open_items(template, 4)
    urls = ["/", "/?page=3", "/?q=vendor&overdue=1", "/?process=quick-approval&kind=approve"]
    for url in urls:  # warm the caches (compiled definitions, how fields are shown), as in a running server
        page(client, url)
    small = [_count_queries(client, url) for url in urls]

    _bulk_open_items(template, 4995)
    assert WorkItem.objects.filter(state="open").count() == 5000
    large = [_count_queries(client, url) for url in urls]
    assert large == small, (small, large)
    # Session, user, member, groups, catalog, last visit, saved views, the counts, the page, the
    # visit's update: 10 whatever the number of items (tests/test_inbox_queue_views.py: every view);
    # how the fields are shown comes from the cache.
    assert max(large) <= 10, large
    html = page(client, "/")
    assert len(inbox_ids(html)) == 50
    assert re.search(r'data-count="total"><strong>5000</strong>', html)


# ---------------------------------------------------------------- work item page: approvals


def test_work_item_page_shows_step_text_body_inputs_and_earlier_steps(publish, person_client, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    client, _ = person_client("fin@example.com", groups=["finance"])
    view = supplier_at_approval(agent, vendor="Acme <b>Corp</b>")
    item = item_of(view)
    html = page(client, f"/work/{item['id']}")
    assert "Approve only when the vendor is cleared and the spend is justified." in html
    assert "<h3>Supplier onboarding</h3>" in html  # the body, rendered from Markdown, under the page's h2
    assert "Acme &lt;b&gt;Corp&lt;/b&gt;" in html and "Acme <b>Corp</b>" not in html  # inputs escaped
    assert "48,000" in html  # with the locale's separators (issue 16, point 2)
    assert "Checked OFAC and EU." in html  # earlier step's summary
    assert "No hits" in html  # route reason
    assert re.search(r'href="http[^"]+/files/f_[^"]+\?t=[^"]+"', html)  # file evidence opens via its url
    assert 'name="snapshot" value="' + item["snapshot"] + '"' in html
    for decision in ("approved", "rejected", "failed"):
        assert f'value="{decision}"' in html
    assert 'value="completed"' not in html


def test_markdown_body_is_sanitized(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    item = item_of(start(agent, "quick-approval", {"vendorName": "X", "amount": 1}))
    html = page(client, f"/work/{item['id']}")
    assert "<script>alert" not in html
    assert "Finance approves; the agent records it." in html


def test_approve_moves_the_run_on(quick, person_client, agent):
    client, finance = person_client("fin@example.com", groups=["finance"])
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 120.5})
    item = item_of(view)
    response = decide_form(client, item["id"], {"decision": "approved", "note": ""})
    assert response["Location"] == "/"
    assert states_of(view["run"]["id"]) == {"approve": "done", "record": "ready", "done": None}
    data = run_of(view["run"]["id"]).steps_data["approve"]
    assert data["decision"] == "approved" and data["by"] == "fin@example.com" and "note" not in data
    html = page(client, "/")
    assert "Approved: quick-approval · Approve. The run is now active." in html
    assert inbox_ids(html) == []


def test_approve_with_an_optional_note_keeps_it(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})
    decide_form(client, item_of(view)["id"], {"decision": "approved", "note": "Fine this once."})
    assert run_of(view["run"]["id"]).steps_data["approve"]["note"] == "Fine this once."


def test_reject_needs_a_note_and_ends_the_run_rejected(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})
    item = item_of(view)
    response = decide_form(client, item["id"], {"decision": "rejected", "note": "  "}, status=422)
    html = response.content.decode()
    # A sentence the person acts on, the protocol's issue kept in details for support (issue 16).
    assert re.search(r'id="note-errors"><li class="field-error">Write a note that says why, for whoever gets the '
                     r'work back. <details class="raw-issue"><summary>Details</summary><code>note: required</code>', html)
    assert run_of(view["run"]["id"]).state == "waiting"
    decide_form(client, item["id"], {"decision": "rejected", "note": "Over budget."})
    run = run_of(view["run"]["id"])
    assert (run.state, run.outcome, run.ended_note) == ("ended", "rejected", "Over budget.")


def test_reject_into_on_reject_reopens_the_earlier_step(publish, person_client, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    client, _ = person_client("fin@example.com", groups=["finance"])
    clock.advance(dt.timedelta(hours=-3))
    view = supplier_at_approval(agent)
    clock.advance(dt.timedelta(hours=1))
    decide_form(client, item_of(view)["id"], {"decision": "rejected", "note": "Check the aliases too."})
    clock.advance(dt.timedelta(hours=1))
    run = run_of(view["run"]["id"])
    assert states_of(run.id)["check_vendor"] == "ready"
    assert run.steps_data["approve"]["note"] == "Check the aliases too."
    claim = agent.ok("claim", runId=run.id, stepId="check_vendor")
    assert claim["handoff"] is None or "returned" not in claim["handoff"]
    upload = agent.ok("upload", fileName="r2.txt", contentType="text/plain",
                      contentBase64=base64.b64encode(b"aliases clear").decode())
    agent.ok("submit", token=claim["token"], output={"cleared": True, "summary": "aliases clear"},
             evidence=[{"kind": "file", "ref": upload["id"]}], summary="Checked the aliases too.",
             next="approve", reason="Still no hits")
    html = page(client, f"/runs/{run.id}")
    assert "reworked · attempt 1" in html  # the first check_vendor completion, now in history
    assert "Checked OFAC and EU." in html and "Checked the aliases too." in html
    assert html.index("Checked OFAC and EU.") < html.index("Check the aliases too.") < html.index(
        "Checked the aliases too.")  # the timeline is in the order things happened


def test_fail_on_an_approval_ends_the_run(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})
    decide_form(client, item_of(view)["id"], {"decision": "failed", "note": "Vendor went bankrupt."})
    run = run_of(view["run"]["id"])
    assert (run.state, run.outcome, run.ended_note) == ("ended", "failed", "Vendor went bankrupt.")
    assert states_of(run.id)["approve"] == "failed"


def test_a_double_submitted_form_decides_once(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})
    item = item_of(view)
    url = f"/work/{item['id']}"
    payload = {**hidden(page(client, url)), "decision": "approved"}
    first = client.post(url, payload)
    second = client.post(url, payload)
    assert first.status_code == second.status_code == 302
    assert WorkItem.objects.get(pk=item["id"]).decision == "approved"
    assert run_of(view["run"]["id"]).steps_data["approve"].get("history") == []


# ---------------------------------------------------------------- work item page: tasks


@pytest.fixture
def review(publish):
    return publish(VENDOR_REVIEW, {"reviewers": "reviewers"})


def _task_payload(**overrides):
    payload = {
        "out.score": "12345678901234567890.5e-3",  # score: kept exactly as typed, never rounded
        "out.approved": "true",
        "out.reviewedOn": "2026-10-07",
        "out.meetingAt": "2026-10-07T14:30", "offset:out.meetingAt": "+02:00",
        "out.tags": "reliable\n  fast  \n\nlocal",
        "out.amounts": "1\n2.50\n-3e2",
        "out.details": '{"country": "DE", "employees": 40}',
        "out.contact": "contact@vendor.example",
        "out.tier": '"silver"',
        "out.comment": "",
        "evidence_links": "https://example.com/report\nDOC-42",
        "next": "accept",
        "reason": "Everything checks out.",
        "summary": "Called them and read the report.",
        "decision": "completed",
    }
    payload.update(overrides)
    return payload


def test_task_form_has_a_widget_per_type(review, person_client, make_person):
    client, reviewer = person_client("rev@example.com", groups=["reviewers"])
    view = start(reviewer, "vendor-review", {"vendorName": "Acme"})
    html = page(client, f"/work/{item_of(view)['id']}")
    assert re.search(r'<input type="number" id="field-out_score" name="out.score" value="" step="any"', html)
    assert re.search(r'<select id="field-out_approved" name="out.approved"', html) and ">Yes</option>" in html
    assert re.search(r'<input type="date" id="field-out_reviewedOn"', html)
    assert re.search(r'<input type="datetime-local" step="1" id="field-out_meetingAt"', html)
    assert 'name="offset:out.meetingAt"' in html and '<option value="+05:45"' in html
    # Lists and objects are rows to fill in, not JSON to type (issue 16, point 1).
    assert re.search(r'<input type="text" id="field-out_tags-0" data-id="field-out_tags-\{i\}" name="out.tags.0" '
                     r'data-name="out.tags.\{i\}"', html)
    assert 'name="out.tags.n" value="1"' in html and 'value="out.tags|add_row"' in html
    assert re.search(r'<input type="number" id="field-out_amounts-0" data-id="field-out_amounts-\{i\}" '
                     r'name="out.amounts.0"', html)
    assert 'name="out.details.k0"' in html and 'name="out.details.v0"' in html and 'name="out.details.t0"' in html
    assert re.search(r'<input type="email" id="field-out_contact"', html)
    assert re.search(r'<select id="field-out_tier" name="out.tier"', html)
    assert '<option value="&quot;gold&quot;">gold</option>' in html
    # Labels are words, not keys; optional fields say so; required ones are required in the browser too.
    assert re.search(r'<label for="field-out_reviewedOn">Reviewed on <span class="required"', html)
    assert re.search(r'<label for="field-out_comment">Comment <span class="optional">\(optional\)</span>', html)
    assert re.search(r'id="field-out_score" name="out.score" value="" step="any" inputmode="decimal" '
                     r'aria-describedby="field-out_score-help" required>', html)
    assert 'value="failed" id="decide-failed" class="button decision-failed" formnovalidate' in html
    assert 'type="file" id="evidence-files" name="evidence_files" multiple' in html
    assert 'name="evidence_links"' in html
    assert re.search(r'<select id="route-next" name="next">', html)
    assert "Accept — The vendor passes" in html and 'name="reason"' in html
    assert 'enctype="multipart/form-data"' in html
    for decision in ("completed", "failed"):
        assert f'value="{decision}"' in html
    assert 'value="approved"' not in html


def test_task_completes_with_typed_fields_a_file_and_a_route(review, person_client, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client, reviewer = person_client("rev@example.com", groups=["reviewers"])
    view = start(reviewer, "vendor-review", {"vendorName": "Acme"})
    item = item_of(view)
    upload = SimpleUploadedFile("report.pdf", b"%PDF-1.4 report", content_type="application/pdf")
    decide_form(client, item["id"], _task_payload(), files={"evidence_files": upload})
    run = run_of(view["run"]["id"])
    assert (run.state, run.outcome) == ("ended", "accepted")
    record = run.steps_data["review"]
    assert record["output"] == {  # the number as typed, every digit (spec §2.3: never rounded; issue 13)
        "score": Decimal("12345678901234567890.5e-3"), "approved": True, "reviewedOn": "2026-10-07",
        "meetingAt": "2026-10-07T14:30:00+02:00", "tags": ["reliable", "fast", "local"], "amounts": [1, 2.5, -300.0],
        "details": {"country": "DE", "employees": 40}, "contact": "contact@vendor.example", "tier": "silver",
    }
    assert isinstance(record["output"]["amounts"][0], int)
    assert [item["kind"] for item in record["evidence"]] == ["file", "link", "link"]
    assert record["evidence"][1:] == [{"kind": "link", "ref": "https://example.com/report"},
                                      {"kind": "link", "ref": "DOC-42"}]
    assert (record["next"], record["reason"]) == ("accept", "Everything checks out.")
    assert record["summary"] == "Called them and read the report."
    assert record["by"] == "rev@example.com"


def test_numbers_are_sent_exactly_as_typed():
    from workqueue.forms import parse_number

    assert parse_number("48000") == 48000 and isinstance(parse_number("48000"), int)
    assert parse_number("123456789012345678901234567890") == 123456789012345678901234567890
    assert parse_number("0.1") == 0.1 and parse_number("-2.50") == -2.5 and parse_number("1e3") == 1000.0
    assert parse_number("abc") is None and parse_number("") is None
    # Beyond double range or precision: the number typed, every digit (spec §2.3; issue 13).
    assert parse_number("1e999") == Decimal("1e999") and parse_number("1e-400") == Decimal("1e-400")


def test_datetime_without_a_chosen_offset_is_utc():
    from django.http import QueryDict

    from workqueue.forms import build_widgets, read_widgets

    widgets = build_widgets({"at": "datetime", "when": "datetime"}, "x.")
    for widget in widgets:
        widget.fill_from_post(QueryDict("x.at=2026-01-02T03:04:05&x.when=2026-01-02T03:04&offset:x.when=-05:30"))
    assert read_widgets(widgets) == {"at": "2026-01-02T03:04:05Z", "when": "2026-01-02T03:04:00-05:30"}


def test_task_errors_are_shown_next_to_their_fields_and_none_is_lost(review, person_client):
    client, reviewer = person_client("rev@example.com", groups=["reviewers"])
    view = start(reviewer, "vendor-review", {"vendorName": "Acme"})
    item = item_of(view)
    payload = _task_payload(**{"out.score": "lots", "out.amounts": "1\ntwo", "out.details": "{not json",
                               "out.contact": "", "next": "",
                               "reason": "", "evidence_links": ""})
    response = decide_form(client, item["id"], payload, status=422)
    html = response.content.decode()
    expected = {
        "field-out_score-errors": "output.score: expected number",
        "field-out_amounts-errors": "output.amounts[1]: expected number",
        "field-out_details-errors": "output.details: expected object",
        "field-out_contact-errors": "output.contact: missing",
        "evidence-errors": "evidence: file required",
        "next-errors": "next: required, one of accept, decline",
        "reason-errors": "reason: required",
    }
    for block, issue in expected.items():
        match = re.search(rf'id="{block}">(.*?)</ul>', html, re.S)
        assert match and issue in match.group(1), (block, issue)
    assert "Hint: &#x27;lots&#x27; is not a number" in html
    # What the person typed is kept.
    assert "{not json</textarea>" in html and 'value="2026-10-07"' in html
    # Nothing happened, and a fresh requestId is issued for the next attempt.
    assert run_of(view["run"]["id"]).state == "waiting"
    assert hidden(html)["request_id"] != payload.get("request_id")


def test_every_issue_of_a_refusal_is_shown_somewhere():
    from workqueue.forms import DecisionForm

    form = DecisionForm(requirements={"output": {"amount": "number", "tags": {"type": "list", "items": "string"}},
                                      "evidence": ["file"], "next": [{"to": "a"}, {"to": "b"}]},
                        decisions=["completed", "failed"])
    issues = ["output.amount: expected number", "output.tags[3]: expected string", "output.extra: not declared",
              "evidence: file required", "evidence f_000: not found", "next: required, one of a, b",
              "reason: required", "summary: at most 2000 characters", "note: required",
              "run data: 5 bytes would exceed limits.runDataBytes (1)", "output: expected object"]
    form.show_issues(issues)
    shown = [e for w in form.widgets for e in w.errors] + form.general_errors + [
        e for errors in form.part_errors.values() for e in errors]
    assert sorted(shown) == sorted(issues)
    assert form.widgets[0].errors == ["output.amount: expected number"]
    assert form.widgets[1].errors == ["output.tags[3]: expected string"]
    assert form.part_errors["evidence"] == ["evidence: file required", "evidence f_000: not found"]
    assert "output.extra: not declared" in form.general_errors


def test_fail_on_a_task_ignores_the_output_and_needs_a_note(review, person_client):
    client, reviewer = person_client("rev@example.com", groups=["reviewers"])
    view = start(reviewer, "vendor-review", {"vendorName": "Acme"})
    item = item_of(view)
    response = decide_form(client, item["id"], _task_payload(decision="failed", note=""), status=422)
    assert "note: required" in response.content.decode()
    decide_form(client, item["id"], _task_payload(decision="failed", note="Vendor withdrew."))
    run = run_of(view["run"]["id"])
    assert (run.state, run.outcome, run.ended_note) == ("ended", "failed", "Vendor withdrew.")


def test_file_evidence_uploaded_before_a_refusal_is_kept_for_the_next_attempt(review, person_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client, reviewer = person_client("rev@example.com", groups=["reviewers"])
    view = start(reviewer, "vendor-review", {"vendorName": "Acme"})
    item = item_of(view)
    upload = SimpleUploadedFile("scan.png", b"\x89PNG fake", content_type="image/png")
    response = decide_form(client, item["id"], _task_payload(reason=""), files={"evidence_files": upload}, status=422)
    html = response.content.decode()
    kept = re.search(r'name="attached" value="(f_[^|"]+)\|scan.png" checked', html)
    assert kept, html
    fields = hidden(html)
    response = client.post(f"/work/{item['id']}",
                           {**fields, **_task_payload(), "attached": f"{kept.group(1)}|scan.png"})
    assert response.status_code == 302
    record = run_of(view["run"]["id"]).steps_data["review"]
    assert record["evidence"][0]["ref"] == kept.group(1)


# ---------------------------------------------------------------- work item page: escalations


def test_escalation_page_shows_the_agents_note(publish, person_client, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    client, _ = person_client("ops@example.com", operator=True)
    item = item_of(escalated_supplier(agent))
    html = page(client, f"/work/{item['id']}")
    assert "Escalated by the agent" in html
    assert "The OFAC site is down; I cannot finish the screening." in html
    assert "a_screener" in html
    for decision in ("returned", "completed", "failed"):
        assert f'value="{decision}"' in html


def test_escalation_returned_makes_the_step_ready_with_the_note(publish, person_client, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    client, _ = person_client("ops@example.com", operator=True)
    view = escalated_supplier(agent)
    item = item_of(view)
    decide_form(client, item["id"], {"decision": "returned", "note": "Try the EU list mirror."})
    run_id = view["run"]["id"]
    assert states_of(run_id)["check_vendor"] == "ready"
    work = agent.ok("get_work")["items"]
    assert work[0]["handoff"]["returned"]["note"] == "Try the EU list mirror."


def test_escalation_completed_in_the_agents_place(publish, person_client, agent):
    from django.core.files.uploadedfile import SimpleUploadedFile

    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    client, _ = person_client("ops@example.com", operator=True)
    view = escalated_supplier(agent)
    item = item_of(view)
    upload = SimpleUploadedFile("screening.txt", b"manual screening: clear", content_type="text/plain")
    decide_form(client, item["id"], {"decision": "completed", "out.cleared": "true",
                                     "out.summary": "Manually screened.",
                                     "next": "approve", "reason": "Cleared by hand."},
                files={"evidence_files": upload})
    run = run_of(view["run"]["id"])
    record = run.steps_data["check_vendor"]
    assert record["output"] == {"cleared": True, "summary": "Manually screened."}
    assert record["by"] == "ops@example.com" and record["next"] == "approve"
    assert states_of(run.id)["approve"] == "waiting"


def test_escalation_failed_ends_the_run(publish, person_client, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    client, _ = person_client("ops@example.com", operator=True)
    view = escalated_supplier(agent)
    decide_form(client, item_of(view)["id"], {"decision": "failed", "note": "Cannot screen this vendor."})
    run = run_of(view["run"]["id"])
    assert (run.state, run.outcome) == ("ended", "failed")


def test_a_check_unsure_escalation_shows_the_verdict_and_completes_with_the_candidate(
        vendor_check, agent, evaluator, person_client):
    client, _ = person_client("ops@example.com", operator=True)
    evaluator.script[CHECK_Q1] = {"probability": 0.62}
    _claim, arguments = screening(agent, vendor_check)
    item = item_of(agent.ok("submit", **arguments))
    html = page(client, f"/work/{item['id']}")
    assert "The check was unsure about this submission" in html and "unsure" in html
    assert "Escalation" in page(client, "/?kind=escalation")
    values = form_values(html)  # prefilled with the held candidate
    assert values["out.cleared"] == "true" and values["out.summary"] == "Clear on OFAC and EU lists."
    assert values["next"] == "approve" and values["reason"] == "Cleared on both lists."
    assert values["attached"].startswith(arguments["evidence"][0]["ref"] + "|")
    response = client.post(f"/work/{item['id']}", {**values, "decision": "completed"})
    assert response.status_code == 302, response.content.decode()[:2000]
    entry = run_of(vendor_check).steps_data["check_vendor"]
    assert entry["output"] == arguments["output"] and entry["by"] == "ops@example.com"
    assert entry["check"]["verdict"] == "unsure" and entry["next"] == "approve"


# ---------------------------------------------------------------- stale, already decided, access


def test_a_stale_decision_rerenders_with_the_fresh_data_and_names_what_changed(publish, person_client, agent):
    publish(PARALLEL_REVIEW, {"finance-approver": "finance"})
    client, _ = person_client("fin@example.com", groups=["finance"])
    view = start(agent, "parallel-review", {"vendorName": "Acme"})
    run_id = view["run"]["id"]
    item = item_of(view, "approve")
    url = f"/work/{item['id']}"
    fields = hidden(page(client, url))
    # Meanwhile the parallel branch completes: the run data changes.
    claim = agent.ok("claim", runId=run_id, stepId="screen")
    agent.ok("submit", token=claim["token"], output={"cleared": False, "findings": "One alias matches a PEP list."},
             summary="Screened both lists.")

    response = client.post(url, {**fields, "decision": "approved"})
    assert response.status_code == 409
    html = response.content.decode()
    assert "The run changed since you opened this item" in html
    assert re.search(r'<ul class="changed"><li>Screen \(screen\)</li></ul>', html)
    assert "One alias matches a PEP list." in html
    assert hidden(html)["snapshot"] == run_of(run_id).snapshot != fields["snapshot"]
    assert WorkItem.objects.get(pk=item["id"]).state == "open"
    # Deciding again on the fresh page applies.
    response = client.post(url, {**hidden(html), "decision": "approved"})
    assert response.status_code == 302
    run = run_of(run_id)
    assert (run.state, run.outcome) == ("ended", "onboarded")


def test_changed_parts_names_inputs_and_steps():
    from workqueue.presenting import changed_parts, shown_digest

    before = {"data": {"inputs": {"a": 1}, "steps": {"x": {"output": {"v": 1}, "evidence": [
        {"kind": "file", "ref": "f_1", "url": "https://h/files/f_1?t=1"}]}}}, "steps": [{"id": "x"}, {"id": "y"}]}
    after = {"data": {"inputs": {"a": 1}, "steps": {"x": {"output": {"v": 1}, "evidence": [
        {"kind": "file", "ref": "f_1", "url": "https://h/files/f_1?t=2"}]}, "y": {"output": {}}}},
        "steps": [{"id": "x"}, {"id": "y"}]}
    assert changed_parts(shown_digest(before), after) == (False, ["y"])  # a fresh file URL is no change
    assert changed_parts(shown_digest(before), before) == (False, [])
    assert changed_parts("garbage", after) == (False, ["x", "y"])


def test_a_second_group_member_is_told_who_already_decided(quick, person_client, agent):
    first, _ = person_client("fin@example.com", groups=["finance"])
    second, _ = person_client("fin2@example.com", groups=["finance"])
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})
    item = item_of(view)
    url = f"/work/{item['id']}"
    opened_earlier = hidden(page(second, url))
    decide_form(first, item["id"], {"decision": "approved"})
    response = second.post(url, {**opened_earlier, "decision": "rejected", "note": "No."})
    assert response.status_code == 409
    html = response.content.decode()
    decided = WorkItem.objects.get(pk=item["id"])
    assert "Someone already decided this item" in html
    assert f"fin@example.com decided it (approved) at {decided.decided_at:%Y-%m-%d %H:%M UTC}" in html
    # Reading the page later shows the same.
    html = page(second, url)
    assert "Already decided:" in html and "fin@example.com" in html and 'value="approved"' not in html


def test_decision_on_an_ended_run_says_so(quick, person_client, make_person, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    operator = make_person("ops@example.com", operator=True)
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})
    item = item_of(view)
    url = f"/work/{item['id']}"
    fields = hidden(page(client, url))
    operator.ok("cancel", runId=view["run"]["id"], reason="Duplicate request.")
    response = client.post(url, {**fields, "decision": "approved"})
    assert response.status_code == 409
    html = response.content.decode()
    assert "The run has ended" in html and "removed because the run was cancelled" in html


def test_someone_outside_the_assignment_gets_403_an_outsider_and_another_org_404(quick, person_client, agent):
    starter, starter_actor = person_client("starter@example.com", groups=["sales"])
    view = starter_actor.ok("start_run", process="quick-approval", inputs={"vendorName": "Acme", "amount": 1})
    item = item_of(view)
    # The starter sees the run but is not in the approval's group: "not yours", nothing decided.
    assert starter.get(f"/work/{item['id']}").status_code == 403
    response = starter.post(f"/work/{item['id']}", {"decision": "approved", "snapshot": item["snapshot"]})
    assert response.status_code == 403
    # Someone who takes no part in the run: the item does not exist for them (runs/visibility.py).
    outsider, _ = person_client("legal@example.com", groups=["legal"])
    assert outsider.get(f"/work/{item['id']}").status_code == 404
    response = outsider.post(f"/work/{item['id']}", {"decision": "approved", "snapshot": item["snapshot"]})
    assert response.status_code == 404
    elsewhere, _ = person_client("fin@other.example", groups=["other-finance"], org_slug="other")
    assert elsewhere.get(f"/work/{item['id']}").status_code == 404
    assert elsewhere.get(f"/runs/{view['run']['id']}").status_code == 404
    assert elsewhere.get("/work/w_does_not_exist").status_code == 404
    assert WorkItem.objects.get(pk=item["id"]).state == "open"


def test_csrf_is_enforced_on_decisions(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"], csrf=True)
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})
    item = item_of(view)
    html = page(client, f"/work/{item['id']}")
    response = client.post(f"/work/{item['id']}", {**hidden(html), "decision": "approved"})
    assert response.status_code == 403
    assert WorkItem.objects.get(pk=item["id"]).state == "open"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    response = client.post(f"/work/{item['id']}", {**hidden(html), "decision": "approved",
                                                   "csrfmiddlewaretoken": token})
    assert response.status_code == 302


# ---------------------------------------------------------------- runs


def _value_for(spec, person_email):
    kind = spec if isinstance(spec, str) else spec["type"]
    if isinstance(spec, dict) and spec.get("one_of"):
        return spec["one_of"][0]
    return {"string": "x", "number": 1, "boolean": True, "date": "2026-01-01", "datetime": "2026-01-01T00:00:00Z",
            "list": [], "object": {}, "person": person_email}[kind]


def _sources():
    sources = [pytest.param(path, id=f"example-{path.name}")
               for path in sorted(EXAMPLES.iterdir()) if (path / "PROCESS.md").exists()]
    if spec_present():
        sources += [pytest.param(FIXTURES / name, id=f"fixture-{name}") for name in CORE_FIXTURES + PROFILE_FIXTURES]
    return sources


@pytest.mark.parametrize("path", _sources())
def test_run_page_draws_the_process_map(path: Path, publish, person_client, settings):
    import xml.etree.ElementTree as ET

    from processes.parsing import parse_process_file
    from processes.validation import role_names

    # check-1 is offered while an evaluator is configured; starting a run never calls it.
    settings.CHECK_EVALUATOR_URL, settings.CHECK_EVALUATOR_MODEL = "http://127.0.0.1:9/v1", "unused"

    parsed = parse_process_file((path / "PROCESS.md").read_text())
    roles = role_names(parsed.frontmatter)
    client, person = person_client("mira@example.com", groups=[f"group-{role}" for role in roles])
    publish(path, {role: f"group-{role}" for role in roles})
    inputs = {field: _value_for(spec, "mira@example.com")
              for field, spec in (parsed.frontmatter.get("inputs") or {}).items()
              if not (isinstance(spec, dict) and spec.get("optional"))}
    view = start(person, parsed.frontmatter["name"], inputs)
    html = page(client, f"/runs/{view['run']['id']}")
    svg = re.search(r"<svg.*?</svg>", html, re.S)
    assert svg, html[:2000]
    ET.fromstring(svg.group(0))  # well-formed
    drawn = set(re.findall(r'data-step="([^"]+)"', svg.group(0)))
    assert {step["id"] for step in parsed.frontmatter["steps"]} <= drawn
    for row in view["steps"]:  # the run's current steps are highlighted
        if row["state"] in ("ready", "claimed", "waiting"):
            assert re.search(rf'<g class="[^"]*\bcurrent\b[^"]*" data-node="[^"]*" data-step="{row["id"]}"',
                             svg.group(0)), row
    assert "flowchart TD" in html and 'data-copy="#mermaid-text"' in html


def test_run_page_shows_state_timeline_reasons_work_items_and_history(publish, person_client, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    client, _ = person_client("fin@example.com", groups=["finance"])
    view = supplier_at_approval(agent)
    run_id = view["run"]["id"]
    item = item_of(view)
    html = page(client, f"/runs/{run_id}")
    assert 'id="run-state">waiting<' in html
    assert "a_screener" in html and "Checked OFAC and EU." in html and "No hits" in html
    assert f'href="/work/{item["id"]}"' in html
    assert "group finance" in html
    decide_form(client, item["id"], {"decision": "approved"})
    html = page(client, f"/runs/{run_id}")
    assert 'id="run-outcome">onboarded<' in html
    assert "fin@example.com" in html


def test_runs_list_filters_by_process_state_and_inputs(publish, quick, person_client, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    client, operator = person_client("ops@example.com", operator=True)
    a = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 48000})["run"]["id"]
    b = start(agent, "quick-approval", {"vendorName": "Bolt", "amount": 12.5})["run"]["id"]
    c = start(agent, "supplier-onboarding", {"vendorName": "Acme", "amount": 48000})["run"]["id"]
    operator.ok("cancel", runId=b, reason="test")

    def listed(query):
        return re.findall(r'<tr data-run="([^"]+)">', page(client, "/runs/" + query))

    assert set(listed("")) == {a, b, c}
    assert set(listed("?process=quick-approval")) == {a, b}
    assert listed("?state=cancelled") == [b]
    assert listed("?process=quick-approval&input.vendorName=Acme") == [a]
    assert listed("?process=quick-approval&input.amount=48000") == [a]
    assert listed("?process=quick-approval&input.amount=12.5") == [b]
    assert listed("?process=quick-approval&input.amount=7") == []
    assert 'name="input.vendorName"' in page(client, "/runs/?process=quick-approval")


def test_runs_list_pages_with_a_cursor(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    for index in range(55):
        with clock.frozen(dt.datetime(2026, 10, 6, tzinfo=dt.UTC) + dt.timedelta(seconds=index)):
            start(agent, "quick-approval", {"vendorName": f"V{index}", "amount": index})
    html = page(client, "/runs/")
    assert len(re.findall(r"<tr data-run=", html)) == 50
    cursor = re.search(r'href="\?cursor=([^"]+)"', html).group(1)
    assert len(re.findall(r"<tr data-run=", page(client, f"/runs/?cursor={cursor}"))) == 5


def test_start_run_from_the_browser_with_typed_inputs(quick, person_client):
    client, _ = person_client("fin@example.com", groups=["finance"])
    html = page(client, "/runs/start/?process=quick-approval")
    assert 'name="in.vendorName"' in html and 'type="number" id="field-in_amount"' in html
    request_id = re.search(r'name="request_id" value="([^"]+)"', html).group(1)
    response = client.post("/runs/start/", {"process": "quick-approval", "in.vendorName": "Acme", "in.amount": "abc",
                                            "request_id": request_id})
    assert response.status_code == 400
    assert re.search(r'id="field-in_amount-errors"><li class="field-error">Enter the amount as a number, like '
                     r'1250.50. <details class="raw-issue"><summary>Details</summary><code>inputs.amount: expected number',
                     response.content.decode())
    response = client.post("/runs/start/", {"process": "quick-approval", "in.vendorName": "Acme", "in.amount": "0.1",
                                            "mode": "test", "request_id": request_id})
    assert response.status_code == 302
    run = Run.objects.get()
    assert run.inputs == {"vendorName": "Acme", "amount": 0.1} and run.mode == "test"
    assert response["Location"] == f"/runs/{run.id}"


# ---------------------------------------------------------------- operators


def test_operator_pages_are_403_for_everyone_else(quick, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    run_id = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})["run"]["id"]
    assert client.get("/operators/").status_code == 403
    assert client.post(f"/runs/{run_id}/cancel", {"reason": "no"}).status_code == 403
    assert 'id="cancel-reason"' not in page(client, f"/runs/{run_id}")
    assert run_of(run_id).state == "waiting"


def test_operators_see_escalations_and_overdue_work(publish, quick, person_client, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    client, _ = person_client("ops@example.com", operator=True)
    escalation = item_of(escalated_supplier(agent))["id"]
    overdue_item = item_of(start(agent, "quick-approval", {"vendorName": "Late", "amount": 1}))["id"]
    on_time = item_of(start(agent, "quick-approval", {"vendorName": "Fine", "amount": 1}))["id"]
    WorkItem.objects.filter(pk=overdue_item).update(due_at=clock.now() - dt.timedelta(hours=3))
    late_run = publish(EXAMPLES / "expense-approval", {})
    assert late_run
    # An agent step past due: invoice-approval's agent step has no due; use a due on a bulk row.
    run_id = start(agent, "supplier-onboarding", {"vendorName": "Slow", "amount": 1})["run"]["id"]
    StepState.objects.filter(run_id=run_id, step_id="check_vendor").update(due_at=clock.now() - dt.timedelta(hours=1))
    html = page(client, "/operators/")
    escalations = html.split('id="escalations"')[1].split('id="overdue"')[0]
    overdue = html.split('id="overdue"')[1]
    assert escalation in escalations and overdue_item not in escalations
    assert overdue_item in overdue and on_time not in overdue and escalation not in overdue
    assert f'data-run="{run_id}" data-step-id="check_vendor"' in overdue


def test_operators_cancel_a_run_with_a_reason(quick, person_client, agent):
    client, _ = person_client("ops@example.com", operator=True)
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})
    run_id = view["run"]["id"]
    html = page(client, f"/runs/{run_id}")
    request_id = re.search(r'<form method="post" action="/runs/[^"]+/cancel".*?name="request_id" value="([^"]+)"',
                           html, re.S).group(1)
    response = client.post(f"/runs/{run_id}/cancel", {"reason": "", "request_id": request_id})
    assert response.status_code == 302
    assert "Not cancelled" in page(client, f"/runs/{run_id}")
    response = client.post(f"/runs/{run_id}/cancel", {"reason": "Duplicate of another run.", "request_id": request_id})
    assert response.status_code == 302 and response["Location"] == f"/runs/{run_id}"
    run = run_of(run_id)
    assert (run.state, run.ended_note, run.ended_by) == ("cancelled", "Duplicate of another run.", "ops@example.com")
    html = page(client, f"/runs/{run_id}")
    assert "The run was cancelled." in html and 'id="cancel-reason"' not in html
    assert WorkItem.objects.get(pk=item_of(view)["id"]).state == "removed"


# ---------------------------------------------------------------- API tokens


def test_tokens_page_creates_shows_once_and_revokes(person_client, make_person):
    from kernel.identity import identity_from_bearer
    from kernel.models import ApiToken

    client, _ = person_client("mira@example.com")
    make_person("other@example.com")  # has its own tokens, never shown here
    other_ids = list(ApiToken.objects.filter(user__email="other@example.com").values_list("pk", flat=True))
    response = client.post("/tokens/", {"label": "laptop CLI"})
    assert response.status_code == 200 and "no-store" in response.get("Cache-Control", "")
    html = response.content.decode()
    plaintext = re.search(r'<code class="token-value" id="token-plaintext">([^<]+)</code>', html).group(1)
    assert identity_from_bearer(plaintext).email == "mira@example.com"
    listing = page(client, "/tokens/")
    assert plaintext not in listing and "laptop CLI" in listing
    for pk in other_ids:
        assert f'data-token="{pk}"' not in listing
        assert client.post(f"/tokens/{pk}/revoke").status_code == 404
    row = ApiToken.objects.get(label="laptop CLI")
    response = client.post(f"/tokens/{row.pk}/revoke")
    assert response.status_code == 302
    assert identity_from_bearer(plaintext) is None
    assert "revoked" in page(client, "/tokens/")
    assert ApiToken.objects.filter(pk__in=other_ids, revoked_at__isnull=True).count() == len(other_ids)
