"""The REST transport (DESIGN.md): POST /api/v1/tools/<tool>, the spec envelope, HTTP statuses."""

import base64
import threading
import uuid

import pytest
from django.db import connection
from django.test import Client

from tests.support.actors import rest_call
from tests.support.spec import EXAMPLES

ONBOARDING = {"vendorName": "Acme", "amount": 48000}


@pytest.fixture
def onboarding(publish):
    return publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})


def rid():
    return str(uuid.uuid4())


def test_the_agent_flow_over_rest(client, onboarding, agent, make_person):
    finance = make_person("fin@example.com", groups=["finance"])
    status, env, _ = rest_call(client, agent.token, "describe")
    assert status == 200 and env["data"]["protocol"] == "agentprocess"
    status, env, _ = rest_call(client, agent.token, "list_processes")
    assert [p["name"] for p in env["data"]["items"]] == ["supplier-onboarding"]
    status, env, _ = rest_call(client, agent.token, "start_run",
                               {"process": "supplier-onboarding", "inputs": ONBOARDING, "requestId": rid()})
    run_id = env["data"]["run"]["id"]
    status, env, _ = rest_call(client, agent.token, "get_work", {})
    assert env["data"]["items"][0]["claim"] == {
        "tool": "claim", "arguments": {"runId": run_id, "stepId": "check_vendor", "requestId": "<new UUID>"}}
    status, env, _ = rest_call(client, agent.token, "claim", {"runId": run_id, "stepId": "check_vendor", "requestId": rid()})
    token = env["data"]["token"]
    assert env["data"]["step"]["next"] == [{"to": "approve", "when": "Vendor is cleared on both lists"},
                                           {"to": "decline", "when": "Any sanctions hit"}]
    status, env, _ = rest_call(client, agent.token, "upload", {
        "fileName": "r.pdf", "contentType": "application/pdf", "contentBase64": base64.b64encode(b"%PDF").decode(),
        "requestId": rid()})
    file_id = env["data"]["id"]
    status, env, _ = rest_call(client, agent.token, "submit", {
        "token": token, "output": {"cleared": "yes"}, "summary": "", "requestId": rid()})
    assert status == 422
    assert env["error"]["issues"] == [
        "summary: missing", "output.cleared: expected boolean", "output.summary: missing", "evidence: file required",
        "next: required, one of approve, decline", "reason: required"]
    status, env, _ = rest_call(client, agent.token, "submit", {
        "token": token, "output": {"cleared": True, "summary": "No hits."}, "summary": "Searched both lists.",
        "evidence": [{"kind": "file", "ref": file_id}], "next": "approve", "reason": "Cleared", "requestId": rid()})
    assert status == 200
    item = env["data"]["workItems"][0]
    status, env, _ = rest_call(client, finance.token, "decide", {
        "runId": run_id, "workItemId": item["id"], "snapshot": item["snapshot"], "decision": "approved",
        "requestId": rid()})
    assert (status, env["data"]["run"]["outcome"]) == (200, "onboarded")
    status, env, _ = rest_call(client, finance.token, "list_runs", {"process": "supplier-onboarding"})
    assert [r["id"] for r in env["data"]["items"]] == [run_id]


def test_every_error_code_has_its_http_status(client, onboarding, agent, make_agent, make_person):
    """DESIGN.md: invalid 400; forbidden 403; not_found 404; conflict and stale 409; not_accepted 422;
    retry 503 (test_busy_database_answers_retry_503); 401 with no credential."""
    other = make_agent("other")
    finance = make_person("fin@example.com", groups=["finance"])
    _, env, _ = rest_call(client, agent.token, "start_run",
                          {"process": "supplier-onboarding", "inputs": ONBOARDING, "requestId": rid()})
    run_id = env["data"]["run"]["id"]

    status, env, _ = rest_call(client, agent.token, "claim", {"runId": run_id, "stepId": "check_vendor"})
    assert (status, env["error"]["code"], env["error"]["issues"]) == (400, "invalid", ["requestId: missing"])

    status, env, _ = rest_call(client, agent.token, "get_run", {"runId": "r_nope"})
    assert (status, env["error"]["code"]) == (404, "not_found")

    _, env, _ = rest_call(client, agent.token, "claim", {"runId": run_id, "stepId": "check_vendor", "requestId": rid()})
    old_token = env["data"]["token"]
    status, env, _ = rest_call(client, other.token, "claim", {"runId": run_id, "stepId": "check_vendor", "requestId": rid()})
    assert (status, env["error"]["code"], env["error"]["issues"]) == (409, "conflict", ["claimed_by_other"])

    _, env, _ = rest_call(client, agent.token, "renew", {"token": old_token, "requestId": rid()})
    status, env, _ = rest_call(client, agent.token, "submit", {"token": old_token, "output": {}, "summary": "x",
                                                               "requestId": rid()})
    assert (status, env["error"]["code"]) == (409, "stale")

    status, env, _ = rest_call(client, finance.token, "cancel", {"runId": run_id, "reason": "no", "requestId": rid()})
    assert (status, env["error"]["code"]) == (403, "forbidden")

    status, env, _ = rest_call(client, agent.token, "submit", {"token": "not.a.token", "output": {}, "summary": "x",
                                                               "requestId": rid()})
    assert (status, env["error"]["code"], env["error"]["issues"]) == (400, "invalid", ["token: does not verify"])


CHALLENGE = ('Bearer realm="agentprocess", resource_metadata="http://127.0.0.1:8000/.well-known/'
             'oauth-protected-resource/api/v1", scope="tools"')
SEND = "send Authorization: Bearer <token>"
# (Authorization header, message, issue, the challenge's RFC 6750 error)
CREDENTIAL_REFUSALS = [
    (None, f"no credential; {SEND}", "Authorization: missing", None),
    ("Basic dXNlcjpwdw==", f"not a bearer credential; {SEND}", "Authorization: not the Bearer scheme", None),
    ("Bearer", f"the bearer credential is empty; {SEND}", "Authorization: no token after Bearer", "invalid_request"),
    ("Bearer    ", f"the bearer credential is empty; {SEND}", "Authorization: no token after Bearer",
     "invalid_request"),
    ("Bearer apt_forged", "the bearer credential is unknown, expired or revoked",
     "Authorization: unknown, expired or revoked token", "invalid_token"),
    ("bearer apt_forged", "the bearer credential is unknown, expired or revoked",
     "Authorization: unknown, expired or revoked token", "invalid_token"),
]


@pytest.mark.parametrize("authorization, message, issue, error", CREDENTIAL_REFUSALS)
def test_no_malformed_or_unknown_credential_is_a_401_invalid_envelope_with_a_challenge(
        client, agent, authorization, message, issue, error):
    """DESIGN.md: "401 when no or unknown credential". The code is `invalid`, not `forbidden`: spec
    §4.3 gives `forbidden` to what is "Not allowed for this identity" (here there is none) and makes
    a token that "does not verify at all" `invalid`. The same answer on MCP: test_mcp.py."""
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    response = client.post("/api/v1/tools/describe", b"{}", content_type="application/json", **headers)
    assert response.status_code == 401
    assert response.json() == {"ok": False, "error": {"code": "invalid", "message": message, "issues": [issue]}}
    assert response["WWW-Authenticate"] == CHALLENGE + (f', error="{error}"' if error else "")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                                          "application/jsonp", "text/json", "application/xml"])
def test_a_body_that_is_not_sent_as_json_is_refused_with_what_to_send(client, agent, content_type):
    response = client.post("/api/v1/tools/get_work", b'{"limit": 1}', content_type=content_type,
                           HTTP_AUTHORIZATION=f"Bearer {agent.token}")
    assert response.status_code == 400
    assert response.json() == {"ok": False, "error": {"code": "invalid", "message": "the arguments are sent as JSON",
                                                      "issues": ["Content-Type: not JSON; send application/json"]}}


def test_a_body_without_a_content_type_is_refused(agent):
    response = Client().generic("POST", "/api/v1/tools/get_work", b'{"limit": 1}', content_type="",
                                HTTP_AUTHORIZATION=f"Bearer {agent.token}")
    assert response.status_code == 400
    assert response.json()["error"]["issues"] == ["Content-Type: missing; send application/json"]


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8",
                                          "Application/JSON;charset=UTF-8", "application/merge-patch+json",
                                          "application/vnd.agentprocess+json; charset=utf-8"])
def test_json_and_plus_json_types_are_read(client, agent, content_type):
    response = client.post("/api/v1/tools/get_work", b'{"limit": 1}', content_type=content_type,
                           HTTP_AUTHORIZATION=f"Bearer {agent.token}")
    assert (response.status_code, response.json()["ok"]) == (200, True)


@pytest.mark.parametrize("tool", ["describe", "list_processes", "get_work", "list_runs"])
def test_an_empty_body_without_a_content_type_calls_a_tool_whose_arguments_are_all_optional(agent, tool):
    response = Client().generic("POST", f"/api/v1/tools/{tool}", b"", content_type="",
                                HTTP_AUTHORIZATION=f"Bearer {agent.token}")
    assert (response.status_code, response.json()["ok"]) == (200, True)
    # A tool with required arguments says which are missing, as for `{}`.
    response = Client().generic("POST", "/api/v1/tools/get_run", b"", content_type="",
                                HTTP_AUTHORIZATION=f"Bearer {agent.token}")
    assert (response.status_code, response.json()["error"]["issues"]) == (400, ["runId: missing"])


def test_malformed_body_and_unknown_tool(client, agent):
    status, env, _ = rest_call(client, agent.token, "describe", raw=b"{not json")
    assert (status, env["error"]["issues"]) == (400, ["body: not valid JSON"])
    status, env, _ = rest_call(client, agent.token, "describe", [1, 2])
    assert (status, env["error"]["issues"]) == (400, ["arguments: expected object"])
    status, env, _ = rest_call(client, agent.token, "teleport", {})
    assert (status, env["error"]["code"]) == (404, "not_found")
    assert client.get("/api/v1/tools/describe").status_code == 405


def test_schema_violations_are_invalid_with_every_issue(client, agent):
    """§6 rule 3: a call whose arguments break the tool's schema is `invalid` before anything else."""
    status, env, _ = rest_call(client, agent.token, "start_run",
                               {"process": 5, "inputs": [], "mode": "prod", "extra": 1})
    assert status == 400
    assert env["error"]["issues"] == [
        "extra: not an argument of this tool", "inputs: expected object", "mode: must be one of live, test",
        "process: expected string", "requestId: missing"]
    status, env, _ = rest_call(client, agent.token, "get_work", {"limit": 0})
    assert env["error"]["issues"] == ["limit: must be at least 1"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_busy_database_answers_retry_503(client, onboarding, agent):
    """A write that cannot get the run's row lock in time answers `retry` (spec §4.3: transient)."""
    _, env, _ = rest_call(client, agent.token, "start_run",
                          {"process": "supplier-onboarding", "inputs": ONBOARDING, "requestId": rid()})
    run_id = env["data"]["run"]["id"]
    holding, release = threading.Event(), threading.Event()

    def hold_lock():
        from django.db import connections, transaction

        with transaction.atomic():
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT 1 FROM runs_run WHERE id = %s FOR UPDATE", [run_id])
            holding.set()
            release.wait(10)
        connections["default"].close()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    holding.wait(10)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '200ms'")
    try:
        status, env, _ = rest_call(client, agent.token, "cancel",
                                   {"runId": run_id, "reason": "stop", "requestId": rid()})
    finally:
        release.set()
        holder.join()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert (status, env["error"]["code"]) == (503, "retry")


def test_openapi_schema_describes_every_tool_with_the_spec_schemas(client, agent):
    import json as json_

    from tests.support.spec import SCHEMAS, need_spec

    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = json_.loads(response.content)
    assert schema["openapi"] == "3.1.0"
    tools = agent.ok("describe")["tools"]
    assert sorted(p.rsplit("/", 1)[1] for p in schema["paths"]) == sorted(tools)
    need_spec()
    claim = schema["paths"]["/api/v1/tools/claim"]["post"]
    spec_arguments = json_.loads((SCHEMAS / "tools" / "claim.arguments.json").read_text())
    documented = claim["requestBody"]["content"]["application/json"]["schema"]
    assert documented["properties"] == spec_arguments["properties"]
    assert documented["required"] == spec_arguments["required"]
    assert set(claim["responses"]) == {"200", "400", "401", "403", "404", "409", "422", "503"}
    refs = [v for v in json_.dumps(schema).split('"$ref": ')[1:]]
    assert all(r.startswith('"#/components/schemas/') for r in refs)
    assert client.get("/api/v1/docs/").status_code == 200


def test_openapi_marks_a_request_body_required_only_for_tools_with_required_arguments(client, agent):
    """Every tool of /api/v1/schema/ against its own argument schema: a tool whose arguments are all
    optional may be called with no body (README "REST"), so its requestBody is not required."""
    from api.tools.registry import argument_schema

    paths = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    optional = set()
    for path, item in paths.items():
        tool = path.rsplit("/", 1)[1]
        body = item["post"]["requestBody"]
        required = argument_schema(tool).get("required", [])
        assert body["required"] is bool(required), tool
        assert body["content"]["application/json"]["schema"].get("required", []) == required, tool
        if not required:
            optional.add(tool)
    assert optional == {"describe", "list_processes", "get_work", "list_runs"}


def test_a_float_limit_and_nul_characters_are_handled(client, agent):
    status, env, _ = rest_call(client, agent.token, "get_work", {"limit": 2.0})
    assert status == 200
    status, env, _ = rest_call(client, agent.token, "start_run",
                               {"process": "x\x00", "inputs": {"a\x00": "b"}, "requestId": "r\x00"})
    assert (status, env["error"]["issues"]) == (400, [
        "inputs: a key must not contain NUL characters", "process: must not contain NUL characters",
        "requestId: must not contain NUL characters"])
