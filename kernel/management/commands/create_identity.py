"""create_identity agent NAME | create_identity person EMAIL [...]: prints a fresh bearer token last.

The token replaces the one an earlier create_identity printed for the same agent or person (that one
is revoked), so running a set-up script twice leaves one live token, not two; `--keep` keeps the
earlier ones (several hosts of one agent). Tokens made in the browser or by the demo are left alone.
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from kernel.identity import revoke_earlier_tokens
from kernel.organizations import (IdentityRefused, OrganizationError, create_agent, create_person,
                                  get_or_create_organization)


class Command(BaseCommand):
    help = "Create (or reuse) an agent or a person and print a fresh bearer token on the last line."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="kind", required=True)
        agent = sub.add_parser("agent")
        agent.add_argument("name")
        agent.add_argument("--org", default="default")
        agent.add_argument("--keep", action="store_true", help="keep the tokens earlier runs printed")
        person = sub.add_parser("person")
        person.add_argument("email")
        person.add_argument("--groups", default="", help="comma-separated group names")
        person.add_argument("--operator", action="store_true")
        person.add_argument("--password")
        person.add_argument("--org", default="default")
        person.add_argument("--keep", action="store_true", help="keep the tokens earlier runs printed")

    def handle(self, *args, kind, org, **options):
        try:
            with transaction.atomic():  # a refused name creates no organization either
                token = self._create(kind, org, options)
        except IdentityRefused as refusal:
            for issue in refusal.issues:  # every issue, one a line, like import_process
                self.stderr.write(issue)
            raise SystemExit(1) from None
        except OrganizationError as error:
            raise CommandError(str(error)) from error
        if not options["keep"]:
            revoked = revoke_earlier_tokens(token, label="create_identity")
            if revoked:
                self.stdout.write(f"revoked {revoked} earlier token{'s' if revoked > 1 else ''} printed by "
                                  "create_identity (--keep keeps them)")
        self.stdout.write(token)

    def _create(self, kind: str, org: str, options: dict) -> str:
        organization = get_or_create_organization(org)
        if kind == "agent":
            agent, token = create_agent(organization, options["name"])
            self.stdout.write(f"agent {agent.ref} in {organization.slug}")
            return token
        groups = [g.strip() for g in options["groups"].split(",") if g.strip()]
        user, token = create_person(organization, options["email"], groups=groups, operator=options["operator"],
                                    password=options["password"])
        self.stdout.write(f"person {user.email} in {organization.slug}")
        return token
