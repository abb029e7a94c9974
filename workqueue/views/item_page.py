"""The work item page as it is shown: its form, its context, the link back to the inbox view."""

from urllib.parse import urlencode

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html

from api.tools import call_tool
from kernel import clock
from processes.definition import definition_for
from processes.presentation import Presentation, presentation_for
from processes.rendering import render_markdown
from runs.models import WorkItemState
from runs.presenters import decisions_for, sent_back
from runs.selectors import file_facts, is_assigned
from runs.services.decisions import note_rule
from runs.services.previews import previews_for
from runs.services.queue import members_who_may_hold
from runs.visibility import can_see

from .. import presenting, queue_params, selectors
from ..forms import OFFSETS, DecisionForm
from .plumbing import declared_inputs, error_page, new_request_id, problem, process_catalog


# ---------------------------------------------------------------- work item


def item_or_404(identity, work_item_id: str):
    """The work item, when the person may see its run (runs/visibility.py); else 404, the same
    answer as for an id that never existed."""
    item = selectors.work_item(identity, work_item_id)
    if item is None or not can_see(identity, item.run):
        raise Http404("No such work item in your organization.")
    return item





def not_yours(request):
    return problem(request, 403, "Not your work item",
                   "This work item is assigned to a group you are not in, or to another person.")


def form_for(item, presentation: Presentation) -> DecisionForm:
    # The step's requirements exactly as work items give them (output, evidence, next), the
    # decisions this kind of item accepts, and how admin shows its fields.
    requirements = definition_for(item.run.version_id).step(item.step_id).requirements
    return DecisionForm(requirements=requirements, decisions=decisions_for(item),
                        facts_of=lambda name: presentation.output(item.step_id, name))


def render_item(request, identity, item, view, form, *, banner=None, request_id=None, status=200, kept=None):
    form.prepare_to_show()
    shown = presenting.find_item(view, item.id)
    if shown is None:
        item.refresh_from_db()
    step_rows = {row["id"]: row for row in view["steps"]}
    definition, presentation = definition_for(item.run.version_id), presentation_for(item.run.version_id)
    candidate = ((shown or {}).get("escalation") or {}).get("candidate")
    context = {
        "item": item,
        "shown": shown,
        "view": view,
        "run": view["run"],
        "step_row": step_rows.get(item.step_id, {}),
        "text": shown["text"] if shown else definition_for(item.run.version_id).step(item.step_id).text,
        "sent_back": sent_back(definition_for(item.run.version_id), view["data"]["steps"], item.step_id,
                               (shown or {}).get("handoff")),
        "kind_label": presenting.item_kind_label(item.kind, item.escalation is not None),
        "body_html": render_markdown(view["body"], under_heading=2),
        "inputs": presenting.input_items(view, presentation, definition.inputs),
        "panels": presenting.step_panels(view, presentation, only_with_data=True),
        "form": form,
        "decision_labels": presenting.DECISION_LABELS,
        "note_hint": presenting.note_hint(*note_rule(form.decisions)),
        "notes_required": note_rule(form.decisions)[0],
        "back_query": inbox_query(request.POST if request.method == "POST" else request.GET),
        "shown_digest": presenting.shown_digest(view),
        "request_id": request_id or new_request_id(),
        "banner": banner,
        "offsets": OFFSETS,
        "held_by_other": bool(item.held_by) and item.held_by.lower() != identity.email.lower(),
        "can_decide": is_assigned(identity, item),
        "assignable_to": members_who_may_hold(item) if identity.is_operator and shown else [],
        "decided": item.state == WorkItemState.DECIDED,
        "removed": item.state == WorkItemState.REMOVED,
        "files": file_facts(identity.organization, presenting.file_refs(view)),
        "business_key": presenting.business_key(view["data"]["inputs"], definition.inputs),
        "previews": presenting.with_markdown(previews_for(
            identity.organization, presenting.preview_refs(view, item.step_id, candidate), item.run_id)),
        **(kept or {}),
    }
    return render(request, "workqueue/work_item.html", context, status=status)


def inbox_query(params) -> str:
    """The query string of the inbox view a work item was opened from (`back`), canonical: only
    the inbox's own parameters, so it is never more than a query string of this site."""
    return queue_params.canonical_query(queue_params.parse(params.get("back", "")))


def next_item_link(identity, back: str):
    """" · Next item in this view" (its top open item now), or nothing when the view is empty."""
    query = queue_params.parse(back)
    declared = declared_inputs(process_catalog(identity)) if query.get("process") else (lambda process: {})
    filters, _, _ = queue_params.read_filters(query, declared)
    if filters.view == "done":
        return ""
    rows, _ = selectors.inbox(identity, filters, now=clock.now(), page=1, page_size=1)
    if not rows:
        return " · No more items in this view."
    url = reverse("workqueue:work_item", args=[rows[0].id]) + (f"?{urlencode({'back': back})}" if back else "")
    return format_html(' · <a href="{}" data-next-item>Next item in this view</a> <kbd>n</kbd>', url)



def rerender(request, identity, item, form, *, banner, status, request_id=None, kept=None):
    envelope = call_tool(identity, "get_run", {"runId": item.run_id})
    if not envelope["ok"]:
        return error_page(request, envelope["error"])
    return render_item(request, identity, item, envelope["data"], form, banner=banner, request_id=request_id,
                        status=status, kept=kept)
