"""The server's Prometheus metrics (issue 22, point 3): what happened, counted where it happens, and
what the database holds, counted when /metrics is read.

Counters and histograms live in process memory, or, with PROMETHEUS_MULTIPROC_DIR set (several
uvicorn workers, the Celery worker beside them), in files of that folder that every process of the
host writes and any web worker reads back whole (prometheus-client's multiprocess mode; the variable
must be set before the process starts, and the folder emptied when the host boots).

The database's gauges (open runs, ready steps, overdue items, the outbox) are never kept up to date
on the hot path: `WorkloadCollector` asks the database at scrape time with a few indexed queries.
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

CONTENT_TYPE = CONTENT_TYPE_LATEST
MULTIPROCESS_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
OUTCOMES = ("ok", "invalid", "not_accepted", "stale", "conflict", "forbidden", "not_found", "retry")
# A tool name nobody offers is counted under this label: a caller cannot create series at will.
UNKNOWN_TOOL = "unknown"

TOOL_CALLS = Counter("agentprocess_tool_calls", "Tool calls by tool, transport (rest, mcp, browser) and outcome "
                     "(ok or the error code)", ["tool", "transport", "outcome"])
TOOL_SECONDS = Histogram("agentprocess_tool_call_seconds", "Time to answer a tool call, in the tool layer",
                         ["tool"], buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
LEASE_EXPIRIES = Counter("agentprocess_lease_expiries", "Claims whose lease lapsed, released by the sweep")
SWEEP_SECONDS = Histogram("agentprocess_sweep_seconds", "Duration of one sweep of a kind", ["kind"],
                          buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
SWEEP_ITEMS = Counter("agentprocess_sweep_items", "Items the sweeps handled, by kind (leases released, timers "
                      "fired, overdue crossings, notices sent or failed, orphan files removed)", ["kind"])
EVALUATOR_CALLS = Counter("agentprocess_check_evaluator_calls", "Questions put to the check-1 evaluator")
EVALUATOR_FAILURES = Counter("agentprocess_check_evaluator_failures",
                             "Questions the check-1 evaluator gave no usable answer to")

# (tool, transport, outcome) -> (its counter, its histogram): labels() takes a lock and builds a
# key each time; the hot path does one dict look-up instead.
_children: dict[tuple[str, str, str], tuple] = {}


def tool_call(tool: str, transport: str, outcome: str, seconds: float) -> None:
    key = (tool, transport, outcome)
    found = _children.get(key)
    if found is None:
        found = _children[key] = (TOOL_CALLS.labels(*key), TOOL_SECONDS.labels(tool))
    found[0].inc()
    found[1].observe(seconds)


def sweep(kind: str, items: int, seconds: float) -> None:
    SWEEP_SECONDS.labels(kind).observe(seconds)
    SWEEP_ITEMS.labels(kind).inc(items)
    if kind == "leases":
        LEASE_EXPIRIES.inc(items)


def evaluator_call(*, failed: bool) -> None:
    EVALUATOR_CALLS.inc()
    if failed:
        EVALUATOR_FAILURES.inc()


@dataclass
class Workload:
    """What the database holds right now (runs.services.gauges.workload)."""

    open_runs: dict[str, int] = field(default_factory=dict)  # state -> runs
    open_work_items: dict[str, int] = field(default_factory=dict)  # kind -> items
    overdue_work_items: int = 0
    ready_agent_steps: int = 0
    oldest_ready_seconds: float = 0.0
    overdue_agent_steps: int = 0
    outbox_backlog: int = 0
    oldest_unsent_seconds: float = 0.0


class WorkloadCollector(Collector):
    """The database's gauges, read when /metrics is: `read` returns a Workload, or raises when the
    database does not answer (then only agentprocess_database_up 0 is reported)."""

    def __init__(self, read: Callable[[], Workload]):
        self.read = read

    def describe(self):
        return []  # registering must not query the database

    def collect(self):
        started = time.perf_counter()
        try:
            workload = self.read()
        except Exception:  # noqa: BLE001 - a scrape reports the database as down rather than failing
            yield GaugeMetricFamily("agentprocess_database_up", "1 when the database's gauges could be read", 0)
            return
        yield GaugeMetricFamily("agentprocess_database_up", "1 when the database's gauges could be read", 1)
        yield _by("agentprocess_open_runs", "Runs not ended, by state", "state", workload.open_runs,
                  ("active", "waiting"))
        yield _by("agentprocess_open_work_items", "Open work items, by kind (task, approve, agent: an escalation)",
                  "kind", workload.open_work_items, ("task", "approve", "agent"))
        yield GaugeMetricFamily("agentprocess_overdue_work_items", "Open work items past their due time",
                                workload.overdue_work_items)
        yield GaugeMetricFamily("agentprocess_ready_agent_steps", "Agent steps an agent may claim now (ready, or "
                                "claimed under a lapsed lease)", workload.ready_agent_steps)
        yield GaugeMetricFamily("agentprocess_oldest_ready_agent_step_age_seconds", "How long the oldest claimable "
                                "agent step has been ready (0 when none is)", workload.oldest_ready_seconds)
        yield GaugeMetricFamily("agentprocess_overdue_agent_steps", "Claimable agent steps past their due time",
                                workload.overdue_agent_steps)
        yield GaugeMetricFamily("agentprocess_outbox_backlog", "Notices due and not yet sent (the outbox)",
                                workload.outbox_backlog)
        yield GaugeMetricFamily("agentprocess_outbox_oldest_due_age_seconds", "How long the oldest unsent notice "
                                "has been due (0 when none is)", workload.oldest_unsent_seconds)
        yield GaugeMetricFamily("agentprocess_workload_scrape_seconds", "Time the database's gauges took to read",
                                time.perf_counter() - started)


def _by(name: str, documentation: str, label: str, counts: dict[str, int], always: tuple[str, ...]):
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for value in sorted(set(always) | set(counts)):
        family.add_metric([value], counts.get(value, 0))
    return family


def exposition(*collectors: Collector) -> bytes:
    """The text of /metrics: this process's metrics (every process's in multiprocess mode) and the
    given collectors', read now."""
    if MULTIPROCESS_DIR:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(_Everything())
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry)


class _Everything(Collector):
    """The process's default registry (our metrics, process and Python collectors) inside a
    registry of its own, so scrape-time collectors are never added to the global one."""

    def describe(self):
        return []

    def collect(self):
        return REGISTRY.collect()
