"""The REST route under uvicorn: POST /api/v1/tools/<tool> answered straight from ASGI.

Same rules as the Django view (api.rest.respond); what it skips is Django's ASGI
request machinery, which measured at more CPU than the tool call itself (bench/, issue 8).
Anything but a POST to a tool path goes on to Django.
"""

import json
import re

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from .rest import respond
from .threads import run_sync

TOOL_PATH = re.compile(r"^/api/v1/tools/([A-Za-z0-9_]+)$")


def tool_of(scope) -> str | None:
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    match = TOOL_PATH.match(scope["path"])
    return match.group(1) if match else None


async def send_json(send, status: int, envelope: dict, headers: dict[str, str]) -> None:
    body = json.dumps(envelope, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in headers.items())]})
    await send({"type": "http.response.body", "body": body})


TOO_LARGE = {"ok": False, "error": {"code": "invalid", "message": "the request body is too large",
                                    "issues": ["body: larger than the server accepts"]}}
UNKNOWN_HOST = {"ok": False, "error": {"code": "invalid", "message": "this server does not answer to that host name",
                                       "issues": ["Host: not one of this server's ALLOWED_HOSTS"]}}


def _header(scope, name: bytes) -> str | None:
    return next((value.decode("latin-1") for key, value in scope["headers"] if key == name), None)


def host_allowed(scope) -> bool:
    """Django's own Host check (ALLOWED_HOSTS), which this route would otherwise skip."""
    domain, _port = split_domain_port(_header(scope, b"host") or "")
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


async def rest_tool_app(scope, receive, send, tool: str) -> None:
    if not host_allowed(scope):
        await send_json(send, 400, UNKNOWN_HOST, {})
        return
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            await send_json(send, 413, TOO_LARGE, {})
            return
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    authorization = _header(scope, b"authorization")
    status, envelope, headers = await run_sync(respond, authorization, tool, b"".join(chunks))
    await send_json(send, status, envelope, headers)
