"""TEST ONLY — the real settings with uploads' bytes in another storage backend: Django's
InMemoryStorage (tests/test_backup_restore.py restores an archive into it, in one process, to show
that the restore writes and verifies files through the storage API only)."""

from agentprocess.settings import *  # noqa: F403 (the real settings, then the one change below)
from agentprocess.settings import STORAGES

STORAGES = {**STORAGES, "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"}}
