"""The heatmap (issue 27, point 2): the version's own map (processes/maps.py) with a heat layer,
each working step coloured by one figure of the dashboard and the figure printed on it."""

from processes.maps import HEAT_COLOURS, Heat, svg_for_version

from .words import duration, percent

LEVELS = len(HEAT_COLOURS)
# figure -> (what the legend calls it, how to read it from a step's row, how to print it)
FIGURES = {
    "wait": ("Median wait", lambda row: row["waited"]["median"], duration),
    "work": ("Median work", lambda row: row["worked"]["median"], duration),
    "overdue": ("Overdue rate", lambda row: row["overdueRate"], percent),
    "rework": ("Rework rate", lambda row: row["reworkRate"], percent),
    "count": ("Times run", lambda row: row["count"], str),
}
DEFAULT = "wait"


def level(value, highest) -> int | None:
    """0..LEVELS-1 by the share of the highest value (the highest is the darkest)."""
    if value is None:
        return None
    if not highest:
        return 0
    return min(LEVELS - 1, int(value * LEVELS / highest))


def cells(steps: list[dict], figure: str) -> dict[str, dict]:
    """step -> {value, level, text} of the figure (value None: no figure in the period)."""
    _label, read, shown = FIGURES[figure]
    values = {row["step"]: read(row) for row in steps}
    highest = max((v for v in values.values() if v is not None), default=0)
    return {step: {"value": value, "level": level(value, highest), "text": shown(value) if value is not None
                   else "no data"} for step, value in values.items()}


def legend(steps: list[dict], figure: str) -> list[dict]:
    """The levels with the range of the figure each stands for, as printed."""
    _label, read, shown = FIGURES[figure]
    highest = max((v for v in (read(row) for row in steps) if v is not None), default=0)
    rows = []
    for index, (fill, _text) in enumerate(HEAT_COLOURS):
        low, high = highest * index / LEVELS, highest * (index + 1) / LEVELS
        low_text = shown(round(low) if figure in ("wait", "work", "count") else low)
        high_text = shown(round(high) if figure in ("wait", "work", "count") else high)
        rows.append({"level": index, "fill": fill, "text": f"{low_text} – {high_text}" if highest else "0"})
    return rows


def drawing(version_id: int, cells_: dict[str, dict], link_prefix: str | None = None) -> str:
    """The version's SVG map with the heat layer."""
    heat = {step: Heat(cell["level"], cell["text"]) for step, cell in cells_.items()}
    return svg_for_version(version_id, states={}, link_prefix=link_prefix, heat=heat)
