"""The worker's first step (issue 28, point 3): each webhook event in the outbox becomes one
delivery per subscription that hears of it, with its payload, in one transaction per batch (the
outbox row marked with it: a crash loses nothing and makes nothing twice).

Batches are taken one worker at a time (PostgreSQL: an advisory lock; SQLite serializes writers),
oldest first, so the deliveries of one run are made in the order its events happened."""

from collections import defaultdict

from django.conf import settings
from django.db import connection, transaction

from kernel.models import Organization
from processes.definition import definitions_for
from processes.presentation import business_key
from runs.models import Notice, Run, WorkItem, WorkItemState

from ..models import Delivery, Subscription
from . import chat, events

BATCH = 200
LOCK = 2_800_028  # pg_advisory_xact_lock key of the fan-out (issue 28)


def fan_out(now) -> int:
    """Every webhook event not yet fanned out becomes its deliveries; the deliveries made."""
    made = 0
    while True:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK])
            rows = list(Notice.objects.filter(delivery=Notice.WEBHOOK, sent_at__isnull=True).order_by("id")[:BATCH])
            deliveries, outcomes = _deliveries(rows, now)
            Delivery.objects.bulk_create(deliveries)
            for row in rows:
                row.sent_at, row.outcome = now, outcomes[row.pk]
            Notice.objects.bulk_update(rows, ["sent_at", "outcome"])
        made += len(deliveries)
        if len(rows) < BATCH:
            return made


def _deliveries(rows: list[Notice], now) -> tuple[list[Delivery], dict[int, str]]:
    if not rows:
        return [], {}
    subscriptions = defaultdict(list)
    for subscription in Subscription.objects.filter(organization_id__in={row.organization_id for row in rows}):
        subscriptions[subscription.organization_id].append(subscription)
    # An alert's row names no run (events.alert_rows): its payload is all in the row.
    runs = {run.pk: run for run in Run.objects.filter(pk__in={row.about[0]["run"] for row in rows
                                                              if row.about[0].get("run")})}
    organizations = dict(Organization.objects.filter(pk__in={row.organization_id for row in rows}).values_list("id", "slug"))
    definitions = definitions_for({run.version_id for run in runs.values()})
    items = _open_items(rows)
    groups = _groups(rows, items) if any(s.is_chat for subs in subscriptions.values() for s in subs) else {}
    deliveries, outcomes = [], {}
    for row in rows:
        about = row.about[0]
        slug = organizations[row.organization_id]
        if about.get("run") is None:
            run = None
            process, test = about["process"], False
            payload = alert_payload_of(row, slug)
        else:
            run = runs.get(about["run"])
            if run is None:
                outcomes[row.pk] = "webhooks: the run no longer exists"
                continue
            process, test = run.process_name, run.mode == "test"
            payload = payload_of(row, run, slug, business_key(run.inputs, definitions[run.version_id].inputs), items)
        hearing = [s for s in subscriptions[row.organization_id]
                   if events.matches([(frozenset(s.kinds), s.process, s.test_runs)], row.kind, process, test)]
        group = groups.get(payload["data"]["workItem"])
        # A chat channel hears of its own group's work only, in its chat's format.
        hearing = [s for s in hearing if not s.is_chat or (group is not None and s.group == group)]
        deliveries += [Delivery(organization_id=row.organization_id, subscription=subscription, event_seq=row.pk,
                                kind=row.kind, run_id=run.pk if run else "", created_at=now, retrying_since=now,
                                next_attempt_at=now,
                                payload=chat.message(payload, group, subscription.format) if subscription.is_chat
                                else payload)
                       for subscription in hearing]
        outcomes[row.pk] = f"webhooks: {len(hearing)} deliveries"
    return deliveries, outcomes


def _open_items(rows: list[Notice]) -> dict[tuple[str, str], str]:
    """(run, step) -> the open work item, for overdue events (the crossing names only the step)."""
    wanted = {(row.about[0]["run"], row.about[0]["step"]) for row in rows
              if row.kind == "work_item.overdue" and not row.about[0].get("workItem")}
    if not wanted:
        return {}
    found = WorkItem.objects.filter(run_id__in={run for run, _ in wanted}, state=WorkItemState.OPEN).values_list(
        "run_id", "step_id", "id")
    return {(run, step): item for run, step, item in found if (run, step) in wanted}


def _groups(rows: list[Notice], items) -> dict[str, str]:
    """work item -> the group it waits for (chat channels are per group)."""
    ids = {row.about[0].get("workItem") for row in rows} | set(items.values())
    ids.discard(None)
    return dict(WorkItem.objects.filter(pk__in=ids, assigned_group__isnull=False).values_list(
        "id", "assigned_group")) if ids else {}


def payload_of(row: Notice, run, organization_slug: str, key: str, items) -> dict:
    """The event as JSON (webhooks/payload.schema.json): no inputs' values, no file bytes, no tokens."""
    about = row.about[0]
    work_item = about.get("workItem") or items.get((run.pk, about.get("step")))
    base = settings.PUBLIC_BASE_URL
    return {
        "id": f"evt_{row.pk}",
        "type": row.kind,
        "timestamp": about["at"],
        "data": {
            "organization": organization_slug,
            "process": {"name": run.process_name, "version": run.version_number},
            "run": {"id": run.pk, "businessKey": key, "test": run.mode == "test"},
            "step": about.get("step"),
            "workItem": work_item,
            "outcome": about.get("outcome"),
            "decision": about.get("decision"),
            "links": {
                "run": f"{base}/runs/{run.pk}",
                "workItem": f"{base}/work/{work_item}" if work_item else None,
                "getRun": {"tool": "get_run", "arguments": {"runId": run.pk},
                           "rest": f"{base}/api/v1/tools/get_run"},
            },
        },
    }


def alert_payload_of(row: Notice, organization_slug: str) -> dict:
    """An alert rule starting or clearing (alert.fired, alert.cleared) as JSON, the same schema:
    no run (run, its links and the process version are null), the rule and its figure in `alert`,
    the process's insight page in links."""
    about = row.about[0]
    alert = about["alert"]
    data = {"organization": organization_slug, "process": {"name": about["process"], "version": None}, "run": None,
            "step": about.get("step"), "workItem": None, "outcome": None, "decision": None, "alert": alert,
            "links": {"run": None, "workItem": None, "getRun": None,
                      "insight": f"{settings.PUBLIC_BASE_URL}/insight/{about['process']}/?period={alert['days']}"}}
    return {"id": f"evt_{row.pk}", "type": row.kind, "timestamp": about["at"], "data": data}
