"""decide (spec §3.4, tools.md): every decision on every item kind, the error order, rework."""

import pytest

from tests.support.flows import LINK, decide, do_agent_step, open_item, states
from tests.support.processes import HANDOVER_TASKS, OWNER_REVIEW, TWO_REVIEWS
from tests.support.spec import EXAMPLES


@pytest.fixture
def onboarding(publish, agent, make_person):
    """supplier-onboarding at its approval, with two finance people."""
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    people = {"fin": make_person("fin@example.com", groups=["finance"]),
              "fin2": make_person("fin2@example.com", groups=["finance"]),
              "ops": make_person("ops@example.com", operator=True),
              "outsider": make_person("out@example.com")}
    run_id = agent.ok("start_run", process="supplier-onboarding",
                      inputs={"vendorName": "Acme", "amount": 48000})["run"]["id"]
    screen(agent, run_id)
    return run_id, people


def screen(agent, run_id, cleared=True):
    report = agent.ok("upload", fileName="r.txt", contentType="text/plain", contentBase64="b2s=")
    return do_agent_step(agent, run_id, "check_vendor", {"cleared": cleared, "summary": "ok"},
                         evidence=[{"kind": "file", "ref": report["id"]}],
                         next="approve" if cleared else "decline")


def item_call(person, run_id, step_id, decision, **extra):
    item = open_item(person, run_id, step_id)
    return person.call("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                       decision=decision, **extra)


# --- approvals ---------------------------------------------------------------------------

def test_approved_continues_at_next(onboarding):
    run_id, people = onboarding
    view = decide(people["fin"], run_id, "approve", "approved")
    assert (view["run"]["outcome"], states(view)["done"]) == ("onboarded", "done")
    assert view["data"]["steps"]["approve"] == {"decision": "approved", "by": "fin@example.com",
                                               "at": view["run"]["updatedAt"], "history": []}


def test_rejected_needs_a_note_and_returns_to_on_reject(onboarding, agent):
    run_id, people = onboarding
    error = item_call(people["fin"], run_id, "approve", "rejected")["error"]
    assert (error["code"], error["issues"]) == ("not_accepted", ["note: required"])
    view = decide(people["fin"], run_id, "approve", "rejected", note="Spend not justified.")
    assert states(view)["check_vendor"] == "ready"
    assert view["data"]["steps"]["approve"]["note"] == "Spend not justified."
    assert agent.ok("claim", runId=run_id, stepId="check_vendor")["data"]["steps"]["approve"]["decision"] == "rejected"


def test_rejected_without_on_reject_ends_the_run_rejected(publish, agent, make_person):
    publish(EXAMPLES / "invoice-approval", {"team-lead": "leads", "finance-controller": "finance"})
    lead = make_person("lead@example.com", groups=["leads"])
    run_id = agent.ok("start_run", process="invoice-approval",
                      inputs={"invoiceNumber": "7", "supplier": "S", "total": 50})["run"]["id"]
    do_agent_step(agent, run_id, "match_invoice", {"purchaseOrder": "po", "matched": True},
                  next="lead_approval")
    view = decide(lead, run_id, "lead_approval", "rejected", note="Not ordered by us.")
    assert (view["run"]["state"], view["run"]["outcome"]) == ("ended", "rejected")
    assert view["run"]["ended"]["note"] == "Not ordered by us."
    assert view["run"]["ended"]["by"] == "lead@example.com"
    assert states(view)["record_payment"] is None


def test_failed_ends_the_run_and_marks_the_step(onboarding):
    run_id, people = onboarding
    error = item_call(people["fin"], run_id, "approve", "failed")["error"]
    assert error["issues"] == ["note: required"]
    view = decide(people["fin"], run_id, "approve", "failed", note="Vendor is under investigation.")
    assert (view["run"]["outcome"], states(view)["approve"]) == ("failed", "failed")
    assert view["data"]["steps"]["approve"]["decision"] == "failed"
    assert view["run"]["ended"] == {"by": "fin@example.com", "at": view["run"]["updatedAt"],
                                    "note": "Vendor is under investigation."}
    assert view["workItems"] == []


def test_decisions_not_on_the_items_list_are_not_accepted(onboarding):
    run_id, people = onboarding
    error = item_call(people["fin"], run_id, "approve", "returned", note="x")["error"]
    assert (error["code"], error["issues"]) == (
        "not_accepted", ['decision: "returned" is not accepted on this item; one of approved, rejected, failed'])
    error = item_call(people["fin"], run_id, "approve", "completed", output={})["error"]
    assert error["code"] == "not_accepted"


def test_argument_combinations_tools_md_makes_invalid(onboarding):
    run_id, people = onboarding
    error = item_call(people["fin"], run_id, "approve", "approved", next="done", reason="r")["error"]
    assert (error["code"], error["issues"]) == ("invalid", ["next: only with decision completed",
                                                            "reason: only with decision completed"])
    error = item_call(people["fin"], run_id, "approve", "rejected", note="n", output={"a": 1}, summary="s")["error"]
    assert error["issues"] == ["output: only with decision completed", "summary: only with decision completed"]
    error = item_call(people["fin"], run_id, "approve", "completed", note="n")["error"]
    assert error["issues"] == ["note: not with decision completed"]


# --- tasks --------------------------------------------------------------------------------

TASK = """---
name: triage
description: A person triages a ticket and routes it.
inputs:
  ticket: string
steps:
  - id: triage
    person: support
    task: Read the ticket and route it.
    output:
      severity: { type: string, one_of: [low, high] }
      tags: { type: list, items: string }
      due: { type: date, optional: true }
    evidence: [link]
    next:
      - { to: fix, when: It is a bug }
      - { to: answer, when: It is a question }
  - id: fix
    finish: fixed
  - id: answer
    finish: answered
---
Triage.
"""


def test_a_task_completes_under_the_same_acceptance_as_a_submission(publish, agent, make_person):
    publish(TASK, {"support": "support"})
    support = make_person("s@example.com", groups=["support"])
    run_id = agent.ok("start_run", process="triage", inputs={"ticket": "T-1"})["run"]["id"]
    item = open_item(support, run_id, "triage")
    assert item["decide"]["decisions"] == ["completed", "failed"]
    assert item["next"] == [{"to": "fix", "when": "It is a bug"}, {"to": "answer", "when": "It is a question"}]
    error = item_call(support, run_id, "triage", "completed",
                      output={"severity": "urgent", "tags": ["a", 2], "extra": True}, next="nowhere")["error"]
    assert (error["code"], error["issues"]) == ("not_accepted", [
        "output.severity: must be one of low, high", "output.tags[1]: expected string", "output.extra: not declared",
        "evidence: link required", 'next: "nowhere" is not one of fix, answer', "reason: required"])
    view = decide(support, run_id, "triage", "completed", output={"severity": "high", "tags": ["db"]},
                  evidence=LINK, next="fix", reason="Stack trace shows a bug.")
    assert view["run"]["outcome"] == "fixed"
    entry = view["data"]["steps"]["triage"]
    assert (entry["next"], entry["reason"], entry["by"]) == ("fix", "Stack trace shows a bug.", "s@example.com")
    assert "summary" not in entry  # optional for people


def test_next_on_a_single_next_task_is_not_accepted(publish, agent, make_person):
    publish(HANDOVER_TASKS, {"hr-operations": "hr", "it-operations": "it"})
    hr = make_person("hr@example.com", groups=["hr"])
    run_id = hr.ok("start_run", process="handover-tasks", inputs={"employeeName": "Ana"})["run"]["id"]
    error = item_call(hr, run_id, "hr_setup", "completed", output={"hrisRecord": "h", "location": "l", "jobTitle": "j"},
                      evidence=LINK, next="it_setup", reason="r")["error"]
    assert (error["code"], error["issues"]) == ("not_accepted", [
        "next: not allowed, this step's next is not a list of routes",
        "reason: not allowed, this step's next is not a list of routes"])


# --- escalations ----------------------------------------------------------------------------

def escalated(agent, publish):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    run_id = agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": "A", "amount": 1})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="check_vendor")["token"]
    agent.ok("escalate", token=token, note="The EU list site is down.")
    return run_id


def test_returned_makes_the_step_ready_with_the_note_and_the_same_due(publish, agent, make_person):
    ops = make_person("ops@example.com", operator=True)
    run_id = escalated(agent, publish)
    error = item_call(ops, run_id, "check_vendor", "returned")["error"]
    assert error["issues"] == ["note: required"]
    view = decide(ops, run_id, "check_vendor", "returned", note="Use the mirror at eu-mirror.example.")
    assert states(view)["check_vendor"] == "ready"
    work = agent.ok("get_work")["items"][0]
    assert work["handoff"]["returned"] == {"note": "Use the mirror at eu-mirror.example.", "by": "ops@example.com",
                                           "at": view["run"]["updatedAt"]}
    assert agent.ok("claim", runId=run_id, stepId="check_vendor")["handoff"]["returned"]["by"] == "ops@example.com"


def test_completed_on_an_escalation_passes_acceptance_with_summary_optional(publish, agent, make_person):
    ops = make_person("ops@example.com", operator=True)
    run_id = escalated(agent, publish)
    error = item_call(ops, run_id, "check_vendor", "completed", output={"cleared": True})["error"]
    assert error["issues"] == ["output.summary: missing", "evidence: file required",
                               "next: required, one of approve, decline", "reason: required"]
    report = ops.ok("upload", fileName="r.txt", contentType="text/plain", contentBase64="b2s=")
    view = decide(ops, run_id, "check_vendor", "completed", output={"cleared": False, "summary": "Hit on EU list"},
                  evidence=[{"kind": "file", "ref": report["id"]}], next="decline", reason="Sanctions hit.")
    assert view["run"]["outcome"] == "declined"
    assert view["data"]["steps"]["check_vendor"]["by"] == "ops@example.com"


def test_failed_on_an_escalation_ends_the_run(publish, agent, make_person):
    ops = make_person("ops@example.com", operator=True)
    run_id = escalated(agent, publish)
    view = decide(ops, run_id, "check_vendor", "failed", note="Vendor withdrew.")
    assert (view["run"]["outcome"], states(view)["check_vendor"]) == ("failed", "failed")


# --- the error order ------------------------------------------------------------------------

def test_error_order_run_ended_before_already_decided(onboarding):
    run_id, people = onboarding
    item = open_item(people["fin"], run_id, "approve")
    decide(people["fin"], run_id, "approve", "approved")  # the run ends (onboarded)
    error = people["fin2"].error("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                                 decision="approved")
    assert (error["code"], error["issues"]) == ("conflict", ["run_ended"])


def test_already_decided_comes_before_stale_and_says_who(onboarding, agent):
    run_id, people = onboarding
    item = open_item(people["fin2"], run_id, "approve")
    decide(people["fin"], run_id, "approve", "rejected", note="Redo.")  # run continues: check_vendor again
    error = people["fin2"].error("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                                 decision="approved")
    assert (error["code"], error["issues"]) == ("conflict", ["already_decided"])
    assert "rejected" in error["message"] and "fin@example.com" in error["message"]


def test_not_found_then_stale_then_forbidden(onboarding, agent, make_person):
    run_id, people = onboarding
    item = open_item(people["fin"], run_id, "approve")
    error = people["fin"].error("decide", runId=run_id, workItemId="w_nope", snapshot=item["snapshot"],
                                decision="approved")
    assert error["code"] == "not_found"
    # A person who takes no part in the run: it does not exist for them (runs/visibility.py).
    error = people["outsider"].error("decide", runId=run_id, workItemId=item["id"], snapshot="0" * 64,
                                     decision="approved")
    assert (error["code"], error["message"]) == ("not_found", f"no run {run_id} in this organization")
    # A person who sees the run (they started it) but is outside the approval's assignment.
    starter = make_person("starter@example.com")
    run_id = starter.ok("start_run", process="supplier-onboarding",
                        inputs={"vendorName": "Beta", "amount": 1})["run"]["id"]
    screen(agent, run_id)
    item = open_item(people["fin"], run_id, "approve")
    error = starter.error("decide", runId=run_id, workItemId=item["id"], snapshot="0" * 64, decision="approved")
    assert error["code"] == "stale"  # stale is checked before forbidden
    error = starter.error("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                          decision="approved")
    assert (error["code"], error["message"]) == ("forbidden", "this work item is not assigned to you")


def test_an_agent_decide_is_always_forbidden(onboarding, agent):
    run_id, people = onboarding
    item = open_item(people["fin"], run_id, "approve")
    error = agent.error("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="approved")
    assert error["code"] == "forbidden"


def test_a_stale_snapshot_is_refused_and_get_run_gives_a_fresh_one(onboarding, agent):
    run_id, people = onboarding
    item = open_item(people["fin"], run_id, "approve")
    view = agent.ok("get_run", runId=run_id)
    assert view["workItems"][0]["snapshot"] == item["snapshot"]
    # Another group member's earlier read still decides: nothing changed since.
    assert decide(people["fin2"], run_id, "approve", "approved")["run"]["outcome"] == "onboarded"


# --- rework ---------------------------------------------------------------------------------

def test_rejected_twice_keeps_two_earlier_completions_in_history_and_rewound_steps_null(publish, agent, make_person):
    """§3.1: steps completed after the returned-to step move to history and show null."""
    publish(TWO_REVIEWS, {"legal-reviewer": "legal", "finance-reviewer": "finance"})
    owner = make_person("owner@example.com")
    legal = make_person("legal@example.com", groups=["legal"])
    finance = make_person("fin@example.com", groups=["finance"])
    run_id = owner.ok("start_run", process="two-reviews",
                      inputs={"contractId": "C-1", "document": "doc", "owner": "owner@example.com"})["run"]["id"]

    def prepare(revision):
        upload = owner.ok("upload", fileName="c.pdf", contentType="application/pdf", contentBase64="JVBERg==")
        return decide(owner, run_id, "prepare", "completed", output={"revision": revision, "summary": "terms"},
                      evidence=[{"kind": "file", "ref": upload["id"]}])

    prepare("r1")
    decide(legal, run_id, "legal_review", "approved")
    view = decide(finance, run_id, "finance_review", "rejected", note="Payment terms are 90 days; need 30.")
    assert states(view)["prepare"] == "waiting" and states(view)["legal_review"] is None
    assert view["data"]["steps"]["legal_review"] == {"history": [
        {"decision": "approved", "by": "legal@example.com", "at": view["data"]["steps"]["legal_review"]["history"][0]["at"]}]}
    assert view["data"]["steps"]["finance_review"]["note"] == "Payment terms are 90 days; need 30."
    prepare("r2")
    decide(legal, run_id, "legal_review", "approved")
    view = decide(finance, run_id, "finance_review", "rejected", note="Still 60 days.")
    view = prepare("r3")
    prepare_entry = view["data"]["steps"]["prepare"]
    assert [h["output"]["revision"] for h in prepare_entry["history"]] == ["r1", "r2"]
    assert prepare_entry["output"]["revision"] == "r3"
    # The rejecting approval is not rewound: it stays done, its rejection current until it completes again.
    assert states(view)["legal_review"] == "waiting" and states(view)["finance_review"] == "done"
    assert len(view["data"]["steps"]["legal_review"]["history"]) == 2
    assert view["data"]["steps"]["finance_review"]["note"] == "Still 60 days."  # kept current until it completes
    assert [h["decision"] for h in view["data"]["steps"]["finance_review"]["history"]] == ["rejected"]


def test_a_person_path_that_resolves_to_nobody_fails_the_run(publish, agent):
    publish(OWNER_REVIEW)
    view = agent.ok("start_run", process="owner-review",
                    inputs={"incidentId": "I-1", "incidentOwner": "ghost@example.com"})
    do = do_agent_step(agent, view["run"]["id"], "draft", {"report": "r", "proposedActions": []})
    assert (do["run"]["outcome"], states(do)["review"]) == ("failed", "failed")
    assert do["data"]["steps"]["review"]["by"] == "server"
    assert do["run"]["ended"]["note"] == \
        'person: inputs.incidentOwner is "ghost@example.com", who is not a person in this organization'


ALTERNATIVE_ROUTE = """---
name: triage-and-confirm
description: An agent triages; a person confirms the fix or sends it to the handoff route.
inputs:
  ticket: string
steps:
  - id: triage
    agent: Triage the ticket and choose the route.
    output:
      diagnosis: string
    next: [confirm, handoff]
  - id: handoff
    person: support
    task: Hand the ticket to tier 1 with the diagnosis.
    next: closed
  - id: confirm
    person: support
    approve: Confirm the fix worked.
    on_reject: handoff
  - id: closed
    finish: closed
---
Triage, then confirm or hand off.
"""


def test_rejecting_into_a_step_never_reached_moves_nothing_to_history(publish, agent, make_person):
    """§3.1: "every step completed after the returned-to step, other than the rejecting approval
    itself, moves its current fields into history". A returned-to step the run never reached has no
    step completed after it: the triage stays current, so the person doing the handoff reads it."""
    publish(ALTERNATIVE_ROUTE, {"support": "support"})
    person = make_person("sam@example.com", groups=["support"])
    run_id = agent.ok("start_run", process="triage-and-confirm", inputs={"ticket": "T-1"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="triage")["token"]
    agent.ok("submit", token=token, output={"diagnosis": "Cache stale"}, next="confirm", reason="Fixed by a purge.",
             summary="Purged the cache.")
    view = decide(person, run_id, "confirm", "rejected", note="Still broken for EU users.")
    assert states(view)["handoff"] == "waiting" and states(view)["triage"] == "done"
    triage = view["data"]["steps"]["triage"]
    assert triage["output"] == {"diagnosis": "Cache stale"} and triage.get("history", []) == []
    assert view["data"]["steps"]["confirm"]["note"] == "Still broken for EU users."
