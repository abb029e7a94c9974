"""Organizations and the identities that act in them: agents, people (Django users) and API tokens."""

import hashlib
import secrets

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models

DEFAULT_ORGANIZATION_SLUG = "default"


class Organization(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    # People in this group are the organization's operators: they cancel runs, send events
    # and receive escalations (spec §3.3, §3.5).
    operators = models.OneToOneField(Group, on_delete=models.PROTECT, related_name="operators_of")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.slug


class OrganizationGroup(models.Model):
    """Ties a Django group to the one organization it belongs to; nothing crosses organizations."""

    group = models.OneToOneField(Group, on_delete=models.CASCADE, related_name="organization_link")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="group_links")

    def __str__(self):
        return f"{self.group.name} ({self.organization.slug})"


class Member(models.Model):
    """A person: a Django user who works in one organization. Their `person` value is their email."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="member")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="members")

    def __str__(self):
        return f"{self.user.email} ({self.organization.slug})"


class Agent(models.Model):
    """A named service identity; it authenticates with bearer tokens (ApiToken)."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="agents")
    name = models.SlugField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="agent_name_unique_in_org")]

    def __str__(self):
        return self.name

    @property
    def ref(self) -> str:
        return f"a_{self.name}"


TOKEN_PREFIX = "apt_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token for an agent or a person. Only its SHA-256 is stored."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_tokens")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="api_tokens"
    )
    label = models.CharField(max_length=100, blank=True)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(agent__isnull=False, user__isnull=True)
                | models.Q(agent__isnull=True, user__isnull=False),
                name="api_token_for_agent_xor_person",
            )
        ]

    def __str__(self):
        owner = self.agent.ref if self.agent_id else self.user.email
        return f"{self.label or 'token'} for {owner}"

    @classmethod
    def issue(cls, *, organization, agent=None, user=None, label="") -> tuple["ApiToken", str]:
        """Create a token; returns (row, plaintext). The plaintext is shown once and never stored."""
        plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(
            organization=organization, agent=agent, user=user, label=label, token_hash=hash_token(plaintext)
        )
        return row, plaintext


# --- OAuth 2.1 (issue 7; the rest lives in kernel/oauth.py) ---------------------------

from oauth2_provider.settings import oauth2_settings  # noqa: E402  (no models imported; swappable name)


class AgentApplication(models.Model):
    """A django-oauth-toolkit Application registered for an agent: a confidential client whose
    client-credentials tokens act as that agent. Deleting it deletes the Application and its tokens."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="oauth_applications")
    application = models.OneToOneField(
        oauth2_settings.APPLICATION_MODEL, on_delete=models.CASCADE, related_name="agent_link"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "agent application (OAuth)"
        verbose_name_plural = "agent applications (OAuth)"

    def __str__(self):
        return f"{self.application.name} ({self.agent.ref})"
