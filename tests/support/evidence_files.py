"""Files of evidence made in the tests (issue 26): a real multi-page PDF (fpdf2), a picture
(Pillow), a CSV and an .xlsx (openpyxl), and the hostile ones: a PDF with JavaScript, an SVG with a
script, an HTML page named .pdf, a ZIP bomb named .xlsx and a picture of 20,000 x 20,000 pixels."""

import csv
import io
import struct
import zipfile
import zlib

PAGE_TEXTS = ["Invoice 4711 from Acme Steel GmbH", "Line items and the total due EUR 125,000.00",
              "Payment terms: 30 days net"]
CSV_COLUMNS = ["sku", "description", "quantity", "unit_price"]


def pdf(pages: list[str] = PAGE_TEXTS, filler_pages: int = 0) -> bytes:
    from fpdf import FPDF

    document = FPDF(format="A4")
    document.set_font("helvetica", size=16)
    for number, text in enumerate([*pages, *(f"Appendix page {n}" for n in range(filler_pages))], start=1):
        document.add_page()
        document.cell(text=f"Page {number}: {text}")
        document.ln(12)
        document.set_font("helvetica", size=10)
        for line in range(30):
            document.cell(text=f"Row {line + 1} of page {number}: steel beams, grade S355, delivered to site.")
            document.ln(6)
        document.set_font("helvetica", size=16)
    return bytes(document.output())


def png(width: int = 640, height: int = 360) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, height), (14, 94, 89))
    ImageDraw.Draw(image).rectangle((40, 40, width - 40, height - 40), outline=(255, 255, 255), width=6)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def csv_bytes(rows: int = 57) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for n in range(rows):
        writer.writerow([f"SKU-{n:04d}", f"Steel beam {n}", n % 7 + 1, f"{100 + n}.50"])
    return out.getvalue().encode()


def xlsx(rows: int = 42) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Lines"
    sheet.append(["Account", "Cost centre", "Amount"])
    for n in range(rows):
        sheet.append([f"4{n:03d}", f"CC-{n % 5}", 1000 + n])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def pdf_with_javascript() -> bytes:
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /OpenAction 4 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        b"<< /Type /Action /S /JavaScript /JS (app.alert('pdf script ran'); console.error('pdf script ran');) >>",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def svg_with_script() -> bytes:
    return (b'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100" onload="alert(\'svg onload\')">'
            b'<script>alert("svg script ran"); console.error("svg script ran");</script>'
            b'<rect width="100" height="100" fill="red"/></svg>')


def html_named_pdf() -> bytes:
    return b"<!doctype html><html><body><script>alert('html ran'); console.error('html ran')</script></body></html>"


def zip_bomb_xlsx(unpacked_mb: int = 200) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
        with archive.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as entry:
            block = b"\0" * (1024 * 1024)
            for _ in range(unpacked_mb):
                entry.write(block)
    return out.getvalue()


def huge_png(side: int = 20_000) -> bytes:
    """A 1-bit grey PNG of side x side pixels (400 megapixels), a few hundred KB packed."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    packer = zlib.compressobj(9)
    row = b"\0" * (1 + (side + 7) // 8)
    body = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")
