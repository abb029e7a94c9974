"""Forms built for people, in real Chromium (issue 16, "Done when"): a list-of-objects output (the
expense process's `lines`) is filled with the row editor and submitted without typing JSON; a wrong
value shows a plain sentence next to the field.

Spec §2.3: a list's `items` may be `object`; numbers are JSON numbers, never rounded.
"""

import re

import pytest

from runs.models import Run
from tests.support.flows import open_item
from tests.support.spec import EXAMPLES

from .conftest import PASSWORD, screenshot, sign_in

pytestmark = pytest.mark.browser


def test_expense_lines_are_filled_with_the_row_editor(server, new_page, publish, make_person, tmp_path):
    publish(EXAMPLES / "expense-approval")
    employee = make_person("employee@example.com", password=PASSWORD)
    make_person("manager@example.com")
    run_id = employee.ok("start_run", process="expense-approval",
                         inputs={"manager": "manager@example.com", "amount": 162.4, "category": "travel"})["run"]["id"]
    item = open_item(employee, run_id, "attach_receipts")
    receipt = tmp_path / "taxi-receipt.pdf"
    receipt.write_bytes(b"%PDF-1.4 taxi 42.40")

    page = new_page()
    sign_in(page, server, "employee@example.com")
    page.goto(f"{server}/work/{item['id']}")
    lines = page.locator('[data-repeat="out.lines"]')
    lines.get_by_label("Column 1 name").fill("what")
    lines.get_by_role("button", name="Add a column").click()  # server-side: the page comes back with 2 columns
    page.wait_for_selector('[name="out.lines.c1"]')
    lines = page.locator('[data-repeat="out.lines"]')
    lines.get_by_label("Column 2 name").fill("amount")
    lines.get_by_label("Column 2 type").select_option("number")
    lines.get_by_label("Row 1, column 1").fill("Taxi")
    lines.get_by_label("Row 1, column 2").fill("42,40")  # a comma: not a number
    lines.get_by_role("button", name="Add a row").click()  # in the page, no reload
    second = lines.locator("[data-row]").nth(1)
    second.locator("input").nth(0).fill("Hotel")
    second.locator("input").nth(1).fill("120")
    assert page.locator('[name="out.lines.nrows"]').input_value() == "2"
    page.get_by_label("Purpose").fill("Client visit, Acme Steel GmbH")
    page.set_input_files("#evidence-files", str(receipt))
    page.get_by_role("button", name="Complete").click()

    errors = page.locator("#field-out_lines-errors")
    try:
        errors.wait_for(timeout=5000)
    except Exception:
        screenshot(page, "debug-row-editor")
        raise
    # An object's fields are not typed by the process, so the form checks the column's type itself.
    assert "Lines, row 1, amount: “42,40” is not a number (write it like 1250.50)." in errors.inner_text()
    assert page.locator('[name="out.lines.r0.c1"]').input_value() == "42,40"  # what was typed is kept
    assert Run.objects.get(pk=run_id).steps_data.get("attach_receipts") in (None, {})
    screenshot(page, "work-item-row-editor-error-desktop")

    page.locator('[name="out.lines.r0.c1"]').fill("42.40")
    page.get_by_role("button", name="Complete").click()
    page.wait_for_url(re.compile(r"/(\?.*)?$"))
    output = Run.objects.get(pk=run_id).steps_data["attach_receipts"]["output"]
    assert output == {"purpose": "Client visit, Acme Steel GmbH",
                      "lines": [{"what": "Taxi", "amount": 42.4}, {"what": "Hotel", "amount": 120}]}
    evidence = Run.objects.get(pk=run_id).steps_data["attach_receipts"]["evidence"]
    assert [e["kind"] for e in evidence] == ["file"]  # the receipt uploaded with the first try stayed attached
