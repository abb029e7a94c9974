"""The conformance runner (conformance/, issue 17 points 1 and 2) against this server: a real uvicorn
on PostgreSQL, the runner's processes (and the spec's fixtures) published with the CLI lines the
runner prints, tokens made with create_identity, then `python -m conformance` over MCP and over
REST as a subprocess: every scenario passes. And against a deliberately broken build
(tests/support/broken_settings.py) it names the failing scenario.
"""

import os
import re
import shlex
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection

from tests.support.chat_server import ChatServer
from tests.support.live import ROOT, database_url, start_live_server
from tests.support.spec import SPEC, spec_present

APPROVERS, REVIEWERS = "conformance-approvers", "conformance-reviewers"
LEASE_SECONDS = "4"  # short, so the runner waits a lease out and sees its handoff
# The evaluator's answers for the check-1 processes: the runner's three probes (one passes, one is
# unsure, one fails) and the spec's vendor-check fixture (passes).
EVALUATOR_SCRIPT = {
    "Conformance probe (pass): the output field answer is the number 4.": {"yes": 0.97},
    "Conformance probe (pass): what does the summary do?": {"answer": "states", "confidence": 0.95},
    "Conformance probe (pass): how complete is the summary?": {"level": 1, "confidence": 0.9},
    "Conformance probe (unsure): the submitter was in a good mood.": {"yes": 0.7},
    "Conformance probe (fail): the output field answer is a negative number.": {"yes": 0.05},
    "The cleared verdict matches what the attached report says.": {"yes": 0.97},
    "What does the summary do?": {"answer": "states", "confidence": 0.95},
    "How complete is the screening?": {"level": 2, "confidence": 0.9},
}
# A rule this server gets wrong, found by the runner (reported in issue 17; server code untouched
# here): a rejection into a step the run never reached moves the completions of the steps before it
# to history too. spec §3.1: only "every step completed after the returned-to step" moves.
# Server failures the runner found and that are not fixed yet (name -> the failure's first words);
# empty: the one it found (rework into a never-reached step, spec §3.1) is fixed in runs/services/engine.py.
KNOWN_SERVER_FAILURES: dict[str, str] = {}
SWEEP_LOOP = """
import time
from kernel import clock
from runs.services.sweep import sweep
while True:
    sweep(clock.now())
    time.sleep(0.5)
"""


def manage(env: dict, *arguments: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"manage.py {' '.join(arguments)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def run_line(env: dict, line: str) -> str:
    done = subprocess.run(shlex.split(line), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, f"{line}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def token_of(env: dict, *arguments: str) -> str:
    return manage(env, "create_identity", *arguments).strip().splitlines()[-1]


def runner(*arguments: str, timeout: int = 240, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance", *arguments], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False, env=env)


def importer_command() -> str:
    """This server's importer as the runner's --importer hook: it publishes into the organization and
    the database the live server serves (the runner passes on the environment it is given)."""
    return f"{shlex.quote(sys.executable)} manage.py import_process {{file}} --publish"


@contextmanager
def sweeping(env: dict):
    """What Celery beat does in production: the timer sweeps, here twice a second."""
    process = subprocess.Popen([sys.executable, "manage.py", "shell", "-c", SWEEP_LOOP], cwd=ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def conformance_server(tmp_path: Path, *, spec: bool, settings_module: str | None = None):
    """A live server with the check-1 evaluator (a scripted one on a port the runner's own
    `--evaluator-port` can take over once it is stopped), its identities, and every runner process
    (and fixture) published by running the exact lines `--print-publish` prints."""
    evaluator = ChatServer(free_port()).start()
    evaluator.script.update(EVALUATOR_SCRIPT)
    server_env = {"CHECK_EVALUATOR_URL": evaluator.url, "CHECK_EVALUATOR_MODEL": "scripted-evaluator-1",
                  "LEASE_SECONDS": LEASE_SECONDS}
    if settings_module:
        server_env["DJANGO_SETTINGS_MODULE"] = settings_module
    env = {**os.environ, **server_env, "DATABASE_URL": database_url(connection.settings_dict)}
    tokens = {
        "agent": token_of(env, "agent", "conformance-agent"),
        "agent2": token_of(env, "agent", "conformance-agent-2"),
        "approver": token_of(env, "person", "approver@example.com", "--groups", APPROVERS),
        "reviewer": token_of(env, "person", "reviewer@example.com", "--groups", REVIEWERS),
        "operator": token_of(env, "person", "operator@example.com", "--operator"),
    }
    printed = runner("http://unused", "--print-publish", "--person", f"{APPROVERS}=x", "--person", f"{REVIEWERS}=x",
                     *(["--spec", str(SPEC)] if spec else []))
    assert printed.returncode == 0, printed.stderr
    lines = [line.split("   #")[0] for line in printed.stdout.splitlines()]
    assert all(line.startswith(".venv/bin/python manage.py import_process ") for line in lines), lines
    with ThreadPoolExecutor(4) as pool:  # each line as printed, a fresh Django process; four at a time
        published = list(pool.map(lambda line: run_line(env, line), lines))
    assert len(published) == (22 if spec else 10)
    assert all(re.search(r"^published \S+ version \d+ [0-9a-f]{64}$", out, re.MULTILINE) for out in published), published
    try:
        with start_live_server(env["DATABASE_URL"], tmp_path, env=server_env) as server, sweeping(env):
            yield server.url, tokens, env, evaluator
    finally:
        evaluator.stop()


def identity_arguments(tokens: dict) -> list[str]:
    return ["--agent-token", tokens["agent"], "--agent-token", tokens["agent2"],
            "--person", f"{APPROVERS}={tokens['approver']}", "--person", f"{REVIEWERS}={tokens['reviewer']}",
            "--operator-token", tokens["operator"]]


def notes(junit: Path, scenario: str) -> str:
    case = next(c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name") == scenario)
    out = case.find("system-out")
    return out.text if out is not None else ""


def verdicts(junit: Path) -> dict[str, tuple[str, str | None]]:
    """scenario -> (pass | fail | skip, failure message) from the runner's JUnit XML."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        failure, skipped = case.find("failure"), case.find("skipped")
        found[case.get("name")] = (("fail", failure.get("message")) if failure is not None
                                   else ("skip", skipped.get("message")) if skipped is not None else ("pass", None))
    return found


@pytest.mark.postgres
@pytest.mark.live
def test_the_runner_passes_this_server_over_mcp_and_rest(transactional_db, tmp_path):
    spec = spec_present()
    if not spec:
        print(f"the specification is not at {SPEC}: the runner runs without the spec's fixtures and schemas")
    with conformance_server(tmp_path, spec=spec) as (url, tokens, env, evaluator):
        closing = {}
        for transport in ("mcp", "rest"):
            junit = tmp_path / f"conformance-{transport}.xml"
            # Over MCP a scripted evaluator answers as any evaluator would; over REST the runner's own
            # (--evaluator-port, on the same port) chooses every verdict.
            own = ["--importer", importer_command(), "--evaluator-port", str(evaluator.port)]
            if transport == "rest":
                evaluator.stop()
            done = runner(url, *identity_arguments(tokens), "--transport", transport, "--junit", str(junit),
                          "--timer-bound", "30", *(own if transport == "rest" else []),
                          *(["--spec", str(SPEC)] if spec else []), env=env)
            found = verdicts(junit)
            failed = {name: message for name, (verdict, message) in found.items() if verdict == "fail"}
            unexpected = {name: message for name, message in failed.items()
                          if not (name in KNOWN_SERVER_FAILURES and message.startswith(KNOWN_SERVER_FAILURES[name]))}
            assert not unexpected, done.stdout[-6000:]
            assert {name for name, (verdict, _) in found.items() if verdict == "skip"} == set(), done.stdout[-3000:]
            if spec:
                assert set(failed) == set(KNOWN_SERVER_FAILURES), done.stdout[-3000:]  # fixed? drop it from the list
                assert sum(name.startswith("spec:") for name in found) >= 30  # every fixture, on every route
            assert {"describe", "agent-loop", "decisions", "parallel", "check", "waits-and-events"} <= set(found)
            assert done.returncode == (1 if failed else 0), done.stdout[-3000:]
            last = done.stdout.strip().splitlines()[-1]
            checks = int(re.search(r"(\d+) checks", last).group(1))
            assert checks >= 1000, last
            assert "under no requirement" not in last, last  # every check observes a requirement of musts.py
            if transport == "rest":
                # With --importer (judged once: publishing does not depend on the transport) every
                # observable requirement is checked but the three this server cannot show: it offers both
                # profiles and every optional tool, so it has nothing of them to refuse.
                assert re.search(r": passed, 3 MUSTs not checked \(4\.2-refuse-missing-tool, parallel-refuse, "
                                 r"check-refuse\); 6 MUSTs not observable", last), last
                assert (found["importer:accept"][0], found["importer:refuse"][0]) == ("pass", "pass"), done.stdout[-3000:]
            else:  # without them the closing line counts what the runner could not check
                assert re.search(r": passed, 11 MUSTs not checked \(2\.1-yaml-core, 2\.1-refusals, .*, check-worst, "
                                 r"check-material, check-refuse\); 6 MUSTs not observable", last), last
                assert not any(name.startswith("importer") for name in found)
            assert re.search(r"timer fired within [\d.]+ s of its time \(bound 30 s\)", done.stdout), done.stdout[-3000:]
            # The one-minute timers and the lease's lapse ran, beside the other scenarios.
            assert re.search(r"timeout fired within [\d.]+ s of its time \(bound 30 s\)", notes(junit, "timers"))
            assert notes(junit, "lease-lapse") == f"lease of {LEASE_SECONDS} s waited out"
            # Either evaluator makes each of the three check-1 verdicts happen once.
            assert "verdicts: sure: pass, unsure: unsure, failing: fail" in notes(junit, "check")
            assert ("(the runner's evaluator)" in notes(junit, "check")) == (transport == "rest")
            closing[transport] = last
            seconds = float(re.search(r"in ([\d.]+) s", last).group(1))
            # The importer's checks start a Django process per file (about 27), most of the REST run's time.
            assert seconds < (150 if transport == "rest" else 90), last
    print("\n".join(f"{transport}: {line}" for transport, line in closing.items()))
    # Same verdict over both transports: the same scenarios, the same (known) failures.
    counts = {t: int(re.search(r"(\d+) scenarios", line).group(1)) for t, line in closing.items()}
    assert counts["mcp"] + 2 == counts["rest"], closing  # the same scenarios, and the importer's two over REST


@pytest.mark.postgres
@pytest.mark.live
def test_the_runner_names_the_scenario_a_broken_build_fails(transactional_db, tmp_path):
    """tests/support/broken_settings.py accepts values outside one_of; the runner's `fields`
    scenario says so by name, and scenarios that do not touch one_of still pass."""
    with conformance_server(tmp_path, spec=False, settings_module="tests.support.broken_settings") as (url, tokens, *_):
        junit = tmp_path / "broken.xml"
        done = runner(url, *identity_arguments(tokens), "--transport", "rest", "--junit", str(junit),
                      "--only", "fields,decisions,agent-loop")
    assert done.returncode == 1, done.stdout
    found = verdicts(junit)
    assert found["fields"][0] == "fail"
    assert found["fields"][1] == "an issue names inputs.level", done.stdout
    assert (found["decisions"][0], found["agent-loop"][0], found["describe"][0]) == ("pass", "pass", "pass")
    assert re.search(r"^fields +\d+ +FAIL +an issue names inputs\.level \(\+\d+ more\)$", done.stdout,
                     re.MULTILINE), done.stdout
    assert "FAILED (fields)" in done.stdout.strip().splitlines()[-1]
    # Issue 24 point 4: the scenario went on after its first failure and reports every one, each with
    # its requirement, request and answer: the one_of break shows on start, inside a list and on submit.
    assert "FAIL fields (1 of " in done.stdout and "[2.3-fields]: an issue names inputs.level" in done.stdout
    assert "]: a value outside one_of inside a list is refused, by its index (§6 rule 3)" in done.stdout
    assert "]: output.grade is refused" in done.stdout
    assert done.stdout.count("  request: agent → ") >= 3


def test_the_runner_imports_nothing_of_the_server():
    """It talks to a server through the protocol only, so it runs against any server."""
    from tests.test_layering import PACKAGES, imported_names

    folder = ROOT / "conformance"
    found = [(path.name, name, line) for path in folder.rglob("*.py")
             for name, line in imported_names(f"conformance.{path.stem}", path)
             if name.split(".")[0] in PACKAGES]
    assert found == []
    assert len(list(folder.glob("processes/*/PROCESS.md"))) == 10
