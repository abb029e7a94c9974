"""Demo set-up for `./dev run`: the example processes published, demo people and a demo agent.

Idempotent: a process is published again only when its file changed; people keep their passwords.
Tokens stay the same from one start to the next: the demo keeps the ones it printed in
var/demo-tokens.json (an embedded demo's file, like var/secret_key) and prints them again while they
work; a token that was revoked (or a new database) gets a fresh one, and any earlier demo token of
that identity is revoked, so each demo identity has exactly one live demo token.
"""

import json
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from kernel.identity import revoke_earlier_tokens, token_still_works
from kernel.models import ApiToken
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
TOKEN_LABEL = "demo"

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

        kept = _read_kept()
        self.stdout.write("\nDemo people (password for all: %s):" % PASSWORD)
        for email, groups, operator, superuser in PEOPLE:
            from django.contrib.auth import get_user_model

            existing = get_user_model().objects.filter(email=email).exists()
            user, _ = create_person(organization, email, groups=groups, operator=operator,
                                    password=None if existing else PASSWORD, superuser=superuser, token_label=None)
            kept[email] = _demo_token(organization, kept.get(email), user=user)
            roles = ", ".join(groups + (["operator"] if operator else []) + (["admin"] if superuser else [])) or "—"
            self.stdout.write(f"  {email:<24} {roles:<32} API token: {kept[email]}")
        agent, _ = create_agent(organization, "demo-agent", token_label=None)
        kept[agent.ref] = _demo_token(organization, kept.get(agent.ref), agent=agent)
        _write_kept(kept)
        self.stdout.write(f"\nDemo agent a_demo-agent, bearer token:\n  {kept[agent.ref]}\n")
        self.stdout.write("These tokens stay the same at every start of the demo until you revoke one (at /tokens/ "
                          "or in admin); a revoked one is replaced at the next start.\n")
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


def _demo_token(organization, kept: str | None, *, agent=None, user=None) -> str:
    """The token printed last time while it still works; else a fresh one, revoking any other."""
    if kept and token_still_works(kept, agent=agent, user=user):
        return kept
    _, token = ApiToken.issue(organization=organization, agent=agent, user=user, label=TOKEN_LABEL)
    revoke_earlier_tokens(token, label=TOKEN_LABEL)
    return token


def _read_kept() -> dict:
    try:
        kept = json.loads(Path(settings.DEMO_TOKENS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _write_kept(kept: dict) -> None:
    """Written readable by this user only: the file holds live bearer tokens."""
    path = Path(settings.DEMO_TOKENS_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(kept, file, indent=1)
