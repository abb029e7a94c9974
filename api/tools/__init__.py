"""Every agentprocess tool, one module each; `call_tool` is the one entry point for all transports."""

from . import (  # noqa: F401 - importing registers each tool
    cancel,
    claim,
    decide,
    describe,
    escalate,
    get_run,
    get_work,
    list_processes,
    list_runs,
    renew,
    send_event,
    start_run,
    submit,
    upload,
)
from .registry import TOOLS, call_tool, schema_issues

__all__ = ["TOOLS", "call_tool", "schema_issues"]
