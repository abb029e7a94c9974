"""Template filters of the inbox. Every one returns plain text, so auto-escaping applies."""

import datetime as dt

from django import template
from django.utils import formats, timezone

from kernel import jsonio
from processes.fields import is_number
from processes.maps import humanize as humanize_id
from processes.presentation import Column, FieldFacts
from workqueue.presenting import amount_text, parse_iso

register = template.Library()


@register.filter
def structured(value) -> bool:
    return isinstance(value, (dict, list))


@register.filter
def pretty(value) -> str:
    """A value as the person reads it: text as is, yes/no, numbers with the locale's separators and
    every decimal exactly as sent (never rounded), JSON for the rest."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if value is None:
        return "—"
    if is_number(value):
        return formats.number_format(value, force_grouping=True)
    try:
        if isinstance(value, (dict, list)):
            return jsonio.dumps(value, indent=2, ensure_ascii=False)
        return jsonio.dumps(value)
    except RecursionError:
        # Stored before arguments were limited to 64 levels: the page still renders (issue 13).
        return "(nested too deeply to show here)"


@register.filter
def shown(value, facts) -> str:
    """A field's value as people read it: an amount with its currency ("USD 12,500.50") when
    admin declared one for the field, else as `pretty` shows it."""
    amount = amount_text(value, facts if isinstance(facts, FieldFacts) else None)
    return pretty(value) if amount is None else amount


@register.filter
def humanize(value) -> str:
    return humanize_id(value) if value else ""


@register.filter
def is_rows(value) -> bool:
    """A list of flat objects (expense lines): shown as a table, not as JSON."""
    return (isinstance(value, list) and bool(value) and len(value) <= 200
            and all(isinstance(row, dict) and all(not isinstance(v, dict | list) for v in row.values()) for row in value))


@register.filter
def table_columns(rows, facts) -> list[Column]:
    """The columns of a table of rows: admin's, in their order, for the keys the rows have, then
    any other key (headed by its name in words)."""
    keys = list(dict.fromkeys(key for row in rows for key in row))
    declared = [column for column in (facts.columns if isinstance(facts, FieldFacts) else ()) if column.name in keys]
    named = {column.name for column in declared}
    return declared + [Column(name=key) for key in keys if key not in named]


@register.filter
def cell(row, column) -> str:
    if not isinstance(row, dict) or column.name not in row:
        return ""
    return shown(row[column.name], FieldFacts(currency=column.currency))


@register.filter
def when(value) -> str:
    """An RFC 3339 string or a datetime in the person's time zone: 'YYYY-MM-DD HH:MM CEST'
    (workqueue/middleware.py chooses the zone; UTC when none is known)."""
    moment = parse_iso(value) if isinstance(value, str) else value
    if moment is None:
        return value or ""
    local = moment.astimezone(timezone.get_current_timezone())
    return local.strftime("%Y-%m-%d %H:%M ") + (local.tzname() or "UTC")


@register.filter
def utc(value) -> str:
    """The same moment in UTC, for the tooltip beside a local time."""
    moment = parse_iso(value) if isinstance(value, str) else value
    if moment is None:
        return ""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


@register.filter
def filesize(size) -> str:
    """A file's size for people: 980 bytes, 12.4 KB, 3.1 MB."""
    if not isinstance(size, int):
        return ""
    if size < 1000:
        return f"{size} bytes"
    for unit in ("KB", "MB", "GB"):
        size /= 1000
        if size < 1000 or unit == "GB":
            return f"{size:.1f} {unit}"
    return ""


@register.filter
def file_kind(content_type) -> str:
    """'PDF', 'PNG image', 'Spreadsheet' … from a content type (the type itself when unknown)."""
    return FILE_KINDS.get((content_type or "").split(";")[0].strip().lower(), content_type or "file")


FILE_KINDS = {
    "application/pdf": "PDF", "image/png": "PNG image", "image/jpeg": "JPEG image", "image/gif": "GIF image",
    "image/webp": "WebP image", "text/plain": "Text", "text/csv": "CSV", "application/zip": "ZIP archive",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "Excel spreadsheet",
    "application/vnd.ms-excel": "Excel spreadsheet",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "Word document",
    "application/msword": "Word document", "application/json": "JSON", "application/octet-stream": "File",
}


@register.filter
def iso(value) -> str:
    moment = parse_iso(value) if isinstance(value, str) else value
    if moment is None:
        return ""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@register.filter
def get(mapping, key):
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def contains(container, value) -> bool:
    try:
        return value in container
    except TypeError:
        return False


@register.simple_tag(takes_context=True)
def query(context, **changes) -> str:
    """The current query string with some parameters replaced (None or '' drops one)."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        params.pop(key, None)
        if value not in (None, ""):
            params[key] = value
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter
def http_url(value) -> bool:
    """Only http(s) references become links; anything else is shown as text."""
    return isinstance(value, str) and value.lower().startswith(("http://", "https://"))


@register.filter
def short(value, length=12) -> str:
    return value[: int(length)] if isinstance(value, str) else ""
