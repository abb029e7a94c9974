"""The Python agent client (client/, issue 17 point 3) against a real server process, over REST and
over MCP: the 14 tools as typed results, typed errors by exact code and issue, the same requestId
replayed after a lost answer (answered from the idempotency record), upload from a path, and that
the package stands alone (no server import; installable from its own pyproject)."""

import ast
import hashlib
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx2
import pytest

import client
from client import Client, Evidence, RetryPolicy, Submission
from tests.support.spec import EXAMPLES

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[1]
TRANSPORTS = ["rest", "mcp"]
REPORT = b"Screening report: no hits on OFAC or EU lists for Acme Steel GmbH."
FAST_RETRY = RetryPolicy(attempts=4, base=0.01, cap=0.05, deadline=5)


@pytest.fixture
def onboarding(publish):
    return publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})


def connect(url: str, token: str, transport: str, **options) -> Client:
    return Client(url, token, transport=transport, **options)


def audit(kind: str, **where) -> list:
    from kernel.models import AuditEvent

    return list(AuditEvent.objects.filter(kind=kind, **where).order_by("id"))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_whole_supplier_onboarding_run_through_the_typed_client(
        live_server_url, onboarding, agent, make_person, tmp_path, transport):
    finance = make_person("fin@example.com", groups=["finance"])
    report = tmp_path / "screening.txt"
    report.write_bytes(REPORT)
    with connect(live_server_url, agent.token, transport) as as_agent, \
            connect(live_server_url, finance.token, transport) as as_finance:
        described = as_agent.describe()
        assert (described.protocol, described.version) == ("agentprocess", "core-2")
        assert sorted(described.tools) == sorted(client.TOOLS)
        assert described.lease_seconds == 600
        assert [p.name for p in as_agent.list_processes().items] == ["supplier-onboarding"]

        view = as_agent.start_run("supplier-onboarding", {"vendorName": "Acme Steel GmbH", "amount": 48000})
        run_id = view.run.id
        assert (view.run.state, view.step("check_vendor").state, view.inputs["amount"]) == \
            ("active", "ready", 48000)

        [ready] = as_agent.get_work(process="supplier-onboarding").items
        assert isinstance(ready, client.ReadyStep)
        assert (ready.run_id, ready.step_id, ready.handoff) == (run_id, "check_vendor", None)

        claim = as_agent.claim(run_id, "check_vendor")
        assert claim.step.evidence == ["file"]
        assert [route["to"] for route in claim.step.next] == ["approve", "decline"]
        assert claim.data["inputs"]["vendorName"] == "Acme Steel GmbH"

        uploaded = as_agent.upload(report)
        assert (uploaded.sha256, uploaded.bytes) == (hashlib.sha256(REPORT).hexdigest(), len(REPORT))

        with pytest.raises(client.NotAccepted) as refused:
            as_agent.submit(claim.token, Submission(output={"cleared": "yes"}, summary="Searched."))
        assert refused.value.code == "not_accepted"
        assert sorted(refused.value.issues) == sorted([
            "output.cleared: expected boolean", "output.summary: missing", "evidence: file required",
            "next: required, one of approve, decline", "reason: required"])

        view = as_agent.submit(claim.token, Submission(
            output={"cleared": True, "summary": "No hits."}, summary="Searched both lists by legal name.",
            evidence=[uploaded.evidence()], next="approve", reason="Cleared on both lists."))
        assert view.step("check_vendor").state == "done"
        [evidence] = view.data["steps"]["check_vendor"]["evidence"]
        assert (evidence["ref"], evidence["sha256"]) == (uploaded.id, uploaded.sha256)

        [work] = as_finance.get_work().items
        assert isinstance(work, client.PersonWork)
        item = work.work_item
        assert (item.step_id, item.decisions) == ("approve", ["approved", "rejected", "failed"])
        ended = as_finance.decide(run_id, item.id, item.snapshot, "approved")
        assert (ended.run.state, ended.run.outcome) == ("ended", "onboarded")

        [listed] = as_agent.list_runs(process="supplier-onboarding", state="ended").items
        assert (listed.id, listed.outcome, listed.inputs["vendorName"]) == (run_id, "onboarded", "Acme Steel GmbH")
        assert as_agent.get_run(run_id).run.outcome == "onboarded"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_errors_are_typed_by_their_exact_code_and_issue(live_server_url, onboarding, make_agent, make_person,
                                                       transport):
    screener, other = make_agent("screener"), make_agent("other")
    with connect(live_server_url, screener.token, transport) as mine, \
            connect(live_server_url, other.token, transport) as theirs, \
            connect(live_server_url, make_person("ops@example.com", operator=True).token, transport) as ops:
        with pytest.raises(client.Invalid) as invalid:
            mine.start_run("supplier-onboarding", {"vendorName": "Acme", "amount": 1, "colour": "red"})
        assert invalid.value.issues == ["inputs.colour: not declared"]

        with pytest.raises(client.NotFound) as missing:
            mine.claim("r_missing", "check_vendor")
        assert (missing.value.code, missing.value.tool) == ("not_found", "claim")

        run_id = mine.start_run("supplier-onboarding", {"vendorName": "Acme", "amount": 1}).run.id
        claim = mine.claim(run_id, "check_vendor")
        with pytest.raises(client.ClaimedByYou) as yours:
            mine.claim(run_id, "check_vendor")
        assert (yours.value.code, yours.value.issue) == ("conflict", "claimed_by_you")
        with pytest.raises(client.ClaimedByOther) as taken:
            theirs.claim(run_id, "check_vendor")
        assert (taken.value.code, taken.value.issues) == ("conflict", ["claimed_by_other"])
        with pytest.raises(client.Forbidden) as not_agent:
            mine.claim(run_id, "approve")
        assert not_agent.value.code == "forbidden"

        renewed = mine.renew(claim.token, progress="Looked up the legal name.")
        assert renewed.token != claim.token
        with pytest.raises(client.Stale) as stale:
            mine.renew(claim.token)
        assert stale.value.code == "stale"

        with pytest.raises(client.Forbidden) as forbidden:
            theirs.renew(renewed.token)
        assert (forbidden.value.code, forbidden.value.message) == ("forbidden", "this token was issued to another identity")
        with pytest.raises(client.NotFound) as no_item:
            mine.decide(run_id, "w_missing", "x", "approved")
        assert (no_item.value.code, no_item.value.tool) == ("not_found", "decide")

        request_id = client.new_request_id()
        mine.send_event(run_id, "ping", request_id=request_id)
        with pytest.raises(client.Conflict) as reused:
            mine.send_event(run_id, "pong", request_id=request_id)
        assert type(reused.value) is client.Conflict
        assert reused.value.issues == ["requestId: already used with other arguments"]

        cancelled = ops.cancel(run_id, "Duplicate request.")
        assert (cancelled.run.state, cancelled.run.ended["note"]) == ("cancelled", "Duplicate request.")
        with pytest.raises(client.RunEnded) as ended:
            mine.submit(renewed.token, output={"cleared": True, "summary": "-"}, summary="-")
        assert (ended.value.code, ended.value.issue) == ("conflict", "run_ended")
        assert isinstance(ended.value, client.Conflict)

    with connect(live_server_url, "apt_not-a-token", transport) as stranger, pytest.raises(client.Invalid) as refused:
        stranger.describe()
    assert refused.value.issues == ["Authorization: unknown, expired or revoked token"]


def test_a_step_that_is_not_ready_is_a_not_ready_conflict(live_server_url, onboarding, agent):
    with connect(live_server_url, agent.token, "rest") as mine:
        run_id = mine.start_run("supplier-onboarding", {"vendorName": "Acme", "amount": 1}).run.id
        claim = mine.claim(run_id, "check_vendor")
        mine.escalate(claim.token, "The legal name matches two companies.")
        with pytest.raises(client.NotReady) as not_ready:
            mine.claim(run_id, "check_vendor")
        assert (not_ready.value.code, not_ready.value.issues) == ("conflict", ["not_ready"])


RETRY_ENVELOPE = {"ok": False, "error": {"code": "retry", "message": "the database is not reachable"}}


class LoseAnswers(httpx2.BaseTransport):
    """Forwards every request to the real server; for the first `count` calls of `tool` it throws
    the server's answer away after the server applied the call: the connection is cut (`cut`) or a
    gateway answers 503 with a retry envelope (`retry`)."""

    def __init__(self, tool: str, how: str, count: int = 1):
        self.inner = httpx2.HTTPTransport()
        self.tool, self.how, self.left = tool, how, count
        self.sent: list[dict] = []
        self.lost: list[dict] = []

    def handle_request(self, request):
        response = self.inner.handle_request(request)
        if not request.url.path.endswith(f"/{self.tool}"):
            return response
        self.sent.append(json.loads(request.content))
        if self.left <= 0:
            return response
        self.left -= 1
        response.read()
        self.lost.append(json.loads(response.content))
        if self.how == "cut":
            raise httpx2.ReadError("the connection was cut after the server answered", request=request)
        return httpx2.Response(503, json=RETRY_ENVELOPE, request=request)


class LoseMcpAnswers(httpx2.AsyncBaseTransport):
    """The same for MCP: the first `tools/call` of `tool` is applied by the server, then cut."""

    def __init__(self, tool: str):
        self.inner = httpx2.AsyncHTTPTransport()
        self.tool, self.left = tool, 1
        self.sent: list[dict] = []
        self.lost: list[dict] = []

    async def handle_async_request(self, request):
        response = await self.inner.handle_async_request(request)
        body = json.loads(request.content) if request.content else {}
        params = body.get("params") or {}
        if body.get("method") != "tools/call" or params.get("name") != self.tool:
            return response
        self.sent.append(params["arguments"])
        if self.left <= 0:
            return response
        self.left -= 1
        await response.aread()
        self.lost.append(json.loads(response.content)["result"]["structuredContent"])
        raise httpx2.ReadError("the connection was cut after the server answered", request=request)


@pytest.mark.parametrize("how", ["cut", "retry"])
def test_a_lost_answer_is_replayed_with_the_same_request_id_and_answered_from_the_record(
        live_server_url, onboarding, agent, how):
    from runs.models import IdempotencyRecord

    with connect(live_server_url, agent.token, "rest") as mine:
        run_id = mine.start_run("supplier-onboarding", {"vendorName": "Acme", "amount": 1}).run.id
    faulty = LoseAnswers("claim", how)
    with Client(live_server_url, agent.token, http_transport=faulty, retry=FAST_RETRY) as flaky:
        claim = flaky.claim(run_id, "check_vendor")
    first, replay = faulty.sent
    assert first["requestId"] == replay["requestId"] and first == replay  # the same call, sent again
    [lost] = faulty.lost
    assert lost["ok"] is True and claim.token == lost["data"]["token"]  # the original result
    assert len(audit("step_claimed", run_id=run_id)) == 1  # applied once
    [record] = IdempotencyRecord.objects.filter(request_id=first["requestId"])
    assert (record.tool, record.result["token"]) == ("claim", claim.token)


def test_a_lost_mcp_answer_is_replayed_with_the_same_request_id(live_server_url, onboarding, agent):
    with connect(live_server_url, agent.token, "rest") as mine:
        run_id = mine.start_run("supplier-onboarding", {"vendorName": "Acme", "amount": 1}).run.id
    faulty = LoseMcpAnswers("claim")
    with Client(live_server_url, agent.token, transport="mcp", http_transport=faulty, retry=FAST_RETRY) as flaky:
        claim = flaky.claim(run_id, "check_vendor")
        assert flaky.get_run(run_id).step("check_vendor").state == "claimed"  # the session works on
    first, replay = faulty.sent
    assert first == replay and first["requestId"]
    assert claim.token == faulty.lost[0]["data"]["token"]
    assert len(audit("step_claimed", run_id=run_id)) == 1


def test_retries_are_bounded_and_a_retry_that_never_clears_raises_retry(live_server_url, onboarding, agent):
    faulty = LoseAnswers("start_run", "retry", count=10)
    policy = RetryPolicy(attempts=3, base=0.01, cap=0.02, deadline=5)
    with Client(live_server_url, agent.token, http_transport=faulty, retry=policy) as flaky, \
            pytest.raises(client.Retry) as gave_up:
        flaky.start_run("supplier-onboarding", {"vendorName": "Acme", "amount": 1})
    assert len(faulty.sent) == 3 and len({call["requestId"] for call in faulty.sent}) == 1
    assert gave_up.value.request_id == faulty.sent[0]["requestId"]
    from runs.models import Run

    assert Run.objects.count() == 1  # the first try applied it; the replays found it recorded
    assert faulty.lost[1] == faulty.lost[0] and faulty.lost[0]["ok"] is True


def test_a_server_that_is_not_there_raises_unreachable_after_the_budget():
    import socket

    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    policy = RetryPolicy(attempts=3, base=0.01, cap=0.02, deadline=5)
    with Client(f"http://127.0.0.1:{port}", "apt_x", retry=policy) as nowhere, \
            pytest.raises(client.Unreachable) as unreachable:
        nowhere.cancel("r_1", "gone", request_id="fixed-id")
    assert unreachable.value.request_id == "fixed-id"
    assert "no answer after 3 attempts" in str(unreachable.value)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_upload_from_a_path_and_a_file_over_the_limit_is_refused_before_sending(
        live_server_url, agent, tmp_path, transport):
    from runs.models import Upload

    photo = tmp_path / "site photo.png"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64)
    with connect(live_server_url, agent.token, transport) as mine:
        uploaded = mine.upload(photo)
        assert uploaded.bytes == photo.stat().st_size
        assert uploaded.sha256 == hashlib.sha256(photo.read_bytes()).hexdigest()
        assert uploaded.evidence() == Evidence("file", uploaded.id)
        row = Upload.objects.get(pk=uploaded.id)
        assert (row.file_name, row.content_type) == ("site photo.png", "image/png")

        too_big = tmp_path / "too-big.bin"
        with too_big.open("wb") as sparse:
            sparse.truncate(mine.described().max_upload_bytes + 1)
        with pytest.raises(client.Invalid) as refused:
            mine.upload(too_big)
        assert refused.value.issues == [
            f"contentBase64: {too_big.stat().st_size} bytes, more than maxUploadBytes (10485760)"]
        with pytest.raises(FileNotFoundError):
            mine.upload(tmp_path / "missing.pdf")
        # A body past what the HTTP layer takes is refused there (413), not retried: over MCP the SDK
        # says only "Server returned an error response", and the client reads the 413 itself.
        started = time.monotonic()
        with pytest.raises(client.Invalid) as too_big_a_body:
            mine.upload(b"x" * (14 * 1024 * 1024), file_name="big.bin")
        assert time.monotonic() - started < 10
        if transport == "rest":
            assert too_big_a_body.value.issues == ["body: larger than the server accepts"]
        else:
            assert too_big_a_body.value.message.startswith("HTTP 413")
    assert Upload.objects.count() == 1  # nothing else stored


def test_the_client_imports_nothing_of_the_server():
    server_packages = {"agentprocess", "kernel", "api", "processes", "runs", "workqueue", "tests", "bench", "django"}
    allowed = set(sys.stdlib_module_names) | {"client", "httpx2", "mcp", "anyio"}
    for path in sorted((ROOT / "client").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for name in names:
                top = name.split(".")[0]
                assert top not in server_packages and top in allowed, f"{path.name} imports {name}"


def test_the_client_installs_alone_from_its_own_pyproject(tmp_path):
    """A wheel built from client/pyproject.toml holds the package and works outside the repository."""
    import shutil

    source = tmp_path / "source"  # a copy: setuptools leaves build/ and *.egg-info where it builds
    shutil.copytree(ROOT / "client", source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                            str(source)], check=False, capture_output=True, text=True, timeout=120)
    if built.returncode and "satisfies the requirement setuptools" in built.stderr:
        pytest.skip("pip cannot fetch setuptools (the build backend) here; the wheel was not built")
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("agentprocess_client-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert {"client/__init__.py", "client/worker.py", "client/api.py"} <= set(names)
        metadata = archive.read(next(name for name in names if name.endswith("METADATA"))).decode()
        archive.extractall(tmp_path / "site")
    assert "Requires-Dist: mcp" in metadata and "Requires-Dist: httpx2" in metadata
    assert not any(name.startswith(("tests/", "examples/")) for name in names)
    probe = "import client, sys; assert client.__file__.startswith(sys.argv[1]), client.__file__; print(client.__version__)"
    run = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "site")], check=False, capture_output=True,
                         text=True,
                         cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert (run.returncode, run.stdout.strip()) == (0, client.__version__), run.stderr
