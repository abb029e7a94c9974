"""Issue lines of the protocol (`output.manager: missing`) as sentences a person acts on
("Enter the manager's email address."). The raw line is kept beside it for support; the rules that
produce issues stay in the services, this only words them.
"""

from kernel.errors import Issue
from processes.presentation import field_label, human_key

from . import refusals


class PlainIssue(str):
    """An issue line (compares as the line itself) that also carries the person's sentence."""

    sentence: str

    def __new__(cls, raw: str, sentence: str):
        issue = super().__new__(cls, raw)
        issue.sentence = sentence
        return issue

    def __reduce__(self):  # a copy keeps the sentence
        return (PlainIssue, (str(self), self.sentence))


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


def _field_sentence(issue: Issue, label: str, kind: str, control: str) -> str | None:
    """The sentence for a field's issue, by its code (processes/fields.py), never by its text."""
    the = _the(label)
    if issue.code == "missing":
        if control in ("select", "boolean", "checkboxes"):
            return f"Choose {the}."
        if kind == "person":
            return f"Enter {the} (the person's email address)."
        if control in ("items", "rows", "pairs"):
            return f"Fill in {the}: at least one entry."
        return f"Enter {the}."
    if issue.code == "wrong_type":
        return WRONG_TYPE.get(issue.params.get("kind"), "Enter {the} again.").format(the=the)
    if issue.code == "not_one_of":
        return f"Choose {the} from the list: {issue.params['choices']}."
    if issue.code == "not_declared":
        return f"{label} is not a field of this step; leave it out."
    return None


WRONG_TYPE = {
    "number": "Enter {the} as a number, like 1250.50.",
    "date": "Enter {the} as a date, like 2026-10-06.",
    "datetime": "Enter {the} as a date and a time.",
    "person": "Enter {the} as the person's email address.",
    "boolean": "Choose yes or no for {the}.",
    "list": "Fill in {the} entry by entry.",
    "object": "Fill in {the} entry by entry.",
    "string": "Enter {the} as text.",
}


def _field_path(path: str, prefix: str) -> tuple[str, int | None, str] | None:
    """An issue's path split into (field, entry index, key inside the entry):
    `output.lines[2].amount` → ("lines", 2, "amount"); None when the path is not a field's."""
    known = next((p for p in (prefix, "output", "inputs") if path.startswith(p + ".")), None)
    if known is None:
        return None
    rest = path[len(known) + 1 :]
    cuts = [at for at in (rest.find("["), rest.find(".")) if at >= 0]
    name, tail = (rest[: min(cuts)], rest[min(cuts) :]) if cuts else (rest, "")
    index = None
    if tail.startswith("[") and "]" in tail:
        number, tail = tail[1:].split("]", 1)
        index = int(number) if number.isdigit() else None
    inner = tail.rsplit(".", 1)[-1] if "." in tail else ""
    return (name, index, inner) if name else None


def sentence(issue: str, widgets_by_name: dict, prefix: str = "output") -> str:
    """The person's sentence for one issue (the line itself when no better wording is known)."""
    if isinstance(issue, PlainIssue):
        return issue.sentence
    if isinstance(issue, Issue):
        where = _field_path(issue.path, prefix)
        if where:
            name, index, inner = where
            widget = widgets_by_name.get(name)
            label = widget.label if widget else field_label(name)
            if index is not None or inner:
                place = f"{label}, entry {index + 1}" if index is not None else label
                if inner:
                    place += f", {human_key(inner).lower()}"
                worded = _field_sentence(issue, place, (widget.item_type if widget else "") or "", "")
            else:
                worded = _field_sentence(issue, label, widget.type if widget else "", widget.control if widget else "")
            if worded:
                return worded
        part = refusals.part_sentence(issue)  # by the issue's code (workqueue/refusals.py)
        if part:
            return part
    return issue[:1].upper() + issue[1:] + ("" if issue.endswith(".") else ".")


def hint_issue(text: str) -> PlainIssue:
    """A field's hint shown under its errors (the raw line says it is a hint)."""
    return PlainIssue(f"Hint: {text}", text.capitalize().rstrip(".") + ".")
