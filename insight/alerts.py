"""Alerts on a process's figures (issue 27, point 5): the rules an operator sets, and the sweep that
evaluates them (Celery beat: insight.tasks.sweep_alerts).

A rule is a figure of insight/figures.py over the last `days` days of live runs, counted as the
organization's operators see them (runs/visibility.py), and a threshold: it *fires* when the value
goes above the threshold and *clears* when it is back at or below it (or there is no value any
more). Each change is told once: the sweep moves the rule's `firing` with a conditional UPDATE, and
only the sweep whose UPDATE changed the row writes the audit event (alert_fired / alert_cleared)
and queues the operators' notices (runs/services/notifications.py: alert_messages) and the
webhook event (alert.fired / alert.cleared, when a subscription hears of it), in the same
transaction and the same INSERT. A value that stays on one side tells nothing.
"""

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from kernel import audit, observe
from kernel.errors import forbidden, invalid, not_found
from kernel.identity import PERSON, Identity
from kernel.models import EventKind, Organization
from runs.services import notifications, outbox
from webhooks.services import events as webhook_events

from . import figures
from .filters import Filters
from .models import AlertRule
from .words import duration, percent

WINDOWS = (7, 30, 90)


@dataclass(frozen=True)
class Figure:
    label: str  # what the rule says, e.g. "Median wait"
    unit: str  # count, seconds or rate
    needs_step: bool


FIGURES = {
    "overdue": Figure("Overdue steps", "count", False),
    "overdue_rate": Figure("Overdue rate", "rate", False),
    "median_wait": Figure("Median wait", "seconds", True),
    "median_work": Figure("Median work", "seconds", True),
    "rework_rate": Figure("Rework rate", "rate", False),
    "escalation_rate": Figure("Escalation rate", "rate", False),
    "open_runs": Figure("Open runs", "count", False),
}


def shown(figure: str, value) -> str:
    unit = FIGURES[figure].unit
    if value is None:
        return "no value"
    if unit == "seconds":
        return duration(value)
    if unit == "rate":
        return percent(value)
    return f"{value:g}"


def describe(rule: AlertRule) -> str:
    """The rule in words: "Median wait in manager_approval above 4 h over 7 days"."""
    figure = FIGURES[rule.figure]
    where = f" in {rule.step_id}" if rule.step_id else ""
    return f"{figure.label}{where} above {shown(rule.figure, rule.threshold)} over {rule.days} days"


# --- setting and removing rules (operators) --------------------------------------------------

def _operators_only(identity: Identity) -> None:
    if not identity.is_operator:
        raise forbidden("only an operator sets or removes alert rules")


@transaction.atomic
def set_rule(*, identity: Identity, process: str, figure: str, step: str, threshold, days, now) -> AlertRule:
    """A new rule on a published process of the identity's organization; refused as a whole with
    every issue, changing nothing."""
    _operators_only(identity)
    scope = figures.scope_for(identity, process, _window(days if days in WINDOWS else 7, now))
    issues = []
    if scope is None:
        raise not_found(f"no published process {process!r}")
    if figure not in FIGURES:
        issues.append(f"figure: one of {', '.join(FIGURES)}")
    steps = [step_id for step_id, _kind, _check in scope.steps]
    if step and step not in steps:
        issues.append(f"step: not a step people or agents work in {process} ({', '.join(steps)})")
    elif figure in FIGURES and FIGURES[figure].needs_step and not step:
        issues.append("step: required for this figure")
    if days not in WINDOWS:
        issues.append("days: one of 7, 30, 90")
    if not isinstance(threshold, int | float) or isinstance(threshold, bool) or threshold < 0:
        issues.append("threshold: a number, 0 or more")
    elif figure in FIGURES and FIGURES[figure].unit == "rate" and threshold > 1:
        issues.append("threshold: a rate is at most 1 (100 %)")
    if issues:
        raise invalid("this alert rule cannot be set", issues)
    rule = AlertRule.objects.create(organization=identity.organization, process_name=process, figure=figure,
                                    step_id=step or "", threshold=float(threshold), days=days,
                                    created_by=identity.ref, created_at=now)
    audit.record(EventKind.ALERT_RULE_SET, organization_id=identity.organization.id,
                 actor=audit.Actor.of(identity), at=now, step_id=step or None,
                 data={"rule": rule.pk, "process": process, "figure": figure, "threshold": rule.threshold,
                       "days": days, "says": describe(rule)})
    return rule


@transaction.atomic
def remove_rule(*, identity: Identity, rule_id: int, now) -> None:
    _operators_only(identity)
    rule = AlertRule.objects.filter(pk=rule_id, organization=identity.organization).first()
    if rule is None:
        raise not_found(f"no alert rule {rule_id}")
    rule.delete()
    audit.record(EventKind.ALERT_RULE_REMOVED, organization_id=identity.organization.id,
                 actor=audit.Actor.of(identity), at=now, step_id=rule.step_id or None,
                 data={"rule": rule_id, "process": rule.process_name, "says": describe(rule)})


def rules_of(organization, process: str) -> list[AlertRule]:
    return list(AlertRule.objects.filter(organization=organization, process_name=process))


# --- evaluating ------------------------------------------------------------------------------

def _window(days: int, now: dt.datetime) -> Filters:
    return Filters(since=now - dt.timedelta(days=days), until=now, days=None, mode="live", by="day")


def operators_view(organization: Organization) -> Identity:
    """Who a rule is evaluated as: the organization's operators (they see every run)."""
    return Identity(organization=organization, kind=PERSON, groups=frozenset({organization.operators.name}))


def value_of(rule: AlertRule, organization: Organization, now: dt.datetime) -> float | None:
    """The rule's figure now (None: no value, e.g. a median of nothing, or the process is gone)."""
    scope = figures.scope_for(operators_view(organization), rule.process_name, _window(rule.days, now))
    if scope is None:
        return None
    if rule.figure == "open_runs":
        counts = figures.open_by_step(scope)
        return float(counts.get(rule.step_id, 0) if rule.step_id else sum(counts.values()))
    rows = [row for row in figures.steps(scope) if not rule.step_id or row["step"] == rule.step_id]
    if rule.figure in ("median_wait", "median_work"):
        median = rows[0]["waited" if rule.figure == "median_wait" else "worked"]["median"] if rows else None
        return None if median is None else float(median)
    part = {"overdue": "overdue", "overdue_rate": "overdue", "rework_rate": "rework",
            "escalation_rate": "escalations"}[rule.figure]
    counted = sum(row[part] for row in rows)
    if rule.figure == "overdue":
        return float(counted)
    whole = sum(row["count"] for row in rows)
    return round(counted / whole, 4) if whole else None


@observe.swept("alerts", items=lambda result: result[0] + result[1])
def sweep(now: dt.datetime) -> tuple[int, int]:
    """Evaluate every rule; (started, cleared) in this pass."""
    started = cleared = 0
    organizations: dict[int, Organization] = {}
    for rule in AlertRule.objects.order_by("id"):
        organization = organizations.get(rule.organization_id)
        if organization is None:
            organization = organizations[rule.organization_id] = Organization.objects.select_related(
                "operators").get(pk=rule.organization_id)
        value = value_of(rule, organization, now)
        firing = value is not None and value > rule.threshold
        if firing != rule.firing and _tell(rule, organization, value, firing, now):
            started, cleared = started + firing, cleared + (not firing)
        else:
            AlertRule.objects.filter(pk=rule.pk).update(value=value, evaluated_at=now)
    return started, cleared


@transaction.atomic
def _tell(rule: AlertRule, organization: Organization, value, firing: bool, now) -> bool:
    """Move the rule to its new state, once: False when another sweep already did."""
    moved = AlertRule.objects.filter(pk=rule.pk, firing=not firing).update(
        firing=firing, changed_at=now, value=value, evaluated_at=now)
    if not moved:
        return False
    says, now_value = describe(rule), shown(rule.figure, value)
    state = "started" if firing else "cleared"
    audit.record(EventKind.ALERT_FIRED if firing else EventKind.ALERT_CLEARED, organization_id=organization.id,
                 actor=audit.SERVER, at=now, step_id=rule.step_id or None,
                 data={"rule": rule.pk, "process": rule.process_name, "figure": rule.figure, "value": value,
                       "threshold": rule.threshold, "says": says})
    link = f"{settings.PUBLIC_BASE_URL}/insight/{rule.process_name}/?period={rule.days}"
    subject = f"Alert {state}: {rule.process_name}: {says}"
    body = (f"- {rule.process_name}: {says}. Now: {now_value}.\n"
            f"  {'The alert started' if firing else 'The alert cleared'} at {now:%Y-%m-%d %H:%M} UTC.\n  {link}")
    figure = FIGURES[rule.figure]
    webhook = {"rule": rule.pk, "says": says, "figure": rule.figure, "figureLabel": figure.label,
               "unit": figure.unit, "value": value, "valueInWords": now_value, "threshold": rule.threshold,
               "days": rule.days}
    outbox.queue(notifications.alert_messages(organization, subject=subject, body=body,
                                              about={"alert": rule.pk, "state": state}, now=now)
                 + webhook_events.alert_rows(organization.id, firing=firing, process=rule.process_name,
                                             step=rule.step_id or None, alert=webhook, now=now))
    return True
