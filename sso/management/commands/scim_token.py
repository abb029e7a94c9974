"""Issue the bearer token an identity provider's SCIM client sends (sso/provisioning.py)."""

from django.core.management.base import BaseCommand, CommandError

from sso import providers, provisioning


class Command(BaseCommand):
    help = ("Print a new SCIM bearer token for the identity provider PROVIDER (its slug: `oidc` for OIDC_ISSUER, "
            "else its OIDC_PROVIDERS slug). Shown once; the provider's earlier token stops working.")

    def add_arguments(self, parser):
        parser.add_argument("provider")

    def handle(self, *args, provider, **options):
        configured = providers.by_slug(provider)
        if configured is None:
            known = ", ".join(p.slug for p in providers.configured()) or "none: set OIDC_ISSUER or OIDC_PROVIDERS"
            raise CommandError(f"no identity provider {provider!r} (configured: {known})")
        try:
            token = provisioning.issue_token(configured)
        except provisioning.Refused as error:
            raise CommandError(str(error)) from error
        self.stdout.write(token)
