"""The browser inbox: server-rendered pages over the same tool layer as REST and MCP.

Views parse the form, call a tool through `call_tool` (in process, as the signed-in person) and
render its envelope. Rules live in the engine; reads no tool offers (the due-sorted inbox with
counts, the operators' queues) live in `workqueue.selectors`.
"""

import base64
import datetime as dt
import functools
import uuid
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from api.tools import call_tool
from kernel import audit, clock, page_settings, throttle
from kernel.errors import HTTP_STATUS, ConflictIssue, ToolError
from kernel.identity import issue_personal_token, person_identity, personal_tokens, revoke_personal_token
from processes import maps
from processes.definition import definition_for, definitions_for
from processes.maps import humanize
from processes.presentation import (Presentation, field_label, presentation_for, presentation_of_number,
                                    presentations_for)
from processes.rendering import render_markdown
from processes.selectors import version_id as published_version_id
from runs.models import ENDED_STATES, InboxVisit, RunState, WorkItemState
from runs.presenters import decisions_for, last_attempt, run_list_entry, sent_back
from runs.selectors import file_facts, file_names, is_assigned, recent_input_rows, recent_rows, runs_list
from runs.services import queue, saved_views, uploads
from runs.services.decisions import note_rule
from runs.visibility import can_see

from . import activity, bulk, presenting, queue_params, selectors
from .forms import OFFSETS, Attached, DecisionForm, Issues, apply_edit, build_widgets, read_widgets, value_from_text
from .middleware import SESSION_KEY as PAGE_TIME_ZONE
from .plain_issues import worded

RUN_STATES = tuple(RunState.values)
RUNS_PAGE = 50


# ---------------------------------------------------------------- plumbing


def person_view(view):
    """Signed in, and a person of an organization; the view receives the Identity."""

    @login_required
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        identity = person_identity(request.user)
        if identity is None:
            return render(request, "workqueue/no_organization.html", status=403)
        request.identity = identity
        return view(request, identity, *args, **kwargs)

    return wrapper


def operator_view(view):
    @person_view
    @functools.wraps(view)
    def wrapper(request, identity, *args, **kwargs):
        if not identity.is_operator:
            return _problem(request, 403, "Operators only",
                            "This page is for the organization's operators. Ask an administrator if you need it.")
        return view(request, identity, *args, **kwargs)

    return wrapper


def _problem(request, status: int, title: str, message: str, issues=None):
    return render(request, "workqueue/problem.html",
                  {"title": title, "message": message, "issues": issues or []}, status=status)


def _error_page(request, error: dict):
    status = HTTP_STATUS.get(error["code"], 400)
    titles = {403: "Not allowed", 404: "Not found", 409: "Conflict", 503: "Try again"}
    return _problem(request, status, titles.get(status, "Something went wrong"), error["message"],
                    error.get("issues"))


def _request_id() -> str:
    return str(uuid.uuid4())


def _process_catalog(identity) -> list[dict]:
    """Published processes (list_processes, every page)."""
    items, cursor = [], None
    for _ in range(100):
        envelope = call_tool(identity, "list_processes", {"cursor": cursor} if cursor else {})
        if not envelope["ok"]:
            break
        items += envelope["data"]["items"]
        cursor = envelope["data"]["nextCursor"]
        if not cursor:
            break
    return items


# ---------------------------------------------------------------- inbox


VIEW_LABELS = {"mine": gettext_lazy("Mine"), "groups": gettext_lazy("My groups"), "all": gettext_lazy("All open"),
               "done": gettext_lazy("Done by me")}
SORT_LABELS = {"due": gettext_lazy("Due"), "waiting": gettext_lazy("Waiting since"),
               "process": gettext_lazy("Process")}
HELD_LABELS = {"me": gettext_lazy("Me"), "nobody": gettext_lazy("Nobody"), "others": gettext_lazy("Someone else")}
MODE_LABELS = {"live": gettext_lazy("Live runs"), "test": gettext_lazy("Test runs")}


def _declared_inputs(catalog: list[dict]):
    by_name = {item["name"]: item.get("inputs") or {} for item in catalog}
    return lambda process: by_name.get(process, {})


def _latest_presentation(identity, catalog: list[dict]):
    """process -> how the fields of its latest version are shown (a query per process asked)."""
    numbers = {item["name"]: item["version"] for item in catalog}

    def of(process: str) -> Presentation:
        if process not in numbers:
            return Presentation()
        return presentation_of_number(identity.organization, process=process, number=numbers[process])

    return of


@person_view
def inbox(request, identity):
    """The person's work in views (mine, my groups, all open, done by me), filtered, sorted and
    paged; saved views with live counts; `partial=1` answers only the list, for the page's refresh."""
    query = request.GET
    catalog = _process_catalog(identity)
    declared = _declared_inputs(catalog)
    filters, input_fields, problems = queue_params.read_filters(query, declared,
                                                                _latest_presentation(identity, catalog))
    try:
        page = int(query.get("page", "1"))
    except ValueError:
        page = 1
    now = clock.now()
    partial = query.get("partial") == "1"
    visit = InboxVisit.objects.filter(user=identity.user).first()
    seen_at = visit.seen_at if visit else None
    views = saved_views.views_of(identity)
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
        "bulk_decisions": bulk.BULK_DECISIONS.items(), "request_id": _request_id(),
        "done_view": filters.view == "done", "partial": partial,
        "clear_query": "" if filters.view == "all" else f"view={filters.view}",
    }
    if partial:
        return render(request, "workqueue/_inbox_list.html", context)
    if filters.view != "done":  # what arrived after this look is "new" next time
        _mark_seen(identity, visit, now)
    return render(request, "workqueue/inbox.html", context)


def _mark_seen(identity, visit, now) -> None:
    if visit is None:
        InboxVisit.objects.get_or_create(user=identity.user, defaults={"seen_at": now,
                                                                       "organization": identity.organization})
    else:  # one UPDATE, and never back in time when two tabs race
        InboxVisit.objects.filter(pk=visit.pk, seen_at__lt=now).update(seen_at=now)


@person_view
@require_POST
def save_view(request, identity):
    query = queue_params.canonical_query(queue_params.parse(request.POST.get("query", "")))
    try:
        view = saved_views.save(identity=identity, name=request.POST.get("name", ""), query=query, now=clock.now())
    except ToolError as error:
        messages.error(request, "The view was not saved: " + "; ".join(
            issue.split(": ", 1)[-1] for issue in error.issues) + ".")
        return redirect(reverse("workqueue:inbox") + (f"?{query}" if query else ""))
    messages.success(request, f"Saved the view “{view.name}”. It is in the list of views above the filters.")
    return redirect(reverse("workqueue:inbox") + (f"?{view.query}" if view.query else ""))


@person_view
@require_POST
def delete_view(request, identity, view_id: int):
    try:
        view = saved_views.delete(identity=identity, view_id=view_id)
    except ToolError as error:
        raise Http404(error.message) from None
    messages.success(request, f"Deleted the view “{view.name}”.")
    return redirect("workqueue:inbox")


def _back_url(post, default: str) -> str:
    """Where a bulk form came from (a page of this site only: never an open redirect)."""
    back = post.get("back_url", "")
    return back if back.startswith("/") and not back.startswith("//") and "\\" not in back else default


def _selected(post) -> list[str]:
    seen, selected = set(), []
    for value in post.getlist("items"):
        if value and value not in seen:
            seen.add(value)
            selected.append(value)
    return selected


@person_view
@require_POST
def bulk_decide(request, identity):
    """Decide every selected item, each with the snapshot it was shown with; a page of outcomes."""
    post = request.POST
    selected = _selected(post)
    decision = post.get("decision", "")
    back = _back_url(post, reverse("workqueue:inbox") + (f"?{post.get('back')}" if post.get("back") else ""))
    if decision not in bulk.DECISIONS:
        messages.error(request, "Choose what to do with the selected items: approve, reject, return or fail.")
        return redirect(back)
    if not selected:
        messages.error(request, "Select at least one item first.")
        return redirect(back)
    if len(selected) > bulk.MOST_ITEMS:
        messages.error(request, f"At most {bulk.MOST_ITEMS} items at once; nothing was decided.")
        return redirect(back)
    required, _ = note_rule([decision])
    if required and not post.get("note", "").strip():
        messages.error(request, f"A note is needed to {presenting.NOTE_VERBS[decision]}: say why, "
                                "so the people and agents who get the work back know. Nothing was decided.")
        return redirect(back)
    snapshots = {item_id: post.get(f"snapshot.{item_id}", "") for item_id in selected}
    outcomes = bulk.decide_many(identity, selected=selected, snapshots=snapshots, decision=decision,
                                note=post.get("note", ""), request_id=post.get("request_id") or _request_id())
    return render(request, "workqueue/bulk_result.html", {
        "outcomes": outcomes, "summary": bulk.summary(outcomes), "back": back,
        "action": presenting.DONE_LABELS.get(decision, decision), "kind": "decide",
    })


@operator_view
@require_POST
def bulk_cancel(request, identity):
    """Cancel every selected run with one reason (operators)."""
    post = request.POST
    run_ids = _selected(post)
    back = _back_url(post, reverse("workqueue:runs"))
    if not run_ids:
        messages.error(request, "Select at least one run first.")
        return redirect(back)
    if len(run_ids) > bulk.MOST_ITEMS:
        messages.error(request, f"At most {bulk.MOST_ITEMS} runs at once; nothing was cancelled.")
        return redirect(back)
    if not post.get("reason", "").strip():
        messages.error(request, "A reason is needed to cancel runs; it is kept with each run. Nothing was cancelled.")
        return redirect(back)
    outcomes = bulk.cancel_many(identity, run_ids=run_ids, reason=post["reason"].strip(),
                                request_id=post.get("request_id") or _request_id())
    return render(request, "workqueue/bulk_result.html", {
        "outcomes": outcomes, "summary": bulk.summary(outcomes), "back": back, "action": "Cancelled",
        "kind": "cancel",
    })


# ---------------------------------------------------------------- work item


def _item_or_404(identity, work_item_id: str):
    """The work item, when the person may see its run (runs/visibility.py); else 404, the same
    answer as for an id that never existed."""
    item = selectors.work_item(identity, work_item_id)
    if item is None or not can_see(identity, item.run):
        raise Http404("No such work item in your organization.")
    return item


@person_view
@require_http_methods(["GET", "POST"])
def work_item(request, identity, work_item_id: str):
    item = _item_or_404(identity, work_item_id)
    # Operators see every work item (to assign or release it); only its assignees decide it.
    if not is_assigned(identity, item) and not identity.is_operator:
        return _problem(request, 403, "Not your work item",
                        "This work item is assigned to a group you are not in, or to another person.")
    if request.method == "POST":
        return _decide(request, identity, item)
    envelope = call_tool(identity, "get_run", {"runId": item.run_id})
    if not envelope["ok"]:
        return _error_page(request, envelope["error"])
    view = envelope["data"]
    shown = presenting.find_item(view, item.id)
    form = _form_for(item, presentation_for(item.run.version_id))
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
    return _render_item(request, identity, item, view, form)


def _form_for(item, presentation: Presentation) -> DecisionForm:
    # The step's requirements exactly as work items give them (output, evidence, next), the
    # decisions this kind of item accepts, and how admin shows its fields.
    requirements = definition_for(item.run.version_id).step(item.step_id).requirements
    return DecisionForm(requirements=requirements, decisions=decisions_for(item),
                        facts_of=lambda name: presentation.output(item.step_id, name))


def _render_item(request, identity, item, view, form, *, banner=None, request_id=None, status=200, kept=None):
    form.prepare_to_show()
    shown = presenting.find_item(view, item.id)
    if shown is None:
        item.refresh_from_db()
    step_rows = {row["id"]: row for row in view["steps"]}
    definition, presentation = definition_for(item.run.version_id), presentation_for(item.run.version_id)
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
        "back_query": _inbox_query(request.POST if request.method == "POST" else request.GET),
        "shown_digest": presenting.shown_digest(view),
        "request_id": request_id or _request_id(),
        "banner": banner,
        "offsets": OFFSETS,
        "held_by_other": bool(item.held_by) and item.held_by.lower() != identity.email.lower(),
        "can_decide": is_assigned(identity, item),
        "assignable_to": queue.members_who_may_hold(item) if identity.is_operator and shown else [],
        "decided": item.state == WorkItemState.DECIDED,
        "removed": item.state == WorkItemState.REMOVED,
        "files": file_facts(identity.organization, presenting.file_refs(view)),
        "business_key": presenting.business_key(view["data"]["inputs"], definition.inputs),
        **(kept or {}),
    }
    return render(request, "workqueue/work_item.html", context, status=status)


def _inbox_query(params) -> str:
    """The query string of the inbox view a work item was opened from (`back`), canonical: only
    the inbox's own parameters, so it is never more than a query string of this site."""
    return queue_params.canonical_query(queue_params.parse(params.get("back", "")))


def _next_item_link(identity, back: str):
    """" · Next item in this view" (its top open item now), or nothing when the view is empty."""
    query = queue_params.parse(back)
    declared = _declared_inputs(_process_catalog(identity)) if query.get("process") else (lambda process: {})
    filters, _, _ = queue_params.read_filters(query, declared)
    if filters.view == "done":
        return ""
    rows, _ = selectors.inbox(identity, filters, now=clock.now(), page=1, page_size=1)
    if not rows:
        return " · No more items in this view."
    url = reverse("workqueue:work_item", args=[rows[0].id]) + (f"?{urlencode({'back': back})}" if back else "")
    return format_html(' · <a href="{}" data-next-item>Next item in this view</a> <kbd>n</kbd>', url)


def _upload_files(identity, request, form: DecisionForm, request_id: str) -> list[Attached] | None:
    """Send each chosen file through the upload tool and attach it to the form (so a re-render keeps
    it and nothing is uploaded twice). None when one failed; its issues are on the form.

    Each upload's requestId derives from the form's, so a resent form replays the same uploads."""
    uploaded, failed = [], False
    for index, upload in enumerate(request.FILES.getlist("evidence_files")):
        if uploads.too_large(upload.size):  # refused before it is read and encoded
            form.add_part_error("evidence", f"{upload.name}: larger than the upload limit "
                                            f"({settings.MAX_UPLOAD_BYTES} bytes)")
            failed = True
            continue
        content = base64.b64encode(upload.read()).decode("ascii")
        envelope = call_tool(identity, "upload", {
            "fileName": upload.name or f"file-{index}",
            "contentType": upload.content_type or "application/octet-stream",
            "contentBase64": content, "requestId": f"{request_id}.file{index}",
        })
        if envelope["ok"]:
            uploaded.append(Attached(ref=envelope["data"]["id"], name=upload.name or envelope["data"]["id"]))
        else:
            failed = True
            error = envelope["error"]
            for line in error.get("issues") or [error["message"]]:
                form.add_part_error("evidence", f"{upload.name}: {line}")
    form.attached += uploaded
    return None if failed else uploaded


def _decide(request, identity, item):
    post = request.POST
    form = _form_for(item, presentation_for(item.run.version_id))
    form.fill_from_post(post)
    request_id = post.get("request_id") or _request_id()
    if post.get("edit"):
        # A row editor's button (add, remove, move a row or a column) without JavaScript: nothing
        # is decided; files chosen so far are uploaded now so they stay attached.
        _upload_files(identity, request, form, request_id)
        form.edit(post["edit"])
        # The snapshot stays the one first shown: an edit must not turn a stale page into a fresh one.
        return _rerender(request, identity, item, form, banner=None, status=200, request_id=request_id,
                         kept={"form_snapshot": post.get("snapshot", ""), "form_shown": post.get("shown", "")})
    decision = post.get("decision", "")
    arguments = {"runId": item.run_id, "workItemId": item.id, "snapshot": post.get("snapshot", ""),
                 "requestId": request_id}
    if decision:
        arguments["decision"] = decision
    if decision == "completed":
        if _upload_files(identity, request, form, request_id) is None:
            return _rerender(request, identity, item, form, banner={
                "kind": "error", "title": "A file could not be uploaded",
                "message": "Nothing was decided. Fix the files and decide again."}, status=422)
        arguments.update(form.completion_arguments())
        if form.refuse_local_problems():
            return _rerender(request, identity, item, form, banner={
                "kind": "error", "title": "Check the highlighted values",
                "message": "Nothing was decided. Each value is shown next to what it should look like."}, status=422)
    elif form.note.strip():
        arguments["note"] = form.note
    envelope = call_tool(identity, "decide", arguments)
    if envelope["ok"]:
        view = envelope["data"]
        run = view["run"]
        state = run["state"] + (f" ({run['outcome']})" if run.get("outcome") else "")
        done = presenting.DONE_LABELS.get(decision, decision)
        back = _inbox_query(post)
        messages.success(request, format_html(
            '{} <a href="{}">Open the run</a>{}', f"{done}: {run['process']} · {humanize(item.step_id)}. "
            f"The run is now {state}.", reverse("workqueue:run", args=[run["id"]]), _next_item_link(identity, back)))
        return redirect(reverse("workqueue:inbox") + (f"?{back}" if back else ""))
    return _after_refusal(request, identity, item, form, envelope["error"], request_id, post)


def _after_refusal(request, identity, item, form, error, request_id, post):
    code, issues = error["code"], error.get("issues") or []
    status = HTTP_STATUS.get(code, 400)
    if code == "conflict" and ConflictIssue.ALREADY_DECIDED in issues:
        item.refresh_from_db()
        banner = {"kind": "warning", "title": "Someone already decided this item",
                  "message": f"{item.decided_by} decided it ({item.decision}) at "
                             f"{item.decided_at:%Y-%m-%d %H:%M UTC}. Your decision was not applied.",
                  "detail": error["message"]}
        return _rerender(request, identity, item, form, banner=banner, status=status)
    if code == "conflict" and ConflictIssue.RUN_ENDED in issues:
        banner = {"kind": "warning", "title": "The run has ended",
                  "message": "Your decision was not applied: the run ended or was cancelled.",
                  "detail": error["message"]}
        return _rerender(request, identity, item, form, banner=banner, status=status)
    if code == "stale":
        envelope = call_tool(identity, "get_run", {"runId": item.run_id})
        if not envelope["ok"]:
            return _error_page(request, envelope["error"])
        inputs_changed, changed = presenting.changed_parts(post.get("shown", ""), envelope["data"])
        names = [f"{humanize(step_id)} ({step_id})" for step_id in changed]
        if inputs_changed:
            names.insert(0, "the run's inputs")
        banner = {"kind": "warning", "title": "The run changed since you opened this item",
                  "message": "Your decision was not applied. Review the fresh data below and decide again.",
                  "changed": names}
        return _render_item(request, identity, item, envelope["data"], form, banner=banner, status=status)
    if code in ("not_accepted", "invalid"):
        form.show_issues(issues or [error["message"]])
        banner = {"kind": "error", "title": "Not accepted" if code == "not_accepted" else "Check the form",
                  "message": error["message"] + ". Every issue is shown next to its field."}
        return _rerender(request, identity, item, form, banner=banner, status=status)
    if code == "retry":
        banner = {"kind": "error", "title": "Try again", "message": error["message"]}
        return _rerender(request, identity, item, form, banner=banner, request_id=request_id, status=status)
    return _error_page(request, error)


def _rerender(request, identity, item, form, *, banner, status, request_id=None, kept=None):
    envelope = call_tool(identity, "get_run", {"runId": item.run_id})
    if not envelope["ok"]:
        return _error_page(request, envelope["error"])
    return _render_item(request, identity, item, envelope["data"], form, banner=banner, request_id=request_id,
                        status=status, kept=kept)


# ---------------------------------------------------------------- who is on it (take, release, assign)


def _queue_action(request, identity, work_item_id: str, act, done: str):
    try:
        act()
    except ToolError as error:
        if error.code == "not_found":
            raise Http404(error.message) from None
        first_word = error.message.split(" ", 1)[0]
        message = error.message if "@" in first_word else error.message[:1].upper() + error.message[1:]
        messages.error(request, message + ".")
    else:
        messages.success(request, done)
    return redirect("workqueue:work_item", work_item_id=work_item_id)


@person_view
@require_POST
def take_item(request, identity, work_item_id: str):
    return _queue_action(request, identity, work_item_id, lambda: queue.take(
        identity=identity, work_item_id=work_item_id, now=clock.now()),
        "You are on it: everyone in the group sees that you hold this item.")


@person_view
@require_POST
def release_item(request, identity, work_item_id: str):
    return _queue_action(request, identity, work_item_id, lambda: queue.release(
        identity=identity, work_item_id=work_item_id, now=clock.now()), "Released: anyone in the group can take it.")


@operator_view
@require_POST
def assign_item(request, identity, work_item_id: str):
    to = request.POST.get("to", "")
    return _queue_action(request, identity, work_item_id, lambda: queue.assign(
        identity=identity, work_item_id=work_item_id, to=to, now=clock.now()), f"Assigned to {to}.")


# ---------------------------------------------------------------- runs


@person_view
def run_list(request, identity):
    query = request.GET
    catalog = _process_catalog(identity)
    process = query.get("process", "").strip()
    state = query.get("state", "") if query.get("state", "") in RUN_STATES else ""
    declared = next((item["inputs"] for item in catalog if item["name"] == process), {}) if process else {}
    labels = _latest_presentation(identity, catalog)(process) if declared else Presentation()
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
        return _error_page(request, error.envelope()["error"])
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
        "can_cancel": identity.is_operator, "request_id": _request_id(), "back_url": request.get_full_path(),
        "open_states": [state for state in RUN_STATES if state not in ENDED_STATES],
    })


@person_view
def run_detail(request, identity, run_id: str):
    # get_run answers not_found for a run this person may not see, as for one that never existed.
    envelope = call_tool(identity, "get_run", {"runId": run_id})
    if not envelope["ok"]:
        if envelope["error"]["code"] == "not_found":
            raise Http404(envelope["error"]["message"])
        return _error_page(request, envelope["error"])
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
        "request_id": _request_id(), "can_cancel": identity.is_operator and run["state"] not in ENDED_STATES,
        "is_operator": identity.is_operator,
        "files": file_facts(identity.organization, presenting.file_refs(view)),
        "business_key": presenting.business_key(view["data"]["inputs"], definition.inputs),
    })


@person_view
@require_http_methods(["GET", "POST"])
def start_run(request, identity):
    catalog = _process_catalog(identity)
    name = (request.POST.get("process") or request.GET.get("process") or "").strip()
    chosen = next((item for item in catalog if item["name"] == name), None)
    shown = _latest_presentation(identity, catalog)(name) if chosen else Presentation()
    widgets = build_widgets(chosen["inputs"], "in.", shown.input) if chosen else []
    context = {"catalog": catalog, "chosen": chosen, "widgets": widgets, "general_errors": [],
               "mode": "live", "request_id": _request_id(), "offsets": OFFSETS}
    if request.method == "POST" and chosen:
        for widget in widgets:
            widget.fill_from_post(request.POST)
        mode = "test" if request.POST.get("mode") == "test" else "live"
        request_id = request.POST.get("request_id") or _request_id()
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
            widget.errors += worded([f"Hint: {hint}" for hint in widget.hints if widget.errors], {})
            widget.prepare_to_show()
        context.update(general_errors=issues.general, mode=mode, error=error,
                       request_id=request_id if error["code"] == "retry" else _request_id())
        return render(request, "workqueue/start_run.html", context, status=HTTP_STATUS.get(error["code"], 400))
    for widget in widgets:  # an empty table starts with admin's columns, else those earlier runs used
        if widget.control == "rows":
            widget.start_columns([] if widget.facts.columns else recent_input_rows(
                identity.organization, process=chosen["name"], field=widget.name))
        widget.prepare_to_show()
    return render(request, "workqueue/start_run.html", context)


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
        "escalation_decisions": bulk.ESCALATION_DECISIONS.items(), "request_id": _request_id(),
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
        return _problem(request, 400, "Choose a file format", "The audit log downloads as csv or jsonl.")
    if run_id is not None and call_tool(identity, "get_run", {"runId": run_id})["ok"] is False:
        raise Http404("No such run in your organization.")
    since, until, problems = _date_range(request.GET)
    if problems:
        return _problem(request, 400, "Check the dates", "Nothing was downloaded.", problems)
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


@operator_view
@require_POST
def cancel_run(request, identity, run_id: str):
    # The reason rule (required, recorded as the run's ending note) is the cancel service's.
    envelope = call_tool(identity, "cancel", {"runId": run_id, "reason": request.POST.get("reason", "").strip(),
                                              "requestId": request.POST.get("request_id") or _request_id()})
    if envelope["ok"]:
        messages.success(request, "The run was cancelled.")
    else:
        error = envelope["error"]
        if error["code"] == "not_found":
            raise Http404(error["message"])
        messages.error(request, "Not cancelled: " + "; ".join([error["message"], *(error.get("issues") or [])]))
    return redirect("workqueue:run", run_id=run_id)


# ---------------------------------------------------------------- page settings


@person_view
@require_POST
def time_zone(request, identity):
    try:
        name = page_settings.set_time_zone(user=request.user, name=request.POST.get("time_zone", ""))
    except ToolError as error:
        messages.error(request, "Not saved: " + "; ".join(issue.split(": ", 1)[-1] for issue in error.issues) + ".")
    else:
        request.session[PAGE_TIME_ZONE] = name
        messages.success(request, f"Times are now shown in {name}." if name else
                         "Times are now shown in your browser's time zone.")
    return redirect("workqueue:notification_settings")


# ---------------------------------------------------------------- API tokens


@person_view
@never_cache
@require_http_methods(["GET", "POST"])
def tokens(request, identity):
    created, label_error, status, retry_after = None, "", 200, None
    if request.method == "POST":
        counter = (throttle.TOKEN_CREATION, identity.ref)
        try:
            throttle.check(counter)
            row, plaintext = issue_personal_token(identity, label=request.POST.get("label", ""))
            throttle.count(counter)
            created = {"row": row, "plaintext": plaintext}
        except throttle.Throttled as error:
            label_error, status = f"Too many new tokens. Wait {error.wait_text}, then try again.", 429
            retry_after = error.retry_after
        except ToolError as error:  # "label: at most 100 characters", shown beside the label
            label_error, status = "; ".join(issue.split(": ", 1)[-1].capitalize() + "." for issue in error.issues), 400
    response = render(request, "workqueue/tokens.html",
                      {"tokens": personal_tokens(identity), "created": created, "label_error": label_error},
                      status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


@person_view
@require_POST
def revoke(request, identity, token_id: int):
    try:
        row = revoke_personal_token(identity, token_id)
    except ToolError as error:
        raise Http404(error.message) from None
    messages.success(request, f"Token “{row.label or row.pk}” revoked. It stops working at once.")
    return redirect(reverse("workqueue:tokens"))
