"""Issue 24 point 5, the mutation proof: "a test builds mutants of this server (… one broken rule
each …) and asserts the runner fails each by the right scenario and check. The list grows with each
bug the project ever fixes."

Each mutant is this server with one rule broken (tests/support/mutants.py, applied through the
test-only settings module tests/support/mutant_settings.py), started as a live server on one
PostgreSQL test database that holds the runner's processes and identities. The runner runs over REST
(it carries numbers exactly) with `--only` the scenario expected to catch the mutant (`describe`
and `identities` always run too), and must fail that scenario by the expected requirement and check,
and no other scenario.
"""

import os
import re
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from conformance.fixtures import publish_lines
from tests.support import mutants as mutant_patches
from tests.support.live import ROOT, database_url, start_live_server
from tests.test_conformance_runner import (APPROVERS, REVIEWERS, free_port, identity_arguments, importer_command,
                                           runner)


@dataclass(frozen=True)
class Mutant:
    name: str  # a key of tests/support/mutants.py MUTANTS
    scenario: str  # the runner's scenario that must fail (and the only one it runs, with describe and identities)
    requirement: str  # the conformance/musts.py id of the check that must fail
    check: str  # how that check's label starts
    importer: bool = False  # caught through --importer
    timers: bool = False  # waits for a one-minute timer: started first, beside the others, with a late sweep
    evaluator: bool = False  # check-1, with the runner's own evaluator (--evaluator-port)


MUTANTS = [
    Mutant("yaml-1.1", "importer:accept", "2.1-yaml-core", "the importer accepts a file of YAML 1.1 traps",
           importer=True),
    Mutant("decimals-as-doubles", "fields", "2.3-no-rounding", "start_run answers decimals and huge exponents unrounded"),
    Mutant("undeclared-output-accepted", "fields", "2.3-fields", "an issue names output.surplus"),
    Mutant("decide-forbidden-before-stale", "decisions", "tools-decide",
           "a stale snapshot is checked before forbidden: refused as stale"),
    Mutant("submit-replay-reexecuted", "replays", "4-idempotent", "a replayed submit returns the original result"),
    Mutant("late-event-beats-timeout", "timers", "2.2-timeout",
           "an event after the timeout is not consumed by the timed-out wait", timers=True),
    Mutant("claim-ended-not-ready", "cancel", "3.5-run-ended", "claim on an ended run"),
    Mutant("check-fail-outranks-unsure", "check", "check-worst",
           "pass, fail and unsure answers: the verdict is unsure, the step waits on a person", evaluator=True),
]
# Mutants of issue 24 the runner cannot catch, and why (each a requirement musts.py marks not observable).
NOT_OBSERVABLE = {
    "the test-mode notice sent": "spec §3.3 'the server MUST NOT send real notifications' in a test run: a "
                                 "notification leaves by mail or chat, outside the protocol (musts.py "
                                 "3.3-no-notifications), so no runner can see one sent",
}


def test_every_mutant_has_its_expected_failure():
    """The list in this test and the patches in tests/support/mutants.py grow together."""
    from conformance import musts

    assert [m.name for m in MUTANTS] == list(mutant_patches.MUTANTS)
    assert all(m.requirement in musts.BY_ID and not musts.BY_ID[m.requirement].unobservable for m in MUTANTS)
    assert all(musts.BY_ID["3.3-no-notifications"].unobservable for _ in NOT_OBSERVABLE)


def publish_and_identify() -> dict:
    """The runner's processes, published from the lines --print-publish prints, and the identities,
    made in this process on the test database the live servers read."""
    out = StringIO()
    for line in publish_lines([APPROVERS, REVIEWERS], None, offered={"parallel-1", "check-1"}):
        call_command(*shlex.split(line, comments=True)[2:], stdout=out)

    def token(*arguments):
        printed = StringIO()
        call_command("create_identity", *arguments, stdout=printed)
        return printed.getvalue().strip().splitlines()[-1]

    return {"agent": token("agent", "conformance-agent"), "agent2": token("agent", "conformance-agent-2"),
            "approver": token("person", "approver@example.com", "--groups", APPROVERS),
            "reviewer": token("person", "reviewer@example.com", "--groups", REVIEWERS),
            "operator": token("person", "operator@example.com", "--operator")}


def failures(junit: Path) -> dict[str, list[tuple[str, str]]]:
    """scenario -> its failures as (requirement id, check label), from the runner's JUnit XML."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is not None:
            found[case.get("name")] = re.findall(r"^\[([^\]]*)\] (.*)$", failure.text or "", re.MULTILINE)
    return found


# The sweep of production runs every SWEEP_INTERVAL_SECONDS (15 s): an event can come after a timeout
# and before the sweep that fires it. This sweep runs SWEEP_LAG seconds behind the clock, so the
# runner's late event (1.5 s after the deadline) always comes first, as it may in production.
SWEEP_LAG = 5
LATE_SWEEP = f"""
import datetime as dt
import time
from kernel import clock
from runs.services.sweep import sweep
while True:
    sweep(clock.now() - dt.timedelta(seconds={SWEEP_LAG}))
    time.sleep(0.5)
"""


@contextmanager
def late_sweeping(db_url: str):
    """The real server's sweep (not the mutant's), SWEEP_LAG seconds late."""
    process = subprocess.Popen([sys.executable, "manage.py", "shell", "-c", LATE_SWEEP], cwd=ROOT,
                               env={**os.environ, "DATABASE_URL": db_url}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def mutant_server(mutant: Mutant, db_url: str, workdir: Path, evaluator_port: int | None):
    """The mutant, offering check-1 (its evaluator the runner's, at `evaluator_port`) only when asked."""
    server_env = {"DJANGO_SETTINGS_MODULE": "tests.support.mutant_settings", "MUTANT": mutant.name}
    if evaluator_port:
        server_env.update(CHECK_EVALUATOR_URL=f"http://127.0.0.1:{evaluator_port}/v1",
                          CHECK_EVALUATOR_MODEL="conformance")
    with start_live_server(db_url, workdir, env=server_env) as server:
        if mutant.timers:
            with late_sweeping(db_url):
                yield server, {**os.environ, **server_env, "DATABASE_URL": db_url}
        else:
            yield server, {**os.environ, **server_env, "DATABASE_URL": db_url}


def run_mutant(mutant: Mutant, tokens: dict, db_url: str, workdir: Path) -> dict:
    workdir.mkdir()
    began = time.monotonic()
    port = free_port() if mutant.evaluator else None
    with mutant_server(mutant, db_url, workdir, port) as (server, env):
        junit = workdir / "runner.xml"
        done = runner(server.url, *identity_arguments(tokens), "--transport", "rest", "--only", mutant.scenario,
                      "--junit", str(junit), "--timer-bound", str(SWEEP_LAG + 15),
                      *(["--importer", importer_command()] if mutant.importer else []),
                      *(["--evaluator-port", str(port)] if port else []), env=env, timeout=180)
    return {"done": done, "failures": failures(junit) if junit.exists() else None,
            "seconds": time.monotonic() - began}


@pytest.mark.postgres
@pytest.mark.live
def test_the_runner_kills_every_mutant(transactional_db, tmp_path, settings):
    settings.CHECK_EVALUATOR_URL, settings.CHECK_EVALUATOR_MODEL = "http://127.0.0.1:9/v1", "conformance"  # to publish
    tokens = publish_and_identify()
    db_url = database_url(connection.settings_dict)
    began = time.monotonic()
    # Two at a time (two cores); the one-minute timer first, so the others run beside its wait.
    order = sorted(MUTANTS, key=lambda m: not m.timers)
    with ThreadPoolExecutor(2) as pool:
        outcomes = dict(zip(order, pool.map(lambda m: run_mutant(m, tokens, db_url, tmp_path / m.name), order),
                            strict=True))
    report, survivors = [], []
    for mutant, outcome in outcomes.items():
        done, found = outcome["done"], outcome["failures"]
        killed = (done.returncode == 1 and found is not None and set(found) == {mutant.scenario}
                  and any(requirement == mutant.requirement and label.startswith(mutant.check)
                          for requirement, label in found[mutant.scenario]))
        report.append(f"{mutant.name}: {'killed' if killed else 'SURVIVED'} by {mutant.scenario} "
                      f"[{mutant.requirement}] in {outcome['seconds']:.1f} s; failures: {found}")
        if not killed:
            survivors.append(f"{mutant.name}:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}")
    print("\n".join(report) + f"\nall mutants in {time.monotonic() - began:.1f} s")
    assert not survivors, "\n\n".join(survivors)
