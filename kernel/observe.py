"""What the server says it did (issue 22, points 3 and 4): one structured log line and the metrics
of each HTTP request, each tool call and each sweep, and the request id that ties them together.

Nothing secret is ever written: a line carries ids, names, codes and durations, never arguments,
headers, tokens, query strings or bytes.
"""

import contextlib
import functools
import logging
import os
import re
import time
from collections.abc import Callable
from contextvars import ContextVar

from . import metrics

http_log = logging.getLogger("agentprocess.http")
tool_log = logging.getLogger("agentprocess.tools")
sweep_log = logging.getLogger("agentprocess.sweeps")

# --- the request id --------------------------------------------------------------------------
REQUEST_ID_HEADER = "X-Request-ID"
# An incoming X-Request-ID is kept when it is a plain token (a proxy's $request_id, a UUID);
# anything else is replaced, so a line never carries what a caller smuggled into it.
_ACCEPTED_ID = re.compile(r"^[A-Za-z0-9._:@+=/-]{1,128}$")
_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)


def request_id_from(incoming: str | None) -> str:
    if incoming and _ACCEPTED_ID.match(incoming):
        return incoming
    return os.urandom(16).hex()  # what uuid4().hex carries, without building a UUID


def current_request_id() -> str | None:
    return _request_id.get()


@contextlib.contextmanager
def serving_request(request_id: str | None):
    """Lines written inside carry `request_id` (the ASGI wrapper; the tool threads, api/threads.py)."""
    token = _request_id.set(request_id)
    try:
        yield
    finally:
        _request_id.reset(token)


def _write(logger: logging.Logger, message: str, fields: dict) -> None:
    """An INFO line with its fields, made directly: Logger.info would first walk the stack to find
    its caller, a third of the line's cost, for a place no formatter of ours prints."""
    record = logger.makeRecord(logger.name, logging.INFO, __file__, 0, message, None, None)
    record.fields = fields
    logger.handle(record)


def http_request(*, request_id: str, method: str, path: str, status: int, seconds: float, client: str | None) -> None:
    """One line per HTTP request. The path only: a query string may hold a signature or a code."""
    if http_log.isEnabledFor(logging.INFO):
        _write(http_log, "request", {
            "event": "request", "request_id": request_id, "method": method, "path": path, "status": status,
            "duration_ms": round(seconds * 1000, 2), "client": client})


# --- tool calls ------------------------------------------------------------------------------
# What a call turned out to be about, found while it ran (a verified lease token names its run and
# step): set by `tool_call_facts` around the call, filled by `note_target`.
_call_facts: ContextVar[dict | None] = ContextVar("tool_call_facts", default=None)


@contextlib.contextmanager
def tool_call_facts():
    facts: dict = {}
    token = _call_facts.set(facts)
    try:
        yield facts
    finally:
        _call_facts.reset(token)


def note_target(*, run_id: str, step_id: str | None = None) -> None:
    """The run (and step) the current tool call acts on, once something trustworthy said so."""
    facts = _call_facts.get()
    if facts is not None:
        facts.setdefault("run_id", run_id)
        if step_id is not None:
            facts.setdefault("step_id", step_id)


def tool_call(*, tool: str, known: bool, transport: str, identity, outcome: str, seconds: float,
              run_id: str | None, step_id: str | None) -> None:
    """The metrics and the line of one tool call. `known`: the tool exists (else one label for all
    names, so callers cannot make series at will)."""
    _count(metrics.tool_call, tool if known else metrics.UNKNOWN_TOOL, transport, outcome, seconds)
    if tool_log.isEnabledFor(logging.INFO):
        _write(tool_log, "tool call", {
            "event": "tool_call", "request_id": _request_id.get(), "tool": tool if known else tool[:64],
            "transport": transport, "identity_kind": identity.kind,
            "identity_id": (identity.agent.pk if identity.is_agent else identity.user.pk),
            "organization_id": identity.organization.pk, "run_id": _short(run_id), "step_id": _short(step_id),
            "outcome": outcome, "duration_ms": round(seconds * 1000, 2)})


def _short(text: str | None) -> str | None:
    return text if text is None or len(text) <= 64 else text[:64] + "…"


# --- sweeps ----------------------------------------------------------------------------------
def swept(kind: str, items: Callable[[object], int] = int):
    """Decorate one sweep: its duration and the items it handled (`items(result)`) go to the
    metrics and to one line."""
    def decorate(function):
        @functools.wraps(function)
        def sweep(*args, **kwargs):
            started = time.perf_counter()
            result = function(*args, **kwargs)
            seconds = time.perf_counter() - started
            handled = items(result)
            _count(metrics.sweep, kind, handled, seconds)
            _write(sweep_log, "sweep", {"event": "sweep", "kind": kind, "items": handled,
                                        "duration_ms": round(seconds * 1000, 2)})
            return result
        return sweep
    return decorate


def evaluator_call(*, failed: bool) -> None:
    _count(metrics.evaluator_call, failed=failed)


def _count(record: Callable, *args, **kwargs) -> None:
    """A metric that cannot be written (its folder full or gone) is lost, never the call or sweep
    it counts."""
    try:
        record(*args, **kwargs)
    except Exception:  # noqa: BLE001
        logging.getLogger(__name__).exception("a metric could not be recorded")
