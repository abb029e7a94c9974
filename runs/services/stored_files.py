"""The bytes of uploads in storage: the one module that writes, lists and removes them (reading
goes through an Upload's `file`). Names are content addresses within an organization
(runs.models.upload_path), so a name always holds the same bytes."""

import datetime as dt
import hashlib
from collections.abc import Iterator

from django.core.files.base import ContentFile, File
from django.core.files.storage import default_storage


def exists(name: str) -> bool:
    return default_storage.exists(name)


def save(name: str, content: bytes) -> str:
    """Store the bytes under their name; the name stored (the storage allows overwriting)."""
    return default_storage.save(name, ContentFile(content))


def save_stream(name: str, stream) -> str:
    """Store the bytes a file object holds under their name, read in chunks (a restore)."""
    return default_storage.save(name, File(stream, name=name))


def sha256_of(name: str) -> tuple[str, int]:
    """(SHA-256, size) of the stored bytes, read in chunks."""
    digest, size = hashlib.sha256(), 0
    with default_storage.open(name, "rb") as stored:
        while chunk := stored.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def remove(name: str) -> None:
    default_storage.delete(name)


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
