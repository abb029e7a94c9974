"""Reads: get_work for agents and people, list_runs. Keyset-paged on indexed columns."""

import contextvars
import datetime as dt
from contextlib import contextmanager

from django.conf import settings
from django.db.models import Q
from django.db.models.fields.json import KeyTransform

from kernel import paging, sql
from kernel.errors import invalid
from kernel.identity import Identity

from . import visibility
from .models import Run, StepState, StepStatus, Upload, WorkItem, WorkItemState


def _after(cursor: str | None, time_field: str, descending: bool = False) -> Q:
    if not cursor:
        return Q()
    moment, last_id = paging.decode(cursor, dt.datetime, str)
    op = "lt" if descending else "gt"
    # `>= moment` bounds the index range; the OR alone would make the scan start at the beginning.
    return Q(**{f"{time_field}__{op}e": moment}) & (Q(**{f"{time_field}__{op}": moment}) | Q(**{f"id__{op}": last_id}))


class _RunFacts:
    """What a get_work item shows of its run."""

    __slots__ = ("id", "mode", "process_name", "version_number")

    def __init__(self, run_id, mode, process_name, version_number):
        self.id, self.mode, self.process_name, self.version_number = run_id, mode, process_name, version_number


# How many of the first steps get_work lists are handed to the caller: an agent claims the first
# and, when that one is gone, the next; a worker with free threads takes a few.
HANDOUT_ITEMS = 3


def claimable_steps(identity: Identity, *, now, limit: int, cursor: str | None, process: str | None):
    """(step state, run facts) for the agent steps the caller may claim, oldest `readySince` first: ready,
    or claimed with a lapsed lease. Hand-written SQL (runs/sql.py) on the partial index
    step_claimable(_process); keyset-paged.

    The first page also hands its first HANDOUT_ITEMS steps to the caller for
    GET_WORK_HANDOUT_SECONDS, and leaves out steps handed to another agent within theirs (spec: a
    server MAY filter further; what is listed stays claimable by the caller, oldest first)."""
    now_param = sql.adapt(StepState, "lease_expires_at", now)
    params = [identity.organization.id, now_param]
    ready, claimed = StepStatus.READY, StepStatus.CLAIMED  # the partial index's predicate, word for word
    conditions = ["s.organization_id = %s", "s.kind = 'agent'", f"s.state IN ('{ready}', '{claimed}')",
                  f"(s.state = '{ready}' OR s.lease_expires_at <= %s)"]
    window = settings.GET_WORK_HANDOUT_SECONDS
    handout = window > 0 and cursor is None
    if handout:
        conditions.append(NOT_HANDED_TO_OTHERS.format(alias="s."))
        params += [now_param, identity.ref]
    if process:
        conditions.append("s.process_name = %s")
        params.append(process)
    if cursor:
        moment, last_id = paging.decode(cursor, dt.datetime, int)
        moment = sql.adapt(StepState, "ready_since", moment)
        # The first term bounds the index range; alone the OR would filter from the start of the queue.
        conditions.append("s.ready_since >= %s AND (s.ready_since > %s OR s.id > %s)")
        params += [moment, moment, last_id]
    listing = (
        "SELECT s.id, s.run_id, s.step_id, s.state, s.ready_since, s.due_at, s.handoff, s.progress, "
        "s.lease_expires_at, r.mode AS run_mode, r.process_name AS run_process, r.version_number AS run_version "
        f"FROM {sql.table(StepState)} s JOIN {sql.table(Run)} r ON r.id = s.run_id "
        f"WHERE {' AND '.join(conditions)} ORDER BY s.ready_since, s.id LIMIT {int(limit) + 1}")
    until = sql.adapt(StepState, "offered_until", now + dt.timedelta(seconds=window))
    if handout and sql.is_postgresql():
        rows = _list_and_hand_out(listing, params, identity.ref, until, now_param, limit)
    else:
        rows = sql.fetch(StepState, listing, params)
        if handout and rows:
            _hand_out([row.id for row in rows[:min(limit, HANDOUT_ITEMS)]], identity.ref, until, now_param)
    next_cursor = paging.encode(rows[limit - 1].ready_since, rows[limit - 1].id) if len(rows) > limit else None
    return [(row, _RunFacts(row.run_id, row.run_mode, row.run_process, row.run_version)) for row in rows[:limit]
            if getattr(row, "handed", True)], next_cursor


# A step no other agent was handed within its window (each row re-checked under its row lock by the
# statement that hands it out, so two get_work calls at once never both hand out one step).
NOT_HANDED_TO_OTHERS = "({alias}offered_until IS NULL OR {alias}offered_until <= %s OR {alias}offered_to = %s)"


def _hand_out(ids: list[int], ref: str, until, now_param) -> None:
    sql.execute(f"UPDATE {sql.table(StepState)} SET offered_to = %s, offered_until = %s "
                f"WHERE id IN ({', '.join(['%s'] * len(ids))}) AND {NOT_HANDED_TO_OTHERS.format(alias='')}",
                [ref, until, *ids, now_param, ref])


def _list_and_hand_out(listing: str, params: list, ref: str, until, now_param, limit: int) -> list:
    """PostgreSQL: list and hand out in one statement. A first step another get_work handed out in
    the meantime is not listed: `handed` is false on it.

    The hand-out takes its rows with SKIP LOCKED: a row another statement holds (another hand-out,
    a claim, the sweep) is left to that one, and get_work never waits for a row lock. Waiting, two
    hand-outs locked shared steps in the order their plans met them, which can differ between
    snapshots: PostgreSQL found deadlocks among 16 racing agents and the aborted get_work answered
    `retry`."""
    table = sql.table(StepState)
    first = min(limit, HANDOUT_ITEMS)
    return sql.fetch(StepState, (
        f"WITH listed AS ({listing}), "
        f"handed AS (UPDATE {table} SET offered_to = %s, offered_until = %s WHERE id IN "
        f"(SELECT id FROM {table} WHERE id IN (SELECT id FROM listed ORDER BY ready_since, id LIMIT {first}) "
        f"AND {NOT_HANDED_TO_OTHERS.format(alias='')} ORDER BY id FOR UPDATE SKIP LOCKED) RETURNING id), "
        f"ranked AS (SELECT listed.*, row_number() OVER (ORDER BY ready_since, id) AS place FROM listed) "
        f"SELECT ranked.*, (ranked.place > {first} OR ranked.id IN (SELECT id FROM handed)) AS handed "
        "FROM ranked ORDER BY ranked.place"), [*params, ref, until, now_param, ref])


def assigned_to(identity: Identity) -> Q:
    """Work items whose assignment includes this person: a group of theirs, or them (spec §3.4)."""
    return Q(assigned_group__in=list(identity.groups)) | Q(assigned_person=identity.email)


def open_items_for(identity: Identity):
    """The open work items whose assignment includes this person."""
    return WorkItem.objects.filter(organization=identity.organization, state=WorkItemState.OPEN).filter(
        assigned_to(identity))


# The work item the caller has read already (the work item page, before it calls `decide`): the
# decision uses it instead of reading the row again (issue 29). Safe without a lock: the decision
# closes the item with a conditional UPDATE (runs/services/engine.py `save`), so an item decided
# meanwhile is refused as already_decided all the same.
_read_already: contextvars.ContextVar = contextvars.ContextVar("work_item_read_already", default=None)


@contextmanager
def work_item_read_already(item: WorkItem):
    token = _read_already.set(item)
    try:
        yield
    finally:
        _read_already.reset(token)


def work_item_of_run(work_item_id: str, run: Run, *, open_only: bool = False) -> WorkItem | None:
    """The run's work item with this id: the one read already in this call when it is that one,
    else from the database."""
    item = _read_already.get()
    if item is not None and item.pk == work_item_id and item.run_id == run.id:
        return item if not open_only or item.state == WorkItemState.OPEN else None
    items = WorkItem.objects.filter(pk=work_item_id, run=run)
    return (items.filter(state=WorkItemState.OPEN) if open_only else items).first()


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
    """The runs this identity may see (runs/visibility.py), newest first; `inputs` matches on
    equality of each given field (at most LIST_RUNS_INPUT_FILTERS of them: one condition each, in
    one query)."""
    if inputs and len(inputs) > settings.LIST_RUNS_INPUT_FILTERS:
        raise invalid("too many input filters", [f"inputs: at most {settings.LIST_RUNS_INPUT_FILTERS} fields"])
    runs = visibility.visible(identity, Run.objects.filter(organization=identity.organization))
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


def file_facts(organization, refs) -> dict[str, dict]:
    """upload id -> its name, size, content type and hash, for the organization's uploads among `refs`
    (one query)."""
    refs = [ref for ref in refs if isinstance(ref, str)]
    if not refs:
        return {}
    rows = Upload.objects.filter(organization=organization, pk__in=refs).values(
        "pk", "file_name", "size", "content_type", "sha256")
    return {row["pk"]: {"name": row["file_name"], "size": row["size"], "type": row["content_type"],
                        "sha256": row["sha256"]} for row in rows}


def file_names(organization, refs) -> dict[str, str]:
    """upload id -> the file's name, for the organization's uploads among `refs` (one query)."""
    refs = [ref for ref in refs if isinstance(ref, str)]
    if not refs:
        return {}
    return dict(Upload.objects.filter(organization=organization, pk__in=refs).values_list("pk", "file_name"))



def _rows(value) -> list[dict] | None:
    return value if isinstance(value, list) and value and all(isinstance(row, dict) for row in value) else None


def recent_rows(organization, *, process: str, step_id: str, field: str, runs: int = 20) -> list[dict]:
    """The rows of the latest completion of a step's list-of-objects output, so a person's row
    editor starts with the columns (and their types) people used before; callers show no values."""
    recent = (Run.objects.filter(organization=organization, process_name=process, steps_data__has_key=step_id)
              .order_by("-updated_at").values_list("steps_data", flat=True)[:runs])
    for steps_data in recent:
        entry = steps_data.get(step_id) or {}
        for completion in [entry, *reversed(entry.get("history") or [])]:
            rows = _rows((completion.get("output") or {}).get(field) if isinstance(completion, dict) else None)
            if rows:
                return rows
    return []


def recent_input_rows(organization, *, process: str, field: str, runs: int = 20) -> list[dict]:
    """The rows of a list-of-objects input in the latest runs of a process that were given it (the
    start form's columns, as recent_rows for a step); callers show no values."""
    recent = (Run.objects.filter(organization=organization, process_name=process, inputs__has_key=field)
              .order_by("-started_at").values_list("inputs", flat=True)[:runs])
    return next((rows for rows in (_rows(inputs.get(field)) for inputs in recent) if rows), [])
