"""People work the inbox in real Chromium (issue 4, "Done when"): approve from a due-sorted inbox,
learn who decided first, complete a typed task with a file and a route, and get fresh data
instead of a stale decision."""

import datetime as dt
import re

import pytest

from kernel import clock
from runs.models import Run, StepState, WorkItem
from tests.support.processes import PARALLEL_REVIEW

from .conftest import PASSWORD, sign_in

pytestmark = pytest.mark.browser

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

Finance approves; the agent records it.
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
      details: object
      contact: person
      tier: { type: string, one_of: [gold, silver, bronze] }
      comment: { type: string, optional: true }
    evidence: [file]
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


def states_of(run_id) -> dict:
    return dict(StepState.objects.filter(run_id=run_id).values_list("step_id", "state"))


def test_finance_approves_the_top_item_of_a_due_sorted_inbox(server, new_page, publish, make_person, agent):
    publish(QUICK_APPROVAL, {"finance-approver": "finance"})
    make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    runs = {}
    for name, hours_ago in (("Later Ltd", 0), ("Urgent GmbH", 30), ("Middle SA", 10)):
        with clock.frozen(clock.now() - dt.timedelta(hours=hours_ago)):
            view = agent.ok("start_run", process="quick-approval", inputs={"vendorName": name, "amount": 100})
        runs[name] = view
    urgent = runs["Urgent GmbH"]

    page = new_page()
    sign_in(page, server, "fin@example.com")
    rows = page.locator("tr.inbox-row")
    assert rows.count() == 3
    assert rows.nth(0).get_attribute("data-work-item") == urgent["workItems"][0]["id"]
    assert "Urgent GmbH" in rows.nth(0).inner_text()
    assert "Later Ltd" in rows.nth(2).inner_text()

    rows.nth(0).get_by_role("link", name="Approve").click()
    page.wait_for_url(re.compile(r"/work/w_"))
    assert "Approve the spend when it is justified." in page.inner_text("main")
    page.locator("#decide-approved").click()
    page.wait_for_url(f"{server}/")
    assert "Approved: quick-approval · Approve. The run is now active." in page.inner_text(".messages")
    assert page.locator("tr.inbox-row").count() == 2

    run_id = urgent["run"]["id"]
    assert states_of(run_id) == {"approve": "done", "record": "ready", "done": None}
    assert Run.objects.get(pk=run_id).steps_data["approve"]["by"] == "fin@example.com"
    work = agent.ok("get_work")["items"]
    assert [(item["runId"], item["stepId"]) for item in work] == [(run_id, "record")]


def test_a_second_member_who_opened_the_item_earlier_is_told_who_decided(server, new_page, publish, make_person,
                                                                         agent):
    publish(QUICK_APPROVAL, {"finance-approver": "finance"})
    make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    make_person("fin2@example.com", groups=["finance"], password=PASSWORD)
    view = agent.ok("start_run", process="quick-approval", inputs={"vendorName": "Acme", "amount": 100})
    item_id = view["workItems"][0]["id"]

    second = new_page()
    sign_in(second, server, "fin2@example.com")
    second.goto(f"{server}/work/{item_id}")  # opened earlier, decided later

    first = new_page()
    sign_in(first, server, "fin@example.com")
    first.goto(f"{server}/work/{item_id}")
    first.locator("#decide-approved").click()
    first.wait_for_url(f"{server}/")

    second.get_by_label("Note").fill("Too expensive.")
    second.locator("#decide-rejected").click()
    banner = second.locator("#banner")
    banner.wait_for()
    decided = WorkItem.objects.get(pk=item_id)
    text = banner.inner_text()
    assert "Someone already decided this item" in text
    assert f"fin@example.com decided it (approved) at {decided.decided_at:%Y-%m-%d %H:%M UTC}" in text
    assert second.locator("#decision-form").count() == 0
    assert decided.decision == "approved" and Run.objects.get(pk=view["run"]["id"]).state == "active"


def test_a_task_with_typed_fields_a_file_and_a_route_completes(server, new_page, publish, make_person, tmp_path):
    publish(VENDOR_REVIEW, {"reviewers": "reviewers"})
    reviewer = make_person("rev@example.com", groups=["reviewers"], password=PASSWORD)
    view = reviewer.ok("start_run", process="vendor-review", inputs={"vendorName": "Acme"})
    item_id = view["workItems"][0]["id"]
    report = tmp_path / "screening-report.pdf"
    report.write_bytes(b"%PDF-1.4\nscreening: clear\n")

    page = new_page(timezone_id="Asia/Kathmandu")  # UTC+05:45, no daylight saving
    sign_in(page, server, "rev@example.com")
    page.locator(f'tr[data-work-item="{item_id}"] a.item-link').click()
    page.wait_for_url(f"{server}/work/{item_id}")

    page.fill("#field-out_score", "48000.125")
    page.select_option("#field-out_approved", "true")
    page.fill("#field-out_reviewedOn", "2026-10-07")
    page.fill("#field-out_meetingAt", "2026-10-07T14:30")  # offset: the browser's own (+05:45)
    # Lists and objects are rows (issue 16): one entry per input, named values with their types.
    page.fill("#field-out_tags-0", "reliable")
    page.locator('[data-repeat="out.tags"]').get_by_role("button", name="Add an entry").click()
    page.locator('[name="out.tags.1"]').fill("fast")
    details = page.locator('[data-repeat="out.details"]')
    details.locator('[name="out.details.k0"]').fill("country")
    details.locator('[name="out.details.v0"]').fill("DE")
    details.get_by_role("button", name="Add a value").click()
    details.locator('[name="out.details.k1"]').fill("employees")
    details.locator('[name="out.details.v1"]').fill("40")
    details.locator('[name="out.details.t1"]').select_option("number")
    page.fill("#field-out_contact", "contact@vendor.example")
    page.select_option("#field-out_tier", label="silver")
    page.set_input_files("#evidence-files", str(report))
    page.fill("#evidence-links", "https://example.com/registry/acme")
    page.select_option("#route-next", "accept")
    page.fill("#route-reason", "Screening clear and references good.")
    page.fill("#summary", "Read the report and called two references.")
    page.locator("#decide-completed").click()
    page.wait_for_url(re.compile(rf"{re.escape(server)}/(\?.*)?$"))
    assert "Completed: vendor-review · Review. The run is now ended (accepted)." in page.inner_text(".messages")

    run = Run.objects.get(pk=view["run"]["id"])
    assert (run.state, run.outcome) == ("ended", "accepted")
    record = run.steps_data["review"]
    assert record["output"] == {
        "score": 48000.125, "approved": True, "reviewedOn": "2026-10-07", "meetingAt": "2026-10-07T14:30:00+05:45",
        "tags": ["reliable", "fast"], "details": {"country": "DE", "employees": 40},
        "contact": "contact@vendor.example", "tier": "silver",
    }
    assert record["evidence"][0]["kind"] == "file" and record["evidence"][1] == {
        "kind": "link", "ref": "https://example.com/registry/acme"}
    assert (record["next"], record["reason"]) == ("accept", "Screening clear and references good.")

    # The uploaded file opens from the run page through its short-lived URL.
    page.goto(f"{server}/runs/{run.id}")
    link = page.locator(f'a[href*="/files/{record["evidence"][0]["ref"]}"]').first
    response = page.request.get(link.get_attribute("href"))
    assert response.ok and response.body() == report.read_bytes()


def test_a_decision_prepared_before_the_run_changed_shows_the_fresh_data(server, new_page, publish, make_person,
                                                                          agent):
    publish(PARALLEL_REVIEW, {"finance-approver": "finance"})
    make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    view = agent.ok("start_run", process="parallel-review", inputs={"vendorName": "Acme"})
    run_id = view["run"]["id"]
    item_id = next(item["id"] for item in view["workItems"] if item["stepId"] == "approve")

    page = new_page()
    sign_in(page, server, "fin@example.com")
    page.goto(f"{server}/work/{item_id}")
    assert "No step has completed yet." in page.inner_text("main")

    # Meanwhile the screening branch runs in parallel and changes the run data.
    claim = agent.ok("claim", runId=run_id, stepId="screen")
    agent.ok("submit", token=claim["token"], output={"cleared": False, "findings": "One alias matches a PEP list."},
             summary="Screened both lists.")

    page.locator("#decide-approved").click()
    banner = page.locator("#banner")
    banner.wait_for()
    assert "The run changed since you opened this item" in banner.inner_text()
    assert banner.locator("ul.changed li").all_inner_texts() == ["Screen (screen)"]
    assert "One alias matches a PEP list." in page.inner_text("main")
    assert WorkItem.objects.get(pk=item_id).state == "open"
    assert states_of(run_id)["approve"] == "waiting"

    # Having read the fresh data, the person decides again and it applies.
    page.get_by_label("Note").fill("Rejecting until the PEP match is explained.")
    page.locator("#decide-rejected").click()
    page.wait_for_url(f"{server}/")
    assert WorkItem.objects.get(pk=item_id).decision == "rejected"
    run = Run.objects.get(pk=run_id)
    assert (run.state, run.outcome) == ("ended", "rejected")
    assert run.ended_note == "Rejecting until the PEP match is explained."
