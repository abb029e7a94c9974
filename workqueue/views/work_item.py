"""The work item page: open it, decide it (work_item_decide.py), and who is on it (take, release,
assign)."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from api.tools import call_tool
from processes.presentation import presentation_for
from runs.presenters import last_attempt
from runs.selectors import file_names, is_assigned, recent_rows

from .. import presenting, refusals, selectors
from .item_page import form_for, item_or_404, not_yours, render_item
from .plumbing import error_page, operator_view, person_view
from .work_item_decide import decide_post


@person_view
@require_http_methods(["GET", "POST"])
def work_item(request, identity, work_item_id: str):
    if request.method == "POST" and request.POST.get("decision") and not request.POST.get("edit"):
        # A decision: the decide tool checks who may see and decide this item, once, with the
        # row read here (issue 29: one read of the work item, one check of its assignment).
        item = selectors.work_item(identity, work_item_id)
        if item is None:
            raise Http404("No such work item in your organization.")
        return decide_post(request, identity, item)
    item = item_or_404(identity, work_item_id)
    # Operators see every work item (to assign or release it); only its assignees decide it.
    if not is_assigned(identity, item) and not identity.is_operator:
        return not_yours(request)
    if request.method == "POST":
        return decide_post(request, identity, item)
    envelope = call_tool(identity, "get_run", {"runId": item.run_id})
    if not envelope["ok"]:
        return error_page(request, envelope["error"])
    view = envelope["data"]
    shown = presenting.find_item(view, item.id)
    form = form_for(item, presentation_for(item.run.version_id))
    # What the person starts from: an agent's held candidate, or the step's last attempt when it
    # came back for rework (its values, route, reason and files, which stay attached).
    candidate = (shown.get("escalation") or {}).get("candidate") if shown else None
    candidate = candidate or last_attempt(view["data"]["steps"], item.step_id)
    if candidate and form.completes:
        refs = [e.get("ref") for e in candidate.get("evidence") or [] if e.get("kind") == "file"]
        form.fill_from_candidate(candidate, file_names(identity.organization, refs))
    for widget in form.widgets:  # an empty table starts with admin's columns, else those people used before
        if widget.control == "rows" and not widget.columns:
            widget.start_columns([] if widget.facts.columns else recent_rows(
                identity.organization, process=item.run.process_name, step_id=item.step_id, field=widget.name))
    return render_item(request, identity, item, view, form)

# ---------------------------------------------------------------- who is on it (take, release, assign)


def _queue_action(request, identity, work_item_id: str, tool: str, done: str, **arguments):
    envelope = call_tool(identity, tool, {"workItemId": work_item_id, **arguments}, transport="browser")
    if envelope["ok"]:
        messages.success(request, done)
    elif refusals.is_not_found(envelope["error"]):
        raise Http404(envelope["error"]["message"])
    else:
        messages.error(request, refusals.message_sentence(envelope["error"]))
    return redirect("workqueue:work_item", work_item_id=work_item_id)


@person_view
@require_POST
def take_item(request, identity, work_item_id: str):
    return _queue_action(request, identity, work_item_id, "take",
                         "You are on it: everyone in the group sees that you hold this item.")


@person_view
@require_POST
def release_item(request, identity, work_item_id: str):
    return _queue_action(request, identity, work_item_id, "release", "Released: anyone in the group can take it.")


@operator_view
@require_POST
def assign_item(request, identity, work_item_id: str):
    to = request.POST.get("to", "")
    return _queue_action(request, identity, work_item_id, "assign", f"Assigned to {to}.", to=to)
