"""OAuth 2.1 clients and resources of this server (issue 7), on django-oauth-toolkit (DOT).

- **Agents** use the client-credentials grant with an *agent application* (`AgentApplication`: a
  confidential DOT Application registered for one agent). Their tokens act as that agent.
- **People** connect MCP clients (public clients, registered in admin) with the authorization code
  grant and PKCE S256; the authorization server's views live in `api/oauth.py`.
- Tokens are opaque, stored only as SHA-256 checksums (`token_checksum`), read only from the
  `Authorization` header, and resolved to an Identity in `kernel.identity` (one place).
"""

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import get_application_model

from .models import Agent, AgentApplication

SCOPE = "tools"
MCP_RESOURCE_PATH = "/mcp"
REST_RESOURCE_PATH = "/api/v1"
# Protected resources with a metadata document; "" is the whole server (the root document).
RESOURCE_PATHS = ("", MCP_RESOURCE_PATH, REST_RESOURCE_PATH)
GRANTS = ("authorization_code", "client_credentials", "refresh_token")


def resource_url(resource_path: str = "") -> str:
    """The RFC 8707 / RFC 9728 resource identifier of a protected resource of this server."""
    return f"{settings.PUBLIC_BASE_URL}{resource_path}"


def resource_metadata_url(resource_path: str) -> str:
    return f"{settings.PUBLIC_BASE_URL}/.well-known/oauth-protected-resource{resource_path}"


# --- agent applications ------------------------------------------------------------------------


@transaction.atomic
def register_agent_application(agent: Agent, name: str = "") -> tuple[AgentApplication, str]:
    """Register a confidential client-credentials client for the agent.

    Returns (link, client_secret). The secret is shown once: only its hash is stored."""
    Application = get_application_model()
    secret = generate_client_secret()
    application = Application.objects.create(
        name=name or f"{agent.ref} ({agent.organization.slug})",
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
        client_secret=secret,
        hash_client_secret=True,
        redirect_uris="",
        skip_authorization=False,
    )
    return AgentApplication.objects.create(agent=agent, organization_id=agent.organization_id,
                                           application=application), secret


@transaction.atomic
def reset_client_secret(link: AgentApplication) -> str:
    """Give the agent application a new secret (the old one stops working); returns it, once.
    Tokens issued before stay valid until they expire or are revoked."""
    secret = generate_client_secret()
    application = link.application
    application.client_secret = secret  # hashed by DOT's ClientSecretField on save
    application.save(update_fields=["client_secret", "updated"])
    return secret


@receiver(post_delete, sender=AgentApplication)
def _delete_application(sender, instance: AgentApplication, **kwargs):
    """An agent application going (deleted in admin, or with its agent) takes its DOT Application
    and so every token issued to it along."""
    get_application_model().objects.filter(pk=instance.application_id).delete()


def is_agent_application(application) -> bool:
    return application is not None and AgentApplication.objects.filter(application_id=application.pk).exists()
