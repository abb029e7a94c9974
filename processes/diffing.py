"""What a draft changes against the current version: a line diff of the two PROCESS.md texts.

Plain data (hunks of numbered lines), so a page can render it escaped and mark each line by a
sign and a word as well as by colour.
"""

import difflib
from dataclasses import dataclass

ADDED = "added"
REMOVED = "removed"
SAME = "same"


@dataclass(frozen=True)
class DiffLine:
    kind: str  # ADDED, REMOVED or SAME
    old_number: int | None  # the line's number in the current version, None for an added line
    new_number: int | None  # the line's number in the draft, None for a removed line
    text: str  # without its line ending


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[DiffLine, ...]


@dataclass(frozen=True)
class SourceDiff:
    hunks: tuple[Hunk, ...]
    added: int
    removed: int
    # Only line endings differ (e.g. CRLF against LF): the text is the same, the hash is not.
    endings_only: bool = False

    @property
    def unchanged(self) -> bool:
        return not self.hunks and not self.endings_only


def _lines(text: str) -> list[str]:
    """Lines as an editor numbers them: split at LF (CRLF and a lone CR too), not at the other
    characters str.splitlines() breaks on; a final line ending starts no extra line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def source_diff(current: str, draft: str, *, context: int = 3) -> SourceDiff:
    """The lines the draft adds and removes against `current`, with `context` lines around each change."""
    old_lines, new_lines = _lines(current), _lines(draft)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    hunks, added, removed = [], 0, 0
    for group in matcher.get_grouped_opcodes(context):
        lines = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [DiffLine(SAME, i + 1, j + 1, old_lines[i]) for i, j in zip(range(i1, i2), range(j1, j2))]
                continue
            if tag in ("replace", "delete"):
                lines += [DiffLine(REMOVED, i + 1, None, old_lines[i]) for i in range(i1, i2)]
                removed += i2 - i1
            if tag in ("replace", "insert"):
                lines += [DiffLine(ADDED, None, j + 1, new_lines[j]) for j in range(j1, j2)]
                added += j2 - j1
        first, last = group[0], group[-1]
        hunks.append(Hunk(old_start=first[1] + 1, old_count=last[2] - first[1],
                          new_start=first[3] + 1, new_count=last[4] - first[3], lines=tuple(lines)))
    endings_only = not hunks and current != draft
    return SourceDiff(hunks=tuple(hunks), added=added, removed=removed, endings_only=endings_only)
