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
from kernel.oauth import REST_RESOURCE_PATH

from .auth import RETRY_AFTER, UNAVAILABLE, CredentialsUnavailable, authenticate, unauthenticated

NOT_JSON = {"ok": False, "error": {"code": "invalid", "message": "the body is not JSON",
                                   "issues": ["body: not valid JSON"]}}
TOO_DEEP = {"ok": False, "error": {"code": "invalid", "message": "the arguments are nested too deeply",
                                   "issues": [f"body: nested deeper than {MAX_DEPTH} levels"]}}
NOT_POST = {"ok": False, "error": {"code": "invalid", "message": "tools are called with POST",
                                   "issues": ["method: only POST is allowed"]}}
NOT_JSON_TYPE = {"ok": False, "error": {"code": "invalid", "message": "the arguments are sent as JSON",
                                        "issues": ["Content-Type: not JSON; send application/json"]}}
NO_TYPE = {"ok": False, "error": {"code": "invalid", "message": "the arguments are sent as JSON",
                                  "issues": ["Content-Type: missing; send application/json"]}}


Answer = tuple[int, dict, dict[str, str]]  # (HTTP status, envelope, extra headers)


def envelope_bytes(envelope: dict) -> bytes:
    """UTF-8 JSON; with \\u escapes when some text holds what UTF-8 cannot carry (a lone surrogate
    in data stored before such text was refused), so an answer is always sent."""
    try:
        return jsonio.dumps(envelope, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return jsonio.dumps(envelope).encode()


def respond(authorization: str | None, content_type: str | None, tool: str, body: bytes) -> Answer:
    """The whole REST rule set, for both ways in (the ASGI route and the Django view)."""
    identity, refusal = authenticated(authorization)
    return refusal if refusal is not None else answer(identity, content_type, tool, body)


def authenticated(authorization: str | None) -> tuple[Identity | None, Answer | None]:
    """(identity, None), or (None, the answer that refuses the call): 401 for no or an unknown
    credential, a retry envelope (503) when credentials cannot be looked up."""
    try:
        identity = authenticate(authorization)
    except CredentialsUnavailable:
        return None, (HTTP_STATUS["retry"], UNAVAILABLE, RETRY_AFTER)
    if identity is None:
        return None, (401, *unauthenticated(authorization, REST_RESOURCE_PATH))
    return identity, None


def body_type_refusal(content_type: str | None, body: bytes) -> dict | None:
    """The arguments come as JSON: `application/json` (any parameters, a charset say) or a
    `+json` type. No Content-Type is fine only without a body: a tool whose arguments are all
    optional (describe, list_processes, get_work, list_runs) may be called with nothing at all."""
    if content_type == "application/json":  # nearly every call: one comparison
        return None
    if content_type is None or not content_type.strip():
        return NO_TYPE if body else None
    media = content_type.partition(";")[0].strip().lower()
    if media == "application/json" or (media.startswith("application/") and media.endswith("+json")):
        return None
    return NOT_JSON_TYPE


def answer(identity: Identity, content_type: str | None, tool: str, body: bytes) -> Answer:
    refusal = body_type_refusal(content_type, body)
    if refusal is not None:
        return HTTP_STATUS["invalid"], refusal, {}
    try:
        arguments = jsonio.loads(body or b"{}")  # numbers exactly as sent (spec §2.3)
    except RecursionError:
        return HTTP_STATUS["invalid"], TOO_DEEP, {}
    except (ValueError, UnicodeDecodeError):
        return HTTP_STATUS["invalid"], NOT_JSON, {}
    envelope = call_tool(identity, tool, arguments, transport="rest")
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
        status, envelope, headers = respond(request.headers.get("Authorization"), request.META.get("CONTENT_TYPE"),
                                            tool, request._request.body)
        response = HttpResponse(envelope_bytes(envelope), status=status, content_type="application/json")
        for name, value in headers.items():
            response[name] = value
        return response
