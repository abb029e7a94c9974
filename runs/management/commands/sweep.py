"""python manage.py sweep: run every timer sweep once (leases, waits, dues)."""

from django.core.management.base import BaseCommand

from kernel import clock
from runs.services.sweep import sweep


class Command(BaseCommand):
    help = "Run every timer sweep once: lapsed leases, waits and timeouts, overdue notices."

    def handle(self, *args, **options):
        self.stdout.write(str(sweep(clock.now())))
