"""The notification settings page (issue 15, point 6): for each kind of notice, right away, in a
summary mail, or not at all. The view parses the form and calls the service; the rules (which
kinds a person can choose, the defaults, what a choice means) live in runs/services/notifications.py."""

import zoneinfo
from dataclasses import replace

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from api.tools import call_tool
from kernel.models import Delivery
from kernel.page_settings import time_zone_of
from runs.services.notifications import choices_of

from .plumbing import person_view


def _how_often() -> str:
    """NOTICE_DIGEST_MINUTES in words: "once an hour", "once every 15 minutes"."""
    minutes = float(settings.NOTICE_DIGEST_MINUTES)
    if minutes == 60:
        return "once an hour"
    if minutes > 60 and minutes % 60 == 0:
        return f"once every {minutes / 60:g} hours"
    return f"once every {minutes:g} minutes"


ZONES = sorted(zone for zone in zoneinfo.available_timezones() if "/" in zone and not zone.startswith(("Etc/", "SystemV/")))


@person_view
@require_http_methods(["GET", "POST"])
def notification_settings(request, identity):
    status, errors = 200, []
    choices = choices_of(identity)
    if request.method == "POST":
        chosen = {key.removeprefix("notice-"): value for key, value in request.POST.items() if key.startswith("notice-")}
        envelope = call_tool(identity, "save_notice_choices", {"chosen": chosen}, transport="browser")
        if not envelope["ok"]:
            status, errors = 400, envelope["error"].get("issues") or [envelope["error"]["message"]]
            # Show what they sent, so nothing they chose is lost; unknown values fall back to what was kept.
            choices = [replace(choice, delivery=chosen[choice.kind]) if chosen.get(choice.kind) in Delivery.values
                       else choice for choice in choices]
        else:
            messages.success(request, "Your notification settings are saved.")
            return redirect(reverse("workqueue:notification_settings"))
    return render(request, "workqueue/notification_settings.html", {
        "choices": choices, "deliveries": Delivery.choices, "errors": errors, "how_often": _how_often(),
        "time_zone": time_zone_of(request.user), "zones": ZONES,
    }, status=status)
