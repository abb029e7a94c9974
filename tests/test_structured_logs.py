"""Structured logs (issue 22, point 4): "one JSON line per request and per tool call (request id,
tool, identity kind and id, run, step, outcome code, duration), and per sweep; secrets and tokens
never logged; a setting for plain text in development"."""

import base64
import json
import logging
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from kernel.logs import JsonFormatter, TextFormatter
from tests.support.live import database_url, start_live_server
from tests.support.processes import SCREEN_AND_APPROVE
from tests.test_security_defaults import README_DEPLOYMENT, run_django

ROOT = Path(__file__).resolve().parent.parent
SCREENING = b"OFAC: no hits. EU: no hits. Secret-ish evidence 5f2c"
MCP_VERSION = "2026-07-28"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MCP_VERSION,
               "Mcp-Method": "tools/call", "Mcp-Name": "get_run"}
MCP_META = {"io.modelcontextprotocol/protocolVersion": MCP_VERSION, "io.modelcontextprotocol/clientCapabilities": {}}


def json_lines(text: str) -> list[dict]:
    """The lines of a log that are JSON objects (uvicorn's own start-up lines are not ours)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture
def json_server(transactional_db, tmp_path, publish, make_agent, make_person):
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    with start_live_server(database_url(connection.settings_dict), tmp_path, env={"LOG_FORMAT": "json"}) as server:
        yield server


def test_every_request_and_tool_call_is_one_json_line_with_no_secret_in_any(json_server, make_agent, make_person,
                                                                            client):
    agent = make_agent("screener")
    person = make_person("fin@example.com", groups=["finance"])
    url = json_server.url
    since = json_server.log_size()
    answers = []

    def call(tool: str, arguments: dict, request_id: str | None = None) -> dict:
        headers = {"Authorization": f"Bearer {agent.token}"}
        if request_id:
            headers["X-Request-ID"] = request_id
        response = httpx2.post(f"{url}/api/v1/tools/{tool}", json=arguments, headers=headers, timeout=30)
        answers.append((tool, response))
        return response.json()

    run_id = call("start_run", {"process": "screen-and-approve", "inputs": {"vendorName": "Acme"},
                                "requestId": str(uuid.uuid4())}, request_id="trace-abc-123")["data"]["run"]["id"]
    call("get_work", {}, request_id="a request id with spaces is replaced")
    lease = call("claim", {"runId": run_id, "stepId": "screen", "requestId": str(uuid.uuid4())})["data"]["token"]
    upload = call("upload", {"fileName": "screening.txt", "contentType": "text/plain",
                             "contentBase64": base64.b64encode(SCREENING).decode(), "requestId": str(uuid.uuid4())})
    refused = call("submit", {"token": lease + "tampered", "output": {"cleared": True}, "summary": "No hits.",
                              "evidence": [], "requestId": str(uuid.uuid4())})
    assert refused["error"]["code"] == "invalid"
    call("submit", {"token": lease, "output": {"cleared": True}, "summary": "No hits.",
                    "evidence": [{"kind": "file", "ref": upload["data"]["id"]}], "requestId": str(uuid.uuid4())})
    # A signed file link: its signature is in the query, which no line carries.
    file_url = call("get_run", {"runId": run_id})["data"]["data"]["steps"]["screen"]["evidence"][0]["url"]
    assert "?" in file_url and httpx2.get(file_url, timeout=10).content == SCREENING
    # The same tool over MCP.
    mcp = httpx2.post(f"{url}/mcp", headers={**MCP_HEADERS, "Authorization": f"Bearer {agent.token}"}, timeout=30,
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "get_run", "arguments": {"runId": run_id}, "_meta": MCP_META}})
    assert mcp.status_code == 200 and mcp.json()["result"]["structuredContent"]["ok"]
    # A page of the inbox, which calls get_run in process as the signed-in person.
    client.force_login(get_user_model().objects.get(email=person.name))
    page = httpx2.get(f"{url}/runs/{run_id}", cookies={"sessionid": client.cookies["sessionid"].value}, timeout=30)
    assert page.status_code == 200

    time.sleep(0.2)  # the last line is written after the answer went
    text = json_server.log(since)
    lines = json_lines(text)
    tool_lines = [line for line in lines if line.get("event") == "tool_call"]
    request_lines = {line["request_id"]: line for line in lines if line.get("event") == "request"}
    agent_id = _agent_id("screener")

    # One tool line per call, tied to its request's line by the id the answer carried.
    assert [(line["tool"], line["transport"]) for line in tool_lines] == [
        ("start_run", "rest"), ("get_work", "rest"), ("claim", "rest"), ("upload", "rest"), ("submit", "rest"),
        ("submit", "rest"), ("get_run", "rest"), ("get_run", "mcp"), ("get_run", "browser")]
    for (tool, response), line in zip(answers, tool_lines, strict=False):
        request_id = response.headers["X-Request-ID"]
        assert line["request_id"] == request_id and line["tool"] == tool
        assert line["identity_kind"] == "agent" and line["identity_id"] == agent_id
        assert isinstance(line["duration_ms"], float) and line["level"] == "INFO"
        assert request_lines[request_id]["path"] == f"/api/v1/tools/{tool}"
        assert request_lines[request_id]["method"] == "POST" and request_lines[request_id]["status"] == \
            response.status_code
    assert answers[0][1].headers["X-Request-ID"] == "trace-abc-123"  # a proxy's id is kept
    replaced = answers[1][1].headers["X-Request-ID"]
    assert len(replaced) == 32 and int(replaced, 16) >= 0  # a malformed one is not
    outcomes = [(line["tool"], line["run_id"], line["step_id"], line["outcome"]) for line in tool_lines]
    assert outcomes == [
        ("start_run", run_id, None, "ok"), ("get_work", None, None, "ok"), ("claim", run_id, "screen", "ok"),
        ("upload", None, None, "ok"), ("submit", None, None, "invalid"), ("submit", run_id, "screen", "ok"),
        ("get_run", run_id, None, "ok"), ("get_run", run_id, None, "ok"), ("get_run", run_id, None, "ok")]
    assert tool_lines[-2]["request_id"] == mcp.headers["X-Request-ID"]
    assert tool_lines[-1]["request_id"] == page.headers["X-Request-ID"]
    assert tool_lines[-1]["identity_kind"] == "person"
    files = [line for line in lines if line.get("event") == "request" and line["path"].startswith("/files/")]
    assert len(files) == 1 and files[0]["path"] == file_url.split("?")[0].removeprefix(url)

    # Nothing secret in any line, ours or the server's: credentials, lease tokens, uploaded bytes.
    for secret in (agent.token, person.token, lease, base64.b64encode(SCREENING).decode(), SCREENING.decode(),
                   client.cookies["sessionid"].value, "Bearer"):
        assert secret not in text, secret
    signature = file_url.split("?", 1)[1]
    assert not [line for line in lines if signature in json.dumps(line)]


def _agent_id(name: str) -> int:
    from kernel.models import Agent

    return Agent.objects.get(name=name).pk


def test_each_sweep_is_one_json_line_with_its_kind_items_and_duration(transactional_db, publish, make_agent,
                                                                       settings):
    """`manage.py sweep` in a process of its own, as an operator runs it, with LOG_FORMAT=json."""
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    agent = make_agent("screener")
    settings.LEASE_SECONDS = 1
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    agent.ok("claim", runId=run_id, stepId="screen")
    time.sleep(1.2)  # the lease lapses
    swept = subprocess.run([sys.executable, "manage.py", "sweep"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120, env={**os.environ, "LOG_FORMAT": "json",
                                             "DATABASE_URL": database_url(connection.settings_dict)})
    assert swept.returncode == 0, swept.stderr
    lines = [line for line in json_lines(swept.stderr) if line.get("event") == "sweep"]
    assert [line["kind"] for line in lines] == ["leases", "timers", "dues", "notices", "orphan_files"]
    assert [line["items"] for line in lines] == [1, 0, 0, 0, 0]
    assert all(isinstance(line["duration_ms"], float) and line["logger"] == "agentprocess.sweeps" for line in lines)


def test_log_format_is_json_in_a_deployment_and_text_for_development():
    show = "from django.conf import settings; print(settings.LOG_FORMAT)"
    assert run_django(show, README_DEPLOYMENT).stdout.strip() == "json"
    assert run_django(show, {"PUBLIC_BASE_URL": "http://127.0.0.1:8000"}).stdout.strip() == "text"
    assert run_django(show, {**README_DEPLOYMENT, "LOG_FORMAT": "text"}).stdout.strip() == "text"
    refused = run_django(show, {**README_DEPLOYMENT, "LOG_FORMAT": "xml"})
    assert refused.returncode != 0 and "LOG_FORMAT is json or text, not 'xml'" in refused.stderr


def test_both_formats_write_the_same_fields():
    record = logging.LogRecord("agentprocess.tools", logging.INFO, __file__, 1, "tool call", None, None)
    record.fields = {"event": "tool_call", "tool": "claim", "run_id": "r_1", "step_id": None, "duration_ms": 1.5}
    line = json.loads(JsonFormatter().format(record))
    assert {key: line[key] for key in ("level", "logger", "message", "event", "tool", "run_id", "step_id",
                                       "duration_ms")} == {
        "level": "INFO", "logger": "agentprocess.tools", "message": "tool call", "event": "tool_call",
        "tool": "claim", "run_id": "r_1", "step_id": None, "duration_ms": 1.5}
    assert line["time"].endswith("Z")
    assert TextFormatter().format(record).endswith(
        "INFO agentprocess.tools: tool call event=tool_call tool=claim run_id=r_1 duration_ms=1.5")
