"""Bulk data for the benchmarks, made to look exactly like what the services write.

A *template* run is made by the real services (`start_run`, then `claim`/`submit`/sweeps when a
later state is wanted). `clone_runs` copies its Run, StepState and WorkItem rows any number of
times with PostgreSQL COPY: fresh public ids (runs.ids), fresh row ids from the tables' own
sequences, every instant shifted by the same offset (so `ready_since`, `due_at`, `wake_at`,
`lease_expires_at` keep their relation to the start), optional other inputs with the snapshot
recomputed (runs.services.rundata). `check_clone` compares a clone with its template field by field.

Not copied: idempotency records (start_run's tool layer writes one per run, holding the run
view); no benchmarked read or sweep touches that table.
"""

import datetime as dt
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection, models

from runs.ids import new_run_id, new_work_item_id
from runs.models import Event, IdempotencyRecord, Run, StepState, WorkItem
from runs.services import rundata


@dataclass
class Template:
    run: Run
    states: list[StepState]
    items: list[WorkItem]

    @classmethod
    def of(cls, run_id: str) -> "Template":
        return cls(Run.objects.get(pk=run_id), list(StepState.objects.filter(run_id=run_id).order_by("id")),
                   list(WorkItem.objects.filter(run_id=run_id).order_by("created_at", "id")))


def _columns(model) -> list[models.Field]:
    return list(model._meta.concrete_fields)


def _adapter(field: models.Field):
    if isinstance(field, models.JSONField):
        from psycopg.types.json import Jsonb

        return lambda value: None if value is None else Jsonb(value)
    return lambda value: value


def _copy(model, rows: list[tuple]) -> None:
    """COPY rows (tuples of adapted values in concrete-field order) into the model's table."""
    fields = _columns(model)
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    connection.ensure_connection()
    # Rows are consistent by construction: skip the foreign-key triggers for the load (superuser).
    with connection.connection.transaction(), connection.connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        with cursor.copy(f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _allocate_ids(model, count: int) -> range:
    """`count` consecutive ids from the table's identity sequence (this process is the only writer)."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
        sequence = cursor.fetchone()[0]
        cursor.execute("SELECT nextval(%s)", [sequence])
        first = cursor.fetchone()[0]
        cursor.execute("SELECT setval(%s, %s)", [sequence, first + count - 1])
    return range(first, first + count)


def _shift(value, offset: dt.timedelta):
    return value + offset if isinstance(value, dt.datetime) else value


def _row_maker(model, original, overrides: tuple[str, ...]):
    """A function (offset, **overrides) -> row tuple for copies of `original`: constant columns are
    adapted once, instants shifted by the offset, the named columns taken from the call."""
    parts = []
    for field in _columns(model):
        value = getattr(original, field.attname)
        if field.attname in overrides:
            parts.append(("arg", field.attname, _adapter(field)))
        elif isinstance(value, dt.datetime):
            parts.append(("shift", value, None))
        else:
            parts.append(("const", _adapter(field)(value), None))

    def make(offset: dt.timedelta, **values) -> tuple:
        return tuple(
            value if kind == "const" else value + offset if kind == "shift" else adapt(values[value])
            for kind, value, adapt in parts
        )

    return make


def clone_runs(template: Template, count: int, *, started_at: Callable[[int], dt.datetime],
               inputs: Callable[[int], dict] | None = None, batch: int = 20_000) -> list[str]:
    """`count` copies of the template run; copy i starts at started_at(i). Returns the run ids."""
    base = template.run.started_at
    make_run = _row_maker(Run, template.run, ("id", "inputs", "snapshot"))
    make_states = [(state, _row_maker(StepState, state, ("id", "run_id"))) for state in template.states]
    make_items = [(item, _row_maker(WorkItem, item, ("id", "run_id", "step_state_id"))) for item in template.items]
    run_ids: list[str] = []
    for first in range(0, count, batch):
        indexes = range(first, min(count, first + batch))
        state_ids = iter(_allocate_ids(StepState, len(indexes) * len(template.states)))
        runs, states, items = [], [], []
        for i in indexes:
            offset = started_at(i) - base
            run_id = new_run_id()
            run_ids.append(run_id)
            run_inputs = inputs(i) if inputs else template.run.inputs
            snapshot = rundata.snapshot_of(run_inputs, template.run.steps_data) if inputs else template.run.snapshot
            runs.append(make_run(offset, id=run_id, inputs=run_inputs, snapshot=snapshot))
            new_state_ids = {}
            for state, make in make_states:
                new_state_ids[state.id] = state_id = next(state_ids)
                states.append(make(offset, id=state_id, run_id=run_id))
            for item, make in make_items:
                items.append(make(offset, id=new_work_item_id(), run_id=run_id,
                                  step_state_id=new_state_ids[item.step_state_id]))
        _copy(Run, runs)
        _copy(StepState, states)
        if items:
            _copy(WorkItem, items)
    return run_ids


def approver_and_template(*, started_at: dt.datetime):
    """(the approver's user, a Template) for bench/processes/bench-approval, already published: one
    person of the `approvers` group and one run started by a bench agent, waiting on its approval."""
    from kernel.identity import identity_from_api_token
    from kernel.organizations import create_agent, create_person, default_organization
    from runs.services.start import start_run

    organization = default_organization()
    user, _token = create_person(organization, "approver@example.com", groups=["approvers"])
    identity = identity_from_api_token(create_agent(organization, "bench-starter")[1])
    ctx = start_run(identity=identity, process="bench-approval", version=None,
                    inputs={"vendorName": "template", "amount": 1}, mode="live", now=started_at)
    template = Template.of(ctx.run.id)
    assert len(template.items) == 1 and template.items[0].assigned_group == "approvers", template.items
    return user, template


def check_clone(template: Template, run_id: str) -> list[str]:
    """Differences between a clone and its template beyond ids and the time offset (expect none)."""
    clone = Template.of(run_id)
    offset = clone.run.started_at - template.run.started_at
    problems = []

    def compare(kind, original, copy, skip):
        for field in _columns(type(original)):
            if field.attname in skip:
                continue
            want = _shift(getattr(original, field.attname), offset)
            if getattr(copy, field.attname) != want:
                problems.append(f"{kind}.{field.attname}: {getattr(copy, field.attname)!r} != {want!r}")

    compare("run", template.run, clone.run, {"id", "inputs", "snapshot"})
    if clone.run.snapshot != rundata.snapshot_of(clone.run.inputs, clone.run.steps_data):
        problems.append("run.snapshot does not hash run data")
    for original, copy in itertools.zip_longest(template.states, clone.states):
        if original is None or copy is None:
            problems.append("step states differ in number")
            break
        compare(f"state[{original.step_id}]", original, copy, {"id", "run_id"})
    for original, copy in itertools.zip_longest(template.items, clone.items):
        if original is None or copy is None:
            problems.append("work items differ in number")
            break
        compare(f"item[{original.step_id}]", original, copy, {"id", "run_id", "step_state_id"})
    return problems


def delete_runs(run_ids: list[str]) -> None:
    with connection.cursor() as cursor:
        for table in (WorkItem, Event, StepState):
            cursor.execute(f"DELETE FROM {table._meta.db_table} WHERE run_id = ANY(%s)", [run_ids])
        cursor.execute(f"DELETE FROM {Run._meta.db_table} WHERE id = ANY(%s)", [run_ids])


def truncate_runs() -> None:
    """Empty every run table (runs, states, items, events, uploads, idempotency records)."""
    tables = [m._meta.db_table for m in (WorkItem, Event, StepState, IdempotencyRecord, Run)]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)}")


def spread(start: dt.datetime, step: dt.timedelta) -> Callable[[int], dt.datetime]:
    return lambda i: start + i * step


def dumps(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)
