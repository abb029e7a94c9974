"""Reads of the operators' webhook pages (issue 28, point 4): an organization's subscriptions with
their deliveries' counts (one aggregate), and one subscription's delivery log with every attempt
(two queries: deliveries, then their attempts)."""

from django.db.models import Count, Q

from .models import Attempt, Delivery, Subscription

LOG_ROWS = 50


def subscriptions_of(organization) -> list[Subscription]:
    return list(Subscription.objects.filter(organization=organization).annotate(
        waiting=Count("deliveries", filter=Q(deliveries__state=Delivery.PENDING)),
        given_up=Count("deliveries", filter=Q(deliveries__state=Delivery.GAVE_UP)),
        delivered=Count("deliveries", filter=Q(deliveries__state=Delivery.DELIVERED))).order_by("id"))


def subscription(organization, subscription_id: int) -> Subscription | None:
    return Subscription.objects.filter(organization=organization, pk=subscription_id).first()


def delivery_log(subscription: Subscription, limit: int = LOG_ROWS) -> list[Delivery]:
    """The newest deliveries, each with `.tries`: its attempts, newest first."""
    deliveries = list(Delivery.objects.filter(subscription=subscription).order_by("-id")[:limit])
    tries = {}
    for attempt in Attempt.objects.filter(delivery__in=deliveries).order_by("-id"):
        tries.setdefault(attempt.delivery_id, []).append(attempt)
    for delivery in deliveries:
        delivery.tries = tries.get(delivery.pk, [])
    return deliveries
