"""Who a person is at an identity provider: the provider's `sub`, the one thing that matches them
on the next sign-in (an email address alone never does; sso/signin.py)."""

from django.conf import settings
from django.db import models

from kernel.models import Organization


class ProviderAccount(models.Model):
    """A person's account at one OpenID Connect provider (by its issuer), tied to one account here."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_accounts")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    # What the provider last said, for admins reading this row (never used to match).
    email = models.CharField(max_length=254, blank=True)
    created_at = models.DateTimeField()
    last_sign_in_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="provider_account_unique_sub")]
        indexes = [models.Index(fields=["organization", "last_sign_in_at"], name="provider_account_seen")]

    def __str__(self):
        return f"{self.subject} at {self.issuer}"


class ScimToken(models.Model):
    """The bearer token an identity provider's SCIM client sends (issue 25, point 4): one live token
    per provider (`manage.py scim_token <provider>` issues it and prints it once); only its SHA-256 is
    kept, compared as personal API tokens are (kernel.models.hash_token). It acts on the
    organization the provider signs into when it was issued, and nothing else."""

    provider = models.SlugField(help_text="The provider's slug (OIDC_PROVIDERS `slug`, or `oidc` for OIDC_ISSUER).")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "SCIM token"

    def __str__(self):
        return f"SCIM token of {self.provider} ({'revoked' if self.revoked_at else 'live'})"


class ProvisionedPerson(models.Model):
    """A person an identity provider created or manages over SCIM (their `userName` is their email
    address here): which provider (so its first OpenID Connect sign-in links them by that address,
    sso/signin.py), its `externalId` for them, and whether it deleted them (deactivated here, and
    gone from its SCIM view)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provisioned")
    issuer = models.CharField(max_length=500)
    external_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.user_name} at {self.issuer}"
