"""The runs list, a run's page, starting and cancelling a run."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST

from api.tools import call_tool
from kernel import audit
from kernel.errors import HTTP_STATUS, ToolError
from processes import maps
from processes.definition import definition_for, definitions_for
from processes.presentation import Presentation, field_label, presentation_for, presentations_for
from processes.rendering import render_markdown
from processes.selectors import version_id as published_version_id
from runs.models import ENDED_STATES, RunState
from runs.presenters import run_list_entry
from runs.selectors import file_facts, recent_input_rows, runs_list
from runs.services.previews import previews_for

from .. import activity, presenting
from ..forms import OFFSETS, Issues, apply_edit, build_widgets, read_widgets, value_from_text
from ..plain_issues import hint_issue, worded
from .plumbing import error_page, latest_presentation, new_request_id, operator_view, person_view, process_catalog


RUN_STATES = tuple(RunState.values)
RUNS_PAGE = 50


# ---------------------------------------------------------------- runs


@person_view
def run_list(request, identity):
    query = request.GET
    catalog = process_catalog(identity)
    process = query.get("process", "").strip()
    state = query.get("state", "") if query.get("state", "") in RUN_STATES else ""
    declared = next((item["inputs"] for item in catalog if item["name"] == process), {}) if process else {}
    labels = latest_presentation(identity, catalog)(process) if declared else Presentation()
    input_filters, typed = [], {}
    for name, spec in declared.items():
        value = query.get(f"input.{name}", "")
        kind = spec.get("type") if isinstance(spec, dict) else spec
        input_filters.append({"name": name, "label": field_label(name, labels.input(name)), "param": f"input.{name}",
                              "value": value, "type": kind})
        if value.strip():
            typed[name] = value_from_text(kind, value.strip())
    # list_runs' own read: the runs this person may see (runs/visibility.py).
    try:
        rows, next_cursor = runs_list(identity, process=process or None, state=state or None, inputs=typed or None,
                                      limit=RUNS_PAGE, cursor=query.get("cursor") or None)
    except ToolError as error:
        return error_page(request, error.envelope()["error"])
    version_ids = {run.version_id for run in rows}
    definitions, presentations = definitions_for(version_ids), presentations_for(version_ids)
    entries = []
    for run in rows:  # the tool's shape, with the run's name and its inputs as people read them
        inputs = definitions[run.version_id].inputs
        entries.append({**run_list_entry(run), "name": presenting.business_key(run.inputs, inputs),
                        "fields": presenting.shown_inputs(run.inputs, presentations[run.version_id], inputs)})
    return render(request, "workqueue/run_list.html", {
        "runs": entries, "next_cursor": next_cursor,
        "processes": [item["name"] for item in catalog], "process": process, "state": state, "states": RUN_STATES,
        "input_filters": input_filters, "paged": bool(query.get("cursor")),
        "can_cancel": identity.is_operator, "request_id": new_request_id(), "back_url": request.get_full_path(),
        "open_states": [state for state in RUN_STATES if state not in ENDED_STATES],
    })


@person_view
def run_detail(request, identity, run_id: str):
    # get_run answers not_found for a run this person may not see, as for one that never existed.
    envelope = call_tool(identity, "get_run", {"runId": run_id})
    if not envelope["ok"]:
        if envelope["error"]["code"] == "not_found":
            raise Http404(envelope["error"]["message"])
        return error_page(request, envelope["error"])
    view = envelope["data"]
    run = view["run"]
    version_id = published_version_id(identity.organization, process=run["process"], number=run["version"])
    states = {row["id"]: row["state"] for row in view["steps"]}
    # The map module escapes every text it takes from the process file.
    map_svg = mark_safe(maps.svg_for_version(version_id, states=states))
    who = request.GET.get("who", "") if request.GET.get("who", "") in activity.WHO else ""
    events = audit.events(organization_ids=[identity.organization.id], run_id=run["id"])
    definition, presentation = definition_for(version_id), presentation_for(version_id)
    return render(request, "workqueue/run_detail.html", {
        "activity": activity.timeline(events, who), "who": who, "who_choices": activity.WHO_LABELS,
        "view": view, "run": run, "inputs": presenting.input_items(view, presentation, definition.inputs),
        "panels": presenting.step_panels(view, presentation), "timeline": presenting.timeline(view, presentation),
        "work_items": view["workItems"], "body_html": render_markdown(view["body"], under_heading=2),
        "map_svg": map_svg, "mermaid": maps.mermaid_for_version(version_id),
        "request_id": new_request_id(), "can_cancel": identity.is_operator and run["state"] not in ENDED_STATES,
        "is_operator": identity.is_operator,
        "files": file_facts(identity.organization, presenting.file_refs(view)),
        "business_key": presenting.business_key(view["data"]["inputs"], definition.inputs),
        "previews": presenting.with_markdown(previews_for(identity.organization, presenting.preview_refs(view),
                                                          run["id"])),
    })


@person_view
@require_http_methods(["GET", "POST"])
def start_run(request, identity):
    catalog = process_catalog(identity)
    name = (request.POST.get("process") or request.GET.get("process") or "").strip()
    chosen = next((item for item in catalog if item["name"] == name), None)
    shown = latest_presentation(identity, catalog)(name) if chosen else Presentation()
    widgets = build_widgets(chosen["inputs"], "in.", shown.input) if chosen else []
    context = {"catalog": catalog, "chosen": chosen, "widgets": widgets, "general_errors": [],
               "mode": "live", "request_id": new_request_id(), "offsets": OFFSETS}
    if request.method == "POST" and chosen:
        for widget in widgets:
            widget.fill_from_post(request.POST)
        mode = "test" if request.POST.get("mode") == "test" else "live"
        request_id = request.POST.get("request_id") or new_request_id()
        if request.POST.get("edit"):  # a row editor's button: the same form again, one row more or less
            apply_edit(widgets, request.POST["edit"])
            for widget in widgets:
                widget.prepare_to_show()
            context.update(mode=mode, request_id=request_id)
            return render(request, "workqueue/start_run.html", context)
        inputs = read_widgets(widgets)
        if any(widget.problems for widget in widgets):  # a table cell that is not its column's type
            for widget in widgets:
                widget.errors = worded(widget.problems, {})
                widget.prepare_to_show()
            context.update(mode=mode, request_id=request_id)
            return render(request, "workqueue/start_run.html", context, status=422)
        envelope = call_tool(identity, "start_run", {"process": chosen["name"], "inputs": inputs,
                                                     "mode": mode, "requestId": request_id})
        if envelope["ok"]:
            run = envelope["data"]["run"]
            messages.success(request, f"Started {run['process']} ({'test run' if mode == 'test' else 'live'}).")
            return redirect("workqueue:run", run_id=run["id"])
        error = envelope["error"]
        issues = Issues.sort(error.get("issues") or [error["message"]], [w.name for w in widgets], "inputs")
        issues.apply(widgets, prefix="inputs")
        for widget in widgets:
            widget.errors += [hint_issue(text) for text in widget.hints if widget.errors]
            widget.prepare_to_show()
        context.update(general_errors=issues.general, mode=mode, error=error,
                       request_id=request_id if error["code"] == "retry" else new_request_id())
        return render(request, "workqueue/start_run.html", context, status=HTTP_STATUS.get(error["code"], 400))
    for widget in widgets:  # an empty table starts with admin's columns, else those earlier runs used
        if widget.control == "rows":
            widget.start_columns([] if widget.facts.columns else recent_input_rows(
                identity.organization, process=chosen["name"], field=widget.name))
        widget.prepare_to_show()
    return render(request, "workqueue/start_run.html", context)



@operator_view
@require_POST
def cancel_run(request, identity, run_id: str):
    # The reason rule (required, recorded as the run's ending note) is the cancel service's.
    envelope = call_tool(identity, "cancel", {"runId": run_id, "reason": request.POST.get("reason", "").strip(),
                                              "requestId": request.POST.get("request_id") or new_request_id()})
    if envelope["ok"]:
        messages.success(request, "The run was cancelled.")
    else:
        error = envelope["error"]
        if error["code"] == "not_found":
            raise Http404(error["message"])
        messages.error(request, "Not cancelled: " + "; ".join([error["message"], *(error.get("issues") or [])]))
    return redirect("workqueue:run", run_id=run_id)
