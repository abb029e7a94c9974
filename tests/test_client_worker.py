"""The client's worker loop (client/worker.py, issue 17 point 3) against a real server process with
a 2-second lease: renewal while a slow handler works, not_accepted handed back to the handler,
escalation, a failing handler releasing its step, SIGTERM in a subprocess (finish, or release after
the grace time), the example agents, and the done-when: 1,002 steps of bench-three-steps by 8
threads while the server is killed and restarted on the same port, every step completed once
(and 120 steps so over MCP)."""

import collections
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from client import Client, Escalate, Evidence, RetryPolicy, Submission, Worker
from tests.support.chat_server import ChatServer
from tests.support.live import database_url, start_live_server
from tests.support.processes import SCREEN_AND_APPROVE
from tests.support.spec import EXAMPLES

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[1]
LEASE_SECONDS = 2
BENCH = ROOT / "bench" / "processes" / "bench-three-steps"


@pytest.fixture(scope="module")
def live_asgi_server(django_db_setup, tmp_path_factory):
    """This module's server leases for 2 seconds, so a handler can outlast a lease in a test."""
    from django.db import connection

    with start_live_server(database_url(connection.settings_dict), tmp_path_factory.mktemp("live"),
                           env={"LEASE_SECONDS": str(LEASE_SECONDS)}) as server:
        yield server


@pytest.fixture
def screening(publish):
    return publish(SCREEN_AND_APPROVE, {"finance": "finance"})


class Events(logging.Handler):
    """The worker's structured log records, by event."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)

    def of(self, event: str) -> list[logging.LogRecord]:
        return [record for record in self.records if getattr(record, "event", None) == event]


@pytest.fixture
def events():
    handler = Events()
    logger = logging.getLogger("client")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def start_runs(url: str, token: str, process: str, inputs: list[dict]) -> list[str]:
    with Client(url, token) as starter:
        return [starter.start_run(process, values).run.id for values in inputs]


def audit_kinds(run_id: str) -> list[str]:
    from kernel.models import AuditEvent

    return list(AuditEvent.objects.filter(run_id=run_id).order_by("id").values_list("kind", flat=True))


def step_state(run_id: str, step_id: str):
    from runs.models import StepState

    return StepState.objects.get(run_id=run_id, step_id=step_id)


def test_a_handler_slower_than_the_lease_still_completes_its_step(live_server_url, screening, agent, events):
    [run_id] = start_runs(live_server_url, agent.token, "screen-and-approve", [{"vendorName": "Acme"}])
    seen = []

    def slow(step):
        seen.append((step.run_id, step.step_id, step.inputs["vendorName"]))
        step.progress("Looked up the legal name; checking the lists.")
        time.sleep(LEASE_SECONDS * 2.5)  # five seconds: two and a half leases
        assert not step.lease_lost
        return Submission(output={"cleared": True}, summary="Checked both lists; no hits.")

    stats = Worker(live_server_url, agent.token, poll_seconds=0.2).run(slow, until_idle=True)
    assert seen == [(run_id, "screen", "Acme")]
    assert (stats.claimed, stats.completed, stats.lease_lost) == (1, 1, 0)
    kinds = audit_kinds(run_id)
    assert kinds.count("lease_renewed") >= 3 and "lease_lapsed" not in kinds
    assert step_state(run_id, "screen").state == "done"
    [completed] = events.of("step_completed")
    assert (completed.runId, completed.stepId) == (run_id, "screen") and completed.renewals >= 3
    from kernel.models import AuditEvent

    progress = AuditEvent.objects.filter(run_id=run_id, kind="lease_renewed").values_list("data", flat=True)
    assert "Looked up the legal name; checking the lists." in [data["progress"] for data in progress]


def test_a_submission_not_accepted_goes_back_to_the_handler_with_its_issues(live_server_url, screening, agent):
    [run_id] = start_runs(live_server_url, agent.token, "screen-and-approve", [{"vendorName": "Acme"}])
    attempts = []

    def learns(step):
        attempts.append((step.attempt, list(step.issues)))
        cleared = "yes" if step.attempt == 1 else True
        return Submission(output={"cleared": cleared}, summary="Checked both lists.")

    stats = Worker(live_server_url, agent.token, poll_seconds=0.2).run(learns, until_idle=True)
    assert attempts == [(1, []), (2, ["output.cleared: expected boolean"])]
    assert (stats.not_accepted, stats.completed) == (1, 1)
    assert step_state(run_id, "screen").state == "done"
    assert audit_kinds(run_id).count("step_claimed") == 1  # the claim stood through the refusal


def test_escalate_and_a_failing_handler(live_server_url, screening, agent, events):
    first, second = start_runs(live_server_url, agent.token, "screen-and-approve",
                               [{"vendorName": "Acme"}, {"vendorName": "Globex"}])

    def handler(step):
        if step.inputs["vendorName"] == "Acme":
            raise Escalate("Two companies share this legal name; a person must pick one.")
        raise RuntimeError("the sanctions list could not be read")

    stats = Worker(live_server_url, agent.token, poll_seconds=0.2).run(handler, until_idle=True)
    assert (stats.claimed, stats.escalated, stats.failed, stats.completed) == (2, 1, 1, 0)
    with Client(live_server_url, agent.token) as reader:
        [item] = reader.get_run(first).work_items
        assert item.escalation["note"] == "Two companies share this legal name; a person must pick one."
        assert reader.get_run(second).step("screen").state == "claimed"  # released: it lapses, no escalation
    [failure] = events.of("handler_failed")
    assert (failure.runId, failure.error) == (second, "RuntimeError")


def test_a_worker_with_a_token_the_server_refuses_stops_at_once(live_server_url):
    import client

    before = signal.getsignal(signal.SIGTERM)
    started = time.monotonic()
    with pytest.raises(client.Invalid) as refused:
        Worker(live_server_url, "apt_not-a-token").run(lambda step: None)
    assert refused.value.code == "invalid" and time.monotonic() - started < 5
    assert signal.getsignal(signal.SIGTERM) is before  # its SIGTERM handler is gone again


def test_a_worker_over_mcp_works_several_steps_at_once(live_server_url, screening, agent):
    runs = start_runs(live_server_url, agent.token, "screen-and-approve",
                      [{"vendorName": f"Vendor {index}"} for index in range(4)])
    at_once, most = [], [0]
    lock = threading.Lock()

    def handler(step):
        with lock:
            at_once.append(step.run_id)
            most[0] = max(most[0], len(at_once))
        time.sleep(0.3)
        with lock:
            at_once.remove(step.run_id)
        return Submission(output={"cleared": True}, summary=f"Checked {step.inputs['vendorName']}.")

    stats = Worker(live_server_url, agent.token, transport="mcp", concurrency=2, poll_seconds=0.2).run(
        handler, until_idle=True)
    assert (stats.completed, stats.claim_conflicts) == (4, 0)
    assert most[0] == 2
    assert all(step_state(run_id, "screen").state == "done" for run_id in runs)


WORKER_SCRIPT = textwrap.dedent("""
    import json, logging, sys, time
    from client import Submission, Worker
    from client.logs import use_json_lines

    url, token, pause, grace = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    use_json_lines(sys.stdout, logging.INFO)

    def handler(step):
        step.progress("Half way through the lists.")
        time.sleep(pause)
        return Submission(output={"cleared": True}, summary="Checked both lists.")

    stats = Worker(url, token, grace_seconds=grace, poll_seconds=0.2).run(handler)
    print(json.dumps({"event": "final", **vars(stats)}), flush=True)
""")


def run_worker(url: str, token: str, pause: float, grace: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WORKER_SCRIPT, url, token, str(pause), str(grace)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def read_until(process: subprocess.Popen, event: str, lines: list[dict], timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        try:
            record = json.loads(line)
        except ValueError:
            record = {"event": "text", "message": line}
        lines.append(record)
        if record.get("event") == event:
            return record
    raise AssertionError(f"no {event} from the worker: {lines}")


def test_sigterm_finishes_the_step_being_worked_and_takes_no_more(live_server_url, screening, agent):
    first, second = start_runs(live_server_url, agent.token, "screen-and-approve",
                               [{"vendorName": "Acme"}, {"vendorName": "Globex"}])
    process = run_worker(live_server_url, agent.token, pause=1.5, grace=30)
    lines: list[dict] = []
    claimed = read_until(process, "step_claimed", lines)
    process.send_signal(signal.SIGTERM)
    final = read_until(process, "final", lines)
    assert process.wait(timeout=20) == 0
    assert (final["claimed"], final["completed"], final["released"]) == (1, 1, 0)
    assert [line["signal"] for line in lines if line.get("event") == "worker_stopping"] == ["SIGTERM"]
    worked = claimed["runId"]
    other = second if worked == first else first
    assert step_state(worked, "screen").state == "done"
    assert step_state(other, "screen").state == "ready" and "step_claimed" not in audit_kinds(other)


def test_sigterm_past_the_grace_time_releases_the_step_with_its_progress(live_server_url, screening, agent):
    [run_id] = start_runs(live_server_url, agent.token, "screen-and-approve", [{"vendorName": "Acme"}])
    process = run_worker(live_server_url, agent.token, pause=60, grace=0.5)
    lines: list[dict] = []
    read_until(process, "step_claimed", lines)
    time.sleep(LEASE_SECONDS * 0.75)  # one renewal has carried the progress note
    stopped_at = time.monotonic()
    process.send_signal(signal.SIGTERM)
    final = read_until(process, "final", lines)
    assert process.wait(timeout=20) == 0 and time.monotonic() - stopped_at < 5
    assert (final["claimed"], final["completed"], final["released"]) == (1, 0, 1)
    assert [line["runId"] for line in lines if line.get("event") == "step_released"] == [run_id]
    with Client(live_server_url, agent.token) as reader:  # the lease lapses; the next claimant is told
        deadline = time.monotonic() + LEASE_SECONDS * 4
        while not (items := reader.get_work().items) and time.monotonic() < deadline:
            time.sleep(0.2)
        [item] = items
        assert (item.run_id, item.handoff) == (run_id, {"progress": "Half way through the lists."})


def test_the_rule_based_supplier_onboarding_example(live_server_url, publish, agent, make_person):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    clear, hit = start_runs(live_server_url, agent.token, "supplier-onboarding", [
        {"vendorName": "Acme Steel GmbH", "amount": 48000}, {"vendorName": "Blocked Trading, LLC", "amount": 9000}])
    done = subprocess.run([sys.executable, "-m", "examples.supplier_onboarding_agent", "--url", live_server_url,
                           "--token", agent.token, "--until-idle"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stderr.splitlines()]
    assert events.count("step_completed") == 2 and events[-1] == "worker_stopped"
    with Client(live_server_url, agent.token) as reader:
        waiting, declined = reader.get_run(clear), reader.get_run(hit)
    screened = waiting.data["steps"]["check_vendor"]
    assert (waiting.step("approve").state, screened["next"], screened["output"]["cleared"]) == \
        ("waiting", "approve", True)
    assert (declined.run.state, declined.run.outcome) == ("ended", "declined")
    assert declined.data["steps"]["check_vendor"]["reason"] == "Sanctions hit on Blocked Trading LLC"
    import httpx2

    report = httpx2.get(screened["evidence"][0]["url"], timeout=10).text  # the signed file URL
    assert report.startswith("Screening report for Acme Steel GmbH") and "No hits." in report


def test_the_chat_example_does_a_step_with_an_openai_compatible_endpoint(live_server_url, publish, agent):
    from examples.chat_agent import QUESTION

    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    [run_id] = start_runs(live_server_url, agent.token, "supplier-onboarding",
                          [{"vendorName": "Acme Steel GmbH", "amount": 48000}])
    chat = ChatServer().start()
    chat.script[QUESTION] = {
        "output": {"cleared": True, "summary": "No matches on OFAC or EU."},
        "summary": "Searched OFAC and EU lists by legal name; no hits. Did not check owners.",
        "next": "approve", "reason": "Vendor is cleared on both lists",
        "report": "OFAC: no hits.\nEU: no hits.\n"}
    try:
        env = {**os.environ, "AGENT_CHAT_URL": chat.url, "AGENT_CHAT_MODEL": "scripted-1",
               "AGENT_CHAT_API_KEY": "sk-test"}
        done = subprocess.run([sys.executable, "-m", "examples.chat_agent", "--url", live_server_url, "--token",
                               agent.token, "--until-idle", "--transport", "mcp"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60, check=False)
    finally:
        chat.stop()
    assert done.returncode == 0, done.stderr
    [asked] = chat.requests
    assert asked["model"] == "scripted-1"
    prompt = asked["messages"][-1]["content"]
    assert "Check the vendor against the OFAC and EU sanctions lists." in prompt and "Acme Steel GmbH" in prompt
    with Client(live_server_url, agent.token) as reader:
        screened = reader.get_run(run_id).data["steps"]["check_vendor"]
    assert screened["summary"] == "Searched OFAC and EU lists by legal name; no hits. Did not check owners."
    import hashlib

    assert screened["evidence"][0]["sha256"] == hashlib.sha256(b"OFAC: no hits.\nEU: no hits.\n").hexdigest()


# --- the done-when of issue 17 --------------------------------------------------------------------

WORKERS = 8


def bench_handler(step) -> Submission:
    """Fills every declared output of bench-three-steps; links the source where evidence is asked."""
    values = {"string": "checked", "number": 1, "boolean": True}
    output = {name: values[spec["type"] if isinstance(spec, dict) else spec] for name, spec in step.output.items()}
    evidence = [Evidence.link("https://example.com/source")] if "link" in step.evidence else []
    return Submission(output=output, summary=f"Did {step.step_id} of {step.inputs['reference']}.", evidence=evidence)


@pytest.mark.parametrize(("transport", "runs", "kill_after"), [
    pytest.param("rest", 334, 300, id="rest-1002-steps"),  # the done-when: three steps a run
    pytest.param("mcp", 40, 40, id="mcp-120-steps"),       # the SDK session opened again after the restart
])
def test_8_workers_through_a_server_restart_complete_every_step_exactly_once(
        transactional_db, publish, make_agent, tmp_path, events, transport, runs, kill_after):
    """The server is SIGKILLed mid-stream and started again on the same port; the worker rides it
    out with its retries (same requestIds) and every step is completed exactly once."""
    from django.db import connection

    from kernel.models import AuditEvent
    from runs.models import Run

    publish(BENCH)
    agent = make_agent("bench")
    db_url = database_url(connection.settings_dict)
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
    first = start_live_server(db_url, tmp_path / "first")
    server = first.__enter__()
    restarted = None
    port = int(server.url.rsplit(":", 1)[1])
    try:
        started = time.monotonic()
        run_ids = start_runs(server.url, agent.token, "bench-three-steps",
                             [{"reference": f"ref-{index}", "amount": index} for index in range(runs)])
        worker = Worker(server.url, agent.token, transport=transport, concurrency=WORKERS, poll_seconds=0.1,
                        retry=RetryPolicy(attempts=200, base=0.05, cap=0.5, deadline=90))
        outcome: dict = {}

        def work():
            outcome["stats"] = worker.run(bench_handler, until_idle=True)

        thread = threading.Thread(target=work)
        runs_started = time.monotonic() - started
        thread.start()
        while worker.stats.completed < kill_after and thread.is_alive():
            time.sleep(0.01)
        completed_at_kill = worker.stats.completed
        killed_at = time.monotonic()
        server.process.send_signal(signal.SIGKILL)  # no graceful shutdown: requests in flight are cut
        server.process.wait(timeout=10)
        first.__exit__(None, None, None)
        restarted = start_live_server(db_url, tmp_path / "second", port=port)
        second = restarted.__enter__()
        down_for = time.monotonic() - killed_at
        assert second.url == server.url
        thread.join(timeout=120)
        assert not thread.is_alive(), "the worker did not finish"
        elapsed = time.monotonic() - started
    finally:
        worker.stop()
        if restarted is not None:
            restarted.__exit__(None, None, None)
        else:
            first.__exit__(None, None, None)

    stats = outcome["stats"]
    assert 0 < completed_at_kill < runs * 3
    assert stats.completed == runs * 3 and (stats.lease_lost, stats.failed, stats.released) == (0, 0, 0)
    assert events.of("call_retry"), "the restart cost no retries: it did not happen mid-stream"
    assert ("POST /mcp" if transport == "mcp" else "POST /api/v1/tools/") in second.log()  # it did part of the work

    # From the run data: every run ended, each step done once by the agent, no rework.
    ended = Run.objects.filter(id__in=run_ids)
    assert ended.count() == runs
    assert collections.Counter((run.state, run.outcome) for run in ended) == {("ended", "recorded"): runs}
    for run in ended:
        steps = run.steps_data
        assert set(steps) == {"gather", "check", "record"}, run.id
        assert all(steps[step]["by"] == "a_bench" and steps[step]["history"] == [] for step in steps), run.id
    accepted = collections.Counter(AuditEvent.objects.filter(kind="submission_accepted", run_id__in=run_ids)
                                   .values_list("run_id", "step_id"))
    claimed = collections.Counter(AuditEvent.objects.filter(kind="step_claimed", run_id__in=run_ids)
                                  .values_list("run_id", "step_id"))
    assert len(accepted) == runs * 3 and set(accepted.values()) == {1}
    assert len(claimed) == runs * 3 and set(claimed.values()) == {1}
    print(f"\n{transport}: {runs} runs started in {runs_started:.1f} s; {runs * 3} steps by {WORKERS} workers in "
          f"{elapsed - runs_started:.1f} s; the server killed after {completed_at_kill} steps and down for "
          f"{down_for:.1f} s; {len(events.of('call_retry'))} retries, {len(events.of('call_recovered'))} calls recovered")
