"""The compiled argument check (jsonschema-rs) may only ever say yes where jsonschema says yes.

Spec §6 rule 3 (tools.md, "Errors"): arguments that do not match the tool's schema are refused
with `invalid` and every issue. api/tools/registry.schema_issues answers a call the compiled
validator accepts without walking jsonschema's errors (issue 23: 0.1-1 ms a call); a refusal is
always worded by jsonschema. So the one thing that could go wrong is the compiled check accepting
what jsonschema refuses: these properties look for such a value, per tool, with values shaped
like each tool's own arguments (its property names, numbers near its bounds, wrong types).
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.tools.registry import SCHEMAS, TOOLS, _compiled, _validator, schema_issues

pytestmark = pytest.mark.django_db

TOOL_NAMES = sorted(path.name.removesuffix(".arguments.json") for path in (SCHEMAS / "tools").glob("*.arguments.json"))

scalars = (st.none() | st.booleans() | st.integers(-2**53, 2**53)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
           | st.sampled_from(["", "x" * 129, "x" * 4001, "r_abcdefghijklmnop", "gather"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


def arguments_for(name: str):
    schema = json.loads((SCHEMAS / "tools" / f"{name}.arguments.json").read_text())
    names = sorted(schema.get("properties", {})) + ["unknownName"]
    return st.dictionaries(st.sampled_from(names), values, max_size=len(names))


@pytest.mark.parametrize("name", TOOL_NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_compiled_check_never_accepts_what_jsonschema_refuses(name, data):
    arguments = data.draw(arguments_for(name))
    if _compiled(name).is_valid(arguments):
        assert list(_validator(name).iter_errors(arguments)) == [], arguments


def test_every_tool_has_both_checks():
    assert set(TOOL_NAMES) >= set(TOOLS)
    assert all(_compiled(name) is not None for name in TOOLS)


def test_exact_numbers_and_refusals_still_get_jsonschemas_words():
    from kernel import jsonio

    # 1.00…01 is an exact number (Decimal); a double would read it as 1, an integer.
    arguments = jsonio.loads(b'{"limit": 1.0000000000000000000000001}')
    assert schema_issues("get_work", arguments) == ["limit: expected integer"]
    # Every issue once (jsonschema reports `required` per missing name).
    assert schema_issues("claim", {"runId": 5}) == ["requestId: missing", "runId: expected string", "stepId: missing"]
    assert schema_issues("claim", {"runId": "r_1", "stepId": "gather", "requestId": "q"}) == []
