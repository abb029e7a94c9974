"""The rollup of ended runs (issue 27, point 6: "a rollup table kept current ... by the sweep"): once
the sweep has folded ended runs into it, the dashboard gives exactly the figures it gave from the
audit log alone, for every filter, whether all, some or none of the runs are rolled up."""

import datetime as dt

from django.db.models import Sum

from insight import figures, rollup
from insight.models import AttemptRoll, EventRoll, RollMark, RunRoll, TookRoll
from kernel import clock

from .test_check_profile import evaluator  # noqa: F401 (the scripted evaluator fixture)
from .test_insight_figures import EXPECTED_STEPS, H, T0, figures_of, history  # noqa: F401 (the known history)

FILTERS = [{"from": "2026-10-01", "to": "2026-10-07"}, {"period": "7"}, {"period": "7", "mode": "test"},
           {"period": "7", "version": "1"}, {"period": "7", "version": "2"}, {"period": "30", "by": "week"},
           {"from": "2026-10-06", "to": "2026-10-07"}, {"period": "7", "heat": "overdue"}]
VIEWERS = ("ops@example.com", "fin2@example.com")


def everything() -> list[dict]:
    return [figures_of(viewer, **params) for viewer in VIEWERS for params in FILTERS]


def test_the_rollup_gives_the_same_figures(history):
    from_the_audit_log = everything()
    assert from_the_audit_log[0]["steps"] == EXPECTED_STEPS

    # Six hours in: R1 (ended at 5 h), R5 (cancelled at 1 h) and the test run T1 (ended at 2 h) are
    # folded; the rest were still open then.
    assert rollup.roll(T0 + dt.timedelta(hours=6)) == 3
    assert RollMark.objects.get().rolled_until == T0 + dt.timedelta(hours=6) - rollup.MARGIN
    assert everything() == from_the_audit_log

    # Now: R2 and R3 too; R4 and T2 are still open and counted from the audit log.
    assert rollup.roll(clock.now()) == 2
    assert everything() == from_the_audit_log
    live = AttemptRoll.objects.filter(mode="live")
    # check_vendor: R1 1, R2 2, R3 1, R5 1 attempts; approve: R1 1, R2 2, R3 1.
    assert live.filter(step_id="check_vendor").aggregate(n=Sum("attempts"))["n"] == 5
    assert live.filter(step_id="approve").aggregate(n=Sum("attempts"))["n"] == 4
    assert EventRoll.objects.filter(mode="live", step_id="approve").aggregate(n=Sum("overdue"))["n"] == 1
    assert RunRoll.objects.filter(mode="live").aggregate(n=Sum("started"), c=Sum("cancelled")) == {"n": 4, "c": 1}
    assert sorted(TookRoll.objects.filter(mode="live").values_list("took", "runs")) == [(5 * H, 1), (8 * H, 1),
                                                                                         (53 * H, 1)]

    # A second sweep in the same minute folds nothing and changes nothing.
    rows = AttemptRoll.objects.count()
    assert rollup.roll(clock.now()) == 0
    assert AttemptRoll.objects.count() == rows and everything() == from_the_audit_log


def test_a_run_ended_within_the_margin_waits_for_the_next_sweep(history):
    r3 = history["runs"][2]  # approved at 2 d 5 h, one hour before now
    assert rollup.roll(T0 + dt.timedelta(days=2, hours=5, minutes=4)) == 4  # R1, R2, R5, T1
    assert not AttemptRoll.objects.filter(day="2026-10-07").exists()
    assert figures_of("ops@example.com", period="7")["steps"] == EXPECTED_STEPS
    assert r3 in [row["run"] for row in figures_of("ops@example.com", period="7")["endToEnd"]["slowest"]]


def test_runs_past_the_slowest_of_their_day_are_counted_by_their_time(history, monkeypatch):
    # With one "slowest run" a day, R2 (8 h) and R1 (5 h), both ended on 5 October, are one row with
    # its run and one without; the end-to-end figures and the slowest list stay the same.
    monkeypatch.setattr(figures, "SLOWEST", 1)
    from_the_audit_log = everything()
    assert [row["seconds"] for row in from_the_audit_log[1]["endToEnd"]["slowest"]] == [53 * H]
    rollup.roll(clock.now())
    assert sorted(TookRoll.objects.filter(mode="live").values_list("took", "run_id")) == [
        (5 * H, ""), (8 * H, history["runs"][1]), (53 * H, history["runs"][2])]
    assert everything() == from_the_audit_log
