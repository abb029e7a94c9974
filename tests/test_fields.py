"""processes.fields: field specs (spec §2.3) and checking values against them."""

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processes.fields import (
    TYPES,
    check_fields,
    field_type,
    is_datetime,
    normalize,
    parse_datetime,
    spec_issues,
    value_issues,
)


def test_types():
    assert TYPES == ("string", "number", "boolean", "date", "datetime", "list", "object", "person")


# ---------------------------------------------------------------- the eight types


@pytest.mark.parametrize(
    "kind, value",
    [
        ("string", "hello"),
        ("string", ""),
        ("number", 0),
        ("number", -3.5),
        ("number", 10**30),
        ("number", 1e300),
        ("boolean", True),
        ("boolean", False),
        ("date", "2024-02-29"),
        ("date", "2026-12-31"),
        ("datetime", "2026-10-06T09:04:20Z"),
        ("datetime", "2026-10-06t09:04:20z"),
        ("datetime", "2026-10-06T09:04:20.123456789+05:30"),
        ("datetime", "2026-10-06T23:59:59-00:00"),
        ("list", []),
        ("list", [1, "two", None]),
        ("object", {}),
        ("object", {"a": [1]}),
        ("person", "ana@example.com"),
        ("person", "first.last+tag@mail.example.co.uk"),
    ],
)
def test_accepted_values(kind, value):
    assert value_issues(kind, value, "output.x") == []


@pytest.mark.parametrize(
    "kind, value, message",
    [
        ("string", 5, "expected string"),
        ("string", ["a"], "expected string"),
        ("number", True, "expected number"),
        ("number", "5", "expected number"),
        ("number", float("nan"), "expected number"),
        ("number", float("inf"), "expected number"),
        ("boolean", 1, "expected boolean"),
        ("boolean", "true", "expected boolean"),
        ("date", "2026-02-29", "expected date (YYYY-MM-DD)"),
        ("date", "2026-02-30", "expected date (YYYY-MM-DD)"),
        ("date", "2026-13-01", "expected date (YYYY-MM-DD)"),
        ("date", "2026-1-01", "expected date (YYYY-MM-DD)"),
        ("date", "2026-01-01T00:00:00Z", "expected date (YYYY-MM-DD)"),
        ("date", "2026-01-01\n", "expected date (YYYY-MM-DD)"),
        ("datetime", "2026-10-06T09:04:20", "expected datetime (RFC 3339 with offset)"),
        ("datetime", "2026-10-06 09:04:20Z", "expected datetime (RFC 3339 with offset)"),
        ("datetime", "2026-02-30T09:04:20Z", "expected datetime (RFC 3339 with offset)"),
        ("datetime", "2026-10-06T24:00:00Z", "expected datetime (RFC 3339 with offset)"),
        ("datetime", "2026-10-06T09:60:00Z", "expected datetime (RFC 3339 with offset)"),
        ("datetime", "2026-10-06T09:04:20+24:00", "expected datetime (RFC 3339 with offset)"),
        ("datetime", "2026-10-06T09:04:20+0530", "expected datetime (RFC 3339 with offset)"),
        ("datetime", "2026-10-06", "expected datetime (RFC 3339 with offset)"),
        ("datetime", 1760000000, "expected datetime (RFC 3339 with offset)"),
        ("list", {"a": 1}, "expected list"),
        ("list", "a,b", "expected list"),
        ("object", [], "expected object"),
        ("person", "ana", "expected person (email address)"),
        ("person", "ana@example", "expected person (email address)"),
        ("person", "@example.com", "expected person (email address)"),
        ("person", "ana@@example.com", "expected person (email address)"),
        ("person", "ana maria@example.com", "expected person (email address)"),
        ("person", 7, "expected person (email address)"),
    ],
)
def test_refused_values(kind, value, message):
    assert value_issues(kind, value, "output.x") == [f"output.x: {message}"]


def test_null_is_never_a_value():
    assert value_issues({"type": "string", "optional": True}, None, "inputs.note") == ["inputs.note: null is not a value"]


@given(st.integers())
def test_integers_are_numbers_unchanged(value):
    values = {"n": value}
    assert check_fields({"n": "number"}, values, "inputs") == []
    assert values == {"n": value} and type(values["n"]) is int


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_finite_floats_are_numbers_unchanged(value):
    values = {"n": value}
    assert check_fields({"n": "number"}, values, "inputs") == []
    assert values["n"] is value


# ---------------------------------------------------------------- datetime helpers


def test_parse_datetime_is_aware():
    parsed = parse_datetime("2026-10-06T09:04:20.5+02:00")
    assert parsed == datetime(2026, 10, 6, 7, 4, 20, 500000, tzinfo=timezone.utc)
    assert parsed.utcoffset() == timedelta(hours=2)
    assert parse_datetime("2026-10-06T09:04:20Z").tzinfo is timezone.utc


def test_parse_datetime_refuses():
    assert parse_datetime("2026-10-06T09:04:20") is None
    assert parse_datetime(None) is None
    assert is_datetime("2026-10-06T09:04:20-07:00")
    assert not is_datetime("2026-10-06T09:04:20-07:00 ")


# ---------------------------------------------------------------- whole objects


SPECS = {
    "summary": "string",
    "cleared": "boolean",
    "amount": {"type": "number", "description": "USD"},
    "note": {"type": "string", "optional": True},
    "tier": {"type": "string", "one_of": ["auto", "manager", "finance"]},
    "tags": {"type": "list", "items": "string"},
    "tiers": {"type": "list", "items": {"type": "string", "one_of": ["auto", "manager", "finance"]}},
    "lines": {"type": "list", "items": {"type": "object"}},
    "matrix": {"type": "list", "items": {"type": "list", "items": "number"}},
}
GOOD = {
    "summary": "ok",
    "cleared": True,
    "amount": 12.5,
    "tier": "auto",
    "tags": ["a", "b"],
    "tiers": ["auto", "finance"],
    "lines": [{"merchant": "x"}],
    "matrix": [[1, 2], [3.5]],
}


def test_valid_object():
    assert check_fields(SPECS, GOOD, "output") == []
    assert check_fields(SPECS, GOOD | {"note": "hi"}, "output") == []


def test_missing_required_field():
    values = {key: value for key, value in GOOD.items() if key != "summary"}
    assert check_fields(SPECS, values, "output") == ["output.summary: missing"]


def test_optional_field_may_be_omitted_but_not_null():
    assert check_fields(SPECS, GOOD, "output") == []
    assert check_fields(SPECS, GOOD | {"note": None}, "output") == ["output.note: null is not a value"]


def test_null_required_field():
    assert check_fields(SPECS, GOOD | {"summary": None}, "output") == ["output.summary: null is not a value"]


def test_wrong_type():
    assert check_fields(SPECS, GOOD | {"cleared": "yes"}, "output") == ["output.cleared: expected boolean"]


def test_undeclared_fields_sorted_after_declared():
    assert check_fields(SPECS, {"zeta": 1, "extra": 2} | GOOD | {"cleared": 1}, "output") == [
        "output.cleared: expected boolean",
        "output.extra: not declared",
        "output.zeta: not declared",
    ]


def test_no_specs_means_nothing_declared():
    assert check_fields(None, {"a": 1}, "data") == ["data.a: not declared"]
    assert check_fields({}, {}, "data") == []


def test_values_must_be_an_object():
    assert check_fields(SPECS, ["summary"], "output") == ["output: expected object"]


def test_one_of():
    assert check_fields(SPECS, GOOD | {"tier": "ceo"}, "output") == ["output.tier: must be one of auto, manager, finance"]


def test_one_of_inside_a_list():
    assert check_fields(SPECS, GOOD | {"tiers": ["auto", "ceo"]}, "output") == [
        "output.tiers[1]: must be one of auto, manager, finance"
    ]


def test_items_are_checked():
    assert check_fields(SPECS, GOOD | {"tags": ["a", "b", 3]}, "output") == ["output.tags[2]: expected string"]


def test_nested_items_objects():
    assert check_fields(SPECS, GOOD | {"lines": [{"a": 1}, "x"]}, "output") == ["output.lines[1]: expected object"]
    assert check_fields(SPECS, GOOD | {"matrix": [[1], [2, "3"], 4]}, "output") == [
        "output.matrix[1][1]: expected number",
        "output.matrix[2]: expected list",
    ]


def test_one_of_number_and_boolean_are_not_confused():
    spec = {"type": "number", "one_of": [1, 2]}
    assert value_issues(spec, 1, "x") == []
    assert value_issues(spec, True, "x") == ["x: expected number"]
    assert value_issues({"type": "boolean", "one_of": [True]}, False, "x") == ["x: must be one of true"]


def test_every_issue_at_once():
    values = {"cleared": "no", "amount": True, "tier": "x", "tags": [1], "tiers": [], "lines": [], "matrix": [], "bonus": 1}
    assert check_fields(SPECS, values, "output") == [
        "output.summary: missing",
        "output.cleared: expected boolean",
        "output.amount: expected number",
        "output.tier: must be one of auto, manager, finance",
        "output.tags[0]: expected string",
        "output.bonus: not declared",
    ]


def test_normalized_specs_check_the_same():
    normalized = {name: normalize(spec) for name, spec in SPECS.items()}
    assert check_fields(normalized, GOOD, "output") == []
    assert check_fields(normalized, GOOD | {"tiers": ["ceo"], "note": None}, "output") == [
        "output.note: null is not a value",
        "output.tiers[0]: must be one of auto, manager, finance",
    ]


# ---------------------------------------------------------------- specs


def test_valid_specs():
    for name, spec in SPECS.items():
        assert spec_issues(spec, f"output.{name}") == []
    assert spec_issues({"type": "date", "one_of": ["2026-01-01"]}, "inputs.day") == []
    assert spec_issues({"type": "list"}, "inputs.any") == []


def test_normalize():
    assert normalize("string") == {"type": "string", "optional": False, "one_of": None, "items": None, "description": None}
    assert normalize(SPECS["tiers"]) == {
        "type": "list",
        "optional": False,
        "one_of": None,
        "items": {"type": "string", "optional": False, "one_of": ["auto", "manager", "finance"], "items": None, "description": None},
        "description": None,
    }


def test_field_type():
    assert field_type("number") == "number"
    assert field_type({"type": "person"}) == "person"
    assert field_type(normalize("date")) == "date"
    assert field_type("money") is None
    assert field_type({"type": 3}) is None


@pytest.mark.parametrize(
    "spec, issues",
    [
        ("money", ['inputs.x: unknown type "money"']),
        ({"type": "money"}, ['inputs.x: unknown type "money"']),
        (3, ["inputs.x: must be a type name or an object with a type"]),
        ({"description": "x"}, ["inputs.x.type: missing"]),
        ({"type": "string", "foo": 1}, ["inputs.x.foo: unknown field"]),
        ({"type": "string", "optional": "yes"}, ["inputs.x.optional: must be true or false"]),
        ({"type": "string", "description": 5}, ["inputs.x.description: must be a string"]),
        ({"type": "string", "one_of": []}, ["inputs.x.one_of: must be a non-empty list"]),
        ({"type": "string", "one_of": "a"}, ["inputs.x.one_of: must be a non-empty list"]),
        ({"type": "number", "one_of": [1, "2"]}, ["inputs.x.one_of[1]: expected number"]),
        ({"type": "date", "one_of": ["2026-02-30"]}, ["inputs.x.one_of[0]: expected date (YYYY-MM-DD)"]),
        ({"type": "string", "one_of": ["a", None]}, ["inputs.x.one_of[1]: null is not a value"]),
        ({"type": "list", "one_of": [[1]]}, ["inputs.x.one_of: not allowed on a list field (put one_of in items)"]),
        ({"type": "object", "one_of": [{}]}, ["inputs.x.one_of: not allowed on an object field"]),
        ({"type": "string", "items": "string"}, ["inputs.x.items: only a list has items"]),
        ({"type": "list", "items": "money"}, ['inputs.x.items: unknown type "money"']),
        ({"type": "list", "items": {"type": "number", "one_of": ["a"]}}, ["inputs.x.items.one_of[0]: expected number"]),
        ({"type": "list", "items": {"type": "list", "items": {"kind": "x"}}}, ["inputs.x.items.items.kind: unknown field", "inputs.x.items.items.type: missing"]),
    ],
)
def test_spec_issues(spec, issues):
    assert spec_issues(spec, "inputs.x") == issues
