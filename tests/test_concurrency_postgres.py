"""Concurrency on PostgreSQL (spec §6 rule 2; §4: the server resolves concurrent writes to one run)."""

import threading

import pytest
from django.db import connections

from tests.support.spec import EXAMPLES

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def in_threads(count, work):
    """Run work(i) in `count` threads released together; returns the results in order."""
    barrier = threading.Barrier(count)
    results = [None] * count

    def body(index):
        try:
            barrier.wait()
            results[index] = work(index)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def test_eight_agents_racing_for_one_step_get_exactly_one_claim(publish, make_agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    agents = [make_agent(f"racer{i}") for i in range(8)]
    run_id = agents[0].ok("start_run", process="supplier-onboarding",
                          inputs={"vendorName": "A", "amount": 1})["run"]["id"]
    results = in_threads(8, lambda i: agents[i].call("claim", runId=run_id, stepId="check_vendor"))
    winners = [r for r in results if r["ok"]]
    losers = [r["error"] for r in results if not r["ok"]]
    assert len(winners) == 1
    assert losers == [{"code": "conflict", "message": "another caller holds a live claim on this step",
                       "issues": ["claimed_by_other"]}] * 7


PING_CHAIN = "---\nname: ping-chain\ndescription: Eight waits in a row, each for one ping.\nsteps:\n" + "".join(
    f"  - id: w{i}\n    wait_for: ping\n" for i in range(8)) + "  - id: done\n    finish: done\n---\nPings.\n"


def test_parallel_writes_to_one_run_lose_nothing(publish, make_agent):
    """Eight events sent at once to one run: each satisfies exactly one wait, none lost or doubled."""
    publish(PING_CHAIN)
    agents = [make_agent(f"sender{i}") for i in range(8)]
    run_id = agents[0].ok("start_run", process="ping-chain", inputs={})["run"]["id"]
    results = in_threads(8, lambda i: agents[i].call("send_event", runId=run_id, name="ping", data={"n": i}))
    assert all(r["ok"] for r in results), results
    view = agents[0].ok("get_run", runId=run_id)
    assert (view["run"]["state"], view["run"]["outcome"]) == ("ended", "done")
    outputs = sorted(view["data"]["steps"][f"w{i}"]["output"]["n"] for i in range(8))
    assert outputs == list(range(8))
    senders = {view["data"]["steps"][f"w{i}"]["by"] for i in range(8)}
    assert senders == {f"a_sender{i}" for i in range(8)}


def test_a_requestid_raced_by_eight_threads_starts_one_run(publish, agent):
    from runs.models import Run

    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    results = in_threads(8, lambda i: agent.call("start_run", process="supplier-onboarding",
                                                 inputs={"vendorName": "A", "amount": 1}, requestId="same"))
    assert all(r["ok"] for r in results), results
    assert len({r["data"]["run"]["id"] for r in results}) == 1
    assert Run.objects.count() == 1
