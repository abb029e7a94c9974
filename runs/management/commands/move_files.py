"""python manage.py move_files --to database|local|s3 [--from …]: copy every upload's bytes to
another storage backend, each SHA-256 checked against the upload rows (README "Files on several
hosts")."""

from django.conf import settings
from django.core.files.storage import storages
from django.core.management.base import BaseCommand, CommandError

from runs.services import stored_files

BACKENDS = ("local", "database", "s3")


class Command(BaseCommand):
    help = ("Copy every uploaded file from one storage backend (by default FILE_STORAGE's) to another, checking "
            "each file's SHA-256 against its upload before and after; files already there are left alone. Then "
            "set FILE_STORAGE to the new backend and restart.")

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, choices=BACKENDS, help="the backend to copy to")
        parser.add_argument("--from", dest="source", choices=BACKENDS,
                            help="the backend to copy from (default: FILE_STORAGE)")

    def handle(self, *args, to, source, **options):
        source = source or settings.FILE_STORAGE
        if source == to:
            raise CommandError(f"--from and --to are both {to}: nothing to move")
        moved = stored_files.move_all(_storage(source), _storage(to), source_label=source, target_label=to)
        for refusal in moved.refused:
            self.stderr.write(f"refused {refusal}")
        summary = f"{source} -> {to}: {moved}"
        if moved.refused:
            raise CommandError(f"{summary}; fix or remove the refused files, then run again")
        self.stdout.write(summary)


def _storage(backend: str):
    if backend not in settings.FILE_STORAGES:
        raise CommandError(f"{backend} is not configured: set S3_BUCKET (and S3_ENDPOINT_URL, the credentials) "
                           "as for FILE_STORAGE=s3")
    return storages.create_storage(settings.FILE_STORAGES[backend])
