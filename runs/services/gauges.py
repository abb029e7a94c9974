"""What the database holds right now, for /metrics (kernel/metrics.py `WorkloadCollector`): four
aggregate queries, each over a partial index of what is open, so a scrape costs in proportion to
the open work, never to the history kept."""

import datetime as dt

from django.db.models import Count, Min, Q

from kernel.metrics import Workload
from kernel.states import CLAIMABLE, RunState, StepStatus, WorkItemState

from ..models import Notice, Run, StepState, WorkItem


def workload(now: dt.datetime) -> Workload:
    found = Workload()
    # run_open_state: the runs not ended.
    for state, count in (Run.objects.filter(state__in=[RunState.ACTIVE, RunState.WAITING])
                         .values_list("state").annotate(count=Count("id")).order_by()):
        found.open_runs[state] = count
    # work_open_held: every open item.
    overdue = 0
    for kind, count, late in (WorkItem.objects.filter(state=WorkItemState.OPEN).values_list("kind")
                              .annotate(count=Count("id"), late=Count("id", filter=Q(due_at__lte=now))).order_by()):
        found.open_work_items[kind] = count
        overdue += late
    found.overdue_work_items = overdue
    # step_claimable: agent steps ready or claimed; a claim whose lease lapsed is claimable again.
    ready = (StepState.objects.filter(kind="agent", state__in=list(CLAIMABLE))
             .filter(Q(state=StepStatus.READY) | Q(lease_expires_at__lte=now))
             .aggregate(count=Count("id"), oldest=Min("ready_since"), late=Count("id", filter=Q(due_at__lte=now))))
    found.ready_agent_steps, found.overdue_agent_steps = ready["count"], ready["late"]
    found.oldest_ready_seconds = _age(ready["oldest"], now)
    # notice_unsent: the outbox's rows still to send; those due now are its backlog.
    unsent = Notice.objects.filter(sent_at__isnull=True, send_after__lte=now).aggregate(
        count=Count("id"), oldest=Min("send_after"))
    found.outbox_backlog, found.oldest_unsent_seconds = unsent["count"], _age(unsent["oldest"], now)
    return found


def _age(since: dt.datetime | None, now: dt.datetime) -> float:
    return max((now - since).total_seconds(), 0.0) if since is not None else 0.0
