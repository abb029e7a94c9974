"""The scenario registry and one run of the runner over one transport."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .core import Actor, Context, Result, ScenarioFailed, ScenarioSkipped
from .schemas import Schemas

PUBLISHED = "runner-published"  # musts.py: the runner's processes are published (a precondition, not a rule)

PROCESSES = Path(__file__).resolve().parent / "processes"
CORE_PROCESSES = ["conformance-agent-loop", "conformance-fields", "conformance-decisions", "conformance-waits",
                  "conformance-wait-missing", "conformance-queue", "conformance-initiator", "conformance-timers"]
PROFILE_PROCESSES = {"conformance-parallel": "parallel-1", "conformance-check": "check-1"}
ROLES = {"approver": 0, "reviewer": 1}  # role name in the runner's processes -> index of --person


@dataclass
class Scenario:
    name: str
    run: callable
    processes: tuple[str, ...] = ()
    profile: str | None = None
    always: bool = False  # runs even with --only: later scenarios depend on what it learns
    importer: bool = False  # needs --importer: left out (and its requirements counted as not checked) without
    background: bool = False  # mostly waits (a timer, a lease): runs beside the others, from after describe


SCENARIOS: list[Scenario] = []


def scenario(name: str, *, processes=(), profile=None, always=False, importer=False, background=False):
    def register(function):
        SCENARIOS.append(Scenario(name, function, tuple(processes), profile, always, importer, background))
        return function

    return register


@dataclass
class Options:
    timer_bound: float = 120.0  # how long a timer may fire late before it is a failure
    lease_wait_max: float = 600.0  # the longest lease the runner waits out to see it lapse
    spec: Path | None = None
    importer: str | None = None  # a command with {file}: publishes one PROCESS.md on the server


@dataclass
class Session:
    transport: object
    schemas: Schemas
    agents: list[Actor]
    people: list[Actor]
    operator: Actor
    options: Options
    described: dict = field(default_factory=dict)
    published: dict = field(default_factory=dict)  # name -> list_processes item
    started_runs: list[str] = field(default_factory=list)
    calls: int = 0
    extra: list[Scenario] = field(default_factory=list)  # the spec's fixtures, added with --spec
    lock: threading.Lock = field(default_factory=threading.Lock)  # background scenarios count calls too
    evaluator: object = None  # with --evaluator-port: the runner's own check-1 evaluator (evaluator.py)

    def count_call(self):
        with self.lock:
            self.calls += 1

    @property
    def profiles(self) -> list[str]:
        return self.described.get("profiles") or []

    def run_one(self, entry: Scenario) -> Result:
        result = Result(entry.name)
        began = time.monotonic()
        context = Context(self, result)
        try:
            if entry.profile and self.described and entry.profile not in self.profiles:
                raise ScenarioSkipped(f"describe does not offer {entry.profile}")
            missing = [name for name in entry.processes if self.described and name not in self.published]
            if missing:
                context.check(False, f"published first: {', '.join(missing)} (see --print-publish)", hard=True,
                              must=PUBLISHED)
            entry.run(context)
        except ScenarioSkipped as skip:
            result.skipped = str(skip)
        except ScenarioFailed as failed:
            result.notes.append(f"stopped at {failed}: the rest of the scenario depends on it")
        except Exception as error:  # noqa: BLE001 - a runner bug or an answer of an unexpected shape
            text = f"{type(error).__name__}: {error}"
            if result.failures:  # most likely what an earlier failed check left behind
                result.notes.append(f"stopped after the failures above ({text})")
            else:
                result.fail(f"unexpected {text}", context.requirement, context.last)
        result.seconds = time.monotonic() - began
        return result

    def run(self, only: set[str] | None, progress=None) -> list[Result]:
        from . import fixtures, scenarios  # noqa: I001 - importing them registers their scenarios, in this order
        from . import importer  # noqa: F401 - after describe, whose profiles and tools it reads

        entries = [entry for entry in SCENARIOS if self.options.importer or not entry.importer]
        entries += fixtures.walk_scenarios(self)
        chosen = [entry for entry in entries if not only or entry.always
                  or any(entry.name == o or entry.name.startswith(o + ":") for o in only)]
        first = [entry for entry in chosen if entry.always]  # describe and identities: the rest needs them
        beside = [entry for entry in chosen if entry.background and not entry.always]
        rest = [entry for entry in chosen if not entry.always and not entry.background]
        results = []

        def done(result: Result) -> Result:
            results.append(result)
            if progress:
                progress(result)
            return result

        for entry in first:
            done(self.run_one(entry))
        # Scenarios that mostly wait (a one-minute timer, a lease) run beside the others, each in a
        # thread of its own: the run takes about as long as the longest wait, not the sum.
        with ThreadPoolExecutor(max(1, len(beside)), thread_name_prefix="conformance-background") as pool:
            waiting = [pool.submit(self.run_one, entry) for entry in beside]
            for entry in rest:
                done(self.run_one(entry))
            for job in waiting:
                done(job.result())
        done(self.run_one(Scenario("cleanup", scenarios.cleanup, always=True)))
        return results
