"""A published version compiled for running: steps by id with resolved routes and branches.

Versions never change, so a compiled definition is cached per version for the life of the process.
"""

import datetime as dt
import functools
from dataclasses import dataclass, field

from .validation import parallel_branches

KINDS = ("agent", "task", "approve", "wait", "wait_until", "wait_for", "finish", "parallel")
PERSON_KINDS = ("task", "approve")
JOIN = "join"


def parse_duration(text: str) -> dt.timedelta:
    amount, unit = int(text[:-1]), text[-1]
    return {"m": dt.timedelta(minutes=amount), "h": dt.timedelta(hours=amount), "d": dt.timedelta(days=amount)}[unit]


@dataclass(frozen=True)
class StepDef:
    id: str
    position: int
    kind: str
    value: object  # the kind key's value: instructions, duration, path, event name, outcome, entries
    person: str | None = None
    output: dict | None = None
    evidence: tuple[str, ...] | None = None
    routes: tuple[dict, ...] | None = None  # next as a list: [{to, when?}], chosen by the actor
    next: str | None = None  # the one next step (explicit or the following one); None on finish or a list
    on_reject: str | None = None
    on_timeout: str | None = None
    timeout: dt.timedelta | None = None
    due: dt.timedelta | None = None
    wait: dt.timedelta | None = None
    check: object = None
    advisory: bool = False
    parallel: str | None = None  # the parallel step whose branch holds this step
    branch: str | None = None  # the entry step of that branch
    entries: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return self.value if isinstance(self.value, str) else ""

    @property
    def route_targets(self) -> list[str]:
        return [route["to"] for route in self.routes] if self.routes else []

    @property
    def next_routes(self) -> tuple[dict, ...]:
        """Every way on from this step as `{to, when?}`: the route list, or the one next step
        (explicit or the following one). Empty on a finish."""
        if self.routes:
            return self.routes
        return ({"to": self.next},) if self.next else ()

    @property
    def next_targets(self) -> list[str]:
        return [route["to"] for route in self.next_routes]

    @property
    def timeout_target(self) -> str | None:
        """Where a wait_for continues when its timeout passes: on_timeout, default the step's next
        (spec §2.2). None without a timeout, which never passes."""
        if self.kind != "wait_for" or self.timeout is None:
            return None
        return self.on_timeout or self.next

    @property
    def requirements(self) -> dict:
        """output, evidence and next exactly as `claim.step` and work items give them (tools.md)."""
        return {
            "output": self.output if self.kind in ("agent", "task") else None,
            "evidence": list(self.evidence) if self.evidence and self.kind in ("agent", "task") else None,
            "next": [dict(route) for route in self.routes] if self.routes else None,
        }


@dataclass(frozen=True)
class Definition:
    name: str
    description: str
    inputs: dict
    steps: tuple[StepDef, ...]
    body: str
    bindings: dict = field(default_factory=dict)
    requires: dict | None = None

    @functools.cached_property
    def by_id(self) -> dict[str, StepDef]:
        return {step.id: step for step in self.steps}

    @property
    def first(self) -> StepDef:
        return self.steps[0]

    def step(self, step_id: str) -> StepDef:
        return self.by_id[step_id]

    def branch_steps(self, parallel_id: str) -> list[StepDef]:
        return [step for step in self.steps if step.parallel == parallel_id]

    @functools.cached_property
    def uses_initiator(self) -> bool:
        return any(step.person == "initiator" for step in self.steps)


def _kind(step: dict) -> str:
    return next(key for key in KINDS if key in step)


def _routes(raw) -> tuple[dict, ...]:
    routes = []
    for route in raw:
        if isinstance(route, str):
            routes.append({"to": route})
        else:
            routes.append({key: route[key] for key in ("to", "when") if key in route})
    return tuple(routes)


def _branches(frontmatter: dict) -> dict[str, tuple[str, str]]:
    """step id → (parallel step id, branch entry id), by the validator's own branch rule."""
    return {
        member: (parallel, entry)
        for parallel, branches in parallel_branches(frontmatter).items()
        for entry, members in branches.items()
        for member in members
    }


def compile_definition(frontmatter: dict, body: str, bindings: dict | None = None) -> Definition:
    raw_steps = frontmatter["steps"]
    placement = _branches(frontmatter) if any("parallel" in step for step in raw_steps) else {}
    steps = []
    for position, raw in enumerate(raw_steps):
        kind = _kind(raw)
        nxt = raw.get("next")
        routes = _routes(nxt) if isinstance(nxt, list) else None
        single = None
        if kind != "finish" and routes is None:
            # Default: the following step in the list (not inside a branch, where next is explicit).
            single = nxt or (raw_steps[position + 1]["id"] if position + 1 < len(raw_steps) else None)
        parallel, branch = placement.get(raw["id"], (None, None))
        steps.append(
            StepDef(
                id=raw["id"],
                position=position,
                kind=kind,
                value=raw[kind],
                person=raw.get("person"),
                output=raw.get("output") or None,
                evidence=tuple(raw["evidence"]) if raw.get("evidence") else None,
                routes=routes,
                next=single,
                on_reject=raw.get("on_reject"),
                on_timeout=raw.get("on_timeout"),
                timeout=parse_duration(raw["timeout"]) if raw.get("timeout") else None,
                due=parse_duration(raw["due"]) if raw.get("due") else None,
                wait=parse_duration(raw["wait"]) if kind == "wait" else None,
                check=raw.get("check"),
                advisory=bool(raw.get("advisory", False)),
                parallel=parallel,
                branch=branch,
                entries=tuple(raw["parallel"]) if kind == "parallel" else (),
            )
        )
    return Definition(
        name=frontmatter["name"],
        description=frontmatter["description"],
        inputs=frontmatter.get("inputs") or {},
        steps=tuple(steps),
        body=body,
        bindings=dict(bindings or {}),
        requires=frontmatter.get("requires"),
    )


_cache: dict[int, Definition] = {}


def _compile_version(version) -> Definition:
    # From the source text, not the stored JSON: PostgreSQL's jsonb does not keep key order, and
    # the order of declared fields is what people read (forms) and how issues are listed.
    from .parsing import parse_process_file

    parsed = parse_process_file(version.source)
    return compile_definition(parsed.frontmatter, version.body, version.bindings)


def definitions_for(version_ids) -> dict[int, Definition]:
    """Compiled definitions of several published versions, with at most one query (cached:
    versions are immutable)."""
    from .models import ProcessVersion

    wanted = set(version_ids)
    missing = [pk for pk in wanted if pk not in _cache]
    if missing:
        if len(_cache) + len(missing) > 4096:
            _cache.clear()
        for version in ProcessVersion.objects.filter(pk__in=missing).only("source", "body", "bindings"):
            _cache[version.pk] = _compile_version(version)
    return {pk: _cache[pk] for pk in wanted}


def definition_for(version_id: int) -> Definition:
    """The compiled definition of a published version, by id."""
    definition = _cache.get(version_id)
    if definition is None:
        definition = definitions_for([version_id])[version_id]
    return definition
