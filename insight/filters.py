"""What a dashboard shows: the filters of its URL (issue 27), parsed once for the pages, the JSON,
the CSV, the command line and the alert rules.

period   7, 30 or 90 (days back from now; default 30), or from/to (dates, YYYY-MM-DD, to inclusive)
version  a version number, or all (default)
mode     live (default) or test
q        business-key search: text in the run's inputs, or its id
by       day or week (the timeline's buckets; default day up to 31 days, else week)
heat     the heatmap's figure: wait (default), work, overdue, rework or count
"""

import datetime as dt
from dataclasses import dataclass

PERIODS = (7, 30, 90)
MAX_DAYS = 366
MODES = ("live", "test")
HEAT_FIGURES = ("wait", "work", "overdue", "rework", "count")


@dataclass(frozen=True)
class Filters:
    since: dt.datetime
    until: dt.datetime  # exclusive
    days: int | None = 30  # None: from/to
    version: int | None = None
    mode: str = "live"
    q: str = ""
    by: str = "day"
    heat: str = "wait"

    def query(self) -> dict:
        """The filters as URL parameters (links, the CSV, the JSON's echo)."""
        out = {"period": str(self.days)} if self.days else {
            "from": self.since.date().isoformat(), "to": (self.until - dt.timedelta(days=1)).date().isoformat()}
        if self.version:
            out["version"] = str(self.version)
        if self.mode != "live":
            out["mode"] = self.mode
        if self.q:
            out["q"] = self.q
        out["by"] = self.by
        if self.heat != "wait":
            out["heat"] = self.heat
        return out


class BadFilter(ValueError):
    def __init__(self, issues: list[str]):
        super().__init__("; ".join(issues))
        self.issues = issues


def _date(text: str, name: str, issues: list) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        issues.append(f"{name}: not a date (YYYY-MM-DD)")
        return None


def parse(params, now: dt.datetime) -> Filters:
    """Filters from a query dict (request.GET or a plain dict); BadFilter with every issue."""
    issues: list[str] = []
    get = lambda name: (params.get(name) or "").strip()  # noqa: E731
    today_end = dt.datetime.combine(now.astimezone(dt.UTC).date() + dt.timedelta(days=1), dt.time(), dt.UTC)
    days: int | None = 30
    since = until = None
    if get("from") or get("to"):
        days = None
        start = _date(get("from"), "from", issues) if get("from") else None
        end = _date(get("to"), "to", issues) if get("to") else now.astimezone(dt.UTC).date()
        if start is None and not issues:
            issues.append("from: required with to")
        if start and end:
            if end < start:
                issues.append("to: before from")
            elif (end - start).days >= MAX_DAYS:
                issues.append(f"from/to: at most {MAX_DAYS} days")
            since = dt.datetime.combine(start, dt.time(), dt.UTC)
            until = dt.datetime.combine(end + dt.timedelta(days=1), dt.time(), dt.UTC)
    else:
        if get("period"):
            if get("period") not in {str(p) for p in PERIODS}:
                issues.append("period: one of 7, 30, 90")
            else:
                days = int(get("period"))
        until = today_end
        since = until - dt.timedelta(days=days)
    version = None
    if get("version") and get("version") != "all":
        if not get("version").isdigit() or int(get("version")) < 1 or len(get("version")) > 9:
            issues.append("version: a version number or all")
        else:
            version = int(get("version"))
    mode = get("mode") or "live"
    if mode not in MODES:
        issues.append("mode: live or test")
    q = get("q")
    if len(q) > 200:
        issues.append("q: at most 200 characters")
    by = get("by")
    if by and by not in ("day", "week"):
        issues.append("by: day or week")
    heat = get("heat") or "wait"
    if heat not in HEAT_FIGURES:
        issues.append(f"heat: one of {', '.join(HEAT_FIGURES)}")
    if issues:
        raise BadFilter(issues)
    by = by or ("day" if (until - since).days <= 31 else "week")
    return Filters(since=since, until=until, days=days, version=version, mode=mode, q=q, by=by, heat=heat)
