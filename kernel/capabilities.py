"""What this server offers. `describe` reports these lists and publishing checks against them,
so the two can never disagree (spec §4.2: refuse to publish a process needing a missing tool)."""

from django.conf import settings

PROTOCOL = "agentprocess"
VERSION = "core-2"

REQUIRED_TOOLS = (
    "describe",
    "list_processes",
    "start_run",
    "get_run",
    "get_work",
    "claim",
    "submit",
    "escalate",
    "decide",
    "cancel",
)
OPTIONAL_TOOLS = ("renew", "upload", "send_event", "list_runs")


def offered_tools() -> list[str]:
    disabled = set(settings.DISABLED_TOOLS)
    return list(REQUIRED_TOOLS) + [tool for tool in OPTIONAL_TOOLS if tool not in disabled]


def evaluator_configured() -> bool:
    return bool(settings.CHECK_EVALUATOR_URL and settings.CHECK_EVALUATOR_MODEL)


def offered_profiles() -> frozenset[str]:
    """parallel-1 unless switched off; check-1 only while an evaluator is configured (check-1 preamble)."""
    profiles = {"parallel-1"} | ({"check-1"} if evaluator_configured() else set())
    return frozenset(profiles - set(settings.DISABLED_PROFILES))
