"""When a person last looked at their inbox: what arrived after that look is "new" next time."""

import datetime as dt

from kernel.identity import Identity

from ..models import InboxVisit


def mark_seen(identity: Identity, now: dt.datetime, *, known: bool) -> None:
    """Move the person's last look to `now` (`known`: they have looked before)."""
    if not known:
        InboxVisit.objects.get_or_create(user=identity.user, defaults={"seen_at": now,
                                                                       "organization": identity.organization})
    else:  # one UPDATE, and never back in time when two tabs race
        InboxVisit.objects.filter(user=identity.user, seen_at__lt=now).update(seen_at=now)
