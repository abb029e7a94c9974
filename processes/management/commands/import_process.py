"""python manage.py import_process PATH [--org SLUG] [--bind ROLE=GROUP ...] [--publish]"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kernel.organizations import get_or_create_organization
from processes.parsing import parse_process_file
from processes.publishing import (
    PublishRefused,
    bind_roles,
    current_version_if_unchanged,
    import_draft,
    latest_version_of,
    publish_draft,
    unchanged_message,
)


class Command(BaseCommand):
    help = (
        "Import a PROCESS.md (a folder named like the process, or the file itself) as a draft; "
        "bind roles to groups and optionally publish it. Exits 1 with every issue, one a line."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--org", default="default", help="organization slug (default: default)")
        parser.add_argument(
            "--bind", action="append", default=[], metavar="ROLE=GROUP", help="bind a role to a group (repeatable)"
        )
        parser.add_argument("--publish", action="store_true", help="publish the draft as the next version")

    def handle(self, *args, path, org, bind, publish: bool, **options):
        source_path = Path(path)
        folder_name = None
        if source_path.is_dir():
            folder_name = source_path.resolve().name
            source_path = source_path / "PROCESS.md"
        if not source_path.is_file():
            raise CommandError(f"{source_path}: no such file")
        try:
            # Bytes decoded as they are: read_text would turn CRLF into LF, and the content hash
            # and the body are over the file exactly as written (spec §6 rule 5).
            source = source_path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            self._refuse(["PROCESS.md: not UTF-8 text"])

        bindings = {}
        for item in bind:
            role, sep, group = item.partition("=")
            if not sep or not role.strip() or not group.strip():
                self._refuse([f'--bind "{item}": expected ROLE=GROUP'])
            bindings[role.strip()] = group.strip()

        organization = get_or_create_organization(org)
        draft = import_draft(organization=organization, source=source, folder_name=folder_name)
        if draft.issues:
            self._refuse(draft.issues)
        # Roles the file still has and --bind does not name keep the current version's groups, as
        # the admin's form pre-fills them: republishing a changed file needs no --bind again.
        latest = latest_version_of(draft)
        kept = {role: group for role, group in (latest.bindings if latest else {}).items()
                if role in draft.unbound_roles and role not in bindings}
        try:
            if kept:
                self.stdout.write("roles kept from version " + f"{latest.number}: "
                                  + ", ".join(f"{role}={group}" for role, group in sorted(kept.items())))
            if bindings or kept:
                bind_roles(draft=draft, bindings={**kept, **bindings})
            systems = ((parse_process_file(source).frontmatter or {}).get("requires") or {}).get("systems") or []
            if systems:
                self.stdout.write(f"requires: {', '.join(systems)} (connect these first; the server neither checks "
                                  "nor grants this access)")
            if publish:
                # An unchanged file (and bindings) publishes nothing and is no failure: exit 0.
                self.stdout.write(publish_draft(draft=draft).message)
                return
        except PublishRefused as refusal:
            self._refuse(refusal.issues)
        unbound = draft.unbound_roles
        self.stdout.write(f"draft {draft.pk} of {draft.name} imported")
        current = current_version_if_unchanged(draft, latest_version_of(draft))
        if current is not None:
            self.stdout.write(unchanged_message(current) + "; publishing it creates no version "
                              "unless a role is bound to another group")
        if unbound:
            self.stdout.write("roles to bind before publishing: " + ", ".join(unbound))

    def _refuse(self, issues):
        for issue in issues:
            self.stderr.write(issue)
        raise SystemExit(1)
