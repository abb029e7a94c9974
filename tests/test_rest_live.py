"""REST against a real uvicorn process: the ASGI route answers POST /api/v1/tools/<tool> with the same
rules as the Django view (api.rest.respond)."""

import json
import urllib.error
import urllib.request

import pytest

pytestmark = pytest.mark.live


def post(url, body: bytes, token: str | None = None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers


def test_the_asgi_rest_route_follows_the_rest_contract(live_server_url, make_agent, settings):
    agent = make_agent("live")
    url = f"{live_server_url}/api/v1/tools/describe"
    status, envelope, _ = post(url, b"{}", agent.token)
    assert (status, envelope["data"]["protocol"]) == (200, "agentprocess")
    status, envelope, headers = post(url, b"{}")
    assert status == 401 and envelope["error"]["issues"] == ["Authorization: missing"]
    assert "oauth-protected-resource/api/v1" in headers["WWW-Authenticate"]
    status, envelope, headers = post(url, b"{}", "apt_unknown")
    assert status == 401 and 'error="invalid_token"' in headers["WWW-Authenticate"]
    status, envelope, _ = post(url, b"{oops", agent.token)
    assert (status, envelope["error"]["issues"]) == (400, ["body: not valid JSON"])
    status, envelope, _ = post(f"{live_server_url}/api/v1/tools/claim", b"{}", agent.token)
    assert (status, envelope["error"]["code"]) == (400, "invalid")
    status, envelope, _ = post(url, b"x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1), agent.token)
    assert (status, envelope["error"]["issues"]) == (413, ["body: larger than the server accepts"])
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=20)  # a GET goes on to Django: 405
    assert refused.value.code == 405
