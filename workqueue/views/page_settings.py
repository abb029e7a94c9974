"""How pages are shown to a person: the time zone."""

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from kernel import page_settings
from kernel.errors import ToolError

from ..middleware import SESSION_KEY as PAGE_TIME_ZONE
from .plumbing import person_view


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
