"""MCP over Streamable HTTP, driven with the official MCP Python client against a real server process
(tests/support/live.py): tool listing, the envelope as structuredContent, bearer authentication."""

import base64
import hashlib
import json
import uuid
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from api.hosts import UNKNOWN_HOST
from kernel.capabilities import offered_tools
from tests.support.envelopes import check_envelope
from tests.support.spec import EXAMPLES, SCHEMAS, need_spec
from tests.test_rest_api import CREDENTIAL_REFUSALS

pytestmark = pytest.mark.live

LEGACY_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"


@asynccontextmanager
async def mcp_client(base_url: str, token: str, mode: str = "auto"):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode) as client:
        yield client


async def call(client: Client, tool: str, **arguments) -> dict:
    """One tools/call; checks the result carries the envelope both ways and returns it."""
    result = await client.call_tool(tool, arguments or None)
    envelope = result.structured_content
    check_envelope(tool, envelope)
    assert result.is_error is (not envelope["ok"])
    [text] = result.content
    assert text.type == "text" and json.loads(text.text) == envelope
    return envelope


async def ok(client: Client, tool: str, **arguments) -> dict:
    envelope = await call(client, tool, **arguments)
    assert envelope["ok"], envelope
    return envelope["data"]


def new_request_id() -> str:
    return str(uuid.uuid4())


def test_supplier_onboarding_agent_loop_over_mcp(live_server_url, publish, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    report = b"Screening report: no hits on OFAC or EU lists for Acme."

    async def scenario():
        async with mcp_client(live_server_url, agent.token) as client:
            described = await ok(client, "describe")
            assert described["tools"] == offered_tools()

            processes = await ok(client, "list_processes")
            assert "supplier-onboarding" in [item["name"] for item in processes["items"]]

            view = await ok(client, "start_run", process="supplier-onboarding",
                            inputs={"vendorName": "Acme", "amount": 48000}, requestId=new_request_id())
            run_id = view["run"]["id"]

            [item] = (await ok(client, "get_work"))["items"]
            assert (item["runId"], item["stepId"]) == (run_id, "check_vendor")
            assert item["claim"] == {"tool": "claim", "arguments": {
                "runId": run_id, "stepId": "check_vendor", "requestId": "<new UUID>"}}

            claim = await ok(client, "claim", **{**item["claim"]["arguments"], "requestId": new_request_id()})
            assert claim["step"]["id"] == "check_vendor"

            upload = await ok(client, "upload", fileName="screening.txt", contentType="text/plain",
                              contentBase64=base64.b64encode(report).decode(), requestId=new_request_id())
            assert upload["sha256"] == hashlib.sha256(report).hexdigest()
            assert upload["bytes"] == len(report)

            refused = await call(client, "submit", token=claim["token"],
                                 output={"cleared": "yes", "summary": "No hits."},
                                 summary="Searched both lists by legal name.", requestId=new_request_id())
            assert not refused["ok"]
            assert refused["error"]["code"] == "not_accepted"
            assert sorted(refused["error"]["issues"]) == sorted([
                "output.cleared: expected boolean",
                "evidence: file required",
                "next: required, one of approve, decline",
                "reason: required",
            ])

            view = await ok(client, "submit", token=claim["token"], output={"cleared": True, "summary": "No hits."},
                            evidence=[{"kind": "file", "ref": upload["id"]}],
                            summary="Searched both lists by legal name. No hits.", next="approve",
                            reason="Vendor is cleared on both lists.", requestId=new_request_id())
            return run_id, upload, view

    _run_id, upload, view = anyio.run(scenario)
    states = {step["id"]: step["state"] for step in view["steps"]}
    assert states == {"check_vendor": "done", "approve": "waiting", "decline": None, "done": None}
    [work_item] = view["workItems"]
    assert (work_item["stepId"], work_item["assignedTo"]) == ("approve", {"group": "finance"})
    [evidence] = view["data"]["steps"]["check_vendor"]["evidence"]
    assert (evidence["kind"], evidence["ref"], evidence["sha256"]) == ("file", upload["id"], upload["sha256"])
    assert evidence["url"].startswith(live_server_url + "/")


def test_tools_list_publishes_every_offered_tool_with_its_spec_argument_schema(live_server_url, agent):
    async def listing():
        async with mcp_client(live_server_url, agent.token) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(listing)
    assert [tool.name for tool in tools] == offered_tools()
    assert all(tool.description for tool in tools)
    assert all(tool.output_schema and tool.output_schema["required"] == ["ok"] for tool in tools)
    need_spec()  # the rest compares with the spec's own schemas
    for tool in tools:
        spec_schema = json.loads((SCHEMAS / "tools" / f"{tool.name}.arguments.json").read_text())
        del spec_schema["$schema"], spec_schema["$id"]
        assert tool.input_schema == spec_schema, tool.name


def test_rest_and_mcp_refuse_a_missing_malformed_or_unknown_credential_alike(live_asgi_server):
    """The same 401, envelope and challenge (naming each resource's metadata) on the REST route, on
    MCP through the SDK and on MCP's direct tools/call (the cases and why `invalid`: test_rest_api.py)."""
    url = live_asgi_server.url  # no rows needed, so no transactional_db (a flush per test on PostgreSQL)
    legacy = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "describe"}}
    modern = {**legacy, "params": {"name": "describe", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION, "io.modelcontextprotocol/clientCapabilities": {}}}}
    accept = {"Accept": "application/json, text/event-stream"}
    routes = [("/api/v1", "/api/v1/tools/describe", {}, {}),
              ("/mcp", "/mcp", legacy, {**accept, "MCP-Protocol-Version": LEGACY_VERSION}),
              ("/mcp", "/mcp", modern, {**accept, "MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/call",
                                        "Mcp-Name": "describe"})]
    for authorization, message, issue, error in CREDENTIAL_REFUSALS:
        if authorization is not None and authorization != authorization.strip():
            continue  # an HTTP client sends no trailing blanks in a header
        for resource, path, body, headers in routes:
            sent = {**headers, **({"Authorization": authorization} if authorization is not None else {})}
            response = httpx2.post(f"{url}{path}", headers=sent, json=body, timeout=5)
            assert (response.status_code, response.json()) == (401, {"ok": False, "error": {
                "code": "invalid", "message": message, "issues": [issue]}}), (authorization, path, headers)
            assert response.headers["WWW-Authenticate"] == (
                f'Bearer realm="agentprocess", resource_metadata="{url}/.well-known/oauth-protected-resource{resource}"'
                f', scope="tools"' + (f', error="{error}"' if error else "")), (authorization, path)


def test_arguments_breaking_the_schema_come_back_as_an_invalid_envelope(live_server_url, agent):
    async def calls():
        async with mcp_client(live_server_url, agent.token) as client:
            missing = await client.call_tool("claim", {"runId": "r_1", "stepId": "check_vendor"})
            unknown = await client.call_tool("no_such_tool", {})
            return missing, unknown

    missing, unknown = anyio.run(calls)
    assert missing.is_error is True
    assert missing.structured_content["ok"] is False
    assert missing.structured_content["error"]["code"] == "invalid"
    assert missing.structured_content["error"]["issues"] == ["requestId: missing"]
    check_envelope("claim", missing.structured_content)
    assert unknown.is_error is True
    assert unknown.structured_content["error"]["code"] == "not_found"


@pytest.mark.parametrize(("mode", "version"), [("auto", MODERN_VERSION), ("legacy", LEGACY_VERSION)])
def test_both_protocol_eras_serve_tools(live_server_url, agent, mode, version):
    async def describe():
        async with mcp_client(live_server_url, agent.token, mode=mode) as client:
            return client.protocol_version, await ok(client, "describe")

    negotiated, described = anyio.run(describe)
    assert negotiated == version
    assert described["protocol"] == "agentprocess"


def test_each_request_acts_as_its_own_bearer(live_server_url, publish, agent, make_person):
    """Identity comes from each HTTP request's token: concurrent calls by two identities stay apart."""
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    finance = make_person("fin@example.com", groups=["finance"])

    async def both():
        async with mcp_client(live_server_url, agent.token) as as_agent, \
                mcp_client(live_server_url, finance.token) as as_person:
            await ok(as_agent, "start_run", process="supplier-onboarding",
                     inputs={"vendorName": "Acme", "amount": 1}, requestId=new_request_id())
            results = {}

            async def work(name, client):
                results[name] = [await ok(client, "get_work") for _ in range(5)]

            async with anyio.create_task_group() as group:
                group.start_soon(work, "agent", as_agent)
                group.start_soon(work, "person", as_person)
            return results

    results = anyio.run(both)
    assert all([item["stepId"] for item in page["items"]] == ["check_vendor"] for page in results["agent"])
    assert all(page["items"] == [] for page in results["person"])


def test_get_on_mcp_is_405_and_a_foreign_host_is_refused(live_server_url, agent):
    auth = {"Authorization": f"Bearer {agent.token}"}
    response = httpx2.get(f"{live_server_url}/mcp", headers=auth, timeout=5)
    assert (response.status_code, response.headers["Allow"]) == (405, "POST")

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "describe"}}
    headers = {**auth, "Host": "evil.example", "Accept": "application/json, text/event-stream"}
    response = httpx2.post(f"{live_server_url}/mcp", headers=headers, json=body, timeout=5)
    assert (response.status_code, response.json()) == (400, UNKNOWN_HOST)  # as on the REST route


def test_the_asgi_app_still_serves_django_and_its_static_files(live_asgi_server):
    static = httpx2.get(f"{live_asgi_server.url}/static/admin/css/base.css", timeout=5)
    assert static.status_code == 200 and "text/css" in static.headers["Content-Type"]
    rest = httpx2.post(f"{live_asgi_server.url}/api/v1/tools/describe", json={}, timeout=5)
    assert rest.status_code == 401


def test_an_upload_above_the_sdk_default_body_limit_is_accepted(live_server_url, agent):
    """The SDK refuses bodies over 4 MiB by default; MAX_UPLOAD_BYTES (10 MiB) is base64 in the body."""
    content = bytes(range(256)) * (5 * 1024 * 4)  # 5 MiB

    async def upload():
        async with mcp_client(live_server_url, agent.token) as client:
            return await ok(client, "upload", fileName="big.bin", contentType="application/octet-stream",
                            contentBase64=base64.b64encode(content).decode(), requestId=new_request_id())

    uploaded = anyio.run(upload)
    assert (uploaded["bytes"], uploaded["sha256"]) == (len(content), hashlib.sha256(content).hexdigest())


@pytest.fixture(scope="module")
def sdk_only_server(django_db_setup, tmp_path_factory):
    """A second server on the same database, answering every MCP request through the SDK."""
    from django.db import connection

    from tests.support.live import database_url, start_live_server

    with start_live_server(database_url(connection.settings_dict), tmp_path_factory.mktemp("sdk-only"),
                           env={"MCP_DIRECT_TOOL_CALLS": "0"}) as server:
        yield server


def modern_call(base_url: str, token: str, tool: str, arguments, *, request_id=7, headers=None):
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments,
                       "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    sent = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/call", "Mcp-Name": tool, **(headers or {})}
    response = httpx2.post(f"{base_url}/mcp", headers=sent, json=body, timeout=10)
    is_json = (response.headers.get("content-type") or "").startswith("application/json")
    return response.status_code, response.headers.get("content-type"), response.headers.get("www-authenticate"), \
        response.json() if is_json else response.text


def test_a_direct_tools_call_answers_exactly_as_the_sdk_does(live_server_url, sdk_only_server, publish, agent):
    """api/mcp.py answers a plain 2026-07-28 tools/call without the SDK's dispatch; the
    reply must be the one the SDK writes (DESIGN.md: the envelope as structuredContent and as JSON text),
    and everything unusual must still get the SDK's answer."""
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": "Acme", "amount": 48000})
    cases = [
        ("describe", {}, {}),
        ("get_work", {"limit": 5}, {}),
        ("claim", {"runId": "r_missing", "stepId": "x", "requestId": new_request_id()}, {}),   # not_found
        ("get_work", {"limit": "five"}, {}),                                                       # invalid
        ("no_such_tool", {}, {}),
        ("describe", {}, {"Mcp-Name": "get_work"}),          # header mismatch: the SDK's rejection
        ("describe", {}, {"Host": "evil.example"}),          # ALLOWED_HOSTS (api/hosts.py): 400
        ("describe", {}, {"Accept": "text/html"}),           # 406
        ("describe", {}, {"Content-Type": "text/plain"}),    # not JSON: the SDK's 400
        ("describe", {}, {"Content-Type": "application/json; charset=utf-8"}),
    ]
    for tool, arguments, headers in cases:
        direct = modern_call(live_server_url, agent.token, tool, arguments, headers=headers)
        through_sdk = modern_call(sdk_only_server.url, agent.token, tool, arguments, headers=headers) \
            if headers.get("Accept") != "text/html" else None
        if through_sdk is not None:
            assert direct == through_sdk, (tool, headers)
            if headers.get("Content-Type") == "text/plain":  # the SDK's transport security refuses it
                assert direct == (400, None, None, "Invalid Content-Type header"), direct
        else:
            assert direct[0] == 406
    assert modern_call(live_server_url, agent.token, "describe", {}, request_id="req-1")[3]["id"] == "req-1"
    # A body over the server's limit is read only so far, then handed to the SDK, which refuses it.
    too_big = {"fileName": "a", "contentType": "text/plain", "contentBase64": "A" * (14 * 1024 * 1024),
               "requestId": new_request_id()}
    answers = [modern_call(url, agent.token, "upload", too_big) for url in (live_server_url, sdk_only_server.url)]
    assert answers[0] == answers[1] and answers[0][0] == 413, answers[0][:3]
    refused = [modern_call(url, "apt_not-a-token", "describe", {}) for url in (live_server_url, sdk_only_server.url)]
    assert refused[0][0] == refused[1][0] == 401 and refused[0][3] == refused[1][3]
    # The challenge names each server's own metadata URL; otherwise the same.
    assert refused[0][2].replace(live_server_url, "") == refused[1][2].replace(sdk_only_server.url, "")
    status, _type, _auth, reply = modern_call(live_server_url, agent.token, "describe", {})
    assert status == 200 and reply["result"]["structuredContent"]["ok"] is True
    assert json.loads(reply["result"]["content"][0]["text"]) == reply["result"]["structuredContent"]
