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
