"""Publication through the server's own importer (`--importer 'CMD {file}'`): the runner writes
files the spec says a server refuses (each §2 refusal class, YAML 1.1 traps, a profile the server
lacks) and files it must accept, runs the command on each, and judges its exit status and, for an
accepted file, what list_processes then says. Publishing is out of band in the protocol, so this is
the only way the runner sees it."""

import shlex
import subprocess
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .core import Context
from .session import scenario

TIMEOUT_SECONDS = 180
BODY = "# Conformance: import probe\n\nWritten for the conformance runner's importer checks.\n"


def probe(name: str, head: str = "", steps: str | None = None, description: str = "An import probe.") -> str:
    """A valid file (one agent step, then a finish) with `head` added to the frontmatter and its
    steps replaced by `steps` when given."""
    steps = steps if steps is not None else (
        "  - id: work\n    agent: Do the work.\n  - id: done\n    finish: done\n")
    return f"---\nname: {name}\ndescription: {description}\n{head}steps:\n{steps}---\n{BODY}"


@dataclass
class Refusal:
    label: str
    requirement: str
    text: str  # with {name} for the process name


AGENT = "  - id: work\n    agent: Do it.\n"
DONE = "  - id: done\n    finish: done\n"
REFUSALS = [
    Refusal("an unknown top-level field", "2.1-refusals", probe("{name}", head="colour: red\n")),
    Refusal("an unknown key on a step", "2.1-refusals",
            probe("{name}", steps="  - id: work\n    agent: Do it.\n    colour: red\n" + DONE)),
    Refusal("a duplicate key", "2.1-refusals", probe("{name}", head="description: Twice.\n")),
    Refusal("a name breaking the pattern", "2.1-refusals", probe("{name}").replace("name: {name}", "name: Bad_{name}")),
    Refusal("no description", "2.1-refusals", probe("{name}").replace("description: An import probe.\n", "")),
    Refusal("no steps", "2.1-refusals", probe("{name}", steps="").replace("steps:\n", "steps: []\n")),
    Refusal("a step with two kinds", "2.2-refuse-graph",
            probe("{name}", steps="  - id: work\n    agent: Do it.\n    wait: 1h\n" + DONE)),
    Refusal("a step with no kind", "2.2-refuse-graph", probe("{name}", steps="  - id: work\n" + DONE)),
    Refusal("a step id breaking the pattern", "2.2-refuse-graph",
            probe("{name}", steps="  - id: 1work\n    agent: Do it.\n" + DONE)),
    Refusal("two steps with one id", "2.2-refuse-graph", probe("{name}", steps=AGENT + AGENT + DONE)),
    Refusal("next naming no step", "2.2-refuse-graph",
            probe("{name}", steps="  - id: work\n    agent: Do it.\n    next: nowhere\n" + DONE)),
    Refusal("a step no path reaches", "2.2-refuse-graph",
            probe("{name}", steps="  - id: work\n    agent: Do it.\n    next: done\n  - id: lost\n    agent: Never.\n"
                                 "    next: done\n" + DONE)),
    Refusal("a cycle through next", "2.2-refuse-graph",
            probe("{name}", steps="  - id: work\n    agent: Do it.\n    next: again\n  - id: again\n    agent: Again."
                                 "\n    next: work\n" + DONE)),
    Refusal("a finish with next", "2.2-refuse-graph",
            probe("{name}", steps=AGENT + "  - id: done\n    finish: done\n    next: work\n")),
    Refusal("a route list on an approval", "2.2-refuse-graph",
            probe("{name}", steps=AGENT + "  - id: check\n    person: approver\n    approve: Approve.\n    next: [done, "
                                          "stop]\n" + DONE + "  - id: stop\n    finish: stopped\n")),
    Refusal("a person path to an undeclared field", "2.2-refuse-graph",
            probe("{name}", steps=AGENT + "  - id: confirm\n    person: inputs.nobody\n    task: Confirm.\n" + DONE)),
    Refusal("a non-finish last step without next", "2.2-last-step-next",
            probe("{name}", steps="  - id: done\n    finish: done\n  - id: work\n    agent: Do it.\n")),
    Refusal("one_of values not of the field's type", "2.3-one-of-typed",
            probe("{name}", head="inputs:\n  count: { type: number, one_of: [one, two] }\n")),
    Refusal("a type the format lacks", "2.3-one-of-typed", probe("{name}", head="inputs:\n  amount: money\n")),
    Refusal("a duration that is not an integer and m, h or d", "2.3-one-of-typed",
            probe("{name}", steps="  - id: work\n    agent: Do it.\n    due: 2w\n" + DONE)),
    # YAML 1.1 would read these as booleans and an integer, which a string field's one_of refuses;
    # the core schema reads them as text, so the same trap with a number type is refused instead.
    Refusal("1_000 in a number's one_of (the core schema reads it as text)", "2.1-yaml-core",
            probe("{name}", head="inputs:\n  level: { type: number, one_of: [1_000, 2_000] }\n")),
]
PARALLEL = ("  - id: work\n    agent: Do it.\n  - id: fork\n    parallel: [left, right]\n    next: done\n"
            "  - id: left\n    agent: Left.\n    next: join\n  - id: right\n    agent: Right.\n    next: join\n" + DONE)
CHECK = "  - id: work\n    agent: Do it.\n    output: { answer: number }\n    check: Is the answer a number?\n" + DONE
# A file that uses a profile, refused by a server without it (spec §8)
PROFILE_REFUSALS = {
    "parallel-1": Refusal("a parallel step on a server without parallel-1", "parallel-refuse",
                          probe("{name}", steps=PARALLEL)),
    "check-1": Refusal("a check on a server without check-1", "check-refuse", probe("{name}", steps=CHECK)),
}
# What YAML 1.2's core schema makes of the traps: yes, on, 1_000 and 0b101 are text; 0o17 and 0x1F
# are integers; 1e3 a float (a number, 1000).
TRAPS = ("inputs:\n  level: { type: string, one_of: [yes, no, on, off, 1_000, 0b101, \"~\"] }\n"
         "  count: { type: number, one_of: [0o17, 0x1F, 1e3] }\n")
TRAP_INPUTS = {"level": {"type": "string", "one_of": ["yes", "no", "on", "off", "1_000", "0b101", "~"]},
               "count": {"type": "number", "one_of": [15, 31, 1000]}}


def run_importer(template: str, folder: Path, name: str, text: str) -> subprocess.CompletedProcess:
    """Write the file as <folder>/<name>/PROCESS.md and run the command with {file} naming it."""
    where = folder / name
    where.mkdir(parents=True, exist_ok=True)
    path = where / "PROCESS.md"
    path.write_text(text)
    command = [part.replace("{file}", str(path)) for part in shlex.split(template)]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False)


def every_name(ctx: Context) -> dict[str, dict]:
    """name -> list_processes item, every page."""
    found, cursor = {}, None
    for _ in range(200):
        page = ctx.ok(ctx.agent, "list_processes", **({"cursor": cursor} if cursor else {}))
        found.update((item["name"], item) for item in page["items"])
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return found


def listed(ctx: Context, name: str) -> dict | None:
    return every_name(ctx).get(name)


def outcome(done: subprocess.CompletedProcess) -> str:
    said = (done.stdout + done.stderr).strip().splitlines()
    return f"exit {done.returncode}: {' | '.join(said[-3:])[:500]}"


def import_files(ctx: Context, folder: Path, cases: list[tuple[str, str]]) -> list[subprocess.CompletedProcess]:
    """Each (name, text) through the importer, four at a time."""
    template = ctx.session.options.importer
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda case: run_importer(template, folder, *case), cases))


@scenario("importer:refuse", importer=True)
def importer_refuse(ctx: Context):
    """§2 through the server's importer: every refusal class refused (exit status not 0, nothing
    listed), and a profile's or a tool's file refused by a server without that profile or tool."""
    ctx.must("2.1-refusals")
    suffix = uuid.uuid4().hex[:8]
    profiles = ctx.session.profiles
    cases = [(f"conformance-refuse-{n}-{suffix}", case) for n, case in enumerate(REFUSALS)]
    for profile, case in PROFILE_REFUSALS.items():
        if profile in profiles:
            ctx.note(f"the server offers {profile}: its refusal without the profile is not checked")
        else:
            cases.append((f"conformance-refuse-{profile}-{suffix}", case))
    missing = [tool for tool in ("send_event", "upload") if tool not in (ctx.session.described.get("tools") or [])]
    for tool in missing:
        steps = ("  - id: work\n    wait_for: conformance-event\n" if tool == "send_event"
                 else "  - id: work\n    agent: Do it.\n    evidence: [file]\n") + DONE
        cases.append((f"conformance-refuse-{tool.replace('_', '-')}-{suffix}",
                      Refusal(f"a process needing {tool}, which the server does not offer",
                              "4.2-refuse-missing-tool", probe("{name}", steps=steps))))
    if not missing:
        ctx.note("the server offers every optional tool a file can need: refusing one it lacks is not checked")
    with tempfile.TemporaryDirectory(prefix="conformance-import-") as tmp:
        done = import_files(ctx, Path(tmp), [(name, case.text.replace("{name}", name)) for name, case in cases])
    names = every_name(ctx)
    for (name, case), result in zip(cases, done, strict=True):
        with ctx.must(case.requirement):
            ctx.check(result.returncode != 0 and "Traceback" not in result.stderr,
                      f"the importer refuses {case.label}, and does not crash ({outcome(result)})")
            ctx.check(name not in names, f"a refused file ({case.label}) is not listed")


@scenario("importer:accept", importer=True)
def importer_accept(ctx: Context):
    """§2.1 and §6 rule 5 through the server's importer: a file of YAML 1.1 traps accepted and read
    by the core schema, `requires` shown, the same file twice one version, a changed file the next,
    a run keeping its version."""
    ctx.must("2.1-yaml-core")
    template = ctx.session.options.importer
    name = f"conformance-import-{uuid.uuid4().hex[:8]}"
    text = probe(name, head=TRAPS + "requires: { systems: [conformance-ledger, conformance-mail] }\n",
                 description="yes")
    with tempfile.TemporaryDirectory(prefix="conformance-import-") as tmp:
        folder = Path(tmp)
        result = run_importer(template, folder, name, text)
        ctx.check(result.returncode == 0, f"the importer accepts a file of YAML 1.1 traps ({outcome(result)})",
                  hard=True)
        item = listed(ctx, name)
        ctx.check(item is not None, f"list_processes lists {name} once published", hard=True)
        ctx.equal(item["description"], "yes", "description: yes is the text yes (YAML 1.2 core schema)")
        ctx.equal(item["inputs"], TRAP_INPUTS, "inputs exactly as the core schema reads them")
        with ctx.must("2.1-requires"):
            ctx.equal(item.get("requires"), {"systems": ["conformance-ledger", "conformance-mail"]},
                      "list_processes carries requires")
        ctx.must("6.5-immutability")
        version = item["version"]
        view = ctx.start(ctx.agent, name, {"level": "yes", "count": 15})
        again = run_importer(template, folder, name, text)
        ctx.check(again.returncode == 0, f"the same file imported again is no error ({outcome(again)})")
        ctx.equal(listed(ctx, name)["version"], version, "the same file again makes no new version")
        changed = run_importer(template, folder, name, text.replace(BODY, BODY + "\nA second version.\n"))
        ctx.check(changed.returncode == 0, f"a changed file is accepted ({outcome(changed)})")
        ctx.equal(listed(ctx, name)["version"], version + 1, "a changed file is the next version")
        kept = ctx.ok(ctx.agent, "get_run", runId=view["run"]["id"])
        ctx.equal((kept["run"]["version"], kept["body"]), (version, BODY), "a run keeps its version and body")
        newer = ctx.start(ctx.agent, name, {"level": "on", "count": 31})
        ctx.equal(newer["run"]["version"], version + 1, "a new run takes the new version")
        with ctx.must("2.1-yaml-core"):
            ctx.refused(ctx.agent, "start_run", "invalid", label="an input outside one_of read as YAML 1.2",
                        process=name, inputs={"level": True, "count": 15}, mode="test")
