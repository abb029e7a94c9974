"""Test actors: an identity plus its bearer token, calling tools in process or over REST."""

import uuid
from dataclasses import dataclass

from agentprocess.identity import Identity, identity_from_bearer
from agentprocess.tools import call_tool

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
