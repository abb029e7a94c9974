"""A refusal as the person reads it (issue 29): by its code, never by its text.

The services word every refusal as the spec requires (`label: at most 100 characters`); an issue
also carries its path and a machine code (kernel/errors.py `Issue`), and a conflict its issue code
(`ConflictIssue`). Pages ask this module for the sentence, so rewording a service's line changes
what a person reads, and never which branch a page takes.
"""

from kernel.errors import ConflictIssue, ErrorCode, Issue

# The person's sentence for an issue of a decision's parts, by (path, code); None in the path
# matches any path (evidence lines name the file they are about).
_EVIDENCE_KINDS = {"file": "Attach at least one file (a receipt, a report, a scan).",
                   "link": "Add at least one link or reference."}
PART_SENTENCES = {
    (None, "file_not_found"): "A file you attached is no longer available; attach it again.",
    (None, "file_damaged"): "A file you attached was damaged in storage; attach it again.",
    ("next", "route_missing"): "Choose where the work goes next.",
    ("next", "route_unknown"): "Choose where the work goes next from the list.",
    ("reason", "reason_missing"): "Say in a sentence why you chose this route.",
    ("note", "note_missing"): "Write a note that says why, for whoever gets the work back.",
    ("summary", "summary_missing"): "Write a short summary of what you did and found.",
    ("summary", "too_long"): "Make the summary shorter (at most {limit} characters).",
    ("decision", None): "Choose a decision with one of the buttons.",
}


def part_sentence(issue) -> str | None:
    """The sentence for an issue about a decision's parts (evidence, route, note, summary,
    decision), by its code; None for any other."""
    if not isinstance(issue, Issue):
        return None
    if issue.code == "evidence_missing":
        return _EVIDENCE_KINDS.get(issue.params.get("kind"))
    for key in ((issue.path, issue.code), (None, issue.code), (issue.path, None)):
        if key in PART_SENTENCES:
            return PART_SENTENCES[key].format(**issue.params)
    return None


def problem_of(issue) -> str:
    """The issue without its path: what to fix about the field the page shows it beside."""
    if isinstance(issue, Issue):
        return issue.problem
    return str(issue)


def problems(error) -> list[str]:
    """Each issue's problem (a ToolError or an envelope's `error`)."""
    issues = error.issues if hasattr(error, "issues") else error.get("issues")
    return [problem_of(issue) for issue in issues or []]


def code_of(error) -> str:
    return str(error.code if hasattr(error, "code") else error["code"])


def conflict_of(error) -> str | None:
    """Which conflict (tools.md: the one `issues` entry of a conflict), or None."""
    if code_of(error) != ErrorCode.CONFLICT:
        return None
    issues = error.issues if hasattr(error, "issues") else error.get("issues")
    return str(issues[0]) if issues else None


def is_not_found(error) -> bool:
    return code_of(error) == ErrorCode.NOT_FOUND


def message_sentence(error) -> str:
    """The error's message as a sentence. A message that starts with a person's email address (the
    holder of a work item, `held_by_other`) keeps it as written; every other starts with a capital."""
    message = error.message if hasattr(error, "message") else error["message"]
    if conflict_of(error) != ConflictIssue.HELD_BY_OTHER:
        message = message[:1].upper() + message[1:]
    return message + "."
