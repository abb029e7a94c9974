"""`Client`: the 14 tools of tools.md as typed methods, over REST or MCP.

Every write gets a fresh `requestId` unless one is given, and every retry of that call (after a
`retry` answer or a network failure) sends the SAME requestId with the same arguments, so the
server answers a repeat from its idempotency record instead of applying it twice.
"""

from __future__ import annotations

import base64
import logging
import mimetypes
import random
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from . import errors
from .transport import McpTransport, RestTransport, Transport, TransportFailure
from .types import (
    Claim,
    Description,
    EventResult,
    Evidence,
    Page,
    ProcessInfo,
    Renewal,
    RunSummary,
    RunView,
    Submission,
    Upload,
    work_from_json,
)

log = logging.getLogger("client")

WRITES = frozenset({"start_run", "claim", "renew", "upload", "submit", "escalate", "decide", "cancel", "send_event"})
TOOLS = ("describe", "list_processes", "start_run", "get_run", "get_work", "claim", "renew", "upload", "submit",
         "escalate", "decide", "cancel", "send_event", "list_runs")


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: the n-th wait is uniform in [0, min(cap, base * 2**n)],
    bounded both by `attempts` and by `deadline` seconds since the first try. The default budget
    rides out a server restart of several seconds."""

    attempts: int = 30
    base: float = 0.1
    cap: float = 2.0
    deadline: float = 60.0

    def delay(self, attempt: int) -> float:
        return random.uniform(0, min(self.cap, self.base * 2 ** attempt))


def new_request_id() -> str:
    return str(uuid.uuid4())


class Client:
    """A connection to one agentprocess server as one identity (its bearer token).

        client = Client("http://127.0.0.1:8000", token)                    # REST
        client = Client("http://127.0.0.1:8000", token, transport="mcp")   # MCP (official SDK)

    Thread-safe: one client may serve many threads. Use as a context manager or call `close()`.
    """

    def __init__(self, url: str, token: str, *, transport: str | Transport = "rest", timeout: float = 30.0,
                 retry: RetryPolicy | None = None, http_transport=None):
        self.url = url.rstrip("/")
        self.retry_policy = retry or RetryPolicy()
        if isinstance(transport, str):
            if transport == "rest":
                transport = RestTransport(self.url, token, timeout=timeout, http_transport=http_transport)
            elif transport == "mcp":
                transport = McpTransport(self.url, token, timeout=timeout, http_transport=http_transport)
            else:
                raise ValueError(f"transport must be 'rest' or 'mcp', not {transport!r}")
        self.transport = transport
        self._described: Description | None = None
        self._describe_lock = threading.Lock()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self.transport.close()

    # --- the one call path --------------------------------------------------------------------
    def call(self, tool: str, arguments: dict | None = None, *, interrupt: threading.Event | None = None) -> Any:
        """Call a tool by name; returns the envelope's `data` or raises the typed error. A write
        without `requestId` gets one; retries keep it. `interrupt`, once set, ends the retries
        early (`Unreachable`): a caller that is shutting down does not wait out the budget."""
        arguments = dict(arguments or {})
        if tool in WRITES and not arguments.get("requestId"):
            arguments["requestId"] = new_request_id()
        request_id = arguments.get("requestId")
        policy = self.retry_policy
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                envelope = self.transport.send(tool, arguments)
            except TransportFailure as failure:
                envelope, cause = None, str(failure)
            else:
                if envelope["ok"]:
                    if attempt:
                        log.info("answered after retries", extra={
                            "event": "call_recovered", "tool": tool, "requestId": request_id, "attempts": attempt + 1})
                    return envelope.get("data")
                error = envelope.get("error") or {}
                if error.get("code") != "retry":
                    raise errors.error_from_envelope(error, tool=tool, request_id=request_id)
                cause = f"retry: {error.get('message', '')}"
            attempt += 1
            pause = policy.delay(attempt)
            if attempt >= policy.attempts or time.monotonic() - started + pause > policy.deadline \
                    or (interrupt is not None and interrupt.is_set()):
                if envelope is not None:
                    raise errors.error_from_envelope(envelope["error"], tool=tool, request_id=request_id)
                raise errors.Unreachable(f"{tool}: no answer after {attempt} attempts ({cause})",
                                         tool=tool, request_id=request_id)
            log.warning("retrying with the same requestId", extra={
                "event": "call_retry", "tool": tool, "requestId": request_id, "attempt": attempt,
                "cause": cause, "pause": round(pause, 3)})
            if interrupt is not None:
                interrupt.wait(pause)
            else:
                time.sleep(pause)

    # --- the 14 tools ---------------------------------------------------------------------------
    def describe(self) -> Description:
        description = Description.from_json(self.call("describe"))
        self._described = description
        return description

    def described(self) -> Description:
        """`describe`, asked once and kept (the lease length, the upload limit)."""
        with self._describe_lock:
            return self._described or self.describe()

    def list_processes(self, cursor: str | None = None) -> Page:
        data = self.call("list_processes", _given(cursor=cursor))
        return Page([ProcessInfo.from_json(item) for item in data["items"]], data.get("nextCursor"))

    def start_run(self, process: str, inputs: dict, *, version: int | None = None, mode: str | None = None,
                  request_id: str | None = None) -> RunView:
        return RunView.from_json(self.call("start_run", _given(
            process=process, inputs=inputs, version=version, mode=mode, requestId=request_id)))

    def get_run(self, run_id: str) -> RunView:
        return RunView.from_json(self.call("get_run", {"runId": run_id}))

    def get_work(self, *, limit: int | None = None, cursor: str | None = None, process: str | None = None,
                 interrupt: threading.Event | None = None) -> Page:
        """A page of work: `ReadyStep`s for an agent, `PersonWork` items for a person."""
        data = self.call("get_work", _given(limit=limit, cursor=cursor, process=process), interrupt=interrupt)
        return Page([work_from_json(item) for item in data["items"]], data.get("nextCursor"))

    def claim(self, run_id: str, step_id: str, *, request_id: str | None = None) -> Claim:
        return Claim.from_json(self.call("claim", _given(runId=run_id, stepId=step_id, requestId=request_id)))

    def renew(self, token: str, *, progress: str | None = None, request_id: str | None = None) -> Renewal:
        return Renewal.from_json(self.call("renew", _given(token=token, progress=progress, requestId=request_id)))

    def upload(self, source: str | Path | bytes, *, file_name: str | None = None, content_type: str | None = None,
               request_id: str | None = None) -> Upload:
        """Upload a file from a path (or bytes, with `file_name`). The name defaults to the file's
        own, the type to the one its extension suggests. A file over `describe.maxUploadBytes` is
        refused here, as the server would (`Invalid`), before any byte is sent."""
        if isinstance(source, bytes):
            if not file_name:
                raise ValueError("file_name is required when uploading bytes")
            content = source
        else:
            path = Path(source)
            file_name = file_name or path.name
            limit = self.described().max_upload_bytes
            size = path.stat().st_size  # FileNotFoundError for a missing file: nothing is sent
            if limit is not None and size > limit:
                raise errors.Invalid("the file is too large", [
                    f"contentBase64: {size} bytes, more than maxUploadBytes ({limit})"], tool="upload")
            content = path.read_bytes()
        content_type = content_type or mimetypes.guess_type(file_name)[0] or "application/octet-stream"
        return Upload.from_json(self.call("upload", _given(
            fileName=file_name, contentType=content_type,
            contentBase64=base64.b64encode(content).decode("ascii"), requestId=request_id)))

    def submit(self, token: str, submission: Submission | None = None, *, output: dict | None = None,
               summary: str | None = None, evidence: list | None = None, next: str | None = None,
               reason: str | None = None, request_id: str | None = None) -> RunView:
        """Submit a step's work: a `Submission`, or its fields as keyword arguments."""
        if submission is None:
            submission = Submission(output=output if output is not None else {}, summary=summary or "",
                                    evidence=list(evidence or []), next=next, reason=reason)
        arguments = {"token": token, **submission.arguments()}
        return RunView.from_json(self.call("submit", _given(**arguments, requestId=request_id)))

    def escalate(self, token: str, note: str, *, request_id: str | None = None) -> RunView:
        return RunView.from_json(self.call("escalate", _given(token=token, note=note, requestId=request_id)))

    def decide(self, run_id: str, work_item_id: str, snapshot: str, decision: str, *, output: dict | None = None,
               evidence: list | None = None, summary: str | None = None, next: str | None = None,
               reason: str | None = None, note: str | None = None, request_id: str | None = None) -> RunView:
        """A person's decision on a work item (`completed`, `approved`, `rejected`, `returned`, `failed`)."""
        items = [item.to_json() if isinstance(item, Evidence) else item for item in evidence] \
            if evidence is not None else None
        return RunView.from_json(self.call("decide", _given(
            runId=run_id, workItemId=work_item_id, snapshot=snapshot, decision=decision, output=output,
            evidence=items, summary=summary, next=next, reason=reason, note=note, requestId=request_id)))

    def cancel(self, run_id: str, reason: str, *, request_id: str | None = None) -> RunView:
        return RunView.from_json(self.call("cancel", _given(runId=run_id, reason=reason, requestId=request_id)))

    def send_event(self, run_id: str, name: str, data: dict | None = None, *,
                   request_id: str | None = None) -> EventResult:
        return EventResult.from_json(self.call("send_event", _given(
            runId=run_id, name=name, data=data, requestId=request_id)))

    def list_runs(self, *, process: str | None = None, state: str | None = None, inputs: dict | None = None,
                  limit: int | None = None, cursor: str | None = None) -> Page:
        data = self.call("list_runs", _given(process=process, state=state, inputs=inputs, limit=limit, cursor=cursor))
        return Page([RunSummary.from_json(item) for item in data["items"]], data.get("nextCursor"))


def _given(**arguments) -> dict:
    """The arguments that were given: an optional argument left out is not sent as null."""
    return {name: value for name, value in arguments.items() if value is not None}
