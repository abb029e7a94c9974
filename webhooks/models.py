"""Webhook subscriptions, their deliveries and every attempt (issue 28).

An event is written to the notice outbox (runs.models.Notice, delivery "webhook") in the
transaction of its change; the worker turns each such row into one Delivery per subscription that
hears of it (webhooks/services/fanout.py) and sends it (webhooks/services/sending.py), recording
each Attempt."""

import base64
import secrets

from django.db import models
from django.db.models import Q

from kernel.models import Organization
from runs.ids import new_id

# Every kind an event can have, in the order the README lists them, with what it means in plain
# words (the operators' page labels its checkboxes with them; admin and the CLI accept the same).
KIND_LABELS = {
    "run.started": "A run started",
    "run.ended": "A run ended (any outcome but failed)",
    "run.failed": "A run failed",
    "run.cancelled": "An operator cancelled a run",
    "step.ready": "An agent step is ready to claim",
    "work_item.waiting": "Work waits for a person or group",
    "work_item.decided": "A person decided a work item",
    "run.escalated": "A step was escalated to the operators",
    "work_item.overdue": "A step is overdue",
    "alert.fired": "An alert rule on a process's figures started",
    "alert.cleared": "An alert rule cleared",
}
KINDS = tuple(KIND_LABELS)
# Kinds about no run (insight/alerts.py): no run id, no business key; in order per subscription.
ALERT_KINDS = ("alert.fired", "alert.cleared")
SECRET_PREFIX = "whsec_"
# What a subscription's body is: the signed JSON event, or a chat message (issue 28, point 5).
STANDARD, SLACK, TEAMS = "standard", "slack", "teams"
FORMATS = (STANDARD, SLACK, TEAMS)
# What a chat channel hears of: work waiting for its group, overdue, escalations.
CHAT_KINDS = ("work_item.waiting", "work_item.overdue", "run.escalated")


def new_secret() -> str:
    """A Standard Webhooks secret: whsec_ and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def new_webhook_id() -> str:
    return new_id("msg")


class Subscription(models.Model):
    """A receiver of an organization's events: a URL, the kinds it hears of, optionally one
    process's runs only, test runs only when asked, and the secret its deliveries are signed with."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=2000)
    kinds = models.JSONField(default=list)  # a subset of KINDS
    process = models.CharField(max_length=64, blank=True)  # "" = every process
    test_runs = models.BooleanField(default=False)
    secret = models.CharField(max_length=200)
    # standard: the signed JSON event; slack / teams: a chat message in that incoming-webhook format,
    # about the work of one group (`group`) only.
    format = models.CharField(max_length=16, default=STANDARD)
    group = models.CharField(max_length=150, blank=True)
    # After a rotation the old secret still signs (both signatures sent) until this time.
    previous_secret = models.CharField(max_length=200, blank=True)
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    # Paused: deliveries wait (none is lost) until an operator resumes it.
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"{self.url} ({', '.join(self.kinds)})"

    @property
    def is_chat(self) -> bool:
        return self.format != STANDARD


class Delivery(models.Model):
    """One event for one subscription: its webhook-id stays the same on every attempt (receivers
    dedupe by it); sent in order per subscription and run (event_seq); events about no run (alerts)
    in order among themselves per subscription."""

    PENDING, DELIVERED, GAVE_UP = "pending", "delivered", "gave_up"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="deliveries")
    webhook_id = models.CharField(max_length=24, unique=True, default=new_webhook_id)
    event_seq = models.BigIntegerField()  # the outbox row's id: the order of events
    kind = models.CharField(max_length=32)
    run_id = models.CharField(max_length=24, blank=True)  # "" for an event about no run (ALERT_KINDS)
    payload = models.JSONField()
    created_at = models.DateTimeField()
    state = models.CharField(max_length=16, default=PENDING)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Retries give up WEBHOOK_RETRY_HOURS after this (made, resumed, or sent again).
    retrying_since = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=0)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["next_attempt_at", "id"], name="webhook_delivery_due",
                         condition=Q(state="pending")),
            models.Index(fields=["subscription", "run_id", "event_seq"], name="webhook_delivery_order"),
            models.Index(fields=["created_at"], name="webhook_delivery_created"),
        ]

    def __str__(self):
        return f"{self.kind} {self.webhook_id}"


class Attempt(models.Model):
    """One try at sending a delivery: what the receiver answered, how fast, and when the next try is."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_rows")
    at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    answer = models.CharField(max_length=500, blank=True)  # the first bytes of the answer
    error = models.CharField(max_length=500, blank=True)
    next_retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"{self.status_code or self.error} at {self.at:%Y-%m-%d %H:%M:%S}"
