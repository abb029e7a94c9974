"""claim and renew (spec §3.3): one caller holds a step under a lease; tokens name the lease."""

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from kernel import audit, sql
from kernel.clock import iso, whole_second_up
from kernel.errors import (
    ConflictIssue,
    conflict,
    forbidden,
    no_such_run,
    not_found,
    run_ended,
    stale,
)
from kernel.identity import Identity
from kernel.models import EventKind
from processes.definition import definition_for

from .. import visibility
from ..models import CLAIMABLE, ENDED_STATES, Run, StepState, StepStatus
from . import tokens
from .engine import effective_handoff, lapsed


@dataclass
class Lease:
    token: str
    expires_at: dt.datetime
    state: StepState


def _has_check(state: StepState) -> bool:
    return bool(definition_for(state.run.version_id).step(state.step_id).check)


def _lease_seconds() -> dt.timedelta:
    return dt.timedelta(seconds=settings.LEASE_SECONDS)


RUN_COLUMNS = ("state", "mode", "version_id", "process_name", "version_number", "inputs", "steps_data")


def _load_step(identity: Identity, run_id: str, step_id: str) -> StepState:
    """The step's state with what a claim needs of its run, in one statement (the caller's
    organization only)."""
    extra = ", ".join(f"r.{sql.column(Run, name)} AS run_{name}" for name in RUN_COLUMNS)
    states = sql.fetch(
        StepState, f"SELECT s.*, {extra} FROM {sql.table(StepState)} s JOIN {sql.table(Run)} r ON r.id = s.run_id "
        "WHERE s.run_id = %s AND s.step_id = %s AND r.organization_id = %s",
        [run_id, step_id, identity.organization.id])
    if not states:
        run_state = Run.objects.filter(pk=run_id, organization=identity.organization).values_list(
            "state", flat=True).first()
        if run_state is None:
            raise no_such_run(run_id)
        if run_state in ENDED_STATES:
            raise run_ended()  # spec §3.5: checked before anything else, an unknown step included
        raise not_found(f"run {run_id} has no step {step_id}")
    state = states[0]
    state.run = Run(id=run_id, organization_id=identity.organization.id,
                    **{name: sql.from_db(Run, name, getattr(state, f"run_{name}")) for name in RUN_COLUMNS})
    return state


def claimable(*, identity: Identity, run_id: str, step_id: str, now: dt.datetime) -> StepState:
    """The step as a claim finds it, refused in the spec's order when it cannot be claimed. A plain
    read: the claim's UPDATE re-checks that nothing moved, so it is done before the write's
    transaction opens, and a lost race costs no BEGIN and ROLLBACK."""
    if not visibility.sees_everything(identity) and visibility.visible_run(identity, run_id) is None:
        raise no_such_run(run_id)  # a person: no answer at all about a run hidden from them
    state = _load_step(identity, run_id, step_id)
    if state.run.is_over:
        raise run_ended()  # spec §3.5: checked before anything else
    if not identity.is_agent:
        raise forbidden("claim is for agent identities; people decide their work items")
    if state.kind != "agent":
        raise forbidden(f"{step_id} is a {state.kind} step; only agent steps are claimed")
    if state.state == StepStatus.CLAIMED and not lapsed(state, now):
        if state.claimed_by == identity.ref:
            raise conflict(ConflictIssue.CLAIMED_BY_YOU, "you already hold a live claim on this step")
        raise conflict(ConflictIssue.CLAIMED_BY_OTHER, "another caller holds a live claim on this step")
    if state.state not in CLAIMABLE:
        raise conflict(ConflictIssue.NOT_READY, f"{step_id} is not ready")
    return state


@transaction.atomic(savepoint=False)
def claim(*, identity: Identity, run_id: str, step_id: str, now: dt.datetime,
          found: StepState | None = None) -> Lease:
    """Take the step under a fresh lease. Optimistic: the UPDATE only lands if nobody moved since
    the step was read (`found`, from `claimable`, or read here); otherwise it is read again."""
    state = found
    for _attempt in range(3):
        state = state or claimable(identity=identity, run_id=run_id, step_id=step_id, now=now)
        handoff = effective_handoff(state, now)
        generation = state.lease_gen + 1
        expires_at = whole_second_up(now + _lease_seconds())  # expiresAt shows seconds: never earlier
        moved = sql.update_row(
            StepState, state.pk,
            {"state": StepStatus.CLAIMED, "claimed_by": identity.ref, "lease_gen": generation, "lease_expires_at": expires_at,
             "progress": None, "handoff": handoff},
            where={"lease_gen": state.lease_gen, "state": state.state},
        )
        if moved:
            _record_claim(identity, state, generation, expires_at, now)
            state.state, state.claimed_by, state.lease_gen = StepStatus.CLAIMED, identity.ref, generation
            state.lease_expires_at, state.progress, state.handoff = expires_at, None, handoff
            token = tokens.issue(organization_id=identity.organization.id, run_id=run_id, step_id=step_id,
                                 generation=generation, holder=identity.ref, expires_at=expires_at, issued_at=now,
                                 checked=_has_check(state))
            return Lease(token=token, expires_at=expires_at, state=state)
        state = None
    raise conflict(ConflictIssue.CLAIMED_BY_OTHER, "another caller holds a live claim on this step")


def _record_claim(identity: Identity, state: StepState, generation: int, expires_at, now) -> None:
    """The claim, and before it the lapse of the lease it replaces (judged at read time: no sweep
    may have run), in one statement."""
    where = {"organization_id": identity.organization.id, "run_id": state.run_id, "step_id": state.step_id,
             "at": now}
    events = []
    if state.state == StepStatus.CLAIMED:
        events.append(audit.event(EventKind.LEASE_LAPSED, actor=audit.SERVER, **where,
                                  data={"leaseGeneration": state.lease_gen, "heldBy": state.claimed_by}))
    events.append(audit.event(EventKind.STEP_CLAIMED, actor=audit.Actor.of(identity), **where,
                              data={"leaseGeneration": generation, "expiresAt": iso(expires_at)}))
    audit.write(events)


def check_lease(identity: Identity, lease: tokens.LeaseClaim, state: StepState | None, run: Run, now) -> StepState:
    """The order of spec §3.5 and tools.md: run_ended first, then whose token, then stale."""
    if run.is_over:
        raise run_ended()
    if state is None:
        raise not_found(f"run {run.id} has no step {lease.step_id}")
    if lease.holder != identity.ref:
        raise forbidden("this token was issued to another identity")
    if state.lease_gen != lease.generation or state.state != StepStatus.CLAIMED or lapsed(state, now):
        raise stale("the lease of this token ended or was replaced; call get_work again")
    if state.claimed_by != lease.holder:
        # The step's own record of its holder decides, not only the token's claim: a token minted
        # for one agent (even with the signing key) never completes another agent's claim.
        raise forbidden("this step is claimed by another identity")
    return state


def verified_lease(identity: Identity, token: str) -> tokens.LeaseClaim:
    lease = tokens.verify(token)
    if lease.organization_id != identity.organization.id:
        raise not_found("no such claim in this organization")
    return lease


@transaction.atomic(savepoint=False)
def renew(*, identity: Identity, token: str, progress: str | None, now: dt.datetime) -> Lease:
    lease = verified_lease(identity, token)
    state = _load_step(identity, lease.run_id, lease.step_id)
    check_lease(identity, lease, state, state.run, now)
    generation = state.lease_gen + 1
    expires_at = whole_second_up(now + _lease_seconds())  # expiresAt shows seconds: never earlier
    changes = {"lease_gen": generation, "lease_expires_at": expires_at}
    if progress is not None:
        changes["progress"] = progress
    moved = sql.update_row(StepState, state.pk, changes, where={"lease_gen": state.lease_gen, "state": StepStatus.CLAIMED})
    if not moved:
        raise stale("the lease of this token ended or was replaced; call get_work again")
    audit.record(EventKind.LEASE_RENEWED, organization_id=identity.organization.id, actor=audit.Actor.of(identity),
                 at=now, run_id=lease.run_id, step_id=lease.step_id,
                 data={"leaseGeneration": generation, "expiresAt": iso(expires_at), "progress": progress})
    new_token = tokens.issue(organization_id=identity.organization.id, run_id=lease.run_id, step_id=lease.step_id,
                             generation=generation, holder=identity.ref, expires_at=expires_at, issued_at=now,
                             checked=lease.checked)
    return Lease(token=new_token, expires_at=expires_at, state=state)
