"""cancel, list_runs, get_work paging and the run_ended rule (spec §3.5, tools.md)."""

import pytest

from tests.support.flows import states
from tests.support.spec import EXAMPLES

WRITES_ON_A_RUN = {
    "claim": {"stepId": "check_vendor"},
    "cancel": {"reason": "again"},
    "send_event": {"name": "ping"},
    "decide": {"workItemId": "w_x", "snapshot": "s", "decision": "approved"},
}


@pytest.fixture
def onboarding(publish):
    return publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})


def start(agent, name="Acme", mode="live"):
    return agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": name, "amount": 1},
                    mode=mode)["run"]["id"]


def test_an_operator_cancels_with_a_reason_and_everything_stops(onboarding, agent, make_person):
    ops = make_person("ops@example.com", operator=True)
    run_id = start(agent)
    token = agent.ok("claim", runId=run_id, stepId="check_vendor")["token"]
    # A person who takes part in the run (finance approves it) but is no operator: forbidden. (One
    # who takes no part gets not_found: the run does not exist for them, tests/test_visibility_walk.py.)
    assert make_person("mira@example.com", groups=["finance"]).error("cancel", runId=run_id,
                                                                     reason="x")["code"] == "forbidden"
    assert agent.error("cancel", runId=run_id, reason="x")["code"] == "forbidden"
    view = ops.ok("cancel", runId=run_id, reason="Duplicate request.")
    assert (view["run"]["state"], view["run"]["outcome"]) == ("cancelled", None)
    assert view["run"]["ended"] == {"by": "ops@example.com", "at": view["run"]["updatedAt"],
                                    "note": "Duplicate request."}
    assert states(view) == {"check_vendor": "cancelled", "approve": None, "decline": None, "done": None}
    # Every outstanding token stops working; every write is run_ended, checked before anything else.
    for tool, extra in (("submit", {"output": {}, "summary": "x"}), ("renew", {}), ("escalate", {"note": "x"})):
        error = agent.error(tool, token=token, **extra)
        assert (error["code"], error["issues"]) == ("conflict", ["run_ended"])
    for tool, extra in WRITES_ON_A_RUN.items():
        error = ops.error(tool, runId=run_id, **extra)
        assert (error["code"], error["issues"]) == ("conflict", ["run_ended"]), tool
    assert agent.ok("get_work")["items"] == []


def test_cancel_replay_returns_the_original_result(onboarding, agent, make_person):
    ops = make_person("ops@example.com", operator=True)
    run_id = start(agent)
    first = ops.ok("cancel", runId=run_id, reason="Stop.", requestId="cancel-1")
    assert ops.ok("cancel", runId=run_id, reason="Stop.", requestId="cancel-1") == first


def test_list_runs_filters_by_process_state_and_inputs_and_pages(onboarding, agent, make_person, publish):
    publish(EXAMPLES / "invoice-approval", {"team-lead": "leads", "finance-controller": "finance"})
    ops = make_person("ops@example.com", operator=True)
    ids = [start(agent, name=f"V{i}") for i in range(5)]
    ops.ok("cancel", runId=ids[0], reason="x")
    agent.ok("start_run", process="invoice-approval", inputs={"invoiceNumber": "1", "supplier": "S", "total": 1})
    listed = agent.ok("list_runs", process="supplier-onboarding")["items"]
    assert [r["id"] for r in listed] == list(reversed(ids))  # newest first
    assert listed[0] == {"id": ids[4], "process": "supplier-onboarding", "version": 1, "state": "active",
                         "outcome": None, "startedAt": listed[0]["startedAt"], "updatedAt": listed[0]["updatedAt"],
                         "inputs": {"vendorName": "V4", "amount": 1}}
    assert [r["id"] for r in agent.ok("list_runs", state="cancelled")["items"]] == [ids[0]]
    assert [r["id"] for r in agent.ok("list_runs", inputs={"vendorName": "V2"})["items"]] == [ids[2]]
    assert [r["id"] for r in agent.ok("list_runs", inputs={"vendorName": "V2", "amount": 1})["items"]] == [ids[2]]
    assert agent.ok("list_runs", inputs={"vendorName": "V2", "amount": 2})["items"] == []
    page1 = agent.ok("list_runs", process="supplier-onboarding", limit=2)
    page2 = agent.ok("list_runs", process="supplier-onboarding", limit=2, cursor=page1["nextCursor"])
    page3 = agent.ok("list_runs", process="supplier-onboarding", limit=2, cursor=page2["nextCursor"])
    assert [r["id"] for r in page1["items"] + page2["items"] + page3["items"]] == list(reversed(ids))
    assert page3["nextCursor"] is None
    assert agent.error("list_runs", cursor="garbage")["issues"] == ["cursor: not a cursor from this server"]


def test_get_work_is_oldest_first_paged_and_filtered_by_process(onboarding, agent, publish):
    from datetime import UTC, datetime, timedelta

    from kernel import clock

    publish(EXAMPLES / "invoice-approval", {"team-lead": "leads", "finance-controller": "finance"})
    t0 = datetime(2026, 10, 6, 9, 0, tzinfo=UTC)
    ids = []
    with clock.frozen(t0):
        for i in range(5):
            ids.append(start(agent, name=f"V{i}"))
            clock.advance(timedelta(seconds=1))
        agent.ok("start_run", process="invoice-approval", inputs={"invoiceNumber": "1", "supplier": "S", "total": 1})
    everything = agent.ok("get_work")["items"]
    assert [w["runId"] for w in everything[:5]] == ids and everything[5]["process"] == "invoice-approval"
    assert everything[0]["readySince"] == "2026-10-06T09:00:00Z"
    seen, cursor = [], None
    while True:
        page = agent.ok("get_work", limit=2, process="supplier-onboarding", **({"cursor": cursor} if cursor else {}))
        seen += [w["runId"] for w in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == ids
    # A claimed step is not listed (the caller may not claim it); a lapsed one is.
    agent.ok("claim", runId=ids[0], stepId="check_vendor")
    assert [w["runId"] for w in agent.ok("get_work", process="supplier-onboarding")["items"]] == ids[1:]


def test_test_mode_is_marked_on_get_work_claim_and_work_items(onboarding, agent, make_person):
    run_id = start(agent, mode="test")
    assert agent.ok("get_work")["items"][0]["mode"] == "test"
    assert agent.ok("claim", runId=run_id, stepId="check_vendor")["mode"] == "test"
    assert agent.ok("get_run", runId=run_id)["run"]["mode"] == "test"


def test_list_processes_shows_inputs_requires_and_the_latest_version(publish, agent):
    publish(EXAMPLES / "expense-approval")
    publish((EXAMPLES / "expense-approval" / "PROCESS.md").read_text() + "\nRevised.\n")  # a change: version 2
    [item] = agent.ok("list_processes")["items"]
    assert item["version"] == 2
    assert item["requires"] == {"systems": ["expense-tool"]}
    assert item["inputs"]["category"] == {"type": "string", "one_of": ["travel", "meals", "equipment", "other"]}


def test_start_run_pins_the_version_for_life(onboarding, agent, publish):
    run_id = start(agent)
    changed = (EXAMPLES / "supplier-onboarding" / "PROCESS.md").read_text() + "\nRevised.\n"  # unchanged publishes nothing
    publish(changed, {"finance-approver": "finance"})
    assert agent.ok("get_run", runId=run_id)["run"]["version"] == 1
    newer = agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": "B", "amount": 1})
    assert newer["run"]["version"] == 2
    pinned = agent.ok("start_run", process="supplier-onboarding", version=1, inputs={"vendorName": "C", "amount": 1})
    assert pinned["run"]["version"] == 1


def test_cancel_needs_a_reason(onboarding, agent, make_person):
    ops = make_person("ops@example.com", operator=True)
    run_id = start(agent)
    error = ops.error("cancel", runId=run_id, reason="  ")
    assert (error["code"], error["issues"]) == ("invalid", ["reason: required"])
