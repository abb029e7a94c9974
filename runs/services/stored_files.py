"""The bytes of uploads in storage: the one module that writes, lists, hashes, copies and removes
them (downloads read through an Upload's `file`). Names are content addresses within an organization
(runs.models.upload_path), so a name always holds the same bytes.

Storage is Django's `default_storage`, chosen by FILE_STORAGE (agentprocess/settings.py): a local
folder, the database (filestore/), or an S3-compatible bucket; everything here works alike on each.
"""

import datetime as dt
import hashlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from django.conf import settings
from django.core.files.base import ContentFile, File
from django.core.files.storage import Storage, default_storage
from django.utils.http import content_disposition_header

from ..models import Upload

HASH_READ_BYTES = 1024 * 1024
# A presigned bucket URL only has to outlive the redirect to it; our own signed URL is the lasting one.
PRESIGNED_SECONDS = 60


def exists(name: str) -> bool:
    return default_storage.exists(name)


def save(name: str, content: bytes) -> str:
    """Store the bytes under their name; the name stored (every backend overwrites)."""
    return default_storage.save(name, ContentFile(content))


def save_stream(name: str, stream) -> str:
    """Store the bytes a file object holds under their name, read in pieces (a restore)."""
    return default_storage.save(name, File(stream, name=name))


def size_of(name: str) -> int:
    return default_storage.size(name)


def remove(name: str) -> None:
    default_storage.delete(name)


def sha256_of(name: str, storage: Storage = default_storage, copy_to: IO[bytes] | None = None) -> str | None:
    """The SHA-256 of the stored bytes, read in pieces (and written to `copy_to` on the way); None
    when they cannot be read."""
    digest = hashlib.sha256()
    try:
        with storage.open(name, "rb") as handle:
            for piece in iter(lambda: handle.read(HASH_READ_BYTES), b""):
                digest.update(piece)
                if copy_to is not None:
                    copy_to.write(piece)
    except OSError:
        return None
    return digest.hexdigest()


def read_start(name: str, limit: int) -> bytes | None:
    """At most `limit` bytes from the start of the stored file (a preview's reading); None when
    they cannot be read."""
    try:
        with default_storage.open(name, "rb") as handle:
            pieces, left = [], limit
            while left > 0 and (piece := handle.read(min(left, HASH_READ_BYTES))):
                pieces.append(piece)
                left -= len(piece)
            return b"".join(pieces)
    except OSError:
        return None


def presigned_url(name: str, *, file_name: str, content_type: str) -> str | None:
    """With FILE_STORAGE=s3 and S3_PRESIGNED_URLS on: a short-lived URL of the bucket that serves
    the bytes itself, as a download named `file_name` (attachment: the bucket cannot send our
    sandboxing headers, so a browser must not render them). Otherwise None: the server streams."""
    if not (settings.FILE_STORAGE == "s3" and settings.S3_PRESIGNED_URLS):
        return None
    parameters = {"ResponseContentDisposition": content_disposition_header(True, file_name),
                  "ResponseContentType": content_type}
    return default_storage.url(name, parameters=parameters, expire=PRESIGNED_SECONDS)


def stored_before(moment: dt.datetime, folder: str = "") -> Iterator[tuple[str, int]]:
    """(name, bytes) of every stored file last written before `moment`."""
    try:
        folders, files = default_storage.listdir(folder)
    except FileNotFoundError:  # nothing was ever stored
        return
    for file_name in files:
        name = f"{folder}/{file_name}" if folder else file_name
        if default_storage.get_modified_time(name) < moment:
            yield name, default_storage.size(name)
    for child in folders:
        yield from stored_before(moment, f"{folder}/{child}" if folder else child)


# --- moving every upload's bytes to another backend (manage.py move_files) ---


@dataclass
class Moved:
    copied: int = 0
    already_there: int = 0
    refused: list[str] = field(default_factory=list)

    def __str__(self):
        return f"copied {self.copied}, already there {self.already_there}, refused {len(self.refused)}"


def move_all(source: Storage, target: Storage, *, source_label: str, target_label: str) -> Moved:
    """Copy every upload's bytes from `source` to `target`, each checked against the SHA-256 its
    upload rows recorded, before and after the copy. A file whose bytes do not match is refused and
    nothing is written for it; one already in the target with the right hash is left as it is, so
    running this again does nothing new. The source is never changed."""
    moved = Moved()
    hashes: dict[str, set[str]] = {}
    for name, sha256 in Upload.objects.values_list("file", "sha256").order_by("file").distinct().iterator():
        hashes.setdefault(name, set()).add(sha256)
    for name, recorded in hashes.items():
        if len(recorded) != 1:
            moved.refused.append(f"{name}: its upload rows record different hashes ({', '.join(sorted(recorded))})")
            continue
        (expected,) = recorded
        if sha256_of(name, target) == expected:
            moved.already_there += 1
            continue
        with tempfile.SpooledTemporaryFile(max_size=HASH_READ_BYTES) as copy:
            # Read once, here (a backend's file may not be read from the target's upload threads).
            found = sha256_of(name, source, copy_to=copy)
            if found is None:
                moved.refused.append(f"{name}: not readable in {source_label}")
                continue
            if found != expected:
                moved.refused.append(f"{name}: the bytes in {source_label} hash to {found}, the upload recorded "
                                     f"{expected}; nothing was written for it")
                continue
            target.save(name, File(copy, name=name))
        copied = sha256_of(name, target)
        if copied != expected:
            target.delete(name)
            moved.refused.append(f"{name}: the copy in {target_label} hashed to {copied}, not {expected}; "
                                 f"the copy was removed")
            continue
        moved.copied += 1
    return moved
