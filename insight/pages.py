"""The dashboard as people read it (issue 27, points 1-3): the figures of insight/figures.py in
plain words, each chart an SVG drawn here with its numbers in a table under a disclosure, the
heatmap on the version's own map. Nothing on these pages needs a script."""

import datetime as dt
from urllib.parse import urlencode

from django.shortcuts import render
from django.utils.safestring import mark_safe

from kernel import clock
from processes.maps import humanize

from . import alerts, charts, figures, heatmap
from .words import duration, percent

SPARK_DAYS = 30
PERIOD_CHOICES = ((7, "Last 7 days"), (30, "Last 30 days"), (90, "Last 90 days"))


def index_page(request, identity):
    processes = figures.processes_for(identity)
    until = dt.datetime.combine(clock.now().astimezone(dt.UTC).date() + dt.timedelta(days=1), dt.time(), dt.UTC)
    counts = figures.started_per_day(identity, [p.name for p in processes], until - dt.timedelta(days=SPARK_DAYS),
                                     until)
    rows = [{"name": p.name, "description": p.description, "started": sum(counts[p.name]),
             "spark": mark_safe(charts.sparkline(counts[p.name], name=p.name))} for p in processes]
    return render(request, "insight/index.html", {"rows": rows, "days": SPARK_DAYS})


def bad_filters(request, identity, name, issues):
    return render(request, "workqueue/problem.html", {
        "title": "These filters cannot be used", "issues": issues,
        "message": "Change the filters in the address, or open the dashboard again from the list."}, status=400)


def _link(name: str, query: dict, **changes) -> str:
    merged = {**query, **changes}
    return f"/insight/{name}/?" + urlencode({k: v for k, v in merged.items() if v not in (None, "")})


def dashboard_page(request, identity, scope, data):
    f = scope.filters
    name = scope.process.name
    query = f.query()
    steps = [{**row, "title": humanize(row["step"]), "waited_median": duration(row["waited"]["median"]),
              "waited_p90": duration(row["waited"]["p90"]), "worked_median": duration(row["worked"]["median"]),
              "worked_p90": duration(row["worked"]["p90"]), "overdue_rate": percent(row["overdueRate"]),
              "rework_rate": percent(row["reworkRate"]), "escalation_rate": percent(row["escalationRate"])}
             for row in data["steps"]]
    titles = {row["step"]: row["title"] for row in steps}
    open_rows = sorted(((titles.get(step, humanize(step)), count) for step, count in data["openByStep"].items()),
                       key=lambda r: (-r[1], r[0]))
    open_now = sum(count for _t, count in open_rows)
    workers = data["workers"]
    who = [("Agents", workers["agents"]["completions"], str(workers["agents"]["completions"])),
           ("People", workers["persons"]["completions"], str(workers["persons"]["completions"]))]
    e2e = data["endToEnd"]
    version = scope.process.latest_version
    if f.version:
        version = scope.process.versions.filter(number=f.version).first() or version
    cells = data["heatmap"]["steps"]
    timeline_rows = [{**b, "finished": b["ended"] + b["cancelled"] + b["failed"]} for b in data["timeline"]]
    context = {
        "process": scope.process, "filters": f, "query": query, "data": data, "steps": steps,
        "versions": figures.version_numbers(scope.process), "periods": PERIOD_CHOICES,
        "period_from": f.since.date().isoformat(), "period_to": (f.until - dt.timedelta(days=1)).date().isoformat(),
        "totals": {key: sum(b[key] for b in data["timeline"]) for key in ("started", "ended", "cancelled", "failed")},
        "timeline_svg": mark_safe(charts.timeline(data["timeline"], by=f.by)), "timeline_rows": timeline_rows,
        "open_rows": open_rows, "open_now": open_now,
        "open_svg": mark_safe(charts.bars([(t, n, str(n)) for t, n in open_rows], title="Open runs by the step they wait in",
                                          description=f"{open_now} runs are open now.")) if open_rows else "",
        "who_svg": mark_safe(charts.bars(who, title="Completions by agents and by people",
                                         description=f"Agents completed {who[0][1]} steps, people {who[1][1]}.",
                                         colour=charts.AMBER)),
        "agents": [_worker(row) for row in workers["agents"]["by"]],
        "people": [_worker(row) for row in workers["persons"]["by"]],
        "agents_total": _worker(workers["agents"]), "people_total": _worker(workers["persons"]),
        "e2e": {**e2e, "median_text": duration(e2e["median"]), "p90_text": duration(e2e["p90"])},
        "histogram_svg": mark_safe(charts.histogram(e2e["histogram"], median_text=duration(e2e["median"]),
                                                    p90_text=duration(e2e["p90"]))) if e2e["ended"] else "",
        "slowest": [{**row, "took": duration(row["seconds"])} for row in e2e["slowest"]],
        "heat_figures": [(key, label) for key, (label, _r, _s) in heatmap.FIGURES.items()],
        "heat_label": heatmap.FIGURES[f.heat][0],
        "heat_svg": mark_safe(heatmap.drawing(version.pk, cells)) if version else "",
        "heat_legend": heatmap.legend(data["steps"], f.heat),
        "heat_rows": [(titles.get(step, step), cell["text"]) for step, cell in cells.items()],
        "csv_link": _link(name, query, format="csv"), "json_link": _link(name, query, format="json"),
        "sees_all_names": identity.is_operator,
        "may_set_alerts": identity.is_operator,
        "alert_rules": [{"id": rule.pk, "says": alerts.describe(rule), "firing": rule.firing,
                         "changed_at": rule.changed_at, "now": alerts.shown(rule.figure, rule.value)
                         if rule.evaluated_at else "not checked yet"}
                        for rule in alerts.rules_of(identity.organization, name)],
        "alert_figures": [(key, figure.label, figure.unit) for key, figure in alerts.FIGURES.items()],
        "alert_windows": alerts.WINDOWS,
    }
    return render(request, "insight/dashboard.html", context)


def _worker(row: dict) -> dict:
    return {"name": row.get("name"), "completions": row["completions"], "worked": duration(row["medianWorked"]),
            "took": duration(row["medianTook"])}
