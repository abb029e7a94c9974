"""The inbox (the person's work in views, filtered, sorted, paged) and its saved views."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from api.tools import call_tool
from kernel import clock
from processes.definition import definitions_for
from processes.presentation import presentations_for
from runs.services.saved_views import views_of

from .. import bulk, presenting, queue_params, refusals, selectors
from .plumbing import declared_inputs, latest_presentation, new_request_id, person_view, process_catalog


# ---------------------------------------------------------------- inbox


VIEW_LABELS = {"mine": gettext_lazy("Mine"), "groups": gettext_lazy("My groups"), "all": gettext_lazy("All open"),
               "done": gettext_lazy("Done by me")}
SORT_LABELS = {"due": gettext_lazy("Due"), "waiting": gettext_lazy("Waiting since"),
               "process": gettext_lazy("Process")}
HELD_LABELS = {"me": gettext_lazy("Me"), "nobody": gettext_lazy("Nobody"), "others": gettext_lazy("Someone else")}
MODE_LABELS = {"live": gettext_lazy("Live runs"), "test": gettext_lazy("Test runs")}



@person_view
def inbox(request, identity):
    """The person's work in views (mine, my groups, all open, done by me), filtered, sorted and
    paged; saved views with live counts; `partial=1` answers only the list, for the page's refresh."""
    query = request.GET
    catalog = process_catalog(identity)
    declared = declared_inputs(catalog)
    filters, input_fields, problems = queue_params.read_filters(query, declared,
                                                                latest_presentation(identity, catalog))
    try:
        page = int(query.get("page", "1"))
    except ValueError:
        page = 1
    now = clock.now()
    partial = query.get("partial") == "1"
    seen_at = selectors.inbox_seen_at(identity)
    views = views_of(identity)
    saved = {view.pk: queue_params.read_filters(queue_params.parse(view.query), declared)[0] for view in views}
    rows, counts = selectors.inbox(identity, filters, now=now, page=page, seen_at=seen_at, saved=saved)
    version_ids = {row.run.version_id for row in rows}
    definitions, presentations = definitions_for(version_ids), presentations_for(version_ids)
    entries = [presenting.inbox_entry(row, definitions[row.run.version_id], now, seen_at=seen_at,
                                      presentation=presentations[row.run.version_id]) for row in rows]
    current = queue_params.canonical_query(query)
    context = {
        "entries": entries, "counts": counts, "filters": filters, "problems": problems,
        "input_fields": input_fields, "current_query": current,
        "processes": [item["name"] for item in catalog],
        "kinds": [("task", "Task"), ("approve", "Approval"), ("escalation", "Escalation")],
        "views": [(key, label, counts["views"][key]) for key, label in VIEW_LABELS.items()],
        "view_links": {key: queue_params.with_view(query, key) for key in VIEW_LABELS},
        "sorts": SORT_LABELS.items(), "held_choices": HELD_LABELS.items(), "modes": MODE_LABELS.items(),
        "saved_views": [{"view": view, "count": counts["saved"][view.pk],
                         "current": view.query == current} for view in views],
        "bulk_decisions": bulk.BULK_DECISIONS.items(), "request_id": new_request_id(),
        "done_view": filters.view == "done", "partial": partial,
        "clear_query": "" if filters.view == "all" else f"view={filters.view}",
    }
    if partial:
        return render(request, "workqueue/_inbox_list.html", context)
    if filters.view != "done":  # what arrived after this look is "new" next time
        call_tool(identity, "mark_inbox_seen", {"known": seen_at is not None})
    return render(request, "workqueue/inbox.html", context)


@person_view
@require_POST
def save_view(request, identity):
    query = queue_params.canonical_query(queue_params.parse(request.POST.get("query", "")))
    envelope = call_tool(identity, "save_view", {"name": request.POST.get("name", ""), "query": query},
                         transport="browser")
    if not envelope["ok"]:
        messages.error(request, "The view was not saved: " + "; ".join(refusals.problems(envelope["error"])) + ".")
        return redirect(reverse("workqueue:inbox") + (f"?{query}" if query else ""))
    view = envelope["data"]["view"]
    messages.success(request, f"Saved the view “{view.name}”. It is in the list of views above the filters.")
    return redirect(reverse("workqueue:inbox") + (f"?{view.query}" if view.query else ""))


@person_view
@require_POST
def delete_view(request, identity, view_id: int):
    envelope = call_tool(identity, "delete_view", {"viewId": view_id}, transport="browser")
    if not envelope["ok"]:
        raise Http404(envelope["error"]["message"])
    view = envelope["data"]["view"]
    messages.success(request, f"Deleted the view “{view.name}”.")
    return redirect("workqueue:inbox")
