"""TEST ONLY — a second server in a subprocess (tests/test_backup_restore.py): migrate its empty
database, restore an archive with `restore_org`, and print as JSON what it then answers: get_run
of every run, the SHA-256 of every upload's bytes read through its storage, the rows it holds.

    python -m tests.support.restore_probe ARCHIVE --slug SLUG --at ISO-INSTANT [--migrate] [--no-restore]

Numbers are written as kernel/jsonio writes them (every digit kept).
"""

import argparse
import datetime as dt
import io
import os
import sys

import django


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("archive")
    parser.add_argument("--slug", required=True)
    parser.add_argument("--at", required=True, type=dt.datetime.fromisoformat)
    parser.add_argument("--migrate", action="store_true")
    parser.add_argument("--no-restore", action="store_true")
    options = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentprocess.settings")
    django.setup()
    from django.core.files.storage import default_storage
    from django.core.management import call_command

    from kernel import jsonio
    from kernel.models import Organization
    from tests.support import backup_org

    if options.migrate:
        call_command("migrate", verbosity=0)
    if options.no_restore:
        return
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("restore_org", options.archive, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    restored = Organization.objects.filter(slug=options.slug).exists()
    answer = {
        "exit": code, "out": out.getvalue(), "err": err.getvalue(), "rows": backup_org.table_rows(),
        "views": backup_org.run_views(options.slug, options.at) if restored else None,
        "files": backup_org.stored_file_hashes(options.slug) if restored else None,
    }
    default_storage.exists("")  # the lazy storage made, to name its class
    answer["storage"] = type(default_storage._wrapped).__name__
    sys.stdout.write(jsonio.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
