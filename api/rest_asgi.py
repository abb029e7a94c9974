"""The REST route under uvicorn: POST /api/v1/tools/<tool> answered straight from ASGI.

Same rules as the Django view (api.rest.respond); what it skips is Django's ASGI
request machinery, which measured at more CPU than the tool call itself (bench/, issue 8).
Anything but a POST to a tool path goes on to Django.
"""

import json
import re

from django.conf import settings

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


async def rest_tool_app(scope, receive, send, tool: str) -> None:
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
    authorization = next((value.decode("latin-1") for name, value in scope["headers"]
                          if name == b"authorization"), None)
    status, envelope, headers = await run_sync(respond, authorization, tool, b"".join(chunks))
    await send_json(send, status, envelope, headers)
