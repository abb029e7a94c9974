"""Evidence previews on the server (issue 26): each kind read through the storage API on every
backend, the hostile files ending as "preview unavailable" with the reader's memory bounded, the
answers cached by hash, and the headers the viewer and the files are served with."""

import base64
import resource

import pytest

from tests.support import evidence_files as made
from tests.test_file_storage import backend, make_backend  # noqa: F401 - fixtures: one test per FILE_STORAGE

PASSWORD = "fin-pass-12345"
PROCESS = """---
name: invoice-approval
description: An agent reads an invoice; finance approves.
inputs:
  vendorName: string
steps:
  - id: extract
    agent: Read the invoice.
    output:
      total: number
    evidence: [file]
  - id: approve
    person: finance
    approve: Approve when the total matches the invoice.
  - id: done
    finish: paid
---
"""
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
FILES = [
    ("invoice.pdf", "application/pdf", made.pdf()),
    ("photo.png", "image/png", made.png()),
    ("lines.csv", "text/csv", made.csv_bytes(57)),
    ("centres.xlsx", XLSX, made.xlsx(42)),
    ("notes.md", "text/markdown", b"# Checked\n\nThe **total** matches.\n\n<script>alert(1)</script>\n"),
    ("extracted.json", "application/json", b'{"vendor": "Acme", "lines": [1, 2]}'),
    ("log.txt", "text/plain", b"read 3 pages\n"),
    ("archive.zip", "application/zip", b"PK\x05\x06" + b"\0" * 18),
]
HOSTILE = [
    ("statement.pdf", "application/pdf", made.pdf_with_javascript(), "the PDF carries scripts"),
    ("logo.svg", "image/svg+xml", made.svg_with_script(), "SVG pictures are not shown here"),
    ("invoice.pdf", "application/pdf", made.html_named_pdf(), "the file is not a PDF"),
    ("ledger.xlsx", XLSX, made.zip_bomb_xlsx(), "the workbook unpacks to too much"),
    ("scan.png", "image/png", made.huge_png(), "the picture is too large to show (20000 x 20000 pixels)"),
    ("broken.xlsx", XLSX, b"PK\x03\x04 not really a zip", "not an .xlsx file"),
    ("deep.json", "application/json", b"[" * 100_000, "not valid JSON"),
]


@pytest.fixture
def approval(publish, make_person, agent):
    publish(PROCESS, {"finance": "finance"})
    make_person("fin@example.com", groups=["finance"], password=PASSWORD)

    def make(files) -> tuple[str, str, list[str]]:
        run_id = agent.ok("start_run", process="invoice-approval", inputs={"vendorName": "Acme"})["run"]["id"]
        refs = [agent.ok("upload", fileName=name, contentType=kind, contentBase64=base64.b64encode(data).decode())["id"]
                for name, kind, data, *_ in files]
        token = agent.ok("claim", runId=run_id, stepId="extract")["token"]
        view = agent.ok("submit", token=token, output={"total": 125000}, summary="Read.",
                        evidence=[{"kind": "file", "ref": ref} for ref in refs])
        return run_id, view["workItems"][0]["id"], refs

    return make


def signed_in(client):
    assert client.login(username="fin@example.com", password=PASSWORD)
    return client


def test_every_kind_previews_on_every_storage_backend(backend, approval, client, settings):  # noqa: F811
    from django.core.cache import cache

    cache.clear()
    run_id, item, refs = approval(FILES)
    page = signed_in(client).get(f"/work/{item}")
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('class="preview"') == len(FILES)
    assert 'sandbox="allow-scripts"' in html and 'data-pdf-src="http' in html  # the PDF's viewer
    assert f"/files/{refs[1]}?t=" in html and 'width="640" height="360"' in html  # the picture, checked
    assert "<th scope=\"col\">sku</th>" in html and 'data-row-count="57"' in html
    assert "<th scope=\"col\">Cost centre</th>" in html and 'data-row-count="42"' in html
    assert "Sheet “Lines”: 42 rows, the first 20 shown." in html
    assert "<h4>Checked</h4>" in html and "<strong>total</strong>" in html and "<script>alert" not in html
    assert "&quot;vendor&quot;: &quot;Acme&quot;," in html  # pretty JSON, escaped
    assert "read 3 pages" in html
    assert "No preview for this type of file (application/zip)." in html
    assert "data-preview-unavailable>" not in html  # (the PDF viewer's own note stays hidden unless it fails)
    # The run page shows the same previews.
    run_page = client.get(f"/runs/{run_id}").content.decode()
    assert run_page.count('class="preview"') == len(FILES)


def test_hostile_files_end_as_preview_unavailable_with_memory_bounded(approval, client):
    from django.core.cache import cache

    cache.clear()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _run_id, item, refs = approval(HOSTILE)
    page = signed_in(client).get(f"/work/{item}")
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count("Preview unavailable:") == len(HOSTILE)
    for _name, _kind, _data, reason in HOSTILE:
        assert f"Preview unavailable: {reason}" in html, reason
    assert "<iframe" not in html and "<img" not in html
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 150, f"the server grew by {grown_mb:.0f} MB"
    # Each reader's own peak (RUSAGE_CHILDREN would be the largest child the test process ever had).
    peaks = readers_peak_mb(refs)
    assert set(peaks) == {"ledger.xlsx", "scan.png", "broken.xlsx", "deep.json"}  # the ones read in a child
    assert max(peaks.values()) < 384, peaks  # the reader's own limit


def readers_peak_mb(refs) -> dict[str, float]:
    """The child reader's peak memory (MB) per file name, from the cached answers of these uploads."""
    from django.core.cache import cache

    from runs.models import Upload
    from runs.services import previews

    peaks = {}
    for upload in Upload.objects.filter(pk__in=refs):
        kind = previews.kind_of(upload.file_name, upload.content_type)
        answer = cache.get(f"preview:{previews.CACHE_VERSION}:{upload.organization_id}:{upload.sha256}:{kind}")
        if answer and "peak_kb" in answer:
            peaks[upload.file_name] = answer["peak_kb"] / 1024
    return peaks


def test_a_reader_that_runs_out_of_memory_or_time_ends_as_unavailable():
    from runs.services import preview_parser, previews

    # A CSV of one cell of 200 MB cannot be held under the reader's 384 MB: it stops, the server answers.
    answer = previews.parse("text", b"a" * (300 * 1024 * 1024))
    assert answer["ok"] is False and answer["reason"] in (
        "the file needs too much memory to read", "reading the file failed")
    assert preview_parser.MEMORY_BYTES == 384 * 1024 * 1024


def test_answers_are_cached_by_the_files_hash(approval, client):
    from django.core.cache import cache

    from runs.models import Upload
    from runs.services import previews

    cache.clear()
    _run_id, item, refs = approval(FILES[2:3])
    signed_in(client).get(f"/work/{item}")
    upload = Upload.objects.get(pk=refs[0])
    key = f"preview:{previews.CACHE_VERSION}:{upload.organization_id}:{upload.sha256}:csv"
    assert cache.get(key)["row_count"] == 57


def test_the_pdf_viewer_is_a_sandboxed_page_with_its_own_policy(client):
    response = client.get("/files/viewer/pdf")
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "sandbox allow-scripts" in policy and "allow-same-origin" not in policy
    assert "script-src 'self'" in policy and "unsafe" not in policy and "frame-ancestors 'self'" in policy
    assert response["X-Frame-Options"] == "SAMEORIGIN" and response["X-Content-Type-Options"] == "nosniff"
    assert "<script>" not in response.content.decode()  # only the module from /static/


def test_pdfjs_is_served_as_static_files_readable_by_the_sandboxed_viewer(client):
    """WhiteNoise serves PDF.js from node_modules (`npm ci`) through the project's finder, with the
    header that lets the opaque-origin frame load it; its scripting engine is not served."""
    from django.contrib.staticfiles import finders

    for path in ("pdfjs/build/pdf.min.mjs", "pdfjs/build/pdf.worker.min.mjs", "workqueue/pdf-viewer.mjs"):
        response = client.get(f"/static/{path}")
        assert response.status_code == 200, path
        assert response["Access-Control-Allow-Origin"] == "*", path
        assert response["Content-Type"].startswith("text/javascript"), path
    assert finders.find("pdfjs/wasm/quickjs-eval.wasm") is None
    assert finders.find("pdfjs/build/pdf.sandbox.min.mjs") is None


def test_a_preview_streams_through_the_server_even_with_presigned_urls(make_backend, approval, client, settings):
    from tests.test_file_storage import local_path

    make_backend("s3").use()
    settings.S3_PRESIGNED_URLS = True
    _run_id, item, refs = approval(FILES[:1])
    html = signed_in(client).get(f"/work/{item}").content.decode()
    url = html.split('data-pdf-src="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    streamed = client.get(local_path(url))
    assert streamed.status_code == 200 and b"".join(streamed.streaming_content) == FILES[0][2]
    assert streamed["X-Content-Type-Options"] == "nosniff"
    assert streamed["Content-Disposition"].startswith("inline")
    assert client.get(local_path(url.replace("&preview=1", ""))).status_code == 302  # a download: the bucket
