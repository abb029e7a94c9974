"""Reads of the browser inbox that no tool offers: the person's open items sorted by due with
filters and counts, and the operators' queues. Every query here is constant in the number of rows.

The assignment rule (which open items are a person's) is the tools' own: `open_items_for`.
"""

import json
from dataclasses import dataclass

from django.db.models import Count, F, Q, TextField
from django.db.models.functions import Cast

from kernel.identity import Identity
from runs.models import CLAIMABLE, StepState, WorkItem, WorkItemState
from runs.selectors import open_items_for

PAGE_SIZE = 50
KIND_FILTERS = ("task", "approve", "escalation")


@dataclass(frozen=True)
class InboxFilters:
    process: str = ""
    kind: str = ""
    overdue: bool = False
    text: str = ""

    @property
    def active(self) -> bool:
        return bool(self.process or self.kind or self.overdue or self.text)


def _text_filter(text: str) -> Q:
    """Free text over the run's inputs, as their stored JSON text. That text escapes quotes and
    backslashes, and on SQLite non-ASCII characters too (whose case LIKE does not fold), so the
    escaped spellings of the text are matched as well."""
    spellings = {
        text,
        json.dumps(text, ensure_ascii=False)[1:-1],
        json.dumps(text)[1:-1],
        json.dumps(text.lower())[1:-1],
    }
    condition = Q()
    for spelling in sorted(spellings):
        condition |= Q(inputs_text__icontains=spelling)
    return condition


def _filter_q(filters: InboxFilters, now) -> Q:
    condition = Q()
    if filters.process:
        condition &= Q(run__process_name=filters.process)
    if filters.kind == "escalation":
        # An escalated agent step, or a submission a check was unsure about (check-1).
        condition &= Q(escalation__isnull=False)
    elif filters.kind in KIND_FILTERS:
        condition &= Q(kind=filters.kind)
    if filters.overdue:
        condition &= Q(due_at__lte=now)
    if filters.text:
        condition &= _text_filter(filters.text)
    return condition


def inbox(identity: Identity, filters: InboxFilters, *, now, page: int = 1, page_size: int = PAGE_SIZE):
    """(items of the page, counts) for the person's open work items.

    Sorted by due ascending with no due last, then oldest first. Two queries whatever the number of
    items: one conditional aggregate for the counts, one for the page (run joined in).
    """
    base = open_items_for(identity)
    if filters.text:
        base = base.annotate(inputs_text=Cast("run__inputs", TextField()))
    condition = _filter_q(filters, now)
    counts = base.aggregate(
        total=Count("pk"),
        overdue=Count("pk", filter=Q(due_at__lte=now)),
        matching=Count("pk", filter=condition) if condition else Count("pk"),
    )
    pages = max(1, -(-counts["matching"] // page_size))
    page = min(max(1, page), pages)
    offset = (page - 1) * page_size
    rows = list(
        base.filter(condition)
        .select_related("run", "step_state")
        .order_by(F("due_at").asc(nulls_last=True), "created_at", "id")[offset : offset + page_size]
    )
    counts.update(page=page, pages=pages, page_size=page_size)
    return rows, counts


def work_item(identity: Identity, work_item_id: str) -> WorkItem | None:
    """The work item with this id in the person's organization (any state), or None."""
    return (
        WorkItem.objects.filter(pk=work_item_id, organization=identity.organization).select_related("run").first()
    )


# ---------------------------------------------------------------- operators

QUEUE_LIMIT = 200


def escalations(identity: Identity, *, limit: int = QUEUE_LIMIT):
    """Open escalations of the organization (escalated agent steps, and submissions a check was unsure
    about), oldest first; (rows, total)."""
    items = WorkItem.objects.filter(organization=identity.organization, state=WorkItemState.OPEN,
                                    escalation__isnull=False)
    total = items.count()
    rows = list(items.select_related("run").order_by("created_at", "id")[:limit])
    return rows, total


def overdue_work_items(identity: Identity, *, now, limit: int = QUEUE_LIMIT):
    """Open work items past due, most overdue first; (rows, total)."""
    items = WorkItem.objects.filter(
        organization=identity.organization, state=WorkItemState.OPEN, due_at__isnull=False, due_at__lte=now
    )
    total = items.count()
    rows = list(items.select_related("run").order_by("due_at", "created_at", "id")[:limit])
    return rows, total


def overdue_agent_steps(identity: Identity, *, now, limit: int = QUEUE_LIMIT):
    """Ready or claimed agent steps past due, most overdue first; (rows, total)."""
    steps = StepState.objects.filter(
        organization=identity.organization, kind="agent", state__in=CLAIMABLE,
        due_at__isnull=False, due_at__lte=now,
    )
    total = steps.count()
    rows = list(steps.select_related("run").order_by("due_at", "id")[:limit])
    return rows, total
