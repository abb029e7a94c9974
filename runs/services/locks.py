"""Every row lock the engine takes, in one module and one order: a run, then its steps in id order.

Concurrent writes to one run serialize on the run row; the step rows are locked after it because
`claim` and `renew` write a step row without the run lock (an optimistic UPDATE that re-checks the
lease generation), and a write to the run must wait for, then see, what they did. Sweeps take rows
with SKIP LOCKED, so a second beat or a redelivered task takes other rows instead of waiting.

A lock outside a transaction would be released by the same statement that took it, so every
function here refuses to run outside one (`transaction.atomic`, which every write service opens).
On SQLite `FOR UPDATE` does not exist: its IMMEDIATE transactions serialize every writer instead.
"""

from django.db import connection
from django.db.transaction import TransactionManagementError

from kernel import sql
from kernel.errors import no_such_run

from ..models import Run, StepState, WorkItem


def _require_transaction() -> None:
    if not connection.in_atomic_block:
        raise TransactionManagementError(
            "a row lock taken outside a transaction ends with its statement; take it inside a write service")


def _for_update(*, skip_locked: bool = False) -> str:
    suffix = sql.for_update()
    return suffix + " SKIP LOCKED" if suffix and skip_locked else suffix


def run_for_write(*, organization, run_id: str) -> tuple[Run, list[StepState]]:
    """The run of the organization and its steps, locked in that order (not_found otherwise)."""
    _require_transaction()
    runs = sql.select(Run, "id = %s AND organization_id = %s", [run_id, organization.id], suffix=_for_update())
    if not runs:
        raise no_such_run(run_id)
    run = runs[0]
    run.organization = organization  # already loaded with the caller's identity
    return run, _steps_of([run.id], organization.id)


def runs_for_sweep(run_ids: list[str]) -> tuple[list[Run], dict[str, list[StepState]]]:
    """The runs not locked by another transaction, and their steps (locked after them)."""
    _require_transaction()
    marks = ", ".join(["%s"] * len(run_ids))
    runs = sql.select(Run, f"id IN ({marks}) ORDER BY id", sorted(run_ids), suffix=_for_update(skip_locked=True))
    steps: dict[str, list[StepState]] = {}
    for state in _steps_of([run.id for run in runs]) if runs else []:
        steps.setdefault(state.run_id, []).append(state)
    return runs, steps


def _steps_of(run_ids: list[str], organization_id: int | None = None) -> list[StepState]:
    """The steps of the runs, locked; a request names its organization (the key a sharded database
    routes by); a sweep's batch spans organizations."""
    marks = ", ".join(["%s"] * len(run_ids))
    if organization_id is None:
        return sql.select(StepState, f"run_id IN ({marks}) ORDER BY id", list(run_ids), suffix=_for_update())
    return sql.select(StepState, f"run_id IN ({marks}) AND organization_id = %s ORDER BY id",
                      [*run_ids, organization_id], suffix=_for_update())


def step_of_lease(state_id: int, generation: int | None) -> StepState | None:
    """One step row, for the note a refused attempt leaves (`generation`: only while that lease
    is still the step's; None: whatever the lease)."""
    _require_transaction()
    states = StepState.objects.select_for_update().filter(pk=state_id)
    if generation is not None:
        states = states.filter(lease_gen=generation)
    return states.first()


def work_item_for_update(*, organization, work_item_id: str):
    """One work item of the organization, locked (the work queue's take, release and assign)."""
    _require_transaction()
    return WorkItem.objects.select_for_update().filter(pk=work_item_id, organization=organization).first()


def crossed_dues(queryset, limit: int) -> list[StepState]:
    """Steps whose due passed, not locked by another sweep (their runs are not locked: marking a
    crossing touches only the step row)."""
    _require_transaction()
    return list(queryset.select_for_update(skip_locked=True, of=("self",))[:limit])


def due_notices(queryset, limit: int) -> list:
    """Unsent notices no other worker is sending right now."""
    _require_transaction()
    return list(queryset.select_for_update(skip_locked=True)[:limit])


def skip_locked_subquery() -> str:
    """The suffix of a sweep's `SELECT id … ` subquery that picks rows for a set-based UPDATE."""
    _require_transaction()
    return _for_update(skip_locked=True)


# --- named locks: one holder at a time for something that is not a row ---------------------------


def _named(key: str, *, wait: bool) -> bool:
    """A lock on a name until the transaction ends (a PostgreSQL advisory lock). `wait=False`
    answers False at once when another transaction holds it. SQLite needs none: every IMMEDIATE
    transaction holds the database's write lock from BEGIN to COMMIT."""
    _require_transaction()
    if connection.vendor != "postgresql":
        return True
    function = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(hashtextextended(%s, 0))", [key])
        taken = cursor.fetchone()[0]
    return wait or taken


def request_id(organization_id: int, request_id: str) -> None:
    """Twins of a write (one requestId) whose work must not be done twice wait for each other."""
    _named(f"requestId {organization_id} {request_id}", wait=True)


def stored_file(name: str, *, wait: bool = True) -> bool:
    """A stored file: an upload holds it from finding the bytes stored (or storing them) until its
    row is committed; the orphan sweep only tries, and leaves the file when it cannot."""
    return _named(f"file {name}", wait=wait)
