"""Inbox views in real Chromium (issue 15, "Done when"): a saved view with a typed input range shows
the right items and count; a bulk approval of 50 items where 3 changed underneath and 2 were decided
by someone else reports 45 applied, 3 stale, 2 already decided, and changes nothing for the 5.

Spec §3.4: the first decision wins; tools.md `decide`: a decision on data that changed since the
snapshot is `stale`. Each bulk item is one such decision.
"""

import re

import pytest

from kernel.models import AuditEvent, EventKind
from runs.models import WorkItem
from tests.support.processes import PARALLEL_REVIEW
from tests.test_inbox_queue_views import INVOICES

from .conftest import PASSWORD, horizontal_overflow, screenshot, sign_in

pytestmark = pytest.mark.browser


def rows(page) -> list[str]:
    return [row.get_attribute("data-work-item") for row in page.locator("tr.inbox-row").all()]


def test_a_saved_view_with_an_amount_range_shows_its_items_and_count(server, new_page, publish, make_person, agent):
    publish(INVOICES, {"finance": "finance"})
    make_person("ana@example.com", groups=["finance"], password=PASSWORD)
    items = {}
    for vendor, amount in (("Acme Steel", 950), ("Borealis Paper", 1000), ("Cobalt Freight", 12500.5),
                           ("Delta Tools", 20000), ("Echo Media", 20000.01)):
        view = agent.ok("start_run", process="invoice-approval-q",
                        inputs={"vendorName": vendor, "amount": amount, "invoiceDate": "2026-10-06"})
        items[vendor] = view["workItems"][0]["id"]

    page = new_page()
    sign_in(page, server, "ana@example.com")
    page.get_by_label("Process").select_option("invoice-approval-q")  # the page reloads with its inputs
    page.get_by_label("Amount (at least)").fill("1000")
    page.get_by_label("Amount (at most)").fill("20000")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"input\.amount\.min=1000"))
    expected = {items["Borealis Paper"], items["Cobalt Freight"], items["Delta Tools"]}
    assert set(rows(page)) == expected

    page.get_by_text("Save this view").click()
    page.get_by_label("Name", exact=True).fill("Invoices 1,000 to 20,000")
    page.get_by_role("button", name="Save view").click()
    page.wait_for_selector(".message-success")
    assert "Saved the view “Invoices 1,000 to 20,000”" in page.inner_text(".messages")

    page.get_by_role("link", name="Clear filters").click()
    page.wait_for_url(f"{server}/?")
    assert len(rows(page)) == 5
    saved = page.locator('[data-saved-view="Invoices 1,000 to 20,000"]')
    assert saved.locator(".count-badge").inner_text() == "3"
    saved.click()
    page.wait_for_url(re.compile(r"input\.amount\.max=20000"))
    assert set(rows(page)) == expected
    assert page.get_attribute('[data-saved-view="Invoices 1,000 to 20,000"]', "aria-current") == "page"
    assert page.get_by_label("Amount (at least)").input_value() == "1000"  # the form shows the view's filters
    screenshot(page, "inbox-saved-view-desktop")
    page.set_viewport_size({"width": 390, "height": 844})
    assert horizontal_overflow(page) == 0
    screenshot(page, "inbox-saved-view-phone")


def test_bulk_approval_of_50_where_5_changed_underneath(server, new_page, publish, make_person, agent):
    publish(PARALLEL_REVIEW, {"finance-approver": "finance"})
    make_person("ana@example.com", groups=["finance"], password=PASSWORD)
    ben = make_person("ben@example.com", groups=["finance"])
    views = [agent.ok("start_run", process="parallel-review", inputs={"vendorName": f"Vendor {n:02d}"})
             for n in range(50)]
    items = [view["workItems"][0] for view in views]

    page = new_page()
    sign_in(page, server, "ana@example.com")
    assert len(rows(page)) == 50
    page.get_by_label("Select all on this page").check()
    page.get_by_label("Decision").select_option("approved")

    # While the page is open: the agent finishes the screening of 3 runs (their data changes), and
    # Ben approves 2 items first.
    for view in views[:3]:
        token = agent.ok("claim", runId=view["run"]["id"], stepId="screen")["token"]
        agent.ok("submit", token=token, output={"cleared": True, "findings": "none"}, summary="Clear.")
    for item, view in zip(items[3:5], views[3:5], strict=True):
        ben.ok("decide", runId=view["run"]["id"], workItemId=item["id"], decision="approved",
               snapshot=item["snapshot"])
    decisions_before = AuditEvent.objects.filter(kind=EventKind.DECIDED).count()

    screenshot(page, "inbox-bulk-selected-desktop")
    page.get_by_role("button", name="Apply to selected").click()
    page.wait_for_selector(".bulk-result")
    screenshot(page, "inbox-bulk-result-desktop")
    assert page.inner_text('[data-outcome-count="applied"]') == "45 done"
    assert page.inner_text('[data-outcome-count="stale"]').startswith("3 ")
    assert page.inner_text('[data-outcome-count="already_decided"]').startswith("2 ")
    for item in items[:3]:
        row = page.locator(f'tr[data-item="{item["id"]}"]')
        assert row.get_attribute("data-outcome") == "stale"
        assert row.get_by_role("link", name="Review the fresh data and decide").count() == 1
    for item in items[3:5]:
        row = page.locator(f'tr[data-item="{item["id"]}"]')
        assert "ben@example.com decided it at" in row.inner_text()

    # Nothing changed for the 5: the stale ones are still open, the others stay Ben's.
    assert set(WorkItem.objects.filter(pk__in=[i["id"] for i in items[:3]]).values_list("state", flat=True)) == {"open"}
    assert set(WorkItem.objects.filter(pk__in=[i["id"] for i in items[3:5]]).values_list("decided_by", flat=True)) \
        == {"ben@example.com"}
    assert WorkItem.objects.filter(decided_by="ana@example.com").count() == 45
    assert AuditEvent.objects.filter(kind=EventKind.DECIDED).count() == decisions_before + 45
