"""Profile parallel-1 running (§3): fork, join, rework, ending from a branch, stale snapshots."""

import datetime as dt

import pytest

from kernel import clock
from tests.support.flows import decide, do_agent_step, open_item, states
from tests.support.processes import OUTAGE_RESPONSE

T0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)
LEADS = {"operations-lead": "ops-leads", "security-lead": "sec-leads", "communications-lead": "comms-leads"}
LINK = [{"kind": "link", "ref": "https://incident/42"}]
BRANCH_OUTPUT = {"operations": "recoverySummary", "security": "containmentSummary",
                 "communications": "communicationsSummary"}


@pytest.fixture
def incident(publish, agent, make_person):
    publish(OUTAGE_RESPONSE, LEADS)
    people = {
        "operations": make_person("op@example.com", groups=["ops-leads"]),
        "security": make_person("sec@example.com", groups=["sec-leads"]),
        "communications": make_person("com@example.com", groups=["comms-leads"]),
        "commander": make_person("cmd@example.com"),
    }
    with clock.frozen(T0):
        run_id = agent.ok("start_run", process="outage-response",
                          inputs={"incidentId": "INC-42", "commander": "cmd@example.com"})["run"]["id"]
        yield run_id, people


def complete_branch(people, run_id, branch, text="Done."):
    return decide(people[branch], run_id, branch, "completed", output={BRANCH_OUTPUT[branch]: text}, evidence=LINK)


def test_describe_offers_parallel(agent):
    assert "parallel-1" in agent.ok("describe")["profiles"]


def test_three_branches_end_to_end_with_rework_of_the_whole_region(incident, agent):
    run_id, people = incident
    view = do_agent_step(agent, run_id, "activate", {"bridge": "bridge-7"})
    # Fork: in one write, the parallel step waits and every branch entry is ready (here: waiting on a person).
    assert states(view) == {"activate": "done", "respond": "waiting", "operations": "waiting",
                            "security": "waiting", "communications": "waiting", "close_review": None, "done": None}
    respond = next(s for s in view["steps"] if s["id"] == "respond")
    assert respond["kind"] == "parallel"
    assert sorted(i["stepId"] for i in view["workItems"]) == ["communications", "operations", "security"]
    assert {i["due"] for i in view["workItems"]} == {"2026-10-06T10:00:00Z"}
    assert "respond" not in view["data"]["steps"]  # the parallel step records nothing

    clock.advance(dt.timedelta(minutes=10))
    complete_branch(people, run_id, "operations", "Service restored.")
    # A decision prepared before a sibling completed is stale.
    security_item = open_item(people["security"], run_id, "security")
    complete_branch(people, run_id, "communications", "Notice published.")
    error = people["security"].error("decide", runId=run_id, workItemId=security_item["id"],
                                     snapshot=security_item["snapshot"], decision="completed",
                                     output={"containmentSummary": "Contained."}, evidence=LINK)
    assert error["code"] == "stale"
    view = complete_branch(people, run_id, "security", "Contained.")
    # Join: the last branch reached join, the parallel step is done and its next is ready.
    assert states(view)["respond"] == "done"
    assert states(view)["close_review"] == "waiting"

    clock.advance(dt.timedelta(minutes=20))
    view = decide(people["commander"], run_id, "close_review", "rejected", note="Security evidence is thin.")
    # Rework to the parallel step rewinds the whole region: every branch again, with a fresh due.
    assert states(view) == {"activate": "done", "respond": "waiting", "operations": "waiting",
                            "security": "waiting", "communications": "waiting", "close_review": "done",
                            "done": None}
    assert {i["due"] for i in view["workItems"]} == {"2026-10-06T10:30:00Z"}
    for branch in BRANCH_OUTPUT:
        entry = view["data"]["steps"][branch]
        assert set(entry) == {"history"} and len(entry["history"]) == 1
    assert view["data"]["steps"]["close_review"]["note"] == "Security evidence is thin."

    for branch in BRANCH_OUTPUT:
        view = complete_branch(people, run_id, branch, "Second pass.")
    view = decide(people["commander"], run_id, "close_review", "approved")
    assert (view["run"]["state"], view["run"]["outcome"]) == ("ended", "stabilized")
    assert view["data"]["steps"]["close_review"]["history"][0]["decision"] == "rejected"


def test_a_failed_branch_ends_the_run_and_cancels_every_sibling(incident, agent):
    run_id, people = incident
    do_agent_step(agent, run_id, "activate", {"bridge": "bridge-7"})
    view = decide(people["security"], run_id, "security", "failed", note="Attacker still inside; escalating.")
    assert (view["run"]["state"], view["run"]["outcome"]) == ("ended", "failed")
    assert states(view) == {"activate": "done", "respond": "cancelled", "operations": "cancelled",
                            "security": "failed", "communications": "cancelled", "close_review": None, "done": None}
    assert view["workItems"] == []
    assert people["operations"].ok("get_work")["items"] == []


BRANCH_REWORK = """---
name: branch-rework
description: Two branches; one has its own approval that can send work back inside the branch.
steps:
  - id: fork
    parallel: [draft, legal]
    next: done
  - id: draft
    agent: Draft the text.
    next: review
  - id: review
    person: editors
    approve: Approve the draft.
    on_reject: draft
    next: join
  - id: legal
    agent: Check the legal terms.
    next: join
  - id: done
    finish: published
---
Branch rework.
"""


def test_rework_inside_a_branch_touches_no_sibling(publish, agent, make_person):
    publish(BRANCH_REWORK, {"editors": "editors"})
    editor = make_person("ed@example.com", groups=["editors"])
    run_id = agent.ok("start_run", process="branch-rework", inputs={})["run"]["id"]
    do_agent_step(agent, run_id, "legal", {})
    do_agent_step(agent, run_id, "draft", {})
    view = decide(editor, run_id, "review", "rejected", note="Shorter.")
    assert states(view) == {"fork": "waiting", "draft": "ready", "review": "done", "legal": "done", "done": None}
    assert "output" in view["data"]["steps"]["legal"]  # the sibling keeps its completion
    do_agent_step(agent, run_id, "draft", {})
    view = decide(editor, run_id, "review", "approved")
    assert (view["run"]["outcome"], states(view)["fork"]) == ("published", "done")
    assert len(view["data"]["steps"]["draft"]["history"]) == 1
