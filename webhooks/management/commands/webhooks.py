"""manage.py webhooks add URL --kinds KIND,KIND [--process NAME] [--test-runs] [--secret whsec_…]
[--format slack|teams --group GROUP]
| list | remove ID | rotate ID [--secret whsec_…] [--grace-hours H] | resume ID | send (issue 28)."""

from django.core.management.base import BaseCommand, CommandError

from kernel import clock
from kernel.models import Organization

from ...models import CHAT_KINDS, FORMATS, KINDS, STANDARD
from ...services import fanout, sending, subscriptions
from ...services.addresses import Refused


def describe(subscription) -> str:
    state = f"paused since {clock.iso(subscription.paused_at)}: {subscription.paused_reason}" if subscription.paused_at \
        else "active"
    channel = f"\t{subscription.format} channel of {subscription.group}" if subscription.is_chat else ""
    return (f"{subscription.pk}\t{subscription.url}{channel}\tkinds: {','.join(subscription.kinds)}\t"
            f"process: {subscription.process or 'every process'}\ttest runs: "
            f"{'yes' if subscription.test_runs else 'no'}\t{state}")


class Command(BaseCommand):
    help = "Add, list, rotate the secret of, resume or remove an organization's webhook subscriptions."

    def add_arguments(self, parser):
        parser.add_argument("--org", default="default", help="the organization's slug (default: default)")
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="subscribe a URL to event kinds; prints the subscription and its secret")
        add.add_argument("url")
        add.add_argument("--kinds", default="", help=f"comma-separated, of: {', '.join(KINDS)} (a chat channel: "
                                                     f"{', '.join(CHAT_KINDS)} unless named)")
        add.add_argument("--format", default=STANDARD, choices=FORMATS,
                         help="standard: the signed JSON event; slack or teams: a chat message to their incoming webhook")
        add.add_argument("--group", default="", help="a chat channel: the group whose work it tells of")
        add.add_argument("--process", default="", help="only this process's runs")
        add.add_argument("--test-runs", action="store_true", help="test runs too (off unless asked)")
        add.add_argument("--secret", help="whsec_… (default: a new random one)")
        sub.add_parser("list")
        for name in ("remove", "resume"):
            sub.add_parser(name).add_argument("id")
        rotate = sub.add_parser("rotate", help="a new secret; the old one still signs for the grace period")
        rotate.add_argument("id")
        rotate.add_argument("--secret", help="whsec_… (default: a new random one)")
        rotate.add_argument("--grace-hours", type=float, help="default WEBHOOK_SECRET_GRACE_HOURS")
        sub.add_parser("send", help="fan out and send every due delivery now, once (the worker does it anyway)")

    def handle(self, *args, action, org, **options):
        organization = Organization.objects.filter(slug=org).first()
        if organization is None:
            raise CommandError(f"no organization {org!r}")
        try:
            getattr(self, f"_{action}")(organization, options)
        except Refused as refusal:
            raise CommandError(refusal.message) from None

    def _add(self, organization, options):
        subscription = subscriptions.add(
            organization=organization, url=options["url"], kinds=options["kinds"].split(","),
            process=options["process"], test_runs=options["test_runs"], secret=options["secret"],
            form=options["format"], group=options["group"], now=clock.now())
        self.stdout.write(describe(subscription))
        self.stdout.write(subscription.secret)

    def _list(self, organization, options):
        for subscription in subscriptions.of(organization):
            self.stdout.write(describe(subscription))

    def _remove(self, organization, options):
        subscription = subscriptions.remove(organization=organization, subscription_id=options["id"])
        self.stdout.write(f"removed webhook subscription {options['id']} ({subscription.url})")

    def _resume(self, organization, options):
        subscription = subscriptions.resume(organization=organization, subscription_id=options["id"], now=clock.now())
        self.stdout.write(describe(subscription))

    def _rotate(self, organization, options):
        subscription = subscriptions.rotate(organization=organization, subscription_id=options["id"],
                                            secret=options["secret"], grace_hours=options["grace_hours"],
                                            now=clock.now())
        self.stdout.write(f"the old secret still signs until {clock.iso(subscription.previous_secret_until)}")
        self.stdout.write(subscription.secret)

    def _send(self, organization, options):
        made = fanout.fan_out(clock.now())
        delivered, failed = sending.send_due(clock.now)
        self.stdout.write(f"deliveries made {made}, delivered {delivered}, failed {failed}")
