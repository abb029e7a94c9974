"""Profile check-1 with a checked vendor screening, against a real local chat-completions server."""

import base64
import datetime as dt

import pytest

from kernel import clock
from tests.support.chat_server import ChatServer
from tests.support.flows import decide, states
from tests.support.processes import CHECKED_VENDOR

Q1 = "The cleared flag agrees with the attached screening file."
Q2 = "How does the summary read?"
Q3 = "How thorough is the screening?"
PASSING = {Q1: {"yes": 0.97}, Q2: {"answer": "states", "confidence": 0.91}, Q3: {"level": 2, "confidence": 0.9}}
T0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def evaluator(settings):
    server = ChatServer().start()
    settings.CHECK_EVALUATOR_URL = server.url
    settings.CHECK_EVALUATOR_MODEL = "scripted-evaluator-1"
    settings.CHECK_EVALUATOR_API_KEY = "sk-test"
    server.script.update(PASSING)
    yield server
    server.stop()


@pytest.fixture
def vendor_check(evaluator, publish, agent, make_person):
    publish(CHECKED_VENDOR, {"finance-approver": "finance"})
    with clock.frozen(T0):
        run_id = agent.ok("start_run", process="checked-vendor",
                          inputs={"vendorName": "Acme", "amount": 48000})["run"]["id"]
        yield run_id


def screening(agent, run_id, request_id=None, **overrides):
    claim = agent.ok("claim", runId=run_id, stepId="check_vendor")
    report = agent.ok("upload", fileName="screening.txt", contentType="text/plain",
                      contentBase64=base64.b64encode(b"OFAC: no hits. EU: no hits.").decode())
    arguments = {"token": claim["token"], "output": {"cleared": True, "summary": "Clear on OFAC and EU lists."},
                 "evidence": [{"kind": "file", "ref": report["id"]}], "summary": "Searched both lists by name.",
                 "next": "approve", "reason": "Cleared on both lists.", **overrides}
    if request_id:
        arguments["requestId"] = request_id
    return claim, arguments


def test_describe_lists_check_1_only_while_an_evaluator_is_configured(agent, settings, evaluator):
    described = agent.ok("describe")
    assert described["profiles"] == ["check-1", "parallel-1"]
    assert described["limits"] == {"runDataBytes": 1048576, "checkPass": 0.9, "checkFail": None,
                                   "checkConfidence": 0.8, "checkStateBytes": 65536}
    settings.CHECK_EVALUATOR_URL = ""
    described = agent.ok("describe")
    assert described["profiles"] == ["parallel-1"]
    # tools.md / schemas/core-2: describe.limits always carries the check limits (issue 13).
    assert described["limits"] == {"runDataBytes": 1048576, "checkPass": 0.9, "checkFail": None,
                                   "checkConfidence": 0.8, "checkStateBytes": 65536}


def test_a_pass_completes_the_step_and_records_the_verdict(vendor_check, agent, evaluator):
    _claim, arguments = screening(agent, vendor_check)
    view = agent.ok("submit", **arguments)
    assert states(view)["approve"] == "waiting"
    verdict = view["data"]["steps"]["check_vendor"]["check"]
    assert verdict == {
        "verdict": "pass", "advisory": False, "model": "scripted-evaluator-1",
        "questions": [
            {"ask": Q1, "kind": "yes_no", "answer": pytest.approx(0.97), "result": "pass"},
            {"ask": Q2, "kind": "choice", "answer": "states", "confidence": 0.91, "result": "pass"},
            {"ask": Q3, "kind": "rubric", "answer": 2, "confidence": 0.9, "result": "pass"}],
        "at": "2026-10-06T09:00:00Z"}
    # What the evaluator saw (check-1 §2): instructions, body, run data, the submission, one question each.
    assert evaluator.questions_asked() == [Q1, Q2, Q3]
    prompt = evaluator.requests[0]["messages"][-1]["content"]
    assert "Screen the vendor on the OFAC and EU watch lists." in prompt
    assert "# Checked vendor screening" in prompt and '"vendorName": "Acme"' in prompt
    assert "Searched both lists by name." in prompt
    assert evaluator.requests[0]["logprobs"] is True


def test_a_fail_is_not_accepted_with_the_issue_line_and_handed_to_the_next_claim(vendor_check, agent, evaluator,
                                                                                  make_agent):
    evaluator.script[Q1] = {"yes": 0.12}
    _claim, arguments = screening(agent, vendor_check)
    error = agent.error("submit", **arguments)
    line = f"check: {Q1} → no (0.12)"
    assert (error["code"], error["issues"]) == ("not_accepted", [line])
    view = agent.ok("get_run", runId=vendor_check)
    assert "check_vendor" not in view["data"]["steps"]  # run data did not change
    clock.advance(dt.timedelta(seconds=601))
    handoff = make_agent("second").ok("claim", runId=vendor_check, stepId="check_vendor")["handoff"]
    assert handoff["issues"] == [line]
    assert handoff["check"]["verdict"] == "fail"
    assert handoff["check"]["questions"][0] == {"ask": Q1, "kind": "yes_no", "answer": pytest.approx(0.12),
                                               "result": "fail"}


def test_choice_and_rubric_failures_are_worded_as_the_profile_says(vendor_check, agent, evaluator):
    evaluator.script[Q2] = {"answer": "hedges", "confidence": 0.9}
    evaluator.script[Q3] = {"level": 1, "confidence": 0.85}
    _claim, arguments = screening(agent, vendor_check)
    assert agent.error("submit", **arguments)["issues"] == [
        f"check: {Q2} → hedges (0.90)", f"check: {Q3} → level 1: One list is searched. (0.85)"]


def test_unsure_holds_the_candidate_and_a_person_completes_it(vendor_check, agent, evaluator, make_person):
    ops = make_person("ops@example.com", operator=True)
    evaluator.script[Q1] = {"probability": 0.62}  # an endpoint without log-probabilities: structured answer
    _claim, arguments = screening(agent, vendor_check)
    view = agent.ok("submit", **arguments)
    assert states(view)["check_vendor"] == "waiting" and states(view)["approve"] is None
    [item] = view["workItems"]
    assert item["escalation"]["check"]["verdict"] == "unsure"
    assert item["escalation"]["check"]["questions"][0]["answer"] == pytest.approx(0.62)
    assert item["escalation"]["candidate"]["output"] == arguments["output"]
    assert item["escalation"]["candidate"]["next"] == "approve"
    assert item["decide"]["decisions"] == ["returned", "completed", "failed"]
    assert view["data"]["steps"]["check_vendor"] == {"history": [], "check": item["escalation"]["check"]}
    assert Q1 in evaluator.questions_asked()
    asked = len(evaluator.requests)

    view = decide(ops, vendor_check, "check_vendor", "completed")  # with the candidate
    assert len(evaluator.requests) == asked  # not checked again
    entry = view["data"]["steps"]["check_vendor"]
    assert entry["output"] == arguments["output"] and entry["by"] == "ops@example.com"
    assert entry["check"]["verdict"] == "unsure" and entry["next"] == "approve"
    assert states(view)["approve"] == "waiting"


def test_unsure_returned_gives_the_agent_the_note_and_the_check(vendor_check, agent, evaluator, make_person):
    ops = make_person("ops@example.com", operator=True)
    evaluator.script[Q2] = {"answer": "unclear", "confidence": 0.95}
    _claim, arguments = screening(agent, vendor_check)
    agent.ok("submit", **arguments)
    view = decide(ops, vendor_check, "check_vendor", "returned", note="Say which lists you searched.")
    assert "check_vendor" not in view["data"]["steps"]
    handoff = agent.ok("claim", runId=vendor_check, stepId="check_vendor")["handoff"]
    assert handoff["returned"]["note"] == "Say which lists you searched."
    assert handoff["check"]["verdict"] == "unsure"


def test_an_evaluator_outage_is_retry_then_the_same_request_id_succeeds(vendor_check, agent, evaluator):
    evaluator.failures_left = 2  # the first question fails twice: the server retries once, then gives up
    _claim, arguments = screening(agent, vendor_check, request_id="submit-once")
    error = agent.error("submit", **arguments)
    assert error["code"] == "retry"
    assert states(agent.ok("get_run", runId=vendor_check))["check_vendor"] == "claimed"
    view = agent.ok("submit", **arguments)
    assert states(view)["approve"] == "waiting"
    assert agent.ok("submit", **arguments) == view  # and it is a replay from now on


def test_an_advisory_verdict_is_recorded_without_blocking(evaluator, publish, agent):
    text = CHECKED_VENDOR.replace("    check:\n", "    advisory: true\n    check:\n", 1)
    publish(text, {"finance-approver": "finance"})
    run_id = agent.ok("start_run", process="checked-vendor", inputs={"vendorName": "Acme", "amount": 1})["run"]["id"]
    evaluator.script[Q1] = {"yes": 0.05}
    _claim, arguments = screening(agent, run_id)
    view = agent.ok("submit", **arguments)
    verdict = view["data"]["steps"]["check_vendor"]["check"]
    assert (verdict["verdict"], verdict["advisory"]) == ("fail", True)
    assert states(view)["approve"] == "waiting"


def test_an_advisory_check_records_an_evaluator_error_and_completes(evaluator, publish, agent):
    text = CHECKED_VENDOR.replace("    check:\n", "    advisory: true\n    check:\n", 1)
    publish(text, {"finance-approver": "finance"})
    run_id = agent.ok("start_run", process="checked-vendor", inputs={"vendorName": "Acme", "amount": 1})["run"]["id"]
    evaluator.failures_left = 100
    _claim, arguments = screening(agent, run_id)
    view = agent.ok("submit", **arguments)
    assert view["data"]["steps"]["check_vendor"]["check"]["verdict"] == "error"
    assert states(view)["approve"] == "waiting"


def test_run_data_beyond_check_state_bytes_is_truncated_oldest_step_first(vendor_check, agent, evaluator, settings,
                                                                          make_person):
    finance = make_person("fin@example.com", groups=["finance"])
    _claim, arguments = screening(agent, vendor_check)
    agent.ok("submit", **arguments)
    decide(finance, vendor_check, "approve", "rejected", note="N" * 300)
    settings.CHECK_STATE_BYTES = 700
    evaluator.requests.clear()
    _claim, arguments = screening(agent, vendor_check)
    view = agent.ok("submit", **arguments)
    assert view["data"]["steps"]["check_vendor"]["check"]["truncated"] is True
    prompt = evaluator.requests[0]["messages"][-1]["content"]
    assert "N" * 300 in prompt  # the newest step (the rejection) is kept
    assert '"check_vendor"' not in prompt.split("Run data (JSON):")[1].split("Submission (JSON):")[0]


def test_a_person_completing_an_ordinary_task_with_a_check_is_checked(evaluator, publish, make_person):
    process = """---
name: checked-task
description: A person's task with a check.
steps:
  - id: write
    person: writers
    task: Write the release note.
    output: { note: string }
    check: The note names the version.
  - id: done
    finish: written
---
Checked task.
"""
    publish(process, {"writers": "writers"})
    writer = make_person("w@example.com", groups=["writers"])
    run_id = writer.ok("start_run", process="checked-task", inputs={})["run"]["id"]
    evaluator.script["The note names the version."] = {"yes": 0.2}
    item = writer.ok("get_work")["items"][0]["workItem"]
    error = writer.error("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                         decision="completed", output={"note": "Fixed bugs."})
    assert error["issues"] == ["check: The note names the version. → no (0.20)"]
    evaluator.script["The note names the version."] = {"yes": 0.95}
    view = writer.ok("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                     decision="completed", output={"note": "Version 2.1 fixes bugs."})
    assert view["run"]["outcome"] == "written"
    assert view["data"]["steps"]["write"]["check"]["verdict"] == "pass"
