"""How pages are shown to a person: the time zone."""

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from api.tools import call_tool

from .. import refusals
from ..middleware import SESSION_KEY as PAGE_TIME_ZONE
from .plumbing import person_view


# ---------------------------------------------------------------- page settings


@person_view
@require_POST
def time_zone(request, identity):
    envelope = call_tool(identity, "set_time_zone", {"name": request.POST.get("time_zone", "")}, transport="browser")
    if not envelope["ok"]:
        messages.error(request, "Not saved: " + "; ".join(refusals.problems(envelope["error"])) + ".")
    else:
        name = envelope["data"]["name"]
        request.session[PAGE_TIME_ZONE] = name
        messages.success(request, f"Times are now shown in {name}." if name else
                         "Times are now shown in your browser's time zone.")
    return redirect("workqueue:notification_settings")
