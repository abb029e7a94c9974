"""The OAuth 2.1 authorization server of MCP and REST (issue 7), on django-oauth-toolkit (DOT).

People sign in and consent at `/o/authorize/` (authorization code + PKCE S256 only); agents take
client-credentials tokens at `/o/token/`. Endpoints: `/o/authorize/`, `/o/token/`,
`/o/revoke_token/` (RFC 7009); discovery: `/.well-known/oauth-authorization-server` (RFC 8414) and
`/.well-known/oauth-protected-resource[/mcp|/api/v1]` (RFC 9728). Settings: `OAUTH2_PROVIDER`.
Clients, scopes and resource URLs are in `kernel/oauth.py`; tokens resolve in `kernel/identity.py`.
"""

import base64
from urllib.parse import unquote

import oauthlib.oauth2
from django.conf import settings
from django.http import Http404, JsonResponse
from django.urls import path
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView, OAuthServerMetadataView, RevokeTokenView, TokenView
from oauth2_provider.views.metadata import OAuthProtectedResourceMetadataView
from oauthlib.oauth2.rfc6749.grant_types.authorization_code import code_challenge_method_s256

from kernel import throttle
from kernel.identity import person_identity
from kernel.oauth import GRANTS, RESOURCE_PATHS, REST_RESOURCE_PATH, is_agent_application, resource_url


class Server(oauthlib.oauth2.Server):
    """oauthlib's server with S256 as the only PKCE method: "plain", and a code_challenge without a
    method (which means plain), are refused before the consent page (DOT alone would only refuse
    plain after consent, when it creates the code). The token endpoint knows only the grants this
    server offers: any other (password, device code, …) is `unsupported_grant_type` (RFC 6749
    §5.2) before its parameters are read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.auth_grant._code_challenge_methods = {"S256": code_challenge_method_s256}
        self._grant_types = {grant: self._grant_types[grant] for grant in GRANTS}


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


class ThrottledTokenView(TokenView):
    """`/o/token/`: failed client authentications are counted per (client, address), per client
    and per address, then slowed down and refused with a 429 (throttle.CLIENT_SECRET); the agent
    from an address that has not failed is never refused."""

    def post(self, request, *args, **kwargs):
        client = _client_id(request)
        address = throttle.address_of(request)
        try:
            throttle.CLIENT_SECRET.check(client, address)
        except throttle.Throttled as error:
            response = JsonResponse({"error": "invalid_client", "error_description": (
                f"too many failed client authentications; try again in {error.wait_text}")}, status=429)
            response["Retry-After"] = str(error.retry_after)
            return response
        # Not super().post(): DOT's would answer a device-code grant itself (a 500 without its
        # `device_code`); this server offers no device flow, so oauthlib refuses it like any other.
        response = self.authorization_flow_token_response(request)
        if response.status_code == 401:
            throttle.CLIENT_SECRET.failed(client, address)
        elif response.status_code == 200:
            throttle.CLIENT_SECRET.succeeded(client, address)
        return response


def _client_id(request) -> str:
    """The client a token request names: HTTP Basic (client_secret_basic) or the form field."""
    authorization = request.headers.get("Authorization", "")
    if authorization.lower().startswith("basic "):
        try:
            return unquote(base64.b64decode(authorization[6:]).decode().split(":", 1)[0])
        except (ValueError, UnicodeDecodeError):
            return ""
    return request.POST.get("client_id", "")


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
    path("o/token/", ThrottledTokenView.as_view(), name="token"),
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
