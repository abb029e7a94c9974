"""One process graph (issue 12): the map, the admin steps table and the run page read the compiled
definition, the only interpretation of kinds, `next` and its default, branches and joins."""

import re

import pytest
from django.contrib import admin

from kernel.states import StepStatus
from processes import maps
from processes.admin import ProcessVersionAdmin
from processes.definition import Definition, compile_definition
from processes.models import ProcessVersion
from processes.parsing import parse_process_file
from processes.validation import PARALLEL_PROFILE, validate
from tests.support.spec import EXAMPLES, FIXTURES

PARALLEL_REVIEW = """---
name: parallel-review
description: Prepare a pack, review it two ways at once, then sign it off.
steps:
  - id: prepare
    agent: Prepare the pack.
  - id: reviews
    parallel: [legal, finance]
    next: sign_off
  - id: legal
    agent: Review the legal terms.
    next:
      - { to: join, when: Terms are fine }
      - { to: redline, when: Terms need changes }
  - id: redline
    agent: Mark the changes.
    next: join
  - id: finance
    wait_for: budget-confirmed
    timeout: 2d
    on_timeout: join
    next: join
  - id: sign_off
    person: lead
    approve: Sign off the reviewed pack.
    on_reject: prepare
  - id: done
    finish: signed
---

# Parallel review
"""


def frontmatter_of(text: str) -> dict:
    return parse_process_file(text).frontmatter


def processes() -> list:
    """Every example process, the parallel review above, and the spec's fixtures when present."""
    texts = [pytest.param(path.read_text(), id=path.parent.name) for path in sorted(EXAMPLES.glob("*/PROCESS.md"))]
    texts.append(pytest.param(PARALLEL_REVIEW, id="parallel-review"))
    texts += [pytest.param(path.read_text(), id=f"spec-{path.parent.name}")
              for path in sorted(FIXTURES.glob("*/PROCESS.md"))]
    return texts


def compiled(text: str) -> Definition:
    return compile_definition(frontmatter_of(text), body="")


def map_edges(definition: Definition) -> list[tuple]:
    return sorted((e.kind, e.source, e.target, e.label) for e in maps.build_graph(definition).edges)


def edges_from_definition(definition: Definition) -> list[tuple]:
    """(kind, from, to, label) read off the compiled steps' own fields, by the spec's rules."""
    join_of = {step.id: f"{step.id}_join" for step in definition.steps if step.kind == "parallel"}

    def node(step, target):
        return join_of[step.parallel] if target == "join" else target

    found = []
    for step in definition.steps:
        ways = list(step.routes) if step.routes else ([{"to": step.next}] if step.next else [])
        source = join_of.get(step.id, step.id)  # a parallel step continues after its join
        kind = "approved" if step.kind == "approve" else "next"
        for way in ways:
            label = way.get("when") or ("Approved" if kind == "approved" else None)
            found.append((kind, source, node(step, way["to"]), label))
        if step.kind == "parallel":
            found += [("fork", step.id, entry, None) for entry in step.entries]
        if step.kind == "approve":
            found.append(("rejected", step.id, step.on_reject or f"rejected_{step.id}", "Rejected"))
        if step.kind == "wait_for" and step.timeout:
            found.append(("timeout", step.id, node(step, step.on_timeout or step.next), "Timeout"))
    return sorted(found)


# --- the map draws the compiled graph ------------------------------------------------------------


def test_the_parallel_review_is_a_valid_parallel_process():
    assert validate(frontmatter_of(PARALLEL_REVIEW), profiles=frozenset({PARALLEL_PROFILE})) == []


@pytest.mark.parametrize("text", processes())
def test_map_edges_are_the_compiled_definitions_edges(text):
    """Guide: "the map is generated from the file and never maintained beside it. There is no second
    source of routing to drift out of date." Every edge comes from next, routes, on_reject,
    on_timeout, fork and join as compiled."""
    definition = compiled(text)
    assert map_edges(definition) == edges_from_definition(definition)
    assert map_edges(definition) == sorted(
        (e.kind, e.source, e.target, e.label) for e in maps.build_graph(frontmatter_of(text)).edges
    )


@pytest.mark.parametrize("text", processes())
def test_the_default_next_is_drawn_where_the_definition_puts_it(text):
    """Spec §2.2 `next`: "Default: the following step in the list." """
    frontmatter, definition = frontmatter_of(text), compiled(text)
    edges = map_edges(definition)
    raw_steps = frontmatter["steps"]
    for position, raw in enumerate(raw_steps[:-1]):
        if "next" in raw or "finish" in raw:
            continue
        step = definition.step(raw["id"])
        assert step.next == raw_steps[position + 1]["id"]
        source = f"{step.id}_join" if step.kind == "parallel" else step.id
        drawn = [target for kind, src, target, _ in edges if src == source and kind in ("next", "approved")]
        assert drawn == [step.next]


def test_the_parallel_review_draws_its_defaults_and_joins():
    """Spec §2.2: "Default: the following step in the list." Parallel §2: "`join` ... means 'this branch
    is finished'"; §3: "the server makes its `next` ready" once every branch has joined."""
    edges = {edge[:3] for edge in map_edges(compiled(PARALLEL_REVIEW))}
    assert ("next", "prepare", "reviews") in edges  # the following step, not written
    assert ("approved", "sign_off", "done") in edges  # the following step, not written
    assert ("next", "reviews_join", "sign_off") in edges
    assert ("next", "reviews", "sign_off") not in edges  # a parallel step continues after its join only
    assert {("next", "legal", "reviews_join"), ("next", "redline", "reviews_join"),
            ("next", "finance", "reviews_join"), ("timeout", "finance", "reviews_join")} <= edges


def test_no_default_next_inside_a_branch():
    """Parallel §2: "Every step in a branch names `next` or `join` explicitly; the following-step default
    does not apply inside a branch." Here each branch step is followed in the list by a step of
    another branch or by the step after the fork, and no edge goes there."""
    definition = compiled(PARALLEL_REVIEW)
    graph = maps.build_graph(definition)
    for step in definition.branch_steps("reviews"):
        branch = {member.id for member in definition.branch_steps("reviews") if member.branch == step.branch}
        targets = {edge.target for edge in graph.edges if edge.source == step.id}
        assert targets <= branch | {"reviews_join"}, step.id
    assert {(e.source, e.target) for e in graph.edges} & {("redline", "finance"), ("finance", "sign_off")} == set()


def test_a_timeout_line_only_where_a_timeout_can_pass():
    """Guide: "`wait_for` with a `timeout` adds a dashed *Timeout* line." Spec §2.2 `on_timeout`: "Step to
    continue at when `timeout` passes. Default: the step's `next`." """
    definition = compile_definition({"name": "t", "description": "t", "steps": [
        {"id": "hear_back", "wait_for": "reply", "on_timeout": "chase", "next": "done"},
        {"id": "listen", "wait_for": "reply", "timeout": "1d"},
        {"id": "chase", "agent": "Chase.", "next": "done"},
        {"id": "done", "finish": "done"},
    ]}, body="")
    assert definition.step("hear_back").timeout_target is None  # no timeout: it never passes
    assert definition.step("listen").timeout_target == "chase"  # default: the step's next
    timeouts = [(e.source, e.target) for e in maps.build_graph(definition).edges if e.kind == "timeout"]
    assert timeouts == [("listen", "chase")]


# --- the admin steps table -----------------------------------------------------------------------


def steps_rows(version: ProcessVersion) -> dict[str, list[str]]:
    """step id -> [kind, person, text, next] as the version's admin page shows them."""
    table = str(ProcessVersionAdmin(ProcessVersion, admin.site).steps_table(version))
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>", table, re.S)
    return {row[0]: list(row[1:]) for row in rows}


def test_admin_steps_table_shows_the_default_next(publish):
    """Spec §2.2 `next`: "Default: the following step in the list."; `on_reject`: "Step to return to on
    rejection." """
    rows = steps_rows(publish(EXAMPLES / "expense-approval"))
    assert list(rows) == ["attach_receipts", "check_policy", "manager_approval", "reimbursed"]
    assert rows["attach_receipts"][:2] == ["task", "initiator"]
    assert rows["attach_receipts"][3] == "check_policy"
    assert rows["check_policy"][3] == "manager_approval"
    assert rows["manager_approval"][3] == "reimbursed; on reject: attach_receipts"
    assert rows["reimbursed"] == ["finish", "", "approved", ""]


def test_admin_steps_table_shows_forks_routes_and_joins(publish):
    """Parallel §1: "Its value is a list of two or more step ids, the **branch entries**." """
    rows = steps_rows(publish(PARALLEL_REVIEW, {"lead": "leads"}))
    assert rows["prepare"][3] == "reviews"
    assert rows["reviews"] == ["parallel", "", "legal, finance", "sign_off"]
    assert rows["legal"][3] == "join, redline"
    assert rows["finance"][3] == "join; on timeout: join"
    assert rows["sign_off"][3] == "done; on reject: prepare"


# --- the run page's map --------------------------------------------------------------------------


def test_run_page_map_is_drawn_from_the_published_version(publish):
    """Guide: "a process server ... can draw the published version beside each run, so people see where
    the work is." """
    version = publish(PARALLEL_REVIEW, {"lead": "leads"})
    states = {"prepare": StepStatus.DONE, "reviews": StepStatus.WAITING, "legal": StepStatus.CLAIMED}
    drawn = maps.svg_for_version(version.pk, states=states)
    assert drawn == maps.svg(frontmatter_of(PARALLEL_REVIEW), states=states, link_prefix="")
    assert re.search(r'<g class="node kind-agent state-claimed current" data-node="legal"', drawn)
    assert '<a href="#step-legal">' in drawn
    assert maps.mermaid_for_version(version.pk) == maps.mermaid(frontmatter_of(PARALLEL_REVIEW))
    assert "  legal -->|\"Terms need changes\"| redline" in maps.mermaid_for_version(version.pk).splitlines()

