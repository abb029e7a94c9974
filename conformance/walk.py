"""Any process end to end on every route: plans from the process graph (each route of a route
list, each approval rejected once into on_reject, or ended by a rejection), predicted from the
file, then driven through the protocol and compared with what the server did."""

import base64
import datetime as dt
import io
from dataclasses import dataclass, field
from pathlib import Path

from ruamel.yaml import YAML

PROCESSES = Path(__file__).resolve().parent / "processes"
PERSON_KINDS = ("task", "approve")
KINDS = ("agent", "task", "approve", "wait", "wait_until", "wait_for", "finish", "parallel")
MAX_ACTIONS = 80


def runner_process_text(name: str) -> str:
    return (PROCESSES / name / "PROCESS.md").read_text()


def load_frontmatter(text: str) -> dict:
    """The frontmatter as YAML 1.2 core schema (§2.1: `yes` is a string)."""
    _, block, _ = text.split("---", 2)
    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 2)
    return yaml.load(io.StringIO(block))


def kind_of(step: dict) -> str:
    return next(key for key in KINDS if key in step)


def route_targets(step: dict) -> list[str] | None:
    nxt = step.get("next")
    if isinstance(nxt, list):
        return [route if isinstance(route, str) else route["to"] for route in nxt]
    return None


@dataclass
class Graph:
    frontmatter: dict
    steps: list[dict] = field(init=False)
    by_id: dict[str, dict] = field(init=False)
    branch_of: dict[str, str] = field(init=False)  # step id -> parallel step id

    def __post_init__(self):
        self.steps = self.frontmatter["steps"]
        self.by_id = {step["id"]: step for step in self.steps}
        self.branch_of = {}
        for step in self.steps:
            if kind_of(step) == "parallel":
                for entry in step["parallel"]:
                    for member in self._branch(entry):
                        self.branch_of[member] = step["id"]

    def _branch(self, entry: str) -> list[str]:
        found, todo = [], [entry]
        while todo:
            current = todo.pop()
            if current == "join" or current in found:
                continue
            found.append(current)
            step = self.by_id[current]
            todo += (route_targets(step) or [step["next"]]) if "next" in step else []
            if "on_timeout" in step:
                todo.append(step["on_timeout"])
        return found

    def default_next(self, step_id: str) -> str:
        step = self.by_id[step_id]
        if "next" in step and not isinstance(step["next"], list):
            return step["next"]
        index = self.steps.index(step)
        return self.steps[index + 1]["id"]

    def route_steps(self) -> list[str]:
        return [s["id"] for s in self.steps if route_targets(s)]

    def approvals(self) -> list[str]:
        return [s["id"] for s in self.steps if kind_of(s) == "approve"]

    def inputs(self) -> dict:
        return self.frontmatter.get("inputs") or {}

    def uses_initiator(self) -> bool:
        return any(s.get("person") == "initiator" for s in self.steps)

    def roles(self) -> list[str]:
        names = []
        for step in self.steps:
            person = step.get("person")
            if person and person != "initiator" and "." not in person and person not in names:
                names.append(person)
        return names


@dataclass
class Plan:
    name: str
    routes: dict[str, str] = field(default_factory=dict)  # route step -> chosen target
    reject_once: str | None = None  # an approval rejected the first time it is reached
    reject_end: str | None = None  # an approval without on_reject whose rejection ends the run


@dataclass
class Prediction:
    completions: list[str]  # step ids in the order they complete (branches: in process order)
    outcome: str
    rejections: dict[str, int]


def predict(graph: Graph, plan: Plan) -> Prediction:
    completions, rejected, outcome = [], {}, None
    current = graph.steps[0]["id"]
    for _ in range(MAX_ACTIONS):
        step = graph.by_id[current]
        kind = kind_of(step)
        if kind == "finish":
            outcome = step["finish"]
            break
        if kind == "parallel":
            for entry in step["parallel"]:
                node = entry
                while node != "join":
                    node, ended = _complete_one(graph, plan, node, completions, rejected)
                    if ended:
                        return Prediction(completions, ended, rejected)
            current = step["next"]
            continue
        current, ended = _complete_one(graph, plan, current, completions, rejected)
        if ended:
            outcome = ended
            break
    return Prediction(completions, outcome, rejected)


def _complete_one(graph: Graph, plan: Plan, step_id: str, completions: list, rejected: dict):
    """(the next step, or None and the outcome when the run ends here)."""
    step = graph.by_id[step_id]
    kind = kind_of(step)
    completions.append(step_id)
    if kind == "approve":
        if plan.reject_end == step_id:
            return None, "rejected"
        if plan.reject_once == step_id and not rejected.get(step_id):
            rejected[step_id] = 1
            return step["on_reject"], None
        return graph.default_next(step_id), None
    if route_targets(step):
        return plan.routes.get(step_id, route_targets(step)[0]), None
    return graph.default_next(step_id), None


def plans_for(graph: Graph) -> list[Plan]:
    plans, seen = [Plan("main")], set()
    base = predict(graph, plans[0])
    seen.add((tuple(base.completions), base.outcome))
    for step_id in graph.route_steps():
        for target in route_targets(graph.by_id[step_id])[1:]:
            plans.append(Plan(f"{step_id}-{target}", routes={step_id: target}))
    for step_id in graph.approvals():
        step = graph.by_id[step_id]
        if "on_reject" in step:
            plans.append(Plan(f"{step_id}-rejected", reject_once=step_id))
        else:
            plans.append(Plan(f"{step_id}-rejected", reject_end=step_id))
    kept = plans[:1]
    for plan in plans[1:]:
        prediction = predict(graph, plan)
        key = (tuple(prediction.completions), prediction.outcome)
        if key not in seen:  # a route the main path never reaches adds nothing new
            seen.add(key)
            kept.append(plan)
    return kept


# ---------------------------------------------------------------- values


def value_for(spec, ctx, *, for_input: bool):
    kind = spec if isinstance(spec, str) else spec.get("type")
    if isinstance(spec, dict) and spec.get("one_of"):
        return spec["one_of"][0]
    if kind == "string":
        return "conformance"
    if kind == "number":
        return 7
    if kind == "boolean":
        return True
    if kind == "date":
        return "2026-10-06"
    if kind == "datetime":
        return "2020-01-01T00:00:00Z" if for_input else dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
    if kind == "list":
        items = spec.get("items") if isinstance(spec, dict) else None
        return [value_for(items, ctx, for_input=for_input)] if items else []
    if kind == "object":
        return {}
    if kind == "person":
        return ctx.approver.person
    return "conformance"


def values_for(specs: dict | None, ctx, *, for_input: bool) -> dict:
    return {name: value_for(spec, ctx, for_input=for_input) for name, spec in (specs or {}).items()
            if not (isinstance(spec, dict) and spec.get("optional"))}


def evidence_for(kinds, ctx, actor) -> list[dict]:
    items = []
    for kind in kinds or ():
        if kind == "file":
            uploaded = ctx.ok(actor, "upload", fileName="evidence.txt", contentType="text/plain",
                              contentBase64=base64.b64encode(b"conformance evidence").decode())
            items.append({"kind": "file", "ref": uploaded["id"]})
        else:
            items.append({"kind": "link", "ref": "https://example.org/conformance-evidence"})
    return items


# ---------------------------------------------------------------- driving


def drive(ctx, graph: Graph, plan: Plan):
    """Run the process along the plan; compare the completions and the outcome with the prediction."""
    ctx.must("6.1-order")
    prediction = predict(graph, plan)
    name = graph.frontmatter["name"]
    starter = ctx.approver if graph.uses_initiator() else ctx.agent
    view = ctx.start(starter, name, values_for(graph.inputs(), ctx, for_input=True))
    run_id = view["run"]["id"]
    done, rejected = [], {}
    for _ in range(MAX_ACTIONS):
        if view["run"]["state"] in ("ended", "cancelled"):
            break
        states = ctx.states(view)
        ready_agent = [s["id"] for s in view["steps"] if s["state"] == "ready" and s["kind"] == "agent"]
        if view["workItems"]:
            item = view["workItems"][0]
            view = _decide_item(ctx, graph, plan, view, item, rejected)
            done.append(item["stepId"])
        elif ready_agent:
            step_id = ready_agent[0]
            view = _work_agent_step(ctx, graph, plan, run_id, step_id)
            done.append(step_id)
        else:
            waiting = [sid for sid, state in states.items() if state == "waiting"
                       and kind_of(graph.by_id[sid]) == "wait_for"]
            if waiting:
                sent = ctx.ok(ctx.agent, "send_event", runId=run_id, name=graph.by_id[waiting[0]]["wait_for"])
                ctx.equal(sent["consumedBy"], waiting[0], f"the event is consumed by {waiting[0]}")
                done.append(waiting[0])
                view = ctx.ok(ctx.agent, "get_run", runId=run_id)
                continue
            ctx.check(False, f"the run is {view['run']['state']} but nothing is ready: {states}", hard=True)
    expected = [sid for sid in prediction.completions if kind_of(graph.by_id[sid]) in ("agent", "task", "approve",
                                                                                          "wait_for")]
    if graph.branch_of:
        ctx.equal(sorted(done), sorted(expected), "the steps worked are the predicted ones (§6 rule 1)")
    else:
        ctx.equal(done, expected, "the steps became ready in the predicted order (§6 rule 1)")
    ctx.equal(view["run"]["state"], "ended", "the run ended")
    ctx.equal(view["run"]["outcome"], prediction.outcome, "the predicted outcome")
    ctx.equal([s["id"] for s in view["steps"] if s["state"] in ("ready", "claimed", "waiting")], [],
              "nothing is left open")
    data = view["data"]["steps"]
    for step_id in set(done):
        times = done.count(step_id)
        record = data.get(step_id) or {}
        if plan.reject_end != step_id:
            ctx.equal(len(record.get("history") or []), times - 1, f"steps.{step_id}.history after {times} completions "
                                                                 "(§3.1: only steps completed after the returned-to step move to history)")
        ctx.check(record.get("by"), f"steps.{step_id} records by")
    return view


def _work_agent_step(ctx, graph: Graph, plan: Plan, run_id: str, step_id: str) -> dict:
    step = graph.by_id[step_id]
    item = ctx.find_work(ctx.agent, run_id, step_id, process=graph.frontmatter["name"])
    claimed = ctx.ok(ctx.agent, "claim", **{**item["claim"]["arguments"], "requestId": _rid()})
    ctx.equal(claimed["step"]["id"], step_id, "the claim is for the listed step")
    arguments = {"token": claimed["token"], "output": values_for(step.get("output"), ctx, for_input=False),
                 "summary": f"Conformance walk: {step_id}."}
    if step.get("evidence"):
        arguments["evidence"] = evidence_for(step["evidence"], ctx, ctx.agent)
    targets = route_targets(step)
    if targets:
        arguments["next"] = plan.routes.get(step_id, targets[0])
        arguments["reason"] = "The conformance plan takes this route."
    exchange = ctx.call(ctx.agent, "submit", **arguments)
    if exchange.ok and exchange.data["workItems"] and any(
            w["stepId"] == step_id and w.get("escalation") for w in exchange.data["workItems"]):
        return exchange.data  # check-1 unsure: a person completes it next
    ctx.check(exchange.ok, f"submit of {step_id} is accepted", exchange, hard=True)
    return exchange.data


def _decide_item(ctx, graph: Graph, plan: Plan, view: dict, item: dict, rejected: dict) -> dict:
    step = graph.by_id[item["stepId"]]
    person = _person_for(ctx, view, item)
    listed = ctx.find_work(person, view["run"]["id"], item["stepId"], process=graph.frontmatter["name"])
    work = listed["workItem"]
    arguments = {**work["decide"]["arguments"], "requestId": _rid()}
    if kind_of(step) == "approve":
        if plan.reject_end == step["id"] or (plan.reject_once == step["id"] and not rejected.get(step["id"])):
            rejected[step["id"]] = 1
            arguments.update(decision="rejected", note="Conformance walk: rejected once.")
        else:
            arguments["decision"] = "approved"
    else:
        arguments.update(decision="completed", output=values_for(step.get("output"), ctx, for_input=False))
        if step.get("evidence"):
            arguments["evidence"] = evidence_for(step["evidence"], ctx, person)
        targets = route_targets(step)
        if targets:
            arguments["next"] = plan.routes.get(step["id"], targets[0])
            arguments["reason"] = "The conformance plan takes this route."
    return ctx.ok(person, "decide", **arguments)


def _person_for(ctx, view: dict, item: dict):
    """Who may decide it: the person a person value names, else the members of the runner's groups,
    asked in turn (a server names groups its own way)."""
    assigned = item.get("assignedTo") or {}
    people = [*ctx.session.people, ctx.operator]
    if "person" in assigned:
        for person in people:
            if person.person == assigned["person"]:
                return person
    if item.get("escalation"):
        return ctx.operator
    for person in people:
        if person.group == assigned.get("group"):
            return person
    return ctx.approver


def _rid() -> str:
    from .core import new_request_id

    return new_request_id()
