"""python manage.py process_insight NAME [--since DATE] [--format json|csv] [--org SLUG]"""

from django.core.management.base import BaseCommand

from insight import figures, formats
from insight.alerts import operators_view
from insight.filters import BadFilter, parse
from kernel import clock
from kernel.models import Organization


CLI_WORDS = {"to: before from": "--since: after today"}  # the page's words for what the command calls --since


class Command(BaseCommand):
    help = ("Print a process's dashboard figures, as the page's ?format=json (default) or ?format=csv gives them, "
            "seen as the organization's operators (every live run). --since DATE (YYYY-MM-DD) counts from that "
            "day to today; without it, the last 30 days. Exits 1 with every issue, one a line.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="the process's name")
        parser.add_argument("--since", help="the first day counted, YYYY-MM-DD (default: the last 30 days)")
        parser.add_argument("--format", choices=sorted(formats.TYPES), default="json", dest="fmt")
        parser.add_argument("--org", default="default", help="the organization's slug (default: default)")

    def handle(self, *args, name, since, fmt, org, **options):
        organization = Organization.objects.select_related("operators").filter(slug=org).first()
        if organization is None:
            self._refuse([f"--org {org}: no such organization"])
        try:
            # The page's own filters, so a date is checked by the same rule (and the same words).
            filters = parse({"from": since} if since is not None else {}, clock.now())
        except BadFilter as bad:
            self._refuse([CLI_WORDS.get(issue, issue.replace("from:", "--since:", 1)) for issue in bad.issues])
        scope = figures.scope_for(operators_view(organization), name, filters)
        if scope is None:
            self._refuse([f"{name}: no such published process"])
        self.stdout.write(formats.render(figures.dashboard(scope), fmt), ending="" if fmt == "csv" else "\n")

    def _refuse(self, issues):
        for issue in issues:
            self.stderr.write(issue)
        raise SystemExit(1)
