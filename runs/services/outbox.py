"""The notice outbox (issue 13, point 4): a notice is never lost.

A notice is a row written in the same transaction as what it tells (an overdue crossing), so it
exists exactly when that happened. `send_due` takes due rows in small batches (SKIP LOCKED, so two
workers never take one) and moves their time on by NOTICE_SEND_LEASE_SECONDS before it sends:
no transaction is held while the mail server answers, and a worker that dies after taking a row
leaves it to be sent again when that time comes. Each row is marked sent after its mail went; a
send that fails is retried with a doubling pause (1 minute up to an hour) and logged. At least
once, never lost.
"""

import datetime as dt
import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction

from kernel import audit
from kernel.models import EventKind

from ..models import Notice
from . import locks

log = logging.getLogger(__name__)
BATCH = 50
FIRST_PAUSE = dt.timedelta(minutes=1)
LONGEST_PAUSE = dt.timedelta(hours=1)


def pause_after(attempts: int) -> dt.timedelta:
    return min(FIRST_PAUSE * 2 ** max(attempts - 1, 0), LONGEST_PAUSE)


def queue(notices: list[Notice]) -> None:
    """Store notices with the change they tell (the caller's transaction)."""
    if notices:
        Notice.objects.bulk_create(notices)


def send_due(now: dt.datetime) -> tuple[int, int]:
    """Send every notice whose time has come; (sent, failed) of this pass."""
    sent = failed = 0
    while True:
        taken = _take(now)
        for notice in taken:
            if _send(notice, now):
                sent += 1
            else:
                failed += 1
        if len(taken) < BATCH:
            return sent, failed


@transaction.atomic
def _take(now: dt.datetime) -> list[Notice]:
    due = locks.due_notices(Notice.objects.filter(sent_at__isnull=True, send_after__lte=now)
                            .order_by("send_after", "id"), BATCH)
    if due:
        until = now + dt.timedelta(seconds=settings.NOTICE_SEND_LEASE_SECONDS)
        Notice.objects.filter(pk__in=[notice.pk for notice in due]).update(send_after=until)
    return due


def _send(notice: Notice, now: dt.datetime) -> bool:
    try:
        send_mail(notice.subject, notice.body, settings.DEFAULT_FROM_EMAIL, [notice.recipient], fail_silently=False)
    except Exception as error:  # noqa: BLE001 - any failure of the mail system: retry later, never drop
        notice.attempts += 1
        notice.send_after = now + pause_after(notice.attempts)
        notice.last_error = f"{type(error).__name__}: {error}"[:1000]
        notice.save(update_fields=["attempts", "send_after", "last_error"])
        log.warning("notice %s to %s not sent (attempt %s, next at %s): %s", notice.pk, notice.recipient,
                    notice.attempts, notice.send_after.isoformat(), notice.last_error)
        return False
    _mark_sent(notice, now)
    return True


@transaction.atomic
def _mark_sent(notice: Notice, now: dt.datetime) -> None:
    notice.attempts += 1
    notice.sent_at = now
    notice.last_error = ""
    notice.save(update_fields=["attempts", "sent_at", "last_error"])
    audit.write([audit.event(EventKind.NOTICE_SENT, organization_id=notice.organization_id, actor=audit.SERVER,
                             at=now, run_id=item.get("run"), step_id=item.get("step"),
                             work_item_id=item.get("workItem"), data={"to": notice.recipient, "notice": notice.kind})
                 for item in notice.about])
