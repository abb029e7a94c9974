"""Run data (spec §3.1): the snapshot hash, the size cap, and file URLs added on the way out."""

import copy
import hashlib

from django.conf import settings
from django.core import signing
from django.urls import reverse

from kernel import jsonio, origin

COMPLETION_FIELDS = ("output", "evidence", "summary", "next", "reason", "decision", "note", "check", "by", "at")


def _canonical(value) -> bytes:
    # Sorted keys and no whitespace: deterministic for our own data (which may hold integers beyond
    # 2^53 that RFC 8785 refuses; numbers are never rounded).
    return jsonio.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(value) -> str:
    """SHA-256 of our canonical JSON of a value (numbers exact, keys sorted)."""
    return hashlib.sha256(_canonical(value)).hexdigest()


def run_data(inputs: dict, steps: dict) -> dict:
    return {"inputs": inputs, "steps": steps}


def snapshot_of(inputs: dict, steps: dict) -> str:
    """A hash of run data, without short-lived file URLs (they are added only on output)."""
    return digest(run_data(inputs, steps))


def size_of(inputs: dict, steps: dict) -> int:
    return len(_canonical(run_data(inputs, steps)))


def size_issue(inputs: dict, steps: dict) -> str | None:
    size = size_of(inputs, steps)
    limit = settings.RUN_DATA_BYTES
    if size > limit:
        return f"run data: {size} bytes would exceed limits.runDataBytes ({limit})"
    return None


def record_completion(steps: dict, step_id: str, record: dict) -> None:
    """Make `record` the step's current completion; an earlier current one moves to history."""
    entry = steps.setdefault(step_id, {"history": []})
    retire_current(entry)
    entry.update(record)


def retire_current(entry: dict) -> bool:
    """Move the current completion, if any, into history (spec §3.1 rework). True when moved."""
    current = {key: entry.pop(key) for key in COMPLETION_FIELDS if key in entry}
    if current:
        entry.setdefault("history", []).append(current)
    return bool(current)


# --- file URLs ------------------------------------------------------------------------------

_signer_salt = "agentprocess.files"


def file_url(organization_id: int, upload_id: str, run_id: str | None = None) -> str:
    """A short-lived signed URL; it names the run the file is evidence of, so a signed-in person
    who may not see that run gets 404 from it (runs/visibility.py)."""
    token = signing.dumps({"o": organization_id, "f": upload_id, "r": run_id}, salt=_signer_salt, compress=True)
    return f"{origin.base_url()}{reverse('file-download', args=[upload_id])}?t={token}"


def read_file_token(token: str, upload_id: str) -> tuple[int, str | None] | None:
    """(organization id, run id) a file URL was issued for, or None when forged, expired or for
    another file."""
    try:
        value = signing.loads(token, salt=_signer_salt, max_age=settings.FILE_URL_SECONDS)
    except signing.BadSignature:
        return None
    if not isinstance(value, dict) or value.get("f") != upload_id:
        return None
    return value.get("o"), value.get("r")


def with_file_urls(steps: dict, organization_id: int, run_id: str | None = None) -> dict:
    """A copy of step data whose file evidence items carry a fresh signed `url` (spec §5)."""
    if not any(_has_files(entry) for entry in steps.values()):
        return steps
    decorated = copy.deepcopy(steps)
    for entry in decorated.values():
        for completion in [entry, *entry.get("history", [])]:
            for item in completion.get("evidence") or []:
                if item.get("kind") == "file":
                    item["url"] = file_url(organization_id, item["ref"], run_id)
    return decorated


def _has_files(entry: dict) -> bool:
    return any(
        item.get("kind") == "file"
        for completion in [entry, *entry.get("history", [])]
        for item in completion.get("evidence") or []
    )
