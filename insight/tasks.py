"""Celery task of process insight: beat runs the sweep (settings.CELERY_BEAT_SCHEDULE): the rollup of
ended runs first (insight/rollup.py), then the alerts."""

from celery import shared_task

from kernel import clock

from . import rollup
from .alerts import sweep


@shared_task(name="insight.tasks.sweep_alerts", ignore_result=True)
def sweep_alerts() -> str:
    rolled = rollup.roll(clock.now())
    started, cleared = sweep(clock.now())
    return f"runs rolled up: {rolled}; alerts started: {started}, cleared: {cleared}"
