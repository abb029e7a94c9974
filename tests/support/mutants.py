"""TEST ONLY — mutants of this server, each with ONE rule of the spec broken (issue 24 point 5).

tests/test_conformance_mutants.py starts a live server (and this server's importer) with
DJANGO_SETTINGS_MODULE=tests.support.mutant_settings and MUTANT=<name>: the real settings, plus
`MutantConfig`, whose ready() applies the one patch named. The patches are applied once Django's
apps are ready rather than while settings load, because most of them touch modules that import
models. Production code is untouched: nothing here is imported by the server unless those two
variables say so.

A mutant is a bug the runner must catch: when the project fixes a bug, add the bug back here as a
mutant (and its expected failure in the test), so the runner keeps catching it.
"""

import os
import sys

from django.apps import AppConfig


def patch(module, name: str, replacement, *, everywhere: bool = True) -> None:
    """Bind `module.name` to `replacement`; with `everywhere`, also every module that imported the
    original by name (`from x import name`), so a caller holding it sees the mutant too."""
    original = getattr(module, name)
    setattr(module, name, replacement)
    if everywhere:
        for other in list(sys.modules.values()):
            for attribute, value in list(getattr(other, "__dict__", {}).items()):
                if value is original and other is not module:
                    setattr(other, attribute, replacement)


def yaml_1_1():
    """Spec §2.1: "a server MUST parse it with the core schema only". This one reads YAML 1.1:
    `yes` is true, `1_000` is a number."""
    from ruamel.yaml.composer import Composer

    from processes import parsing

    real = parsing._new_loader

    def loader():
        yaml = real()
        yaml.version = (1, 1)
        yaml.Composer = Composer  # ruamel's own: no core-schema number forms
        return yaml

    patch(parsing, "_new_loader", loader)


def decimals_as_doubles():
    """Spec §2.3: "a server MUST NOT round them". This one reads every fraction of a request as a
    binary double (as plain `json.loads` does): 1.23456789012345678901 becomes 1.2345678901234568."""
    import json
    import math

    from kernel import jsonio

    def as_double(text: str):
        value = float(text)
        return value if math.isfinite(value) else jsonio.number(text)  # beyond a double: as before

    patch(jsonio, "_decoder", json.JSONDecoder(parse_float=as_double), everywhere=False)
    patch(jsonio, "_long_decoder", json.JSONDecoder(parse_float=as_double, parse_int=jsonio.integer),
          everywhere=False)


def undeclared_output_accepted():
    """Spec §2.3: "Fields not declared in inputs or output are refused." This one accepts undeclared
    fields in a submission's output (start_run still refuses undeclared inputs)."""
    from runs.services import acceptance

    real = acceptance.check_fields

    def lenient(specs, values, prefix):
        return [issue for issue in real(specs, values, prefix) if not issue.endswith(": not declared")]

    patch(acceptance, "check_fields", lenient, everywhere=False)


def decide_forbidden_before_stale():
    """tools.md decide: errors are checked in the order run_ended, already_decided, not_found, stale,
    forbidden. This one answers forbidden before stale."""
    from runs.models import WorkItem, WorkItemState
    from runs.services import decisions

    real = decisions.decide

    def decide(*, identity, run_id, work_item_id, **arguments):
        item = WorkItem.objects.filter(pk=work_item_id, run_id=run_id, state=WorkItemState.OPEN).first()
        if item is not None:
            decisions._check_person(identity, item)  # the broken order: who, before the snapshot
        return real(identity=identity, run_id=run_id, work_item_id=work_item_id, **arguments)

    patch(decisions, "decide", decide)


def submit_replay_reexecuted():
    """Spec §4: "Repeating it with the same arguments returns the original result and changes
    nothing." This one never looks a submit's requestId up: a replay runs the submission again
    (and, its token spent, is refused as stale)."""
    from runs.services import writes

    looked_up = writes.Write.replayed

    def replayed(self) -> bool:
        return self.operation != "submit" and looked_up.fget(self)

    writes.Write.replayed = property(replayed)


def late_event_beats_timeout():
    """Spec §2.2: a wait_for "continues at on_timeout when timeout passes". This one lets an event
    that comes after the timeout, but before a sweep fired it, be consumed by the wait."""
    from runs.services import events

    patch(events, "_time_out_passed_waits", lambda ctx, name: None, everywhere=False)


def claim_ended_not_ready():
    """Spec §3.5: every write to an ended run "returns conflict with issues: ["run_ended"], checked
    before anything else". This one answers a claim on an ended run with conflict not_ready."""
    from kernel.errors import ConflictIssue, ToolError, conflict
    from runs.services import leases

    real = leases.claimable

    def claimable(**arguments):
        try:
            return real(**arguments)
        except ToolError as error:
            if error.issues == [ConflictIssue.RUN_ENDED]:
                raise conflict(ConflictIssue.NOT_READY, f"{arguments['step_id']} is not ready") from None
            raise

    patch(leases, "claimable", claimable)


def check_fail_outranks_unsure():
    """check-1 §3: "The verdict is the worst question: unsure outranks fail, fail outranks pass." This
    one ranks fail above unsure: a check with a failed and an unsure question is refused outright
    instead of going to a person."""
    from runs.services import checks

    patch(checks, "RANK", {"pass": 0, "unsure": 1, "fail": 2}, everywhere=False)


MUTANTS = {
    "yaml-1.1": yaml_1_1,
    "decimals-as-doubles": decimals_as_doubles,
    "undeclared-output-accepted": undeclared_output_accepted,
    "decide-forbidden-before-stale": decide_forbidden_before_stale,
    "submit-replay-reexecuted": submit_replay_reexecuted,
    "late-event-beats-timeout": late_event_beats_timeout,
    "claim-ended-not-ready": claim_ended_not_ready,
    "check-fail-outranks-unsure": check_fail_outranks_unsure,
}


class MutantConfig(AppConfig):
    name = "tests.support"
    label = "conformance_mutants"
    verbose_name = "TEST ONLY: a mutant of this server"

    def ready(self):
        MUTANTS[os.environ["MUTANT"]]()
