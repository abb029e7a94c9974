"""Reads of the browser inbox that no tool offers: the person's open items sorted by due with
filters and counts, and the operators' queues. Every query here is constant in the number of rows.

The assignment rule (which open items are a person's) is the tools' own (`runs.selectors.assigned_to`), used
as a condition so every view's count fits in one aggregate.
"""

import json
from dataclasses import dataclass

from django.db.models import Count, F, Q, TextField
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast

from kernel.identity import Identity
from kernel.json_values import JsonNumber, JsonText
from runs.models import CLAIMABLE, InboxVisit, StepState, WorkItem, WorkItemState
from runs.selectors import assigned_to

PAGE_SIZE = 50
KIND_FILTERS = ("task", "approve", "escalation")
# The inbox's views (issue 15, point 2): what each shows is a condition on the work item table.
VIEWS = ("mine", "groups", "all", "done")
SORTS = ("due", "waiting", "process")
HELD_FILTERS = ("me", "nobody", "others")
MODES = ("live", "test")
RANGE_KINDS = ("number", "date")  # typed inputs filtered by range; the others by equality


@dataclass(frozen=True)
class InputFilter:
    """One typed-input condition: `op` is eq, min (at least) or max (at most)."""

    name: str
    op: str
    value: object
    kind: str = "string"


@dataclass(frozen=True)
class InboxFilters:
    view: str = "all"
    process: str = ""
    version: int | None = None
    kind: str = ""
    overdue: bool = False
    mode: str = ""
    held: str = ""
    text: str = ""
    sort: str = "due"
    inputs: tuple[InputFilter, ...] = ()

    @property
    def active(self) -> bool:
        """Whether anything narrows the view (the view and the sort are not filters)."""
        return bool(self.process or self.version or self.kind or self.overdue or self.mode or self.held
                    or self.text or self.inputs)


def _text_spellings(text: str) -> list[str]:
    """Free text over the run's inputs, as their stored JSON text. That text escapes quotes and
    backslashes, and on SQLite non-ASCII characters too (whose case LIKE does not fold), so the
    escaped spellings of the text are matched as well."""
    return sorted({
        text,
        json.dumps(text, ensure_ascii=False)[1:-1],
        json.dumps(text)[1:-1],
        json.dumps(text.lower())[1:-1],
    })


def _text_filter(text: str) -> Q:
    """The inputs, the step (its id as the title is made from it), the process name and the run id."""
    condition = Q()
    for spelling in _text_spellings(text):
        condition |= Q(inputs_text__icontains=spelling)
    for step_spelling in {text, text.replace(" ", "_"), text.replace(" ", "-")}:
        condition |= Q(step_id__icontains=step_spelling)
    return condition | Q(run__process_name__icontains=text) | Q(run__id__icontains=text)


def view_condition(identity: Identity, view: str) -> Q:
    """The work items a view shows: the assignment rule is the tools' own (open_items_for)."""
    if view == "done":
        return Q(state=WorkItemState.DECIDED, decided_by=identity.ref)
    open_mine = Q(state=WorkItemState.OPEN) & assigned_to(identity)
    if view == "mine":
        return open_mine & (Q(held_by__iexact=identity.email) | Q(assigned_person=identity.email))
    if view == "groups":
        return Q(state=WorkItemState.OPEN, assigned_group__in=list(identity.groups), held_by__isnull=True)
    return open_mine


def _input_condition(alias: str, item: InputFilter):
    """(expression, condition) of one typed-input filter: numbers compared as numbers, text (dates
    included: ISO dates sort as text) as text, yes/no as JSON."""
    if item.kind == "number":
        expression = JsonNumber("run__inputs", item.name)
    elif isinstance(item.value, bool):
        expression = KeyTransform(item.name, "run__inputs")
    else:
        expression = JsonText("run__inputs", item.name)
    lookup = {"eq": "", "min": "__gte", "max": "__lte"}[item.op]
    return expression, Q(**{f"{alias}{lookup}": item.value})


def filter_condition(identity: Identity, filters: InboxFilters, now, prefix: str = "input_") -> tuple[Q, dict]:
    """(condition, aliases it needs, named `prefix` + a number) of the filters, the view aside."""
    condition, aliases = Q(), {}
    if filters.process:
        condition &= Q(run__process_name=filters.process)
    if filters.version:
        condition &= Q(run__version_number=filters.version)
    if filters.kind == "escalation":
        # An escalated agent step, or a submission a check was unsure about (check-1).
        condition &= Q(escalation__isnull=False)
    elif filters.kind in KIND_FILTERS:
        condition &= Q(kind=filters.kind)
    if filters.overdue:
        condition &= Q(due_at__lte=now)
    if filters.mode in MODES:
        condition &= Q(run__mode=filters.mode)
    if filters.held == "nobody":
        condition &= Q(held_by__isnull=True)
    elif filters.held == "me":
        condition &= Q(held_by__iexact=identity.email)
    elif filters.held == "others":
        condition &= Q(held_by__isnull=False) & ~Q(held_by__iexact=identity.email)
    if filters.text:
        condition &= _text_filter(filters.text)
    for index, item in enumerate(filters.inputs):
        alias = f"{prefix}{index}"
        aliases[alias], q = _input_condition(alias, item)
        condition &= q
    return condition, aliases


ORDERINGS = {
    "due": (F("due_at").asc(nulls_last=True), "created_at", "id"),
    "waiting": ("created_at", "id"),
    "process": ("run__process_name", F("due_at").asc(nulls_last=True), "created_at", "id"),
}
DONE_ORDERINGS = {
    "process": ("run__process_name", F("decided_at").desc(), "-id"),
}


def _ordering(filters: InboxFilters):
    if filters.view == "done":  # newest decision first
        return DONE_ORDERINGS.get(filters.sort, (F("decided_at").desc(), "-id"))
    return ORDERINGS.get(filters.sort, ORDERINGS["due"])


def _items(organization, needs_text: bool, aliases: dict):
    items = WorkItem.objects.filter(organization=organization)
    if needs_text:
        items = items.annotate(inputs_text=Cast("run__inputs", TextField()))
    return items.alias(**aliases) if aliases else items


def inbox(identity: Identity, filters: InboxFilters, *, now, page: int = 1, page_size: int = PAGE_SIZE,
          seen_at=None, saved: dict | None = None):
    """(items of the page, counts) for one view of the person's work items.

    counts: total (open items the person can act on), overdue, new (since `seen_at`), views (each
    view's count), matching (this view with its filters), saved (each saved view's filters, by key),
    page, pages. Two queries whatever the number of items or saved views: one conditional aggregate
    for every count, one for the page (run and step joined in).
    """
    condition, own_aliases = filter_condition(identity, filters, now)
    aliases = dict(own_aliases)
    in_view = view_condition(identity, filters.view) & condition
    everything = {view: view_condition(identity, view) for view in VIEWS}
    measures = {f"view_{view}": Count("pk", filter=q) for view, q in everything.items()}
    measures["overdue"] = Count("pk", filter=everything["all"] & Q(due_at__lte=now))
    measures["matching"] = Count("pk", filter=in_view)
    if seen_at is not None:
        measures["new"] = Count("pk", filter=everything["all"] & Q(created_at__gt=seen_at))
    needs_text = bool(filters.text)
    for key, other in (saved or {}).items():
        # Each filter set names its own input aliases.
        other_condition, other_aliases = filter_condition(identity, other, now, prefix=f"saved_{key}_")
        aliases = {**aliases, **other_aliases}
        measures[f"saved_{key}"] = Count("pk", filter=view_condition(identity, other.view) & other_condition)
        needs_text = needs_text or bool(other.text)
    # Every count is over the union of the views: the planner can use the partial indexes.
    union = everything["all"] | everything["done"]
    figures = _items(identity.organization, needs_text, aliases).filter(union).aggregate(**measures)
    counts = {
        "total": figures["view_all"], "overdue": figures["overdue"], "matching": figures["matching"],
        "new": figures.get("new", 0), "views": {view: figures[f"view_{view}"] for view in VIEWS},
        "saved": {key: figures[f"saved_{key}"] for key in saved or {}},
    }
    pages = max(1, -(-counts["matching"] // page_size))
    page = min(max(1, page), pages)
    offset = (page - 1) * page_size
    # The page's ids first (sort and limit on the work items alone), then only those rows with
    # their run and step: joining all matching rows before the sort cost 24 of 27 ms at 10k items.
    page_ids = (_items(identity.organization, bool(filters.text), own_aliases).filter(in_view)
                .order_by(*_ordering(filters)).values("pk")[offset : offset + page_size])
    rows = list(WorkItem.objects.filter(pk__in=page_ids).select_related("run", "step_state")
                .order_by(*_ordering(filters)))
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
    rows = list(items.select_related("run", "step_state").order_by("due_at", "created_at", "id")[:limit])
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


def inbox_seen_at(identity: Identity):
    """When the person last looked at their inbox (None: never): work that arrived later is new."""
    return InboxVisit.objects.filter(user=identity.user).values_list("seen_at", flat=True).first()
