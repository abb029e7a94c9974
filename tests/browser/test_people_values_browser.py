"""Values people can read, in real Chromium (issue 16, "Done when"): amounts and dates render per
locale and time zone — the browser's zone, picked up by the page itself, with UTC on hover."""

import datetime as dt
import re

import pytest

from kernel import clock
from tests.test_people_values import SPEND

from .conftest import PASSWORD, screenshot, sign_in

pytestmark = pytest.mark.browser


def test_a_browser_in_tokyo_sees_tokyo_times_and_separated_amounts(server, new_page, publish, make_person, agent):
    publish(SPEND, {"finance": "finance"})
    make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    with clock.frozen(dt.datetime(2026, 7, 6, 9, 4, tzinfo=dt.UTC)):
        view = agent.ok("start_run", process="spend-approval", inputs={
            "approver": "fin@example.com", "vendorName": "Acme Steel GmbH", "amount": 1250000.75,
            "lines": [{"what": "Steel", "amount": 38990.1}]})
    page = new_page(timezone_id="Asia/Tokyo")
    sign_in(page, server, "fin@example.com")
    page.reload()  # the first page taught the server the browser's zone
    due = page.locator(f'tr[data-work-item="{view["workItems"][0]["id"]}"] time').first
    assert due.inner_text() == "2026-07-08 18:04 JST"
    assert due.get_attribute("title") == "2026-07-08 09:04 UTC"
    page.get_by_role("link", name=re.compile(r"^Approve spend – Acme Steel GmbH")).click()
    inputs = page.locator("#inputs-title").locator("xpath=..")
    assert "1,250,000.75" in inputs.inner_text() and "38,990.1" in inputs.inner_text()
    screenshot(page, "work-item-values-tokyo-desktop")
