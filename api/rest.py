"""REST: POST /api/v1/tools/<tool> with the tool's arguments as the JSON body (DESIGN.md).

A thin transport: authenticate, parse JSON, call the shared tool layer, map the envelope's
error code to the HTTP status. A DRF view so drf-spectacular can describe it; the per-tool
request and response schemas come from the spec's JSON Schemas (api.openapi).
"""


from django.http import HttpResponse, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from api.tools import call_tool
from api.tools.registry import MAX_DEPTH
from kernel import jsonio
from kernel.errors import HTTP_STATUS
from kernel.identity import Identity

from .auth import RETRY_AFTER, UNAUTHENTICATED, UNAVAILABLE, CredentialsUnavailable, authenticate, www_authenticate

NOT_JSON = {"ok": False, "error": {"code": "invalid", "message": "the body is not JSON",
                                   "issues": ["body: not valid JSON"]}}
TOO_DEEP = {"ok": False, "error": {"code": "invalid", "message": "the arguments are nested too deeply",
                                   "issues": [f"body: nested deeper than {MAX_DEPTH} levels"]}}
NOT_POST = {"ok": False, "error": {"code": "invalid", "message": "tools are called with POST",
                                   "issues": ["method: only POST is allowed"]}}


Answer = tuple[int, dict, dict[str, str]]  # (HTTP status, envelope, extra headers)


def envelope_bytes(envelope: dict) -> bytes:
    """UTF-8 JSON; with \\u escapes when some text holds what UTF-8 cannot carry (a lone surrogate
    in data stored before such text was refused), so an answer is always sent."""
    try:
        return jsonio.dumps(envelope, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return jsonio.dumps(envelope).encode()


def respond(authorization: str | None, tool: str, body: bytes) -> Answer:
    """The whole REST rule set, for both ways in (the ASGI route and the Django view)."""
    identity, refusal = authenticated(authorization)
    return refusal if refusal is not None else answer(identity, tool, body)


def authenticated(authorization: str | None) -> tuple[Identity | None, Answer | None]:
    """(identity, None), or (None, the answer that refuses the call): 401 for no or an unknown
    credential, a retry envelope (503) when credentials cannot be looked up."""
    try:
        identity = authenticate(authorization)
    except CredentialsUnavailable:
        return None, (HTTP_STATUS["retry"], UNAVAILABLE, RETRY_AFTER)
    if identity is None:
        challenge = www_authenticate("invalid_token" if authorization else None, resource_path="/api/v1")
        return None, (401, UNAUTHENTICATED, {"WWW-Authenticate": challenge})
    return identity, None


def answer(identity: Identity, tool: str, body: bytes) -> Answer:
    try:
        arguments = jsonio.loads(body or b"{}")  # numbers exactly as sent (spec §2.3)
    except RecursionError:
        return HTTP_STATUS["invalid"], TOO_DEEP, {}
    except (ValueError, UnicodeDecodeError):
        return HTTP_STATUS["invalid"], NOT_JSON, {}
    envelope = call_tool(identity, tool, arguments)
    return (200 if envelope["ok"] else HTTP_STATUS[envelope["error"]["code"]]), envelope, {}


class ToolView(APIView):
    """The Django way in: the test client, WSGI servers, and the OpenAPI schema (drf-spectacular).
    Under uvicorn the ASGI route in agentprocess.asgi answers first, with the same `respond`."""

    # Bearer tokens only: no session cookie is read, so there is nothing for CSRF to protect.
    authentication_classes = []
    permission_classes = []
    parser_classes = []

    @property
    def allowed_methods(self):
        return ["POST"]

    def http_method_not_allowed(self, request, *args, **kwargs):
        response = JsonResponse(NOT_POST, status=405)
        response["Allow"] = "POST"
        return response

    def options(self, request, *args, **kwargs):
        return self.http_method_not_allowed(request, *args, **kwargs)

    @extend_schema(exclude=True)  # described per tool by api.openapi.expand_tool_paths
    def post(self, request, tool: str):
        status, envelope, headers = respond(request.headers.get("Authorization"), tool, request._request.body)
        response = HttpResponse(envelope_bytes(envelope), status=status, content_type="application/json")
        for name, value in headers.items():
            response[name] = value
        return response
