"""upload (spec §5): base64 bytes, size-limited, stored with their SHA-256 in the caller's organization."""

import base64
import binascii
import hashlib
import re

from django.conf import settings
from django.db import transaction

from kernel import audit
from kernel.errors import invalid
from kernel.identity import Identity
from kernel.models import EventKind

from ..models import Upload, upload_path
from . import locks, stored_files


def too_large(size: int) -> bool:
    """The upload limit (describe.maxUploadBytes), checked here for every way a file arrives."""
    return size > settings.MAX_UPLOAD_BYTES


CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


@transaction.atomic(savepoint=False)
def upload(*, identity: Identity, file_name: str, content_type: str, content_base64: str, now) -> Upload:
    # A name or type with control characters could not be sent back in a download's headers.
    issues = [f"{label}: must not contain control characters" for label, text in
              (("fileName", file_name), ("contentType", content_type)) if CONTROL_CHARACTERS.search(text)]
    if issues:
        raise invalid("the file was not stored", issues)
    limit = settings.MAX_UPLOAD_BYTES
    if len(content_base64) > (limit + 2) // 3 * 4 + 4:
        raise invalid("the file is too large", [f"contentBase64: more than maxUploadBytes ({limit}) bytes"])
    try:
        content = base64.b64decode(content_base64, validate=True)
    except (binascii.Error, ValueError) as error:
        raise invalid("the content is not base64", ["contentBase64: not valid base64"]) from error
    if too_large(len(content)):
        raise invalid("the file is too large", [f"contentBase64: {len(content)} bytes, more than maxUploadBytes ({limit})"])
    row = Upload(
        organization=identity.organization,
        file_name=file_name,
        content_type=content_type,
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
        uploaded_by=identity.ref,
        created_at=now,
    )
    name = upload_path(row, file_name)
    # Held until this row is committed: the orphan sweep never removes the bytes this row will
    # refer to, and two first uploads of the same bytes store them once.
    locks.stored_file(name)
    row.file.name = name if stored_files.exists(name) else stored_files.save(name, content)
    row.save(force_insert=True)
    audit.record(EventKind.FILE_UPLOADED, organization_id=identity.organization.id, actor=audit.Actor.of(identity),
                 at=now, data={"upload": row.id, "fileName": file_name, "bytes": row.size, "sha256": row.sha256})
    return row
