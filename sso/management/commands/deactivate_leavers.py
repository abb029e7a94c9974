"""Deactivate people an identity provider signed in who have not signed in for a while (sso/leavers.py)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from sso import leavers


class Command(BaseCommand):
    help = ("Deactivate people signed in by an identity provider who have not signed in for --days days "
            "(default OIDC_DEACTIVATE_AFTER_DAYS): sessions end, tokens are revoked, held work is released.")

    def add_arguments(self, parser):
        parser.add_argument("--days", type=float, default=None)
        parser.add_argument("--dry-run", action="store_true", help="list them, change nothing")

    def handle(self, *args, days=None, dry_run=False, **options):
        days = days if days is not None else settings.OIDC_DEACTIVATE_AFTER_DAYS
        if not days or days <= 0:
            raise CommandError("give --days N (or set OIDC_DEACTIVATE_AFTER_DAYS): how long without a sign-in "
                               "makes a person a leaver")
        if dry_run:
            for user in leavers.not_seen_since(days):
                self.stdout.write(f"would deactivate {user.email}")
            return
        for email in leavers.deactivate_absent(days):
            self.stdout.write(f"deactivated {email}")
