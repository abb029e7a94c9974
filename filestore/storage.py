"""FILE_STORAGE=database: Django's storage API over two tables (filestore.models), bytes in chunks.

Nothing is held whole in memory: a save inserts the content chunk by chunk, and an open file
reads one chunk per query, when its reader gets there. A save inside a transaction (an upload's)
commits or rolls back with it, so the bytes and the row that refers to them never part.
Names are uploads' names (runs.models.upload_path): the first folder is the organization's id.
"""

import io

from django.core.exceptions import SuspiciousFileOperation
from django.core.files.base import File
from django.core.files.storage import Storage
from django.db import transaction
from django.utils.deconstruct import deconstructible

from kernel import clock
from runs.models import organization_of_upload_path

from .models import FileChunk, StoredFile

CHUNK_BYTES = 1024 * 1024


@deconstructible(path="filestore.storage.DatabaseStorage")
class DatabaseStorage(Storage):
    def __init__(self, chunk_bytes: int = CHUNK_BYTES):
        self.chunk_bytes = chunk_bytes

    # --- writing ---

    def get_available_name(self, name, max_length=None):
        """The name itself: a name holds one content (content-addressed), as on the other backends."""
        _organization_of(name)
        if max_length is not None and len(name) > max_length:
            raise SuspiciousFileOperation(f"the file name {name!r} is longer than {max_length} characters")
        return name

    def _save(self, name, content):
        organization_id = _organization_of(name)
        with transaction.atomic():
            self.delete(name)
            stored = StoredFile.objects.create(organization_id=organization_id, name=name, size=0,
                                               modified_at=clock.now())
            offset = 0
            for data in content.chunks(self.chunk_bytes):
                if data:
                    FileChunk.objects.create(organization_id=organization_id, file=stored, offset=offset,
                                             data=bytes(data))
                    offset += len(data)
            StoredFile.objects.filter(pk=stored.pk).update(size=offset)
        return name

    def delete(self, name):
        organization_id = organization_of_upload_path(name)
        if organization_id is None:
            return
        with transaction.atomic():
            FileChunk.objects.filter(organization_id=organization_id, file__name=name).delete()
            StoredFile.objects.filter(organization_id=organization_id, name=name).delete()

    # --- reading ---

    def _open(self, name, mode="rb"):
        if mode not in ("r", "rb"):
            raise ValueError(f"the database storage opens files for reading only, not {mode!r}")
        stored = _stored(name)
        return DatabaseFile(ChunkReader(stored.organization_id, stored.pk, stored.size), name=name)

    def exists(self, name):
        organization_id = organization_of_upload_path(name)
        return organization_id is not None and \
            StoredFile.objects.filter(organization_id=organization_id, name=name).exists()

    def size(self, name):
        return _stored(name).size

    def get_modified_time(self, name):
        return _stored(name).modified_at

    get_created_time = get_modified_time

    def listdir(self, path):
        prefix = f"{path.strip('/')}/" if path.strip("/") else ""
        folders, files = set(), []
        for name in StoredFile.objects.filter(name__startswith=prefix).values_list("name", flat=True).order_by("name"):
            head, slash, _rest = name[len(prefix):].partition("/")
            if slash:
                folders.add(head)
            else:
                files.append(head)
        return sorted(folders), files


class DatabaseFile(File):
    def open(self, mode=None):
        """Open again after a close (a FieldFile keeps its File between two reads)."""
        if self.closed:
            reader = self.file
            self.file = ChunkReader(reader.organization_id, reader.file_id, reader.size)
        else:
            self.seek(0)
        return self


class ChunkReader(io.RawIOBase):
    """A seekable read-only stream over a stored file's chunks; keeps the one it is in."""

    def __init__(self, organization_id: int, file_id: int, size: int):
        super().__init__()
        self.organization_id, self.file_id, self.size = organization_id, file_id, size
        self._position = 0
        self._chunk_offset, self._chunk = 0, b""

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._position

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError(f"negative seek position {base + offset}")
        self._position = base + offset
        return self._position

    def readinto(self, buffer):
        """Fills the buffer (short only at the end of the file), from as many chunks as it spans."""
        filled = 0
        while filled < len(buffer) and self._position < self.size:
            if not self._chunk_offset <= self._position < self._chunk_offset + len(self._chunk):
                self._load_chunk()
            start = self._position - self._chunk_offset
            count = min(len(buffer) - filled, len(self._chunk) - start)
            buffer[filled:filled + count] = self._chunk[start:start + count]
            filled += count
            self._position += count
        return filled

    def _load_chunk(self):
        found = (FileChunk.objects.filter(organization_id=self.organization_id, file_id=self.file_id,
                                          offset__lte=self._position)
                 .order_by("-offset").values_list("offset", "data").first())
        if found is None or found[0] + len(found[1]) <= self._position:
            raise OSError("the stored file is incomplete: it was removed while being read")
        self._chunk_offset, self._chunk = found[0], bytes(found[1])


def _organization_of(name: str) -> int:
    organization_id = organization_of_upload_path(name)
    if organization_id is None:
        raise SuspiciousFileOperation(
            f"the database storage keeps uploads only, named <organization id>/<name>, not {name!r}")
    return organization_id


def _stored(name: str) -> StoredFile:
    organization_id = organization_of_upload_path(name)
    stored = StoredFile.objects.filter(organization_id=organization_id, name=name).first() \
        if organization_id is not None else None
    if stored is None:
        raise FileNotFoundError(f"no stored file {name!r}")
    return stored
