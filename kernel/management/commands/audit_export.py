"""python manage.py audit_export [--org SLUG] [--run RUN_ID] [--since ISO] [--until ISO] --format jsonl|csv

Streams the audit log to standard output, oldest first, a page of events at a time (the memory it
holds does not grow with the log). The JSONL line and the CSV columns are in the README.
"""

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from kernel import audit
from kernel.models import Organization


def moment(text: str, option: str) -> dt.datetime:
    """An ISO 8601 date or date-time; a date is its midnight and a time without an offset is UTC."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"{option}: {text!r} is not an ISO 8601 date or date-time "
                           "(e.g. 2026-10-06 or 2026-10-06T09:00:00Z)") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


class Command(BaseCommand):
    help = "Stream audit events as JSON lines or CSV."

    def add_arguments(self, parser):
        parser.add_argument("--org", help="organization slug (default: every organization)")
        parser.add_argument("--run", help="only this run's events")
        parser.add_argument("--since", help="from this instant on (ISO 8601, inclusive)")
        parser.add_argument("--until", help="before this instant (ISO 8601, exclusive)")
        parser.add_argument("--format", required=True, choices=sorted(audit.FORMATS))

    def handle(self, *args, **options):
        organizations = None
        if options["org"]:
            organizations = list(Organization.objects.filter(slug=options["org"]).values_list("id", flat=True))
            if not organizations:
                raise CommandError(f"no organization {options['org']!r}")
        since = moment(options["since"], "--since") if options["since"] else None
        until = moment(options["until"], "--until") if options["until"] else None
        lines, _content_type = audit.FORMATS[options["format"]]
        rows = audit.events(organization_ids=organizations, run_id=options["run"], since=since, until=until)
        for line in lines(rows):
            self.stdout.write(line, ending="")
