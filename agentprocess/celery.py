"""The Celery app: beat schedules the sweeps (settings.CELERY_BEAT_SCHEDULE), workers run them."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentprocess.settings")

app = Celery("agentprocess")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _broker_folders(sender, **kwargs):
    # The embedded broker (no REDIS_URL) is a pair of folders; they must exist before a worker starts.
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            os.makedirs(options[key], exist_ok=True)
