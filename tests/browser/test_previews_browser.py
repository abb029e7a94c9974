"""Evidence previews in real Chromium (issue 26): a work item whose evidence is a real three-page
PDF (fpdf2), a picture, a CSV and an .xlsx shows each inline; the PDF viewer (PDF.js in a sandboxed
frame) counts its pages and has the text of page 2 once there; axe finds nothing serious; no
sideways scrolling at 390 px; screenshots at 1280 and 390 px. Hostile files run no script and end as
"preview unavailable", without a 500 and with the server's memory bounded."""

import base64
import resource

import pytest

from tests.support import evidence_files as made

from .conftest import PASSWORD, horizontal_overflow, screenshot, sign_in
from .test_accessibility_browser import BLOCKING, axe_violations, describe

pytestmark = pytest.mark.browser

INVOICE = """---
name: invoice-approval
description: An agent reads an invoice; finance approves the payment.
inputs:
  vendorName: string
steps:
  - id: extract
    agent: Read the invoice and its lines.
    output:
      vendor: string
      total: number
    evidence: [file]
  - id: approve
    person: finance
    approve: Approve the payment when the extracted values match the invoice.
  - id: done
    finish: paid
---

# Invoice approval
"""
PERSON = "ap@example.com"
MEMORY_BOUND_MB = 200  # what the server process may grow by while it previews the hostile files


def work_item_with(agent, publish, make_person, files: list[tuple[str, str, bytes]]) -> str:
    publish(INVOICE, {"finance": "finance"})
    make_person(PERSON, groups=["finance"], password=PASSWORD)
    run_id = agent.ok("start_run", process="invoice-approval", inputs={"vendorName": "Acme Steel GmbH"})["run"]["id"]
    refs = [agent.ok("upload", fileName=name, contentType=kind,
                     contentBase64=base64.b64encode(data).decode())["id"] for name, kind, data in files]
    token = agent.ok("claim", runId=run_id, stepId="extract")["token"]
    view = agent.ok("submit", token=token, output={"vendor": "Acme Steel GmbH", "total": 125000},
                    evidence=[{"kind": "file", "ref": ref} for ref in refs], summary="Read the invoice.")
    return view["workItems"][0]["id"]


def watch(page) -> list[str]:
    """Every dialog opened and every console error, as text (dialogs are dismissed)."""
    seen = []

    def on_dialog(dialog):
        seen.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda message: seen.append(f"console {message.type}: {message.text}")
            if message.type == "error" else None)
    page.on("pageerror", lambda error: seen.append(f"page error: {error}"))
    return seen


def test_a_work_item_shows_its_pdf_picture_csv_and_xlsx_inline(server, new_page, publish, make_person, agent):
    from pathlib import Path

    axe_source = (Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js").read_text()
    item = work_item_with(agent, publish, make_person, [
        ("invoice-4711.pdf", "application/pdf", made.pdf()),
        ("delivery-photo.png", "image/png", made.png()),
        ("lines.csv", "text/csv", made.csv_bytes(57)),
        ("cost-centres.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", made.xlsx(42)),
    ])
    page = new_page()
    problems = watch(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, server, PERSON)
    response = page.goto(f"{server}/work/{item}")
    assert response.status == 200

    pdf = page.locator('[data-preview="pdf"]')
    pdf.locator("iframe.pdf-frame").wait_for(state="visible")
    viewer = page.frame_locator('[data-preview="pdf"] iframe')
    viewer.locator("#page-count").filter(has_text="3").wait_for()
    assert viewer.locator("#page-number").inner_text() == "1"
    assert "Invoice 4711" in viewer.locator(".textLayer").inner_text()
    viewer.locator("#next").click()
    viewer.locator("#page-number").filter(has_text="2").wait_for()
    viewer.locator(".textLayer").filter(has_text="total due EUR 125,000.00").wait_for()
    assert "Invoice 4711" not in viewer.locator(".textLayer").inner_text()  # page 2, not page 1
    zoom = viewer.locator("#zoom").inner_text()
    viewer.locator("#zoom-in").click()
    viewer.locator("#zoom").filter(has_not_text=zoom).wait_for()
    assert pdf.get_attribute("data-pdf-pages") == "3"

    picture = page.locator('[data-preview="image"] img')
    picture.wait_for(state="visible")
    assert page.evaluate("img => img.complete && img.naturalWidth", picture.element_handle()) == 640
    page.locator("[data-enlarge]").click()
    assert page.locator("[data-enlarge]").get_attribute("aria-expanded") == "true"

    csv_preview = page.locator('[data-preview="csv"]')
    assert csv_preview.locator("thead th").all_inner_texts() == made.CSV_COLUMNS
    assert csv_preview.locator("[data-row-count]").get_attribute("data-row-count") == "57"
    assert csv_preview.locator("tbody tr").count() == 20
    assert "57 rows, the first 20 shown" in csv_preview.inner_text()

    sheet = page.locator('[data-preview="xlsx"]')
    assert sheet.locator("thead th").all_inner_texts() == ["Account", "Cost centre", "Amount"]
    assert sheet.locator("[data-row-count]").get_attribute("data-row-count") == "42"
    assert sheet.locator("tbody tr").first.locator("td").all_inner_texts() == ["4000", "CC-0", "1000"]

    # Side by side on a desktop: the preview at the left of the submitted output and the decision.
    preview_box = page.locator(".preview-col").bounding_box()
    decision_box = page.locator(".decide-card").bounding_box()
    output_box = page.locator('[data-step-panel="extract"]').bounding_box()
    assert preview_box["x"] + preview_box["width"] <= decision_box["x"]
    assert preview_box["x"] + preview_box["width"] <= output_box["x"]

    # ] and [ move between the files previewed (never while typing in a field).
    page.locator("#previews-title").click()
    page.keyboard.press("]")
    assert page.evaluate("document.activeElement.dataset.preview") == "pdf"
    page.keyboard.press("]")
    assert page.evaluate("document.activeElement.dataset.preview") == "image"
    page.keyboard.press("[")
    assert page.evaluate("document.activeElement.dataset.preview") == "pdf"
    page.locator("#note").fill("checked [total]")
    assert page.locator("#note").input_value() == "checked [total]"

    violations = axe_violations(page, axe_source)
    blocking = [v for v in violations if v["impact"] in BLOCKING]
    assert not blocking, describe("work item with previews", blocking)
    screenshot(page, "previews-work-item-1280")

    # On a phone: one column, the preview above the decision, nothing wider than the screen.
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(300)
    assert horizontal_overflow(page) == 0
    assert page.locator(".previews").bounding_box()["y"] < page.locator(".decide-card").bounding_box()["y"]
    viewer.locator(".textLayer").wait_for()
    screenshot(page, "previews-work-item-390")
    blocking = [v for v in axe_violations(page, axe_source) if v["impact"] in BLOCKING]
    assert not blocking, describe("work item with previews at 390 px", blocking)

    # The run page previews the same files.
    run_page = page.locator(".crumbs a").nth(1).get_attribute("href")
    assert page.goto(server + run_page).status == 200
    assert page.locator("[data-preview]").count() == 4
    # Chromium draws a frame's animation frames only on screen: the viewer draws once scrolled to.
    page.locator('[data-preview="pdf"] iframe').scroll_into_view_if_needed()
    page.frame_locator('[data-preview="pdf"] iframe').locator("#page-count").filter(has_text="3").wait_for()
    assert problems == []


def test_hostile_files_run_nothing_and_end_as_preview_unavailable(server, new_page, publish, make_person, agent):
    hostile = [
        ("statement.pdf", "application/pdf", made.pdf_with_javascript()),
        ("logo.svg", "image/svg+xml", made.svg_with_script()),
        ("invoice.pdf", "application/pdf", made.html_named_pdf()),
        ("ledger.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", made.zip_bomb_xlsx()),
        ("scan.png", "image/png", made.huge_png()),
    ]
    item = work_item_with(agent, publish, make_person, hostile)
    page = new_page()
    problems = watch(page)
    sign_in(page, server, PERSON)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    response = page.goto(f"{server}/work/{item}")
    assert response.status == 200
    page.wait_for_load_state("networkidle")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024

    articles = page.locator("[data-preview]")
    assert articles.count() == len(hostile)
    for index, (name, _, _) in enumerate(hostile):
        article = articles.nth(index)
        assert name in article.locator(".preview-title").inner_text()
        assert article.locator("[data-preview-unavailable]").is_visible(), name
        assert article.locator("[data-preview-unavailable]").inner_text().startswith("Preview unavailable"), name
        assert article.locator("iframe, img").count() == 0, name
    texts = articles.all_inner_texts()
    assert "the PDF carries scripts" in texts[0]
    assert "SVG pictures are not shown here" in texts[1]
    assert "the file is not a PDF" in texts[2]
    assert "the workbook unpacks to too much" in texts[3]
    assert "the picture is too large to show (20000 x 20000 pixels)" in texts[4]
    assert grown_mb < MEMORY_BOUND_MB, f"the server grew by {grown_mb:.0f} MB"
    # Each child reader's own peak, from its answer (RUSAGE_CHILDREN would be the largest child the
    # test process ever had, a browser or a server of another test included).
    from runs.models import Upload
    from tests.test_previews import readers_peak_mb

    peaks = readers_peak_mb(list(Upload.objects.values_list("pk", flat=True)))
    assert set(peaks) == {"ledger.xlsx", "scan.png"}, peaks
    assert max(peaks.values()) < 384, f"a preview reader used {max(peaks.values()):.0f} MB"

    # Opened directly, each file is still only bytes: sandboxed, never a page of this site.
    for link in page.locator("[data-preview] a[href*='/files/']").all():
        opened = page.request.get(link.get_attribute("href"))
        assert opened.status == 200
        assert opened.headers["x-content-type-options"] == "nosniff"
        assert opened.headers["content-security-policy"].startswith("sandbox")
        assert opened.headers["content-disposition"].startswith("inline")
    page.wait_for_timeout(500)
    assert problems == []
