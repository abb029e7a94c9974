"""Numbers keep their value exactly as sent (issue 13; spec §2.3: "Numbers are JSON numbers; a
server MUST NOT round them"): decimals beyond double precision and exponents beyond double range
are stored, hashed, filtered and returned with every digit, over REST and MCP."""

import json
import uuid
from decimal import Decimal

import pytest

from kernel import jsonio

EXACT = """---
name: exact-numbers
description: A run whose inputs and output are numbers a double cannot hold.
inputs:
  pi: number
  tiny: number
  huge: number
  plain: number
steps:
  - id: measure
    agent: Measure it.
    output:
      value: number
  - id: done
    finish: done
---
Exact numbers.
"""
PI = "3.14159265358979323846264338327950288"
TINY = "1e-400"
HUGE = "12345678901234567890123456789.123456789"


def rest(client, token, tool, body: str):
    response = client.post(f"/api/v1/tools/{tool}", body, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {token}")
    return response.status_code, jsonio.loads(response.content)


@pytest.fixture
def exact_run(publish, agent, client):
    publish(EXACT)
    body = ('{"process": "exact-numbers", "requestId": "exact-1", "inputs": {"pi": ' + PI + ', "tiny": ' + TINY
            + ', "huge": ' + HUGE + ', "plain": 0.1}}')
    status, envelope = rest(client, agent.token, "start_run", body)
    assert status == 200, envelope
    return envelope["data"]["run"]["id"], body


def test_inputs_come_back_with_every_digit(exact_run, agent, client):
    run_id, _body = exact_run
    _status, envelope = rest(client, agent.token, "get_run", json.dumps({"runId": run_id}))
    inputs = envelope["data"]["data"]["inputs"]
    assert inputs["pi"] == Decimal(PI) and inputs["tiny"] == Decimal(TINY) and inputs["huge"] == Decimal(HUGE)
    assert inputs["plain"] == 0.1 and isinstance(inputs["plain"], float)  # a double holds it: a plain float
    raw = client.post("/api/v1/tools/get_run", json.dumps({"runId": run_id}), content_type="application/json",
                      HTTP_AUTHORIZATION=f"Bearer {agent.token}").content.decode()
    assert PI in raw and HUGE in raw  # written as the number it is, not rounded and not a string


def test_a_replay_returns_the_same_digits(exact_run, agent, client):
    _run_id, body = exact_run
    _status, first = rest(client, agent.token, "start_run", body)
    _status, again = rest(client, agent.token, "start_run", body)
    assert again == first and again["data"]["data"]["inputs"]["pi"] == Decimal(PI)


def test_outputs_are_checked_stored_and_hashed_exactly(exact_run, agent, client, publish):
    run_id, _body = exact_run
    _status, claim = rest(client, agent.token, "claim", json.dumps({"runId": run_id, "stepId": "measure",
                                                                    "requestId": str(uuid.uuid4())}))
    value = "0.30000000000000000000000000001"
    status, envelope = rest(client, agent.token, "submit", '{"token": "' + claim["data"]["token"]
                            + '", "output": {"value": ' + value + '}, "summary": "Measured.", "requestId": "s-1"}')
    assert status == 200, envelope
    assert envelope["data"]["data"]["steps"]["measure"]["output"]["value"] == Decimal(value)
    from runs.models import Run

    assert Run.objects.get(pk=run_id).steps_data["measure"]["output"]["value"] == Decimal(value)
    # Two runs whose inputs differ only past double precision have different snapshots.
    snapshots = []
    for last_digit in "12":
        body = ('{"process": "exact-numbers", "requestId": "' + str(uuid.uuid4()) + '", "inputs": {"pi": 1.0000000000'
                + "00000000" + last_digit + ', "tiny": 1, "huge": 1, "plain": 1}}')
        started = rest(client, agent.token, "start_run", body)[1]["data"]["run"]["id"]
        snapshots.append(Run.objects.get(pk=started).snapshot)
    assert snapshots[0] != snapshots[1]


def test_list_runs_matches_an_exact_input(exact_run, agent, client, is_postgres):
    run_id, _body = exact_run
    _status, envelope = rest(client, agent.token, "list_runs", '{"inputs": {"pi": ' + PI + "}}")
    assert [item["id"] for item in envelope["data"]["items"]] == [run_id]
    if is_postgres:  # jsonb compares numbers exactly; SQLite's JSON functions compare them as doubles
        _status, envelope = rest(client, agent.token, "list_runs", '{"inputs": {"pi": 3.141592653589793}}')
        assert envelope["data"]["items"] == []  # the rounded double is another number


def test_mcp_keeps_every_digit_in_its_json_text(exact_run, agent, client):
    run_id, _body = exact_run
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_run",
                                                                          "arguments": {"runId": run_id}}}
    from api.mcp import tool_result
    from api.tools import call_tool

    envelope = call_tool(agent.identity, "get_run", call["params"]["arguments"])
    text = tool_result(envelope)["content"][0]["text"]
    assert PI in text and HUGE in text
    assert jsonio.loads(text)["data"]["data"]["inputs"]["tiny"] == Decimal(TINY)
