"""The REST route under uvicorn: POST /api/v1/tools/<tool> answered straight from ASGI.

Same rules as the Django view (api.rest.respond); what it skips is Django's ASGI
request machinery, which measured at more CPU than the tool call itself (bench/, issue 8).
Anything but a POST to a tool path goes on to Django.
"""

import asyncio
import re

from django.conf import settings

from kernel import origin

from .hosts import UNKNOWN_HOST, host_allowed
from .rest import answer, authenticated, envelope_bytes, respond
from .threads import run_sync

TOOL_PATH = re.compile(r"^/api/v1/tools/([A-Za-z0-9_]+)$")


def tool_of(scope) -> str | None:
    if scope["type"] != "http" or scope["method"] != "POST":
        return None
    match = TOOL_PATH.match(scope["path"])
    return match.group(1) if match else None


async def send_json(send, status: int, envelope: dict, headers: dict[str, str]) -> None:
    body = envelope_bytes(envelope)
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in headers.items())]})
    await send({"type": "http.response.body", "body": body})


TOO_LARGE = {"ok": False, "error": {"code": "invalid", "message": "the request body is too large",
                                    "issues": ["body: larger than the server accepts"]}}


def _call_headers(scope) -> tuple[str | None, str | None]:
    """Authorization and Content-Type, in one pass over the headers."""
    authorization = content_type = None
    for key, value in scope["headers"]:
        if key == b"authorization":
            authorization = value.decode("latin-1")
        elif key == b"content-type":
            content_type = value.decode("latin-1")
    return authorization, content_type


# How many large bodies (more than one read) this worker buffers at once; the rest wait their turn,
# so memory stays bounded by about BODY_BUFFERS x DATA_UPLOAD_MAX_MEMORY_SIZE.
_buffers: asyncio.Semaphore | None = None


def _body_buffers() -> asyncio.Semaphore:
    global _buffers
    if _buffers is None:
        _buffers = asyncio.Semaphore(settings.REST_BODY_BUFFERS)
    return _buffers


async def rest_tool_app(scope, receive, send, tool: str) -> None:
    """Host first; then, for a body that does not come in one read, the credential before any more
    of it is read (an unauthenticated upload of any size costs one read), and the rest within the
    limit and the worker's bound on bodies buffered at once. A body in one read (every ordinary
    call) is answered in one thread hop."""
    if not host_allowed(scope):
        await send_json(send, 400, UNKNOWN_HOST, {})
        return
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    authorization, content_type = _call_headers(scope)
    first = await receive()
    if first["type"] == "http.disconnect":
        return
    if not first.get("more_body"):
        status, envelope, headers = await run_sync(origin.within, origin.of_scope(scope), respond, authorization,
                                                   content_type, tool, first.get("body", b""))
        await send_json(send, status, envelope, headers)
        return
    identity, refusal = await run_sync(authenticated, authorization)
    if refusal is not None:
        await send_json(send, *refusal)
        return
    async with _body_buffers():
        body = await _rest_of_body(receive, first.get("body", b""), limit)
        if body is None:
            await send_json(send, 413, TOO_LARGE, {})
            return
    status, envelope, headers = await run_sync(origin.within, origin.of_scope(scope), answer, identity, content_type,
                                               tool, body)
    await send_json(send, status, envelope, headers)


async def _rest_of_body(receive, first: bytes, limit: int) -> bytes | None:
    """The whole body, or None past `limit` (or when the client went away)."""
    chunks, size = [first], len(first)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)
