"""MCP: every offered tool over Streamable HTTP at /mcp (DESIGN.md "The outside").

A thin transport around the shared tool layer, built on the MCP SDK's low-level server so the
spec's argument schemas are published as they are and bad arguments reach `call_tool`, which
answers them with the spec's `invalid` envelope (MCPServer would refuse them first, as text).

Stateless with JSON responses: every POST stands alone, so any worker of any process can
answer it. Each HTTP request is authenticated here, before the SDK sees it; the identity
travels to the tool handler in the ASGI scope (the SDK hands handlers the Starlette request),
never in arguments.
"""

import json
from functools import cache
from urllib.parse import urlsplit

import mcp_types as types
from django.conf import settings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentprocess import tools
from agentprocess.capabilities import PROTOCOL, VERSION, offered_tools
from agentprocess.identity import Identity

from .auth import UNAUTHENTICATED, authenticate, www_authenticate
from .threads import run_sync

MCP_PATH = "/mcp"
IDENTITY_SCOPE_KEY = "agentprocess.identity"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")

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


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    # ctx.request is the Starlette request of this HTTP POST, on both protocol eras.
    identity: Identity | None = ctx.request.scope.get(IDENTITY_SCOPE_KEY) if ctx.request is not None else None
    if identity is None:  # unreachable over HTTP (McpEndpoint answers 401 first); refuse rather than guess
        envelope = UNAUTHENTICATED
    else:
        # On a tool thread with its own DB connection, framed like a request (agentprocess.api.threads).
        envelope = await run_sync(tools.call_tool, identity, params.name, params.arguments or {})
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(envelope, ensure_ascii=False))],
        structured_content=envelope,
        is_error=not envelope["ok"],
    )


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
    """DNS-rebinding protection from ALLOWED_HOSTS (`*`: no Host/Origin restriction).

    Loopback and the host of PUBLIC_BASE_URL are always allowed. The SDK matches exact hosts,
    optionally with any port (`host:*`); a Django subdomain pattern `.example.com` allows
    `example.com` only, so list subdomains that serve /mcp explicitly.
    """
    if "*" in settings.ALLOWED_HOSTS:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = [host.lstrip(".") for host in settings.ALLOWED_HOSTS if host]
    hosts += [urlsplit(settings.PUBLIC_BASE_URL).hostname or "", *LOOPBACK_HOSTS]
    hosts = list(dict.fromkeys(host for host in hosts if host))
    public = urlsplit(settings.PUBLIC_BASE_URL)
    origins = [f"{scheme}://{host}{port}" for host in hosts for scheme in ("http", "https") for port in ("", ":*")]
    origins += [f"{public.scheme}://{public.netloc}", *settings.CSRF_TRUSTED_ORIGINS]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[entry for host in hosts for entry in (host, f"{host}:*")],
        allowed_origins=list(dict.fromkeys(origins)),
    )


class McpEndpoint:
    """ASGI app for /mcp: bearer authentication, POST only, then the SDK's Streamable HTTP transport."""

    def __init__(self, sessions: StreamableHTTPSessionManager):
        self.sessions = sessions

    async def __call__(self, scope, receive, send) -> None:
        headers = dict(scope["headers"])
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        identity = await run_sync(authenticate, authorization)
        if identity is None:
            challenge = www_authenticate("invalid_token" if authorization else None)
            response = JSONResponse(UNAUTHENTICATED, status_code=401, headers={"WWW-Authenticate": challenge})
            return await response(scope, receive, send)
        if scope["method"] != "POST":
            # Stateless JSON mode has no server-initiated messages, so no GET stream (the SDK would
            # hold one open forever); 405 is how Streamable HTTP says so.
            return await Response(status_code=405, headers={"Allow": "POST"})(scope, receive, send)
        scope[IDENTITY_SCOPE_KEY] = identity
        await self.sessions.handle_request(scope, receive, send)


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
