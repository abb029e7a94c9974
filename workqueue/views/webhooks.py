"""The operators' webhook pages (issue 28, point 4): the organization's subscriptions, and one
subscription's delivery log (every attempt: time, status, latency, the answer's first bytes, the
next try) with "Send again" for one delivery (the same webhook-id) and "Replay since" a moment."""

import datetime as dt

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from api.tools import call_tool
from webhooks import selectors

from .plumbing import operator_view, problem


@operator_view
def webhooks(request, identity):
    return render(request, "workqueue/webhooks.html", {"subscriptions": selectors.subscriptions_of(identity.organization)})


@operator_view
def webhook_log(request, identity, subscription_id: int):
    subscription = selectors.subscription(identity.organization, subscription_id)
    if subscription is None:
        raise Http404("No such webhook subscription in your organization.")
    return render(request, "workqueue/webhook_log.html", {
        "subscription": subscription, "deliveries": selectors.delivery_log(subscription),
        "shown": selectors.LOG_ROWS})


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
