"""python manage.py backup_org SLUG ARCHIVE [--password-hashes]"""

from pathlib import Path

from django.core.management.base import BaseCommand

from kernel import clock
from runs.services.backup import LEFT_OUT, BackupRefused, backup_organization


class Command(BaseCommand):
    help = ("Write one organization (processes, versions, runs, work items, events, audit log, people, agents, "
            "uploads and their files) to one archive (.tar.gz, .tgz or .tar), with the SHA-256 of every member. "
            "Restore it with restore_org. Exits 1 with every issue, one a line.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the organization's slug")
        parser.add_argument("archive", help="the archive to write, e.g. acme-2026-12-05.tar.gz")
        parser.add_argument("--password-hashes", action="store_true",
                            help="carry people's password hashes (then keep the archive as safe as the database)")

    def handle(self, *args, slug, archive, password_hashes, **options):
        try:
            done = backup_organization(slug=slug, path=Path(archive), password_hashes=password_hashes, now=clock.now())
        except BackupRefused as refusal:
            for issue in refusal.issues:
                self.stderr.write(issue)
            raise SystemExit(1) from None
        rows = ", ".join(f"{count} {member.removeprefix('rows/').removesuffix('.jsonl')}"
                         for member, count in done.counts.items() if count)
        self.stdout.write(f"backed up organization {done.organization} to {done.path} in {done.seconds:.1f} s: "
                          f"{done.files} files ({done.file_bytes} bytes), {done.archive_bytes} bytes in all")
        self.stdout.write(f"rows: {rows}")
        self.stdout.write(f"manifest SHA-256: {done.manifest_sha256}")
        for table, count in sorted(done.cleared.items()):
            self.stdout.write(f"{table}: {count} references to people outside the organization left empty or out")
        self.stdout.write("not carried: " + "; ".join(f"{label} ({why})" for label, why in LEFT_OUT.items())
                          + ("" if password_hashes else
                             "; password hashes (people choose a new password; --password-hashes carries them)"))
