"""Celery tasks: each only calls a sweep service with the current time."""

from celery import shared_task

from kernel import clock

from .services.sweep import sweep as run_sweeps
from .services.sweep import sweep_orphan_files as run_orphan_sweep


@shared_task(name="runs.tasks.sweep", ignore_result=True)
def sweep() -> str:
    return str(run_sweeps(clock.now()))


@shared_task(name="runs.tasks.sweep_orphan_files", ignore_result=True)
def sweep_orphan_files() -> str:
    return f"orphan files removed: {run_orphan_sweep(clock.now())}"
