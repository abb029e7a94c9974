"""Sending deliveries (issue 28, point 3): at least once, in order per subscription and run.

A pass takes due deliveries in small batches (SKIP LOCKED, so two workers never take one), only
the first pending delivery of each subscription and run (a later event waits for the earlier
one), of subscriptions not paused, and moves their time on by WEBHOOK_SEND_LEASE_SECONDS before
sending: no transaction is held while the receiver answers, and a worker that dies mid-delivery
leaves it to be sent again, with the same webhook-id, when that time comes. Each attempt is
recorded (status, latency, the first bytes of the answer, the next try). A failure is retried
with an exponential pause and jitter (FIRST_PAUSE doubling up to LONGEST_PAUSE, each drawn between
half and all of it) for WEBHOOK_RETRY_HOURS; then the delivery is given up, its subscription
paused and the operators told by mail. At most WEBHOOK_CONCURRENCY_PER_URL deliveries go to one
receiver (scheme, host and port) at a time, counted in the shared cache."""

import datetime as dt
import json
import logging
import random
import secrets
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, F, OuterRef

from kernel import observe
from runs.models import Notice
from runs.services import outbox

from ..models import Attempt, Delivery, Subscription
from . import http, signing
from .addresses import Refused

log = logging.getLogger(__name__)
BATCH = 20
FIRST_PAUSE = dt.timedelta(seconds=30)
LONGEST_PAUSE = dt.timedelta(hours=2)
BUSY_PAUSE = dt.timedelta(seconds=2)  # a receiver at its concurrency limit: try again this soon


def pause_after(attempts: int, rng=random) -> dt.timedelta:
    """The pause after the n-th failed attempt: exponential, capped, with jitter (half to all of it)."""
    full = min(FIRST_PAUSE * 2 ** max(attempts - 1, 0), LONGEST_PAUSE)
    return full * rng.uniform(0.5, 1.0)


def body_of(delivery: Delivery) -> str:
    return json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


@observe.swept("webhooks", items=sum)
def send_due(now_of) -> tuple[int, int]:
    """Send every due delivery; (delivered, failed) of this pass. `now_of()` is the clock (read
    again for each batch: a pass can outlast a timeout)."""
    delivered = failed = 0
    # Every delivery taken is delivered or moved on (a retry, a busy receiver): the loop ends. A
    # run's next event becomes due when its earlier one is delivered, in the same pass.
    while taken := _take(now_of()):
        for delivery in taken:
            result = _send(delivery, now_of)
            delivered += result is True
            failed += result is False
    return delivered, failed


def _take(now) -> list[Delivery]:
    earlier = Delivery.objects.filter(subscription_id=OuterRef("subscription_id"), run_id=OuterRef("run_id"),
                                      state=Delivery.PENDING, event_seq__lt=OuterRef("event_seq"))
    with transaction.atomic():
        due = list(Delivery.objects.filter(state=Delivery.PENDING, next_attempt_at__lte=now,
                                           subscription__paused_at__isnull=True)
                   .filter(~Exists(earlier)).select_related("subscription")
                   .order_by("next_attempt_at", "id").select_for_update(skip_locked=True, of=("self",))[:BATCH])
        until = now + dt.timedelta(seconds=settings.WEBHOOK_SEND_LEASE_SECONDS)
        Delivery.objects.filter(pk__in=[d.pk for d in due]).update(next_attempt_at=until)
    return due


def _receiver(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class _Slot:
    """One of a receiver's WEBHOOK_CONCURRENCY_PER_URL places (cache keys that expire with the lease)."""

    def __init__(self, url: str):
        self.base = f"webhooks:slot:{_receiver(url)}"
        self.key = None

    def __enter__(self):
        mark = secrets.token_hex(8)
        for index in range(max(settings.WEBHOOK_CONCURRENCY_PER_URL, 1)):
            key = f"{self.base}:{index}"
            if cache.add(key, mark, timeout=settings.WEBHOOK_SEND_LEASE_SECONDS):
                self.key = key
                break
        return self.key is not None

    def __exit__(self, *exc):
        if self.key:
            cache.delete(self.key)


def _send(delivery: Delivery, now_of) -> bool | None:
    """True delivered, False failed, None not tried (the receiver was busy)."""
    subscription = delivery.subscription
    with _Slot(subscription.url) as free:
        if not free:
            Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=now_of() + BUSY_PAUSE)
            return None
        at = now_of()
        body = body_of(delivery)
        answer = http.post(subscription.url, body.encode(), signing.headers(subscription, delivery.webhook_id, body, at))
    _record(delivery, answer, at, now_of())
    return answer.ok


@transaction.atomic
def _record(delivery: Delivery, answer: http.Answer, at, now) -> None:
    attempt = Attempt(organization_id=delivery.organization_id, delivery=delivery, at=at, status_code=answer.status,
                      latency_ms=answer.latency_ms, answer=answer.body.decode("utf-8", "replace")[:500],
                      error=answer.error)
    updates = {"attempts": F("attempts") + 1}
    if answer.ok:
        updates.update(state=Delivery.DELIVERED, delivered_at=now, next_attempt_at=None)
    elif now - delivery.retrying_since >= dt.timedelta(hours=settings.WEBHOOK_RETRY_HOURS):
        updates.update(state=Delivery.GAVE_UP, next_attempt_at=None)
        _pause(delivery.subscription, now, f"gave up on {delivery.kind} {delivery.webhook_id} after "
                                           f"{delivery.attempts + 1} attempts over {settings.WEBHOOK_RETRY_HOURS:g} h: "
                                           f"{_why(answer)}")
    else:
        attempt.next_retry_at = updates["next_attempt_at"] = now + pause_after(delivery.attempts + 1)
        log.warning("webhook %s to %s not delivered (attempt %s, next at %s): %s", delivery.webhook_id,
                    delivery.subscription.url, delivery.attempts + 1, attempt.next_retry_at.isoformat(), _why(answer))
    attempt.save()
    # Conditional: "send again" may have moved it meanwhile; a delivery marked delivered stays so.
    Delivery.objects.filter(pk=delivery.pk).exclude(state=Delivery.DELIVERED).update(**updates)


def _why(answer: http.Answer) -> str:
    return f"HTTP {answer.status}" if answer.status is not None else answer.error


def _pause(subscription: Subscription, now, reason: str) -> None:
    """Pause a subscription that keeps failing, and tell the organization's operators (by mail,
    through the notice outbox: never lost)."""
    paused = Subscription.objects.filter(pk=subscription.pk, paused_at__isnull=True).update(
        paused_at=now, paused_reason=reason[:500])
    if not paused:
        return
    operators = get_user_model().objects.filter(groups__operators_of__id=subscription.organization_id,
                                                is_active=True).exclude(email="").values_list("email", flat=True)
    body = (f"- The webhook to {subscription.url} is paused: {reason}.\n"
            f"  Its deliveries wait, none is lost. When the receiver works again, resume it:\n"
            f"  {settings.PUBLIC_BASE_URL}/operators/webhooks/{subscription.pk}\n"
            f"  or: manage.py webhooks resume {subscription.pk}")
    outbox.queue([Notice(organization_id=subscription.organization_id, kind="webhook_paused", recipient=email,
                         delivery="immediately", subject=f"Webhook paused: {subscription.url}"[:255], body=body,
                         about=[], created_at=now, send_after=now) for email in sorted(set(operators))])
    log.warning("webhook subscription %s to %s paused: %s", subscription.pk, subscription.url, reason)


@transaction.atomic
def send_again(*, organization, delivery_id, now) -> Delivery:
    """One delivery once more, with the same webhook-id (receivers dedupe by it)."""
    try:
        delivery = Delivery.objects.select_for_update().get(organization=organization, pk=int(delivery_id))
    except (ValueError, Delivery.DoesNotExist):
        raise Refused("not_found", f"no webhook delivery {delivery_id} in {organization.slug}") from None
    delivery.state, delivery.next_attempt_at, delivery.retrying_since = Delivery.PENDING, now, now
    delivery.save(update_fields=["state", "next_attempt_at", "retrying_since"])
    return delivery


@transaction.atomic
def replay_since(*, organization, subscription_id, since, now) -> int:
    """Every delivery of the subscription made since then, once more, each with its own webhook-id
    (in order per run, as the first time); the number."""
    subscription = Subscription.objects.filter(organization=organization, pk=subscription_id).first()
    if subscription is None:
        raise Refused("not_found", f"no webhook subscription {subscription_id} in {organization.slug}")
    return subscription.deliveries.filter(created_at__gte=since).update(state=Delivery.PENDING, next_attempt_at=now,
                                                                       retrying_since=now)


def forget_before(now) -> int:
    """Deliveries (and their attempts) older than WEBHOOK_LOG_DAYS that are done; the number removed."""
    old = Delivery.objects.filter(created_at__lt=now - dt.timedelta(days=settings.WEBHOOK_LOG_DAYS)).exclude(
        state=Delivery.PENDING)
    return old.delete()[1].get("webhooks.Delivery", 0)
