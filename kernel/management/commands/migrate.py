"""Django's `migrate`, run as the schema's owner when MIGRATION_DATABASE_URL is set (issue 21).

The owner's connection (the `migration` alias) is then this command's default database, and only
this command's: `python manage.py migrate` keeps its command line, and everything else connects as
DATABASE_URL's role. After migrating, that role gets exactly what the app needs (kernel/db_roles.py).
"""

from django.conf import settings
from django.core.management.base import CommandError
from django.core.management.commands import migrate
from django.db import DEFAULT_DB_ALIAS, connections

from kernel.db_roles import MIGRATION_ALIAS, grant_app_role, role_problem


class Command(migrate.Command):
    def add_arguments(self, parser):
        super().add_arguments(parser)
        if MIGRATION_ALIAS in settings.DATABASES:
            parser.set_defaults(database=MIGRATION_ALIAS)

    def handle(self, *args, **options):
        if options["database"] != MIGRATION_ALIAS:
            return super().handle(*args, **options)
        owner, app_role = connections[MIGRATION_ALIAS], settings.DATABASES[DEFAULT_DB_ALIAS]["USER"]
        if problem := role_problem(owner, app_role):  # before migrating: nothing half done
            raise CommandError(problem)
        super().handle(*args, **options)
        if not (options["plan"] or options["check_unapplied"] or options["prune"]):
            grant_app_role(owner, app_role)
            if options["verbosity"] >= 1:
                self.stdout.write(f'Granted "{app_role}" the app\'s privileges (on the audit log: SELECT, INSERT).')
