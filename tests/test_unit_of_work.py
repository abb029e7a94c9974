"""The write boundary (issue 12): one unit of work, write services atomic on their own, and every
row lock taken inside a transaction.

Spec §4: "Every write carries a client `requestId` … Repeating it with the same arguments returns
the original result and changes nothing. … A call that failed is not recorded, so a retry can
succeed." §6 rule 3: a refused submission changes nothing; §3.3: the next attempt's `handoff`
carries "the `issues` if the last submission was not accepted".
"""

import pytest
from django.db import DatabaseError, connection
from django.db.transaction import TransactionManagementError

from kernel import clock
from kernel.errors import ToolError
from runs.models import IdempotencyRecord, Run, StepState, WorkItem
from runs.services import locks, writes
from runs.services.engine import RunContext
from runs.services.submissions import submit

from .support.flows import LINK

SCREEN_THEN_APPROVE = """---
name: screen-then-approve
description: An agent screens, a person approves.
inputs:
  vendor: string
steps:
  - id: screen
    agent: Screen the vendor.
    output:
      cleared: boolean
  - id: approve
    person: finance
    approve: Approve the vendor.
  - id: done
    finish: approved
---
Screen, then approve.
"""

REFUSE_WORK_ITEMS = {
    "postgresql": [
        "CREATE FUNCTION planted_refusal() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'planted refusal'; END; "
        "$$ LANGUAGE plpgsql",
        "CREATE TRIGGER planted_refusal BEFORE INSERT ON runs_workitem FOR EACH ROW EXECUTE FUNCTION planted_refusal()",
    ],
    "sqlite": ["CREATE TRIGGER planted_refusal BEFORE INSERT ON runs_workitem "
               "BEGIN SELECT RAISE(ABORT, 'planted refusal'); END"],
}
DROP_REFUSAL = {
    "postgresql": ["DROP TRIGGER IF EXISTS planted_refusal ON runs_workitem", "DROP FUNCTION IF EXISTS planted_refusal()"],
    "sqlite": ["DROP TRIGGER IF EXISTS planted_refusal"],
}


@pytest.fixture
def claimed_screen(transactional_db, org, publish, make_agent, make_person):
    """A run whose agent step is claimed; returns (agent, run id, token)."""
    publish(SCREEN_THEN_APPROVE, bindings={"finance": "finance"})
    agent = make_agent("screener")
    make_person("fin@example.com", groups=["finance"])
    run_id = agent.ok("start_run", process="screen-then-approve", inputs={"vendor": "Acme"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    return agent, run_id, token


@pytest.fixture
def work_items_refused():
    """A database trigger that refuses every new work item: a real failure half-way through a write."""
    with connection.cursor() as cursor:
        for statement in REFUSE_WORK_ITEMS[connection.vendor]:
            cursor.execute(statement)
    yield
    with connection.cursor() as cursor:
        for statement in DROP_REFUSAL[connection.vendor]:
            cursor.execute(statement)


def test_a_write_service_called_outside_the_unit_of_work_is_atomic(claimed_screen, work_items_refused):
    """submit completes the agent step, records run data and opens the approval's work item in one
    write. Called directly (no unit of work, no transaction around it), a failure at the last of
    those leaves none of the others behind."""
    agent, run_id, token = claimed_screen
    before = Run.objects.get(pk=run_id)
    assert not connection.in_atomic_block
    with pytest.raises(DatabaseError, match="planted refusal"):
        submit(identity=agent.identity, token=token, output={"cleared": True}, evidence=LINK,
               summary="Screened.", next_choice=None, reason=None, now=clock.now())
    after = Run.objects.get(pk=run_id)
    assert (after.steps_data, after.snapshot, after.seq) == (before.steps_data, before.snapshot, before.seq)
    assert StepState.objects.get(run_id=run_id, step_id="screen").state == "claimed"
    assert StepState.objects.get(run_id=run_id, step_id="approve").state is None
    assert not WorkItem.objects.filter(run_id=run_id).exists()


def test_taking_a_run_lock_outside_a_transaction_raises(claimed_screen):
    agent, run_id, _token = claimed_screen
    assert not connection.in_atomic_block
    with pytest.raises(TransactionManagementError, match="outside a transaction"):
        locks.run_for_write(organization=agent.identity.organization, run_id=run_id)
    with pytest.raises(TransactionManagementError, match="outside a transaction"):
        RunContext.for_write(organization=agent.identity.organization, run_id=run_id)
    with pytest.raises(TransactionManagementError, match="outside a transaction"):
        locks.runs_for_sweep([run_id])


def test_a_refusal_rolls_the_write_back_and_keeps_only_its_handoff_note(claimed_screen):
    """The unit of work applies a `Refused` after the rollback: the note reaches the step, what the
    write had done does not, and no idempotency record is kept (a retry can succeed)."""
    agent, run_id, _token = claimed_screen
    state = StepState.objects.get(run_id=run_id, step_id="screen")
    write = writes.Write(identity=agent.identity, operation="submit", arguments={"requestId": "r-refused", "x": 1},
                         now=clock.now())

    def apply(_prepared):
        Run.objects.filter(pk=run_id).update(outcome="written before the refusal")
        raise writes.Refused(ToolError("not_accepted", "nothing changed", ["output.cleared: missing"]),
                             writes.HandoffNote(state.pk, state.lease_gen, {"issues": ["output.cleared: missing"]}))

    with pytest.raises(ToolError) as refused:
        writes.perform(write, apply)
    assert refused.value.envelope() == {"ok": False, "error": {
        "code": "not_accepted", "message": "nothing changed", "issues": ["output.cleared: missing"]}}
    assert not isinstance(refused.value, writes.Refused)  # the note is data for the unit of work only
    assert Run.objects.get(pk=run_id).outcome is None
    assert StepState.objects.get(pk=state.pk).handoff == {"issues": ["output.cleared: missing"]}
    assert not IdempotencyRecord.objects.filter(request_id="r-refused").exists()


def test_a_note_for_a_lease_that_has_since_changed_is_not_kept(claimed_screen):
    agent, run_id, _token = claimed_screen
    state = StepState.objects.get(run_id=run_id, step_id="screen")
    writes.keep_handoff(writes.HandoffNote(state.pk, state.lease_gen + 1, {"issues": ["late"]}),
                        actor=writes.audit.SERVER, at=clock.now())
    assert StepState.objects.get(pk=state.pk).handoff is None


def test_a_replay_returns_the_stored_result_without_preparing_or_applying_again(claimed_screen):
    agent, run_id, _token = claimed_screen
    calls = []

    def prepare(write):
        calls.append("prepare")
        return None if write.replayed else "fresh"

    def apply(prepared):
        calls.append(f"apply {prepared}")
        return {"answer": len(calls)}

    arguments = {"requestId": "r-replayed", "runId": run_id}
    first = writes.perform(writes.Write(identity=agent.identity, operation="t", arguments=arguments, now=clock.now()),
                           apply, prepare=prepare)
    again = writes.perform(writes.Write(identity=agent.identity, operation="t", arguments=arguments, now=clock.now()),
                           apply, prepare=prepare)
    assert first == again == {"answer": 2}
    assert calls == ["prepare", "apply fresh", "prepare"]
    with pytest.raises(ToolError) as reused:
        writes.perform(writes.Write(identity=agent.identity, operation="t", arguments={**arguments, "runId": "other"},
                                    now=clock.now()), apply, prepare=prepare)
    assert reused.value.envelope()["error"] == {"code": "conflict", "message": "this requestId was already used with "
                                                "other arguments", "issues": ["requestId: already used with other arguments"]}
