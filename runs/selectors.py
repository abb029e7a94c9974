"""Reads: get_work for agents and people, list_runs. Keyset-paged on indexed columns."""

import datetime as dt

from django.db.models import Q
from django.db.models.fields.json import KeyTransform

from agentprocess import paging
from agentprocess.identity import Identity

from .models import Run, StepState, WorkItem, WorkItemState
from .services.engine import CLAIMED, READY


def _after(cursor: str | None, time_field: str, descending: bool = False) -> Q:
    if not cursor:
        return Q()
    moment, last_id = paging.decode(cursor, dt.datetime, str)
    op = "lt" if descending else "gt"
    return Q(**{f"{time_field}__{op}": moment}) | Q(**{time_field: moment, f"id__{op}": last_id})


def _id_after(cursor: str | None) -> Q:
    if not cursor:
        return Q()
    moment, last_id = paging.decode(cursor, dt.datetime, int)
    return Q(ready_since__gt=moment) | Q(ready_since=moment, id__gt=last_id)


AGENT_WORK_FIELDS = ("id", "step_id", "state", "ready_since", "due_at", "handoff", "progress", "lease_expires_at",
                     "run__id", "run__mode", "run__process_name", "run__version_number")


def claimable_steps(identity: Identity, *, now, limit: int, cursor: str | None, process: str | None):
    """Agent steps the caller may claim, oldest `readySince` first: ready, or claimed with a lapsed lease."""
    steps = StepState.objects.filter(
        organization=identity.organization, kind="agent", state__in=[READY, CLAIMED]
    ).filter(Q(state=READY) | Q(lease_expires_at__lte=now))
    if process:
        steps = steps.filter(process_name=process)
    rows = list(
        steps.filter(_id_after(cursor))
        .select_related("run")
        # Only what a get_work item shows: not the run's inputs and data, which can be large.
        .only(*AGENT_WORK_FIELDS)
        .order_by("ready_since", "id")[: limit + 1]
    )
    next_cursor = paging.encode(rows[limit - 1].ready_since, rows[limit - 1].id) if len(rows) > limit else None
    return rows[:limit], next_cursor


def open_items_for(identity: Identity):
    """The open work items whose assignment includes this person (a group of theirs, or them)."""
    return WorkItem.objects.filter(organization=identity.organization, state=WorkItemState.OPEN).filter(
        Q(assigned_group__in=list(identity.groups)) | Q(assigned_person=identity.email)
    )


def is_assigned(identity: Identity, item: WorkItem) -> bool:
    """Whether the person is in the item's assignment: a group of theirs, or them (spec §3.4)."""
    if item.assigned_group and item.assigned_group in identity.groups:
        return True
    return bool(item.assigned_person and identity.email and item.assigned_person.lower() == identity.email.lower())


def person_work(identity: Identity, *, limit: int, cursor: str | None, process: str | None):
    items = open_items_for(identity)
    if process:
        items = items.filter(run__process_name=process)
    rows = list(
        items.filter(_after(cursor, "created_at")).select_related("run", "step_state").order_by("created_at", "id")[
            : limit + 1
        ]
    )
    next_cursor = paging.encode(rows[limit - 1].created_at, rows[limit - 1].id) if len(rows) > limit else None
    return rows[:limit], next_cursor


def runs_list(identity: Identity, *, process=None, state=None, inputs=None, limit=20, cursor=None):
    """Newest first; `inputs` matches on equality of each given field."""
    runs = Run.objects.filter(organization=identity.organization)
    if process:
        runs = runs.filter(process_name=process)
    if state:
        runs = runs.filter(state=state)
    for index, (name, value) in enumerate((inputs or {}).items()):
        # KeyTransform, not "inputs__<name>": a field could be called "contains" or hold "__".
        runs = runs.alias(**{f"input_{index}": KeyTransform(name, "inputs")}).filter(**{f"input_{index}": value})
    rows = list(runs.filter(_after(cursor, "started_at", descending=True)).order_by("-started_at", "-id")[: limit + 1])
    next_cursor = paging.encode(rows[limit - 1].started_at, rows[limit - 1].id) if len(rows) > limit else None
    return rows[:limit], next_cursor
