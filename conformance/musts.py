"""The coverage table: every requirement of the spec (specification.md, tools.md, the profiles), in
the runner's own words, numbered by section; each either observed by checks (a scenario says
`ctx.must(id)` before the checks that observe it), observed only through `--importer`, or not
observable over the protocol, with why.

`keyword` is the RFC 2119 word when the spec's sentence uses one ("MUST", "MUST NOT"); the other
entries are rules the spec states in the indicative ("is refused", "returns"), which bind a server
just the same. `python -m conformance --coverage` prints the table and the counts.
"""

import ast
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Must:
    id: str
    section: str
    text: str
    keyword: str = ""  # MUST | MUST NOT | "" (a rule stated without the keyword)
    unobservable: str | None = None  # why the protocol cannot show it
    importer: bool = False  # observed only by handing the server files through --importer
    precondition: bool = False  # not a rule: what the runner needs before it can check any


MUSTS = [
    # ---------------------------------------------------------------- specification §2: the file
    Must("2.1-yaml-core", "spec §2.1", "frontmatter is read as YAML 1.2 with the core schema alone: yes, on, 1_000 and "
         "0b101 stay text", "MUST", importer=True),
    Must("2.1-refusals", "spec §2.1", "a file with an unknown field, a duplicate key, a bad name, no description or "
         "no steps is refused", importer=True),
    Must("2.1-requires", "spec §2.1, tools.md list_processes", "what `requires` names is shown where the process "
         "is offered: list_processes carries it"),
    Must("2.2-last-step-next", "spec §2.2", "a non-finish step at the end of the list names its next", "MUST",
         importer=True),
    Must("2.2-refuse-graph", "spec §2.2", "a file breaking the step rules (ids, kinds, targets, reachability, "
         "cycles, next on a finish, a list next on an approval) is refused", "MUST", importer=True),
    Must("2.2-waits", "spec §2.2, §3.5", "wait_until in the past goes on at once, a missing value fails the run; "
         "wait_for continues on its event"),
    Must("2.2-timeout", "spec §2.2", "a wait_for whose timeout passes continues at on_timeout, and an event that "
         "comes after it is not consumed by the wait; one before it is, and the run goes on at next"),
    Must("2.2-due", "spec §2.2", "a step whose due passed is overdue (run view and get_work) and its work stays open"),
    Must("2.2-due-notice", "spec §2.2", "when a due passes the server notifies the assignee and the operators",
         unobservable="a notice leaves by mail or chat, outside the protocol"),
    Must("2.3-no-rounding", "spec §2.3", "numbers are kept exactly as sent: big integers, decimals, huge exponents",
         "MUST NOT"),
    Must("2.3-fields", "spec §2.3, §6 rule 3", "every type is checked; required unless optional; null is no value; "
         "one_of (in lists too); undeclared fields refused"),
    Must("2.3-one-of-typed", "spec §2.3, §2.4", "a file whose one_of values are not of the field's type, or whose "
         "duration is not an integer and m, h or d, is refused", importer=True),
    # ---------------------------------------------------------------- §3: running
    Must("3.1-run-data", "spec §3.1", "run data keeps inputs and each completed step's fields and by; rework moves "
         "later completions to history and keeps the rejection note current"),
    Must("3.2-next-list", "spec §3.2", "a list next needs the chosen next and a reason, both recorded; on a "
         "single next it is not_accepted, on a decision other than completed invalid", "MUST"),
    Must("3.2-moving-on", "spec §3.2, §6 rule 1", "the first step is ready at start; a completion makes its next "
         "ready; an approval goes to next or on_reject; a finish ends the run"),
    Must("3.3-lease", "spec §3.3, tools.md claim, renew", "a claim lasts the lease; renew gives a new token and "
         "expiry and the old token stops; after the lease renew is stale"),
    Must("3.3-lease-lapse", "spec §3.3, tools.md renew", "when a lease ends the step is claimable at once, with the "
         "last progress and issues in its handoff; the lapsed token is stale for submit and renew; a lost claim "
         "replayed after it returns the original token"),
    Must("3.3-handoff", "spec §3.3", "a handoff carries the last progress, returned note and issues; null on a "
         "first attempt; a lapsed step is claimable at once"),
    Must("3.3-lost-replay", "spec §3.3", "a lost claim or submit replayed with its requestId returns the original, "
         "token included, even after the lease"),
    Must("3.3-escalate", "spec §3.3, tools.md escalate", "escalating loses the claim: the step waits on a person "
         "with the note, the token stops"),
    Must("3.3-test-mode", "spec §3.3", "a test run says so in every get_work item, claim and work item"),
    Must("3.3-agents-no-effects", "spec §3.3", "in a test run agents cause no real external effects", "MUST NOT",
         unobservable="an obligation on agents, not on the server"),
    Must("3.3-no-notifications", "spec §3.3", "in a test run the server sends no real notification", "MUST NOT",
         unobservable="notifications leave by mail or chat, outside the protocol"),
    Must("3.4-work-items", "spec §3.4", "a person step makes one shared work item; a person's get_work lists it "
         "with its decide call and decisions; the first decision wins"),
    Must("3.4-initiator", "spec §3.4", "initiator is the starter; an agent may not start a process that assigns "
         "a step to initiator"),
    Must("3.4-snapshot", "spec §3.4, §6 rule 4", "a decision with an outdated snapshot is stale; a decided item is "
         "already_decided before the snapshot is checked"),
    Must("3.5-states", "spec §3.5", "run and step states, and ended {by, at, note} once a run ends; nothing open "
         "after the end"),
    Must("3.5-run-ended", "spec §3.5", "every write to an ended run except a replay is conflict run_ended, "
         "checked first"),
    Must("3.5-cancel", "spec §3.5, tools.md cancel", "an operator cancels an active or waiting run with a reason; "
         "others may not"),
    Must("3.6-events", "spec §3.6, tools.md send_event", "events are held until their wait is ready, consumed "
         "oldest first, their data the wait's output; from agents and operators only"),
    # ---------------------------------------------------------------- §4: tools
    Must("4-envelope", "spec §4, tools.md", "every answer is {ok, data} or {ok, error: {code, message, issues?}} "
         "in the tool's shape"),
    Must("4-write-view", "spec §4", "a write answers after its automatic transitions: the view shows what it made "
         "ready"),
    Must("4-idempotent", "spec §4, §6", "a write replayed with its requestId returns the original and changes "
         "nothing; other arguments are conflict; a failed call is not recorded"),
    Must("4-concurrent", "spec §6", "the server resolves concurrent writes to one run: of two claims at once one "
         "wins, the other is claimed_by_other"),
    Must("4.1-describe", "spec §4.1, tools.md describe", "describe names the protocol, version, profiles, "
         "lease, person format, limits and every required tool"),
    Must("4.1-list-processes", "spec §4.1, tools.md list_processes", "list_processes pages every published "
         "process once with name, description, version and inputs as declared"),
    Must("4.1-decide-ui", "spec §4.1", "a UI for people applies the same rules as decide", "MUST",
         unobservable="a server's own UI is not the protocol"),
    Must("4.2-refuse-missing-tool", "spec §4.2", "a process needing a tool the server does not offer is refused "
         "at publication", "MUST", importer=True),
    Must("4.3-errors", "spec §4.3, tools.md", "each refusal has the spec's code: invalid, not_accepted, stale, "
         "conflict, forbidden, not_found"),
    Must("5-evidence", "spec §5", "a file item names an upload of this organization and carries its hash and a "
         "url in run data; a link is recorded as stated"),
    # ---------------------------------------------------------------- §6: guarantees
    Must("6.1-order", "spec §6 rule 1", "work exists only along the declared steps: a walk of every route "
         "completes the predicted steps and outcome"),
    Must("6.2-one-actor", "spec §6 rule 2", "a claimed step is the caller's alone; a token of a replaced or "
         "ended claim is stale; tokens never appear in get_run"),
    Must("6.3-acceptance", "spec §6 rule 3", "a submission breaking rules changes nothing and gets every issue "
         "at once; the run data cap bounds inputs, submissions and held events"),
    Must("6.4-people-decide", "spec §6 rule 4", "only a person completes a task, approval or escalation; decide "
         "from an agent is refused"),
    Must("6.4-credential", "spec §6 rule 4", "a person's credential presented by an agent client is not taken "
         "unless authentication shows it is that person", "MUST NOT",
         unobservable="who holds a credential is settled by authentication, outside the protocol"),
    Must("6.5-immutability", "spec §6 rule 5", "publishing the same file again makes no new version; a changed "
         "file is the next version; a run keeps its version", importer=True),
    Must("6.5-content-hash", "spec §6 rule 5", "the content hash is SHA-256 over RFC 8785 JSON of the "
         "frontmatter, a newline and the body",
         unobservable="no tool returns a version's content hash"),
    # ---------------------------------------------------------------- tools.md
    Must("tools-get-work", "tools.md get_work", "get_work lists only steps the caller may claim", "MUST NOT"),
    Must("tools-paging", "tools.md get_work, list_runs", "lists are oldest first and paged, each item once; a "
         "bad limit or cursor is invalid"),
    Must("tools-claim", "tools.md claim", "claim gives token, expiry, step, body and data; refuses with "
         "claimed_by_you, claimed_by_other, not_ready, forbidden, not_found"),
    Must("tools-start-run", "tools.md start_run", "start_run checks inputs (invalid with issues), takes the "
         "latest version, defaults to live"),
    Must("tools-submit", "tools.md submit", "submit's issues are worded as tools.md words them; a summary is "
         "1-2000 characters"),
    Must("tools-upload", "tools.md upload", "upload answers the id, SHA-256 and size; over maxUploadBytes is "
         "refused"),
    Must("tools-decide", "tools.md decide", "decide checks in order run_ended, already_decided, not_found, "
         "stale, forbidden, not_accepted; the decision's requirements and invalid combinations"),
    Must("tools-list-runs", "tools.md list_runs", "list_runs filters by process, state and input equality"),
    # ---------------------------------------------------------------- profiles
    Must("parallel-run", "parallel-1 §3", "fork makes every entry ready in one write; a sibling stales a "
         "snapshot; rework stays in its branch; the last join goes on; a rejection into the step rewinds it"),
    Must("parallel-refuse", "parallel-1, spec §8", "a server without parallel-1 refuses a parallel file at "
         "publication", importer=True),
    Must("check-run", "check-1 §3, §5", "pass completes and records the verdict; unsure holds the candidate for "
         "a person; fail is not_accepted with check issues and handoff.check; describe lists the limits"),
    Must("check-worst", "check-1 §2, §3", "each answer is judged by the question's thresholds (the file's, else "
         "describe.limits'); the verdict is the worst question: unsure outranks fail, fail outranks pass"),
    Must("check-material", "check-1 §2", "the evaluator sees the step's instructions, the body, the run data, the "
         "submission and each question"),
    Must("check-refuse", "check-1, spec §8", "a server without check-1 refuses a check file at publication",
         importer=True),
    # ---------------------------------------------------------------- the runner's own
    Must("runner-published", "runner", "the runner's processes are published (run the --print-publish lines)",
         precondition=True),
]
BY_ID = {m.id: m for m in MUSTS}
MODULES = ("scenarios.py", "walk.py", "core.py", "session.py", "importer.py")


def observers() -> dict[str, list[str]]:
    """requirement id -> the functions whose checks observe it, read from the runner's source:
    `ctx.must("id")`, `must="id"`, or the constants core.ENVELOPE and session.PUBLISHED."""
    constants = {"ENVELOPE": "4-envelope", "PUBLISHED": "runner-published"}
    found: dict[str, list[str]] = {}
    for module in MODULES:
        path = HERE / module
        if not path.exists():
            continue
        tree = ast.parse(path.read_text())
        # the functions, and the module's own top level (importer.py's REFUSALS) under the module's name
        top = ast.Module(body=[n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.ClassDef)],
                         type_ignores=[])
        top.name = path.stem
        for function in [top, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))]:
            for node in ast.walk(function):
                for ident in _requirement_ids(node, constants):
                    names = found.setdefault(ident, [])
                    if function.name not in names:
                        names.append(function.name)
    return found


def _requirement_ids(node, constants) -> list[str]:
    if not isinstance(node, ast.Call):
        return []
    values = []
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    if name in ("must", "observes") and node.args:
        values.append(node.args[0])
    if name == "Refusal" and len(node.args) > 1:  # importer.py: a file to refuse, and what refusing it observes
        values.append(node.args[1])
    values += [kw.value for kw in node.keywords if kw.arg == "must"]
    ids = []
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            ids.append(value.value)
        elif isinstance(value, ast.Name) and value.id in constants:
            ids.append(constants[value.id])
    return ids


def status(must: Must, seen: dict[str, list[str]], importer: bool = True) -> str:
    if must.unobservable:
        return "not observable"
    if must.importer:
        return ("with --importer" if importer else "needs --importer") if seen.get(must.id) else "NOT MAPPED"
    return "checked" if seen.get(must.id) else "NOT MAPPED"


def scenario_names() -> dict[str, str]:
    """function name -> how the report names it (a scenario's name; the walks' prefixes)."""
    from .session import SCENARIOS

    names = {entry.run.__name__: entry.name for entry in SCENARIOS}
    names.update(drive="route:*, spec:*", _record="every call", run_one="every scenario")
    return names


def table(importer: bool = True) -> str:
    names = scenario_names()
    seen = {ident: [names.get(f, f) for f in functions] for ident, functions in observers().items()}
    width = max(len(m.id) for m in MUSTS)
    lines = [f"{'id':<{width}}  {'keyword':<8}  {'status':<16}  requirement (section) -> checked by / why not"]
    for m in MUSTS:
        verdict = status(m, seen, importer)
        where = m.unobservable or ", ".join(seen.get(m.id, [])) or "-"
        lines.append(f"{m.id:<{width}}  {m.keyword or 'rule':<8}  {verdict:<16}  {m.text} ({m.section}) -> {where}")
    counts = {}
    for m in MUSTS:
        if not m.precondition:
            counts[status(m, seen, importer)] = counts.get(status(m, seen, importer), 0) + 1
    keyworded = [m for m in MUSTS if m.keyword]
    lines += ["", f"{sum(counts.values())} requirements ({len(keyworded)} with MUST or MUST NOT): "
              + ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))]
    return "\n".join(lines)
