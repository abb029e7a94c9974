"""python manage.py restore_org ARCHIVE"""

from pathlib import Path

from django.core.management.base import BaseCommand

from kernel import clock
from runs.services.restore import RestoreRefused, restore_organization


class Command(BaseCommand):
    help = ("Restore an organization from an archive of backup_org into this server, where it must not exist yet. "
            "Verifies the manifest, every member's SHA-256, every content hash and file hash; refuses (changing "
            "nothing) with every issue, one a line, and exit status 1.")

    def add_arguments(self, parser):
        parser.add_argument("archive", help="an archive written by backup_org")

    def handle(self, *args, archive, **options):
        try:
            done = restore_organization(path=Path(archive), now=clock.now())
        except RestoreRefused as refusal:
            for issue in refusal.issues:
                self.stderr.write(issue)
            self.stderr.write("nothing was restored")
            raise SystemExit(1) from None
        rows = ", ".join(f"{count} {member.removeprefix('rows/').removesuffix('.jsonl')}"
                         for member, count in done.counts.items() if count)
        self.stdout.write(f"restored organization {done.organization} from {archive} in {done.seconds:.1f} s")
        self.stdout.write(f"rows: {rows}")
        self.stdout.write(f"verified: {done.files_verified} stored files against their uploads' SHA-256 "
                          f"({done.files_written} written), {done.versions_verified} process versions' content "
                          f"hashes, {done.runs_verified} runs' snapshots")
        if done.shifted:
            shifted = ", ".join(f"{table} +{offset}" for table, offset in sorted(done.shifted.items()))
            self.stdout.write(f"ids shifted past this server's own (public ids of runs, work items and uploads are "
                              f"kept): {shifted}")
        self.stdout.write("to do: issue new API tokens (create_identity, the Tokens page) and register agents' OAuth "
                          "clients again" + ("" if done.password_hashes else
                                             "; people choose a password through 'Forgot your password?'"))
