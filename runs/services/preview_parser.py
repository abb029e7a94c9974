"""Reads an uploaded file for its preview, in a child process of its own (runs/services/previews.py
starts it): `python -I preview_parser.py KIND` with the file's bytes on standard input, one JSON
object on standard output. Nothing of the server is imported here.

The child limits itself before it reads a byte (address space, CPU seconds, no files written), so a
crafted file (a ZIP bomb as .xlsx, a huge image, a pathological CSV) ends this process, never the
web worker that started it; the parent also kills it past a wall-clock deadline.
"""

import csv
import io
import json
import resource
import sys
import zipfile

MEMORY_BYTES = 384 * 1024 * 1024
CPU_SECONDS = 4
ROWS = 20  # shown
COLUMNS = 30
CELL_CHARS = 200
COUNT_ROWS = 1_000_000  # counted at most
TEXT_CHARS = 64 * 1024
IMAGE_PIXELS = 40_000_000  # 40 megapixels: a phone photo passes, 20,000 x 20,000 does not
IMAGE_SIDE = 16_384
IMAGE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}
XLSX_UNPACKED_BYTES = 64 * 1024 * 1024
XLSX_ENTRIES = 2_000
XLSX_RATIO = 200  # an entry unpacking to more than this times its packed size is a bomb


class Unavailable(Exception):
    pass


def limit_myself() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def cell(value) -> str:
    if value is None:
        return ""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def table(rows) -> dict:
    """Column names from the first row, the next ROWS rows, and how many rows follow the header."""
    header, shown, count = None, [], 0
    for row in rows:
        if header is None:
            header = [cell(value) for value in list(row)[:COLUMNS]]
            continue
        count += 1
        if len(shown) < ROWS:
            shown.append([cell(value) for value in list(row)[:COLUMNS]])
        if count >= COUNT_ROWS:
            break
    if header is None:
        raise Unavailable("the table is empty")
    # Spreadsheets pad rows to the columns asked for: the table ends at its last column with a value.
    width = max([0, *(index + 1 for row in [header, *shown] for index, value in enumerate(row) if value)])
    header = (header + [""] * width)[:width]
    shown = [(row + [""] * width)[:width] for row in shown]
    return {"columns": header, "rows": shown, "row_count": count, "counted_all": count < COUNT_ROWS}


def decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def read_csv(data: bytes) -> dict:
    if b"\0" in data[:8192]:
        raise Unavailable("not a text file")
    text = decode(data)
    try:
        dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    csv.field_size_limit(1024 * 1024)
    try:
        return table(csv.reader(io.StringIO(text, newline=""), dialect))
    except csv.Error as error:
        raise Unavailable(f"not a readable CSV file ({error})") from None


def read_xlsx(data: bytes) -> dict:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise Unavailable("not an .xlsx file") from None
    entries = archive.infolist()
    if len(entries) > XLSX_ENTRIES:
        raise Unavailable("too many parts in the workbook")
    if sum(entry.file_size for entry in entries) > XLSX_UNPACKED_BYTES:
        raise Unavailable("the workbook unpacks to too much")
    if any(entry.file_size > XLSX_RATIO * max(entry.compress_size, 1024) for entry in entries):
        raise Unavailable("the workbook is packed suspiciously tight")
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
        sheet = book.worksheets[0]
        result = table(sheet.iter_rows(max_col=COLUMNS, values_only=True))
        result["sheet"] = sheet.title
        result["sheets"] = len(book.worksheets)
        book.close()
    except Unavailable:
        raise
    except Exception as error:  # openpyxl raises many kinds for malformed parts
        raise Unavailable(f"not a readable .xlsx file ({type(error).__name__})") from None
    return result


def read_image(data: bytes) -> dict:
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = None  # the size is checked below, before anything is decoded
    try:
        with Image.open(io.BytesIO(data)) as image:
            found, (width, height) = image.format, image.size
            if found not in IMAGE_FORMATS:
                raise Unavailable("not a PNG, JPEG, WebP or GIF picture")
            if width * height > IMAGE_PIXELS or max(width, height) > IMAGE_SIDE:
                raise Unavailable(f"the picture is too large to show ({width} x {height} pixels)")
            image.verify()
    except Unavailable:
        raise
    except Exception as error:  # Pillow's errors for a broken or hostile picture
        raise Unavailable(f"not a readable picture ({type(error).__name__})") from None
    return {"width": width, "height": height, "type": IMAGE_FORMATS[found]}


def read_text(data: bytes) -> dict:
    if b"\0" in data[:8192]:
        raise Unavailable("not a text file")
    text = decode(data)
    return {"text": text[:TEXT_CHARS], "cut": len(text) > TEXT_CHARS}


def read_json(data: bytes) -> dict:
    try:
        value = json.loads(decode(data))
    except (ValueError, RecursionError):
        raise Unavailable("not valid JSON") from None
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False)
    except RecursionError:
        raise Unavailable("nested too deeply to show") from None
    return {"text": text[:TEXT_CHARS], "cut": len(text) > TEXT_CHARS}


READERS = {"csv": read_csv, "xlsx": read_xlsx, "image": read_image, "text": read_text, "markdown": read_text,
           "json": read_json}


def peak_kb() -> int:
    """This process's peak resident memory. Linux keeps ru_maxrss across exec (it would count the
    web worker this child was forked from); VmHWM belongs to this program's own address space."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> int:
    limit_myself()
    kind = sys.argv[1]
    data = sys.stdin.buffer.read()
    try:
        answer = {"ok": True, **READERS[kind](data)}
    except Unavailable as reason:
        answer = {"ok": False, "reason": str(reason)}
    except MemoryError:
        answer = {"ok": False, "reason": "the file needs too much memory to read"}
    # The reader's own high-water mark, so the server (and its tests) can see what a file cost.
    answer["peak_kb"] = peak_kb()
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
