"""The operators' page (escalations, overdue work) and the audit log download."""

import datetime as dt

from django.http import Http404, StreamingHttpResponse
from django.shortcuts import render

from api.tools import call_tool
from kernel import audit, clock
from processes.definition import definitions_for

from .. import bulk, presenting, selectors
from .plumbing import new_request_id, operator_view, problem


# ---------------------------------------------------------------- operators


@operator_view
def operators(request, identity):
    now = clock.now()
    escalations, escalation_total = selectors.escalations(identity)
    overdue_items, overdue_item_total = selectors.overdue_work_items(identity, now=now)
    overdue_steps, overdue_step_total = selectors.overdue_agent_steps(identity, now=now)
    # Rows named as in the inbox: each run's business key read with its own version's inputs.
    definitions = definitions_for({row.run.version_id for row in [*escalations, *overdue_items, *overdue_steps]})
    return render(request, "workqueue/operators.html", {
        "escalations": [presenting.inbox_entry(item, definitions[item.run.version_id], now) for item in escalations],
        "escalation_decisions": bulk.ESCALATION_DECISIONS.items(), "request_id": new_request_id(),
        "escalation_total": escalation_total,
        "overdue_items": [presenting.inbox_entry(item, definitions[item.run.version_id], now)
                          for item in overdue_items],
        "overdue_item_total": overdue_item_total,
        "overdue_steps": [{"run": step.run, "step_id": step.step_id, "state": step.state, "due_at": step.due_at,
                           "claimed_by": step.claimed_by, "late": presenting.relative(step.due_at, now),
                           "name": presenting.item_name(step.step_id, presenting.business_key(
                               step.run.inputs, definitions[step.run.version_id].inputs))}
                          for step in overdue_steps],
        "overdue_step_total": overdue_step_total,
    })


@operator_view
def audit_download(request, identity, run_id: str | None = None, fmt: str | None = None):
    """The audit log as a file: one run's (/runs/<id>/audit.<format>), or the organization's
    between two dates (/audit/export?since=…&until=…&format=…). Streamed: any size, little memory."""
    fmt = fmt or request.GET.get("format", "csv")
    if fmt not in audit.FORMATS:
        return problem(request, 400, "Choose a file format", "The audit log downloads as csv or jsonl.")
    if run_id is not None and call_tool(identity, "get_run", {"runId": run_id})["ok"] is False:
        raise Http404("No such run in your organization.")
    since, until, problems = _date_range(request.GET)
    if problems:
        return problem(request, 400, "Check the dates", "Nothing was downloaded.", problems)
    lines, content_type = audit.FORMATS[fmt]
    rows = audit.events(organization_ids=[identity.organization.id], run_id=run_id, since=since, until=until)
    name = f"audit-{run_id or identity.organization.slug}.{fmt}"
    response = StreamingHttpResponse(lines(rows), content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _date_range(query) -> tuple:
    """since/until from YYYY-MM-DD fields (until inclusive: up to the end of that day, UTC)."""
    bounds, problems = [None, None], []
    for index, name in enumerate(("since", "until")):
        text = query.get(name, "").strip()
        if not text:
            continue
        try:
            day = dt.date.fromisoformat(text)
        except ValueError:
            problems.append(f"{name}: “{text}” is not a date like 2026-10-06")
            continue
        bounds[index] = dt.datetime.combine(day + dt.timedelta(days=index), dt.time(), tzinfo=dt.UTC)
    return bounds[0], bounds[1], problems
