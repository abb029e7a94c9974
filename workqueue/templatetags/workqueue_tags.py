"""Template filters of the inbox. Every one returns plain text, so auto-escaping applies."""

import datetime as dt
import re

from django import template

from kernel import jsonio
from processes.maps import humanize as humanize_id
from workqueue.presenting import parse_iso

register = template.Library()


@register.filter
def structured(value) -> bool:
    return isinstance(value, (dict, list))


@register.filter
def pretty(value) -> str:
    """A value as the person reads it: text as is, yes/no, exact numbers, JSON for the rest."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if value is None:
        return "—"
    try:
        if isinstance(value, (dict, list)):
            return jsonio.dumps(value, indent=2, ensure_ascii=False)
        return jsonio.dumps(value)
    except RecursionError:
        # Stored before arguments were limited to 64 levels: the page still renders (issue 13).
        return "(nested too deeply to show here)"


@register.filter
def humanize(value) -> str:
    return humanize_id(value) if value else ""


@register.filter
def field_label(name) -> str:
    """A field's key as people read it: `vendorName` and `vendor_name` read "Vendor name"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(name or ""))
    words = re.sub(r"[_-]+", " ", spaced).strip().lower()
    return words[:1].upper() + words[1:]


@register.filter
def when(value) -> str:
    """An RFC 3339 string or a datetime as 'YYYY-MM-DD HH:MM UTC'."""
    moment = parse_iso(value) if isinstance(value, str) else value
    if moment is None:
        return value or ""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


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
