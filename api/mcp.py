"""MCP: every offered tool over Streamable HTTP at /mcp (DESIGN.md "The outside").

A thin transport around the shared tool layer, built on the MCP SDK's low-level server so the
spec's argument schemas are published as they are and bad arguments reach `call_tool`, which
answers them with the spec's `invalid` envelope (MCPServer would refuse them first, as text).

Stateless with JSON responses: every POST stands alone, so any worker of any process can
answer it. Each HTTP request is authenticated here, before the SDK sees it; the identity
travels to the tool handler in the ASGI scope (the SDK hands handlers the Starlette request),
never in arguments.

The agents' hot request, a well-formed 2026-07-28 `tools/call`, is answered directly
(`direct_tool_call`): the SDK's own checks run on it (transport security, Accept, routing headers,
the protocol ladder, Mcp-Param headers), then the tool, and the JSON-RPC reply the SDK would write.
What it skips is the SDK's per-request dispatch (runner, middleware, pydantic models of the request
and result), which cost more CPU than the tool call (bench/throughput.py, MCP vs REST). Anything
else, or MCP_DIRECT_TOOL_CALLS off, goes to the SDK with the body replayed;
tests/test_mcp.py checks both answer the same.
"""

from functools import cache
from urllib.parse import urlsplit

import mcp_types as types
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.inbound import (
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from api import tools
from kernel import jsonio, origin
from kernel.capabilities import PROTOCOL, VERSION, offered_tools
from kernel.identity import Identity
from kernel.oauth import MCP_RESOURCE_PATH

from .auth import NO_CREDENTIAL, RETRY_AFTER, UNAVAILABLE, CredentialsUnavailable, authenticate, unauthenticated
from .hosts import UNKNOWN_HOST, host_allowed
from .threads import run_sync

MCP_PATH = MCP_RESOURCE_PATH
IDENTITY_SCOPE_KEY = "kernel.identity"

INSTRUCTIONS = (
    "agentprocess process server (core-2). Call describe first. Agents: get_work lists ready steps, each "
    "with the exact claim call; claim, do the work, then submit output and evidence with the token (renew "
    "a long lease, escalate when unsure). People: get_work lists work items, each with the exact decide "
    "call. Every result is {ok, data} or {ok: false, error: {code, message, issues}}; send a fresh "
    "requestId with every write and reuse it only to retry the same call."
)

# The envelope every tool returns (spec §4); `data` is the tool's result shape from tools.md.
# Kept free of $ref so clients can validate structuredContent against it as it stands.
ENVELOPE_SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "data": {"type": "object"},
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string",
                         "enum": ["invalid", "not_accepted", "stale", "conflict", "forbidden", "not_found", "retry"]},
                "message": {"type": "string"},
                "issues": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["code", "message"],
        },
    },
    "required": ["ok"],
    "oneOf": [
        {"properties": {"ok": {"const": True}}, "required": ["data"]},
        {"properties": {"ok": {"const": False}}, "required": ["error"]},
    ],
}


@cache
def input_schema(name: str) -> dict:
    """The spec's argument schema, without `$schema`/`$id`: MCP implies draft 2020-12, and a remote
    `$id` only confuses clients that turn input schemas into model function declarations."""
    schema = dict(tools.TOOLS[name].arguments_schema)
    schema.pop("$schema", None)
    schema.pop("$id", None)
    return schema


def tool_input_schema(name: str) -> dict | None:
    return input_schema(name) if name in tools.TOOLS and name in offered_tools() else None


async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[
        types.Tool(name=name, description=tools.TOOLS[name].description, input_schema=input_schema(name),
                   output_schema=ENVELOPE_SCHEMA)
        for name in offered_tools()
    ])


def tool_result(envelope: dict) -> dict:
    """A CallToolResult as JSON: the envelope as structuredContent and as text."""
    return {"content": [{"type": "text", "text": jsonio.dumps(envelope, ensure_ascii=False)}],
            "structuredContent": envelope, "isError": not envelope["ok"]}


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    # ctx.request is the Starlette request of this HTTP POST, on both protocol eras.
    identity: Identity | None = ctx.request.scope.get(IDENTITY_SCOPE_KEY) if ctx.request is not None else None
    if identity is None:  # unreachable over HTTP (McpEndpoint answers 401 first); refuse rather than guess
        envelope = NO_CREDENTIAL
    else:
        # On a tool thread with its own DB connection, framed like a request (api.threads).
        envelope = await run_sync(origin.within, origin.of_scope(ctx.request.scope), _call_over_mcp, identity,
                                  params.name, params.arguments or {})
    # The SDK's result model cannot carry an exact number: its structured content gets the nearest
    # double, the JSON text beside it keeps every digit (kernel/jsonio.py).
    result = tool_result(envelope)
    result["structuredContent"] = jsonio.plain(result["structuredContent"])
    return types.CallToolResult.model_validate(result)


def build_server() -> Server:
    return Server(
        PROTOCOL,
        version=VERSION,
        title="agentprocess process server",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        # The 2026-07-28 path checks Mcp-Param-* headers against the input schema; without this
        # it would run tools/list once more for every tools/call to find it.
        get_tool_input_schema=tool_input_schema,
    )


def transport_security() -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection from ALLOWED_HOSTS (`*`: no Host/Origin restriction),
    behind McpEndpoint's own Host check (api/hosts.py, Django's rule).

    Only ALLOWED_HOSTS: loopback is among them when the server is embedded, and not on a
    deployment, as for pages and REST. The SDK matches exact hosts, optionally with any port
    (`host:*`); a Django subdomain pattern `.example.com` allows `example.com` only, so list
    subdomains that serve /mcp explicitly.
    """
    if "*" in settings.ALLOWED_HOSTS:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = list(dict.fromkeys(host.lstrip(".") for host in settings.ALLOWED_HOSTS if host))
    public = urlsplit(settings.PUBLIC_BASE_URL)
    origins = [f"{scheme}://{host}{port}" for host in hosts for scheme in ("http", "https") for port in ("", ":*")]
    origins += [f"{public.scheme}://{public.netloc}", *settings.CSRF_TRUSTED_ORIGINS]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[entry for host in hosts for entry in (host, f"{host}:*")],
        allowed_origins=list(dict.fromkeys(origins)),
    )


def _call_over_mcp(identity: Identity, name: str, arguments: dict) -> dict:
    return tools.call_tool(identity, name, arguments, transport="mcp")


def _authenticated_call(authorization: str | None, name: str, arguments: dict) -> dict | None:
    """On a tool thread: authenticate, then run the tool; None when the credential is refused."""
    identity = authenticate(authorization)
    return None if identity is None else _call_over_mcp(identity, name, arguments)


async def _read_body(receive, limit: int) -> tuple[list[bytes] | None, bool]:
    """The body's chunks as read, and whether that is all of it within `limit` (a larger body goes
    to the SDK, which refuses it). None for the chunks when the client went away."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None, False
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > limit:
            return chunks, False
        if not message.get("more_body"):
            return chunks, True


def _replayed(chunks: list[bytes], receive, complete: bool):
    """A receive channel giving the chunks already read again, then the rest of the client's."""
    pending = list(chunks)

    async def replay():
        if pending:
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending) or not complete}
        return await receive()

    return replay


def _plain_tool_call(body: bytes) -> tuple | None:
    """(decoded, id, name, arguments) of a body holding exactly one tools/call request, else None."""
    try:
        decoded = jsonio.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(decoded, dict) or set(decoded) != {"jsonrpc", "id", "method", "params"}:
        return None
    request_id, params = decoded["id"], decoded["params"]
    if decoded["jsonrpc"] != "2.0" or decoded["method"] != "tools/call" or isinstance(request_id, bool) \
            or not isinstance(request_id, int | str) or not isinstance(params, dict):
        return None
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
        return None
    return decoded, request_id, name, arguments or {}


class McpEndpoint:
    """ASGI app for /mcp: bearer authentication, POST only, then the SDK's Streamable HTTP transport
    (or, for a plain modern tools/call, the direct answer described in the module docstring)."""

    def __init__(self, sessions: StreamableHTTPSessionManager):
        self.sessions = sessions
        self.security = TransportSecurityMiddleware(sessions.security_settings)

    async def __call__(self, scope, receive, send) -> None:
        if not host_allowed(scope):  # before anything else, as on the REST route and the pages
            return await JSONResponse(UNKNOWN_HOST, status_code=400)(scope, receive, send)
        headers = dict(scope["headers"])
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if (scope["method"] == "POST" and headers.get(b"mcp-method") == b"tools/call" and version
                and version not in HANDSHAKE_PROTOCOL_VERSIONS and settings.MCP_DIRECT_TOOL_CALLS):
            chunks, complete = await _read_body(receive, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
            if chunks is None:
                return  # the client went away
            if complete and await self.direct_tool_call(scope, send, authorization, b"".join(chunks)):
                return
            receive = _replayed(chunks, receive, complete)
        try:
            identity = await run_sync(authenticate, authorization)
        except CredentialsUnavailable:
            return await self.unavailable(scope, receive, send)
        if identity is None:
            return await self.unauthenticated(scope, receive, send, authorization)
        if scope["method"] != "POST":
            # Stateless JSON mode has no server-initiated messages, so no GET stream (the SDK would
            # hold one open forever); 405 is how Streamable HTTP says so.
            return await Response(status_code=405, headers={"Allow": "POST"})(scope, receive, send)
        scope[IDENTITY_SCOPE_KEY] = identity
        await self.sessions.handle_request(scope, receive, send)

    @staticmethod
    async def unavailable(scope, receive, send) -> None:
        await JSONResponse(UNAVAILABLE, status_code=503, headers=RETRY_AFTER)(scope, receive, send)

    @staticmethod
    async def unauthenticated(scope, receive, send, authorization: str | None) -> None:
        envelope, headers = unauthenticated(authorization, MCP_RESOURCE_PATH)
        await JSONResponse(envelope, status_code=401, headers=headers)(scope, receive, send)

    async def direct_tool_call(self, scope, send, authorization: str | None, body: bytes) -> bool:
        """Answer a plain tools/call as the SDK would, after the SDK's own checks. False: the SDK
        answers instead (anything unusual, including every refusal of those checks)."""
        request = Request(scope)
        if await self.security.validate_request(request, is_post=True) is not None:
            return False
        if not check_accept_headers(request)[0]:
            return False
        call = _plain_tool_call(body)
        if call is None:
            return False
        decoded, request_id, name, arguments = call
        if find_duplicated_routing_header(request.headers.items()) is not None:
            return False
        if not isinstance(classify_inbound_request(decoded, headers=dict(request.headers)), InboundModernRoute):
            return False  # the protocol ladder passed: a supported 2026-era version
        schema = tool_input_schema(name)
        if schema is not None and validate_mcp_param_headers(schema, arguments, request.headers) is not None:
            return False
        try:
            envelope = await run_sync(origin.within, origin.of_scope(scope), _authenticated_call, authorization, name,
                                      arguments)
        except CredentialsUnavailable:
            await self.unavailable(scope, None, send)
            return True
        if envelope is None:
            await self.unauthenticated(scope, None, send, authorization)
            return True
        # A 2026-era result says it is complete and carries the server's identity stamp, as the
        # SDK's runner writes them (the equivalence test compares the two answers).
        result = {**tool_result(envelope), "resultType": "complete",
                  "_meta": {types.SERVER_INFO_META_KEY: self.sessions.app.server_info_stamp}}
        reply = {"jsonrpc": "2.0", "id": request_id, "result": result}
        await Response(jsonio.dumps(reply, separators=(",", ":")), media_type="application/json")(scope, None, send)
        return True


def build_mcp_app() -> Starlette:
    """A fresh MCP ASGI app: the SDK's session manager runs once per instance, in the app's lifespan."""
    sessions = StreamableHTTPSessionManager(
        app=build_server(),
        stateless=True,
        json_response=True,
        security_settings=transport_security(),
        # An upload of MAX_UPLOAD_BYTES travels base64-encoded inside the JSON-RPC body.
        max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    )
    endpoint = McpEndpoint(sessions)
    return Starlette(
        routes=[Route(MCP_PATH, endpoint=endpoint)],
        lifespan=lambda app: sessions.run(),
    )
