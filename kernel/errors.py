"""The one error type of the protocol (spec §4.3). Transports turn it into the envelope."""

from collections.abc import Callable

INVALID = "invalid"
NOT_ACCEPTED = "not_accepted"
STALE = "stale"
CONFLICT = "conflict"
FORBIDDEN = "forbidden"
NOT_FOUND = "not_found"
RETRY = "retry"

HTTP_STATUS = {
    INVALID: 400,
    FORBIDDEN: 403,
    NOT_FOUND: 404,
    CONFLICT: 409,
    STALE: 409,
    NOT_ACCEPTED: 422,
    RETRY: 503,
}

RUN_ENDED = "run_ended"
ALREADY_DECIDED = "already_decided"
CLAIMED_BY_OTHER = "claimed_by_other"
CLAIMED_BY_YOU = "claimed_by_you"
NOT_READY = "not_ready"


class ToolError(Exception):
    def __init__(self, code: str, message: str, issues: list[str] | None = None,
                 after_rollback: Callable[[], None] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.issues = issues
        # Work to record after the failed call's transaction rolled back, e.g. handoff.issues
        # for the next attempt after a refused submission (spec §3.3); run data never changes.
        self.after_rollback = after_rollback

    def envelope(self) -> dict:
        error = {"code": self.code, "message": self.message}
        if self.issues is not None:
            error["issues"] = list(self.issues)
        return {"ok": False, "error": error}

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]


def invalid(message: str, issues: list[str] | None = None) -> ToolError:
    return ToolError(INVALID, message, issues)


def not_found(message: str) -> ToolError:
    return ToolError(NOT_FOUND, message)


def forbidden(message: str) -> ToolError:
    return ToolError(FORBIDDEN, message)


def stale(message: str) -> ToolError:
    return ToolError(STALE, message)


def conflict(issue: str, message: str) -> ToolError:
    return ToolError(CONFLICT, message, [issue])


def run_ended() -> ToolError:
    return conflict(RUN_ENDED, "the run has ended; no more writes are accepted")


def not_accepted(issues: list[str], after_rollback=None) -> ToolError:
    return ToolError(NOT_ACCEPTED, "the submission was not accepted; nothing changed", issues, after_rollback)
