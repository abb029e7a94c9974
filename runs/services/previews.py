"""What a file of evidence looks like inline (issue 26): which kind of preview it gets, and for the
kinds read on the server (CSV, .xlsx, text, Markdown, JSON, and the check of a picture) what it
shows. PDFs are drawn in the browser by PDF.js in a sandboxed frame; the server only checks that the
bytes are a PDF.

Bytes are read through the storage API (runs/services/stored_files.py), so previews work alike on
every FILE_STORAGE. Reading happens in a child process with memory, CPU and time limits
(runs/services/preview_parser.py): a crafted file ends as "preview unavailable", never as a 500 or a
web worker gone. Answers are cached by the organization and the file's SHA-256 (a name holds one
content), the unavailable ones too.
"""

import functools
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.cache import cache

from ..models import Upload
from . import stored_files
from .rundata import file_url

PARSER = Path(__file__).with_name("preview_parser.py")
WALL_SECONDS = 8
CACHE_SECONDS = 24 * 3600
# The bytes read for a preview (uploads are at most MAX_UPLOAD_BYTES; a text file shows its start).
READ_BYTES = {"text": 256 * 1024, "markdown": 256 * 1024, "json": 2 * 1024 * 1024}
PDF_MAGIC_WITHIN = 1024
# A PDF's JavaScript, launch and embedded-file actions, by their names (also hex-escaped: /J#61vaScript).
PDF_ACTIVE = re.compile(rb"/(?:JavaScript|JS|Launch|EmbeddedFiles?|RichMedia|XFA)(?![A-Za-z0-9])")
PDF_NAME_ESCAPE = re.compile(rb"#([0-9A-Fa-f]{2})")
PREVIEWS_PER_PAGE = 8
CACHE_VERSION = 1

EXTENSIONS = {
    "pdf": "pdf", "png": "image", "jpg": "image", "jpeg": "image", "webp": "image", "gif": "image",
    "csv": "csv", "xlsx": "xlsx", "txt": "text", "log": "text", "md": "markdown", "markdown": "markdown",
    "json": "json",
}
CONTENT_TYPES = {
    "application/pdf": "pdf", "image/png": "image", "image/jpeg": "image", "image/webp": "image",
    "image/gif": "image", "text/csv": "csv",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/plain": "text", "text/markdown": "markdown", "application/json": "json",
}
NAMES = {"pdf": "PDF", "image": "Picture", "svg": "SVG picture", "csv": "CSV table", "xlsx": "Spreadsheet", "text": "Text",
         "markdown": "Markdown", "json": "JSON"}


@dataclass
class Preview:
    ref: str
    name: str
    content_type: str
    size: int
    sha256: str
    kind: str | None  # pdf, image, csv, xlsx, text, markdown, json; None: no preview for this type
    url: str = ""
    reason: str = ""  # why a preview is unavailable ("" when it is shown)
    data: dict = field(default_factory=dict)
    html: str = ""  # Markdown, rendered and sanitized by the page

    @property
    def available(self) -> bool:
        return self.kind is not None and not self.reason

    @property
    def kind_name(self) -> str:
        return NAMES.get(self.kind or "", "File")


def kind_of(file_name: str, content_type: str) -> str | None:
    """The preview a file gets by its name, else its declared type; SVG never (a picture that can
    carry scripts), nor anything unnamed here."""
    extension = file_name.rsplit(".", 1)[-1].lower() if "." in file_name else ""
    if extension == "svg" or "svg" in content_type.lower():
        return "svg"
    return EXTENSIONS.get(extension) or CONTENT_TYPES.get(content_type.split(";")[0].strip().lower())


def previews_for(organization, refs: list[str], run_id: str) -> list[Preview]:
    """Previews of the organization's uploads among `refs`, in their order (at most
    PREVIEWS_PER_PAGE), each with its short-lived signed URL for the run's page."""
    wanted = list(dict.fromkeys(ref for ref in refs if isinstance(ref, str)))[:PREVIEWS_PER_PAGE]
    uploads = {upload.pk: upload for upload in Upload.objects.filter(organization=organization, pk__in=wanted)}
    shown = []
    for ref in wanted:
        upload = uploads.get(ref)
        if upload is None:
            continue
        preview = Preview(ref=ref, name=upload.file_name, content_type=upload.content_type, size=upload.size,
                          sha256=upload.sha256, kind=kind_of(upload.file_name, upload.content_type),
                          url=file_url(organization.id, ref, run_id))
        if preview.kind is not None:
            found = read(upload, preview.kind)
            preview.reason, preview.data = found.get("reason", ""), found
        shown.append(preview)
    return shown


def read(upload: Upload, kind: str) -> dict:
    """{"ok": True, ...what the preview shows} or {"ok": False, "reason": ...}, cached by hash."""
    if kind == "pdf" and not viewer_installed():  # not cached: an `npm ci` later turns it on
        return {"ok": False, "reason": "the PDF viewer is not installed on this server (npm ci); download it"}
    key = f"preview:{CACHE_VERSION}:{upload.organization_id}:{upload.sha256}:{kind}"
    found = cache.get(key)
    if found is None:
        found = _read(upload, kind)
        cache.set(key, found, CACHE_SECONDS)
    return found


@functools.cache
def viewer_installed() -> bool:
    """PDF.js is in node_modules (`npm ci`), where agentprocess/staticfinders.py serves it from."""
    return (Path(settings.BASE_DIR) / "node_modules" / "pdfjs-dist" / "build" / "pdf.min.mjs").is_file()


def _read(upload: Upload, kind: str) -> dict:
    limit = READ_BYTES.get(kind, settings.MAX_UPLOAD_BYTES)
    data = stored_files.read_start(upload.file.name, limit + 1)
    if data is None:
        return {"ok": False, "reason": "the stored file cannot be read"}
    if kind == "svg":
        return {"ok": False, "reason": "SVG pictures are not shown here (they can carry scripts); download it"}
    if kind == "pdf":
        # PDF.js reads the document in the browser, running none of its scripts; here only: is it a
        # PDF (an HTML page renamed .pdf is not), and does it carry scripts or launch actions (then it
        # is only downloaded, and opened where the person chooses)?
        if b"%PDF-" not in data[:PDF_MAGIC_WITHIN]:
            return {"ok": False, "reason": "the file is not a PDF"}
        if PDF_ACTIVE.search(PDF_NAME_ESCAPE.sub(lambda match: bytes([int(match[1], 16)]), data)):
            return {"ok": False, "reason": "the PDF carries scripts or actions, so it is not shown here; download it"}
        return {"ok": True}
    if len(data) > limit and kind not in READ_BYTES:
        return {"ok": False, "reason": "the file is too large to preview"}
    return parse(kind, data[:limit])


def parse(kind: str, data: bytes) -> dict:
    """The child's answer for these bytes; unavailable when it failed, ran out of time or died."""
    try:
        done = subprocess.run([sys.executable, "-I", str(PARSER), kind], input=data, capture_output=True,
                              timeout=WALL_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return {"ok": False, "reason": "reading the file took too long"}
    except OSError:
        return {"ok": False, "reason": "the file could not be read"}
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = None
    if done.returncode != 0 or not isinstance(answer, dict) or "ok" not in answer:
        return {"ok": False, "reason": "reading the file failed"}
    return answer
