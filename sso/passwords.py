"""Who may sign in with a password kept here (issue 25, point 3). With PASSWORD_LOGIN on, everyone
with a password; off, only the superusers named in BREAK_GLASS_ACCOUNTS (the way in when the
identity provider is down), each such sign-in an audit event."""

from django.conf import settings

from kernel import audit, clock
from kernel.models import EventKind, Member
from kernel.organizations import default_organization


def on() -> bool:
    return settings.PASSWORD_LOGIN


def break_glass(user) -> bool:
    return bool(user.is_superuser and user.get_username() in settings.BREAK_GLASS_ACCOUNTS)


def may_use_password(user) -> bool:
    return on() or break_glass(user)


def record_break_glass(user, address: str) -> None:
    member = Member.objects.filter(user=user).only("organization_id").first()
    organization_id = member.organization_id if member else default_organization().id
    audit.record(EventKind.BREAK_GLASS_SIGN_IN, organization_id=organization_id, actor=audit.Actor.admin(user),
                 at=clock.now(), data={"account": user.get_username(), "address": address})
