"""Rework that respects people's time (issue 15, point 4): a task that comes back opens with the
form pre-filled from the last attempt (values, route, reason, the files kept attached), the
reviewer's note at the top of the page, and its inbox row says it was returned, by whom, and why.

Spec §3.1: "The rejecting approval keeps decision: rejected, note, by and at current until it
completes again, so the returned-to step reads the note at steps.<id>.note."
"""

import base64
import re

from django.test import Client

from tests.support.flows import LINK, open_item
from tests.support.spec import EXAMPLES

from .test_inbox_views import form_values, hidden

PASSWORD = "a-long-password-1"


def signed_in(actor) -> Client:
    client = Client()
    assert client.login(username=actor.name, password=PASSWORD)
    return client


def test_a_rejected_expense_opens_prefilled_with_its_receipt_and_the_managers_note(publish, make_person, agent):
    publish(EXAMPLES / "expense-approval")
    employee = make_person("employee@example.com", password=PASSWORD)
    manager = make_person("manager@example.com", password=PASSWORD)
    run_id = employee.ok("start_run", process="expense-approval",
                         inputs={"manager": "manager@example.com", "amount": 182.4, "category": "travel"})["run"]["id"]
    receipt = employee.ok("upload", fileName="taxi-receipt.pdf", contentType="application/pdf",
                          contentBase64=base64.b64encode(b"%PDF taxi 42.40").decode())
    item = open_item(employee, run_id, "attach_receipts")
    employee.ok("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="completed",
                output={"purpose": "Client visit in Lyon", "lines": [{"what": "taxi", "amount": 42.4}]},
                evidence=[{"kind": "file", "ref": receipt["id"]}])
    token = agent.ok("claim", runId=run_id, stepId="check_policy")["token"]
    agent.ok("submit", token=token, output={"checkedTotal": 42.4, "withinPolicy": False}, evidence=LINK,
             summary="Only one receipt for 182.40.")
    approval = open_item(manager, run_id, "manager_approval")
    manager.ok("decide", runId=run_id, workItemId=approval["id"], snapshot=approval["snapshot"], decision="rejected",
               note="Only the taxi receipt is attached.\nAdd the hotel receipt too.")

    client = signed_in(employee)
    inbox = client.get("/").content.decode()
    row = inbox.split(f'data-work-item="{open_item(employee, run_id, "attach_receipts")["id"]}"')[1].split("</tr>")[0]
    assert "Returned for rework" in row and "manager@example.com" in row
    assert "“Only the taxi receipt is attached.”" in row and "hotel" not in row  # the note's first line

    again = open_item(employee, run_id, "attach_receipts")
    page = client.get(f"/work/{again['id']}").content.decode()
    top = page.split('id="sent-back"')[1].split("</div>")[0]
    assert "manager@example.com" in top and "Add the hotel receipt too." in top and "Manager approval" in top
    assert page.index('id="sent-back"') < page.index('id="decision-form"')
    values = form_values(page)
    assert values["out.purpose"] == "Client visit in Lyon"
    assert values["attached"] == f"{receipt['id']}|taxi-receipt.pdf"  # kept, under its own name
    assert "taxi-receipt.pdf" in page

    hotel = employee.ok("upload", fileName="hotel.pdf", contentType="application/pdf",
                        contentBase64=base64.b64encode(b"%PDF hotel 140.00").decode())
    payload = {**hidden(page), **{name: value for name, value in values.items() if name.startswith("out.")},
               "attached": [values["attached"], f"{hotel['id']}|hotel.pdf"], "decision": "completed"}
    response = client.post(f"/work/{again['id']}", payload)
    assert response.status_code == 302, re.findall(r'field-error">([^<]*)', response.content.decode())
    completed = employee.ok("get_run", runId=run_id)["data"]["steps"]["attach_receipts"]
    assert completed["output"]["purpose"] == "Client visit in Lyon"
    assert [e["ref"] for e in completed["evidence"]] == [receipt["id"], hotel["id"]]
    assert completed["history"][0]["evidence"][0]["ref"] == receipt["id"]  # the first attempt, kept


def test_a_first_attempt_opens_empty_and_unmarked(publish, make_person):
    publish(EXAMPLES / "expense-approval")
    employee = make_person("employee@example.com", password=PASSWORD)
    make_person("manager@example.com")
    run_id = employee.ok("start_run", process="expense-approval",
                         inputs={"manager": "manager@example.com", "amount": 10, "category": "meals"})["run"]["id"]
    item = open_item(employee, run_id, "attach_receipts")
    client = signed_in(employee)
    page = client.get(f"/work/{item['id']}").content.decode()
    assert 'id="sent-back"' not in page and form_values(page).get("out.purpose", "") == ""
    assert "Returned for rework" not in client.get("/").content.decode()
