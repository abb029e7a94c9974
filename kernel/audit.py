"""Typed constructors of audit events, written by the services in the transaction of the change
they record (so a rolled-back write leaves no event), with the actor taken from authentication.

Inside the unit of work (runs/services/writes.py) the events of a write are held and written in
one statement with its idempotency record, and carry its requestId; elsewhere (sweeps, admin
actions, the command line) `write` stores them at once.
"""

import contextlib
import csv
import datetime as dt
import io
from contextvars import ContextVar
from dataclasses import dataclass, field

from . import jsonio
from .models import ActorKind, AuditEvent, EventKind  # noqa: F401 (EventKind: for callers)


@dataclass(frozen=True)
class Actor:
    kind: ActorKind
    ref: str  # the `by` of run data: a_<agent>, a person's email, "server"

    @classmethod
    def of(cls, identity) -> "Actor":
        """Who an authenticated identity is, for the log (kernel.identity.Identity)."""
        if identity.is_agent:
            return cls(ActorKind.AGENT, identity.ref)
        return cls(ActorKind.OPERATOR if identity.is_operator else ActorKind.PERSON, identity.ref)

    @classmethod
    def admin(cls, user) -> "Actor":
        """A signed-in Django admin user (staff), by email, else by username."""
        return cls(ActorKind.ADMIN, user.email or user.get_username())


SERVER = Actor(ActorKind.SERVER, "server")
COMMAND_LINE = Actor(ActorKind.SERVER, "command line")


@dataclass
class WriteScope:
    request_id: str | None
    held: list[AuditEvent] | None = field(default=None)  # None: write at once


_scope: ContextVar[WriteScope | None] = ContextVar("audit_write_scope", default=None)


@contextlib.contextmanager
def request_scope(request_id: str | None, *, hold: bool = False):
    """Events created inside carry this requestId; with `hold`, `write` keeps them in the scope
    for the caller to store (the unit of work, with its record)."""
    scope = WriteScope(request_id, [] if hold else None)
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


def event(kind: EventKind, *, organization_id: int, actor: Actor, at, run_id: str | None = None,
          step_id: str | None = None, work_item_id: str | None = None, data: dict | None = None) -> AuditEvent:
    """An unsaved event."""
    scope = _scope.get()
    return AuditEvent(organization_id=organization_id, run_id=run_id, step_id=step_id, work_item_id=work_item_id,
                      kind=kind, actor=actor.ref, actor_kind=actor.kind, at=at,
                      request_id=scope.request_id if scope else None, data=data or {})


def write(events: list[AuditEvent]) -> None:
    scope = _scope.get()
    if scope is not None and scope.held is not None:
        scope.held.extend(events)
    elif events:
        AuditEvent.objects.bulk_create(events)


def record(kind: EventKind, **fields) -> None:
    """One event, written now (or held by the unit of work)."""
    write([event(kind, **fields)])


COLUMNS = ("organization", "run_id", "step_id", "work_item_id", "kind", "actor", "actor_kind", "at", "request_id",
           "data")


def row_values(event_: AuditEvent) -> dict:
    """An event as insert values (kernel.sql.insert_rows)."""
    return {name: getattr(event_, "organization_id" if name == "organization" else name) for name in COLUMNS}


# --- reading and exporting -------------------------------------------------------------------

EXPORT_FIELDS = ("at", "kind", "actor", "run", "step", "workItem", "requestId", "data")
EXPORT_PAGE = 2000


def exported(event_: AuditEvent) -> dict:
    """An event as one line of the export (README "Audit log"): the fields of EXPORT_FIELDS."""
    return {"at": event_.at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"), "kind": event_.kind,
            "actor": {"kind": event_.actor_kind, "ref": event_.actor}, "run": event_.run_id,
            "step": event_.step_id, "workItem": event_.work_item_id, "requestId": event_.request_id,
            "data": event_.data}


def events(*, organization_ids=None, run_id: str | None = None, since=None, until=None):
    """Every matching event, oldest first, read a page at a time (keyset on id), so the memory
    held does not grow with the number of events."""
    query = AuditEvent.objects.all()
    if organization_ids is not None:
        query = query.filter(organization_id__in=list(organization_ids))
    if run_id:
        query = query.filter(run_id=run_id)
    if since:
        query = query.filter(at__gte=since)
    if until:
        query = query.filter(at__lt=until)
    last = 0
    while True:
        page = list(query.filter(id__gt=last).order_by("id")[:EXPORT_PAGE])
        yield from page
        if len(page) < EXPORT_PAGE:
            return
        last = page[-1].id


def jsonl_lines(rows):
    for row in rows:
        yield jsonio.dumps(exported(row), ensure_ascii=False, separators=(",", ":")) + "\n"


def csv_lines(rows):
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def take() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(EXPORT_FIELDS)
    yield take()
    for row in rows:
        line = exported(row)
        line["actor"] = f"{line['actor']['kind']}:{line['actor']['ref']}"
        line["data"] = jsonio.dumps(line["data"], ensure_ascii=False, separators=(",", ":"))
        writer.writerow(["" if line[name] is None else line[name] for name in EXPORT_FIELDS])
        yield take()


FORMATS = {"jsonl": (jsonl_lines, "application/x-ndjson"), "csv": (csv_lines, "text/csv")}
