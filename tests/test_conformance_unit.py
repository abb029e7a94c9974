"""The conformance runner's own machinery, without a server: a tiny fake transport plays a server
whose answers are broken on purpose (issue 24)."""

import copy

from conformance import report
from conformance.core import Actor
from conformance.schemas import Schemas
from conformance.session import CORE_PROCESSES, SCENARIOS, Options, Session
from conformance.walk import load_frontmatter, runner_process_text

DESCRIBED = {"protocol": "agentprocess", "version": "core-2", "profiles": [], "leaseSeconds": 600,
             "person": {"format": "email"}, "limits": {"runDataBytes": 1048576},
             "tools": ["describe", "list_processes", "start_run", "get_run", "get_work", "claim", "submit", "escalate",
                       "decide", "cancel"]}


class FakeServer:
    """Answers describe and list_processes as a conforming server would, with `broken` laid over
    describe's data; every other tool is not_found."""

    name = "fake"

    def __init__(self, broken: dict | None = None):
        self.described = {**copy.deepcopy(DESCRIBED), **(broken or {})}
        self.items = []
        for name in CORE_PROCESSES:
            frontmatter = load_frontmatter(runner_process_text(name))
            self.items.append({"name": name, "description": frontmatter["description"], "version": 1,
                               "inputs": frontmatter.get("inputs", {}),
                               **({"requires": frontmatter["requires"]} if "requires" in frontmatter else {})})

    def call(self, token, tool, arguments):
        if tool == "describe":
            return {"ok": True, "data": self.described}, []
        if tool == "list_processes":
            return {"ok": True, "data": {"items": self.items, "nextCursor": None}}, []
        return {"ok": False, "error": {"code": "not_found", "message": "not here"}}, []

    def close(self):
        pass


def session_for(server: FakeServer) -> Session:
    agent = Actor("agent", "t-agent", "agent")
    people = [Actor("approver", "t-1", "person", group="g1"), Actor("reviewer", "t-2", "person", group="g2")]
    return Session(server, Schemas(None), [agent], people, Actor("operator", "t-op", "operator"), Options())


def describe_scenario():
    from conformance import scenarios  # noqa: F401 - importing it registers the scenarios

    return next(entry for entry in SCENARIOS if entry.name == "describe")


def test_a_conforming_describe_passes_the_fake():
    """The fake is a fair server: with nothing broken the describe scenario passes."""
    result = session_for(FakeServer()).run_one(describe_scenario())
    assert (result.passed, result.failures) == (True, [])
    assert result.checks > 20


def test_a_scenario_goes_on_after_a_failed_check_and_reports_every_failure():
    """Issue 24 point 4: "A scenario keeps going after a failed check where the next checks do not
    depend on it, and reports all failures of a scenario, each with its request and answer."
    Two wrong fields of describe are two failures of one scenario; the checks after them still ran."""
    broken = FakeServer({"protocol": "agent-process", "leaseSeconds": 0})
    result = session_for(broken).run_one(describe_scenario())
    fair = session_for(FakeServer()).run_one(describe_scenario())
    assert [f.label for f in result.failures] == [
        'describe.protocol: expected "agentprocess", got "agent-process"',
        "describe.leaseSeconds is positive",
    ]
    assert result.checks == fair.checks  # every later check (list_processes included) still ran
    assert all(f.request == "agent → describe {}" for f in result.failures)
    assert all(f.answer.startswith('← {"ok": true, "data": {"protocol": "agent-process"') for f in result.failures)
    assert [f.must for f in result.failures] == ["4.1-describe", "4.1-describe"]
    text = report.failures([result])
    assert text.count("FAIL describe (") == 2 and "FAIL describe (2 of 2) [4.1-describe]: describe.leaseSeconds" in text
    assert text.count("  request: agent → describe {}") == 2
    assert report.table([result]).splitlines()[-1].endswith(
        'describe.protocol: expected "agentprocess", got "agent-process" (+1 more)')


def test_a_failed_call_the_scenario_needs_stops_it():
    """A hard check (a call whose answer the rest needs) stops the scenario and says why."""
    server = FakeServer()
    server.call = lambda token, tool, arguments: ({"ok": False, "error": {"code": "retry", "message": "busy"}}, [])
    result = session_for(server).run_one(describe_scenario())
    assert [f.label for f in result.failures] == ["describe succeeds"]
    assert result.notes == ["stopped at describe succeeds: the rest of the scenario depends on it"]
    assert result.failures[0].answer == '← {"ok": false, "error": {"code": "retry", "message": "busy"}}'


def test_every_requirement_is_checked_or_says_why_not():
    """Issue 24 point 1: "a test fails when a new check has no sentence or a sentence neither checks
    nor says why not". Every requirement of conformance/musts.py is observed by some check (directly,
    or through --importer) or gives the reason the protocol cannot show it; every id a check names is
    in the table."""
    from conformance import musts, scenarios  # noqa: F401 - importing scenarios registers them

    seen = musts.observers()
    assert sorted(set(seen) - set(musts.BY_ID)) == []
    unmapped = [m.id for m in musts.MUSTS if musts.status(m, seen) == "NOT MAPPED"]
    assert unmapped == []
    assert all(m.unobservable and len(m.unobservable) > 20 for m in musts.MUSTS
               if musts.status(m, seen) == "not observable")
    keyworded = {m.id for m in musts.MUSTS if m.keyword}
    assert len(keyworded) == 11  # the spec's sentences with MUST or MUST NOT (core-2: 9 + tools.md 1 + §2.2's two)


def test_every_scenario_names_the_requirement_of_its_checks():
    """A check belongs to a requirement: each scenario (and each walk) says `ctx.must(id)` before its
    first check, or its helper is decorated `@observes(id)`. The runner also counts checks made under
    none at run time and says so in its closing line (the live test asserts it never does)."""
    import ast

    from conformance import musts

    checks = {"check", "equal", "refused", "ok", "start", "claim", "find_work", "item_for", "wait_for",
              "call_together", "decide", "decide_refused", "ended_checks", "ended_writes_refused", "upload_file",
              "submit_screen"}
    late = []
    for module in ("scenarios.py", "walk.py", "importer.py"):
        tree = ast.parse((musts.HERE / module).read_text())
        for function in tree.body:
            if not isinstance(function, ast.FunctionDef):
                continue
            decorators = {getattr(d.func, "id", None) for d in function.decorator_list if isinstance(d, ast.Call)}
            if not decorators & {"scenario", "observes"} and function.name != "drive":
                continue  # a helper that inherits its caller's requirement
            calls = [node for node in ast.walk(function) if isinstance(node, ast.Call)]
            name = lambda node: getattr(node.func, "attr", None) or getattr(node.func, "id", None)  # noqa: E731
            first_check = min((c.lineno for c in calls if name(c) in checks), default=None)
            first_must = min((c.lineno for c in calls if name(c) == "must"), default=None)
            if first_check and "observes" not in decorators and (first_must is None or first_must > first_check):
                late.append(function.name)
    assert late == []


def test_coverage_prints_the_table_with_its_counts():
    """`python -m conformance --coverage` prints every requirement and the counts (issue 24 point 1)."""
    import subprocess
    import sys

    from conformance import musts
    from tests.support.live import ROOT

    done = subprocess.run([sys.executable, "-m", "conformance", "--coverage"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == len(musts.MUSTS) + 3
    assert any(line.startswith("2.3-no-rounding") and "MUST NOT" in line and "-> fields" in line for line in lines)
    assert any(line.startswith("6.4-credential") and "not observable" in line for line in lines)
    assert lines[-1].startswith(f"{len(musts.MUSTS) - 1} requirements (11 with MUST or MUST NOT): ")


def test_the_runners_evaluator_gives_the_verdict_it_chose(settings):
    """Issue 24 point 3: "check-1 with a verdict the runner chooses through its own evaluator stub
    (--evaluator-port) … so pass, unsure and fail are each asserted". This server's own evaluator
    client asks the stub (a real HTTP endpoint) every check question of the runner's processes and
    the spec's fixtures, and this server's judge gives each the verdict the runner chose; a verdict a
    question cannot have is said so, not answered wrongly."""
    from conformance.cli import evaluator_stub
    from runs.services.checks import judge, kind_of
    from runs.services.evaluator import ChatCompletionsEvaluator
    from tests.support.spec import SPEC, spec_present

    settings.CHECK_PASS, settings.CHECK_FAIL, settings.CHECK_CONFIDENCE = 0.9, None, 0.8
    stub = evaluator_stub(0, SPEC if spec_present() else None)
    stub.limits = lambda: {"checkPass": 0.9, "checkFail": None, "checkConfidence": 0.8}
    client = ChatCompletionsEvaluator(stub.url, "any-model")
    judged, impossible = {}, []
    try:
        for ask, question in stub.questions.items():
            for verdict in ("pass", "unsure", "fail"):
                marker = f"run-{len(judged)}-{verdict}"
                stub.choose(marker, ask, verdict)
                try:
                    stub.given(marker, ask)
                except ValueError:
                    impossible.append((ask, verdict))
                    continue
                material = f"Run data (JSON): {{\"inputs\": {{\"subject\": \"{marker}\"}}}}"
                kind = kind_of(question)
                answer = (client.yes_no(material, ask) if kind == "yes_no"
                          else client.choice(material, ask, question["one_of"]) if kind == "choice"
                          else client.rubric(material, ask, question["levels"]))
                judged[(ask, verdict)] = judge(question, answer)
    finally:
        stub.stop()
    assert judged and all(got == verdict for (_ask, verdict), got in judged.items()), judged
    assert {verdict for _ask, verdict in judged} == {"pass", "unsure", "fail"}
    # A yes/no question without `fail` cannot be unsure (below pass fails): check-1 §2.
    assert ("The cleared verdict matches what the attached report says.", "unsure") not in impossible
    assert all(verdict != "pass" for _ask, verdict in impossible)
    assert stub.unknown == 0


def test_a_lease_longer_than_the_wait_is_said_in_the_closing_line():
    """Issue 24 point 3: "a lease lapse measured on any server (waits the lease out when it is at
    most --lease-wait-max …; else says so in the closing line)". A lease of 600 s with
    --lease-wait-max 15: the lease-lapse scenario is skipped with the reason, and the closing line
    counts 3.3-lease-lapse among the requirements not checked; the default waits 600 s out."""
    session = session_for(FakeServer())
    session.options.lease_wait_max = 15
    results = session.run({"lease-lapse"})
    [lapse] = [r for r in results if r.name == "lease-lapse"]
    assert lapse.skipped == "the lease of 600 s is longer than --lease-wait-max 15 s: its lapse is not waited out"
    assert "3.3-lease-lapse" in report.not_checked(results)
    assert "1 skipped (lease-lapse)" in report.closing(results, "fake", session.calls, 1.0)
    assert Options().lease_wait_max == 600  # tools.md's describe shows "leaseSeconds": 600
