"""OAuth 2.1 for MCP and REST (issue 7), on django-oauth-toolkit (DOT).

This server is its own authorization server and the protected resource:

- **Agents** use the client-credentials grant with an *agent application* (`AgentApplication`: a
  confidential DOT Application registered for one agent). Their tokens act as that agent.
- **People** connect MCP clients (public clients, registered in admin) with the authorization code
  grant and PKCE S256: they sign in, consent at `/o/authorize/`, and the token acts as them. Only
  such a token (and refreshes of it) counts as a person's own credential for `decide`.
- Tokens are opaque, stored only as SHA-256 checksums (`token_checksum`), read only from the
  `Authorization` header, and resolved to an Identity in `agentprocess.identity` (one place).

Endpoints: `/o/authorize/`, `/o/token/`, `/o/revoke_token/` (RFC 7009);
discovery: `/.well-known/oauth-authorization-server` (RFC 8414) and
`/.well-known/oauth-protected-resource[/mcp|/api/v1]` (RFC 9728). Settings: `OAUTH2_PROVIDER`.
"""

import hashlib

import oauthlib.oauth2
from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.http import Http404
from django.urls import path
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import get_access_token_model, get_application_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView, OAuthServerMetadataView, RevokeTokenView, TokenView
from oauth2_provider.views.metadata import OAuthProtectedResourceMetadataView
from oauthlib.oauth2.rfc6749.grant_types.authorization_code import code_challenge_method_s256

from .identity import AGENT, Identity, person_identity
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
    return AgentApplication.objects.create(agent=agent, application=application), secret


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


# --- identities ----------------------------------------------------------------------------------


def _audience_is_this_server(resources: list[str]) -> bool:
    """RFC 8707: a token restricted to resources must name this server (or a resource in it)."""
    if not resources:
        return True
    base = settings.PUBLIC_BASE_URL
    return any(uri.rstrip("/") == base or uri.startswith(base + "/") for uri in resources)


def identity_from_access_token(token: str) -> Identity | None:
    """Resolve an OAuth access token (looked up by its SHA-256 checksum). Unknown, expired or
    revoked (DOT deletes revoked access tokens) → None.

    - client credentials (no user): the agent its application is registered for;
    - authorization code + PKCE (or a refresh of such a token): the person who consented, as a
      human identity; the application must be an authorization-code client, not an agent's.
    """
    checksum = hashlib.sha256(token.encode()).hexdigest()
    row = (
        get_access_token_model().objects.select_related("application", "user")
        .filter(token_checksum=checksum).first()
    )
    if row is None or row.application is None or row.is_expired():
        return None
    if not row.allow_scopes([SCOPE]) or not _audience_is_this_server(row.resource):
        return None
    link = (
        AgentApplication.objects.select_related("agent__organization__operators")
        .filter(application_id=row.application_id).first()
    )
    if row.user_id is None:
        if link is None:
            return None
        return Identity(organization=link.agent.organization, kind=AGENT, agent=link.agent)
    if link is not None or row.application.authorization_grant_type != row.application.GRANT_AUTHORIZATION_CODE:
        return None
    return person_identity(row.user, human_presence=True)


# --- authorization server ------------------------------------------------------------------------


class Server(oauthlib.oauth2.Server):
    """oauthlib's server with S256 as the only PKCE method: "plain", and a code_challenge without a
    method (which means plain), are refused before the consent page (DOT alone would only refuse
    plain after consent, when it creates the code)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.auth_grant._code_challenge_methods = {"S256": code_challenge_method_s256}


class Validator(OAuth2Validator):
    """DOT's validator, narrowed: only the three grants this server offers; client credentials only
    for agent applications (a token for no agent would act as nobody) and the code flow only for
    other clients (an agent's credentials never act for a person)."""

    def validate_grant_type(self, client_id, grant_type, client, request, *args, **kwargs):
        if grant_type not in GRANTS:
            return False
        if not super().validate_grant_type(client_id, grant_type, client, request, *args, **kwargs):
            return False
        if grant_type == "client_credentials":
            return is_agent_application(client)
        if grant_type == "authorization_code":
            return not is_agent_application(client)
        return True

    def validate_response_type(self, client_id, response_type, client, request, *args, **kwargs):
        return response_type == "code" and not is_agent_application(client) and super().validate_response_type(
            client_id, response_type, client, request, *args, **kwargs)


class ConsentView(AuthorizationView):
    """`/o/authorize/`: sign-in (LOGIN_URL), then the consent page `oauth2_provider/authorize.html`.
    Someone who belongs to no organization has nothing to consent to: refused before the form."""

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and person_identity(request.user) is None:
            return self.render_to_response({"error": {
                "error": "access_denied",
                "description": "Your account belongs to no organization on this server, so there is nothing an "
                               "application could do as you. Ask an administrator to add you.",
            }}, status=403)
        return super().dispatch(request, *args, **kwargs)

    def get(self, request, *args, **kwargs):
        # Every code comes from a consent given on this page: a client's `approval_prompt=auto`
        # (DOT would then approve silently when an earlier token is still valid) is ignored.
        if "approval_prompt" in request.GET:
            request.GET = request.GET.copy()
            del request.GET["approval_prompt"]
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        identity = person_identity(self.request.user) if self.request.user.is_authenticated else None
        context["organization"] = identity.organization if identity else None
        return context


class ProtectedResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata of one protected resource of this server, anchored on PUBLIC_BASE_URL (the
    base the WWW-Authenticate challenge names), with this server as its authorization server."""

    resource_path = ""

    def get(self, request, *args, **kwargs):
        if self.resource_path not in RESOURCE_PATHS:
            raise Http404
        return super().get(request, *args, **kwargs)

    def get_resource(self, request):
        return resource_url(self.resource_path)

    def get_authorization_servers(self, request):
        return [oauth2_settings.OIDC_ISS_ENDPOINT or settings.PUBLIC_BASE_URL]

    def get_resource_documentation(self):
        return f"{settings.PUBLIC_BASE_URL}/api/v1/docs/" if self.resource_path == REST_RESOURCE_PATH else ""


# The names are DOT's ("oauth2_provider:token" …): its metadata view reverses them. Mounted at the
# root by agentprocess/urls.py. Deliberately absent: DOT's application-management pages (the admin
# does that), OIDC, device flow, introspection and dynamic client registration.
_patterns = [
    path("o/authorize/", ConsentView.as_view(), name="authorize"),
    path("o/token/", TokenView.as_view(), name="token"),
    path("o/revoke_token/", RevokeTokenView.as_view(), name="revoke-token"),
    path(".well-known/oauth-authorization-server", OAuthServerMetadataView.as_view(), name="oauth-server-metadata"),
    path(".well-known/oauth-protected-resource", ProtectedResourceMetadataView.as_view(),
         name="oauth-resource-metadata"),
    *[
        path(f".well-known/oauth-protected-resource{resource_path}",
             ProtectedResourceMetadataView.as_view(resource_path=resource_path),
             name=f"oauth-resource-metadata-{resource_path.strip('/').replace('/', '-')}")
        for resource_path in RESOURCE_PATHS if resource_path
    ],
]
urlpatterns = (_patterns, "oauth2_provider")
