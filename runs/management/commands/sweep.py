"""python manage.py sweep: run every sweep once (leases, waits, dues, notices, orphan files)."""

from django.core.management.base import BaseCommand

from kernel import clock
from runs.services.sweep import sweep


class Command(BaseCommand):
    help = ("Run every sweep once: lapsed leases, waits and timeouts, overdue notices, and stored files no "
            "upload refers to.")

    def handle(self, *args, **options):
        self.stdout.write(str(sweep(clock.now(), orphan_files=True)))
