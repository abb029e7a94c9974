"""Isolation between organizations (issue 8; DESIGN: nothing crosses organizations; spec §4.3).

Organization A (the default one) has published processes, runs in every interesting state, a live
lease token, a renewed one, open work items, an escalation, a held event, an upload, used
requestIds and paging cursors. Organization B ("acme") has its own agent, its own operator who is
also in its finance group, and a process of its own.

B calls every tool with A's ids, tokens, requestIds, cursors and process names, as an agent and as
a person: each answer is `not_found` or `forbidden` (or, for a list, B's own items only), never A's
data — no response contains any of A's sentinel values — and afterwards A's runs are exactly as
they were. The browser pages of A's runs and work items answer 404/403 to B's signed-in operator.
"""

import base64
import json
import uuid

import pytest

from tests.support.actors import rest_call
from tests.support.flows import LINK
from tests.support.spec import EXAMPLES

SECRET_VENDOR = "Zebulon Secret Holdings"  # appears only in A's run data
SECRET_SUMMARY = "Found the offshore account of the secret vendor."
SECRET_NOTE = "Escalated: the secret registry is down."
SECRET_EVENT = {"payload": "secret-event-payload"}
SECRET_FILE = b"secret screening report of organization A"
SENTINELS = (SECRET_VENDOR, SECRET_SUMMARY, SECRET_NOTE, "secret-event-payload")

EVENTS = """---
name: events-a
description: Wait for a settlement event, then an agent books it.
steps:
  - id: settle
    wait_for: settled
  - id: book
    agent: Book the settlement.
    output:
      booked: boolean
  - id: done
    finish: done
---

Events.
"""

OWN_PROCESS = """---
name: acme-only
description: A process of organization B.
steps:
  - id: work
    agent: Work.
  - id: done
    finish: done
---

B's own.
"""


@pytest.fixture
def org_a(publish, make_agent, make_person):
    """Organization A in every interesting state; returns what B will try to use."""
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    publish(EXAMPLES / "expense-approval")
    publish(EVENTS)
    agent = make_agent("a-agent")
    person = make_person("ann@a.example", groups=["finance"], operator=True)
    inputs = {"vendorName": SECRET_VENDOR, "amount": 1}

    def start(request_id=None):
        return agent.ok("start_run", process="supplier-onboarding", inputs=inputs,
                        requestId=request_id or str(uuid.uuid4()))

    ready = start("a-start-1")["run"]["id"]
    ready_too = start()["run"]["id"]
    claimed = start()["run"]["id"]
    live = agent.ok("claim", runId=claimed, stepId="check_vendor", requestId="a-claim-1")["token"]
    renewed = start()["run"]["id"]
    replaced = agent.ok("claim", runId=renewed, stepId="check_vendor")["token"]
    current = agent.ok("renew", token=replaced, progress="Half way through the secret lists.")["token"]
    reviewing = start()["run"]["id"]
    file_id = agent.ok("upload", fileName="secret.pdf", contentType="application/pdf",
                       contentBase64=base64.b64encode(SECRET_FILE).decode(), requestId="a-upload-1")["id"]
    token = agent.ok("claim", runId=reviewing, stepId="check_vendor")["token"]
    agent.ok("submit", token=token, output={"cleared": True, "summary": SECRET_SUMMARY}, summary=SECRET_SUMMARY,
             evidence=[{"kind": "file", "ref": file_id}], next="approve", reason="Cleared.", requestId="a-submit-1")
    escalated = start()["run"]["id"]
    token = agent.ok("claim", runId=escalated, stepId="check_vendor")["token"]
    agent.ok("escalate", token=token, note=SECRET_NOTE)
    expense = person.ok("start_run", process="expense-approval",
                        inputs={"manager": "ann@a.example", "amount": 12.5, "category": "travel"})["run"]["id"]
    events = agent.ok("start_run", process="events-a", inputs={})["run"]["id"]
    agent.ok("send_event", runId=events, name="unrelated", data=SECRET_EVENT)  # held
    items = {item["workItem"]["stepId"]: item["workItem"] for item in person.ok("get_work", limit=100)["items"]}
    cursor = agent.ok("get_work", limit=1)["nextCursor"]
    run_cursor = person.ok("list_runs", limit=1)["nextCursor"]
    assert cursor and run_cursor and set(items) == {"approve", "check_vendor", "attach_receipts"}
    runs = [ready, ready_too, claimed, renewed, reviewing, escalated, expense, events]
    return {
        "agent": agent, "person": person, "runs": runs, "ready": ready, "reviewing": reviewing,
        "escalated": escalated, "expense": expense, "events": events,
        "tokens": [live, replaced, current], "file": file_id, "items": items, "cursors": (cursor, run_cursor),
        "views": {run_id: person.ok("get_run", runId=run_id) for run_id in runs},
    }


@pytest.fixture
def org_b(publish, make_agent, make_person):
    publish(OWN_PROCESS, org_slug="acme")
    agent = make_agent("b-agent", org_slug="acme")
    person = make_person("bob@b.example", groups=["acme-finance"], operator=True, password="b-password-1",
                         org_slug="acme")
    own_run = agent.ok("start_run", process="acme-only", inputs={})["run"]["id"]
    return {"agent": agent, "person": person, "own_run": own_run}


def no_secrets(envelope) -> None:
    text = json.dumps(envelope, ensure_ascii=False)
    for sentinel in SENTINELS:
        assert sentinel not in text, f"organization A's data leaked: {sentinel!r} in {text[:500]}"


def without_urls(value):
    if isinstance(value, dict):
        return {key: without_urls(item) for key, item in value.items() if key != "url"}
    if isinstance(value, list):
        return [without_urls(item) for item in value]
    return value


def refused(actor, tool: str, codes=("not_found",), **arguments) -> dict:
    envelope = actor.call(tool, **arguments)
    no_secrets(envelope)
    assert not envelope["ok"], f"{actor.name} {tool} {arguments}: accepted across organizations: {envelope}"
    assert envelope["error"]["code"] in codes, (actor.name, tool, arguments, envelope["error"])
    return envelope["error"]


def test_every_tool_with_another_organizations_ids_is_not_found_and_leaks_nothing(org_a, org_b):
    a = org_a
    b_agent, b_person = org_b["agent"], org_b["person"]
    for actor in (b_agent, b_person):
        # Runs, steps, work items: not_found, whatever else the arguments say.
        for run_id in a["runs"]:
            refused(actor, "get_run", runId=run_id)
            refused(actor, "cancel", runId=run_id, reason="Hostile.")
            refused(actor, "send_event", runId=run_id, name="settled", data={})
            refused(actor, "claim", codes=("not_found", "forbidden"), runId=run_id, stepId="check_vendor")
        for item in a["items"].values():
            for decision, extra in (("approved", {}), ("rejected", {"note": "No."}), ("failed", {"note": "No."}),
                                    ("returned", {"note": "Back."}),
                                    ("completed", {"output": {"purpose": "x", "lines": []}, "evidence": LINK})):
                refused(actor, "decide", codes=("not_found", "forbidden"), runId=item["decide"]["arguments"]["runId"],
                        workItemId=item["id"], snapshot=item["snapshot"], decision=decision, **extra)
                # A's work item named on B's own run is not found either.
                refused(actor, "decide", codes=("not_found", "forbidden"), runId=org_b["own_run"],
                        workItemId=item["id"], snapshot=item["snapshot"], decision=decision, **extra)
        # Lease tokens, live, replaced and renewed: not_found (or forbidden), never stale or accepted.
        for token in a["tokens"]:
            refused(actor, "submit", codes=("not_found", "forbidden"), token=token,
                    output={"cleared": True, "summary": "x"}, summary="Hijack.", next="approve", reason="x",
                    evidence=[{"kind": "file", "ref": a["file"]}])
            refused(actor, "renew", codes=("not_found", "forbidden"), token=token, progress="Hijack.")
            refused(actor, "escalate", codes=("not_found", "forbidden"), token=token, note="Hijack.")
        # Process names: not found, in any version.
        for name in ("supplier-onboarding", "expense-approval", "events-a"):
            refused(actor, "start_run", process=name, inputs={"vendorName": "B", "amount": 1})
            refused(actor, "start_run", process=name, version=1, inputs={"vendorName": "B", "amount": 1})
        # requestIds are unique within an organization: A's requestIds replayed by B with A's exact arguments
        # are not A's stored results, and B may use them for its own writes.
        refused(actor, "start_run", requestId="a-start-1", process="supplier-onboarding",
                inputs={"vendorName": SECRET_VENDOR, "amount": 1})
        refused(actor, "claim", codes=("not_found", "forbidden"), requestId="a-claim-1", runId=a["runs"][2],
                stepId="check_vendor")
        # Lists show B's own things only, whatever filter or cursor is given.
        processes = actor.ok("list_processes")
        assert [item["name"] for item in processes["items"]] == ["acme-only"]
        for arguments in ({}, {"process": "supplier-onboarding"}, {"inputs": {"vendorName": SECRET_VENDOR}},
                          {"state": "waiting"}, {"cursor": a["cursors"][1]}):
            envelope = actor.call("list_runs", **arguments)
            no_secrets(envelope)
            if envelope["ok"]:
                assert {run["id"] for run in envelope["data"]["items"]} <= {org_b["own_run"]}, (arguments, envelope)
            else:
                assert envelope["error"]["code"] == "invalid", envelope  # a cursor B was not given
        for arguments in ({}, {"process": "supplier-onboarding"}, {"cursor": a["cursors"][0]}, {"limit": 100}):
            envelope = actor.call("get_work", **arguments)
            no_secrets(envelope)
            if envelope["ok"]:
                assert {item["runId"] for item in envelope["data"]["items"]} <= {org_b["own_run"]}, envelope
            else:
                assert envelope["error"]["code"] == "invalid", envelope

    # A's requestIds serve B's own writes (a new record in B's organization, not A's result).
    own = b_agent.ok("start_run", process="acme-only", inputs={}, requestId="a-start-1")
    assert own["run"]["id"] not in a["runs"] and own["run"]["process"] == "acme-only"
    upload = b_agent.ok("upload", fileName="b.txt", contentType="text/plain",
                        contentBase64=base64.b64encode(b"b's file").decode(), requestId="a-upload-1")
    assert upload["id"] != a["file"]
    # A's upload is not evidence in B's organization.
    token = b_agent.ok("claim", runId=own["run"]["id"], stepId="work", requestId="a-claim-1")["token"]
    error = b_agent.error("submit", token=token, output={}, summary="With A's file.",
                          evidence=[{"kind": "file", "ref": a["file"]}], requestId="a-submit-1")
    assert (error["code"], error["issues"]) == ("not_accepted", [f"evidence {a['file']}: not found"])

    # Nothing of A changed, and A's own requestIds still replay A's results.
    for run_id, before in a["views"].items():
        after = a["person"].ok("get_run", runId=run_id)
        assert without_urls(after["data"]) == without_urls(before["data"]), run_id  # signed URLs are re-signed
        assert after["steps"] == before["steps"] and after["run"] == before["run"], run_id
        assert [(i["id"], i["snapshot"]) for i in after["workItems"]] == \
            [(i["id"], i["snapshot"]) for i in before["workItems"]], run_id
    replay = a["agent"].ok("start_run", process="supplier-onboarding",
                           inputs={"vendorName": SECRET_VENDOR, "amount": 1}, requestId="a-start-1")
    assert replay["run"]["id"] == a["ready"]


def test_rest_with_another_organizations_ids_answers_404_and_leaks_nothing(client, org_a, org_b):
    """The same over the REST transport, with the HTTP statuses the envelope codes map to."""
    a, token = org_a, org_b["agent"].token
    calls = [("get_run", {"runId": a["reviewing"]}),
             ("claim", {"runId": a["ready"], "stepId": "check_vendor", "requestId": "a-claim-1"}),
             ("submit", {"token": a["tokens"][0], "output": {}, "summary": "x", "requestId": str(uuid.uuid4())}),
             ("renew", {"token": a["tokens"][2], "requestId": str(uuid.uuid4())}),
             ("send_event", {"runId": a["events"], "name": "settled", "requestId": str(uuid.uuid4())}),
             ("start_run", {"process": "supplier-onboarding", "inputs": {"vendorName": SECRET_VENDOR, "amount": 1},
                            "requestId": "a-start-1"})]
    for tool, body in calls:
        status, envelope, _ = rest_call(client, token, tool, body)
        no_secrets(envelope)
        assert (status, envelope["error"]["code"]) == (404, "not_found"), (tool, envelope)
    status, envelope, _ = rest_call(client, org_b["person"].token, "decide", {
        "runId": a["reviewing"], "workItemId": a["items"]["approve"]["id"],
        "snapshot": a["items"]["approve"]["snapshot"], "decision": "approved", "requestId": str(uuid.uuid4())})
    assert (status, envelope["error"]["code"]) == (404, "not_found"), envelope


def test_the_browser_pages_of_another_organization_answer_404_or_403(client, org_a, org_b):
    from django.contrib.auth import get_user_model
    from django.urls import NoReverseMatch, reverse

    from runs.models import Run

    try:
        reverse("workqueue:run", kwargs={"run_id": "r_x"})
        reverse("workqueue:work_item", kwargs={"work_item_id": "w_x"})
    except NoReverseMatch:
        pytest.skip("the run and work item pages are not routed yet")
    a = org_a
    client.force_login(get_user_model().objects.get(email="bob@b.example"))
    pages = [f"/runs/{run_id}" for run_id in a["runs"]] + [f"/work/{item['id']}" for item in a["items"].values()]
    for page in pages:
        response = client.get(page)
        assert response.status_code in (403, 404), (page, response.status_code)
        body = response.content.decode()
        assert not any(sentinel in body for sentinel in SENTINELS), page
    # Deciding and cancelling through the pages changes nothing of A.
    item = a["items"]["approve"]
    response = client.post(f"/work/{item['id']}", {"decision": "approved", "snapshot": item["snapshot"],
                                                    "request_id": str(uuid.uuid4())})
    assert response.status_code in (403, 404)
    response = client.post(f"/runs/{a['reviewing']}/cancel", {"reason": "Hostile.", "request_id": str(uuid.uuid4())})
    assert response.status_code in (403, 404)
    assert Run.objects.get(pk=a["reviewing"]).state == "waiting"
    # The lists and queues of B's pages show none of A's runs or items.
    for page in ("/", "/runs/", "/operators/", "/runs/?process=supplier-onboarding"):
        response = client.get(page)
        assert response.status_code == 200, page
        body = response.content.decode()
        leaked = [value for value in [*a["runs"], *(i["id"] for i in a["items"].values()), *SENTINELS] if value in body]
        assert not leaked, (page, leaked)
