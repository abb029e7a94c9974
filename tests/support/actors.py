"""Test actors: an identity plus its bearer token, calling tools in process or over REST."""

import json
import uuid
from dataclasses import dataclass

from kernel.identity import Identity, identity_from_bearer
from api.tools import call_tool

from .envelopes import check_envelope


@dataclass
class Actor:
    token: str
    name: str

    @property
    def identity(self) -> Identity:
        # Resolved per call, like a request: group changes and revocations take effect at once.
        return identity_from_bearer(self.token)

    def call(self, tool: str, **arguments) -> dict:
        """Call a tool through the shared tool layer; the envelope is schema-checked."""
        if tool in WRITES and "requestId" not in arguments:
            arguments["requestId"] = str(uuid.uuid4())
        envelope = call_tool(self.identity, tool, arguments)
        check_envelope(tool, envelope)
        return envelope

    def ok(self, tool: str, **arguments) -> dict:
        envelope = self.call(tool, **arguments)
        assert envelope["ok"], envelope
        return envelope["data"]

    def error(self, tool: str, **arguments) -> dict:
        envelope = self.call(tool, **arguments)
        assert not envelope["ok"], envelope
        return envelope["error"]


WRITES = {"start_run", "claim", "renew", "upload", "submit", "escalate", "decide", "cancel", "send_event"}


def rest_call(client, token: str | None, tool: str, body=None, *, raw: bytes | None = None):
    """POST /api/v1/tools/<tool> with the Django test client; returns (status, envelope), schema-checked."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = raw if raw is not None else json.dumps(body if body is not None else {})
    response = client.post(f"/api/v1/tools/{tool}", data=data, content_type="application/json", **headers)
    envelope = response.json()
    check_envelope(tool, envelope)
    return response.status_code, envelope, response
