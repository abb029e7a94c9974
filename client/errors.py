"""Typed exceptions: one per error code of the protocol (spec §4.3, tools.md), plus the client's own
for a server that could not be reached.

`ToolError` carries the envelope's `code`, `message` and `issues`. A `conflict` also says which
conflict through its subclass (`RunEnded`, `AlreadyDecided`, `ClaimedByOther`, `ClaimedByYou`,
`NotReady`) and its `issue`; a conflict whose issue this client does not know is a plain `Conflict`.
"""

from __future__ import annotations


class ClientError(Exception):
    """Everything this package raises about a call."""


class ToolError(ClientError):
    """The server answered `{"ok": false, "error": {...}}`."""

    code = ""

    def __init__(self, message: str, issues: list[str] | None = None, *, tool: str | None = None,
                 request_id: str | None = None):
        super().__init__(message)
        self.message = message
        self.issues = list(issues or [])
        self.tool = tool
        self.request_id = request_id

    def __str__(self) -> str:
        issues = f" ({'; '.join(self.issues)})" if self.issues else ""
        where = f"{self.tool}: " if self.tool else ""
        return f"{where}{self.code}: {self.message}{issues}"


class Invalid(ToolError):
    """Bad arguments: fix the call (also: no, a malformed or an unknown credential, HTTP 401)."""

    code = "invalid"


class NotAccepted(ToolError):
    """The submission broke a rule; `issues` lists each one. Nothing changed and the claim stands."""

    code = "not_accepted"


class Stale(ToolError):
    """The token, claim or snapshot is no longer current: call get_work or get_run again."""

    code = "stale"


class Conflict(ToolError):
    """Someone else holds it, it is already decided, or a requestId was reused with other arguments."""

    code = "conflict"

    @property
    def issue(self) -> str | None:
        return self.issues[0] if self.issues else None


class RunEnded(Conflict):
    """`conflict` with `run_ended`: the run has ended or was cancelled."""


class AlreadyDecided(Conflict):
    """`conflict` with `already_decided`."""


class ClaimedByOther(Conflict):
    """`conflict` with `claimed_by_other`: another caller holds a live claim."""


class ClaimedByYou(Conflict):
    """`conflict` with `claimed_by_you`: this identity already holds a live claim (another worker of it)."""


class NotReady(Conflict):
    """`conflict` with `not_ready`: the step cannot be claimed now."""


class Forbidden(ToolError):
    """Not allowed for this identity."""

    code = "forbidden"


class NotFound(ToolError):
    """No such run, step, work item, file or process in this organization."""

    code = "not_found"


class Retry(ToolError):
    """Transient server state; raised only once the client's own retries (same requestId) ran out."""

    code = "retry"


class Unreachable(ClientError):
    """The server could not be reached (or answered no envelope) within the retry budget. A write may
    or may not have been applied: call again with the same `request_id` to find out safely."""

    def __init__(self, message: str, *, tool: str | None = None, request_id: str | None = None):
        super().__init__(message)
        self.tool = tool
        self.request_id = request_id


class ProtocolMismatch(ClientError):
    """The server answered something that is not an agentprocess envelope."""


BY_CODE: dict[str, type[ToolError]] = {
    cls.code: cls for cls in (Invalid, NotAccepted, Stale, Conflict, Forbidden, NotFound, Retry)}
CONFLICTS: dict[str, type[Conflict]] = {
    "run_ended": RunEnded, "already_decided": AlreadyDecided, "claimed_by_other": ClaimedByOther,
    "claimed_by_you": ClaimedByYou, "not_ready": NotReady}


class UnknownCode(ToolError):
    """An error code this client does not know (a newer server); `code` is what the server sent."""

    def __init__(self, code: str, message: str, issues: list[str] | None = None, **where):
        super().__init__(message, issues, **where)
        self.code = code


def error_from_envelope(error: dict, *, tool: str | None = None, request_id: str | None = None) -> ToolError:
    """The typed exception for an envelope's `error` object."""
    code = str(error.get("code", ""))
    message = str(error.get("message", ""))
    issues = [str(issue) for issue in (error.get("issues") or [])]
    where = {"tool": tool, "request_id": request_id}
    if code == "conflict" and issues and issues[0] in CONFLICTS:
        return CONFLICTS[issues[0]](message, issues, **where)
    if code in BY_CODE:
        return BY_CODE[code](message, issues, **where)
    return UnknownCode(code, message, issues, **where)
