"""REST: POST /api/v1/tools/<tool> with the tool's arguments as the JSON body (DESIGN.md).

A thin transport: authenticate, parse JSON, call the shared tool layer, map the envelope's
error code to the HTTP status. A DRF view so drf-spectacular can describe it; the per-tool
request and response schemas come from the spec's JSON Schemas (api.openapi).
"""

import json

from django.http import JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from api.tools import call_tool
from kernel.errors import HTTP_STATUS

from .auth import UNAUTHENTICATED, authenticate, www_authenticate

NOT_JSON = {"ok": False, "error": {"code": "invalid", "message": "the body is not JSON",
                                   "issues": ["body: not valid JSON"]}}


def respond(authorization: str | None, tool: str, body: bytes) -> tuple[int, dict, dict[str, str]]:
    """The whole REST rule set, for both ways in (the ASGI route and the Django view):
    (HTTP status, envelope, extra headers)."""
    identity = authenticate(authorization)
    if identity is None:
        challenge = www_authenticate("invalid_token" if authorization else None, resource_path="/api/v1")
        return 401, UNAUTHENTICATED, {"WWW-Authenticate": challenge}
    try:
        arguments = json.loads(body or b"{}")
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

    @extend_schema(exclude=True)  # described per tool by api.openapi.expand_tool_paths
    def post(self, request, tool: str):
        status, envelope, headers = respond(request.headers.get("Authorization"), tool, request._request.body)
        response = JsonResponse(envelope, status=status, json_dumps_params={"ensure_ascii": False})
        for name, value in headers.items():
            response[name] = value
        return response
