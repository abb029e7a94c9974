"""Backup and restore of one organization with 1,000 runs and their files (issue 22's "done when").

    .venv/bin/python bench/backup_restore.py [--quick] [--runs 1000]

Builds an organization through the tool layer (tests/support/backup_org.py: runs in every state,
with small files as evidence and as inputs), takes get_run of every run, backs it up with
`backup_org`, and restores the archive with `restore_org` in another process into a second,
freshly migrated database whose files go to another storage backend (FILE_STORAGE=database: the
bytes in that database's filestore tables). There it takes get_run of every run again and hashes
every upload's bytes read through the storage. Prints the time of each phase, the archive's size,
and whether every view (file URLs aside) and every hash agree. Figures only; nothing is asserted.
"""

import datetime as dt
import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402

TARGET_DB = f"{common.DB_NAME}_restore"
AT = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)


def second_server(archive: Path, *options: str) -> dict | None:
    """tests/support/restore_probe.py on the second database; its JSON answer."""
    from kernel import jsonio

    env = common.server_env({"DATABASE_URL": common.database_url(TARGET_DB), "DB_POOL": "0", "CACHE_URL": "locmem",
                             "FILE_STORAGE": "database"})
    done = subprocess.run([str(common.PYTHON), "-m", "tests.support.restore_probe", str(archive), "--slug", "acme",
                           "--at", AT.isoformat(), *options], cwd=common.ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the second server failed:\n{done.stderr[-3000:]}")
    return jsonio.loads(done.stdout.splitlines()[-1]) if done.stdout.strip() else None


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, help="runs in the organization (default 1000, quick 200)")
    args = parser.parse_args(argv)
    runs = args.runs or (200 if args.quick else 1000)
    results = common.Results("backup_restore")
    print(common.context_line())
    with tempfile.TemporaryDirectory() as folder, common.bench_database({"MEDIA_ROOT": f"{folder}/media"}):
        from django.core.management import call_command

        from tests.support import backup_org

        started = time.perf_counter()
        org = backup_org.setup("acme")
        backup_org.add_runs(org, runs)
        built = time.perf_counter() - started
        files = len(backup_org.stored_file_hashes("acme"))
        print(f"# {runs:,} runs with {files:,} uploads made through the tool layer in {built:.1f} s", flush=True)
        before = backup_org.run_views("acme", AT)
        before_files = backup_org.stored_file_hashes("acme")

        archive = Path(folder) / "acme.tar.gz"
        started = time.perf_counter()
        call_command("backup_org", "acme", str(archive), stdout=io.StringIO())
        backup_seconds = time.perf_counter() - started
        size = archive.stat().st_size
        print(f"# backup_org: {backup_seconds:.2f} s, archive {size / 1e6:.2f} MB", flush=True)

        common.create_database(TARGET_DB)
        try:
            started = time.perf_counter()
            second_server(archive, "--migrate", "--no-restore")
            print(f"# second database {TARGET_DB} migrated in {time.perf_counter() - started:.1f} s", flush=True)
            started = time.perf_counter()
            answer = second_server(archive)
            restore_wall = time.perf_counter() - started
        finally:
            common.drop_database(TARGET_DB)
        if answer["exit"] != 0:
            raise SystemExit(f"restore_org refused:\n{answer['err']}")
        restore_seconds = float(answer["out"].split(" in ", 1)[1].split(" s", 1)[0])
        print(answer["out"], end="", flush=True)
        same_views = sum(backup_org.without_urls(answer["views"].get(run_id)) == backup_org.without_urls(view)
                         for run_id, view in before.items())
        hashes = {upload: tuple(pair) for upload, pair in (answer["files"] or {}).items()}
        verified = sum(read == recorded for read, recorded in hashes.values())
        print(f"# get_run the same for {same_views:,} of {len(before):,} runs; {verified:,} of {len(before_files):,} "
              f"uploads' bytes hash to their SHA-256 in {answer['storage']}", flush=True)

    results.add(f"backup_org, {runs:,} runs, {files:,} uploads", round(backup_seconds, 2), "s",
                note=f"archive {size / 1e6:.2f} MB")
    results.add(f"restore_org, {runs:,} runs, into another database and storage", round(restore_seconds, 2), "s",
                note=f"{restore_wall:.1f} s with the process, get_run of every run and reading every file")
    results.add("get_run the same after restore (file URLs aside)", same_views, "runs", f"{len(before):,}",
                same_views == len(before))
    results.add("uploads whose restored bytes verify", verified, "uploads", f"{len(before_files):,}",
                verified == len(before_files) and hashes == before_files)
    results.add(f"organization built through the tool layer, {runs:,} runs", round(built, 1), "s")
    common.finish(results, args.json)


if __name__ == "__main__":
    main()
