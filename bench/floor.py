"""The stack's floor (bench/limits.py), served exactly like the REST tools: the application's ASGI
app, with two more routes answered by the same ASGI route machinery (api.rest_asgi:
body read, one hop to a tool thread, JSON out).

- POST /bench/floor: authenticated like every tool (the same bearer look-up, one indexed read of the
  token), then, in one transaction, one indexed read and one write: look up (organization,
  requestId) in the idempotency table through its unique index and insert a record.
- POST /bench/noop: no authentication, no database: uvicorn + the ASGI route + the thread hop alone.
"""

import json
import uuid

from agentprocess.asgi import application as project_application  # first: it sets Django up

from django.db import transaction  # noqa: E402

from kernel import clock, sql  # noqa: E402
from api.auth import NO_CREDENTIAL, authenticate  # noqa: E402
from api.rest_asgi import send_json  # noqa: E402
from api.threads import run_sync  # noqa: E402
from runs.models import IdempotencyRecord  # noqa: E402


def floor(authorization: str | None, body: bytes) -> tuple[int, dict]:
    identity = authenticate(authorization)
    if identity is None:
        return 401, NO_CREDENTIAL
    request_id = str(json.loads(body or b"{}").get("requestId") or uuid.uuid4())
    with transaction.atomic():
        found = sql.select(IdempotencyRecord, "organization_id = %s AND request_id = %s",
                           [identity.organization.id, request_id])
        if not found:
            sql.insert_row(IdempotencyRecord, {
                "organization": identity.organization.id, "request_id": request_id, "tool": "floor",
                "caller": identity.ref, "arguments_hash": "-", "result": {"ok": True}, "created_at": clock.now()})
    return 200, {"ok": True, "data": {"replayed": bool(found)}}


def noop(authorization: str | None, body: bytes) -> tuple[int, dict]:
    return 200, {"ok": True, "data": {}}


ROUTES = {"/bench/floor": floor, "/bench/noop": noop}


async def application(scope, receive, send):
    handler = ROUTES.get(scope.get("path")) if scope["type"] == "http" and scope.get("method") == "POST" else None
    if handler is None:
        return await project_application(scope, receive, send)
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    authorization = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), None)
    status, envelope = await run_sync(handler, authorization, body)
    await send_json(send, status, envelope, {})
