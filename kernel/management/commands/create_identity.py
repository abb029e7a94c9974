"""create_identity agent NAME | create_identity person EMAIL [...]: prints a fresh bearer token last."""

from django.core.management.base import BaseCommand, CommandError

from kernel.organizations import OrganizationError, create_agent, create_person, get_or_create_organization


class Command(BaseCommand):
    help = "Create (or reuse) an agent or a person and print a fresh bearer token on the last line."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="kind", required=True)
        agent = sub.add_parser("agent")
        agent.add_argument("name")
        agent.add_argument("--org", default="default")
        person = sub.add_parser("person")
        person.add_argument("email")
        person.add_argument("--groups", default="", help="comma-separated group names")
        person.add_argument("--operator", action="store_true")
        person.add_argument("--password")
        person.add_argument("--org", default="default")

    def handle(self, *args, kind, org, **options):
        organization = get_or_create_organization(org)
        try:
            if kind == "agent":
                agent, token = create_agent(organization, options["name"])
                self.stdout.write(f"agent {agent.ref} in {organization.slug}")
            else:
                groups = [g.strip() for g in options["groups"].split(",") if g.strip()]
                user, token = create_person(
                    organization,
                    options["email"],
                    groups=groups,
                    operator=options["operator"],
                    password=options["password"],
                )
                self.stdout.write(f"person {user.email} in {organization.slug}")
        except OrganizationError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(token)
