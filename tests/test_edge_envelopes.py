"""Every bad input gets the envelope it deserves (issue 13, point 2): never a 500, never a text/plain
answer, never `retry` for what a retry cannot fix.

Spec §4.3: "`retry` | Transient server state."; "`invalid` | Bad arguments."
"""

import base64
import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client

from api.tools.registry import MAX_DEPTH
from runs.models import Upload
from tests.support.concurrency import run_together
from tests.support.live import start_live_server
from tests.support.processes import SCREEN_AND_APPROVE


def post(url: str, body: bytes, token: str | None = None, headers: dict | None = None):
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {}),
        **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.headers.get("Content-Type"), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type"), json.loads(error.read())


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def test_a_database_that_is_down_answers_retry_envelopes_on_rest_and_mcp(tmp_path, agent):
    """The bearer look-up is inside the envelope's error handling: no text/plain 500."""
    unreachable = "postgres://postgres@127.0.0.1:9/nothing-listens-here"
    with start_live_server(unreachable, tmp_path, env={"DB_POOL_TIMEOUT": "2"}) as server:
        status, kind, envelope = post(f"{server.url}/api/v1/tools/describe", b"{}", agent.token)
        assert (status, kind) == (503, "application/json")
        assert envelope == {"ok": False, "error": {
            "code": "retry", "message": "the server cannot check credentials right now; retry in a moment"}}
        call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "describe", "arguments": {}}}).encode()
        status, kind, envelope = post(f"{server.url}/mcp", call, agent.token, {
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
        assert (status, envelope["error"]["code"]) == (503, "retry")


def test_a_large_unauthenticated_body_is_refused_before_it_is_read(live_server_url):
    """Headers announcing 50 MB and one 64 KB read: the 401 comes back while the rest is unsent."""
    host, port = live_server_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as raw:
        raw.sendall(f"POST /api/v1/tools/upload HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {50 * 1024 * 1024}\r\n\r\n".encode() + b"{" + b" " * 65535)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = raw.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401")
    assert json.loads(body)["error"]["issues"] == ["Authorization: missing"]


def test_lone_surrogates_anywhere_are_invalid_with_their_place(client, agent):
    body = b'{"process": "x", "inputs": {"vendor\\udc00": "Acme\\ud800"}, "requestId": "r-1"}'
    response = client.post("/api/v1/tools/start_run", body, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {agent.token}")
    assert response.status_code == 400
    assert response.json()["error"]["issues"] == [
        "inputs.vendor\\udc00: holds a lone surrogate (\\ud800), which is not a character",
        "inputs: a key holds a lone surrogate (\\udc00), which is not a character"]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_json_nested_past_the_limit_is_invalid_never_retry(client, agent, depth):
    body = ('{"token": "t", "summary": "s", "requestId": "r-2", "output": ' + nested(depth) + "}").encode()
    response = client.post("/api/v1/tools/submit", body, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {agent.token}")
    assert response.status_code == 400
    (issue,) = response.json()["error"]["issues"]
    assert issue.endswith(f": nested deeper than {MAX_DEPTH} levels")
    assert issue.startswith("output.a.a" if depth < 1000 else "body")


def test_list_runs_takes_a_bounded_number_of_input_filters(agent, settings):
    settings.LIST_RUNS_INPUT_FILTERS = 16
    refused = agent.error("list_runs", inputs={f"field{index}": index for index in range(17)})
    assert refused == {"code": "invalid", "message": "too many input filters", "issues": ["inputs: at most 16 fields"]}
    assert agent.ok("list_runs", inputs={f"field{index}": index for index in range(16)})["items"] == []


def test_uploads_refuse_control_characters_in_names_and_types(agent):
    refused = agent.error("upload", fileName="report\r\nX-Evil: 1.pdf", contentType="application/pdf\x07",
                          contentBase64=base64.b64encode(b"%PDF").decode())
    assert refused["issues"] == ["fileName: must not contain control characters",
                                 "contentType: must not contain control characters"]
    assert not Upload.objects.exists()


@pytest.mark.postgres
def test_concurrent_uploads_with_one_request_id_leave_one_file(transactional_db, agent, settings):
    arguments = {"fileName": "report.pdf", "contentType": "application/pdf",
                 "contentBase64": base64.b64encode(b"%PDF-1.4 the same report").decode(), "requestId": "up-1"}
    answers = run_together(lambda: agent.call("upload", **arguments), count=4)
    assert len({json.dumps(answer, sort_keys=True) for answer in answers}) == 1 and answers[0]["ok"]
    assert Upload.objects.count() == 1
    stored = [path for path in Path(settings.MEDIA_ROOT).rglob("*") if path.is_file()]
    assert [path.name for path in stored] == [Upload.objects.get().sha256]


def test_the_same_bytes_uploaded_twice_are_stored_once(agent, settings):
    content = base64.b64encode(b"one receipt").decode()
    first = agent.ok("upload", fileName="a.pdf", contentType="application/pdf", contentBase64=content)
    second = agent.ok("upload", fileName="b.pdf", contentType="application/pdf", contentBase64=content)
    assert first["id"] != second["id"] and first["sha256"] == second["sha256"]
    assert len([p for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file()]) == 1


@pytest.mark.parametrize("method", ["get", "put", "delete", "patch"])
def test_other_methods_on_a_tool_url_answer_an_invalid_envelope_with_405(agent, method):
    response = getattr(Client(), method)("/api/v1/tools/describe", HTTP_AUTHORIZATION=f"Bearer {agent.token}")
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert response.json() == {"ok": False, "error": {"code": "invalid", "message": "tools are called with POST",
                                                      "issues": ["method: only POST is allowed"]}}


def test_no_credential_is_a_401_envelope_whose_code_the_readme_documents(client):
    response = client.post("/api/v1/tools/describe", b"{}", content_type="application/json")
    assert response.status_code == 401 and response.json()["error"]["code"] == "invalid"
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert "401 with the code `invalid`" in readme


@pytest.mark.postgres
def test_terminated_database_backends_cost_no_failed_request(live_server_url, agent, publish):
    """The pool checks a connection as it leaves it (psycopg_pool `check`), so after PostgreSQL
    dropped every connection of the server, the next calls all succeed."""
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    url = f"{live_server_url}/api/v1/tools/get_work"
    for _ in range(5):
        assert post(url, b"{}", agent.token)[0] == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    answers = [post(url, b"{}", agent.token)[0] for _ in range(20)]
    assert answers == [200] * 20


@pytest.mark.postgres
def test_a_pool_whose_idle_connections_all_died_recovers_at_once(transactional_db):
    """psycopg_pool alone tests dead connections one at a time with growing pauses (30 s of failed
    requests with 16 idle connections, measured); kernel/pool.py sweeps them all on the first."""
    import time

    from django.db import connections

    def hold_one():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(0.2)")
        return True

    assert run_together(hold_one, count=8) == [True] * 8  # eight idle connections in the pool now
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    connections.close_all()  # this thread's connection goes back to the pool too
    started = time.monotonic()
    for _ in range(5):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            assert cursor.fetchone() == (1,)
        connections.close_all()
    assert time.monotonic() - started < 3


def test_pages_render_run_data_nested_deeper_than_arguments_may_be_now(publish, make_person, agent):
    """Data stored before arguments were limited (or by an import) cannot make a page fail for
    good: the run page and the work item page render, the deep value shown as a short note."""
    from runs.models import Run

    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    make_person("fin@example.com", groups=["finance"], password="a-long-password-1")
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    item = agent.ok("submit", token=token, output={"cleared": True},
                    evidence=[{"kind": "link", "ref": "https://example.com/r"}], summary="Clear.")["workItems"][0]
    deep = current = {}
    for _ in range(600):  # storable and readable, but deeper than the pages' JSON display can recurse
        current["a"] = {}
        current = current["a"]
    run = Run.objects.get(pk=run_id)
    run.steps_data["screen"]["output"]["cleared"] = deep  # written around the tools, as old data would be
    Run.objects.filter(pk=run_id).update(steps_data=run.steps_data)
    client = Client()
    assert client.login(username="fin@example.com", password="a-long-password-1")
    for url in (f"/runs/{run_id}", f"/work/{item['id']}"):
        assert client.get(url).status_code == 200, url
    # Deeper than the display can recurse: a short note instead of a failed page.
    from workqueue.templatetags.workqueue_tags import pretty

    deeper = current = {}
    for _ in range(5000):
        current["a"] = {}
        current = current["a"]
    assert pretty(deeper) == "(nested too deeply to show here)"
    assert pretty({"a": [1, 2]}) == '{\n  "a": [\n    1,\n    2\n  ]\n}'


def test_large_bodies_are_buffered_a_bounded_number_at_a_time(transactional_db, tmp_path, agent):
    """REST_BODY_BUFFERS=1: while one large body is being received, a second waits its turn
    (it is not read, and not answered); it is answered once the first is done."""
    from django.db import connection

    from tests.support.live import database_url

    def open_upload(port: int, body_size: int) -> socket.socket:
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        raw.sendall(f"POST /api/v1/tools/describe HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    f"Authorization: Bearer {agent.token}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {body_size}\r\n\r\n".encode() + b"{" + b" " * 200_000)
        return raw

    def answer(raw: socket.socket, timeout: float) -> bytes:
        raw.settimeout(timeout)
        data = b""
        try:
            while not data.rstrip().endswith(b"}"):
                chunk = raw.recv(65536)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            pass
        return data

    size = 200_001 + 300_000
    with start_live_server(database_url(connection.settings_dict), tmp_path, env={"REST_BODY_BUFFERS": "1"}) as server:
        port = int(server.url.rsplit(":", 1)[1])
        first = open_upload(port, size)
        time.sleep(0.5)  # the first holds the one buffer
        second = open_upload(port, size)
        second.sendall(b" " * 299_999 + b"}")  # all of it sent
        assert answer(second, 1.5) == b""  # waits its turn: not answered while the first is being received
        first.sendall(b" " * 299_999 + b"}")
        assert b"HTTP/1.1 200" in answer(first, 20)
        assert b"HTTP/1.1 200" in answer(second, 20)
        first.close()
        second.close()
