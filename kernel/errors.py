"""The one error type of the protocol (spec §4.3). Transports turn it into the envelope."""

from enum import StrEnum


class ErrorCode(StrEnum):
    """`error.code` of the envelope (spec §4.3)."""

    INVALID = "invalid"
    NOT_ACCEPTED = "not_accepted"
    STALE = "stale"
    CONFLICT = "conflict"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    RETRY = "retry"


class ConflictIssue(StrEnum):
    """The `issues` entry that says which conflict (tools.md: claim, decide, every write)."""

    RUN_ENDED = "run_ended"
    ALREADY_DECIDED = "already_decided"
    CLAIMED_BY_OTHER = "claimed_by_other"
    CLAIMED_BY_YOU = "claimed_by_you"
    NOT_READY = "not_ready"
    HELD_BY_OTHER = "held_by_other"  # the work queue's own (not a protocol tool's): someone is on it


class Issue(str):
    """One `issues` line, worded as the spec requires (`label: at most 100 characters`), that also
    carries its path (`label`), its problem (`at most 100 characters`) and a machine code beside it
    (issue 29). On the wire it is the line itself (a str: JSON writes it as one); in process a page
    reads `.path` and `.code` and words its own sentence (workqueue/refusals.py), never the text."""

    path: str
    problem: str
    code: str
    params: dict  # what the sentence names (`{"limit": 2000}`, `{"kind": "file"}`)

    def __new__(cls, path: str, problem: str, code: str, **params):
        line = super().__new__(cls, f"{path}: {problem}" if path else problem)
        line.path, line.problem, line.code, line.params = path, problem, code, params
        return line

    def __reduce__(self):  # copy and pickle (a cache, a task's arguments) keep the code
        return (_issue, (self.path, self.problem, self.code, self.params))


def _issue(path: str, problem: str, code: str, params: dict) -> Issue:
    return Issue(path, problem, code, **params)


# DESIGN.md: the HTTP status of each code on REST (401 is for a missing or unknown credential).
HTTP_STATUS = {
    ErrorCode.INVALID: 400,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.STALE: 409,
    ErrorCode.NOT_ACCEPTED: 422,
    ErrorCode.RETRY: 503,
}


class ToolError(Exception):
    def __init__(self, code: ErrorCode | str, message: str, issues: list[str] | None = None):
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.issues = issues

    def envelope(self) -> dict:
        error = {"code": self.code.value, "message": self.message}
        if self.issues is not None:
            # An Issue stays one (its code for the pages in process); JSON writes it as its line.
            error["issues"] = [issue if isinstance(issue, Issue) else str(issue) for issue in self.issues]
        return {"ok": False, "error": error}

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]


def invalid(message: str, issues: list[str] | None = None) -> ToolError:
    return ToolError(ErrorCode.INVALID, message, issues)


def not_found(message: str) -> ToolError:
    return ToolError(ErrorCode.NOT_FOUND, message)


def no_such_run(run_id: str) -> ToolError:
    """A run that does not exist in the caller's organization, or that the caller may not see
    (runs/visibility.py): one answer for both, so it reveals nothing."""
    return not_found(f"no run {run_id} in this organization")


def forbidden(message: str) -> ToolError:
    return ToolError(ErrorCode.FORBIDDEN, message)


def stale(message: str) -> ToolError:
    return ToolError(ErrorCode.STALE, message)


def retry(message: str) -> ToolError:
    return ToolError(ErrorCode.RETRY, message)


def conflict(issue: ConflictIssue | str, message: str) -> ToolError:
    return ToolError(ErrorCode.CONFLICT, message, [issue])


def run_ended() -> ToolError:
    return conflict(ConflictIssue.RUN_ENDED, "the run has ended; no more writes are accepted")


def not_accepted(issues: list[str]) -> ToolError:
    return ToolError(ErrorCode.NOT_ACCEPTED, "the submission was not accepted; nothing changed", issues)
