"""Deciding or cancelling many at once from the inbox and the runs list."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from runs.services.decisions import note_rule

from .. import bulk, presenting
from .plumbing import new_request_id, operator_view, person_view


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
                                note=post.get("note", ""), request_id=post.get("request_id") or new_request_id())
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
                                request_id=post.get("request_id") or new_request_id())
    return render(request, "workqueue/bulk_result.html", {
        "outcomes": outcomes, "summary": bulk.summary(outcomes), "back": back, "action": "Cancelled",
        "kind": "cancel",
    })
