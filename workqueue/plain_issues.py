"""Issue lines of the protocol (`output.manager: missing`) as sentences a person acts on
("Enter the manager's email address."). The raw line is kept beside it for support; the rules that
produce issues stay in the services, this only words them.
"""

import re

from processes.presentation import field_label, human_key

from . import refusals

INDEXED = re.compile(r"^(?P<field>[^\[.]+)(?P<rest>(?:\[\d+\]|\.[^\[.]+)*)$")
ITEM = re.compile(r"\[(\d+)\]")


class PlainIssue(str):
    """An issue line (compares as the line itself) that also carries the person's sentence."""

    sentence: str

    def __new__(cls, raw: str, sentence: str):
        issue = super().__new__(cls, raw)
        issue.sentence = sentence
        return issue


def in_sentence(label: str) -> str:
    """A label inside a sentence: "Vendor name" → "vendor name"; "VAT number" stays."""
    return label[:1].lower() + label[1:] if label[1:2].islower() or len(label) == 1 else label


def worded(issues, widgets_by_name: dict, prefix: str = "output") -> list[PlainIssue]:
    return [issue if isinstance(issue, PlainIssue) else PlainIssue(issue, sentence(issue, widgets_by_name, prefix))
            for issue in issues]


def _the(label: str) -> str:
    """'the vendor name' for a label that reads as a noun phrase."""
    lowered = in_sentence(label)
    owned = ("the ", "a ", "an ", "your ", "their ", "his ", "her ", "our ", "my ", "its ")
    return lowered if lowered.lower().startswith(owned) else f"the {lowered}"


def _field_sentence(problem: str, label: str, kind: str, control: str) -> str | None:
    the = _the(label)
    if problem == "missing":
        if control in ("select", "boolean", "checkboxes"):
            return f"Choose {the}."
        if kind == "person":
            return f"Enter {the} (the person's email address)."
        if control in ("items", "rows", "pairs"):
            return f"Fill in {the}: at least one entry."
        return f"Enter {the}."
    if problem.startswith("expected number"):
        return f"Enter {the} as a number, like 1250.50."
    if problem.startswith("expected date ("):
        return f"Enter {the} as a date, like 2026-10-06."
    if problem.startswith("expected datetime"):
        return f"Enter {the} as a date and a time."
    if problem.startswith("expected person"):
        return f"Enter {the} as the person's email address."
    if problem.startswith("expected boolean"):
        return f"Choose yes or no for {the}."
    if problem.startswith(("expected list", "expected object")):
        return f"Fill in {the} entry by entry."
    if problem.startswith("expected string"):
        return f"Enter {the} as text."
    if problem.startswith("must be one of "):
        return f"Choose {the} from the list: {problem.removeprefix('must be one of ')}."
    if "is not a person in this organization" in problem or "who is not a person" in problem:
        return f"{label}: nobody in your organization has that email address."
    if problem.startswith("not declared"):
        return f"{label} is not a field of this step; leave it out."
    return None


def sentence(issue: str, widgets_by_name: dict, prefix: str = "output") -> str:
    """The person's sentence for one issue line (the line itself when no better wording is known)."""
    head, _, problem = issue.partition(": ")
    known = next((p for p in (prefix, "output", "inputs") if head.startswith(p + ".")), None)
    if known:
        match = INDEXED.match(head[len(known) + 1 :])
        if match:
            widget = widgets_by_name.get(match.group("field"))
            label = widget.label if widget else field_label(match.group("field"))
            kind = widget.type if widget else ""
            control = widget.control if widget else ""
            rest = match.group("rest")
            if rest:
                item = ITEM.search(rest)
                inner = rest.split(".")[-1] if "." in rest else ""
                where = f"{label}, entry {int(item.group(1)) + 1}" if item else label
                if inner:
                    where += f", {human_key(inner).lower()}"
                kind = (widget.item_type if widget else "") or ""
                worded = _field_sentence(problem, where, kind, "")
            else:
                worded = _field_sentence(problem, label, kind, control)
            if worded:
                return worded
    part = refusals.part_sentence(issue)  # by the issue's code (workqueue/refusals.py)
    if part:
        return part
    if issue.startswith("Hint: "):
        return issue.removeprefix("Hint: ").capitalize().rstrip(".") + "."
    return issue[:1].upper() + issue[1:] + ("" if issue.endswith(".") else ".")
