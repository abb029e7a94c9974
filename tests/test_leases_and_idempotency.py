"""Leases (spec §3.3, §6 rule 2) and idempotency (spec §4), with a controllable clock."""

import datetime as dt

import jwt
import pytest

from kernel import clock
from tests.support.spec import EXAMPLES

T0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def run_id(publish, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    with clock.frozen(T0):
        return agent.ok("start_run", process="supplier-onboarding",
                        inputs={"vendorName": "Acme", "amount": 1})["run"]["id"]


@pytest.fixture
def frozen():
    with clock.frozen(T0):
        yield


def claim(actor, run_id, **extra):
    return actor.call("claim", runId=run_id, stepId="check_vendor", **extra)


def test_claim_returns_a_lease_of_lease_seconds(run_id, agent, frozen, settings):
    data = claim(agent, run_id)["data"]
    assert data["expiresAt"] == "2026-10-06T09:10:00Z"  # LEASE_SECONDS = 600
    assert data["handoff"] is None and data["mode"] == "live"
    assert data["step"] == {
        "id": "check_vendor",
        "instructions": "Check the vendor against the OFAC and EU sanctions lists.\nAttach the screening report.\n",
        "output": {"cleared": "boolean", "summary": "string"},
        "evidence": ["file"],
        "next": [{"to": "approve", "when": "Vendor is cleared on both lists"},
                 {"to": "decline", "when": "Any sanctions hit"}],
    }
    assert data["body"].startswith("\n# Supplier onboarding")
    assert data["data"] == {"inputs": {"vendorName": "Acme", "amount": 1}, "steps": {}}


def test_second_claim_conflicts_by_holder(run_id, agent, make_agent, frozen):
    claim(agent, run_id)
    assert claim(agent, run_id)["error"]["issues"] == ["claimed_by_you"]
    assert claim(make_agent("other"), run_id)["error"]["issues"] == ["claimed_by_other"]


def test_an_expired_lease_is_claimable_at_once_with_the_last_progress(run_id, agent, make_agent, frozen):
    """§3.3: when a lease ends the step is claimable immediately; handoff.progress is the last note."""
    first = claim(agent, run_id)["data"]
    renewed = agent.ok("renew", token=first["token"], progress="Searched OFAC; EU list next.")
    renewed = agent.ok("renew", token=renewed["token"], progress="OFAC clear, EU half done.")
    clock.advance(dt.timedelta(seconds=601))
    other = make_agent("other")
    work = other.ok("get_work")["items"]
    assert [(w["stepId"], w["handoff"]) for w in work] == [("check_vendor", {"progress": "OFAC clear, EU half done."})]
    second = claim(other, run_id)["data"]
    assert second["handoff"] == {"progress": "OFAC clear, EU half done."}
    # The lapsed holder's tokens are stale, the new one works.
    for token in (first["token"], renewed["token"]):
        error = agent.error("submit", token=token, output={}, summary="late")
        assert error["code"] == "stale"


def test_renew_kills_the_old_token_at_once(run_id, agent, frozen):
    first = claim(agent, run_id)["data"]
    renewed = agent.ok("renew", token=first["token"])
    assert renewed["token"] != first["token"]
    assert agent.error("renew", token=first["token"])["code"] == "stale"
    assert agent.error("escalate", token=first["token"], note="x")["code"] == "stale"
    clock.advance(dt.timedelta(seconds=300))
    assert agent.ok("renew", token=renewed["token"])["expiresAt"] == "2026-10-06T09:15:00Z"


def test_a_tampered_token_is_invalid(run_id, agent, frozen):
    token = claim(agent, run_id)["data"]["token"]
    header, payload, signature = token.split(".")
    forged = jwt.encode({**jwt.decode(token, options={"verify_signature": False}), "gen": 99}, "guess-the-server-secret-key-0123456789",
                        algorithm="HS256")
    for bad in (f"{header}.{payload}.{signature[:-2]}xx", forged, "eyJhbGciOiJub25lIn0.e30."):
        error = agent.error("submit", token=bad, output={}, summary="x")
        assert (error["code"], error["issues"]) == ("invalid", ["token: does not verify"])


def test_a_token_verified_once_is_not_trusted_under_another_key(run_id, agent, frozen, settings):
    """Spec §6 rule 2: lease tokens are unforgeable. What a token says is kept once its signature
    verified (a submit reads it twice); a server whose key changed verifies it anew, and refuses it."""
    token = claim(agent, run_id)["data"]["token"]
    assert agent.ok("renew", token=token)  # verified and kept under the current key
    settings.SECRET_KEY = "another-key-" + "x" * 50
    error = agent.error("renew", token=token)
    assert (error["code"], error["issues"]) == ("invalid", ["token: does not verify"])


def test_a_token_used_by_another_agent_is_forbidden(run_id, agent, make_agent, frozen):
    token = claim(agent, run_id)["data"]["token"]
    assert make_agent("thief").error("submit", token=token, output={}, summary="x")["code"] == "forbidden"


def test_tokens_never_appear_in_get_run(run_id, agent, frozen):
    token = claim(agent, run_id)["data"]["token"]
    assert token not in str(agent.ok("get_run", runId=run_id))


def test_a_replayed_claim_returns_the_identical_token_after_the_lease_expired(run_id, agent, make_agent, frozen):
    """§3.3: a lost claim response is retried with the same requestId and returns the original result."""
    original = claim(agent, run_id, requestId="claim-1")
    clock.advance(dt.timedelta(seconds=3600))
    claim(make_agent("other"), run_id)  # someone else holds it now
    replay = claim(agent, run_id, requestId="claim-1")
    assert replay == original
    assert agent.error("submit", token=replay["data"]["token"], output={}, summary="x")["code"] == "stale"


def test_a_requestid_with_other_arguments_is_a_conflict(run_id, agent, frozen):
    claim(agent, run_id, requestId="req-1")
    error = agent.error("start_run", process="supplier-onboarding", inputs={"vendorName": "B", "amount": 2},
                        requestId="req-1")
    assert (error["code"], error["issues"]) == ("conflict", ["requestId: already used with other arguments"])


def test_a_requestid_replayed_by_another_identity_is_a_conflict(run_id, agent, make_agent, frozen):
    claim(agent, run_id, requestId="mine")
    error = claim(make_agent("other"), run_id, requestId="mine")["error"]
    assert error["code"] == "conflict"
    assert "already used" in error["message"]


def test_a_failed_call_is_not_recorded_so_a_retry_succeeds(run_id, agent, make_agent, frozen):
    other = make_agent("other")
    token = claim(other, run_id)["data"]["token"]
    assert claim(agent, run_id, requestId="retry-me")["error"]["issues"] == ["claimed_by_other"]
    other.ok("escalate", token=token, note="cannot")
    # still not ready (escalated): fails again, still unrecorded
    assert claim(agent, run_id, requestId="retry-me")["error"]["issues"] == ["not_ready"]


def test_a_replayed_start_run_changes_nothing(publish, agent, frozen):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    from runs.models import Run

    args = {"process": "supplier-onboarding", "inputs": {"vendorName": "A", "amount": 1}, "requestId": "s-1"}
    first = agent.ok("start_run", **args)
    assert agent.ok("start_run", **args) == first
    assert Run.objects.count() == 1


def test_a_refused_submission_leaves_its_issues_in_the_handoff(run_id, agent, make_agent, frozen):
    """§3.3 handoff: the issues if the last submission was not accepted; run data unchanged."""
    token = claim(agent, run_id)["data"]["token"]
    before = agent.ok("get_run", runId=run_id)["data"]
    error = agent.error("submit", token=token, output={"cleared": 1}, summary="first try")
    assert error["code"] == "not_accepted"
    assert agent.ok("get_run", runId=run_id)["data"] == before
    clock.advance(dt.timedelta(seconds=601))
    handoff = claim(make_agent("other"), run_id)["data"]["handoff"]
    assert handoff == {"issues": error["issues"]}


def test_escalate_hands_the_step_to_the_operators(run_id, agent, make_person, frozen):
    token = claim(agent, run_id)["data"]["token"]
    view = agent.ok("escalate", token=token, note="The EU list is down.")
    assert view["steps"][0]["state"] == "waiting"
    [item] = view["workItems"]
    assert item["kind"] == "agent" and item["assignedTo"] == {"group": "operators"}
    assert item["escalation"] == {"note": "The EU list is down.", "by": "a_screener", "at": "2026-10-06T09:00:00Z"}
    assert item["decide"]["decisions"] == ["returned", "completed", "failed"]
    assert agent.error("renew", token=token)["code"] == "stale"
    ops = make_person("ops@example.com", operator=True)
    assert [i["workItem"]["id"] for i in ops.ok("get_work")["items"]] == [item["id"]]


def test_start_run_checks_inputs_with_every_issue(publish, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    error = agent.error("start_run", process="supplier-onboarding", inputs={"amount": "lots", "color": "red"})
    assert (error["code"], error["issues"]) == ("invalid", [
        "inputs.vendorName: missing", "inputs.amount: expected number", "inputs.color: not declared"])
    assert agent.error("start_run", process="nope", inputs={})["code"] == "not_found"
    assert agent.error("start_run", process="supplier-onboarding", version=7,
                       inputs={"vendorName": "A", "amount": 1})["code"] == "not_found"


def test_an_agent_cannot_start_a_process_with_an_initiator_step(publish, agent, make_person):
    """tools.md start_run: a process with any step assigned to initiator, when the caller is an agent → invalid."""
    publish(EXAMPLES / "expense-approval")
    inputs = {"manager": "boss@example.com", "amount": 12.5, "category": "travel"}
    error = agent.error("start_run", process="expense-approval", inputs=inputs)
    assert (error["code"], error["issues"]) == ("invalid", [
        "steps[0] (attach_receipts): person is initiator, and a run started by an agent has no initiator"])
    employee = make_person("sam@example.com")
    view = employee.ok("start_run", process="expense-approval", inputs=inputs, mode="test")
    assert view["workItems"][0]["assignedTo"] == {"person": "sam@example.com"}
    assert view["workItems"][0]["mode"] == "test"
    assert view["run"]["startedBy"] == "sam@example.com"


def test_run_data_cap_bounds_inputs(publish, agent, settings):
    settings.RUN_DATA_BYTES = 200
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    error = agent.error("start_run", process="supplier-onboarding", inputs={"vendorName": "A" * 300, "amount": 1})
    assert error["code"] == "invalid"
    assert error["issues"] == ["run data: 350 bytes would exceed limits.runDataBytes (200)"]
