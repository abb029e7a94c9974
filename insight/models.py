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
