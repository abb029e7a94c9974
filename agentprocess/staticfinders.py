"""PDF.js (`pdfjs-dist`, installed by `npm ci` at the version package-lock.json pins) served as this
server's own static files under /static/pdfjs/: only the parts the evidence viewer loads (the
library, its worker, fonts, character maps and image decoders), never its scripting sandbox.

Found by `collectstatic` (deployments) and by WhiteNoise's finders (development) alike."""

from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import Warning
from django.core.files.storage import FileSystemStorage

PREFIX = "pdfjs"
SERVED = ("build/pdf.min.mjs", "build/pdf.worker.min.mjs", "LICENSE")
SERVED_FOLDERS = ("standard_fonts", "cmaps", "wasm")
LEFT_OUT = ("quickjs",)  # the PDF scripting engine: documents' scripts never run here


def pdfjs_root() -> Path:
    return Path(settings.BASE_DIR) / "node_modules" / "pdfjs-dist"


def served_files() -> list[str]:
    """The package's files served, relative to its folder."""
    root = pdfjs_root()
    if not root.is_dir():
        return []
    names = [name for name in SERVED if (root / name).is_file()]
    for folder in SERVED_FOLDERS:
        for path in sorted((root / folder).glob("*")):
            if path.is_file() and not any(word in path.name for word in LEFT_OUT):
                names.append(f"{folder}/{path.name}")
    return names


class PdfjsFinder(BaseFinder):
    def __init__(self, *args, **kwargs):
        self.storage = FileSystemStorage(location=pdfjs_root())
        self.storage.prefix = PREFIX

    def check(self, **kwargs):
        if not (pdfjs_root() / SERVED[0]).is_file():
            return [Warning(f"PDF.js is not installed ({pdfjs_root()} missing): run `npm ci`; PDF evidence "
                            "shows as a download until it is", id="agentprocess.W010")]
        return []

    def find(self, path, find_all=False, **kwargs):
        prefix = PREFIX + "/"
        if not path.startswith(prefix) or path[len(prefix):] not in served_files():
            return []
        found = str(pdfjs_root() / path[len(prefix):])
        return [found] if find_all else found

    def list(self, ignore_patterns):
        for name in served_files():
            yield name, self.storage
