"""Crash (issue 8; spec §4, §6): a real server process killed with SIGKILL in the middle of submits.

120 runs each have their agent step claimed. Twelve client threads fire the 120 submits over REST
at one uvicorn process; once a share of them has answered, the process is killed with `kill -9`.
Then, before anything is restarted, the database must hold every run in one of two states:

- fully completed: the step `done` with exactly the submitted output in run data, the approval
  after it `waiting` with one open work item, the run `waiting`, the requestId recorded; or
- untouched: the step still `claimed` under the same lease, no run data, no work item, no record.

Every submit that was answered `ok` before the kill is among the completed ones (durability).
The server is restarted and every not-yet-answered submit is sent again with its original requestId;
this is done for two kills, and at the end every one of the 120 submits is replayed once more:
each answers `ok` with the original result and each step has exactly one completion.

Runs on whichever database the test run uses (the SQLite test file or PostgreSQL).
"""

import json
import signal
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from tests.support.envelopes import check_envelope
from tests.support.live import database_url, start_live_server

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

RUNS = 120
CLIENTS = 12
KILL_AFTER = (30, 30)  # answered submits before each kill

CRASH = """---
name: crash
description: An agent step and its review, for crash tests.
inputs:
  n: number
steps:
  - id: work
    agent: Produce the value.
    output:
      value: number
    evidence: [link]
  - id: review
    person: reviewer
    approve: Approve the value.
  - id: done
    finish: done
---

# Crash

An agent works, a person reviews.
"""


def post(url: str, token: str, tool: str, body: dict, timeout: float = 20) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{url}/api/v1/tools/{tool}", data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class Volley:
    """Submits fired from client threads; the answers that came back before the server died."""

    def __init__(self, url: str, token: str, bodies: dict[str, dict]):
        self.url, self.token, self.bodies = url, token, bodies
        self.answers: dict[str, tuple[int, dict]] = {}
        self.lost: set[str] = set()
        self.times: list[float] = []
        self.lock = threading.Lock()
        self.answered = threading.Condition(self.lock)

    def send(self, run_id: str) -> None:
        try:
            status, envelope = post(self.url, self.token, "submit", self.bodies[run_id])
        except (OSError, urllib.error.URLError, json.JSONDecodeError):
            with self.lock:
                self.lost.add(run_id)
            return
        with self.answered:
            self.answers[run_id] = (status, envelope)
            self.times.append(time.monotonic())
            self.answered.notify_all()

    def interval(self) -> float:
        """The mean time between answers so far."""
        with self.lock:
            times = self.times[-10:]
        return (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.02

    def wait_for(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        with self.answered:
            while len(self.answers) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"only {len(self.answers)} of {count} submits answered in {timeout}s"
                self.answered.wait(left)


def kill_mid_volley(server, token: str, bodies: dict[str, dict], run_ids: list[str], kill_after: int) -> Volley:
    volley = Volley(server.url, token, bodies)
    pool = ThreadPoolExecutor(max_workers=CLIENTS)
    for run_id in run_ids:
        pool.submit(volley.send, run_id)
    volley.wait_for(min(kill_after, len(run_ids)))
    # Half an answer interval later the server is most likely inside the next submit's transaction.
    time.sleep(volley.interval() / 2)
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    pool.shutdown(wait=True)
    return volley


def workdir(base, name: str):
    path = base / name
    path.mkdir()
    return path


def consistent_state(run_ids: list[str], bodies: dict[str, dict], generations: dict[str, int]) -> set[str]:
    """Check every run is fully completed or untouched; return the completed ones."""
    from runs.models import IdempotencyRecord, Run, StepState, WorkItem

    connection.close()  # a fresh view of what the dead server committed
    completed = set()
    runs = {run.id: run for run in Run.objects.filter(pk__in=run_ids)}
    states = {(s.run_id, s.step_id): s for s in StepState.objects.filter(run_id__in=run_ids)}
    items = {}
    for item in WorkItem.objects.filter(run_id__in=run_ids):
        items.setdefault(item.run_id, []).append(item)
    records = set(IdempotencyRecord.objects.filter(tool="submit").values_list("request_id", flat=True))
    for run_id in run_ids:
        run, work, review = runs[run_id], states[(run_id, "work")], states[(run_id, "review")]
        request_id = bodies[run_id]["requestId"]
        if work.state == "done":
            completed.add(run_id)
            entry = run.steps_data.get("work")
            assert entry is not None, f"{run_id}: step done without its run data"
            assert entry["output"] == bodies[run_id]["output"] and entry.get("history", []) == [], entry
            assert entry["by"] == "a_crasher" and entry["summary"] == bodies[run_id]["summary"]
            assert review.state == "waiting" and review.ready_since is not None, (run_id, review.state)
            assert [(i.step_id, i.state) for i in items.get(run_id, [])] == [("review", "open")], items.get(run_id)
            assert run.state == "waiting" and run.outcome is None
            assert request_id in records, f"{run_id}: completed without its idempotency record"
        else:
            assert work.state == "claimed", f"{run_id}: work is {work.state}, neither done nor claimed"
            assert work.lease_gen == generations[run_id] and work.claimed_by == "a_crasher"
            assert run.steps_data == {}, f"{run_id}: untouched step with run data {run.steps_data}"
            assert review.state is None and items.get(run_id) is None, (run_id, review.state, items.get(run_id))
            assert run.state == "active"
            assert request_id not in records, f"{run_id}: requestId recorded but the step is not done"
    return completed


def test_a_server_killed_mid_submit_leaves_every_run_complete_or_untouched(publish, make_agent, tmp_path):
    from runs.models import IdempotencyRecord, Run, StepState, WorkItem

    publish(CRASH, {"reviewer": "reviewers"})
    agent = make_agent("crasher")
    run_ids, bodies = [], {}
    started = time.monotonic()
    for n in range(RUNS):
        run_id = agent.ok("start_run", process="crash", inputs={"n": n})["run"]["id"]
        token = agent.ok("claim", runId=run_id, stepId="work")["token"]
        run_ids.append(run_id)
        bodies[run_id] = {"token": token, "output": {"value": n}, "summary": f"Value {n} produced.",
                          "evidence": [{"kind": "link", "ref": f"https://example.com/{n}"}],
                          "requestId": str(uuid.uuid4())}
    print(f"\nset-up {time.monotonic() - started:.1f}s")
    generations = dict(StepState.objects.filter(step_id="work").values_list("run_id", "lease_gen"))
    db_url = database_url(connection.settings_dict)

    acknowledged: dict[str, dict] = {}
    pending = list(run_ids)
    for round_number, kill_after in enumerate(KILL_AFTER, start=1):
        with start_live_server(db_url, workdir(tmp_path, f"round{round_number}")) as server:
            volley = kill_mid_volley(server, agent.token, bodies, pending, kill_after)
        assert len(volley.answers) < len(pending), "the kill came after every submit was answered"
        for run_id, (status, envelope) in volley.answers.items():
            assert status == 200 and envelope["ok"], f"round {round_number}: {run_id} answered {status} {envelope}"
            check_envelope("submit", envelope)
            acknowledged[run_id] = envelope
        completed = consistent_state(run_ids, bodies, generations)
        missing = set(acknowledged) - completed
        assert not missing, f"round {round_number}: acknowledged submits lost by the crash: {sorted(missing)}"
        pending = [run_id for run_id in run_ids if run_id not in acknowledged]
        print(f"{time.monotonic() - started:.1f}s round {round_number}: {len(volley.answers)} answered, "
              f"{len(volley.lost)} cut off, {len(completed)} of {RUNS} completed")

    # Restart and replay every submit with its original requestId, all at once: one completion each.
    with start_live_server(db_url, workdir(tmp_path, "final")) as server:
        print(f"{time.monotonic() - started:.1f}s restarted")
        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            answers = pool.map(lambda run_id: post(server.url, agent.token, "submit", bodies[run_id]), run_ids)
            replies = dict(zip(run_ids, answers, strict=True))
        assert server.process.poll() is None
    print(f"{time.monotonic() - started:.1f}s replayed")
    for run_id, (status, envelope) in replies.items():
        assert status == 200 and envelope["ok"], (run_id, status, envelope)
        check_envelope("submit", envelope)
        if run_id in acknowledged:
            assert envelope == acknowledged[run_id], f"{run_id}: the replay differs from the original answer"

    connection.close()
    assert consistent_state(run_ids, bodies, generations) == set(run_ids)
    assert IdempotencyRecord.objects.filter(tool="submit").count() == RUNS
    assert WorkItem.objects.filter(step_id="review", state="open").count() == RUNS
    assert all(len(run.steps_data) == 1 for run in Run.objects.filter(pk__in=run_ids))
