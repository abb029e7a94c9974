"""Adding, listing, rotating, pausing, resuming and removing an organization's webhook
subscriptions (issue 28, point 1). Every refusal is a `Refused` with a code and a plain message;
a refused change changes nothing."""

import datetime as dt

from django.conf import settings
from django.db import transaction

from kernel.models import OrganizationGroup

from ..models import CHAT_KINDS, FORMATS, KINDS, STANDARD, Delivery, Subscription, new_secret
from . import addresses, events, signing
from .addresses import Refused


def _kinds(kinds) -> list[str]:
    chosen = [kind.strip() for kind in kinds if kind and kind.strip()]
    unknown = [kind for kind in chosen if kind not in KINDS]
    if unknown:
        raise Refused("kinds", f"unknown event kind(s): {', '.join(unknown)}; the kinds are {', '.join(KINDS)}")
    if not chosen:
        raise Refused("no_kinds", f"name at least one event kind: {', '.join(KINDS)}")
    return [kind for kind in KINDS if kind in chosen]  # the README's order, each once


def _secret(secret: str | None) -> str:
    if secret is None or secret == "":
        return new_secret()
    if not signing.valid_secret(secret):
        raise Refused("secret", "a secret is whsec_ followed by at least 24 bytes in base64 "
                                "(leave it out and one is made for you)")
    return secret


def forget_later(organization_id: int) -> None:
    """What the organization's subscriptions want is read again (this process now, others within
    events.CACHE_SECONDS)."""
    transaction.on_commit(lambda: events.forget(organization_id))
    events.forget(organization_id)


def _chat(form: str, group: str, kinds, organization) -> tuple[str, list[str]]:
    """A chat channel's group (one of the organization's) and kinds (CHAT_KINDS unless named)."""
    if form not in FORMATS:
        raise Refused("format", f"unknown format {form!r}; the formats are {', '.join(FORMATS)}")
    if form == STANDARD:
        if group:
            raise Refused("group", "--group is for chat channels (--format slack or teams)")
        return "", _kinds(kinds)
    if not group:
        raise Refused("group", f"a {form} channel tells one group of its work: name it with --group")
    if group != organization.operators.name and not OrganizationGroup.objects.filter(
            organization=organization, group__name=group).exists():
        raise Refused("group", f"{organization.slug} has no group {group!r}")
    chosen = _kinds(kinds) if [k for k in kinds if k and k.strip()] else list(CHAT_KINDS)
    other = [kind for kind in chosen if kind not in CHAT_KINDS]
    if other:
        raise Refused("kinds", f"a chat channel hears of {', '.join(CHAT_KINDS)} only, not {', '.join(other)}")
    return group, chosen


@transaction.atomic
def add(*, organization, url: str, kinds, process: str = "", test_runs: bool = False, secret: str | None = None,
        form: str = STANDARD, group: str = "", now: dt.datetime) -> Subscription:
    addresses.vet(url)  # a URL it may not go to is refused now, with why
    group, kinds = _chat(form, (group or "").strip(), list(kinds or []), organization)
    subscription = Subscription.objects.create(
        organization=organization, url=url.strip(), kinds=kinds, process=(process or "").strip(),
        test_runs=test_runs, secret=_secret(secret), format=form, group=group, created_at=now)
    forget_later(organization.id)
    return subscription


def of(organization):
    return Subscription.objects.filter(organization=organization).order_by("id")


def get(organization, subscription_id) -> Subscription:
    try:
        return Subscription.objects.get(organization=organization, pk=int(subscription_id))
    except (ValueError, Subscription.DoesNotExist):
        raise Refused("not_found", f"no webhook subscription {subscription_id} in {organization.slug}") from None


@transaction.atomic
def remove(*, organization, subscription_id) -> Subscription:
    subscription = get(organization, subscription_id)
    subscription.delete()
    forget_later(organization.id)
    return subscription


@transaction.atomic
def rotate(*, organization, subscription_id, secret: str | None = None, grace_hours: float | None = None,
           now: dt.datetime) -> Subscription:
    """A new secret; the old one keeps signing (both signatures sent) for the grace period."""
    subscription = get(organization, subscription_id)
    grace = settings.WEBHOOK_SECRET_GRACE_HOURS if grace_hours is None else grace_hours
    new = _secret(secret)
    if new == subscription.secret:
        raise Refused("secret", "the new secret is the current one")
    subscription.previous_secret, subscription.previous_secret_until = subscription.secret, now + dt.timedelta(hours=grace)
    subscription.secret = new
    subscription.save(update_fields=["secret", "previous_secret", "previous_secret_until"])
    return subscription


@transaction.atomic
def resume(*, organization, subscription_id, now: dt.datetime) -> Subscription:
    """Deliveries go again, those given up too: their retries start over."""
    subscription = get(organization, subscription_id)
    subscription.paused_at, subscription.paused_reason = None, ""
    subscription.save(update_fields=["paused_at", "paused_reason"])
    subscription.deliveries.filter(state=Delivery.GAVE_UP).update(state=Delivery.PENDING, next_attempt_at=now,
                                                                  retrying_since=now)
    subscription.deliveries.filter(state=Delivery.PENDING).update(retrying_since=now)
    return subscription
