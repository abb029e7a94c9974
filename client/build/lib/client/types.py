"""The results of the tools as dataclasses (the shapes of tools.md). Every result keeps the whole
`data` object it was read from in `raw`, so a field this client does not name (a newer server, a
profile's `extensions`) is still at hand. Unknown keys are ignored, missing optional ones are None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _items(data: dict, key: str) -> list:
    return list(data.get(key) or [])


@dataclass(frozen=True)
class Evidence:
    """An evidence item (spec §5): a `file` (an upload id) or a `link` (a URL or document number)."""

    kind: str
    ref: str

    @classmethod
    def file(cls, ref: str) -> Evidence:
        return cls("file", ref)

    @classmethod
    def link(cls, ref: str) -> Evidence:
        return cls("link", ref)

    def to_json(self) -> dict:
        return {"kind": self.kind, "ref": self.ref}


@dataclass(frozen=True)
class Submission:
    """What a step's work produced: the arguments of `submit` without the token and requestId.
    `next` and `reason` are needed when the step's `next` is a list of routes."""

    output: dict[str, Any]
    summary: str
    evidence: list[Evidence] = field(default_factory=list)
    next: str | None = None
    reason: str | None = None

    def arguments(self) -> dict:
        arguments: dict[str, Any] = {"output": self.output, "summary": self.summary}
        if self.evidence:
            arguments["evidence"] = [item.to_json() if isinstance(item, Evidence) else dict(item)
                                     for item in self.evidence]
        if self.next is not None:
            arguments["next"] = self.next
        if self.reason is not None:
            arguments["reason"] = self.reason
        return arguments


@dataclass(frozen=True)
class Description:
    protocol: str
    version: str
    profiles: list[str]
    lease_seconds: int | None
    tools: list[str]
    max_upload_bytes: int | None
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> Description:
        return cls(protocol=data.get("protocol", ""), version=data.get("version", ""),
                   profiles=_items(data, "profiles"), lease_seconds=data.get("leaseSeconds"),
                   tools=_items(data, "tools"), max_upload_bytes=data.get("maxUploadBytes"), raw=data)


@dataclass(frozen=True)
class Page:
    """A page of a listing; pass `next_cursor` as `cursor` for the next one (None: no more)."""

    items: list
    next_cursor: str | None


@dataclass(frozen=True)
class ProcessInfo:
    name: str
    description: str
    version: int
    inputs: dict
    requires: Any
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> ProcessInfo:
        return cls(name=data["name"], description=data.get("description", ""), version=data.get("version"),
                   inputs=data.get("inputs") or {}, requires=data.get("requires"), raw=data)


@dataclass(frozen=True)
class Run:
    id: str
    process: str
    version: int
    mode: str
    state: str
    outcome: str | None
    ended: dict | None
    started_by: str | None
    started_at: str | None
    updated_at: str | None
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> Run:
        return cls(id=data["id"], process=data.get("process", ""), version=data.get("version"),
                   mode=data.get("mode", "live"), state=data.get("state", ""), outcome=data.get("outcome"),
                   ended=data.get("ended"), started_by=data.get("startedBy"), started_at=data.get("startedAt"),
                   updated_at=data.get("updatedAt"), raw=data)


@dataclass(frozen=True)
class StepState:
    id: str
    kind: str
    state: str | None
    due: str | None
    overdue: bool | None
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> StepState:
        return cls(id=data["id"], kind=data.get("kind", ""), state=data.get("state"), due=data.get("due"),
                   overdue=data.get("overdue"), raw=data)


@dataclass(frozen=True)
class WorkItem:
    """A person's work item (an approval, a task, an escalated agent step). `decide` is the exact
    call to make; `decisions` what this item accepts."""

    id: str
    step_id: str
    kind: str
    text: str
    output: Any
    evidence: Any
    next: Any
    handoff: dict | None
    assigned_to: dict | None
    snapshot: str
    due: str | None
    escalation: dict | None
    decisions: list[str]
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> WorkItem:
        decide = data.get("decide") or {}
        return cls(id=data["id"], step_id=data.get("stepId", ""), kind=data.get("kind", ""),
                   text=data.get("text", ""), output=data.get("output"), evidence=data.get("evidence"),
                   next=data.get("next"), handoff=data.get("handoff"), assigned_to=data.get("assignedTo"),
                   snapshot=data.get("snapshot", ""), due=data.get("due"), escalation=data.get("escalation"),
                   decisions=list(decide.get("decisions") or []), raw=data)


@dataclass(frozen=True)
class RunView:
    """The run view (start_run, get_run, submit, decide, escalate, cancel)."""

    run: Run
    data: dict
    steps: list[StepState]
    work_items: list[WorkItem]
    body: str
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> RunView:
        return cls(run=Run.from_json(data["run"]), data=data.get("data") or {},
                   steps=[StepState.from_json(step) for step in _items(data, "steps")],
                   work_items=[WorkItem.from_json(item) for item in _items(data, "workItems")],
                   body=data.get("body", ""), raw=data)

    @property
    def inputs(self) -> dict:
        return self.data.get("inputs") or {}

    def step(self, step_id: str) -> StepState:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)


@dataclass(frozen=True)
class ReadyStep:
    """An agent's get_work item: a step it may claim."""

    run_id: str
    step_id: str
    process: str
    version: int
    mode: str
    ready_since: str | None
    due: str | None
    overdue: bool | None
    handoff: dict | None
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> ReadyStep:
        return cls(run_id=data["runId"], step_id=data["stepId"], process=data.get("process", ""),
                   version=data.get("version"), mode=data.get("mode", "live"), ready_since=data.get("readySince"),
                   due=data.get("due"), overdue=data.get("overdue"), handoff=data.get("handoff"), raw=data)


@dataclass(frozen=True)
class PersonWork:
    """A person's get_work item: a work item of a run."""

    run_id: str
    process: str
    version: int
    mode: str
    work_item: WorkItem
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> PersonWork:
        return cls(run_id=data["runId"], process=data.get("process", ""), version=data.get("version"),
                   mode=data.get("mode", "live"), work_item=WorkItem.from_json(data["workItem"]), raw=data)


def work_from_json(data: dict) -> ReadyStep | PersonWork:
    return PersonWork.from_json(data) if "workItem" in data else ReadyStep.from_json(data)


@dataclass(frozen=True)
class StepSpec:
    """`claim.step`: what the step asks for."""

    id: str
    instructions: str
    output: dict
    evidence: list[str]
    next: list[dict] | None  # [{"to", "when"?}] when the step routes, else None
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> StepSpec:
        routes = data.get("next")
        return cls(id=data["id"], instructions=data.get("instructions", ""), output=data.get("output") or {},
                   evidence=_items(data, "evidence"), next=list(routes) if isinstance(routes, list) else None,
                   raw=data)


@dataclass(frozen=True)
class Claim:
    """`claim`'s result. `token` is the lease token of this claim (renewals replace it)."""

    token: str
    expires_at: str
    mode: str
    step: StepSpec
    handoff: dict | None
    body: str
    data: dict
    extensions: dict
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> Claim:
        return cls(token=data["token"], expires_at=data["expiresAt"], mode=data.get("mode", "live"),
                   step=StepSpec.from_json(data["step"]), handoff=data.get("handoff"), body=data.get("body", ""),
                   data=data.get("data") or {}, extensions=data.get("extensions") or {}, raw=data)


@dataclass(frozen=True)
class Renewal:
    token: str
    expires_at: str
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> Renewal:
        return cls(token=data["token"], expires_at=data["expiresAt"], raw=data)


@dataclass(frozen=True)
class Upload:
    id: str
    sha256: str
    bytes: int
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> Upload:
        return cls(id=data["id"], sha256=data["sha256"], bytes=data["bytes"], raw=data)

    def evidence(self) -> Evidence:
        return Evidence.file(self.id)


@dataclass(frozen=True)
class EventResult:
    consumed_by: str | None  # the wait step that took the event; None when it is held
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> EventResult:
        return cls(consumed_by=data.get("consumedBy"), raw=data)


@dataclass(frozen=True)
class RunSummary:
    """A list_runs item."""

    id: str
    process: str
    version: int
    state: str
    outcome: str | None
    started_at: str | None
    updated_at: str | None
    inputs: dict
    raw: dict

    @classmethod
    def from_json(cls, data: dict) -> RunSummary:
        return cls(id=data["id"], process=data.get("process", ""), version=data.get("version"),
                   state=data.get("state", ""), outcome=data.get("outcome"), started_at=data.get("startedAt"),
                   updated_at=data.get("updatedAt"), inputs=data.get("inputs") or {}, raw=data)
