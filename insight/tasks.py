"""Celery task of process insight: beat runs the alert sweep (settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from kernel import clock

from .alerts import sweep


@shared_task(name="insight.tasks.sweep_alerts", ignore_result=True)
def sweep_alerts() -> str:
    started, cleared = sweep(clock.now())
    return f"alerts started: {started}, cleared: {cleared}"
