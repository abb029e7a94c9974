"""A work item with amounts in a currency, in real Chromium (issue 21, "Done when"): the run's amount
reads "USD 12,500.50", the total's box says USD beside it at desktop width and at 390 px (no page
scrolls sideways), the lines table has admin's columns to fill, and axe finds nothing serious.
Screenshots: work-item-currency-desktop.png and work-item-currency-390.png."""

import re

import pytest

from kernel import audit
from processes.definition import definition_for
from processes.presentation import Column, FieldFacts, declare
from tests.test_field_presentation import TRAVEL, at_record_lines

from .conftest import PASSWORD, horizontal_overflow, screenshot, sign_in
from .test_mobile_browser import wide_elements
from .test_accessibility_browser import BLOCKING, axe_source, axe_violations, describe  # noqa: F401

pytestmark = pytest.mark.browser

NBSP = "\u00a0"


def test_a_clerk_reads_and_enters_amounts_in_their_currency(server, new_page, publish, make_person, agent, axe_source):
    version = publish(TRAVEL, {"finance": "finance"})
    definition, actor = definition_for(version.pk), audit.Actor(audit.ActorKind.ADMIN, "admin@example.com")
    declare(version=version, definition=definition, path="inputs.amount", facts=FieldFacts(currency="USD"), actor=actor)
    declare(version=version, definition=definition, path="steps.record_lines.output.total",
            facts=FieldFacts(currency="USD"), actor=actor)
    declare(version=version, definition=definition, path="steps.record_lines.output.lines", actor=actor,
            facts=FieldFacts(columns=(Column("what", "What it was"), Column("amount", "Amount", "number", "USD"),
                                      Column("booked", "Booked on", "date"))))
    make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    run_id, item_id = at_record_lines(agent)

    page = new_page()
    sign_in(page, server, "fin@example.com")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{server}/work/{item_id}")
    inputs = page.locator("#inputs-title").locator("xpath=..")
    assert f"USD{NBSP}12,500.50" in inputs.inner_text()

    total, unit = page.locator("#field-out_total"), page.locator("#field-out_total-unit")
    assert unit.inner_text() == "USD" and unit.is_visible()
    box, unit_box = total.bounding_box(), unit.bounding_box()
    assert unit_box["x"] >= box["x"] + box["width"] and abs(unit_box["y"] - box["y"]) < box["height"]  # beside it
    assert "field-out_total-unit" in total.get_attribute("aria-describedby").split()

    # The clerk fills the rows under admin's headings; "Add a row" (JavaScript) copies an empty one.
    editor = page.locator("table.row-editor")
    assert editor.locator(".column-label").all_inner_texts() == ["What it was", "Amount", "Booked on"]
    page.get_by_label("Row 1, What it was").fill("Train to Berlin")
    page.get_by_label("Row 1, Amount (USD)").fill("79.90")
    page.get_by_label("Row 1, Booked on").fill("2026-10-06")
    page.get_by_role("button", name="Add a row").click()
    assert editor.locator("tbody tr").count() == 2
    assert editor.locator("tbody tr").nth(1).locator("input").first.input_value() == ""
    total.fill("79.90")

    violations = axe_violations(page, axe_source)
    blocking = [v for v in violations if v["impact"] in BLOCKING]
    assert not blocking, describe("work item with amounts", blocking)
    screenshot(page, "work-item-currency-desktop")

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    assert horizontal_overflow(page) == 0, wide_elements(page)
    box, unit_box = page.locator("#field-out_total").bounding_box(), page.locator("#field-out_total-unit").bounding_box()
    assert unit_box["x"] >= box["x"] + box["width"] and unit_box["x"] + unit_box["width"] <= 390
    screenshot(page, "work-item-currency-390")

    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_label("Row 1, What it was").fill("Train to Berlin")
    page.get_by_label("Row 1, Amount (USD)").fill("79.90")
    page.get_by_label("Row 1, Booked on").fill("2026-10-06")
    page.locator("#field-out_total").fill("79.90")
    page.get_by_role("button", name="Complete").click()
    page.wait_for_url(re.compile(r".*/$|.*/\?.*"))
    page.goto(f"{server}/runs/{run_id}")
    body = page.locator("main").inner_text()
    assert f"USD{NBSP}79.90" in body and f"USD{NBSP}12,500.50" in body
