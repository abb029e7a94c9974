"""The dashboard's charts, drawn on the server as SVG (no script: the pages' CSP allows none inline,
and a chart must not need one). Each chart is an image with a title and a description; its numbers
are also in a table under it, which is what a screen reader or a phone's narrow screen reads.
Every piece of text is escaped. Sizes are in the viewBox; the style sheet scales the picture."""

import html

from processes.maps import FONT_FAMILY

TEAL, AMBER, GREY, RED, INK, MUTED = "#0E5E59", "#A15500", "#8F8C83", "#B42318", "#1C1D1A", "#57554E"
SERIES = (("started", "Started", TEAL), ("ended", "Finished", AMBER), ("cancelled", "Cancelled", GREY),
          ("failed", "Failed", RED))


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _svg(width: int, height: int, title: str, description: str, body: str, css_class: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css_class}" role="img" '
            f'viewBox="0 0 {width} {height}" font-family="{FONT_FAMILY}" aria-label="{_e(title)}">'
            f"<title>{_e(title)}</title><desc>{_e(description)}</desc>{body}</svg>")


def timeline(buckets: list[dict], *, by: str) -> str:
    """Per bucket: a bar of runs started, beside it a stacked bar of runs finished, cancelled, failed."""
    width, height, left, bottom, top = 420, 180, 30, 26, 12
    highest = max([max(b["started"], b["ended"] + b["cancelled"] + b["failed"]) for b in buckets] + [1])
    plot_w, plot_h = width - left - 8, height - bottom - top
    slot = plot_w / max(len(buckets), 1)
    bar = max(1.0, min(14.0, slot * 0.38))
    scale = plot_h / highest
    parts = [f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 8}" y2="{top + plot_h}" stroke="{GREY}"/>',
             f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" font-size="11" fill="{MUTED}">{highest}</text>',
             f'<text x="{left - 6}" y="{top + plot_h}" text-anchor="end" font-size="11" fill="{MUTED}">0</text>']
    for index, b in enumerate(buckets):
        x = left + index * slot + slot / 2
        h = b["started"] * scale
        parts.append(f'<rect x="{_n(x - bar)}" y="{_n(top + plot_h - h)}" width="{_n(bar)}" height="{_n(h)}" '
                     f'fill="{TEAL}"><title>{_e(b["from"])}: {b["started"]} started</title></rect>')
        y = top + plot_h
        for key, label, colour in SERIES[1:]:
            h = b[key] * scale
            if h:
                y -= h
                parts.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(bar)}" height="{_n(h)}" fill="{colour}">'
                             f'<title>{_e(b["from"])}: {b[key]} {label.lower()}</title></rect>')
    for index in sorted({0, len(buckets) - 1}):
        if buckets:
            x = left + index * slot + slot / 2
            anchor = "start" if index == 0 else "end"
            parts.append(f'<text x="{_n(x - bar if index == 0 else x + bar)}" y="{height - 8}" '
                         f'text-anchor="{anchor}" font-size="11" fill="{MUTED}">{_e(buckets[index]["from"])}</text>')
    total = {key: sum(b[key] for b in buckets) for key, _l, _c in SERIES}
    description = (f"Per {by}: {total['started']} runs started, {total['ended']} finished, "
                   f"{total['cancelled']} cancelled and {total['failed']} failed in the period.")
    return _svg(width, height, "Runs started and finished", description, "".join(parts), "chart-timeline")


def bars(rows: list[tuple[str, int, str]], *, title: str, description: str, colour: str = TEAL) -> str:
    """Horizontal bars: (label, value, value as printed) each, labels above their bars."""
    width, row_h = 420, 40
    height = max(row_h * len(rows), row_h) + 4
    highest = max([value for _l, value, _t in rows] + [1])
    parts = []
    for index, (label, value, text) in enumerate(rows):
        y = index * row_h + 4
        w = max(2.0, (width - 60) * value / highest) if value else 0
        parts.append(f'<text x="0" y="{y + 12}" font-size="13" fill="{INK}">{_e(label)}</text>')
        if w:
            parts.append(f'<rect x="0" y="{y + 18}" width="{_n(w)}" height="14" rx="3" fill="{colour}"/>')
        parts.append(f'<text x="{_n(w + 8)}" y="{y + 30}" font-size="13" font-weight="600" '
                     f'fill="{INK}">{_e(text)}</text>')
    return _svg(width, height, title, description, "".join(parts), "chart-bars")


def histogram(columns: list[dict], *, median_text: str, p90_text: str) -> str:
    """End-to-end times: a column per range, its count above it, its range below."""
    width, height, bottom, top = 420, 190, 44, 18
    highest = max([c["runs"] for c in columns] + [1])
    slot = width / max(len(columns), 1)
    plot_h = height - bottom - top
    parts = [f'<line x1="0" y1="{top + plot_h}" x2="{width}" y2="{top + plot_h}" stroke="{GREY}"/>']
    for index, column in enumerate(columns):
        x = index * slot
        h = plot_h * column["runs"] / highest
        parts.append(f'<rect x="{_n(x + slot * 0.15)}" y="{_n(top + plot_h - h)}" width="{_n(slot * 0.7)}" '
                     f'height="{_n(h)}" fill="{AMBER}"/>')
        parts.append(f'<text x="{_n(x + slot / 2)}" y="{_n(top + plot_h - h - 4)}" text-anchor="middle" '
                     f'font-size="12" font-weight="600" fill="{INK}">{column["runs"]}</text>')
        words = column["label"].split(" ", 1)
        for line, word in enumerate(words):
            parts.append(f'<text x="{_n(x + slot / 2)}" y="{top + plot_h + 16 + line * 13}" text-anchor="middle" '
                         f'font-size="11" fill="{MUTED}">{_e(word)}</text>')
    runs = sum(c["runs"] for c in columns)
    description = f"{runs} runs finished; half took at most {median_text}, nine in ten at most {p90_text}."
    return _svg(width, height, "How long runs took from start to finish", description, "".join(parts),
                "chart-histogram")


def sparkline(counts: list[int], *, name: str) -> str:
    """Runs started per day: a line, small enough for a list row."""
    width, height = 120, 28
    highest = max(counts + [1])
    step = width / max(len(counts) - 1, 1)
    points = " ".join(f"{_n(i * step)},{_n(height - 2 - (height - 4) * c / highest)}" for i, c in enumerate(counts))
    total = sum(counts)
    body = f'<polyline points="{points}" fill="none" stroke="{TEAL}" stroke-width="1.5"/>'
    return _svg(width, height, f"{name}: {total} runs started in {len(counts)} days",
                f"Runs started per day, at most {highest} on one day.", body, "sparkline")
