"""Alert rules on a process's figures (issue 27, point 5): set by an operator, evaluated by the
sweep (insight/alerts.py), firing once when the figure crosses the threshold and once when it
clears. The rule's state (firing, since when, the last value) lives on its row, so a second sweep
or a second beat never tells the same state twice (a conditional UPDATE decides who tells)."""

from django.db import models

from kernel.models import Organization


class AlertRule(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    process_name = models.CharField(max_length=64)
    figure = models.CharField(max_length=32)  # insight.alerts.FIGURES
    step_id = models.CharField(max_length=64, blank=True)  # blank: the whole process
    # In the figure's own unit: a count, seconds, or a rate from 0 to 1. Fires when the value is above it.
    threshold = models.FloatField()
    days = models.PositiveSmallIntegerField(default=7)  # the window the figure is computed over
    created_by = models.CharField(max_length=254)
    created_at = models.DateTimeField()
    firing = models.BooleanField(default=False)
    changed_at = models.DateTimeField(null=True, blank=True)  # when it last started or cleared
    value = models.FloatField(null=True, blank=True)  # the figure at the last sweep
    evaluated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "process_name"], name="alert_rule_process")]
        ordering = ["process_name", "id"]

    def __str__(self):
        return f"{self.process_name}: {self.figure} above {self.threshold}"


# --- the rollup of ended runs (issue 27, point 6) ------------------------------------------------
# The sweep (insight/rollup.py) folds every run that has ended into these rows once, so the
# dashboard reads a few grouped rows for them instead of their audit events; the runs still open
# (and those ended since the sweep's mark) are counted from the audit log as before. Durations are
# kept to the second, so the percentiles over the rows (weighted by their count) are exact.


class RollMark(models.Model):
    """Every run of the organization that ended before `rolled_until` is in the rollup, no other."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, primary_key=True, related_name="+")
    rolled_until = models.DateTimeField()


class RollKey(models.Model):
    """What every rollup row is of: a process's version, live or test, a day (UTC)."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    process_name = models.CharField(max_length=64)
    version_number = models.PositiveIntegerField()
    mode = models.CharField(max_length=8)
    day = models.DateField()

    class Meta:
        abstract = True


class AttemptRoll(RollKey):
    """Attempts of a step (insight/figures.py: an attempt begins at each step_ready) of ended runs,
    grouped by everything a figure reads; `attempts` of them alike. Day: the attempt's ready day (UTC)."""

    step_id = models.CharField(max_length=64)
    done = models.BooleanField()  # ended by a submission or a decision
    actor = models.CharField(max_length=254, blank=True)  # who submitted or decided ("" when not done)
    actor_kind = models.CharField(max_length=16, blank=True)
    waited = models.BigIntegerField(null=True)  # seconds, as the figures compute them
    worked = models.BigIntegerField(null=True)
    took = models.BigIntegerField(null=True)
    attempts = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["organization", "process_name", "mode", "day"], name="attempt_roll_day")]


class EventRoll(RollKey):
    """What happened to a step of ended runs on a day (insight/figures.py: _step_events), counted."""

    step_id = models.CharField(max_length=64)
    overdue = models.PositiveIntegerField()
    rework = models.PositiveIntegerField()
    escalated = models.PositiveIntegerField()
    lapsed = models.PositiveIntegerField()
    passed = models.PositiveIntegerField()
    unsure = models.PositiveIntegerField()
    failed = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["organization", "process_name", "mode", "day"], name="event_roll_day")]


class RunRoll(RollKey):
    """Ended runs counted by day (UTC): started that day, and finished, cancelled or failed that day
    (the timeline's bars)."""

    started = models.PositiveIntegerField()
    ended = models.PositiveIntegerField()
    cancelled = models.PositiveIntegerField()
    failed = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["organization", "process_name", "mode", "day"], name="run_roll_day")]


class TookRoll(RollKey):
    """Runs that ended (not cancelled) on a day, by how long they took in whole seconds (end to end)."""

    took = models.BigIntegerField()
    runs = models.PositiveIntegerField()
    # Among them, this one (the slowest few of the day only, so the slowest of any period are
    # among the rows of its days: figures.SLOWEST per day and version; others have no run).
    run_id = models.CharField(max_length=24, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "process_name", "mode", "day"], name="took_roll_day")]
