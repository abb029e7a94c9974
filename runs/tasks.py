"""Celery tasks: each only calls a sweep service with the current time."""

from celery import shared_task

from kernel import clock

from .services.sweep import sweep as run_sweeps


@shared_task(name="runs.tasks.sweep", ignore_result=True)
def sweep() -> str:
    return str(run_sweeps(clock.now()))
