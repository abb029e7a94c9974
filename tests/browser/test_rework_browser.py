"""Rework in real Chromium (issue 15, "Done when"): a rejected expense task opens pre-filled with
its receipt still attached and is resubmitted with one change."""

import base64
import re

import pytest

from tests.support.flows import LINK, open_item
from tests.support.spec import EXAMPLES

from .conftest import PASSWORD, sign_in

pytestmark = pytest.mark.browser


def test_a_rejected_expense_is_resubmitted_with_one_change(server, new_page, publish, make_person, agent):
    publish(EXAMPLES / "expense-approval")
    employee = make_person("employee@example.com", password=PASSWORD)
    manager = make_person("manager@example.com")
    run_id = employee.ok("start_run", process="expense-approval",
                         inputs={"manager": "manager@example.com", "amount": 42.4, "category": "travel"})["run"]["id"]
    receipt = employee.ok("upload", fileName="taxi-receipt.pdf", contentType="application/pdf",
                          contentBase64=base64.b64encode(b"%PDF taxi 42.40").decode())
    item = open_item(employee, run_id, "attach_receipts")
    employee.ok("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="completed",
                output={"purpose": "Client visit", "lines": [{"what": "taxi", "amount": 42.4}]},
                evidence=[{"kind": "file", "ref": receipt["id"]}])
    token = agent.ok("claim", runId=run_id, stepId="check_policy")["token"]
    agent.ok("submit", token=token, output={"checkedTotal": 42.4, "withinPolicy": True}, evidence=LINK,
             summary="Matches.")
    approval = open_item(manager, run_id, "manager_approval")
    manager.ok("decide", runId=run_id, workItemId=approval["id"], snapshot=approval["snapshot"], decision="rejected",
               note="Name the client in the purpose.")

    page = new_page()
    sign_in(page, server, "employee@example.com")
    row = page.locator("tr.inbox-row")
    assert "Returned for rework" in row.inner_text() and "Name the client in the purpose." in row.inner_text()
    row.locator("a.item-link").click()
    page.wait_for_url(re.compile(r"/work/w_"))
    assert "Name the client in the purpose." in page.inner_text("#sent-back")
    purpose = page.locator('[name="out.purpose"]')
    assert purpose.input_value() == "Client visit"
    attached = page.locator('input[name="attached"]')
    assert attached.count() == 1 and attached.is_checked()
    assert "taxi-receipt.pdf" in page.inner_text("#decision-form")
    purpose.fill("Client visit: Acme Steel GmbH")
    page.locator("#decide-completed").click()
    page.wait_for_url(f"{server}/")
    steps = employee.ok("get_run", runId=run_id)["data"]["steps"]["attach_receipts"]
    assert steps["output"]["purpose"] == "Client visit: Acme Steel GmbH"
    assert steps["output"]["lines"] == [{"what": "taxi", "amount": 42.4}]  # unchanged, not retyped
    assert [e["ref"] for e in steps["evidence"]] == [receipt["id"]]  # the receipt, not uploaded again
