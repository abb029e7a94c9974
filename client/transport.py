"""The two ways to reach a server: REST (`POST /api/v1/tools/<tool>`) and MCP (the official SDK's
client, Streamable HTTP at `/mcp`). Each turns one tool call into the envelope the server answered,
or raises `TransportFailure` when no envelope came back (the caller retries with the same requestId).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Protocol

import httpx2

from .errors import ProtocolMismatch

log = logging.getLogger("client.transport")

# Gateways and proxies answer these while a server restarts; nothing was applied by them.
TRANSIENT_STATUSES = {429, 502, 503, 504}


class TransportFailure(Exception):
    """No envelope came back: the connection failed, was cut, timed out, or a gateway answered."""


class Refused(Exception):
    """The HTTP layer refused the MCP request (401 for the token, 413 for the body, ...): the SDK
    reports only "Server returned an error response", so the answer itself is kept and returned."""

    def __init__(self, envelope: dict):
        super().__init__(envelope["error"]["message"])
        self.envelope = envelope


def _call_key(name, arguments) -> str:
    return json.dumps([name, arguments], sort_keys=True, separators=(",", ":"))


def _refusal(status: int, content: bytes) -> dict:
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("ok") is False and isinstance(body.get("error"), dict):
        return body
    code = "forbidden" if status == 403 else "not_found" if status == 404 else "invalid"
    return {"ok": False, "error": {"code": code, "message": f"HTTP {status}: {content[:300].decode('utf-8', 'replace')}"}}


class Transport(Protocol):
    name: str

    def send(self, tool: str, arguments: dict) -> dict: ...

    def close(self) -> None: ...


def _envelope(value: Any, where: str) -> dict:
    if not isinstance(value, dict) or not isinstance(value.get("ok"), bool):
        raise ProtocolMismatch(f"{where}: the answer is not an agentprocess envelope: {str(value)[:300]}")
    return value


class RestTransport:
    """Plain HTTP; one connection pool shared by every thread that calls (httpx2.Client is thread-safe)."""

    name = "rest"

    def __init__(self, url: str, token: str, *, timeout: float = 30.0, pool_size: int = 32,
                 http_transport: httpx2.BaseTransport | None = None):
        self.base = url.rstrip("/")
        limits = httpx2.Limits(max_connections=pool_size, max_keepalive_connections=pool_size)
        self.http = httpx2.Client(headers={"Authorization": f"Bearer {token}"}, timeout=timeout, limits=limits,
                                  transport=http_transport)

    def send(self, tool: str, arguments: dict) -> dict:
        try:
            response = self.http.post(f"{self.base}/api/v1/tools/{tool}", json=arguments)
        except httpx2.TransportError as error:  # connect, read, write, protocol, timeout
            raise TransportFailure(f"{type(error).__name__}: {error}") from error
        try:
            body = response.json()
        except ValueError:
            if response.status_code in TRANSIENT_STATUSES:
                raise TransportFailure(f"HTTP {response.status_code} without an envelope") from None
            raise ProtocolMismatch(f"{tool}: HTTP {response.status_code}, not JSON: {response.text[:300]}") from None
        return _envelope(body, tool)

    def close(self) -> None:
        self.http.close()


class McpTransport:
    """The official MCP SDK client on an event loop of its own (a background thread), so the calls
    stay synchronous for the caller and any number of threads may call at once. The SDK session is
    opened on first use and opened again after a failure (a restarted server, a cut connection)."""

    name = "mcp"

    def __init__(self, url: str, token: str, *, timeout: float = 30.0,
                 http_transport: httpx2.AsyncBaseTransport | None = None, mode: str = "auto"):
        from anyio.from_thread import start_blocking_portal

        self.url = url.rstrip("/") + "/mcp"
        self.token = token
        self.timeout = timeout
        self.mode = mode
        self.http_transport = http_transport
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._lock = threading.Lock()
        self._session: _McpSession | None = None

    def send(self, tool: str, arguments: dict) -> dict:
        try:
            session = self._current()
        except Refused as refused:
            return refused.envelope
        try:
            result = self._portal.call(session.call, tool, arguments)
        except TransportFailure:
            self._drop(session)
            raise
        return _envelope(result, tool)

    def _current(self) -> _McpSession:
        with self._lock:
            if self._session is None:
                self._session = _McpSession(self, self._portal)
            return self._session

    def _drop(self, session: _McpSession) -> None:
        with self._lock:
            if self._session is session:
                self._session = None
        session.close()

    def close(self) -> None:
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()
        self._portal_cm.__exit__(None, None, None)


class _McpSession:
    """One SDK `Client`, entered and left by one task of its own (anyio requires that a context is
    left by the task that entered it); the calls run as other tasks of the same loop."""

    def __init__(self, transport: McpTransport, portal):
        self.transport = transport
        self.portal = portal
        self.client = None
        self._done = None
        self.refusals: dict[str | None, dict] = {}  # by call (None: the session's own requests)
        try:
            self._owner, _ = portal.start_task(self._own)
        except Exception as error:  # the SDK raises many kinds for a server it cannot reach
            if None in self.refusals:
                raise Refused(self.refusals[None]) from error
            raise TransportFailure(f"MCP session: {type(error).__name__}: {error}") from error

    async def _watch(self, response) -> None:
        """Keep what the HTTP layer refused, before the SDK turns it into a bare error."""
        if response.status_code < 400 or response.status_code in TRANSIENT_STATUSES:
            return
        await response.aread()
        try:
            message = json.loads(response.request.content)
        except ValueError:
            message = {}
        params = message.get("params") or {} if isinstance(message, dict) else {}
        key = _call_key(params.get("name"), params.get("arguments") or {}) \
            if message.get("method") == "tools/call" else None
        self.refusals[key] = _refusal(response.status_code, response.content)

    async def _own(self, task_status) -> None:
        import anyio
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        self._done = anyio.Event()
        headers = {"Authorization": f"Bearer {self.transport.token}"}
        extra = {"transport": self.transport.http_transport} if self.transport.http_transport else {}
        try:
            async with httpx2.AsyncClient(headers=headers, timeout=self.transport.timeout,
                                          event_hooks={"response": [self._watch]}, **extra) as http, \
                    Client(streamable_http_client(self.transport.url, http_client=http),
                           mode=self.transport.mode, read_timeout_seconds=self.transport.timeout) as client:
                self.client = client
                task_status.started()
                await self._done.wait()
        finally:
            self.client = None

    async def call(self, tool: str, arguments: dict) -> Any:
        client = self.client
        if client is None:
            raise TransportFailure("the MCP session is closed")
        try:
            result = await client.call_tool(tool, arguments)
        except Exception as error:  # the SDK raises many kinds for a lost server
            refused = self.refusals.pop(_call_key(tool, arguments), None)
            if refused is not None:
                return refused
            raise TransportFailure(f"MCP {tool}: {type(error).__name__}: {error}") from error
        envelope = result.structured_content
        if envelope is None and result.content:  # a server that sends only the JSON text
            try:
                envelope = json.loads(result.content[0].text)
            except (AttributeError, ValueError) as error:
                raise ProtocolMismatch(f"{tool}: the MCP result holds no envelope") from error
        return envelope

    async def _finish(self) -> None:
        if self._done is not None:
            self._done.set()

    def close(self) -> None:
        self.portal.call(self._finish)
        try:
            self._owner.result(timeout=10)
        except BaseException as error:  # noqa: BLE001 - a session that broke is being thrown away
            log.debug("the MCP session ended with %s: %s", type(error).__name__, error)
