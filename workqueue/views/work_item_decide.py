"""A decision posted from the work item page: files uploaded first, the `decide` tool, and the page
again on a refusal."""

import base64

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html

from api.tools import call_tool
from kernel.errors import HTTP_STATUS, ConflictIssue
from processes.maps import humanize
from processes.presentation import presentation_for
from runs.selectors import is_assigned, work_item_read_already
from runs.services.uploads import too_large
from runs.visibility import can_see

from .. import presenting, refusals
from ..forms import Attached, DecisionForm
from .item_page import form_for, inbox_query, next_item_link, not_yours, render_item, rerender
from .plumbing import error_page, new_request_id


def _upload_files(identity, request, form: DecisionForm, request_id: str) -> list[Attached] | None:
    """Send each chosen file through the upload tool and attach it to the form (so a re-render keeps
    it and nothing is uploaded twice). None when one failed; its issues are on the form.

    Each upload's requestId derives from the form's, so a resent form replays the same uploads."""
    uploaded, failed = [], False
    for index, upload in enumerate(request.FILES.getlist("evidence_files")):
        if too_large(upload.size):  # refused before it is read and encoded
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


def decide_post(request, identity, item):
    post = request.POST
    form = form_for(item, presentation_for(item.run.version_id))
    form.fill_from_post(post)
    request_id = post.get("request_id") or new_request_id()
    if post.get("edit"):
        # A row editor's button (add, remove, move a row or a column) without JavaScript: nothing
        # is decided; files chosen so far are uploaded now so they stay attached.
        _upload_files(identity, request, form, request_id)
        form.edit(post["edit"])
        # The snapshot stays the one first shown: an edit must not turn a stale page into a fresh one.
        return rerender(request, identity, item, form, banner=None, status=200, request_id=request_id,
                         kept={"form_snapshot": post.get("snapshot", ""), "form_shown": post.get("shown", "")})
    decision = post.get("decision", "")
    arguments = {"runId": item.run_id, "workItemId": item.id, "snapshot": post.get("snapshot", ""),
                 "requestId": request_id}
    if decision:
        arguments["decision"] = decision
    if decision == "completed":
        if _upload_files(identity, request, form, request_id) is None:
            return rerender(request, identity, item, form, banner={
                "kind": "error", "title": "A file could not be uploaded",
                "message": "Nothing was decided. Fix the files and decide again."}, status=422)
        arguments.update(form.completion_arguments())
        if form.refuse_local_problems():
            return rerender(request, identity, item, form, banner={
                "kind": "error", "title": "Check the highlighted values",
                "message": "Nothing was decided. Each value is shown next to what it should look like."}, status=422)
    elif form.note.strip():
        arguments["note"] = form.note
    with work_item_read_already(item):  # the tool decides with this row; it checks who may
        envelope = call_tool(identity, "decide", arguments, transport="browser")
    if envelope["ok"]:
        view = envelope["data"]
        run = view["run"]
        state = run["state"] + (f" ({run['outcome']})" if run.get("outcome") else "")
        done = presenting.DONE_LABELS.get(decision, decision)
        back = inbox_query(post)
        messages.success(request, format_html(
            '{} <a href="{}">Open the run</a>{}', f"{done}: {run['process']} · {humanize(item.step_id)}. "
            f"The run is now {state}.", reverse("workqueue:run", args=[run["id"]]), next_item_link(identity, back)))
        return redirect(reverse("workqueue:inbox") + (f"?{back}" if back else ""))
    return _after_refusal(request, identity, item, form, envelope["error"], request_id, post)


def _after_refusal(request, identity, item, form, error, request_id, post):
    code, issues = error["code"], error.get("issues") or []
    status = HTTP_STATUS.get(code, 400)
    if code == "not_found" and not can_see(identity, item.run):  # as for an id that never existed
        raise Http404("No such work item in your organization.")
    if not is_assigned(identity, item) and not identity.is_operator:
        return not_yours(request)  # the refusal path only: what follows shows the item
    if refusals.conflict_of(error) == ConflictIssue.ALREADY_DECIDED:
        item.refresh_from_db()
        banner = {"kind": "warning", "title": "Someone already decided this item",
                  "message": f"{item.decided_by} decided it ({item.decision}) at "
                             f"{item.decided_at:%Y-%m-%d %H:%M UTC}. Your decision was not applied.",
                  "detail": error["message"]}
        return rerender(request, identity, item, form, banner=banner, status=status)
    if refusals.conflict_of(error) == ConflictIssue.RUN_ENDED:
        banner = {"kind": "warning", "title": "The run has ended",
                  "message": "Your decision was not applied: the run ended or was cancelled.",
                  "detail": error["message"]}
        return rerender(request, identity, item, form, banner=banner, status=status)
    if code == "stale":
        envelope = call_tool(identity, "get_run", {"runId": item.run_id})
        if not envelope["ok"]:
            return error_page(request, envelope["error"])
        inputs_changed, changed = presenting.changed_parts(post.get("shown", ""), envelope["data"])
        names = [f"{humanize(step_id)} ({step_id})" for step_id in changed]
        if inputs_changed:
            names.insert(0, "the run's inputs")
        banner = {"kind": "warning", "title": "The run changed since you opened this item",
                  "message": "Your decision was not applied. Review the fresh data below and decide again.",
                  "changed": names}
        return render_item(request, identity, item, envelope["data"], form, banner=banner, status=status)
    if code in ("not_accepted", "invalid"):
        form.show_issues(issues or [error["message"]])
        banner = {"kind": "error", "title": "Not accepted" if code == "not_accepted" else "Check the form",
                  "message": error["message"] + ". Every issue is shown next to its field."}
        return rerender(request, identity, item, form, banner=banner, status=status)
    if code == "retry":
        banner = {"kind": "error", "title": "Try again", "message": error["message"]}
        return rerender(request, identity, item, form, banner=banner, request_id=request_id, status=status)
    return error_page(request, error)
