"""processes.validation: one refusal test per rule, each asserting the exact issue line."""

import copy
import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processes.parsing import parse_process_file
from processes.validation import (
    PROFILE_KEYS,
    next_routes,
    parallel_branches,
    role_names,
    step_kind,
    validate,
)
from tests.support.mutation import mutate
from tests.support.processes import CHECKED_VENDOR, OUTAGE_RESPONSE
from tests.support.spec import FIXTURES, fixture_texts, need_spec, own_process_texts

BOTH = frozenset({"parallel-1", "check-1"})
PARALLEL = frozenset({"parallel-1"})
CHECK = frozenset({"check-1"})
NAME_HINT = "(lowercase letters and digits in words joined by single hyphens, at most 64 characters)"
ID_HINT = '(a lowercase letter, then up to 63 lowercase letters, digits, "_" or "-")'


# ---------------------------------------------------------------- building documents

START = {
    "id": "start",
    "agent": "Check the request.",
    "output": {"cleared": "boolean", "reviewer": "person", "checkedAt": "datetime"},
}
DONE = {"id": "done", "finish": "done"}


def process(*middle, **top) -> dict:
    """A valid process: start (agent) → middle steps in order → done (finish); top-level overrides."""
    doc = {
        "name": "demo",
        "description": "A process for tests.",
        "inputs": {"amount": "number", "manager": "person", "startAt": "datetime", "startDate": "date"},
        "steps": [copy.deepcopy(START), *copy.deepcopy(list(middle)), copy.deepcopy(DONE)],
    }
    for key, value in top.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def step(**keys) -> dict:
    return dict(keys)


APPROVE = {"id": "approve", "person": "finance-approver", "approve": "Approve it.", "on_reject": "start"}


def routed() -> dict:
    """start chooses between approve and decline; approve goes on to done."""
    doc = process(copy.deepcopy(APPROVE) | {"next": "done"}, {"id": "decline", "finish": "declined"})
    doc["steps"][0]["next"] = [{"to": "approve", "when": "cleared"}, "decline"]
    return doc


def fixture_frontmatter(name: str) -> dict:
    need_spec()
    return copy.deepcopy(_parsed_fixture(name))


def frontmatter_of(text: str) -> dict:
    parsed = parse_process_file(text)
    assert parsed.issues == []
    return parsed.frontmatter


@functools.cache
def _parsed_fixture(name: str) -> dict:
    parsed = parse_process_file((FIXTURES / name / "PROCESS.md").read_text(encoding="utf-8"))
    assert parsed.issues == []
    return parsed.frontmatter


def fixture_names() -> list[str]:
    return sorted(path.name for path in FIXTURES.iterdir()) if FIXTURES.is_dir() else []


def test_base_documents_are_valid():
    assert validate(process()) == []
    assert validate(routed()) == []
    assert validate(process(), profiles=BOTH) == []


# ---------------------------------------------------------------- fixtures


CORE_FIXTURES = [
    "blog-publication",
    "contract-review",
    "customer-offboarding",
    "employee-onboarding",
    "expense-reimbursement",
    "incident-postmortem",
    "invoice-approval",
    "major-incident-response",
    "supplier-rfp",
    "support-escalation",
]


@pytest.mark.parametrize("name", CORE_FIXTURES)
def test_core_fixture_is_valid_without_profiles(name):
    assert validate(fixture_frontmatter(name), folder_name=name) == []


@pytest.mark.parametrize("name", CORE_FIXTURES + ["major-incident", "vendor-check"])
def test_every_fixture_is_valid_with_both_profiles(name):
    assert validate(fixture_frontmatter(name), folder_name=name, profiles=BOTH) == []


def test_fixture_list_is_complete():
    need_spec()
    assert fixture_names() == sorted(CORE_FIXTURES + ["major-incident", "vendor-check"])


def test_a_parallel_process_without_parallel_gives_only_the_profile_lines():
    # One line per step that uses a parallel construct: the parallel step and each `next: join`.
    needs = "needs profile parallel-1, which this server does not offer"
    expected = [
        f"steps[1] (respond): {needs}",
        f"steps[2] (operations): {needs}",
        f"steps[3] (security): {needs}",
        f"steps[4] (communications): {needs}",
    ]
    assert validate(frontmatter_of(OUTAGE_RESPONSE)) == expected
    assert validate(frontmatter_of(OUTAGE_RESPONSE), profiles=CHECK) == expected


def test_a_check_process_without_check_gives_only_the_profile_line():
    expected = ["steps[0] (check_vendor): needs profile check-1, which this server does not offer"]
    assert validate(frontmatter_of(CHECKED_VENDOR)) == expected
    assert validate(frontmatter_of(CHECKED_VENDOR), profiles=PARALLEL) == expected


# ---------------------------------------------------------------- top level


def test_frontmatter_must_be_a_mapping():
    assert validate(["name"]) == ["frontmatter: must be a mapping of fields (name, description, steps ...)"]


def test_name_missing():
    assert validate(process(name=None)) == ["name: missing"]


def test_name_must_be_a_string():
    assert validate(process(name=12)) == ["name: must be a string"]


def test_name_pattern():
    assert validate(process(name="Demo_Process")) == [f'name: "Demo_Process" is not a valid name {NAME_HINT}']


def test_name_at_most_64_characters():
    long_name = "a" * 65
    assert validate(process(name="a" * 64)) == []
    assert validate(process(name=long_name)) == [f'name: "{long_name}" is not a valid name {NAME_HINT}']


def test_name_must_match_folder():
    assert validate(process(), folder_name="demo") == []
    assert validate(process(), folder_name="other") == ['name: "demo" does not match the folder name "other"']


def test_description_missing():
    assert validate(process(description=None)) == ["description: missing"]


def test_description_must_be_non_empty():
    assert validate(process(description="  ")) == ["description: must be a non-empty string"]


def test_unknown_top_level_field():
    assert validate(process(version=2)) == ["version: unknown field"]


def test_inputs_must_be_a_mapping():
    assert validate(process(inputs=["amount"])) == ["inputs: must be a mapping of field names to field specs"]


def test_input_unknown_type():
    doc = process()
    doc["inputs"]["amount"] = "money"
    assert validate(doc) == ['inputs.amount: unknown type "money"']


def test_input_field_object_unknown_key():
    doc = process()
    doc["inputs"]["amount"] = {"type": "number", "currency": "USD"}
    assert validate(doc) == ["inputs.amount.currency: unknown field"]


def test_requires_unknown_key():
    assert validate(process(requires={"systems": ["gmail"], "teams": ["ops"]})) == ["requires.teams: unknown field"]


def test_requires_systems_missing():
    assert validate(process(requires={})) == ["requires.systems: missing"]


def test_requires_systems_must_be_non_empty_list():
    assert validate(process(requires={"systems": []})) == [
        "requires.systems: must be a non-empty list of system names"
    ]


def test_requires_system_name_pattern():
    assert validate(process(requires={"systems": ["gmail", "Sales Force"]})) == [
        f'requires.systems[1]: "Sales Force" is not a valid system name {NAME_HINT}'
    ]


def test_requires_system_listed_once():
    assert validate(process(requires={"systems": ["salesforce", "gmail", "gmail"]})) == [
        'requires.systems[2]: "gmail" is listed twice'
    ]


def test_steps_missing():
    assert validate(process(steps=None)) == ["steps: missing"]


def test_steps_must_be_non_empty_list():
    assert validate(process(steps=[])) == ["steps: must be a non-empty list of steps"]


def test_step_must_be_a_mapping():
    assert validate(process("wait 3d")) == ["steps[1]: must be a mapping"]


# ---------------------------------------------------------------- step ids and kinds


def test_step_id_missing():
    assert validate(process({"wait": "1d"})) == ["steps[1]: id is missing"]


def test_step_id_pattern():
    assert validate(process({"id": "Pause", "wait": "1d"})) == [f'steps[1] (Pause): id "Pause" is not a valid step id {ID_HINT}']


def test_step_id_unique():
    doc = process({"id": "pause", "wait": "1d"}, {"id": "pause", "wait": "2d"})
    assert validate(doc) == ['steps[2] (pause): duplicate id "pause", also steps[1]']


def test_step_needs_a_kind():
    assert validate(process({"id": "pause"})) == [
        "steps[1] (pause): has no kind key (use one of agent, task, approve, wait, wait_until, wait_for, finish)"
    ]


def test_step_has_exactly_one_kind():
    assert validate(process({"id": "pause", "wait": "1d", "agent": "Wait."})) == [
        "steps[1] (pause): has several kind keys (agent, wait); a step has exactly one"
    ]


def test_unknown_step_field():
    assert validate(process({"id": "pause", "wait": "1d", "color": "red"})) == ['steps[1] (pause): unknown field "color"']


def test_key_not_allowed_on_kind():
    assert validate(process({"id": "pause", "wait": "1d", "due": "2d"})) == [
        'steps[1] (pause): "due" is not allowed on a wait step'
    ]


def test_instructions_must_be_non_empty():
    doc = process()
    doc["steps"][0]["agent"] = ""
    assert validate(doc) == ["steps[0] (start): agent must be a non-empty string"]


def test_finish_outcome_must_be_a_string():
    doc = process()
    doc["steps"][-1]["finish"] = True
    assert validate(doc) == ["steps[1] (done): finish must be a non-empty string"]


# ---------------------------------------------------------------- durations


def test_wait_duration():
    assert validate(process({"id": "pause", "wait": "3 days"})) == [
        'steps[1] (pause): wait "3 days" is not a duration (use e.g. 30m, 4h, 3d)'
    ]


def test_due_duration():
    due = copy.deepcopy(APPROVE) | {"due": "2 days"}
    assert validate(process(due)) == ['steps[1] (approve): due "2 days" is not a duration (use e.g. 30m, 4h, 3d)']


def test_duration_is_integer_and_unit_only():
    assert validate(process({"id": "pause", "wait": "1.5h"})) == [
        'steps[1] (pause): wait "1.5h" is not a duration (use e.g. 30m, 4h, 3d)'
    ]
    assert validate(process({"id": "pause", "wait": "3d\n"})) == [
        'steps[1] (pause): wait "3d\\n" is not a duration (use e.g. 30m, 4h, 3d)'
    ]


def test_timeout_duration():
    wait = {"id": "paid", "wait_for": "invoice-paid", "timeout": 30}
    assert validate(process(wait)) == ["steps[1] (paid): timeout 30 is not a duration (use e.g. 30m, 4h, 3d)"]


# ---------------------------------------------------------------- waits


def test_wait_until_names_undeclared_input():
    assert validate(process({"id": "later", "wait_until": "inputs.publishAt"})) == [
        'steps[1] (later): wait_until "inputs.publishAt" names undeclared input field "publishAt"'
    ]


def test_wait_until_needs_a_datetime_field():
    assert validate(process({"id": "later", "wait_until": "inputs.startDate"})) == [
        'steps[1] (later): wait_until "inputs.startDate" names a date field, not a datetime field'
    ]


def test_wait_until_step_output_path():
    assert validate(process({"id": "later", "wait_until": "steps.start.output.checkedAt"})) == []


def test_wait_until_malformed_path():
    assert validate(process({"id": "later", "wait_until": "start.checkedAt"})) == [
        'steps[1] (later): wait_until "start.checkedAt" is not a path (use inputs.<field> or steps.<id>.output.<field>)'
    ]


def test_wait_until_unknown_step():
    assert validate(process({"id": "later", "wait_until": "steps.begin.output.checkedAt"})) == [
        'steps[1] (later): wait_until "steps.begin.output.checkedAt" names unknown step "begin"'
    ]


def test_wait_until_undeclared_output_field():
    assert validate(process({"id": "later", "wait_until": "steps.start.output.dueAt"})) == [
        'steps[1] (later): wait_until "steps.start.output.dueAt" names undeclared output field "dueAt" of step "start"'
    ]


def test_wait_for_event_name():
    assert validate(process({"id": "paid", "wait_for": "Invoice Paid"})) == [
        f'steps[1] (paid): wait_for "Invoice Paid" is not a valid event name {ID_HINT}'
    ]


def test_on_timeout_names_unknown_step():
    wait = {"id": "paid", "wait_for": "invoice-paid", "timeout": "30d", "on_timeout": "folowup"}
    assert validate(process(wait)) == ['steps[1] (paid): on_timeout names unknown step "folowup"']


# ---------------------------------------------------------------- people


def test_task_needs_person():
    assert validate(process({"id": "sign", "task": "Sign it."})) == ["steps[1] (sign): person is required on a task step"]


def test_approve_needs_person():
    approve = {key: value for key, value in APPROVE.items() if key != "person"}
    assert validate(process(approve)) == ["steps[1] (approve): person is required on an approve step"]


def test_person_not_allowed_on_agent():
    doc = process()
    doc["steps"][0]["person"] = "reviewer"
    assert validate(doc) == ['steps[0] (start): "person" is not allowed on an agent step']


def test_person_role_name_pattern():
    sign = {"id": "sign", "task": "Sign it.", "person": "Finance Approver"}
    assert validate(process(sign)) == [
        'steps[1] (sign): person "Finance Approver" is not a valid role name (lowercase letters and digits in words joined by "-" or "_")'
    ]


def test_person_initiator_and_paths_are_accepted():
    doc = process(
        {"id": "a", "task": "A.", "person": "initiator"},
        {"id": "b", "task": "B.", "person": "inputs.manager"},
        {"id": "c", "task": "C.", "person": "steps.start.output.reviewer"},
        {"id": "d", "task": "D.", "person": "it_ops-lead"},
    )
    assert validate(doc) == []


def test_person_path_must_name_a_person_field():
    sign = {"id": "sign", "task": "Sign it.", "person": "inputs.amount"}
    assert validate(process(sign)) == ['steps[1] (sign): person "inputs.amount" names a number field, not a person field']


def test_person_path_must_name_a_declared_field():
    sign = {"id": "sign", "task": "Sign it.", "person": "inputs.managerEmail"}
    assert validate(process(sign)) == [
        'steps[1] (sign): person "inputs.managerEmail" names undeclared input field "managerEmail"'
    ]


def test_person_path_unknown_step():
    sign = {"id": "sign", "task": "Sign it.", "person": "steps.review.output.reviewer"}
    assert validate(process(sign)) == ['steps[1] (sign): person "steps.review.output.reviewer" names unknown step "review"']


# ---------------------------------------------------------------- output and evidence


def test_output_field_spec_unknown_type():
    doc = process()
    doc["steps"][0]["output"]["cleared"] = "bool"
    assert validate(doc) == ['steps[0] (start): output.cleared: unknown type "bool"']


def test_output_one_of_values_have_the_field_type():
    doc = process()
    doc["steps"][0]["output"]["tier"] = {"type": "number", "one_of": [1, "two"]}
    assert validate(doc) == ["steps[0] (start): output.tier.one_of[1]: expected number"]


def test_output_must_be_a_mapping():
    doc = process()
    doc["steps"][0]["output"] = ["cleared"]
    assert validate(doc) == ["steps[0] (start): output must be a mapping of field names to field specs"]


def test_output_not_allowed_on_approve():
    approve = copy.deepcopy(APPROVE) | {"output": {"ok": "boolean"}}
    assert validate(process(approve)) == ['steps[1] (approve): "output" is not allowed on an approve step']


def test_evidence_kind():
    doc = process()
    doc["steps"][0]["evidence"] = ["file", "pdf"]
    assert validate(doc) == ['steps[0] (start): evidence[1] "pdf" is not an evidence kind (use file or link)']


def test_evidence_kind_listed_once():
    doc = process()
    doc["steps"][0]["evidence"] = ["file", "link", "file"]
    assert validate(doc) == ['steps[0] (start): evidence lists "file" twice']


# ---------------------------------------------------------------- next and other routes


def test_next_names_unknown_step():
    doc = routed()
    doc["steps"][0]["next"] = [{"to": "approve"}, "decline", "aprove"]
    assert validate(doc) == ['steps[0] (start): next names unknown step "aprove"']


def test_next_must_be_step_id_or_list():
    doc = process()
    doc["steps"][0]["next"] = {"to": "done"}
    assert validate(doc) == ["steps[0] (start): next must be a step id or a list of routes"]


def test_next_list_needs_two_routes():
    doc = process()
    doc["steps"][0]["next"] = ["done"]
    assert validate(doc) == ["steps[0] (start): next must list two or more routes (or name one step id)"]


def test_next_list_only_on_agent_and_task():
    doc = routed()
    doc["steps"][1]["next"] = ["done", "decline"]
    assert validate(doc) == ["steps[1] (approve): next can be a list only on agent and task steps, not on an approve step"]


def test_next_list_names_each_target_once():
    doc = routed()
    doc["steps"][0]["next"] = ["approve", {"to": "decline"}, {"to": "approve", "when": "again"}]
    assert validate(doc) == ['steps[0] (start): next lists "approve" twice']


def test_route_unknown_field():
    doc = routed()
    doc["steps"][0]["next"][0]["if"] = "cleared"
    assert validate(doc) == ['steps[0] (start): next[0] has unknown field "if"']


def test_route_needs_to():
    doc = routed()
    doc["steps"][0]["next"].append({"when": "never"})
    assert validate(doc) == ['steps[0] (start): next[2] is missing "to"']


def test_route_when_must_be_non_empty():
    doc = routed()
    doc["steps"][0]["next"][0]["when"] = ""
    assert validate(doc) == ['steps[0] (start): next[0] "when" must be a non-empty string']


def test_route_must_be_id_or_object():
    doc = routed()
    doc["steps"][0]["next"].append(7)
    assert validate(doc) == ["steps[0] (start): next[2] must be a step id or { to, when }"]


def test_on_reject_names_unknown_step():
    doc = routed()
    doc["steps"][1]["on_reject"] = "strat"
    assert validate(doc) == ['steps[1] (approve): on_reject names unknown step "strat"']


def test_finish_has_no_next():
    doc = process()
    doc["steps"][-1]["next"] = "start"
    assert validate(doc) == ['steps[1] (done): "next" is not allowed on a finish step']


def test_last_non_finish_step_must_name_next():
    doc = process()
    doc["steps"].pop()
    assert validate(doc) == ["steps[0] (start): is the last step, so it must name next"]


def test_every_step_reachable():
    doc = routed()
    doc["steps"].insert(3, {"id": "orphan", "agent": "Nobody comes here.", "next": "done"})
    assert validate(doc) == ["steps[3] (orphan): not reachable from the first step"]


def test_on_reject_and_on_timeout_make_steps_reachable():
    doc = process(
        {"id": "paid", "wait_for": "invoice-paid", "timeout": "3d", "on_timeout": "chase", "next": "approve"},
        {"id": "chase", "agent": "Chase payment.", "next": "done"},
        copy.deepcopy(APPROVE) | {"on_reject": "fix", "next": "done"},
        {"id": "fix", "agent": "Fix it.", "next": "approve"},
    )
    assert validate(doc) == []


def test_next_edges_form_no_cycle():
    doc = process({"id": "a", "agent": "A.", "next": "b"}, {"id": "b", "agent": "B.", "next": "a"})
    assert validate(doc) == [
        "steps[3] (done): not reachable from the first step",
        "steps: next/on_timeout edges form a cycle: a → b → a",
    ]


def test_on_timeout_edges_count_for_cycles():
    doc = process(
        {"id": "a", "agent": "A."},
        {"id": "paid", "wait_for": "invoice-paid", "timeout": "3d", "on_timeout": "a", "next": "done"},
    )
    assert validate(doc) == ["steps: next/on_timeout edges form a cycle: a → paid → a"]


def test_on_reject_may_go_back():
    doc = process(copy.deepcopy(APPROVE))
    assert validate(doc) == []


def test_next_to_itself_is_a_cycle():
    doc = process({"id": "loop", "agent": "Again.", "next": ["loop", "done"]})
    assert validate(doc) == ["steps: next/on_timeout edges form a cycle: loop → loop"]


# ---------------------------------------------------------------- many faults at once


def test_six_faults_are_reported_at_once():
    doc = routed()
    doc["name"] = "Demo"  # 1
    doc["owner"] = "ops"  # 2
    doc["steps"][0]["evidence"] = ["photo"]  # 3
    doc["steps"][1]["due"] = "2 days"  # 4
    doc["steps"][1]["on_reject"] = "chek"  # 5
    doc["steps"].insert(3, {"id": "orphan", "agent": "Alone.", "next": "done"})  # 6
    assert validate(doc) == [
        f'name: "Demo" is not a valid name {NAME_HINT}',
        "owner: unknown field",
        'steps[0] (start): evidence[0] "photo" is not an evidence kind (use file or link)',
        'steps[1] (approve): on_reject names unknown step "chek"',
        'steps[1] (approve): due "2 days" is not a duration (use e.g. 30m, 4h, 3d)',
        "steps[3] (orphan): not reachable from the first step",
    ]


def test_garbage_everywhere_reports_without_raising():
    doc = {"name": None, "description": [], "inputs": 3, "requires": "x", "steps": [None, {"id": 5, "next": {}}]}
    assert validate(doc) == [
        "name: must be a string",
        "description: must be a non-empty string",
        "inputs: must be a mapping of field names to field specs",
        "requires: must be a mapping with systems",
        "steps[0]: must be a mapping",
        "steps[1]: id must be a string",
        "steps[1]: has no kind key (use one of agent, task, approve, wait, wait_until, wait_for, finish)",
        "steps[1]: next must be a step id or a list of routes",
    ]


# ---------------------------------------------------------------- parallel-1


def incident(*, branch_steps=None, after=None, parallel=None) -> dict:
    """The profile's example: activate → respond (operations, security) → close_review → done."""
    branches = branch_steps or [
        {"id": "operations", "person": "operations-lead", "task": "Restore service.", "next": "join"},
        {"id": "security", "person": "security-lead", "task": "Contain impact.", "next": "join"},
    ]
    return {
        "name": "incident",
        "description": "Respond to an incident.",
        "inputs": {"commander": "person"},
        "steps": [
            {"id": "activate", "agent": "Open the bridge.", "output": {"bridge": "string"}},
            {"id": "respond", "parallel": parallel or ["operations", "security"], "next": "close_review"},
            *branches,
            {"id": "close_review", "person": "inputs.commander", "approve": "Close.", "on_reject": "respond"},
            *(after or []),
            {"id": "done", "finish": "stabilized"},
        ],
    }


def test_parallel_base_is_valid():
    assert validate(incident(), profiles=PARALLEL) == []
    assert parallel_branches(incident()) == {"respond": {"operations": ["operations"], "security": ["security"]}}


def test_parallel_without_profile():
    needs = "needs profile parallel-1, which this server does not offer"
    assert validate(incident()) == [f"steps[1] (respond): {needs}", f"steps[2] (operations): {needs}", f"steps[3] (security): {needs}"]


def test_join_without_profile_is_a_profile_use():
    doc = process()
    doc["steps"][0]["next"] = ["join", "done"]
    assert validate(doc) == ["steps[0] (start): needs profile parallel-1, which this server does not offer"]


def test_join_is_an_ordinary_step_id_without_parallel():
    doc = process({"id": "join", "agent": "Join the team.", "next": "done"})
    assert validate(doc) == []
    assert validate(doc, profiles=PARALLEL) == []


def test_parallel_needs_two_entries():
    operations_only = incident(parallel=["operations"], branch_steps=incident()["steps"][2:3])
    assert validate(operations_only, profiles=PARALLEL) == [
        "steps[1] (respond): parallel must list two or more step ids (the branch entries)"
    ]


def test_parallel_names_unknown_step():
    assert validate(incident(parallel=["operations", "security", "comms"]), profiles=PARALLEL) == [
        'steps[1] (respond): parallel names unknown step "comms"'
    ]


def test_parallel_lists_entry_once():
    assert validate(incident(parallel=["operations", "security", "operations"]), profiles=PARALLEL) == [
        'steps[1] (respond): parallel lists "operations" twice'
    ]


def test_parallel_entry_cannot_be_a_finish():
    assert validate(incident(parallel=["operations", "security", "done"]), profiles=PARALLEL) == [
        'steps[1] (respond): parallel names "done", a finish step; a branch cannot end the run'
    ]


def test_parallel_step_takes_only_next():
    doc = incident()
    doc["steps"][1]["due"] = "1h"
    assert validate(doc, profiles=PARALLEL) == ['steps[1] (respond): "due" is not allowed on a parallel step']


def test_branch_step_names_next_explicitly():
    doc = incident()
    del doc["steps"][3]["next"]
    assert validate(doc, profiles=PARALLEL) == [
        'steps[3] (security): is in a branch of "respond", so it must name next explicitly (join ends the branch)'
    ]


def test_branch_step_reaches_join():
    doc = incident()
    doc["steps"][2]["next"] = "ops_check"
    doc["steps"].insert(4, {"id": "ops_check", "agent": "Check.", "next": "operations"})
    assert validate(doc, profiles=PARALLEL) == [
        'steps[2] (operations): is in a branch of "respond" but never reaches join',
        'steps[4] (ops_check): is in a branch of "respond" but never reaches join',
        "steps: next/on_timeout edges form a cycle: operations → ops_check → operations",
    ]


def test_longer_branch_is_valid():
    doc = incident()
    doc["steps"][2]["next"] = "ops_check"
    doc["steps"].insert(4, {"id": "ops_check", "agent": "Check.", "next": "join"})
    assert validate(doc, profiles=PARALLEL) == []
    assert parallel_branches(doc)["respond"]["operations"] == ["operations", "ops_check"]


def test_no_step_in_two_branches():
    doc = incident()
    doc["steps"][2]["next"] = "shared"
    doc["steps"][3]["next"] = "shared"
    doc["steps"].insert(4, {"id": "shared", "agent": "Write it up.", "next": "join"})
    assert validate(doc, profiles=PARALLEL) == [
        'steps[4] (shared): is in more than one branch (entered at "operations" and "security")'
    ]


def test_no_step_outside_routes_into_a_branch():
    doc = incident()
    doc["steps"][0]["next"] = ["respond", "security"]
    assert validate(doc, profiles=PARALLEL) == [
        'steps[0] (activate): next names "security", which is inside a branch of "respond"; only its parallel step enters a branch'
    ]


def test_branch_step_never_routes_outside_its_branch():
    doc = incident()
    doc["steps"][2]["next"] = "close_review"
    assert validate(doc, profiles=PARALLEL) == [
        'steps[2] (operations): next names "close_review", which is outside its branch (end the branch with next: join)'
    ]


def test_branch_step_never_routes_to_a_finish():
    doc = incident()
    doc["steps"][2]["next"] = "done"
    assert validate(doc, profiles=PARALLEL) == [
        'steps[2] (operations): next names the finish step "done"; a branch ends with join, not a finish'
    ]


def test_branch_step_never_routes_to_its_parallel_step():
    doc = incident()
    doc["steps"][2]["next"] = "respond"
    assert validate(doc, profiles=PARALLEL) == [
        'steps[2] (operations): next names its own parallel step "respond"; a branch ends with join'
    ]


def test_join_only_inside_a_branch():
    doc = incident()
    doc["steps"][4]["next"] = "join"
    assert validate(doc, profiles=PARALLEL) == [
        "steps[4] (close_review): next is join, but join is allowed only inside a branch",
        "steps[5] (done): not reachable from the first step",
    ]


def test_on_reject_inside_a_branch_stays_in_the_branch():
    review = {"id": "ops_review", "person": "ops-manager", "approve": "OK?", "on_reject": "security", "next": "join"}
    doc = incident()
    doc["steps"][2]["next"] = "ops_review"
    doc["steps"].insert(4, review)
    assert validate(doc, profiles=PARALLEL) == [
        'steps[4] (ops_review): on_reject names "security", which is not in this branch of "respond"'
    ]


def test_on_reject_inside_a_branch_to_its_own_entry():
    review = {"id": "ops_review", "person": "ops-manager", "approve": "OK?", "on_reject": "operations", "next": "join"}
    doc = incident()
    doc["steps"][2]["next"] = "ops_review"
    doc["steps"].insert(4, review)
    assert validate(doc, profiles=PARALLEL) == []


def test_on_reject_after_the_parallel_step_not_into_a_branch():
    doc = incident()
    doc["steps"][4]["on_reject"] = "security"
    assert validate(doc, profiles=PARALLEL) == [
        'steps[4] (close_review): on_reject names "security", which is inside a branch of "respond"; return to the parallel step or a step before it'
    ]


def test_on_reject_after_the_parallel_step_may_go_before_it():
    doc = incident()
    doc["steps"][4]["on_reject"] = "activate"
    assert validate(doc, profiles=PARALLEL) == []


def test_no_parallel_step_inside_a_branch():
    inner = [
        {"id": "operations", "parallel": ["ops_a", "ops_b"], "next": "join"},
        {"id": "ops_a", "agent": "A.", "next": "join"},
        {"id": "ops_b", "agent": "B.", "next": "join"},
        {"id": "security", "person": "security-lead", "task": "Contain impact.", "next": "join"},
    ]
    assert validate(incident(branch_steps=inner), profiles=PARALLEL) == [
        'steps[2] (operations): is a parallel step inside a branch of "respond"; parallel-1 does not nest'
    ]


def test_no_step_with_id_join_when_parallel_is_used():
    doc = incident(after=[{"id": "join", "agent": "Tidy up.", "next": "done"}])
    doc["steps"][4]["next"] = "done"
    assert validate(doc, profiles=PARALLEL) == [
        'steps[5] (join): id "join" is reserved: a process that uses parallel ends its branches with join',
        "steps[5] (join): not reachable from the first step",
    ]


def test_parallel_step_continues_by_default_into_its_branch():
    doc = incident()
    del doc["steps"][1]["next"]
    assert validate(doc, profiles=PARALLEL) == [
        'steps[1] (respond): continues by default to "operations", which is inside a branch of "respond"; name next',
        "steps[4] (close_review): not reachable from the first step",
        "steps[5] (done): not reachable from the first step",
    ]


def test_parallel_join_and_fork_edges_are_not_cycles():
    # close_review rejects back to respond, re-running every branch: not a cycle.
    doc = incident(after=[{"id": "wrap_up", "agent": "Summarise.", "next": "done"}])
    assert validate(doc, profiles=PARALLEL) == []


def test_branch_entries_are_reachable_through_the_parallel_step():
    doc = incident()
    doc["steps"][1]["parallel"] = ["operations"] + ["security"]
    assert validate(doc, profiles=PARALLEL) == []
    doc["steps"][1]["parallel"] = ["operations", "close_review"]
    assert "steps[3] (security): not reachable from the first step" in validate(doc, profiles=PARALLEL)


# ---------------------------------------------------------------- check-1


def checked(check, **extra) -> dict:
    doc = process()
    doc["steps"][0]["check"] = check
    doc["steps"][0].update(extra)
    return doc


YES_NO = {"ask": "Is the verdict right?", "pass": 0.9, "fail": 0.5}
CHOICE = {"ask": "What does it do?", "one_of": {"states": "States it.", "hedges": "Hedges."}, "pass": ["states"]}
RUBRIC = {"ask": "How complete?", "levels": ["None.", "Some.", "All."], "pass": 2, "confidence": 0.8}


def issue(text: str) -> list[str]:
    return [f"steps[0] (start): {text}"]


def test_check_forms_are_valid():
    assert validate(checked("Is the report complete?"), profiles=CHECK) == []
    assert validate(checked([YES_NO, CHOICE, RUBRIC], advisory=True), profiles=CHECK) == []


def test_check_without_profile():
    assert validate(checked("Is it right?")) == issue("needs profile check-1, which this server does not offer")


def test_advisory_without_profile():
    doc = process()
    doc["steps"][0]["advisory"] = True
    assert validate(doc) == issue("needs profile check-1, which this server does not offer")


def test_check_short_form_non_empty():
    assert validate(checked(""), profiles=CHECK) == issue("check must be a question or a non-empty list of questions")


def test_check_full_form_non_empty():
    assert validate(checked([]), profiles=CHECK) == issue("check must be a question or a non-empty list of questions")


def test_check_only_on_agent_and_task():
    doc = process(copy.deepcopy(APPROVE) | {"check": "Is it right?"})
    assert validate(doc, profiles=CHECK) == ['steps[1] (approve): "check" is not allowed on an approve step']


def test_check_question_must_be_a_mapping():
    assert validate(checked(["Is it right?"]), profiles=CHECK) == issue("check[0] must be a mapping with ask")


def test_check_question_needs_ask():
    assert validate(checked([{"pass": 0.9}]), profiles=CHECK) == issue("check[0] is missing ask")


def test_check_question_ask_non_empty():
    assert validate(checked([{"ask": " "}]), profiles=CHECK) == issue("check[0] ask must be a non-empty string")


def test_check_question_unknown_field():
    assert validate(checked([YES_NO | {"weight": 2}]), profiles=CHECK) == issue('check[0] has unknown field "weight"')


def test_check_question_one_kind():
    question = CHOICE | {"levels": ["a", "b"]}
    assert validate(checked([question]), profiles=CHECK) == issue("check[0] has both one_of and levels; a question has at most one")


def test_yes_no_pass_in_range():
    assert validate(checked([YES_NO | {"pass": 1.5}]), profiles=CHECK) == issue("check[0] pass must be a number from 0 to 1")


def test_yes_no_fail_in_range():
    assert validate(checked([YES_NO | {"fail": True}]), profiles=CHECK) == issue("check[0] fail must be a number from 0 to 1")


def test_yes_no_fail_below_pass():
    assert validate(checked([YES_NO | {"fail": 0.9}]), profiles=CHECK) == issue("check[0] fail must be below pass")


def test_yes_no_refuses_choice_keys():
    assert validate(checked([YES_NO | {"unsure": ["x"]}]), profiles=CHECK) == issue(
        'check[0] "unsure" is not allowed on a yes/no question'
    )


def test_choice_needs_two_answers():
    question = CHOICE | {"one_of": {"states": "States it."}}
    assert validate(checked([question]), profiles=CHECK) == issue(
        "check[0] one_of must map two or more answer names to descriptions"
    )


def test_choice_answer_has_description():
    question = CHOICE | {"one_of": {"states": "States it.", "hedges": 3}}
    assert validate(checked([question]), profiles=CHECK) == issue(
        'check[0] one_of "hedges" must have a description (a string)'
    )


def test_choice_pass_required():
    question = {key: value for key, value in CHOICE.items() if key != "pass"}
    assert validate(checked([question]), profiles=CHECK) == issue("check[0] pass is missing (the answers that pass)")


def test_choice_pass_non_empty_list():
    assert validate(checked([CHOICE | {"pass": []}]), profiles=CHECK) == issue(
        "check[0] pass must be a non-empty list of one_of answers"
    )


def test_choice_pass_names_answers():
    assert validate(checked([CHOICE | {"pass": ["states", "agrees"]}]), profiles=CHECK) == issue(
        'check[0] pass names unknown answer "agrees"'
    )


def test_choice_unsure_names_answers():
    assert validate(checked([CHOICE | {"unsure": ["unclear"]}]), profiles=CHECK) == issue(
        'check[0] unsure names unknown answer "unclear"'
    )


def test_choice_unsure_is_a_list():
    assert validate(checked([CHOICE | {"unsure": "hedges"}]), profiles=CHECK) == issue(
        "check[0] unsure must be a list of one_of answers"
    )


def test_choice_answer_not_both_pass_and_unsure():
    assert validate(checked([CHOICE | {"unsure": ["states"]}]), profiles=CHECK) == issue(
        'check[0] "states" is in both pass and unsure'
    )


def test_choice_confidence_in_range():
    assert validate(checked([CHOICE | {"confidence": 80}]), profiles=CHECK) == issue(
        "check[0] confidence must be a number from 0 to 1"
    )


def test_rubric_levels_two_to_ten():
    assert validate(checked([RUBRIC | {"levels": ["Only."], "pass": 0}]), profiles=CHECK) == issue(
        "check[0] levels must be a list of 2 to 10 level descriptions, worst first"
    )
    eleven = [f"Level {n}." for n in range(11)]
    assert validate(checked([RUBRIC | {"levels": eleven}]), profiles=CHECK) == issue(
        "check[0] levels must be a list of 2 to 10 level descriptions, worst first"
    )


def test_rubric_pass_required():
    question = {key: value for key, value in RUBRIC.items() if key != "pass"}
    assert validate(checked([question]), profiles=CHECK) == issue(
        "check[0] pass is missing (the lowest level that passes, from 0)"
    )


def test_rubric_pass_is_a_level_index():
    assert validate(checked([RUBRIC | {"pass": 3}]), profiles=CHECK) == issue("check[0] pass must be a level from 0 to 2")
    assert validate(checked([RUBRIC | {"pass": 1.5}]), profiles=CHECK) == issue("check[0] pass must be a level from 0 to 2")


def test_rubric_refuses_yes_no_keys():
    assert validate(checked([RUBRIC | {"fail": 0}]), profiles=CHECK) == issue('check[0] "fail" is not allowed on a rubric question')


def test_choice_refuses_rubric_keys():
    assert validate(checked([CHOICE | {"fail": 0.2}]), profiles=CHECK) == issue('check[0] "fail" is not allowed on a choice question')


def test_advisory_is_boolean():
    assert validate(checked("Right?", advisory="yes"), profiles=CHECK) == issue("advisory must be true or false")


def test_advisory_only_beside_check():
    doc = process()
    doc["steps"][0]["advisory"] = True
    assert validate(doc, profiles=CHECK) == issue("advisory is allowed only beside check")


# ---------------------------------------------------------------- helpers


def test_profile_keys():
    assert PROFILE_KEYS == {"parallel": "parallel-1", "check": "check-1", "advisory": "check-1"}


def test_step_kind():
    assert step_kind({"id": "a", "agent": "x"}) == "agent"
    assert step_kind({"id": "a", "parallel": ["b", "c"]}) == "parallel"
    assert step_kind({"id": "a"}) is None
    assert step_kind({"id": "a", "agent": "x", "task": "y"}) is None
    assert step_kind("agent") is None


def test_role_names_in_first_use_order():
    doc = process(
        {"id": "a", "task": "A.", "person": "legal"},
        {"id": "b", "task": "B.", "person": "initiator"},
        {"id": "c", "task": "C.", "person": "inputs.manager"},
        {"id": "d", "task": "D.", "person": "finance"},
        {"id": "e", "task": "E.", "person": "legal"},
    )
    assert role_names(doc) == ["legal", "finance"]


def test_next_routes():
    steps = routed()["steps"]
    assert next_routes(steps, 0) == [{"to": "approve", "when": "cleared"}, {"to": "decline"}]
    assert next_routes(steps, 1) == [{"to": "done"}]
    assert next_routes(steps, 2) == []
    plain = process({"id": "pause", "wait": "1d"})["steps"]
    assert next_routes(plain, 0) == [{"to": "pause"}]
    assert next_routes(plain, 1) == [{"to": "done"}]


# ---------------------------------------------------------------- never raises

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
KEYS = st.sampled_from(
    ["name", "description", "inputs", "requires", "systems", "steps", "id", "agent", "task", "approve", "wait",
     "wait_until", "wait_for", "finish", "parallel", "next", "to", "when", "person", "on_reject", "on_timeout",
     "timeout", "due", "output", "evidence", "type", "items", "one_of", "optional", "check", "advisory", "ask",
     "pass", "fail", "levels", "unsure", "confidence", "join"]
) | st.text(max_size=6)
JSON_DATA = st.recursive(
    JSON_SCALARS, lambda children: st.lists(children, max_size=5) | st.dictionaries(KEYS, children, max_size=6), max_leaves=40
)
PROFILE_SETS = st.sets(st.sampled_from(["parallel-1", "check-1", "other-1"])).map(frozenset)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(data=JSON_DATA, profiles=PROFILE_SETS)
def test_validate_never_raises_on_arbitrary_data(data, profiles):
    issues = validate(data, profiles=profiles, folder_name="demo")
    assert isinstance(issues, list) and all(isinstance(line, str) for line in issues)


SMALL_DATA = st.recursive(
    JSON_SCALARS | KEYS, lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3), max_leaves=6
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.dictionaries(KEYS, SMALL_DATA, max_size=5), steps=st.lists(st.dictionaries(KEYS, SMALL_DATA, max_size=6), max_size=6))
def test_validate_never_raises_on_step_shaped_data(data, steps):
    assert isinstance(validate({**data, "steps": steps}, profiles=BOTH), list)


# Seeds: the project's own processes, and the spec's fixtures too when they are beside it.
MUTATION_SEEDS = [frontmatter_of(text) for text in own_process_texts() + fixture_texts()]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(MUTATION_SEEDS),
    path=st.lists(st.integers(min_value=0, max_value=50), max_size=6),
    replacement=JSON_DATA,
    profiles=PROFILE_SETS,
)
def test_validate_never_raises_on_mutated_processes(seed, path, replacement, profiles):
    doc = mutate(copy.deepcopy(seed), path, replacement)
    assert isinstance(validate(doc, profiles=profiles, folder_name=seed["name"]), list)


GRAPH_IDS = st.sampled_from(["a", "b", "c", "d", "e", "join"])


@st.composite
def graph_steps(draw):
    """Small step graphs: the shapes the parallel and graph rules reason about."""
    steps = []
    for _ in range(draw(st.integers(min_value=1, max_value=7))):
        kind = draw(st.sampled_from(["agent", "task", "approve", "wait_for", "finish", "parallel"]))
        step = {"id": draw(GRAPH_IDS), kind: draw(st.lists(GRAPH_IDS, max_size=3)) if kind == "parallel" else "x"}
        if kind in ("task", "approve"):
            step["person"] = "someone"
        if draw(st.booleans()):
            step["next"] = draw(GRAPH_IDS | st.lists(GRAPH_IDS | st.builds(lambda to: {"to": to}, GRAPH_IDS), max_size=3))
        for key in ("on_reject", "on_timeout"):
            if draw(st.booleans()):
                step[key] = draw(GRAPH_IDS)
        steps.append(step)
    return steps


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(steps=graph_steps(), profiles=PROFILE_SETS)
def test_validate_never_raises_on_step_graphs(steps, profiles):
    doc = {"name": "g", "description": "Graph.", "steps": steps}
    issues = validate(doc, profiles=profiles)
    assert all(isinstance(line, str) for line in issues)
    assert len(issues) == len(set(issues)), "the same line reported twice"
    if not issues:  # the helpers the engine uses work on whatever validates
        parallel_branches(doc)
        assert all(isinstance(next_routes(steps, index), list) for index in range(len(steps)))
