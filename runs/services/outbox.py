"""The notice outbox (issue 13, point 4; issue 15, point 6): a notice is never lost.

A notice is a row written in the same transaction as what it tells (an overdue crossing, new
work, an escalation, a return, an assignment), so it exists exactly when that happened. `send_due`
first fans out event rows into one row per person (runs/services/notifications.py), then takes
due rows in small batches (SKIP LOCKED, so two workers never take one), with every other due row
of the same people, and moves their time on by NOTICE_SEND_LEASE_SECONDS before it sends: no
transaction is held while the mail server answers, and a worker that dies after taking rows
leaves them to be sent again when that time comes. A person's rows that are due together go as
one mail, and are marked sent together after it went; a send that fails is retried with a
doubling pause (1 minute up to an hour) and logged. At least once, never lost.
"""

import datetime as dt
import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F

from kernel import audit, observe
from kernel.models import EventKind

from ..models import Notice
from . import locks, notifications

log = logging.getLogger(__name__)
BATCH = 50
PERSON_ROWS = 500  # at most this many rows in one person's mail; the rest go in the next
FIRST_PAUSE = dt.timedelta(minutes=1)
LONGEST_PAUSE = dt.timedelta(hours=1)


def pause_after(attempts: int) -> dt.timedelta:
    return min(FIRST_PAUSE * 2 ** max(attempts - 1, 0), LONGEST_PAUSE)


def queue(notices: list[Notice]) -> None:
    """Store notices with the change they tell (the caller's transaction)."""
    if notices:
        Notice.objects.bulk_create(notices)


@observe.swept("notices", items=sum)
def send_due(now: dt.datetime) -> tuple[int, int]:
    """Fan out the events whose time came, then send every person's due notices as one mail each;
    (mails sent, mails failed) of this pass."""
    notifications.fan_out(now)
    sent = failed = 0
    while True:
        mails, more = _take(now)
        for recipient, rows in mails.items():
            if _send(recipient, rows, now):
                sent += 1
            else:
                failed += 1
        if not more:
            return sent, failed


def _take(now: dt.datetime) -> tuple[dict[str, list[Notice]], bool]:
    """The mails of a batch ({recipient: rows}, the rows left out already marked), and whether
    there may be more due rows after it."""
    with transaction.atomic():
        due = Notice.objects.filter(sent_at__isnull=True, send_after__lte=now).exclude(delivery__in=Notice.FANNED_OUT)
        first = locks.due_notices(due.order_by("send_after", "id"), BATCH)
        if not first:
            return {}, False
        # The same people's other due rows go in the same mails.
        rest = locks.due_notices(due.filter(recipient__in={row.recipient for row in first}).exclude(
            pk__in=[row.pk for row in first]).order_by("send_after", "id"), PERSON_ROWS)
        taken = first + rest
        until = now + dt.timedelta(seconds=settings.NOTICE_SEND_LEASE_SECONDS)
        Notice.objects.filter(pk__in=[row.pk for row in taken]).update(send_after=until)
        for row in taken:
            row.send_after = until
    mails, left_out = notifications.sort_out(taken)
    if left_out:
        _mark_left_out(left_out, now)
    return mails, len(first) == BATCH


@transaction.atomic
def _mark_left_out(left_out: dict[int, str], now: dt.datetime) -> None:
    for reason in set(left_out.values()):
        Notice.objects.filter(pk__in=[pk for pk, why in left_out.items() if why == reason]).update(
            sent_at=now, outcome=reason)


def _send(recipient: str, rows: list[Notice], now: dt.datetime) -> bool:
    subject, body = notifications.compose(rows)
    ids = [row.pk for row in rows]
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [recipient], fail_silently=False)
    except Exception as error:  # noqa: BLE001 - any failure of the mail system: retry later, never drop
        attempts = max(row.attempts for row in rows) + 1
        retry_at = now + pause_after(attempts)
        last_error = f"{type(error).__name__}: {error}"[:1000]
        Notice.objects.filter(pk__in=ids).update(attempts=F("attempts") + 1, send_after=retry_at,
                                                 last_error=last_error)
        log.warning("notice %s to %s not sent (attempt %s, next at %s): %s", ", ".join(map(str, ids)), recipient,
                    attempts, retry_at.isoformat(), last_error)
        return False
    _mark_sent(recipient, rows, now)
    return True


@transaction.atomic
def _mark_sent(recipient: str, rows: list[Notice], now: dt.datetime) -> None:
    Notice.objects.filter(pk__in=[row.pk for row in rows]).update(attempts=F("attempts") + 1, sent_at=now,
                                                                  last_error="")
    audit.write([audit.event(EventKind.NOTICE_SENT, organization_id=row.organization_id, actor=audit.SERVER,
                             at=now, run_id=item.get("run"), step_id=item.get("step"),
                             work_item_id=item.get("workItem"), data={"to": recipient, "notice": row.kind})
                 for row in rows for item in row.about])
