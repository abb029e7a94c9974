"""A first end-to-end pass through the tool layer (spec §3.3 agent loop, §3.4 decide)."""

import base64

from tests.support.spec import EXAMPLES


def test_supplier_onboarding_runs_from_start_to_onboarded(publish, agent, make_person):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    finance = make_person("fin@example.com", groups=["finance"])

    view = agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": "Acme", "amount": 48000})
    run_id = view["run"]["id"]
    work = agent.ok("get_work")
    assert [(i["runId"], i["stepId"]) for i in work["items"]] == [(run_id, "check_vendor")]

    claim = agent.ok("claim", runId=run_id, stepId="check_vendor")
    upload = agent.ok("upload", fileName="report.txt", contentType="text/plain",
                      contentBase64=base64.b64encode(b"no hits").decode())
    view = agent.ok("submit", token=claim["token"], output={"cleared": True, "summary": "clear"},
                    evidence=[{"kind": "file", "ref": upload["id"]}], summary="Checked OFAC and EU.",
                    next="approve", reason="No hits")
    assert [s["state"] for s in view["steps"]] == ["done", "waiting", None, None]
    [item] = view["workItems"]
    assert item["assignedTo"] == {"group": "finance"}

    items = finance.ok("get_work")["items"]
    assert [i["workItem"]["id"] for i in items] == [item["id"]]
    view = finance.ok("decide", runId=run_id, workItemId=item["id"], snapshot=items[0]["workItem"]["snapshot"],
                      decision="approved")
    assert view["run"]["state"] == "ended"
    assert view["run"]["outcome"] == "onboarded"
    assert view["run"]["ended"]["by"] == "server"
