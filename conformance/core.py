"""What a scenario works with: actors (a token and what the runner learned about it), calls that
are schema-checked and recorded, and checks. A failed check is recorded and the scenario goes on;
only a check whose failure leaves nothing to go on (a call that had to succeed, an item that had
to exist) stops it (`hard`). Every check counts under the requirement of musts.py it observes."""

import functools
import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

ENVELOPE = "4-envelope"  # musts.py: every answer is the envelope (and, with schemas, the tool's result shape)
UNMAPPED = "unmapped"  # a check made outside any requirement: a runner bug the coverage test catches
WRITES = {"start_run", "claim", "renew", "upload", "submit", "escalate", "decide", "cancel", "send_event"}
BRIEF_CHARS = 1500


@dataclass
class Actor:
    name: str  # how the report names it: agent, agent-2, approver, reviewer, operator
    token: str
    kind: str  # agent | person | operator
    group: str | None = None  # the group a person was given for (--person GROUP=TOKEN)
    person: str | None = None  # the person value the server resolves it to (learned from an initiator task)


def new_request_id() -> str:
    return str(uuid.uuid4())


def _short(value, limit=BRIEF_CHARS) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 20] + f"… ({len(text)} chars)"


@dataclass
class Exchange:
    actor: Actor
    tool: str
    arguments: dict
    envelope: object
    problems: list[str]

    @property
    def ok(self) -> bool:
        return isinstance(self.envelope, dict) and self.envelope.get("ok") is True

    @property
    def data(self):
        return self.envelope.get("data") if self.ok else None

    @property
    def error(self) -> dict:
        return (self.envelope.get("error") or {}) if isinstance(self.envelope, dict) and not self.ok else {}

    def request_text(self) -> str:
        shown = {k: ("<token>" if k == "token" else v) for k, v in self.arguments.items()}
        if "contentBase64" in shown:
            shown["contentBase64"] = f"<{len(self.arguments['contentBase64'])} base64 chars>"
        return f"{self.actor.name} → {self.tool} {_short(shown, 700)}"

    def answer_text(self) -> str:
        return f"← {_short(self.envelope)}"


class ScenarioFailed(Exception):
    """A hard check failed: the rest of the scenario depends on it."""


class ScenarioSkipped(Exception):
    pass


@dataclass
class Failure:
    label: str
    must: str | None  # the id of the requirement (musts.py) the failed check observes
    request: str | None = None
    answer: str | None = None


@dataclass
class Result:
    name: str
    checks: int = 0
    failures: list[Failure] = field(default_factory=list)
    skipped: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    observed: dict[str, int] = field(default_factory=dict)  # requirement id -> checks that observed it

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def failure(self) -> str | None:
        """The first failure's label (the table and JUnit name a scenario by it)."""
        return self.failures[0].label if self.failures else None

    def fail(self, label: str, must: str | None, exchange: "Exchange | None"):
        shown = (exchange.request_text(), exchange.answer_text()) if exchange is not None else (None, None)
        self.failures.append(Failure(label, must, *shown))


class _Requirement:
    """What `Context.must` returns: used as a statement it sets the requirement until the next one;
    used in `with`, it restores the one before (so a shared helper does not change its caller's)."""

    def __init__(self, ctx, before):
        self.ctx, self.before = ctx, before

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.ctx.requirement = self.before


class Context:
    """One scenario's view of the run: the shared session (transport, actors, what describe said)
    plus its own result."""

    def __init__(self, session, result: Result):
        self.session = session
        self.result = result
        self.last: Exchange | None = None
        self.requirement: str | None = None  # the musts.py id the next checks observe

    def must(self, requirement: str) -> _Requirement:
        """The following checks observe this requirement of conformance/musts.py."""
        before, self.requirement = self.requirement, requirement
        return _Requirement(self, before)

    # ---------------------------------------------------------------- calls

    def call(self, actor: Actor, tool: str, **arguments) -> Exchange:
        if tool in WRITES and "requestId" not in arguments:
            arguments["requestId"] = new_request_id()
        envelope, problems = self.session.transport.call(actor.token, tool, arguments)
        return self._record(actor, tool, arguments, envelope, problems)

    def _record(self, actor: Actor, tool: str, arguments: dict, envelope, problems: list[str]) -> Exchange:
        exchange = Exchange(actor, tool, arguments, envelope, problems + self.session.schemas.problems(tool, envelope))
        self.session.count_call()
        self.last = exchange
        self.check(not exchange.problems, f"{tool}: the envelope is well formed ({'; '.join(exchange.problems)})",
                   exchange, must=ENVELOPE)
        return exchange

    def call_together(self, calls: list[tuple[Actor, str, dict]]) -> list[Exchange]:
        """Send the calls at the same moment, one thread each (the transports take concurrent calls),
        and record them in order."""
        for _actor, tool, arguments in calls:
            if tool in WRITES and "requestId" not in arguments:
                arguments["requestId"] = new_request_id()
        gate = threading.Barrier(len(calls))

        def send(actor, tool, arguments):
            gate.wait(timeout=30)
            return self.session.transport.call(actor.token, tool, arguments)

        with ThreadPoolExecutor(len(calls)) as pool:
            jobs = [pool.submit(send, *call) for call in calls]
        return [self._record(actor, tool, arguments, *job.result())
                for (actor, tool, arguments), job in zip(calls, jobs, strict=True)]

    def ok(self, actor: Actor, tool: str, **arguments):
        """The call succeeds, and the scenario needs its answer: a failure here stops it."""
        exchange = self.call(actor, tool, **arguments)
        self.check(exchange.ok, f"{tool} succeeds", exchange, hard=True)
        return exchange.data

    def refused(self, actor: Actor, tool: str, code: str, issues=None, *, has=None, label=None, **arguments) -> dict:
        """The call is refused with `code`; `issues` (exact, any order) or `has` (each one present)."""
        exchange = self.call(actor, tool, **arguments)
        what = label or f"{tool} is refused as {code}"
        self.check(not exchange.ok and exchange.error.get("code") == code, what, exchange)
        got = exchange.error.get("issues") or []
        if issues is not None:
            self.check(sorted(got) == sorted(issues), f"{what} with issues {issues}", exchange)
        for issue in has or ():
            self.check(issue in got, f"{what} with the issue {issue!r}", exchange)
        return exchange.error

    # ---------------------------------------------------------------- checks

    def check(self, condition, label: str, exchange: Exchange | None = None, *, hard: bool = False,
              must: str | None = None):
        """Record one check under its requirement. A failure is recorded with the request and answer
        that broke it, and the scenario goes on, unless `hard`: what follows needs it to hold."""
        requirement = must or self.requirement or UNMAPPED
        self.result.checks += 1
        self.result.observed[requirement] = self.result.observed.get(requirement, 0) + 1
        if not condition:
            self.result.fail(label, requirement, exchange or self.last)
            if hard:
                raise ScenarioFailed(label)
        return bool(condition)

    def equal(self, got, expected, label: str, exchange: Exchange | None = None, *, hard: bool = False):
        return self.check(got == expected, f"{label}: expected {_short(expected, 300)}, got {_short(got, 300)}",
                          exchange, hard=hard)

    def note(self, text: str):
        self.result.notes.append(text)

    def skip(self, reason: str):
        raise ScenarioSkipped(reason)

    # ---------------------------------------------------------------- shared steps

    @property
    def agent(self) -> Actor:
        return self.session.agents[0]

    @property
    def approver(self) -> Actor:
        return self.session.people[0]

    @property
    def reviewer(self) -> Actor:
        return self.session.people[1]

    @property
    def operator(self) -> Actor:
        return self.session.operator

    def start(self, actor: Actor, process: str, inputs: dict, mode: str = "test", **extra) -> dict:
        view = self.ok(actor, "start_run", process=process, inputs=inputs, mode=mode, **extra)
        self.session.started_runs.append(view["run"]["id"])
        return view

    def find_work(self, actor: Actor, run_id: str, step_id: str | None = None, *, process: str | None = None,
                  present: bool = True, label: str | None = None):
        """The get_work item of this run (and step) for the actor, following every page."""
        cursor, found = None, None
        for _ in range(200):
            arguments = {"limit": 100}
            if process:
                arguments["process"] = process
            if cursor:
                arguments["cursor"] = cursor
            page = self.ok(actor, "get_work", **arguments)
            for item in page["items"]:
                if item["runId"] == run_id and (step_id is None or _item_step(item) == step_id):
                    found = item
            cursor = page.get("nextCursor")
            if found or not cursor:
                break
        what = label or f"get_work for {actor.name} {'lists' if present else 'does not list'} " \
                        f"{step_id or 'an item'} of {run_id}"
        self.check((found is not None) == present, what, hard=present)
        return found

    def claim(self, actor: Actor, run_id: str, step_id: str) -> dict:
        return self.ok(actor, "claim", runId=run_id, stepId=step_id)

    def states(self, view: dict) -> dict:
        return {step["id"]: step["state"] for step in view["steps"]}

    def item_for(self, view: dict, step_id: str) -> dict:
        items = [item for item in view["workItems"] if item["stepId"] == step_id]
        self.check(len(items) == 1, f"the run view shows one open work item for {step_id}", hard=not items)
        return items[0]

    def wait_for(self, probe, bound: float, label: str, pause: float = 0.25):
        """Poll `probe()` until it returns something truthy or `bound` seconds pass; the seconds taken."""
        began = time.monotonic()
        while True:
            value = probe()
            if value:
                return value, time.monotonic() - began
            if time.monotonic() - began > bound:
                self.check(False, f"{label} within {bound:.0f} s", hard=True)
            time.sleep(pause)


def observes(requirement: str):
    """A shared helper's checks observe `requirement`, whatever its caller's."""
    def wrap(function):
        @functools.wraps(function)
        def run(ctx, *args, **kwargs):
            with ctx.must(requirement):
                return function(ctx, *args, **kwargs)
        return run
    return wrap


def _item_step(item: dict) -> str | None:
    return item.get("stepId") or (item.get("workItem") or {}).get("stepId")
