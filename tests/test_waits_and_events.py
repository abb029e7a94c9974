"""Waits (spec §2.2), events (§3.6) and sweeps, with a controllable clock."""

import datetime as dt

import pytest

from kernel import clock
from runs.models import Event, StepState
from runs.services.sweep import sweep
from tests.support.concurrency import run_together
from tests.support.flows import decide, do_agent_step, states
from tests.support.processes import ACCOUNT_CLOSURE, SCHEDULED_POST

T0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def frozen():
    with clock.frozen(T0):
        yield


def process(steps: str, inputs: str = "") -> str:
    return f"---\nname: timing\ndescription: Timing test.\n{inputs}steps:\n{steps}---\nTiming.\n"


def start(actor, inputs=None):
    return actor.ok("start_run", process="timing", inputs=inputs or {})


WAIT = process("  - id: pause\n    wait: 2h\n  - id: after\n    agent: Go on.\n  - id: end\n    finish: ok\n")


def test_wait_continues_after_its_duration_by_the_server(publish, agent):
    publish(WAIT)
    view = start(agent)
    run_id = view["run"]["id"]
    assert (states(view), view["run"]["state"]) == ({"pause": "waiting", "after": None, "end": None}, "waiting")
    clock.advance(dt.timedelta(minutes=119))
    assert sweep(clock.now()).timers == 0
    clock.advance(dt.timedelta(minutes=1))
    assert sweep(clock.now()).timers == 1
    view = agent.ok("get_run", runId=run_id)
    assert states(view) == {"pause": "done", "after": "ready", "end": None}
    assert view["data"]["steps"]["pause"] == {"by": "server", "at": "2026-10-06T11:00:00Z", "history": []}
    assert sweep(clock.now()).timers == 0  # once


UNTIL = process("  - id: hold\n    wait_until: inputs.at\n  - id: after\n    agent: Go on.\n  - id: end\n    finish: ok\n",
                "inputs:\n  at: { type: datetime, optional: true }\n")


def test_wait_until_continues_at_the_named_datetime(publish, agent):
    publish(UNTIL)
    run_id = start(agent, {"at": "2026-10-06T12:30:00+02:00"})["run"]["id"]  # 10:30 UTC
    clock.advance(dt.timedelta(minutes=89))
    sweep(clock.now())
    assert states(agent.ok("get_run", runId=run_id))["hold"] == "waiting"
    clock.advance(dt.timedelta(minutes=1))
    sweep(clock.now())
    assert states(agent.ok("get_run", runId=run_id)) == {"hold": "done", "after": "ready", "end": None}


def test_a_past_wait_until_continues_at_once(publish, agent):
    publish(UNTIL)
    view = start(agent, {"at": "2026-10-01T00:00:00Z"})
    assert states(view) == {"hold": "done", "after": "ready", "end": None}
    assert view["data"]["steps"]["hold"]["by"] == "server"


def test_a_missing_wait_until_value_fails_the_run(publish, agent):
    """§3.5: a wait_until value that is missing fails that step with by: server and a note."""
    publish(UNTIL)
    view = start(agent)
    assert states(view) == {"hold": "failed", "after": None, "end": None}
    assert (view["run"]["state"], view["run"]["outcome"]) == ("ended", "failed")
    note = "wait_until: inputs.at is missing"
    assert view["run"]["ended"] == {"by": "server", "at": "2026-10-06T09:00:00Z", "note": note}
    assert view["data"]["steps"]["hold"] == {"decision": "failed", "note": note, "by": "server",
                                             "at": "2026-10-06T09:00:00Z", "history": []}


EVENTS = process(
    "  - id: first\n    wait_for: paid\n"
    "  - id: second\n    wait_for: paid\n    timeout: 1d\n    on_timeout: chase\n    next: done\n"
    "  - id: chase\n    agent: Chase the payment.\n"
    "  - id: done\n    finish: settled\n")


def test_wait_for_consumes_the_event_with_the_sender_and_data(publish, agent):
    publish(EVENTS)
    run_id = start(agent)["run"]["id"]
    assert agent.ok("send_event", runId=run_id, name="paid", data={"amount": 12.5}) == {"consumedBy": "first"}
    view = agent.ok("get_run", runId=run_id)
    assert view["data"]["steps"]["first"] == {"output": {"amount": 12.5}, "by": "a_screener",
                                              "at": "2026-10-06T09:00:00Z", "history": []}
    assert states(view)["second"] == "waiting"


def test_wait_for_times_out_to_on_timeout(publish, agent):
    publish(EVENTS)
    run_id = start(agent)["run"]["id"]
    agent.ok("send_event", runId=run_id, name="paid")
    clock.advance(dt.timedelta(days=1))
    assert sweep(clock.now()).timers == 1
    view = agent.ok("get_run", runId=run_id)
    assert states(view) == {"first": "done", "second": "done", "chase": "ready", "done": None}
    assert view["data"]["steps"]["second"] == {"by": "server", "at": "2026-10-07T09:00:00Z", "history": []}


def test_wait_for_without_on_timeout_times_out_to_next(publish, agent):
    publish(process("  - id: hold\n    wait_for: ping\n    timeout: 30m\n  - id: after\n    agent: Go.\n  - id: end\n    finish: ok\n"))
    run_id = start(agent)["run"]["id"]
    clock.advance(dt.timedelta(minutes=30))
    sweep(clock.now())
    assert states(agent.ok("get_run", runId=run_id)) == {"hold": "done", "after": "ready", "end": None}


def test_an_event_sent_before_its_wait_is_held_then_consumed(publish, agent):
    publish(process("  - id: work\n    agent: Work.\n  - id: hold\n    wait_for: ping\n  - id: done\n    finish: ok\n"))
    run_id = start(agent)["run"]["id"]
    assert agent.ok("send_event", runId=run_id, name="ping", data={"n": 1}) == {"consumedBy": None}
    view = do_agent_step(agent, run_id, "work", {})
    assert view["run"]["outcome"] == "ok"
    assert view["data"]["steps"]["hold"]["output"] == {"n": 1}


def test_same_name_events_are_consumed_oldest_first(publish, agent, make_agent):
    publish(process("  - id: work\n    agent: Work.\n  - id: one\n    wait_for: ping\n"
                    "  - id: two\n    wait_for: ping\n  - id: done\n    finish: ok\n"))
    run_id = start(agent)["run"]["id"]
    agent.ok("send_event", runId=run_id, name="ping", data={"n": 1})
    clock.advance(dt.timedelta(seconds=1))
    make_agent("other").ok("send_event", runId=run_id, name="ping", data={"n": 2})
    view = do_agent_step(agent, run_id, "work", {})
    assert view["data"]["steps"]["one"]["output"] == {"n": 1}
    assert view["data"]["steps"]["two"]["output"] == {"n": 2}
    assert view["data"]["steps"]["two"]["by"] == "a_other"


def test_an_event_with_no_wait_is_discarded_when_the_run_ends(publish, agent, make_person):
    publish(process("  - id: work\n    agent: Work.\n  - id: done\n    finish: ok\n"))
    run_id = start(agent)["run"]["id"]
    assert agent.ok("send_event", runId=run_id, name="stray") == {"consumedBy": None}
    assert Event.objects.get(name="stray").discarded_at is None
    do_agent_step(agent, run_id, "work", {})
    event = Event.objects.get(name="stray")
    assert (event.consumed_by, event.discarded_at) == (None, T0)
    error = agent.error("send_event", runId=run_id, name="late")
    assert (error["code"], error["issues"]) == ("conflict", ["run_ended"])


def test_send_event_is_for_agents_and_operators(publish, agent, make_person):
    publish(EVENTS)
    mira = make_person("mira@example.com")
    assert mira.error("send_event", runId=start(mira)["run"]["id"], name="paid")["code"] == "forbidden"
    # tools.md send_event: "From an agent identity or an operator; `forbidden` otherwise." Checked
    # before the run is looked up, so a run she takes no part in and an id that never existed answer
    # alike (runs/visibility.py: a hidden run must not be told apart from a missing one).
    run_id = start(agent)["run"]["id"]
    hidden = mira.error("send_event", runId=run_id, name="paid")
    missing = mira.error("send_event", runId="r_never_existed", name="paid")
    assert hidden == missing == {**hidden, "code": "forbidden", "message": "events come from agents and operators"}
    ops = make_person("ops@example.com", operator=True)
    assert ops.ok("send_event", runId=run_id, name="paid") == {"consumedBy": "first"}
    assert agent.ok("get_run", runId=run_id)["data"]["steps"]["first"]["by"] == "ops@example.com"
    assert agent.error("send_event", runId=run_id, name="Bad Name")["issues"] == [
        'name: "Bad Name" does not match ^[a-z][a-z0-9_-]{0,63}$']


def test_event_data_is_within_the_run_data_cap(publish, agent, settings):
    publish(EVENTS)
    run_id = start(agent)["run"]["id"]
    settings.RUN_DATA_BYTES = 100
    error = agent.error("send_event", runId=run_id, name="paid", data={"blob": "x" * 100})
    assert error["code"] == "invalid"
    assert error["issues"][0].startswith("data: ") and "limits.runDataBytes (100)" in error["issues"][0]


def test_sweep_returns_lapsed_leases_to_ready_with_the_progress(publish, agent):
    publish(process("  - id: work\n    agent: Work.\n  - id: end\n    finish: ok\n"))
    run_id = start(agent)["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="work")["token"]
    agent.ok("renew", token=token, progress="half done")
    clock.advance(dt.timedelta(seconds=600))
    assert sweep(clock.now()).leases == 1
    state = StepState.objects.get(step_id="work")
    assert (state.state, state.handoff, state.claimed_by) == ("ready", {"progress": "half done"}, None)
    assert agent.ok("claim", runId=run_id, stepId="work")["handoff"] == {"progress": "half done"}


# --- whole processes through their waits and events ----------------------------------------------------

OFFBOARDING_ROLES = {"account-owner": "owners", "finance-collections": "collections", "data-steward": "stewards"}


def test_account_closure_runs_end_to_end_through_its_waits_and_event(publish, agent, make_person):
    publish(ACCOUNT_CLOSURE, OFFBOARDING_ROLES)
    owner = make_person("owner@example.com", groups=["owners"])
    steward = make_person("steward@example.com", groups=["stewards"])
    billing = make_person("billing@example.com", operator=True)
    run_id = agent.ok("start_run", process="account-closure",
                      inputs={"customerId": "c-1", "effectiveAt": "2026-10-08T00:00:00Z"})["run"]["id"]
    view = decide(owner, run_id, "authorize", "approved")
    assert states(view)["effective_time"] == "waiting"
    clock.advance(dt.timedelta(days=2))
    sweep(clock.now())
    do_agent_step(agent, run_id, "cancel_services", {"cancellationIds": ["svc-1", "svc-2"]})
    view = do_agent_step(agent, run_id, "final_invoice", {"invoiceId": "inv-9", "balance": 120.5, "currency": "EUR"},
                         next="settlement_event", reason="Balance outstanding.")
    assert states(view)["settlement_event"] == "waiting"
    assert billing.ok("send_event", runId=run_id, name="final-invoice-settled",
                      data={"invoiceId": "inv-9"}) == {"consumedBy": "settlement_event"}
    do_agent_step(agent, run_id, "verify_settlement", {"ledgerSummary": "Settled on the 9th."},
                  next="deletion_clearance", reason="Ledger shows settled.")
    decide(steward, run_id, "deletion_clearance", "completed",
           output={"deletionScope": "All customer data", "retentionExceptions": "Invoices, 10 years"},
           evidence=[{"kind": "link", "ref": "https://inventory/c-1"}])
    do_agent_step(agent, run_id, "delete_data", {"deletionReceipts": ["crm:ok", "billing:expiry 2036"]})
    view = decide(steward, run_id, "verify_deletion", "completed",
                  output={"completionStatement": "Deleted; invoices retained."},
                  evidence=[{"kind": "link", "ref": "https://mail/statement"}])
    assert (view["run"]["state"], view["run"]["outcome"]) == ("ended", "offboarded")
    assert view["data"]["steps"]["settlement_event"]["output"] == {"invoiceId": "inv-9"}
    assert view["data"]["steps"]["settlement_event"]["by"] == "billing@example.com"
    assert states(view)["finance_followup"] is None


def test_account_closure_settlement_times_out_to_finance_followup(publish, agent, make_person):
    publish(ACCOUNT_CLOSURE, OFFBOARDING_ROLES)
    owner = make_person("owner@example.com", groups=["owners"])
    collections = make_person("col@example.com", groups=["collections"])
    run_id = agent.ok("start_run", process="account-closure",
                      inputs={"customerId": "c-2", "effectiveAt": "2026-10-01T00:00:00Z"})["run"]["id"]
    view = decide(owner, run_id, "authorize", "approved")
    assert states(view)["effective_time"] == "done"  # already past: continues at once
    do_agent_step(agent, run_id, "cancel_services", {"cancellationIds": []})
    do_agent_step(agent, run_id, "final_invoice", {"invoiceId": "inv-1", "balance": 5, "currency": "USD"},
                  next="settlement_event")
    clock.advance(dt.timedelta(days=30))
    sweep(clock.now())
    view = agent.ok("get_run", runId=run_id)
    assert states(view)["finance_followup"] == "waiting"
    assert view["data"]["steps"]["settlement_event"] == {"by": "server", "at": "2026-11-05T09:00:00Z", "history": []}
    view = decide(collections, run_id, "finance_followup", "completed", output={"settlementReference": "wo-7"},
                  evidence=[{"kind": "link", "ref": "https://ledger/wo-7"}])
    assert states(view)["deletion_clearance"] == "waiting"


def test_scheduled_post_runs_end_to_end_with_a_rejection_and_its_wait(publish, agent, make_person):
    publish(SCHEDULED_POST, {"editor": "editors"})
    editor = make_person("ed@example.com", groups=["editors"])
    run_id = agent.ok("start_run", process="scheduled-post", inputs={
        "brief": "Launch post", "slug": "launch", "publishAt": "2026-10-07T08:00:00Z"})["run"]["id"]
    draft = {"revision": "r1", "title": "Launch", "summary": "We launched."}
    do_agent_step(agent, run_id, "draft", draft)
    view = decide(editor, run_id, "editor_review", "rejected", note="Cite the benchmark.")
    assert states(view) == {"draft": "ready", "editor_review": "done", "publication_time": None, "publish": None,
                            "done": None}
    claim = agent.ok("claim", runId=run_id, stepId="draft")
    assert claim["data"]["steps"]["editor_review"]["note"] == "Cite the benchmark."
    agent.ok("submit", token=claim["token"], output={**draft, "revision": "r2"}, summary="Cited it.",
             evidence=[{"kind": "link", "ref": "https://cms/preview/r2"}])
    view = decide(editor, run_id, "editor_review", "approved")
    assert [h["output"]["revision"] for h in view["data"]["steps"]["draft"]["history"]] == ["r1"]
    assert states(view)["publication_time"] == "waiting"
    clock.advance(dt.timedelta(hours=23))
    sweep(clock.now())
    view = do_agent_step(agent, run_id, "publish", {"url": "https://blog/launch", "publishedRevision": "r2"})
    assert (view["run"]["state"], view["run"]["outcome"]) == ("ended", "published")
    assert view["data"]["steps"]["publication_time"] == {"by": "server", "at": "2026-10-07T08:00:00Z", "history": []}


def test_a_run_can_start_with_a_wait_for(publish, agent):
    publish(process("  - id: hold\n    wait_for: go\n  - id: done\n    finish: ok\n"))
    view = start(agent)
    assert (view["run"]["state"], states(view)["hold"]) == ("waiting", "waiting")
    assert agent.ok("send_event", runId=view["run"]["id"], name="go") == {"consumedBy": "hold"}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_timer_sweeps_fire_each_wait_once(publish, agent):
    from runs.services.sweep import sweep_timers

    publish(WAIT)
    run_ids = [start(agent)["run"]["id"] for _ in range(30)]
    later = T0 + dt.timedelta(hours=2)
    fired = run_together(lambda: sweep_timers(later))
    assert sum(fired) == 30
    for run_id in run_ids:
        view = agent.ok("get_run", runId=run_id)
        assert states(view) == {"pause": "done", "after": "ready", "end": None}
        assert view["data"]["steps"]["pause"]["history"] == []


def test_the_lease_sweep_merges_the_progress_into_an_existing_handoff(publish, agent):
    publish(process("  - id: work\n    agent: Work.\n    output: { n: number }\n  - id: end\n    finish: ok\n"))
    run_id = start(agent)["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="work")["token"]
    refused = agent.error("submit", token=token, output={}, summary="first try")
    agent.ok("renew", token=token, progress="found the number")
    clock.advance(dt.timedelta(seconds=600))
    assert sweep(clock.now()).leases == 1
    state = StepState.objects.get(step_id="work")
    assert (state.state, state.progress, state.claimed_by) == ("ready", None, None)
    assert state.handoff == {"issues": refused["issues"], "progress": "found the number"}
