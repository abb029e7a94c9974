"""Celery tasks: each only calls a webhooks service with the clock."""

from celery import shared_task

from kernel import clock

from .services import fanout, sending


@shared_task(name="webhooks.tasks.deliver", ignore_result=True)
def deliver() -> str:
    made = fanout.fan_out(clock.now())
    delivered, failed = sending.send_due(clock.now)
    return f"deliveries made {made}, delivered {delivered}, failed {failed}"


@shared_task(name="webhooks.tasks.forget_old", ignore_result=True)
def forget_old() -> str:
    return f"webhook deliveries removed: {sending.forget_before(clock.now())}"
