"""Demo set-up for `./dev run`: the example processes published, demo people and a demo agent.

Idempotent: a process is published again only when its file changed; people keep their passwords;
fresh tokens are printed on every run (only their hashes are stored).
"""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from kernel.organizations import create_agent, create_person, default_organization
from processes.hashing import content_hash
from processes.models import Process
from processes.parsing import parse_process_file
from processes.publishing import bind_roles, import_draft, publish

EXAMPLES = Path(settings.BASE_DIR) / "processes" / "examples"
BINDINGS = {
    "finance-approver": "finance",
    "team-lead": "team-leads",
    "finance-controller": "finance",
}
PASSWORD = "demo-pass-2026"
PEOPLE = [
    # email, groups, operator, superuser
    ("admin@example.com", ["finance"], True, True),
    ("fin@example.com", ["finance"], False, False),
    ("lead@example.com", ["team-leads"], False, False),
    ("manager@example.com", [], False, False),
    ("employee@example.com", [], False, False),
    ("ops@example.com", [], True, False),
]


class Command(BaseCommand):
    help = "Publish the example processes and create demo people and a demo agent (prints their tokens)."

    def handle(self, *args, **options):
        organization = default_organization()
        for folder in sorted(p for p in EXAMPLES.iterdir() if (p / "PROCESS.md").is_file()):
            self._publish_if_changed(organization, folder)

        self.stdout.write("\nDemo people (password for all: %s):" % PASSWORD)
        for email, groups, operator, superuser in PEOPLE:
            from django.contrib.auth import get_user_model

            existing = get_user_model().objects.filter(email=email).exists()
            user, token = create_person(organization, email, groups=groups, operator=operator,
                                        password=None if existing else PASSWORD, superuser=superuser)
            roles = ", ".join(groups + (["operator"] if operator else []) + (["admin"] if superuser else [])) or "—"
            self.stdout.write(f"  {email:<24} {roles:<32} API token: {token}")
        _agent, token = create_agent(organization, "demo-agent")
        self.stdout.write(f"\nDemo agent a_demo-agent, bearer token:\n  {token}\n")
        base = settings.PUBLIC_BASE_URL
        self.stdout.write(f"Admin: {base}/admin/ (admin@example.com)  Inbox: {base}/  MCP: {base}/mcp\n")

    def _publish_if_changed(self, organization, folder: Path):
        source = (folder / "PROCESS.md").read_bytes().decode("utf-8")
        parsed = parse_process_file(source)
        process = Process.objects.filter(organization=organization, name=folder.name).select_related(
            "latest_version").first()
        if parsed.frontmatter and process and process.latest_version and \
                process.latest_version.content_hash == content_hash(parsed.frontmatter, parsed.body):
            self.stdout.write(f"{folder.name}: version {process.latest_version.number} is current")
            return
        draft = import_draft(organization=organization, source=source, folder_name=folder.name)
        if draft.issues:
            self.stderr.write(f"{folder.name}: " + "; ".join(draft.issues))
            return
        bind_roles(draft=draft, bindings={role: BINDINGS.get(role, role) for role in draft.roles})
        version = publish(draft=draft)
        self.stdout.write(f"{folder.name}: published version {version.number}")
