"""Field specs and values (spec §2.3).

A field spec is a type name (`amount: number`) or an object
`{type, description?, optional?, one_of?, items?}`; `items`, only on a list, is itself a spec.
This module only checks: it never converts, rounds or fills in a value.

Issue lines are `<path>: <message>`, e.g. `output.cleared: expected boolean`. A value's issue is a
`kernel.errors.Issue`: the same line on the wire, with a code and what the sentence names beside it
(`wrong_type` with its `kind`, `not_one_of` with its `choices`), so a page words it by code.
"""

import json
import math
import re
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

from kernel.errors import Issue

TYPES = ("string", "number", "boolean", "date", "datetime", "list", "object", "person")
SPEC_KEYS = ("type", "description", "optional", "one_of", "items")
# one_of lists values of the field's own type, so it only makes sense on scalar types.
ONE_OF_TYPES = ("string", "number", "boolean", "date", "datetime", "person")

EXPECTED = {
    "string": "expected string",
    "number": "expected number",
    "boolean": "expected boolean",
    "date": "expected date (YYYY-MM-DD)",
    "datetime": "expected datetime (RFC 3339 with offset)",
    "list": "expected list",
    "object": "expected object",
    "person": "expected person (email address)",
}

DATE_PATTERN = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", re.ASCII)
DATETIME_PATTERN = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
# The server's person format: one "@", a non-empty local part, a domain with a dot, no spaces.
PERSON_PATTERN = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


# ---------------------------------------------------------------- values of one type


def is_number(value) -> bool:
    # bool is a subclass of int in Python, but true is not a JSON number.
    if isinstance(value, bool):
        return False
    if isinstance(value, int | Decimal):
        return isinstance(value, int) or value.is_finite()  # a Decimal: a number beyond double precision
    return isinstance(value, float) and math.isfinite(value)


def parse_date(value) -> date | None:
    if not isinstance(value, str):
        return None
    match = DATE_PATTERN.fullmatch(value)
    if not match:
        return None
    try:
        return date(*(int(part) for part in match.groups()))
    except ValueError:
        return None


def is_date(value) -> bool:
    return parse_date(value) is not None


def parse_datetime(value) -> datetime | None:
    """An aware datetime for an RFC 3339 date-time with an offset, else None.

    Leap seconds (:60) are refused: Python cannot represent them. Fractions beyond
    microseconds are truncated for the returned value only.
    """
    if not isinstance(value, str):
        return None
    match = DATETIME_PATTERN.fullmatch(value)
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    try:
        zone = _offset_zone(offset)
        micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
        return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro, zone)
    except ValueError:
        return None


def _offset_zone(offset: str) -> timezone:
    if offset in ("Z", "z"):
        return timezone.utc
    hours, minutes = int(offset[1:3]), int(offset[4:6])
    if hours > 23 or minutes > 59:
        raise ValueError("offset out of range")
    delta = timedelta(hours=hours, minutes=minutes)
    return timezone(-delta if offset[0] == "-" else delta)


def is_datetime(value) -> bool:
    return parse_datetime(value) is not None


def is_person(value) -> bool:
    return isinstance(value, str) and PERSON_PATTERN.fullmatch(value) is not None


TYPE_CHECKS = {
    "string": lambda value: isinstance(value, str),
    "number": is_number,
    "boolean": lambda value: isinstance(value, bool),
    "date": is_date,
    "datetime": is_datetime,
    "list": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
    "person": is_person,
}


# ---------------------------------------------------------------- specs


def field_type(spec) -> str | None:
    """The type name of a raw or normalized spec, or None when it has no known type."""
    name = spec.get("type") if isinstance(spec, dict) else spec
    return name if isinstance(name, str) and name in TYPES else None


def spec_issues(spec, path: str) -> list[str]:
    """Every reason `spec` is not a valid field spec; empty when it is."""
    if isinstance(spec, str):
        return [] if spec in TYPES else [f"{path}: unknown type {show(spec)}"]
    if not isinstance(spec, dict):
        return [f"{path}: must be a type name or an object with a type"]

    issues = [f"{path}.{key}: unknown field" for key in spec if key not in SPEC_KEYS]
    if "type" not in spec:
        return issues + [f"{path}.type: missing"]
    kind = field_type(spec)
    if kind is None:
        return issues + [f"{path}: unknown type {show(spec['type'])}"]
    if "optional" in spec and not isinstance(spec["optional"], bool):
        issues.append(f"{path}.optional: must be true or false")
    if "description" in spec and not isinstance(spec["description"], str):
        issues.append(f"{path}.description: must be a string")
    if "one_of" in spec:
        issues += _one_of_issues(kind, spec["one_of"], f"{path}.one_of")
    if "items" in spec:
        if kind == "list":
            issues += spec_issues(spec["items"], f"{path}.items")
        else:
            issues.append(f"{path}.items: only a list has items")
    return issues


def _one_of_issues(kind: str, choices, path: str) -> list[str]:
    if kind not in ONE_OF_TYPES:
        hint = " (put one_of in items)" if kind == "list" else ""
        article = "an" if kind == "object" else "a"
        return [f"{path}: not allowed on {article} {kind} field{hint}"]
    if not isinstance(choices, list) or not choices:
        return [f"{path}: must be a non-empty list"]
    issues = []
    for index, choice in enumerate(choices):
        issues += value_issues(kind, choice, f"{path}[{index}]")
    return issues


def normalize(spec) -> dict:
    """The object form with every key present. Assumes spec_issues(spec) was empty."""
    if isinstance(spec, str):
        spec = {"type": spec}
    items = spec.get("items")
    return {
        "type": spec["type"],
        "optional": spec.get("optional", False),
        "one_of": spec.get("one_of"),
        "items": normalize(items) if items is not None else None,
        "description": spec.get("description"),
    }


# ---------------------------------------------------------------- checking values


def value_issues(spec, value, path: str) -> list[str]:
    """Check one value against a raw or normalized spec."""
    kind = field_type(spec)
    if value is None:
        return [Issue(path, "null is not a value", "null_value")]
    if kind is None:
        return [Issue(path, "has no valid field spec", "no_spec")]
    if not TYPE_CHECKS[kind](value):
        return [Issue(path, EXPECTED[kind], "wrong_type", kind=kind)]
    if not isinstance(spec, dict):
        return []
    choices = spec.get("one_of")
    if isinstance(choices, list) and choices and not _is_one_of(value, choices):
        shown = ", ".join(show_plain(choice) for choice in choices)
        return [Issue(path, f"must be one of {shown}", "not_one_of", choices=shown)]
    items = spec.get("items")
    if kind == "list" and items is not None:
        issues = []
        for index, item in enumerate(value):
            issues += value_issues(items, item, f"{path}[{index}]")
        return issues
    return []


def _is_one_of(value, choices: list) -> bool:
    # 1 == True in Python; a choice only matches a value of the same JSON kind.
    return any(choice == value and isinstance(choice, bool) == isinstance(value, bool) for choice in choices)


def check_fields(specs: dict | None, values, prefix: str) -> list[str]:
    """Check a whole object of values: declared fields in declaration order, then undeclared ones."""
    if not isinstance(values, dict):
        return [Issue(prefix, EXPECTED["object"], "wrong_type", kind="object")]
    specs = specs if isinstance(specs, dict) else {}
    issues = []
    for name, spec in specs.items():
        if name in values:
            issues += value_issues(spec, values[name], f"{prefix}.{name}")
        elif not _is_optional(spec):
            issues.append(Issue(f"{prefix}.{name}", "missing", "missing"))
    undeclared = sorted((name for name in values if name not in specs), key=str)
    issues += [Issue(f"{prefix}.{name}", "not declared", "not_declared") for name in undeclared]
    return issues


def _is_optional(spec) -> bool:
    return isinstance(spec, dict) and spec.get("optional") is True


# ---------------------------------------------------------------- showing values in issues


def show(value) -> str:
    """A value as it appears inside an issue line: strings quoted, the rest as JSON."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return show_plain(value)


def show_plain(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, Decimal, str)):
        try:
            return str(value)
        except ValueError:  # an int too long for str() (Python's digit limit)
            return "a very large number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
