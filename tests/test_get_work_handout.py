"""get_work's hand-out (issue 23): agents polling together are listed different first steps.

tools.md get_work: oldest first; "a server MAY filter further" and MUST NOT list a step the caller
cannot claim. The hand-out only filters (steps handed to another agent within its window), and
claim never reads it: any agent may still claim any ready step.
"""

import datetime as dt

import pytest
from django.db import connections

from kernel import clock

PROCESS = """---
name: one-step
description: One agent step.
steps:
  - id: work
    agent: Work.
  - id: done
    finish: done
---
One step.
"""


def _listed(agent, **arguments):
    return [item["runId"] for item in agent.ok("get_work", **arguments)["items"]]


@pytest.fixture
def runs(publish, make_agent):
    publish(PROCESS)
    starter = make_agent("starter")
    ids = []
    for i in range(6):
        with clock.frozen(dt.datetime(2026, 12, 1, 9, i, tzinfo=dt.UTC)):
            ids.append(starter.ok("start_run", process="one-step", inputs={})["run"]["id"])
    return ids


def test_a_second_agent_is_not_listed_the_first_agents_first_steps(runs, make_agent):
    first, second = make_agent("first"), make_agent("second")
    assert _listed(first) == runs  # oldest first
    assert _listed(second) == runs[3:]  # the three handed to `first` are left out
    assert _listed(first) == runs[:3]  # still its own; the next three are `second`'s now
    clock.advance(dt.timedelta(seconds=3))  # past the 2 s window
    assert _listed(second) == runs


def test_the_hand_out_is_advisory_any_agent_claims_any_ready_step(runs, make_agent):
    first, second = make_agent("first"), make_agent("second")
    _listed(first)
    claimed = second.ok("claim", runId=runs[0], stepId="work")
    assert claimed["step"]["id"] == "work"
    assert runs[0] not in _listed(first)  # claimed by `second` now: no longer listed


def test_paging_and_a_zero_window_hand_out_nothing(runs, make_agent, settings):
    first, second = make_agent("first"), make_agent("second")
    page = first.ok("get_work", limit=2)
    first.ok("get_work", limit=2, cursor=page["nextCursor"])  # a later page hands nothing out
    assert _listed(second) == runs[2:]
    settings.GET_WORK_HANDOUT_SECONDS = 0
    third = make_agent("third")
    assert _listed(third) == runs


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_sixteen_agents_listing_at_once_start_on_different_steps(publish, make_agent, settings):
    """A step is handed to one agent only: the UPDATE that hands it out re-checks the row under its
    lock, and an agent that lost one of its first steps to another is not listed it."""
    from runs.models import StepState
    from tests.test_concurrency_postgres import in_threads

    publish(PROCESS)
    starter = make_agent("starter")
    for _ in range(60):
        starter.ok("start_run", process="one-step", inputs={})
    agents = [make_agent(f"poller{i}") for i in range(16)]
    settings.GET_WORK_HANDOUT_SECONDS = 0
    alike = in_threads(16, lambda i: _listed(agents[i]))
    assert len({listed[0] for listed in alike}) == 1  # without the hand-out all start on the oldest
    settings.GET_WORK_HANDOUT_SECONDS = 2
    listed = in_threads(16, lambda i: _listed(agents[i]))
    connections.close_all()
    handed = {}
    for state in StepState.objects.filter(offered_to__isnull=False).select_related("run"):
        handed.setdefault(state.offered_to, []).append(state.run_id)
    assert sum(map(len, handed.values())) == len({i for ids in handed.values() for i in ids})
    refs = [f"a_poller{i}" for i in range(16)]
    for ref, mine in zip(refs, listed, strict=True):
        assert set(handed.get(ref, [])) <= set(mine), (ref, handed.get(ref), mine)  # its own are listed to it
    assert len({mine[0] for mine in listed}) > 1, listed


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_agents_polling_over_and_over_never_deadlock(publish, make_agent, settings):
    """get_work is a read for its caller: it must never answer `retry` because two hand-outs locked
    the same steps in opposite orders (PostgreSQL's deadlock detector aborting one of them; seen in
    CI as `retry: the server is busy` at 16 racing agents). The hand-out takes only steps no one
    else holds, so it never waits for a row lock at all."""
    from tests.test_concurrency_postgres import in_threads

    publish(PROCESS)
    starter = make_agent("starter")
    for _ in range(300):
        starter.ok("start_run", process="one-step", inputs={})
    agents = [make_agent(f"poller{i}") for i in range(16)]
    settings.GET_WORK_HANDOUT_SECONDS = 0.001  # every poll competes for the oldest steps again

    def poll(i):
        answers = [agents[i].call("get_work", limit=5) for _ in range(40)]
        return [answer["error"] for answer in answers if not answer["ok"]]

    refused = [error for errors in in_threads(16, poll) for error in errors]
    assert refused == []
