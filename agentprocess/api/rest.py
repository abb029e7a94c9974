"""REST: POST /api/v1/tools/<tool> with the tool's arguments as the JSON body (DESIGN.md).

A thin transport: authenticate, parse JSON, call the shared tool layer, map the envelope's
error code to the HTTP status. A DRF view so drf-spectacular can describe it; the per-tool
request and response schemas come from the spec's JSON Schemas (agentprocess.api.openapi).
"""

import json

from django.http import JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from agentprocess.errors import HTTP_STATUS
from agentprocess.tools import call_tool

from .auth import UNAUTHENTICATED, authenticate, www_authenticate


def _response(envelope: dict) -> JsonResponse:
    status = 200 if envelope["ok"] else HTTP_STATUS[envelope["error"]["code"]]
    return JsonResponse(envelope, status=status, json_dumps_params={"ensure_ascii": False})


def unauthenticated(request) -> JsonResponse:
    response = JsonResponse(UNAUTHENTICATED, status=401)
    response["WWW-Authenticate"] = www_authenticate("invalid_token" if "Authorization" in request.headers else None,
                                                    resource_path="/api/v1")  # its RFC 9728 document
    return response


class ToolView(APIView):
    # Bearer tokens only: no session cookie is read, so there is nothing for CSRF to protect.
    authentication_classes = []
    permission_classes = []
    parser_classes = []

    @extend_schema(exclude=True)  # described per tool by agentprocess.api.openapi.expand_tool_paths
    def post(self, request, tool: str):
        identity = authenticate(request.headers.get("Authorization"))
        if identity is None:
            return unauthenticated(request)
        try:
            arguments = json.loads(request._request.body or b"{}")
        except (ValueError, UnicodeDecodeError):
            return _response({"ok": False, "error": {"code": "invalid", "message": "the body is not JSON",
                                                     "issues": ["body: not valid JSON"]}})
        return _response(call_tool(identity, tool, arguments))
