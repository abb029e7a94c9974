"""Fuzzing the API (issue 8): schemathesis against the OpenAPI 3.1 schema the server serves at
/api/v1/schema/ (one POST per tool, request bodies = the spec's JSON Schemas), in process through
Django's WSGI application.

For every tool, with an agent token and with a person token (a finance approver who is also an
operator), schemathesis generates request bodies:

- positive cases (bodies valid against the schema), where the fields that name things — runId,
  stepId, token, workItemId, snapshot, process, file refs, event names, next, output, inputs — are
  often swapped for real ones from a realistic organization (published processes; runs that are
  ready, claimed, renewed, waiting on an approval, on an initiator's task, on an event, cancelled),
  so that calls reach the deep code paths and not only `not_found`; a quarter of them are then
  pushed to an edge that stays valid: a NUL inside a string, a whole number written as 2.0;
- negative cases (bodies that break the schema), which must be refused as `invalid` (400).

Every answer: no 5xx, a JSON envelope valid against the spec's schemas (check_envelope), the HTTP
status that belongs to the envelope (200 ok, 400 invalid, 403, 404, 409, 422; 503 never here), and
schemathesis' own conformance checks against the served schema. Deterministic: derandomized
Hypothesis, no example database; the realistic state is rebuilt for every tool.
"""

import base64
import json
import uuid

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core import NotSet
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from kernel.errors import HTTP_STATUS
from tests.support.envelopes import check_envelope
from tests.support.spec import EXAMPLES

pytestmark = pytest.mark.django_db(transaction=True)

POSITIVE_EXAMPLES = 20
NEGATIVE_EXAMPLES = 6

PING = """---
name: ping
description: Wait for a ping, then an agent reacts to it.
steps:
  - id: wait_ping
    wait_for: ping
  - id: react
    agent: React to the ping.
    output:
      seen: boolean
  - id: done
    finish: done
---

Pings.
"""

ONBOARDING = {"vendorName": "Acme", "amount": 48000}
CHECKED = {"cleared": True, "summary": "No hits on either list."}


class World:
    """A realistic organization for the fuzzer: ids and tokens it may use in place of random strings."""

    def __init__(self, agent, person, file_id: str):
        self.agent, self.person, self.file_id = agent, person, file_id
        self.values: dict[str, list] = {}
        self.coherent: dict[str, list[dict]] = {}

    def build(self) -> "World":
        agent, person, file_id = self.agent, self.person, self.file_id

        def start():
            return agent.ok("start_run", process="supplier-onboarding", inputs=ONBOARDING)["run"]["id"]

        ready, claimed, renewed, reviewing, cancelled = (start() for _ in range(5))
        live = agent.ok("claim", runId=claimed, stepId="check_vendor")["token"]
        old = agent.ok("claim", runId=renewed, stepId="check_vendor")["token"]
        new = agent.ok("renew", token=old, progress="Half way.")["token"]
        checking = agent.ok("claim", runId=reviewing, stepId="check_vendor")["token"]
        agent.ok("submit", token=checking, output=CHECKED, summary="Searched both lists.",
                 evidence=[{"kind": "file", "ref": file_id}], next="approve", reason="Cleared.")
        person.ok("cancel", runId=cancelled, reason="Duplicate request.")
        expense = person.ok("start_run", process="expense-approval", mode="test",
                            inputs={"manager": "fin@example.com", "amount": 12.5, "category": "travel"})["run"]["id"]
        ping = agent.ok("start_run", process="ping", inputs={})["run"]["id"]
        [review_item] = person.ok("get_run", runId=reviewing)["workItems"]
        [expense_item] = person.ok("get_run", runId=expense)["workItems"]
        runs = [ready, claimed, renewed, reviewing, cancelled, expense, ping]
        self.values = {
            "runId": runs,
            "stepId": ["check_vendor", "approve", "decline", "done", "attach_receipts", "check_policy", "wait_ping",
                       "react"],
            "token": [live, old, new, checking],
            "workItemId": [review_item["id"], expense_item["id"]],
            "snapshot": [review_item["snapshot"], expense_item["snapshot"]],
            "process": ["supplier-onboarding", "expense-approval", "ping"],
            "name": ["ping"],
            "next": ["approve", "decline"],
            "output": [CHECKED, {"cleared": False, "summary": "A hit."}, {"seen": True}, EXPENSE_OUTPUT],
            "inputs": [ONBOARDING, {"vendorName": 5}, {}],
            "evidence": [[{"kind": "file", "ref": file_id}], [{"kind": "link", "ref": "https://example.com/r"}]],
            "version": [1, 2],
            "contentBase64": [base64.b64encode(b"a receipt").decode(), ""],
        }
        screened = {"output": CHECKED, "summary": "Searched both lists.", "next": "approve", "reason": "Cleared.",
                    "evidence": [{"kind": "file", "ref": file_id}]}
        review = {"runId": reviewing, "workItemId": review_item["id"], "snapshot": review_item["snapshot"]}
        task = {"runId": expense, "workItemId": expense_item["id"], "snapshot": expense_item["snapshot"]}
        # Bodies whose names fit together, laid over generated ones (which keep their other fields).
        self.coherent = {
            "get_run": [{"runId": run_id} for run_id in runs],
            "get_work": [{"process": name} for name in self.values["process"]],
            "list_runs": [{"process": "supplier-onboarding"}, {"state": "waiting"}, {"inputs": {"vendorName": "Acme"}},
                          {"inputs": {"amount": 48000}, "state": "active"}],
            "start_run": [{"process": "supplier-onboarding", "inputs": ONBOARDING},
                          {"process": "expense-approval", "inputs": {"manager": "fin@example.com", "amount": 1,
                                                                     "category": "meals"}},
                          {"process": "ping", "inputs": {}}, {"process": "supplier-onboarding", "version": 1}],
            "claim": [{"runId": ready, "stepId": "check_vendor"}, {"runId": reviewing, "stepId": "approve"},
                      {"runId": ping, "stepId": "react"}, {"runId": cancelled, "stepId": "check_vendor"},
                      {"runId": claimed, "stepId": "check_vendor"}],
            "submit": [{"token": live, **screened}, {"token": new, **screened}, {"token": live},
                       {"token": old, **screened}],
            "renew": [{"token": live}, {"token": new}, {"token": old}],
            "escalate": [{"token": live}, {"token": new}, {"token": old}],
            "decide": [review, {**review, "decision": "approved"}, {**review, "decision": "rejected", "note": "No."},
                       {**task, "decision": "completed", "output": EXPENSE_OUTPUT, "summary": "Filed.",
                        "evidence": [{"kind": "file", "ref": file_id}]}, task],
            "cancel": [{"runId": run_id, "reason": "Fuzzed."} for run_id in runs],
            "send_event": [{"runId": ping, "name": "ping"}, {"runId": ping, "name": "ping", "data": {"n": 1}},
                           {"runId": cancelled, "name": "ping"}],
            "upload": [{"fileName": "receipt.txt", "contentType": "text/plain",
                        "contentBase64": base64.b64encode(b"a receipt").decode()}],
        }
        return self

    def realistic(self, tool: str, data, body: dict) -> dict:
        """Lay a coherent set of real names over the generated body, or swap single fields for real
        ones; the body stays valid against the schema. No body at all (a tool whose arguments are all
        optional needs none) stays none."""
        if not isinstance(body, dict):
            return body
        body = dict(body)
        how = data.draw(st.sampled_from(["swap", "overlay", "replace"] if self.coherent.get(tool) else ["swap"]),
                        label="how")
        if how == "swap":
            for key in list(body):
                if key in self.values and data.draw(st.booleans(), label=f"real {key}"):
                    body[key] = data.draw(st.sampled_from(self.values[key]), label=key)
        else:
            names = data.draw(st.sampled_from(self.coherent[tool]), label=f"{tool} names")
            kept = {"requestId": body["requestId"]} if "requestId" in body else {}
            body = {**body, **names} if how == "overlay" else {**kept, **names}
        if "requestId" in body and data.draw(st.booleans(), label="fresh requestId"):
            body["requestId"] = str(uuid.uuid4())
        if body and data.draw(st.integers(0, 3), label="edge") == 0:
            body = edge_case(data, body)
        return body


def edge_case(data, body: dict) -> dict:
    """Still valid against the schema, but at an edge: a NUL inside a string (JSON allows it), a whole
    number written as a float (JSON Schema counts 2.0 as an integer), a NUL inside nested data."""
    key = data.draw(st.sampled_from(sorted(body)), label="edge key")
    value = body[key]
    if isinstance(value, str):
        at = data.draw(st.integers(0, len(value)), label="nul at")
        body[key] = value[:at] + "\x00" + value[at:]
    elif isinstance(value, int) and not isinstance(value, bool):
        body[key] = float(value)
    elif isinstance(value, dict):
        body[key] = {**value, "edge": "\x00"}
    return body


EXPENSE_OUTPUT = {"purpose": "Client visit.", "lines": [{"amount": 12.5}]}


@pytest.fixture
def api(publish, make_agent, make_person):
    """The schema served by the in-process application, and the identities that call it."""
    from django.core.wsgi import get_wsgi_application

    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    publish(EXAMPLES / "expense-approval")
    publish(PING)
    agent = make_agent("fuzzer")
    person = make_person("fin@example.com", groups=["finance"], operator=True)
    file_id = agent.ok("upload", fileName="report.pdf", contentType="application/pdf",
                       contentBase64=base64.b64encode(b"%PDF-1.4 screening report").decode())["id"]
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())
    # The bearer credential is ours to send (one agent, one person); fuzz the bodies, not the header.
    schema.config.generation.update(with_security_parameters=False)
    return schema, agent, person, file_id


def check_answer(case, response, tool: str, mode: GenerationMode) -> None:
    assert response.status_code < 500, f"{tool}: {response.status_code} for {case.body!r}: {response.text[:500]}"
    envelope = json.loads(response.text)
    check_envelope(tool, envelope)
    expected = 200 if envelope["ok"] else HTTP_STATUS[envelope["error"]["code"]]
    assert response.status_code == expected, (tool, response.status_code, envelope)
    # A JSON null body is taken as "no arguments", like an empty body (the MCP transport's omitted
    # arguments); it is not a schema violation the server must refuse.
    negated = mode is GenerationMode.NEGATIVE and case.body is not None and not isinstance(case.body, NotSet)
    if negated:
        assert (response.status_code, envelope["error"]["code"]) == (400, "invalid"), (tool, case.body, envelope)
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    if negated:
        checks.append(negative_data_rejection)
    case.validate_response(response, checks=checks)


def fuzz_settings(examples: int) -> settings:
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                    phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))


def fuzz(operation, tool: str, world: World, actor, codes: set) -> None:
    """Positive then negative generated bodies for one tool and one caller; `codes` collects the answers."""
    headers = {"Authorization": f"Bearer {actor.token}"}

    @fuzz_settings(POSITIVE_EXAMPLES)
    @given(case=operation.as_strategy(GenerationMode.POSITIVE), data=st.data())
    def positive(case, data):
        case.body = world.realistic(tool, data, case.body)
        response = case.call(headers=headers)
        check_answer(case, response, tool, GenerationMode.POSITIVE)
        envelope = json.loads(response.text)
        codes.add("ok" if envelope["ok"] else envelope["error"]["code"])

    @fuzz_settings(NEGATIVE_EXAMPLES)
    @given(case=operation.as_strategy(GenerationMode.NEGATIVE))
    def negative(case):
        check_answer(case, case.call(headers=headers), tool, GenerationMode.NEGATIVE)

    # One coherent call first, the same in every session: whether generation alone reaches the
    # realistic state depends on what other tests registered with schemathesis (a full run drew no
    # live run for cancel once), and the reach below must not hang on that.
    if world.coherent.get(tool):
        envelope = actor.call(tool, **world.coherent[tool][0])  # a write gets a fresh requestId
        codes.add("ok" if envelope["ok"] else envelope["error"]["code"])
    positive()
    if tool != "describe":  # describe takes no arguments: there is no body to break
        negative()


def test_every_tool_answers_generated_bodies_with_a_valid_envelope_and_never_5xx(api):
    schema, agent, person, file_id = api
    operations = [result.ok() for result in schema.get_all_operations()]
    tools = sorted(operation.path.rsplit("/", 1)[1] for operation in operations)
    assert tools == sorted(["describe", "list_processes", "start_run", "get_run", "get_work", "claim", "submit",
                            "escalate", "decide", "cancel", "renew", "upload", "send_event", "list_runs"])
    seen: dict[tuple[str, str], set] = {}
    for operation in operations:
        tool = operation.path.rsplit("/", 1)[1]
        world = World(agent, person, file_id).build()
        for actor in (agent, person):
            fuzz(operation, tool, world, actor, seen.setdefault((tool, actor.name), set()))
    print("\n" + "\n".join(f"{tool:15} {who:18} {sorted(codes)}" for (tool, who), codes in sorted(seen.items())))
    # The realistic state was reached, not only not_found: every tool answered ok for someone.
    reached = {tool for (tool, _who), codes in seen.items() if "ok" in codes}
    assert reached == set(tools), seen


# ------------------------------------------------------------------------- found by the fuzzer


# Regression (found by this fuzzer; fixed in 2360944): `limit` written as a whole-number float,
# {"limit": 2.0}, passes the schema ("type": "integer" accepts 2.0 in JSON Schema 2020-12) and then
# broke the slicing in runs/selectors.py ("slice indices must be integers"): get_work and list_runs
# answered `retry` with HTTP 503, for agents and people, on both databases. 2.0 acts as 2.
def test_a_whole_number_limit_written_as_a_float_is_honoured(client, publish, agent, make_person):
    from tests.support.actors import rest_call

    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    person = make_person("fin@example.com", groups=["finance"], operator=True)
    for _ in range(3):
        agent.ok("start_run", process="supplier-onboarding", inputs=ONBOARDING)
    # Three ready agent steps for the agent, three runs for both: a page of 2 has a next page.
    for actor, tool, more in ((agent, "get_work", True), (agent, "list_runs", True), (person, "list_runs", True),
                              (person, "get_work", False)):
        status, envelope, _ = rest_call(client, actor.token, tool, {"limit": 2.0})
        assert status == 200, (actor.name, tool, envelope)
        assert len(envelope["data"]["items"]) == (2 if more else 0), (actor.name, tool, envelope)
        assert (envelope["data"]["nextCursor"] is not None) == more, (actor.name, tool, envelope)


# Regression (found by this fuzzer; fixed in 2360944): on PostgreSQL any string argument holding
# U+0000 (valid JSON, valid against every schema) made the database raise (psycopg DataError "text
# fields cannot contain NUL", or jsonb "unsupported Unicode escape sequence"), which the tool layer
# answered as `retry`, HTTP 503 — a lookup by such an id, a filter, a start_run input, an upload name,
# a requestId — telling the agent to send the same call again, forever. Expected on both databases:
# lookups `not_found` or `invalid`, filters an empty page or `invalid`, values stored or `invalid`.
def test_strings_holding_nul_are_answered_and_never_with_retry(client, publish, agent, make_person):
    from tests.support.actors import rest_call

    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    person = make_person("fin@example.com", groups=["finance"], operator=True)
    run_id = agent.ok("start_run", process="supplier-onboarding", inputs=ONBOARDING)["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="check_vendor")["token"]

    def rid():
        return str(uuid.uuid4())

    lookups = [
        (agent, "get_run", {"runId": "r_\x00"}),
        (agent, "claim", {"runId": "r_\x00", "stepId": "check_vendor", "requestId": rid()}),
        (agent, "send_event", {"runId": "r_\x00", "name": "ping", "requestId": rid()}),
        (person, "cancel", {"runId": "r_\x00", "reason": "x", "requestId": rid()}),
        (agent, "start_run", {"process": "supplier\x00", "inputs": {}, "requestId": rid()}),
        (person, "decide", {"runId": run_id, "workItemId": "w_\x00", "snapshot": "s", "decision": "approved",
                            "requestId": rid()}),
    ]
    for actor, tool, body in lookups:
        status, envelope, _ = rest_call(client, actor.token, tool, body)
        assert (status, envelope["error"]["code"]) in ((404, "not_found"), (400, "invalid")), (tool, body, envelope)
    filters = [(agent, "get_work", {"process": "supplier\x00"}), (person, "get_work", {"process": "x\x00"}),
               (person, "list_runs", {"process": "x\x00"}), (person, "list_runs", {"inputs": {"vendorName": "\x00"}})]
    for actor, tool, body in filters:
        status, envelope, _ = rest_call(client, actor.token, tool, body)
        if status == 200:
            assert envelope["data"]["items"] == [], (tool, body, envelope)
        else:
            assert (status, envelope["error"]["code"]) == (400, "invalid"), (tool, body, envelope)
    values = [
        (agent, "start_run", {"process": "supplier-onboarding", "inputs": {"vendorName": "A\x00", "amount": 1},
                              "requestId": rid()}),
        (agent, "upload", {"fileName": "a\x00.txt", "contentType": "text/plain", "contentBase64": "aGk=",
                           "requestId": rid()}),
        (agent, "start_run", {"process": "supplier-onboarding", "inputs": ONBOARDING, "requestId": "r\x00"}),
        (agent, "renew", {"token": token, "progress": "half\x00way", "requestId": rid()}),
    ]
    for actor, tool, body in values:
        status, envelope, _ = rest_call(client, actor.token, tool, body)
        assert status in (200, 400), (tool, body, status, envelope)


# Regression (found by this fuzzer; fixed in 2360944): the OpenAPI document at /api/v1/schema/ gave
# describe's 200 response the spec's schema as is, whose `limits` requires the check* limits; the
# server (rightly, check-1 §5) lists them only while an evaluator is configured, so every describe
# answer of a server without one broke the server's own OpenAPI document.
def test_the_served_openapi_schema_describes_the_describe_answer(api):
    schema, agent, _person, _file_id = api
    [operation] = [r.ok() for r in schema.get_all_operations() if r.ok().path.endswith("/describe")]
    case = operation.Case(body={})
    response = case.call(headers={"Authorization": f"Bearer {agent.token}"})
    assert response.status_code == 200
    case.validate_response(response, checks=[response_schema_conformance])
