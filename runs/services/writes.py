"""The unit of work: every write of the protocol goes through `perform` (spec §4).

    replay look-up (when asked first) -> prepare -> BEGIN -> apply -> idempotency record -> COMMIT

- **Idempotency** is one mechanism for every write: a record keyed by (organization, requestId)
  holding a fingerprint of the arguments and the original result, written in the same transaction
  as the write. The happy path costs one INSERT: the record is not looked up first; when the insert
  collides (a replay) or the write is refused, the transaction is rolled back and the stored record
  decides the answer. A refused call is never recorded, so a retry with the same requestId can
  succeed.
- **prepare** runs before the transaction opens: reads that may refuse the call cheaply (a claim
  reads its step) and slow work that must not hold row locks (asking the check evaluator). It
  receives the Write, whose `replayed` tells it when there is nothing to prepare.
- **Refusals are data.** A refusal that must leave something for the next attempt (spec §3.3
  handoff: the issues of a refused submission, a failed check) is raised as `Refused` carrying a
  `HandoffNote`; after the write rolled back, the note is kept in a transaction of its own. Run
  data never changes.

Every write service is atomic on its own as well (`transaction.atomic(savepoint=False)`, which
costs nothing inside this unit of work), and every row lock is taken in `locks`.
"""

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

from django.db import IntegrityError, transaction

from kernel import audit, jsonio, sql
from kernel.errors import ErrorCode, ToolError
from kernel.identity import Identity
from kernel.models import AuditEvent, EventKind

from ..models import IdempotencyRecord
from . import locks


@dataclass(frozen=True)
class HandoffNote:
    """What a refused attempt leaves on its step for the next one (spec §3.3 handoff)."""

    step_state_id: int
    lease_generation: int | None  # kept only while this lease is the step's; None: whatever the lease
    additions: dict


class Refused(ToolError):
    """A refusal that leaves a handoff note. Nothing of the write is kept but the note."""

    def __init__(self, error: ToolError, handoff: HandoffNote):
        super().__init__(error.code, error.message, error.issues)
        self.handoff = handoff


def fingerprint(operation: str, caller: str, arguments: Mapping) -> str:
    # The caller is part of it: a requestId replayed by another identity never returns its result.
    significant = {key: value for key, value in arguments.items() if key != "requestId"}
    text = jsonio.dumps([operation, caller, significant], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class Write:
    """One write as the unit of work sees it: who, which operation, its requestId and arguments."""

    def __init__(self, *, identity: Identity, operation: str, arguments: Mapping, now):
        self.identity = identity
        self.operation = operation
        self.request_id: str = arguments["requestId"]
        self.fingerprint = fingerprint(operation, identity.ref, arguments)
        self.now = now

    @cached_property
    def stored(self) -> IdempotencyRecord | None:
        # Hand-written (kernel/sql.py): every claim lost in a race comes through here.
        found = sql.select(IdempotencyRecord, "organization_id = %s AND request_id = %s",
                           [self.identity.organization.id, self.request_id])
        return found[0] if found else None

    @property
    def replayed(self) -> bool:
        """Whether this requestId already has a result (looked up once, then remembered)."""
        return self.stored is not None

    def replay(self) -> dict:
        if self.stored.arguments_hash != self.fingerprint:
            raise ToolError(ErrorCode.CONFLICT, "this requestId was already used with other arguments",
                            ["requestId: already used with other arguments"])
        return self.stored.result

    def forget_lookup(self) -> None:
        self.__dict__.pop("stored", None)


def perform(write: Write, apply: Callable[[object], dict], *, prepare: Callable[[Write], object] | None = None,
            replay_first: bool = False) -> dict:
    """`apply(prepared)` and the idempotency record in one transaction; returns the result data.

    `replay_first` looks the requestId up before anything else, and again under the requestId's
    lock once the transaction is open, for writes whose work must not be done twice even when
    rolled back (upload writes the bytes to storage: a twin with other bytes stores none)."""
    if replay_first and write.replayed:
        return write.replay()
    try:
        prepared = prepare(write) if prepare is not None else None
        if "stored" in write.__dict__ and write.replayed:  # prepare found a replay: nothing to do
            return write.replay()
        with transaction.atomic(), audit.request_scope(write.request_id, hold=True) as scope:
            if replay_first and _twin_committed(write):
                return write.replay()  # before any of the work: a conflict stores nothing
            data = apply(prepared)
            # The record and the write's audit events, one statement on PostgreSQL.
            sql.insert_rows((AuditEvent, [audit.row_values(event) for event in scope.held]), (IdempotencyRecord, [{
                "organization": write.identity.organization.id, "request_id": write.request_id,
                "tool": write.operation, "caller": write.identity.ref, "arguments_hash": write.fingerprint,
                "result": data, "created_at": write.now,
            }]))
        return data
    except IntegrityError:
        write.forget_lookup()
        if not write.replayed:
            raise
        return write.replay()
    except ToolError as error:
        write.forget_lookup()  # a concurrent twin may have committed since prepare looked
        if write.replayed:
            return write.replay()
        if isinstance(error, Refused):
            with audit.request_scope(write.request_id):
                keep_handoff(error.handoff, actor=audit.Actor.of(write.identity), at=write.now)
            raise ToolError(error.code, error.message, error.issues) from None
        raise


def _twin_committed(write: Write) -> bool:
    """Whether a twin (same requestId) committed since the look-up before the transaction. Twins
    wait here for each other, so only one does the work and the others replay it or conflict."""
    locks.request_id(write.identity.organization.id, write.request_id)
    write.forget_lookup()
    return write.replayed


@transaction.atomic(savepoint=False)
def keep_handoff(note: HandoffNote, *, actor: audit.Actor, at) -> None:
    """After a refusal, keep what the next attempt needs (issues, check), and that it was refused;
    run data is untouched. Nothing is kept once the lease the note was for has moved on."""
    state = locks.step_of_lease(note.step_state_id, note.lease_generation)
    if state is None:
        return
    state.handoff = {**(state.handoff or {}), **note.additions}
    state.save(update_fields=["handoff"])
    data = {"issues": note.additions.get("issues", [])}
    if "check" in note.additions:
        data["check"] = note.additions["check"]["verdict"]
    audit.record(EventKind.SUBMISSION_REFUSED, organization_id=state.organization_id, actor=actor, at=at,
                 run_id=state.run_id, step_id=state.step_id, data=data)
