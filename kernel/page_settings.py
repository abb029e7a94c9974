"""A person's page settings (issue 16, point 2): the time zone their pages use."""

import zoneinfo

from django.db import transaction

from .errors import Issue, invalid
from .models import Member, PageSettings


def time_zone_of(user) -> str:
    """The zone the person chose ('' for their browser's)."""
    row = PageSettings.objects.filter(user=user).only("time_zone").first()
    return row.time_zone if row else ""


@transaction.atomic
def set_time_zone(*, user, name: str) -> str:
    name = (name or "").strip()
    if name and name not in zoneinfo.available_timezones():
        raise invalid("the time zone was not saved", [Issue("time zone", f"“{name[:64]}” is not a time zone we know", "unknown_time_zone")])
    organization_id = Member.objects.filter(user=user).values_list("organization_id", flat=True).first()
    PageSettings.objects.update_or_create(user=user, defaults={"time_zone": name, "organization_id": organization_id})
    return name
