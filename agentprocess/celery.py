"""The Celery app: beat schedules the sweeps (settings.CELERY_BEAT_SCHEDULE), workers run them."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentprocess.settings")

app = Celery("agentprocess")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
