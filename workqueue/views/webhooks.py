"""The operators' webhook pages (issue 28, points 1 and 4): the organization's subscriptions, with
a form to add one (its secret shown once, like `manage.py webhooks add` prints it), and one
subscription's delivery log (every attempt: time, status, latency, the answer's first bytes, the
next try) with "Send again" for one delivery (the same webhook-id), "Replay since" a moment, and
rotating its secret (the new one shown once), resuming and removing it. Every write goes through
call_tool (api/tools/page_tools.py) to the services the command line uses."""

import datetime as dt

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from api.tools import call_tool
from webhooks import selectors
from webhooks.models import KIND_LABELS

from .. import refusals
from .plumbing import operator_view, problem, process_catalog

# The page's sentence for a refusal, by its code (workqueue/refusals.py: never by its text); a code
# not named here shows the service's own message (where a URL may not go, and why).
ADD_SENTENCES = {"no_kinds": "Choose at least one kind of event."}


def _list(request, identity, *, form=None, errors=None, created=None, status=200):
    return render(request, "workqueue/webhooks.html", {
        "subscriptions": selectors.subscriptions_of(identity.organization), "kinds": KIND_LABELS.items(),
        "processes": [item["name"] for item in process_catalog(identity)], "form": form or {},
        "errors": errors or {}, "created": created}, status=status)


@operator_view
def webhooks(request, identity):
    return _list(request, identity)


@operator_view
@never_cache
@require_POST
def webhook_add(request, identity):
    form = {"url": request.POST.get("url", "").strip(), "kinds": request.POST.getlist("kinds"),
            "process": request.POST.get("process", "").strip(), "test_runs": request.POST.get("test_runs") == "on"}
    envelope = call_tool(identity, "webhook_add", {"url": form["url"], "kinds": form["kinds"],
                                                   "process": form["process"], "testRuns": form["test_runs"]},
                         transport="browser")
    if not envelope["ok"]:
        errors = {}
        for issue in envelope["error"].get("issues") or [envelope["error"]["message"]]:
            field = getattr(issue, "path", "url")
            errors[field] = ADD_SENTENCES.get(getattr(issue, "code", ""), refusals.problem_of(issue))
        return _list(request, identity, form=form, errors=errors, status=400)
    # Shown on this answer only (never cached, never stored in the session): copy it now.
    return _list(request, identity, created=envelope["data"]["subscription"])


def _log(request, subscription, *, rotated=None):
    return render(request, "workqueue/webhook_log.html", {
        "subscription": subscription, "deliveries": selectors.delivery_log(subscription),
        "shown": selectors.LOG_ROWS, "rotated": rotated, "kind_labels": KIND_LABELS})


@operator_view
def webhook_log(request, identity, subscription_id: int):
    subscription = selectors.subscription(identity.organization, subscription_id)
    if subscription is None:
        raise Http404("No such webhook subscription in your organization.")
    return _log(request, subscription)


def _subscription_write(identity, tool: str, subscription_id: int):
    """The subscription the tool changed; 404 when the organization has no such subscription."""
    envelope = call_tool(identity, tool, {"subscriptionId": subscription_id}, transport="browser")
    if not envelope["ok"]:
        raise Http404("No such webhook subscription in your organization.")
    return envelope["data"]["subscription"]


@operator_view
@never_cache
@require_POST
def webhook_rotate(request, identity, subscription_id: int):
    subscription = _subscription_write(identity, "webhook_rotate", subscription_id)
    return _log(request, subscription, rotated=subscription)  # the new secret, on this answer only


@operator_view
@require_POST
def webhook_resume(request, identity, subscription_id: int):
    _subscription_write(identity, "webhook_resume", subscription_id)
    messages.success(request, "Resumed. Every delivery that waited goes out within seconds, in order; none was lost.")
    return redirect(reverse("workqueue:webhook_log", args=[subscription_id]))


@operator_view
@require_POST
def webhook_remove(request, identity, subscription_id: int):
    subscription = _subscription_write(identity, "webhook_remove", subscription_id)
    messages.success(request, f"Removed the webhook to {subscription.url}. It hears of nothing more; "
                              "its delivery log is gone with it.")
    return redirect(reverse("workqueue:webhooks"))


@operator_view
@require_POST
def webhook_send_again(request, identity, subscription_id: int, delivery_id: int):
    envelope = call_tool(identity, "webhook_send_again", {"deliveryId": delivery_id}, transport="browser")
    if not envelope["ok"] or envelope["data"]["delivery"].subscription_id != subscription_id:
        raise Http404("No such webhook delivery in your organization.")
    delivery = envelope["data"]["delivery"]
    messages.success(request, f"“{delivery.kind}” will be sent again within seconds, with the same webhook-id "
                              f"{delivery.webhook_id}.")
    return redirect(reverse("workqueue:webhook_log", args=[subscription_id]))


@operator_view
@require_POST
def webhook_replay(request, identity, subscription_id: int):
    text = request.POST.get("since", "").strip()
    try:
        since = dt.datetime.fromisoformat(text)
    except ValueError:
        return problem(request, 400, "Check the time", "Nothing was sent again.",
                       [f"since: “{text}” is not a date and time like 2026-10-06T09:00"])
    if since.tzinfo is None:
        since = since.replace(tzinfo=timezone.get_current_timezone())  # the person's zone (workqueue/middleware.py)
    envelope = call_tool(identity, "webhook_replay_since", {"subscriptionId": subscription_id, "since": since},
                         transport="browser")
    if not envelope["ok"]:
        raise Http404("No such webhook subscription in your organization.")
    count = envelope["data"]["count"]
    messages.success(request, f"{count} deliver{'y' if count == 1 else 'ies'} since {since:%d %b %Y, %H:%M} will "
                              "be sent again, each with its own webhook-id, in order per run.")
    return redirect(reverse("workqueue:webhook_log", args=[subscription_id]))
