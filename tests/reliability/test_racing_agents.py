"""Racing agents (issue 8; spec §6 rules 1-2, §4 idempotency): sixteen agent threads on PostgreSQL,
in process and over real HTTP against three uvicorn worker processes (issue 13), work 1000 agent steps (500 runs of a two-step process: 500 steps ready at the start) through
get_work → claim → submit, with replayed requestIds, renewals, refused submissions and lapsed
leases, until every run has finished.

Every thread has its own database connection. Leases are short (LEASE_SECONDS = 2) so that an
agent that deliberately lets its lease lapse can be caught submitting with the dead token; a sweeper
thread releases lapsed leases meanwhile, as Celery beat does in production.

What the suite insists on:
- every step is completed exactly once: one accepted submission (one requestId) per step, one
  completion in run data, no history, the output of exactly that submission, `by` its agent;
- a submission (or renew) with a replaced token — the agent renewed — is `stale`, always;
- a submission with a lapsed token is `stale` (or `conflict`/`run_ended` once the run is over);
- a replayed requestId returns the original envelope, byte for byte, however late;
- nothing else is ever refused, except where the timing shows the lease may genuinely have lapsed.
"""

import json
import random
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass, field

import pytest
from django.db import connections

from api.tools import call_tool
from kernel.identity import identity_from_bearer
from tests.support.envelopes import check_envelope

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

AGENTS = 16
RUNS = 500  # two agent steps each: 500 ready at the start, 1000 in all
STEPS = ("first", "second")
LEASE = 2  # seconds
LAPSE_BUDGET = 16  # deliberately lapsed leases over the whole race (each costs LEASE + margin of sleep)
DEADLINE_SECONDS = 180

RACE = """---
name: race
description: Two agent steps in a row, for racing agents.
inputs:
  n: number
steps:
  - id: first
    agent: Produce the first value.
    output:
      value: number
  - id: second
    agent: Produce the second value.
    output:
      value: number
  - id: done
    finish: done
---

# Race

Two agent steps, then done.
"""


@dataclass
class Ledger:
    """What the agents saw, shared by every thread."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    accepted: dict = field(default_factory=lambda: defaultdict(list))  # (run, step) -> [(agent, rid, value)]
    counts: dict = field(default_factory=lambda: defaultdict(int))
    failures: list = field(default_factory=list)
    lapses_left: int = LAPSE_BUDGET
    stop: threading.Event = field(default_factory=threading.Event)

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] += 1

    def take_lapse(self) -> bool:
        with self.lock:
            if self.lapses_left <= 0:
                return False
            self.lapses_left -= 1
            return True

    def completed(self) -> int:
        with self.lock:
            return len(self.accepted)


class RacingAgent:
    def __init__(self, index: int, token: str, ref: str, ledger: Ledger, server_url: str | None = None):
        self.index, self.token, self.ref, self.ledger = index, token, ref, ledger
        self.server_url = server_url  # None: the tool layer in process; else REST over HTTP
        self.rng = random.Random(8_000 + index)
        self.identity = None
        self.history: list[tuple[str, dict, dict]] = []  # successful writes: (tool, arguments, envelope)
        self.serial = 0

    # --- calling ---------------------------------------------------------------------------------
    def send(self, tool: str, arguments: dict) -> dict:
        if self.server_url is None:
            return call_tool(self.identity, tool, arguments)
        request = urllib.request.Request(f"{self.server_url}/api/v1/tools/{tool}", data=json.dumps(arguments).encode(),
                                         method="POST", headers={"Authorization": f"Bearer {self.token}",
                                                                 "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            return json.loads(error.read())

    def call(self, tool: str, **arguments) -> dict:
        envelope = self.send(tool, arguments)
        check_envelope(tool, envelope)
        if envelope["ok"] and "requestId" in arguments:
            self.history.append((tool, dict(arguments), envelope))
        return envelope

    def replay(self, tool: str, arguments: dict, original: dict, what: str) -> None:
        """The same requestId with the same arguments returns the original result (spec §4)."""
        again = self.send(tool, arguments)
        check_envelope(tool, again)
        if original["ok"]:
            assert again == original, f"{what}: replay of {tool} {arguments['requestId']} differs:\n{original}\n{again}"
        else:
            # A failed call is not recorded; a retry runs again and (for these calls) fails the same way.
            assert not again["ok"] and again["error"]["code"] == original["error"]["code"], (what, original, again)
        self.ledger.count(f"replayed {tool}")

    # --- the loop ----------------------------------------------------------------------------------
    def run(self) -> None:
        self.identity = identity_from_bearer(self.token)
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not self.ledger.stop.is_set():
            if time.monotonic() > deadline:
                raise AssertionError(f"agent {self.index}: deadline passed with {self.ledger.completed()} steps done")
            if self.ledger.completed() >= RUNS * len(STEPS):
                return
            if self.history and self.rng.random() < 0.04:
                tool, arguments, original = self.rng.choice(self.history)
                self.replay(tool, arguments, original, "late replay")
            limit = self.rng.choice([5, 10, 20])
            page = self.call("get_work", limit=limit)
            assert page["ok"], page
            items = page["data"]["items"]
            if not items:
                time.sleep(0.05)  # the rest is claimed; a lapsing lease frees it soon
                continue
            self.work(self.rng.choice(items))

    def work(self, item: dict) -> None:
        run_id, step_id = item["runId"], item["stepId"]
        self.run_id = run_id
        claim_args = {"runId": run_id, "stepId": step_id, "requestId": str(uuid.uuid4())}
        sent = time.time()
        claimed = self.call("claim", **claim_args)
        if self.rng.random() < 0.1:
            self.replay("claim", claim_args, claimed, "lost claim response")
        if not claimed["ok"]:
            error = claimed["error"]
            assert error["code"] == "conflict", error
            assert error["issues"] in (["claimed_by_other"], ["not_ready"], ["run_ended"]), error
            self.ledger.count(f"claim {error['issues'][0]}")
            return
        token, since = claimed["data"]["token"], sent
        data = claimed["data"]["data"]
        if step_id == "second":
            # No run data lost: the first step's accepted output is there for whoever does the second.
            assert "first" in data["steps"] and isinstance(data["steps"]["first"]["output"]["value"], int), data

        roll = self.rng.random()
        if roll < 0.12:
            token, since = self.renewed(token, since)
            if token is None:
                return
        elif roll < 0.18 and self.ledger.take_lapse():
            self.lapse(token, run_id)
            return
        elif roll < 0.28:
            refused = self.call("submit", token=token, output={"value": "lots"}, summary="Wrong type on purpose.",
                                requestId=str(uuid.uuid4()))
            if not self.expect_refusal_only_if_lapsed(refused, since, "not_accepted"):
                return
            assert refused["error"]["issues"] == ["output.value: expected number"], refused
            self.ledger.count("not_accepted")
        self.submit(token, since, run_id, step_id)

    def renewed(self, token: str, since: float):
        renew_args = {"token": token, "progress": f"agent {self.index} half way", "requestId": str(uuid.uuid4())}
        sent = time.time()
        renewed = self.call("renew", **renew_args)
        if self.rng.random() < 0.3:
            self.replay("renew", renew_args, renewed, "lost renew response")
        if not self.expect_refusal_only_if_lapsed(renewed, since, "stale"):
            return None, None
        self.ledger.count("renewed")
        new_token = renewed["data"]["token"]
        assert new_token != token
        if self.rng.random() < 0.6:
            # The replaced token is dead at once (spec §3.3, §6 rule 2), whatever the lease says.
            old = self.call("submit", token=token, output={"value": -1}, summary="With the replaced token.",
                            requestId=str(uuid.uuid4()))
            assert not old["ok"], f"replaced token accepted: {old}"
            if old["error"]["code"] == "conflict":  # only if the renewed lease lapsed under load and the run ended
                assert old["error"]["issues"] == ["run_ended"], old
                from runs.models import Run

                assert Run.objects.get(pk=self.run_id).state == "ended"
            else:
                assert old["error"]["code"] == "stale", f"replaced token: {old}"
                self.ledger.count("stale: replaced token")
        return new_token, sent

    def lapse(self, token: str, run_id: str) -> None:
        """Let the lease end, then try to use the token: stale (or run_ended if another agent finished the run).
        A lease ends on a whole second (expiresAt has seconds; issue 13), up to one after LEASE."""
        time.sleep(LEASE + 1.4)
        for tool, extra in (("submit", {"output": {"value": -2}, "summary": "Too late."}), ("renew", {})):
            late = self.call(tool, token=token, requestId=str(uuid.uuid4()), **extra)
            assert not late["ok"], f"{tool} with a lapsed token accepted: {late}"
            error = late["error"]
            if error["code"] == "conflict":
                assert error["issues"] == ["run_ended"], error
                from runs.models import Run

                assert Run.objects.get(pk=run_id).state == "ended"
                self.ledger.count(f"run_ended: lapsed {tool}")
            else:
                assert error["code"] == "stale", f"{tool} with a lapsed token: {error}"
                self.ledger.count(f"stale: lapsed {tool}")

    def submit(self, token: str, since: float, run_id: str, step_id: str) -> None:
        self.serial += 1
        value = self.index * 1_000_000 + self.serial
        arguments = {"token": token, "output": {"value": value}, "summary": f"Agent {self.index} did it.",
                     "requestId": str(uuid.uuid4())}
        submitted = self.call("submit", **arguments)
        if self.rng.random() < 0.15:
            self.replay("submit", arguments, submitted, "lost submit response")
        if not self.expect_refusal_only_if_lapsed(submitted, since, "stale"):
            return
        view = submitted["data"]
        assert view["data"]["steps"][step_id]["output"] == {"value": value}
        assert view["data"]["steps"][step_id]["by"] == self.ref
        with self.ledger.lock:
            self.ledger.accepted[(run_id, step_id)].append((self.index, arguments["requestId"], value))
            self.ledger.counts["accepted"] += 1

    def expect_refusal_only_if_lapsed(self, envelope: dict, since: float, expected: str) -> bool:
        """True when the call was accepted (or, for expected=not_accepted, refused as expected). A
        `stale` is acceptable only when the lease may really have lapsed: the call answered later
        than LEASE seconds after the claim or renew that started the lease was sent."""
        if envelope["ok"]:
            assert expected != "not_accepted", f"a wrong submission was accepted: {envelope}"
            return True
        error = envelope["error"]
        if expected == "not_accepted" and error["code"] == "not_accepted":
            return True
        may_have_lapsed = time.time() - since >= LEASE - 0.05
        assert may_have_lapsed and (error["code"] == "stale" or error.get("issues") == ["run_ended"]), (
            f"refused within a live lease ({time.time() - since:.2f}s after the claim): {error}")
        self.ledger.count("lapsed under load")
        return False


def in_thread(agent: RacingAgent) -> None:
    try:
        agent.run()
    except BaseException as error:  # noqa: BLE001 - reported by the main thread
        with agent.ledger.lock:
            agent.ledger.failures.append((agent.index, error))
        agent.ledger.stop.set()
    finally:
        connections.close_all()


def sweep_leases_meanwhile(ledger: Ledger) -> None:
    """What Celery beat does in production: release lapsed leases while the agents race."""
    from kernel import clock
    from runs.services.sweep import sweep_leases

    try:
        while not ledger.stop.wait(0.25):
            released = sweep_leases(clock.now())
            with ledger.lock:
                ledger.counts["released by the sweep"] += released
    except BaseException as error:  # noqa: BLE001 - reported by the main thread
        with ledger.lock:
            ledger.failures.append(("sweeper", error))
    finally:
        connections.close_all()


def start_runs(starter, count: int, threads: int = 8) -> list[str]:
    """Start the runs from a few threads (each with its own connection); returns their ids."""
    run_ids = [None] * count

    def start(offset):
        try:
            for n in range(offset, count, threads):
                run_ids[n] = starter.ok("start_run", process="race", inputs={"n": n})["run"]["id"]
        finally:
            connections.close_all()

    workers = [threading.Thread(target=start, args=(offset,)) for offset in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert all(run_ids), "some runs did not start"
    return run_ids


@pytest.fixture(params=["in process", "over HTTP, 3 uvicorn workers"])
def live(request, tmp_path):
    if request.param == "in process":
        yield None
        return
    from django.db import connection

    from tests.support.live import database_url, start_live_server

    with start_live_server(database_url(connection.settings_dict), tmp_path, workers=3,
                           env={"LEASE_SECONDS": str(LEASE), "DB_POOL_SIZE": "8"}) as server:
        yield server


def server_complaints(live) -> str:
    """What the server logged about the calls it answered `retry` (the exception's last line)."""
    if live is None:
        return ""
    lines = live.log().splitlines()
    found = [next((later for later in lines[at + 1:] if later and not later.startswith((" ", "Traceback"))), line)
             for at, line in enumerate(lines) if "database busy during" in line or "error during" in line]
    return "\nthe server said: " + "; ".join(found[:5]) if found else ""


def test_sixteen_racing_agents_complete_every_step_exactly_once(publish, make_agent, settings, live):
    from runs.models import IdempotencyRecord, Run

    server_url = live.url if live else None

    settings.LEASE_SECONDS = LEASE
    publish(RACE)
    starter = make_agent("starter")
    started = time.monotonic()
    run_ids = start_runs(starter, RUNS)
    print(f"\n{RUNS} runs started in {time.monotonic() - started:.1f}s")
    ledger = Ledger()
    agents = []
    for index in range(AGENTS):
        actor = make_agent(f"racer{index:02d}")
        agents.append(RacingAgent(index, actor.token, f"a_racer{index:02d}", ledger, server_url))

    threads = [threading.Thread(target=in_thread, args=(agent,), name=f"racer{agent.index}") for agent in agents]
    sweeper = threading.Thread(target=sweep_leases_meanwhile, args=(ledger,), name="sweeper")
    started = time.monotonic()
    for thread in threads:
        thread.start()
    sweeper.start()
    for thread in threads:
        thread.join(DEADLINE_SECONDS + 30)
    ledger.stop.set()
    sweeper.join(30)
    elapsed = time.monotonic() - started
    assert not any(thread.is_alive() for thread in [*threads, sweeper]), "a thread hung"
    if ledger.failures:
        index, error = ledger.failures[0]
        raise AssertionError(f"agent {index} failed ({len(ledger.failures)} failures in all)"
                             f"{server_complaints(live)}") from error
    print(f"\nracing agents: {elapsed:.1f}s, {dict(sorted(ledger.counts.items()))}")

    # Exactly one accepted submission (one requestId) per step.
    expected = {(run_id, step) for run_id in run_ids for step in STEPS}
    assert set(ledger.accepted) == expected
    doubled = {key: entries for key, entries in ledger.accepted.items() if len(entries) != 1}
    assert not doubled, f"steps with more than one accepted submission: {doubled}"
    assert IdempotencyRecord.objects.filter(tool="submit").count() == len(expected)

    # Run data: one completion per step, the accepted output, by its agent, no history; every run done.
    for run in Run.objects.filter(pk__in=run_ids):
        assert (run.state, run.outcome) == ("ended", "done"), run.id
        assert set(run.steps_data) == set(STEPS), run.steps_data
        for step in STEPS:
            [(index, _rid, value)] = ledger.accepted[(run.id, step)]
            entry = run.steps_data[step]
            assert entry["output"] == {"value": value}
            assert entry["by"] == f"a_racer{index:02d}"
            assert entry.get("history", []) == []
        assert run.inputs["n"] in range(RUNS)

    # The race really exercised what it claims to.
    counts = ledger.counts
    assert counts["stale: replaced token"] >= 10, counts
    assert counts["stale: lapsed submit"] + counts["run_ended: lapsed submit"] >= LAPSE_BUDGET // 2, counts
    assert counts["claim claimed_by_other"] + counts["claim not_ready"] >= 10, counts
    assert counts["replayed submit"] >= 20 and counts["replayed claim"] >= 20, counts
    assert counts["not_accepted"] >= 10, counts


# --------------------------------------------------------------------------------------------------
# One interleaving of the race above, made deterministic: an agent's submit has read its (still live)
# lease inside its transaction when the lease ends and another agent claims the step.


# Regression (PostgreSQL): claim takes a step with an optimistic UPDATE of its row, without the run lock;
# submit used to read the step rows without FOR UPDATE and write them back unconditionally, so a claim
# committed in between was overwritten and two agents held one step. RunContext.for_write now locks the step
# rows after the run row, so the late claim waits for the submit and then finds the step done.
def test_a_claim_taken_after_a_lease_lapsed_is_not_overwritten_by_a_submit_still_in_flight(
        publish, make_agent, monkeypatch):
    """Spec §6 rule 2: a claimed step belongs to one caller at a time. At most one of the two may win:
    either the late claim is refused, or the in-flight submission is refused (`stale`); never both
    accepted, which would hand the second agent a claim on a step that is then silently completed
    by the first."""
    import datetime as dt

    from kernel import clock
    from runs.services import submissions

    publish(RACE)
    first, second = make_agent("first-agent"), make_agent("second-agent")
    t0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)
    with clock.frozen(t0):
        run_id = first.ok("start_run", process="race", inputs={"n": 1})["run"]["id"]
        token = first.ok("claim", runId=run_id, stepId="first")["token"]  # lease until 09:10:00
        clock.advance(dt.timedelta(seconds=599))
        late_claim = {}
        original_accept = submissions.accept

        def accept_while_the_lease_lapses(**kwargs):
            result = original_accept(**kwargs)
            if not late_claim:
                clock.advance(dt.timedelta(seconds=2))  # the submit's `now` was taken at 09:09:59

                def claim_now():
                    try:
                        late_claim["envelope"] = second.call("claim", runId=run_id, stepId="first")
                    finally:
                        connections.close_all()

                thread = threading.Thread(target=claim_now)
                thread.start()
                thread.join(10)  # a claim that waits for the submit's transaction is fine too
                late_claim.setdefault("envelope", None)
            return result

        monkeypatch.setattr(submissions, "accept", accept_while_the_lease_lapses)
        submitted = first.call("submit", token=token, output={"value": 1}, summary="Just in time.")
        monkeypatch.setattr(submissions, "accept", original_accept)
        for _ in range(100):
            if late_claim.get("envelope") is not None:
                break
            time.sleep(0.1)
        claimed = late_claim["envelope"]
        assert claimed is not None, "the late claim never answered"
        assert not (submitted["ok"] and claimed["ok"]), (
            "both the in-flight submit and the late claim were accepted: the second agent holds a claim "
            f"on a step the first agent completed.\nsubmit: {submitted}\nclaim: {claimed['data']['expiresAt']}")
        if claimed["ok"]:
            # The late claimant really holds the step: its submission completes it.
            view = second.ok("submit", token=claimed["data"]["token"], output={"value": 2}, summary="Mine.")
            assert view["data"]["steps"]["first"]["by"] == "a_second-agent"
