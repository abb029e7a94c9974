"""Paths to the normative spec beside the project (../shared/spec), when it is present."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT.parent / "shared" / "spec"
FIXTURES = SPEC / "conformance" / "fixtures"
SCHEMAS = SPEC / "schemas" / "core-2"
EXAMPLES = ROOT / "processes" / "examples"

CORE_FIXTURES = [
    "blog-publication", "contract-review", "customer-offboarding", "employee-onboarding", "expense-reimbursement",
    "incident-postmortem", "invoice-approval", "major-incident-response", "supplier-rfp", "support-escalation",
]
PROFILE_FIXTURES = ["major-incident", "vendor-check"]


def spec_present() -> bool:
    return SPEC.is_dir()


def need_spec():
    if not spec_present():
        pytest.skip(f"the specification is not at {SPEC}; spec-derived checks skipped")


def fixture_text(name: str) -> str:
    need_spec()
    return (FIXTURES / name / "PROCESS.md").read_text()
