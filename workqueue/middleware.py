"""The person's time zone for the pages (issue 16, point 2): the one they chose, else their
browser's (a cookie the page's script sets from Intl.DateTimeFormat), else UTC. Only a name the
tz database knows is used; anything else is ignored. The choice is read once per session (then
kept in the session), so a page costs no query for it."""

import zoneinfo

from django.utils import timezone

from kernel.page_settings import time_zone_of

COOKIE = "tz"
SESSION_KEY = "page_time_zone"


def zone_named(name: str | None):
    if not name or len(name) > 64 or ".." in name or name.startswith("/"):
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None


class PersonTimeZone:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        chosen = None
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            if SESSION_KEY not in request.session:
                request.session[SESSION_KEY] = time_zone_of(user)
            chosen = zone_named(request.session[SESSION_KEY])
        zone = chosen or zone_named(request.COOKIES.get(COOKIE))
        if zone is not None:
            timezone.activate(zone)
        else:
            timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
