"""The inbox's query string, read into filters and written back (issue 15, point 2).

Everything a view shows is in its URL, so any view is bookmarkable and a saved view is just the
query string it was saved from (`canonical_query`). Values that do not read as their input's type
are reported in plain words, and that filter is left out rather than guessed.
"""

import datetime as dt
from urllib.parse import urlencode

from django.http import QueryDict

from kernel import jsonio
from processes.fields import field_type
from processes.presentation import Presentation, field_label

from .forms import parse_number, value_from_text
from .selectors import HELD_FILTERS, KIND_FILTERS, MODES, RANGE_KINDS, SORTS, VIEWS, InboxFilters, InputFilter

# Parameters that belong to one request, not to the view.
TRANSIENT = ("page", "partial")
RANGE_LABELS = {"min": "at least", "max": "at most"}


def input_kind(spec) -> str:
    return field_type(spec) or "string"


def _typed(kind: str, text: str):
    """(value, problem) for a filter value typed as text."""
    if kind == "number":
        number = parse_number(text)
        if number is None:
            return None, f"“{text}” is not a number"
        number, problem = jsonio.stored(number)  # what no run can hold is no bound PostgreSQL can compare
        return (None, f"“{text}” is a {problem}") if problem else (number, None)
    if kind == "date":
        try:
            return dt.date.fromisoformat(text).isoformat(), None
        except ValueError:
            return None, f"“{text}” is not a date like 2026-10-06"
    if kind == "boolean":
        value = value_from_text(kind, text)
        return (None, f"“{text}” is not yes or no") if not isinstance(value, bool) else (value, None)
    return text, None


def input_fields(declared: dict, query, presentation: Presentation | None = None) -> list[dict]:
    """The typed-input filter controls of a process: ranges for numbers and dates, else equality;
    each under its field's one label."""
    presentation = presentation or Presentation()
    fields = []
    for name, spec in declared.items():
        kind = input_kind(spec)
        if kind in ("object", "list") or kind.startswith("list"):
            continue  # no equality a person could type
        ops = ("min", "max") if kind in RANGE_KINDS else ("eq",)
        for op in ops:
            param = f"input.{name}" if op == "eq" else f"input.{name}.{op}"
            fields.append({"name": name, "label": field_label(name, presentation.input(name)),
                           "op": op, "param": param, "type": kind, "currency": presentation.input(name).currency,
                           "value": query.get(param, ""), "range": RANGE_LABELS.get(op, "")})
    return fields


def read_filters(query, declared_inputs_of, presentation_of=None) -> tuple[InboxFilters, list[dict], list[str]]:
    """(filters, the typed-input controls of the chosen process, problems) from a query string.

    `declared_inputs_of(process)` gives the inputs the process declares (its latest version), and
    `presentation_of(process)` how they are shown (their labels)."""
    def choice(name, allowed, default=""):
        value = query.get(name, "")
        return value if value in allowed else default

    process = query.get("process", "").strip()
    problems, typed = [], []
    version_text = query.get("version", "").strip()
    version = int(version_text) if version_text.isdigit() and int(version_text) > 0 else None
    if version_text and version is None:
        problems.append(f"Version: “{version_text}” is not a version number; that filter was left out.")
    presentation = presentation_of(process) if process and presentation_of else None
    fields = input_fields(declared_inputs_of(process), query, presentation) if process else []
    for field in fields:
        text = field["value"].strip()
        if not text:
            continue
        value, problem = _typed(field["type"], text)
        if problem:
            where = field["label"] + (f" ({field['range']})" if field["range"] else "")
            problems.append(f"{where}: {problem}; that filter was left out.")
            field["error"] = problem
        else:
            typed.append(InputFilter(field["name"], field["op"], value, field["type"]))
    filters = InboxFilters(
        view=choice("view", VIEWS, "all"), process=process, version=version,
        kind=choice("kind", KIND_FILTERS), overdue=query.get("overdue") == "1", mode=choice("mode", MODES),
        held=choice("held", HELD_FILTERS), text=query.get("q", "").strip()[:200], sort=choice("sort", SORTS, "due"),
        inputs=tuple(typed),
    )
    return filters, fields, problems


def canonical_query(query) -> str:
    """The query string without what belongs to one request (the page, a refresh), keys in order."""
    pairs = [(key, value) for key in sorted(query.keys()) if key not in TRANSIENT
             for value in query.getlist(key) if value != ""]
    return urlencode(pairs)


def parse(text: str) -> QueryDict:
    return QueryDict(text or "")


def with_view(query, view: str) -> str:
    """The query string of another view with the same filters and sort (the view tabs)."""
    pairs = [(key, value) for key in sorted(query.keys()) if key not in (*TRANSIENT, "view")
             for value in query.getlist(key) if value != ""]
    if view != "all":
        pairs.insert(0, ("view", view))
    return urlencode(pairs)
