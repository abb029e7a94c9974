"""A typed Python client and worker loop for any agentprocess server (spec core-2, tools.md).

    from client import Client, Worker, Submission, Escalate

This package imports nothing of the server: it speaks only the protocol, over REST or MCP.
"""

from .api import TOOLS, WRITES, Client, RetryPolicy, new_request_id
from .errors import (
    AlreadyDecided,
    ClaimedByOther,
    ClaimedByYou,
    ClientError,
    Conflict,
    Forbidden,
    Invalid,
    NotAccepted,
    NotFound,
    NotReady,
    ProtocolMismatch,
    Retry,
    RunEnded,
    Stale,
    ToolError,
    UnknownCode,
    Unreachable,
)
from .types import (
    Claim,
    Description,
    EventResult,
    Evidence,
    Page,
    PersonWork,
    ProcessInfo,
    ReadyStep,
    Renewal,
    Run,
    RunSummary,
    RunView,
    StepSpec,
    StepState,
    Submission,
    Upload,
    WorkItem,
)
from .worker import Escalate, Step, Worker, WorkerStats

__version__ = "0.1.0"

__all__ = [
    "TOOLS", "WRITES", "AlreadyDecided", "Claim", "ClaimedByOther", "ClaimedByYou", "Client", "ClientError",
    "Conflict", "Description", "Escalate", "EventResult", "Evidence", "Forbidden", "Invalid", "NotAccepted",
    "NotFound", "NotReady", "Page", "PersonWork", "ProcessInfo", "ProtocolMismatch", "ReadyStep", "Renewal",
    "Retry", "RetryPolicy", "Run", "RunEnded", "RunSummary", "RunView", "Stale", "Step", "StepSpec", "StepState",
    "Submission", "ToolError", "UnknownCode", "Unreachable", "Upload", "WorkItem", "Worker", "WorkerStats",
    "new_request_id",
]
