"""The dashboard's figures as text (issue 27, point 4): JSON and CSV, one place for the page's
?format=json|csv and for `manage.py process_insight`, so both print the same."""

import csv
import io
import json

from django.core.serializers.json import DjangoJSONEncoder

TYPES = {"json": "application/json", "csv": "text/csv; charset=utf-8"}


def render(data: dict, fmt: str) -> str:
    if fmt == "json":
        return json_text(data)
    if fmt == "csv":
        return csv_text(data)
    raise ValueError(f"format: json or csv, not {fmt!r}")


def json_text(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, cls=DjangoJSONEncoder)


def csv_rows(data: dict):
    """The figures as one long table: section, item, figure, value."""
    for day in data["timeline"]:
        for key in ("started", "ended", "cancelled", "failed"):
            yield "timeline", day["from"], key, day[key]
    for step, count in sorted(data["openByStep"].items()):
        yield "open runs", step, "waiting", count
    for row in data["steps"]:
        for key in ("count", "overdue", "overdueRate", "rework", "reworkRate", "escalations", "escalationRate",
                    "leaseExpiries"):
            yield "step", row["step"], key, row[key]
        for key in ("waited", "worked"):
            yield "step", row["step"], f"{key} median seconds", row[key]["median"]
            yield "step", row["step"], f"{key} p90 seconds", row[key]["p90"]
        for key, value in (row.get("check") or {}).items():
            yield "step", row["step"], f"check {key}", value
    for side in ("agents", "persons"):
        block = data["workers"][side]
        yield side, "all", "completions", block["completions"]
        for who in block["by"]:
            name = who["name"] or "other people"
            yield side, name, "completions", who["completions"]
            yield side, name, "median worked seconds", who["medianWorked"]
            yield side, name, "median ready to done seconds", who["medianTook"]
    e2e = data["endToEnd"]
    yield "end to end", "all", "ended runs", e2e["ended"]
    yield "end to end", "all", "median seconds", e2e["median"]
    yield "end to end", "all", "p90 seconds", e2e["p90"]
    for bar in e2e["histogram"]:
        yield "end to end", bar["label"], "runs", bar["runs"]
    for slow in e2e["slowest"]:
        yield "slowest", slow["run"], "seconds", slow["seconds"]


def csv_text(data: dict) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["section", "item", "figure", "value"])
    for section, item, figure, value in csv_rows(data):
        writer.writerow([section, item, figure, "" if value is None else value])
    return buffer.getvalue()
