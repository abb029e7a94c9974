"""Validate a parsed PROCESS.md frontmatter (spec §2, revision 10, profiles parallel-1 and check-1).

`validate` reports every issue at once and never raises, whatever it is given. Each issue is one
line `<where>: <what>`:

- top level: a path, `name: ...`, `inputs.amount: ...`, `requires.systems[1]: ...`, `foo: unknown field`;
- in a step: `steps[3] (approve): <sentence>` (just `steps[3]: ...` when the step has no string id),
  the sentence starting with the key it is about: `on_reject names unknown step "chek"`;
- field specs inside a step: `steps[0] (check_vendor): output.cleared: unknown type "money"`;
- whole-graph cycles: `steps: next/on_timeout edges form a cycle: a → b → a`.

Profile constructs (`parallel:`, `join`, `check:`, `advisory:`) used without the profile being
offered give one line per step and profile, `needs profile parallel-1, which this server does not
offer`, and nothing else that the construct alone would cause.
"""

import re

from . import fields
from .fields import show

PARALLEL_PROFILE = "parallel-1"
CHECK_PROFILE = "check-1"
PROFILE_KEYS = {"parallel": PARALLEL_PROFILE, "check": CHECK_PROFILE, "advisory": CHECK_PROFILE}

NAME_PATTERN = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
STEP_ID_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,63}")
# Role names are local to a process: lowercase words joined by "-" or "_", never a dot (a dot makes a path).
ROLE_PATTERN = re.compile(r"[a-z0-9]+([-_][a-z0-9]+)*")
DURATION_PATTERN = re.compile(r"[0-9]+[mhd]")
MAX_NAME_LENGTH = 64

TOP_LEVEL_KEYS = ("name", "description", "inputs", "requires", "steps")
CORE_KINDS = ("agent", "task", "approve", "wait", "wait_until", "wait_for", "finish")
KINDS = CORE_KINDS + ("parallel",)
TEXT_KINDS = ("agent", "task", "approve", "finish")
# Which kinds each optional key applies to (spec §2.2, parallel §1, check §2).
OPTIONAL_KEYS = {
    "output": ("agent", "task"),
    "evidence": ("agent", "task"),
    "next": ("agent", "task", "approve", "wait", "wait_until", "wait_for", "parallel"),
    "person": ("task", "approve"),
    "on_reject": ("approve",),
    "due": ("agent", "task", "approve"),
    "timeout": ("wait_for",),
    "on_timeout": ("wait_for",),
    "check": ("agent", "task"),
    "advisory": ("agent", "task"),
}
STEP_KEYS = ("id",) + KINDS + tuple(OPTIONAL_KEYS)
NEEDS_PERSON = ("task", "approve")
ROUTE_LIST_KINDS = ("agent", "task")
EVIDENCE_KINDS = ("file", "link")
ROUTE_KEYS = ("to", "when")
JOIN = "join"
DURATION_HINT = "(use e.g. 30m, 4h, 3d)"
STEP_ID_HINT = '(a lowercase letter, then up to 63 lowercase letters, digits, "_" or "-")'
NAME_HINT = "(lowercase letters and digits in words joined by single hyphens, at most 64 characters)"
ROLE_HINT = '(lowercase letters and digits in words joined by "-" or "_")'


def validate(frontmatter: dict, *, folder_name: str | None = None, profiles: frozenset[str] = frozenset()) -> list[str]:
    """Every issue in the frontmatter, in a stable order; empty when it may be published."""
    if not isinstance(frontmatter, dict):
        return ["frontmatter: must be a mapping of fields (name, description, steps ...)"]
    try:
        return _Checker(frontmatter, folder_name, frozenset(profiles or ())).issues()
    except RecursionError:
        return ["frontmatter: nested too deeply to check"]


# ---------------------------------------------------------------- public helpers


def step_kind(step: dict) -> str | None:
    """The step's kind key, or None when it has none or several."""
    if not isinstance(step, dict):
        return None
    found = [kind for kind in KINDS if kind in step]
    return found[0] if len(found) == 1 else None


def step_index(steps) -> dict[str, int]:
    """Step id -> position of its first occurrence."""
    index: dict[str, int] = {}
    for position, step in enumerate(steps if isinstance(steps, list) else []):
        step_id = step.get("id") if isinstance(step, dict) else None
        if isinstance(step_id, str):
            index.setdefault(step_id, position)
    return index


def role_names(frontmatter: dict) -> list[str]:
    """Role names used in `person:` (not `initiator`, not paths), in first-use order, each once."""
    steps = frontmatter.get("steps") if isinstance(frontmatter, dict) else None
    roles: list[str] = []
    for step in steps if isinstance(steps, list) else []:
        person = step.get("person") if isinstance(step, dict) else None
        if isinstance(person, str) and person != "initiator" and "." not in person and person not in roles:
            roles.append(person)
    return roles


def next_routes(steps: list[dict], index: int) -> list[dict]:
    """The step's `next` as routes `[{"to": id, "when"?: text}]`: the explicit next (a string or a
    list) or else the following step; [] for a finish or a last step without next."""
    step = steps[index]
    if not isinstance(step, dict) or step_kind(step) == "finish":
        return []
    if "next" not in step:
        following = steps[index + 1] if index + 1 < len(steps) else None
        return [{"to": following["id"]}] if isinstance(following, dict) and "id" in following else []
    value = step["next"]
    routes = value if isinstance(value, list) else [value]
    return [_route(route) for route in routes if isinstance(route, (str, dict))]


def _route(route) -> dict:
    if isinstance(route, str):
        return {"to": route}
    return {key: route[key] for key in ROUTE_KEYS if key in route}


def parallel_branches(frontmatter: dict) -> dict[str, dict[str, list[str]]]:
    """For a valid process: parallel step id -> branch entry id -> the branch's step ids
    (entry first), following next and on_timeout up to join (parallel §2)."""
    checker = _Checker(frontmatter, None, frozenset({PARALLEL_PROFILE}))
    rules = _ParallelRules(checker)
    rules.assign_branches()
    name = checker.name_of
    result: dict[str, dict[str, list[str]]] = {name(p): {} for p in rules.parallel_steps}
    for (p, entry), members in rules.branches.items():
        result[name(p)][name(entry)] = [name(member) for member in members]
    return result


# ---------------------------------------------------------------- graph primitives


def _next_targets(step: dict) -> list[str]:
    """The step ids named by a step's explicit next, ignoring malformed routes."""
    value = step.get("next")
    routes = value if isinstance(value, list) else [value]
    targets = []
    for route in routes:
        if isinstance(route, dict):
            route = route.get("to")
        if isinstance(route, str):
            targets.append(route)
    return targets


def _resolve(name: str, ids: dict[str, int], join_reserved: bool):
    if name == JOIN and join_reserved:
        return JOIN
    return ids.get(name)


def _closure(start: int, targets_of, may_enter=None) -> list[int]:
    """Steps reachable from start (start included) in discovery order, entering a target only
    when may_enter(target) allows it. JOIN is an end, never a step."""
    seen, order, todo = {start}, [start], [start]
    while todo:
        for target in targets_of(todo.pop()):
            if target != JOIN and target not in seen and (may_enter is None or may_enter(target)):
                seen.add(target)
                order.append(target)
                todo.append(target)
    return order


# ---------------------------------------------------------------- the checker


class _Checker:
    """One validation pass. Local rules first, step by step, then rules about the whole graph."""

    def __init__(self, frontmatter: dict, folder_name: str | None, profiles: frozenset[str]):
        self.doc = frontmatter
        self.folder_name = folder_name
        self.parallel_offered = PARALLEL_PROFILE in profiles
        self.check_offered = CHECK_PROFILE in profiles
        raw_steps = frontmatter.get("steps")
        self.steps: list = raw_steps if isinstance(raw_steps, list) else []
        self.ids = step_index(self.steps)
        self.kinds = [step_kind(step) for step in self.steps]
        self.uses_parallel = any(isinstance(step, dict) and "parallel" in step for step in self.steps)
        # "join" is a reserved next value once a process uses parallel, or when no step has that id.
        self.join_reserved = self.uses_parallel or JOIN not in self.ids
        inputs = frontmatter.get("inputs")
        self.inputs = inputs if isinstance(inputs, dict) else {}
        self.out: list[str] = []
        self.branch_of: dict[int, list[tuple[int, int]]] = {}  # member -> [(parallel step, entry)]
        self.declared = [self.declared_edges(index) for index in range(len(self.steps))]

    def issues(self) -> list[str]:
        self.check_top_level()
        for index, step in enumerate(self.steps):
            if isinstance(step, dict):
                self.check_step(index, step)
            else:
                self.out.append(f"steps[{index}]: must be a mapping")
        if self.parallel_offered:
            _ParallelRules(self).check()
        self.check_graph()
        return self.out

    # ------------------------------------------------------------ helpers

    def label(self, index: int) -> str:
        step_id = self.steps[index].get("id") if isinstance(self.steps[index], dict) else None
        return f"steps[{index}] ({step_id})" if isinstance(step_id, str) and step_id else f"steps[{index}]"

    def add(self, index: int, message: str) -> None:
        self.out.append(f"{self.label(index)}: {message}")

    def name_of(self, index: int) -> str:
        step_id = self.steps[index].get("id") if isinstance(self.steps[index], dict) else None
        return step_id if isinstance(step_id, str) and step_id else f"steps[{index}]"

    def is_step(self, index) -> bool:
        return isinstance(index, int) and 0 <= index < len(self.steps) and isinstance(self.steps[index], dict)

    # ------------------------------------------------------------ top level

    def check_top_level(self) -> None:
        self.check_name()
        self.check_description()
        if "inputs" in self.doc:
            self.out += _field_specs_issues(self.doc["inputs"], "inputs", ": ")
        if "requires" in self.doc:
            self.check_requires(self.doc["requires"])
        self.out += [f"{key}: unknown field" for key in self.doc if key not in TOP_LEVEL_KEYS]
        if "steps" not in self.doc:
            self.out.append("steps: missing")
        elif not isinstance(self.doc["steps"], list) or not self.doc["steps"]:
            self.out.append("steps: must be a non-empty list of steps")

    def check_name(self) -> None:
        if "name" not in self.doc:
            self.out.append("name: missing")
            return
        name = self.doc["name"]
        if not isinstance(name, str):
            self.out.append("name: must be a string")
            return
        if not _is_name(name):
            self.out.append(f"name: {show(name)} is not a valid name {NAME_HINT}")
        if self.folder_name is not None and name != self.folder_name:
            self.out.append(f"name: {show(name)} does not match the folder name {show(self.folder_name)}")

    def check_description(self) -> None:
        if "description" not in self.doc:
            self.out.append("description: missing")
        elif not _is_text(self.doc["description"]):
            self.out.append("description: must be a non-empty string")

    def check_requires(self, requires) -> None:
        if not isinstance(requires, dict):
            self.out.append("requires: must be a mapping with systems")
            return
        self.out += [f"requires.{key}: unknown field" for key in requires if key != "systems"]
        if "systems" not in requires:
            self.out.append("requires.systems: missing")
            return
        systems = requires["systems"]
        if not isinstance(systems, list) or not systems:
            self.out.append("requires.systems: must be a non-empty list of system names")
            return
        seen = set()
        for position, system in enumerate(systems):
            where = f"requires.systems[{position}]"
            if not isinstance(system, str) or not _is_name(system):
                self.out.append(f"{where}: {show(system)} is not a valid system name {NAME_HINT}")
            elif system in seen:
                self.out.append(f"{where}: {show(system)} is listed twice")
            else:
                seen.add(system)

    # ------------------------------------------------------------ one step

    def check_step(self, index: int, step: dict) -> None:
        kind = self.kinds[index]
        self.check_id(index, step)
        self.check_kind_keys(index, step)
        for key in step:
            if key not in STEP_KEYS:
                self.add(index, f"unknown field {_show_key(key)}")
        self.check_profiles_offered(index, step)
        if kind is not None and not self.skipped(kind):
            self.check_key_placement(index, step, kind)
            self.check_kind_value(index, step, kind)
        if kind in NEEDS_PERSON and "person" not in step:
            self.add(index, f"person is required on {_a(kind)} step")
        for key, check in self.value_checks():
            if key in step and self.applies(key, kind):
                check(index, step, kind)

    def value_checks(self):
        return (
            ("person", self.check_person),
            ("output", self.check_output),
            ("evidence", self.check_evidence),
            ("next", self.check_next),
            ("on_reject", self.check_target_key("on_reject")),
            ("on_timeout", self.check_target_key("on_timeout")),
            ("due", self.check_duration_key("due")),
            ("timeout", self.check_duration_key("timeout")),
            ("check", self.check_check),
            ("advisory", self.check_advisory),
        )

    def skipped(self, kind: str) -> bool:
        """A parallel step without the profile is refused as a whole, not key by key."""
        return kind == "parallel" and not self.parallel_offered

    def applies(self, key: str, kind: str | None) -> bool:
        """Whether a key's value is checked: its profile is offered and it is allowed on the kind."""
        if PROFILE_KEYS.get(key) == CHECK_PROFILE and not self.check_offered:
            return False
        if kind is None:
            return True
        return not self.skipped(kind) and kind in OPTIONAL_KEYS[key]

    def check_id(self, index: int, step: dict) -> None:
        if "id" not in step:
            self.add(index, "id is missing")
            return
        step_id = step["id"]
        if not isinstance(step_id, str):
            self.add(index, "id must be a string")
            return
        if not STEP_ID_PATTERN.fullmatch(step_id):
            self.add(index, f"id {show(step_id)} is not a valid step id {STEP_ID_HINT}")
        first = self.ids[step_id]
        if first != index:
            self.add(index, f"duplicate id {show(step_id)}, also steps[{first}]")
        elif step_id == JOIN and self.uses_parallel and self.parallel_offered:
            self.add(index, 'id "join" is reserved: a process that uses parallel ends its branches with join')

    def check_kind_keys(self, index: int, step: dict) -> None:
        found = [kind for kind in KINDS if kind in step]
        if not found:
            self.add(index, f"has no kind key (use one of {', '.join(CORE_KINDS)})")
        elif len(found) > 1:
            self.add(index, f"has several kind keys ({', '.join(found)}); a step has exactly one")

    def check_profiles_offered(self, index: int, step: dict) -> None:
        needed = []
        ends_with_join = any(target == JOIN for _, target in self.declared[index])
        if "parallel" in step or ends_with_join:
            needed.append(PARALLEL_PROFILE)
        if "check" in step or "advisory" in step:
            needed.append(CHECK_PROFILE)
        offered = {PARALLEL_PROFILE: self.parallel_offered, CHECK_PROFILE: self.check_offered}
        for profile in needed:
            if not offered[profile]:
                self.add(index, f"needs profile {profile}, which this server does not offer")

    def check_key_placement(self, index: int, step: dict, kind: str) -> None:
        for key in step:
            if key not in OPTIONAL_KEYS or kind in OPTIONAL_KEYS[key]:
                continue
            if PROFILE_KEYS.get(key) == CHECK_PROFILE and not self.check_offered:
                continue  # already refused as a whole: the profile is missing
            self.add(index, f"{show(key)} is not allowed on {_a(kind)} step")

    def check_kind_value(self, index: int, step: dict, kind: str) -> None:
        value = step[kind]
        if kind in TEXT_KINDS:
            if not _is_text(value):
                self.add(index, f"{kind} must be a non-empty string")
        elif kind == "wait":
            self.check_duration(index, "wait", value)
        elif kind == "wait_until":
            problem = self.path_problem(value, "datetime")
            if problem:
                self.add(index, f"wait_until {problem}")
        elif kind == "wait_for":
            if not isinstance(value, str) or not STEP_ID_PATTERN.fullmatch(value):
                self.add(index, f"wait_for {show(value)} is not a valid event name {STEP_ID_HINT}")
        elif kind == "parallel":
            self.check_parallel_value(index, value)

    def check_parallel_value(self, index: int, value) -> None:
        if not isinstance(value, list) or len(value) < 2:
            self.add(index, "parallel must list two or more step ids (the branch entries)")
            return
        for position, entry in enumerate(value):
            if not isinstance(entry, str):
                self.add(index, f"parallel[{position}] must be a step id")
        entries = [entry for entry in value if isinstance(entry, str)]
        for entry in dict.fromkeys(entries):
            if entry not in self.ids:
                self.add(index, f"parallel names unknown step {show(entry)}")
            elif self.ids[entry] == index:
                self.add(index, f"parallel names its own step {show(entry)}")
            elif self.kinds[self.ids[entry]] == "finish":
                self.add(index, f"parallel names {show(entry)}, a finish step; a branch cannot end the run")
        for entry in _repeats(entries):
            self.add(index, f"parallel lists {show(entry)} twice")

    def check_person(self, index: int, step: dict, kind) -> None:
        person = step["person"]
        if not isinstance(person, str):
            self.add(index, "person must be a role name, initiator, or a path such as inputs.manager")
        elif "." in person:
            problem = self.path_problem(person, "person")
            if problem:
                self.add(index, f"person {problem}")
        elif person != "initiator" and not _is_role(person):
            self.add(index, f"person {show(person)} is not a valid role name {ROLE_HINT}")

    def path_problem(self, path, wanted: str) -> str | None:
        """Why `path` does not name a declared field of type `wanted` (spec §2.2 `person`)."""
        if not isinstance(path, str):
            return f"must be a path such as inputs.<field> naming a {wanted} field"
        spec, problem = self.field_at(path)
        if problem:
            return f"{show(path)} {problem}"
        actual = fields.field_type(spec)
        if actual is not None and actual != wanted:  # an invalid spec is reported where it is declared
            return f"{show(path)} names {_a(actual)} field, not {_a(wanted)} field"
        return None

    def field_at(self, path: str):
        """(spec, None) for a path to a declared field, else (None, problem)."""
        if path.startswith("inputs."):
            name = path.removeprefix("inputs.")
            if name not in self.inputs:
                return None, f"names undeclared input field {show(name)}"
            return self.inputs[name], None
        parts = path.split(".", 3)
        if len(parts) != 4 or parts[0] != "steps" or parts[2] != "output" or not parts[1] or not parts[3]:
            return None, "is not a path (use inputs.<field> or steps.<id>.output.<field>)"
        step_id, name = parts[1], parts[3]
        if step_id not in self.ids:
            return None, f"names unknown step {show(step_id)}"
        output = self.steps[self.ids[step_id]].get("output")
        if not isinstance(output, dict) or name not in output:
            return None, f"names undeclared output field {show(name)} of step {show(step_id)}"
        return output[name], None

    def check_output(self, index: int, step: dict, kind) -> None:
        for issue in _field_specs_issues(step["output"], "output", " "):
            self.add(index, issue)

    def check_evidence(self, index: int, step: dict, kind) -> None:
        evidence = step["evidence"]
        if not isinstance(evidence, list):
            self.add(index, "evidence must be a list of evidence kinds (file, link)")
            return
        for position, item in enumerate(evidence):
            if item not in EVIDENCE_KINDS:
                self.add(index, f"evidence[{position}] {show(item)} is not an evidence kind (use file or link)")
        for item in _repeats([item for item in evidence if item in EVIDENCE_KINDS]):
            self.add(index, f"evidence lists {show(item)} twice")

    def check_next(self, index: int, step: dict, kind) -> None:
        value = step["next"]
        if isinstance(value, str):
            self.check_target(index, "next", value)
            return
        if not isinstance(value, list):
            self.add(index, "next must be a step id or a list of routes")
            return
        if kind is not None and kind not in ROUTE_LIST_KINDS:
            self.add(index, f"next can be a list only on agent and task steps, not on {_a(kind)} step")
        if len(value) < 2:
            self.add(index, "next must list two or more routes (or name one step id)")
        targets = [self.check_route(index, position, route) for position, route in enumerate(value)]
        targets = [target for target in targets if target is not None]
        for target in dict.fromkeys(targets):
            self.check_target(index, "next", target)
        for target in _repeats(targets):
            self.add(index, f"next lists {show(target)} twice")

    def check_route(self, index: int, position: int, route) -> str | None:
        """The route's target when it is well formed; reports what is not."""
        where = f"next[{position}]"
        if isinstance(route, str):
            return route
        if not isinstance(route, dict):
            self.add(index, f"{where} must be a step id or {{ to, when }}")
            return None
        for key in route:
            if key not in ROUTE_KEYS:
                self.add(index, f"{where} has unknown field {_show_key(key)}")
        if "when" in route and not _is_text(route["when"]):
            self.add(index, f'{where} "when" must be a non-empty string')
        if "to" not in route:
            self.add(index, f'{where} is missing "to"')
            return None
        if not isinstance(route["to"], str):
            self.add(index, f'{where} "to" must be a step id')
            return None
        return route["to"]

    def check_target(self, index: int, key: str, target: str) -> None:
        if target == JOIN and self.join_reserved and key in ("next", "on_timeout"):
            return  # the reserved word; parallel rules (or the missing profile) cover it
        if target not in self.ids:
            self.add(index, f"{key} names unknown step {show(target)}")

    def check_target_key(self, key: str):
        def check(index: int, step: dict, kind) -> None:
            if isinstance(step[key], str):
                self.check_target(index, key, step[key])
            else:
                self.add(index, f"{key} must be a step id")

        return check

    def check_duration_key(self, key: str):
        return lambda index, step, kind: self.check_duration(index, key, step[key])

    def check_duration(self, index: int, key: str, value) -> None:
        if not (isinstance(value, str) and DURATION_PATTERN.fullmatch(value)):
            self.add(index, f"{key} {show(value)} is not a duration {DURATION_HINT}")

    def check_check(self, index: int, step: dict, kind) -> None:
        for issue in check_issues(step["check"]):
            self.add(index, issue)

    def check_advisory(self, index: int, step: dict, kind) -> None:
        if not isinstance(step["advisory"], bool):
            self.add(index, "advisory must be true or false")
        elif "check" not in step:
            self.add(index, "advisory is allowed only beside check")

    # ------------------------------------------------------------ the whole graph

    def edges(self, index: int) -> list[tuple[str, object]]:
        """(edge kind, target index or JOIN) for every edge leaving a step (spec §2.2): next,
        default (the following step), on_timeout, on_reject and fork (a parallel step's entries)."""
        return self.declared[index] + self.default_edge(index)

    def declared_edges(self, index: int) -> list[tuple[str, object]]:
        step, kind = self.steps[index], self.kinds[index]
        if not isinstance(step, dict):
            return []
        result: list[tuple[str, object]] = []
        if self.has_key(step, kind, "next"):
            result += [("next", self.resolve(name)) for name in _next_targets(step)]
        if self.has_key(step, kind, "on_timeout") and isinstance(step["on_timeout"], str):
            result.append(("on_timeout", self.resolve(step["on_timeout"])))
        if self.has_key(step, kind, "on_reject") and isinstance(step["on_reject"], str):
            result.append(("on_reject", self.ids.get(step["on_reject"])))  # join is never an on_reject
        if kind == "parallel" and isinstance(step["parallel"], list):
            forks = [self.ids.get(entry) for entry in step["parallel"] if isinstance(entry, str)]
            result += [("fork", entry) for entry in forks if entry != index]
        unique = dict.fromkeys((label, target) for label, target in result if target is not None)
        return list(unique)  # a route named twice is one edge (and one "lists twice" issue)

    def default_edge(self, index: int) -> list[tuple[str, object]]:
        step, kind = self.steps[index], self.kinds[index]
        if index + 1 >= len(self.steps) or kind == "finish" or self.branch_of.get(index):
            return []  # inside a branch the following-step default does not apply
        if isinstance(step, dict) and self.has_key(step, kind, "next"):
            return []
        # A step that is not a mapping is already refused; the run flows past it so nothing more is reported.
        return [("default", index + 1)]

    def has_key(self, step: dict, kind, key: str) -> bool:
        return key in step and (kind is None or kind in OPTIONAL_KEYS[key])

    def resolve(self, name: str):
        return _resolve(name, self.ids, self.join_reserved)

    def check_graph(self) -> None:
        if not self.steps or not isinstance(self.steps[0], dict):
            return
        self.check_last_step()
        self.check_reachable()
        self.check_acyclic()

    def check_last_step(self) -> None:
        last = len(self.steps) - 1
        step, kind = self.steps[last], self.kinds[last]
        if not isinstance(step, dict) or kind in (None, "finish") or "next" in step:
            return
        if not self.branch_of.get(last):  # a branch step says so in its own, sharper line
            self.add(last, "is the last step, so it must name next")

    def check_reachable(self) -> None:
        reached = set(_closure(0, lambda i: [target for _, target in self.edges(i)]))
        for index, step in enumerate(self.steps):
            if isinstance(step, dict) and index not in reached:
                self.add(index, "not reachable from the first step")

    def check_acyclic(self) -> None:
        """Following next (explicit or default) and on_timeout only, no step is visited twice.
        on_reject goes back by design; fork and join edges are exempt (parallel §2)."""
        forward = ("next", "default", "on_timeout")
        graph = {
            index: [target for label, target in self.edges(index) if label in forward and target != JOIN]
            for index in range(len(self.steps))
        }
        for cycle in _cycles(graph):
            names = [self.name_of(index) for index in cycle + cycle[:1]]
            self.out.append(f"steps: next/on_timeout edges form a cycle: {' → '.join(names)}")


class _ParallelRules:
    """parallel-1 §2 publication rules. A branch is its entry plus every step reachable from it by
    explicit next and on_timeout, stopping at join.

    To say which side of a wrong edge is at fault, steps are sorted first: the main line is what
    the first step reaches without entering a branch entry or a step that leads to join."""

    def __init__(self, checker: _Checker):
        self.c = checker
        self.parallel_steps = [index for index, kind in enumerate(checker.kinds) if kind == "parallel"]
        self.entries = {p: self.entries_of(p) for p in self.parallel_steps}
        self.leads_to_join = self.find_leads_to_join()
        self.main_line = self.find_main_line()
        self.branches: dict[tuple[int, int], list[int]] = {}  # (parallel step, entry) -> members

    def check(self) -> None:
        self.assign_branches()
        members = sorted(self.c.branch_of)
        for index in members:
            self.check_member(index)
        self.check_reaches_join(members)
        for index, step in enumerate(self.c.steps):
            if isinstance(step, dict) and index not in self.c.branch_of:
                self.check_outside_step(index)

    # ------------------------------------------------------------ sorting steps

    def assign_branches(self) -> None:
        """A branch: its entry plus what explicit next and on_timeout reach, up to join, entering no
        step a branch may not go to (edge_problem)."""
        for p in self.parallel_steps:
            for entry in self.entries[p]:
                members = _closure(entry, lambda i: self.branch_targets(i, p))
                self.branches[(p, entry)] = members
                for member in members:
                    self.c.branch_of.setdefault(member, []).append((p, entry))

    def entries_of(self, p: int) -> list[int]:
        value = self.c.steps[p]["parallel"]
        found = []
        for entry in value if isinstance(value, list) else []:
            index = self.c.ids.get(entry) if isinstance(entry, str) else None
            if index is not None and index != p and index not in found and self.c.kinds[index] != "finish":
                found.append(index)
        return found

    def explicit(self, index: int) -> list:
        """Targets of the step's own next and on_timeout (never the following-step default)."""
        return [target for label, target in self.c.declared[index] if label in ("next", "on_timeout")]

    def find_leads_to_join(self) -> set[int]:
        """Steps from which next (explicit or default) and on_timeout edges reach join."""
        leads: set[int] = set()
        changed = True
        while changed:
            changed = False
            for index in range(len(self.c.steps)):
                targets = [t for label, t in self.c.edges(index) if label in ("next", "default", "on_timeout")]
                if index not in leads and any(t == JOIN or t in leads for t in targets):
                    leads.add(index)
                    changed = True
        return leads

    def find_main_line(self) -> set[int]:
        all_entries = {entry for entries in self.entries.values() for entry in entries}

        def targets(index: int) -> list:
            edges = self.c.edges(index)
            if self.c.kinds[index] == "parallel":
                return [t for label, t in edges if label in ("next", "default")]
            return [t for label, t in edges if label != "fork"]

        def may_enter(target: int) -> bool:
            return target not in self.leads_to_join and target not in all_entries

        return set(_closure(0, targets, may_enter)) if self.c.is_step(0) else set()

    def edge_problem(self, target, p: int) -> str | None:
        """Why a branch step of parallel step p may not go to target; None when it may."""
        if target == JOIN:
            return None
        if target == p:
            return f"its own parallel step {show(self.c.name_of(p))}; a branch ends with join"
        if self.c.kinds[target] == "finish":
            return f"the finish step {show(self.c.name_of(target))}; a branch ends with join, not a finish"
        if target in self.main_line:
            return f"{show(self.c.name_of(target))}, which is outside its branch (end the branch with next: join)"
        return None

    def branch_targets(self, index: int, p: int) -> list:
        return [t for t in self.explicit(index) if self.edge_problem(t, p) is None]

    # ------------------------------------------------------------ rules for branch steps

    def check_member(self, index: int) -> None:
        c = self.c
        branches = c.branch_of[index]
        p = branches[0][0]
        parallel_name = show(c.name_of(p))
        if len(branches) > 1:
            entries = " and ".join(show(c.name_of(entry)) for _, entry in branches)
            c.add(index, f"is in more than one branch (entered at {entries})")
        if c.kinds[index] == "parallel":
            c.add(index, f"is a parallel step inside a branch of {parallel_name}; parallel-1 does not nest")
        step = c.steps[index]
        if "next" not in step:
            c.add(index, f"is in a branch of {parallel_name}, so it must name next explicitly (join ends the branch)")
        for label, target in c.declared[index]:
            problem = self.edge_problem(target, p) if label in ("next", "on_timeout") else None
            if problem:
                c.add(index, f"{label} names {problem}")
        self.check_member_reject(index, step, parallel_name)

    def check_member_reject(self, index: int, step: dict, parallel_name: str) -> None:
        target = step.get("on_reject")
        if not isinstance(target, str) or target not in self.c.ids:
            return
        own = {entry for _, entry in self.c.branch_of[index]}
        target_branches = {entry for _, entry in self.c.branch_of.get(self.c.ids[target], [])}
        if not own & target_branches:
            self.c.add(index, f"on_reject names {show(target)}, which is not in this branch of {parallel_name}")

    def check_reaches_join(self, members: list[int]) -> None:
        """Every branch step reaches join. A step already refused for its next is given the benefit
        of the doubt, so one wrong edge is not reported again on every step before it."""
        refused = {index for index in members if self.has_refused_next(index)}
        reaches = set(refused)
        changed = True
        while changed:
            changed = False
            for index in members:
                if index not in reaches and any(t == JOIN or t in reaches for t in self.explicit(index)):
                    reaches.add(index)
                    changed = True
        for index in members:
            if index not in reaches:
                p = self.c.branch_of[index][0][0]
                self.c.add(index, f"is in a branch of {show(self.c.name_of(p))} but never reaches join")

    def has_refused_next(self, index: int) -> bool:
        step, p = self.c.steps[index], self.c.branch_of[index][0][0]
        if "next" not in step or self.c.kinds[index] == "parallel":
            return True
        return any(self.edge_problem(t, p) for t in self.explicit(index))

    # ------------------------------------------------------------ rules for the other steps

    def check_outside_step(self, index: int) -> None:
        c = self.c
        for label, target in c.edges(index):
            if target == JOIN:
                c.add(index, f"{label} is join, but join is allowed only inside a branch")
            if label == "fork" or target == JOIN or target not in c.branch_of:
                continue
            where = f"which is inside a branch of {show(c.name_of(c.branch_of[target][0][0]))}"
            name = show(c.name_of(target))
            if label == "on_reject":
                c.add(index, f"on_reject names {name}, {where}; return to the parallel step or a step before it")
            elif label == "default":
                c.add(index, f"continues by default to {name}, {where}; name next")
            else:
                c.add(index, f"{label} names {name}, {where}; only its parallel step enters a branch")


# ---------------------------------------------------------------- small rules


def _field_specs_issues(specs, where: str, separator: str) -> list[str]:
    """inputs or output: a mapping of field names to field specs (spec §2.3). `separator` is ": "
    at the top level (`inputs: ...`) and " " inside a step (`output must ...`)."""
    if not isinstance(specs, dict):
        return [f"{where}{separator}must be a mapping of field names to field specs"]
    issues = []
    for name, spec in specs.items():
        if not isinstance(name, str) or not name:
            issues.append(f"{where}{separator}field names must be non-empty strings")
        else:
            issues += fields.spec_issues(spec, f"{where}.{name}")
    return issues


def check_issues(check) -> list[str]:
    """The `check:` value (check-1 §2): a question, or a list of questions of three kinds."""
    if isinstance(check, str) and check.strip():
        return []
    if not isinstance(check, list) or not check:
        return ["check must be a question or a non-empty list of questions"]
    issues = []
    for position, question in enumerate(check):
        issues += [f"check[{position}] {issue}" for issue in _question_issues(question)]
    return issues


QUESTION_KEYS = {
    "yes/no": ("ask", "pass", "fail"),
    "choice": ("ask", "one_of", "pass", "unsure", "confidence"),
    "rubric": ("ask", "levels", "pass", "confidence"),
}
ALL_QUESTION_KEYS = ("ask", "pass", "fail", "one_of", "unsure", "levels", "confidence")


def _question_issues(question) -> list[str]:
    if not isinstance(question, dict):
        return ["must be a mapping with ask"]
    issues = [f"has unknown field {_show_key(key)}" for key in question if key not in ALL_QUESTION_KEYS]
    if "ask" not in question:
        issues.append("is missing ask")
    elif not _is_text(question["ask"]):
        issues.append("ask must be a non-empty string")
    if "one_of" in question and "levels" in question:
        return issues + ["has both one_of and levels; a question has at most one"]
    kind = "choice" if "one_of" in question else "rubric" if "levels" in question else "yes/no"
    issues += [
        f"{show(key)} is not allowed on a {kind} question"
        for key in question
        if key in ALL_QUESTION_KEYS and key not in QUESTION_KEYS[kind]
    ]
    rules = {"yes/no": _yes_no_issues, "choice": _choice_issues, "rubric": _rubric_issues}
    issues += rules[kind](question)
    if "confidence" in question and kind != "yes/no" and not _is_probability(question["confidence"]):
        issues.append("confidence must be a number from 0 to 1")
    return issues


def _yes_no_issues(question: dict) -> list[str]:
    issues = [
        f"{key} must be a number from 0 to 1"
        for key in ("pass", "fail")
        if key in question and not _is_probability(question[key])
    ]
    if not issues and "pass" in question and "fail" in question and not question["fail"] < question["pass"]:
        issues.append("fail must be below pass")
    return issues


def _choice_issues(question: dict) -> list[str]:
    answers = question["one_of"]
    if not (isinstance(answers, dict) and len(answers) >= 2 and all(_is_text(name) for name in answers)):
        return ["one_of must map two or more answer names to descriptions"]
    issues = [
        f"one_of {show(name)} must have a description (a string)"
        for name, text in answers.items()
        if not isinstance(text, str)
    ]
    if "pass" not in question:
        return issues + ["pass is missing (the answers that pass)"]
    issues += _answer_list_issues(question["pass"], answers, "pass", allow_empty=False)
    if "unsure" in question:
        issues += _answer_list_issues(question["unsure"], answers, "unsure", allow_empty=True)
        if isinstance(question["pass"], list) and isinstance(question["unsure"], list):
            both = [name for name in question["pass"] if isinstance(name, str) and name in question["unsure"]]
            issues += [f"{show(name)} is in both pass and unsure" for name in both]
    return issues


def _answer_list_issues(names, answers: dict, key: str, allow_empty: bool) -> list[str]:
    if not isinstance(names, list) or not (names or allow_empty) or not all(isinstance(n, str) for n in names):
        qualifier = "a" if allow_empty else "a non-empty"
        return [f"{key} must be {qualifier} list of one_of answers"]
    return [f"{key} names unknown answer {show(name)}" for name in names if name not in answers]


def _rubric_issues(question: dict) -> list[str]:
    levels = question["levels"]
    if not (isinstance(levels, list) and 2 <= len(levels) <= 10 and all(_is_text(level) for level in levels)):
        return ["levels must be a list of 2 to 10 level descriptions, worst first"]
    if "pass" not in question:
        return ["pass is missing (the lowest level that passes, from 0)"]
    passing = question["pass"]
    if isinstance(passing, bool) or not isinstance(passing, int) or not 0 <= passing < len(levels):
        return [f"pass must be a level from 0 to {len(levels) - 1}"]
    return []


def _cycles(graph: dict[int, list[int]]) -> list[list[int]]:
    """One cycle per back edge of a depth-first search, each set of steps reported once,
    rotated to start at its earliest step."""
    colour: dict[int, str] = {}
    found: list[list[int]] = []
    seen_sets: set[frozenset] = set()
    for root in graph:
        if root in colour:
            continue
        path, stack = [root], [iter(graph[root])]
        colour[root] = "open"
        while stack:
            target = next(stack[-1], None)
            if target is None:
                colour[path.pop()] = "done"
                stack.pop()
            elif colour.get(target) == "open":
                cycle = path[path.index(target) :]
                if frozenset(cycle) not in seen_sets:
                    seen_sets.add(frozenset(cycle))
                    start = cycle.index(min(cycle))
                    found.append(cycle[start:] + cycle[:start])
            elif target not in colour:
                colour[target] = "open"
                path.append(target)
                stack.append(iter(graph.get(target, [])))
    return found


def _repeats(values: list[str]) -> list[str]:
    """Each value listed more than once, once, in the order of its first repeat."""
    seen: set[str] = set()
    repeated: list[str] = []
    for value in values:
        if value in seen and value not in repeated:
            repeated.append(value)
        seen.add(value)
    return repeated


def _is_name(value: str) -> bool:
    return len(value) <= MAX_NAME_LENGTH and NAME_PATTERN.fullmatch(value) is not None


def _is_role(value: str) -> bool:
    return len(value) <= MAX_NAME_LENGTH and ROLE_PATTERN.fullmatch(value) is not None


def _is_text(value) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _is_probability(value) -> bool:
    return fields.is_number(value) and 0 <= value <= 1


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _show_key(key) -> str:
    return show(key) if isinstance(key, str) else show(str(key))
