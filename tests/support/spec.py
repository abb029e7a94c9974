"""Paths to the normative spec beside the project (../shared/spec), when it is present.

Only tests that check the spec's own files (its fixtures parse, validate and publish; its schemas and
guide agree with the server) read it. They skip through `need_spec()`, one reason for all, which
tests/conftest.py counts into a single line of the summary.
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT.parent / "shared" / "spec"
FIXTURES = SPEC / "conformance" / "fixtures"
SCHEMAS = SPEC / "schemas" / "core-2"
EXAMPLES = ROOT / "processes" / "examples"
RUNNER_PROCESSES = ROOT / "conformance" / "processes"  # the conformance runner's own scenarios

CORE_FIXTURES = [
    "blog-publication", "contract-review", "customer-offboarding", "employee-onboarding", "expense-reimbursement",
    "incident-postmortem", "invoice-approval", "major-incident-response", "supplier-rfp", "support-escalation",
]
PROFILE_FIXTURES = ["major-incident", "vendor-check"]

# The one skip reason of every spec-reading test: the summary hook counts skips by it.
SPEC_ABSENT = "checks the specification's own files, which are not at ../shared/spec"


def spec_present() -> bool:
    return SPEC.is_dir()


def need_spec():
    if not spec_present():
        pytest.skip(SPEC_ABSENT)


def fixture_text(name: str) -> str:
    need_spec()
    return (FIXTURES / name / "PROCESS.md").read_text()


def fixture_texts() -> list[str]:
    """Every fixture's PROCESS.md, or [] without the spec."""
    if not FIXTURES.is_dir():
        return []
    return [path.read_text(encoding="utf-8") for path in sorted(FIXTURES.glob("*/PROCESS.md"))]


def own_process_texts() -> list[str]:
    """The project's own PROCESS.md files (the runner's scenarios and the examples): seeds that need no spec."""
    paths = sorted(RUNNER_PROCESSES.glob("*/PROCESS.md")) + sorted(EXAMPLES.glob("*/PROCESS.md"))
    return [path.read_text(encoding="utf-8") for path in paths]
