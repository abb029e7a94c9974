"""OAuth 2.1 for MCP and REST (issue 7): discovery documents, the 401 challenge, client credentials
for agents, authorization code + PKCE for people, refresh-token rotation, revocation, admin, and the
official MCP client getting a token by client credentials against a real server process."""

import base64
import hashlib
import re
import secrets
import uuid
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher, check_password
from django.urls import reverse
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from oauth2_provider.models import AccessToken, Application, RefreshToken

from kernel import oauth
from api.auth import NO_CREDENTIAL, UNKNOWN_CREDENTIAL
from kernel.identity import identity_from_bearer
from kernel.models import Agent, AgentApplication
from tests.support.actors import Actor, rest_call
from tests.support.envelopes import check_envelope
from tests.support.flows import decide, do_agent_step
from tests.support.spec import EXAMPLES

BASE = "http://127.0.0.1:8000"  # PUBLIC_BASE_URL of in-process tests (the settings default)
REDIRECT_URI = "http://127.0.0.1:53682/callback"  # loopback: any port matches the registered one
PASSWORD = "consent-pass-1"


# --- helpers -----------------------------------------------------------------------------------


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def token_request(client, data: dict, authorization: str | None = None):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    return client.post("/o/token/", data=urlencode(data), content_type="application/x-www-form-urlencoded",
                       **headers)


class HiddenInputs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.values = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "input" and attrs.get("type") == "hidden" and attrs.get("name"):
            self.values[attrs["name"]] = attrs.get("value") or ""


def hidden_inputs(html: str) -> dict:
    parser = HiddenInputs()
    parser.feed(html)
    return parser.values


@pytest.fixture
def agent_app(org):
    """(agent, client_id, client_secret) of an agent application for agent "screener"."""
    agent = Agent.objects.create(organization=org, name="screener")
    link, secret = oauth.register_agent_application(agent, "Screener bot")
    return agent, link.application.client_id, secret


@pytest.fixture
def mcp_app(db):
    """A person's MCP client: a public authorization-code client with a loopback redirect URI."""
    return Application.objects.create(
        name="Desk MCP client", client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris="http://127.0.0.1/callback",
    )


@pytest.fixture
def finance(make_person):
    make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    return get_user_model().objects.get(email="fin@example.com")


def client_credentials_token(client, client_id, secret, **extra) -> dict:
    response = token_request(client, {"grant_type": "client_credentials", **extra}, basic(client_id, secret))
    assert response.status_code == 200, response.content
    return response.json()


def authorize(client, app, *, challenge: str | None, method: str = "S256", **extra):
    params = {"response_type": "code", "client_id": app.client_id, "redirect_uri": REDIRECT_URI,
              "state": "st-1", "scope": "tools", **extra}
    if challenge is not None:
        params["code_challenge"] = challenge
        if method:
            params["code_challenge_method"] = method
    return client.get("/o/authorize/?" + urlencode(params))


def consent(client, app, challenge: str, **extra) -> dict:
    """The consent page, then Allow; returns the query of the redirect back to the client."""
    page = authorize(client, app, challenge=challenge, **extra)
    assert page.status_code == 200, page.content
    response = client.post("/o/authorize/", {**hidden_inputs(page.content.decode()), "allow": "Authorize"})
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT_URI
    return {key: values[0] for key, values in parse_qs(location.query).items()}


def code_flow_tokens(client, app, user, **extra) -> dict:
    client.force_login(user)
    verifier, challenge = pkce()
    redirect = consent(client, app, challenge, **extra)
    response = token_request(client, {"grant_type": "authorization_code", "code": redirect["code"],
                                      "redirect_uri": REDIRECT_URI, "client_id": app.client_id,
                                      "code_verifier": verifier, **extra})
    assert response.status_code == 200, response.content
    return response.json()


def run_at_approval(publish, make_agent) -> str:
    """A supplier-onboarding run whose approval waits for group finance; returns the run id."""
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    bot = make_agent("starter")
    run_id = bot.ok("start_run", process="supplier-onboarding",
                    inputs={"vendorName": "Acme", "amount": 48000})["run"]["id"]
    upload = bot.ok("upload", fileName="report.txt", contentType="text/plain",
                    contentBase64=base64.b64encode(b"no hits").decode())
    do_agent_step(bot, run_id, "check_vendor", {"cleared": True, "summary": "No hits."},
                  evidence=[{"kind": "file", "ref": upload["id"]}], next="approve")
    return run_id


# --- discovery and the challenge ------------------------------------------------------------------


def test_authorization_server_metadata_advertises_only_what_is_accepted(client, db):
    response = client.get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "*"
    metadata = response.json()
    assert metadata["issuer"] == BASE
    assert metadata["authorization_endpoint"] == f"{BASE}/o/authorize/"
    assert metadata["token_endpoint"] == f"{BASE}/o/token/"
    assert metadata["revocation_endpoint"] == f"{BASE}/o/revoke_token/"
    assert metadata["response_types_supported"] == ["code"]
    assert sorted(metadata["grant_types_supported"]) == ["authorization_code", "client_credentials", "refresh_token"]
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["scopes_supported"] == ["tools"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert set(metadata["token_endpoint_auth_methods_supported"]) == {"client_secret_basic", "client_secret_post",
                                                                      "none"}
    for endpoint in ("authorization_endpoint", "token_endpoint", "revocation_endpoint"):
        assert client.options(urlsplit(metadata[endpoint]).path).status_code != 404, endpoint


@pytest.mark.parametrize("resource_path", ["/mcp", "/api/v1", ""])
def test_protected_resource_metadata_names_the_resource_and_this_authorization_server(client, db, resource_path):
    response = client.get(f"/.well-known/oauth-protected-resource{resource_path}")
    assert response.status_code == 200
    metadata = response.json()
    assert metadata["resource"] == f"{BASE}{resource_path}"
    assert metadata["authorization_servers"] == [BASE]
    assert metadata["scopes_supported"] == ["tools"]
    assert metadata["bearer_methods_supported"] == ["header"]
    assert client.get("/.well-known/oauth-protected-resource/elsewhere").status_code == 404


def test_rest_401_names_the_rest_metadata_document_and_the_scope(client, db):
    status, envelope, response = rest_call(client, None, "describe", {})
    assert (status, envelope) == (401, NO_CREDENTIAL)
    challenge = response["WWW-Authenticate"]
    assert challenge == (f'Bearer realm="agentprocess", resource_metadata="{BASE}/.well-known/oauth-protected-resource'
                         f'/api/v1", scope="tools"')
    metadata = client.get(urlsplit(re.search(r'resource_metadata="([^"]+)"', challenge)[1]).path).json()
    assert metadata["resource"] == f"{BASE}/api/v1"

    status, _, response = rest_call(client, "not-a-token", "describe", {})
    assert status == 401
    assert response["WWW-Authenticate"].endswith('scope="tools", error="invalid_token"')


# --- client credentials (agents) ----------------------------------------------------------------


def test_client_credentials_token_acts_as_the_agent_and_is_stored_hashed(client, agent_app):
    agent, client_id, secret = agent_app
    issued = client_credentials_token(client, client_id, secret)
    assert issued["token_type"] == "Bearer" and issued["scope"] == "tools"
    assert "refresh_token" not in issued  # OAuth 2.1: none for client credentials
    assert 0 < issued["expires_in"] <= 3600

    row = AccessToken.objects.get()
    assert row.token == "" and row.token_checksum == hashlib.sha256(issued["access_token"].encode()).hexdigest()
    assert row.user is None

    identity = identity_from_bearer(issued["access_token"])
    assert identity.is_agent and identity.agent == agent and identity.ref == "a_screener"
    status, envelope, _ = rest_call(client, issued["access_token"], "get_work", {})
    assert status == 200 and envelope["ok"]


def test_agent_application_secret_is_stored_hashed_and_checked(client, agent_app):
    _agent, client_id, secret = agent_app
    stored = Application.objects.get(client_id=client_id).client_secret
    assert stored != secret and check_password(secret, stored)
    # A random secret needs no key stretching: a salted SHA-256 keeps token requests cheap.
    assert stored.startswith("sha256_client_secret$")
    response = token_request(client, {"grant_type": "client_credentials"}, basic(client_id, secret + "x"))
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"


def test_client_credentials_are_refused_to_an_application_registered_for_no_agent(client, db):
    secret = "s3cret-" + secrets.token_hex(8)
    app = Application.objects.create(name="loose", client_type=Application.CLIENT_CONFIDENTIAL,
                                     authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
                                     client_secret=secret)
    response = token_request(client, {"grant_type": "client_credentials"}, basic(app.client_id, secret))
    assert response.status_code in (400, 401) and response.json()["error"] == "unauthorized_client"
    assert not AccessToken.objects.exists()


def test_an_agent_token_cannot_decide(client, publish, make_agent, make_person, agent_app):
    finance = make_person("fin@example.com", groups=["finance"])
    run_id = run_at_approval(publish, make_agent)
    _agent, client_id, secret = agent_app
    as_agent = Actor(token=client_credentials_token(client, client_id, secret)["access_token"], name="a_screener")
    [work] = finance.ok("get_work")["items"]
    error = as_agent.error("decide", runId=run_id, workItemId=work["workItem"]["id"],
                           snapshot=work["workItem"]["snapshot"], decision="approved")
    assert error["code"] == "forbidden"


def test_tokens_in_the_query_string_or_body_are_not_accepted(client, agent_app):
    _agent, client_id, secret = agent_app
    token = client_credentials_token(client, client_id, secret)["access_token"]
    response = client.post(f"/api/v1/tools/describe?access_token={token}", data="{}", content_type="application/json")
    assert response.status_code == 401
    response = client.post("/api/v1/tools/describe", data=urlencode({"access_token": token}),
                           content_type="application/x-www-form-urlencoded")
    assert response.status_code == 401
    assert rest_call(client, token, "describe", {})[0] == 200


def test_revoked_and_expired_tokens_are_refused(client, agent_app):
    _agent, client_id, secret = agent_app
    token = client_credentials_token(client, client_id, secret)["access_token"]
    assert rest_call(client, token, "describe", {})[0] == 200
    response = client.post("/o/revoke_token/", data=urlencode({"token": token}),
                           content_type="application/x-www-form-urlencoded",
                           HTTP_AUTHORIZATION=basic(client_id, secret))
    assert response.status_code == 200
    status, _, response = rest_call(client, token, "describe", {})
    assert status == 401 and 'error="invalid_token"' in response["WWW-Authenticate"]

    token = client_credentials_token(client, client_id, secret)["access_token"]
    AccessToken.objects.update(expires="2000-01-01T00:00:00Z")
    assert rest_call(client, token, "describe", {})[0] == 401


def test_a_token_bound_to_another_resource_is_refused(client, agent_app):
    _agent, client_id, secret = agent_app
    ours = client_credentials_token(client, client_id, secret, resource=f"{BASE}/mcp")["access_token"]
    assert AccessToken.objects.get().resource == [f"{BASE}/mcp"]
    assert identity_from_bearer(ours) is not None
    theirs = client_credentials_token(client, client_id, secret, resource="https://other.example/mcp")["access_token"]
    assert identity_from_bearer(theirs) is None


# --- authorization code + PKCE (people) ---------------------------------------------------------


def test_code_flow_with_pkce_acts_as_the_person_who_consented(client, publish, make_agent, finance, mcp_app):
    run_id = run_at_approval(publish, make_agent)
    client.force_login(finance)
    verifier, challenge = pkce()
    page = authorize(client, mcp_app, challenge=challenge, resource=f"{BASE}/mcp")
    text = page.content.decode()
    assert "Allow <strong>Desk MCP client</strong> to act as you?" in text
    assert "fin@example.com" in text and REDIRECT_URI in text

    response = client.post("/o/authorize/", {**hidden_inputs(text), "allow": "Authorize"})
    redirect = parse_qs(urlsplit(response["Location"]).query)
    assert redirect["state"] == ["st-1"] and redirect["iss"] == [BASE]  # RFC 9207

    issued = token_request(client, {"grant_type": "authorization_code", "code": redirect["code"][0],
                                    "redirect_uri": REDIRECT_URI, "client_id": mcp_app.client_id,
                                    "code_verifier": verifier}).json()
    assert issued["refresh_token"] and issued["scope"] == "tools"
    row = AccessToken.objects.get()
    assert (row.user, row.token, row.resource) == (finance, "", [f"{BASE}/mcp"])

    identity = identity_from_bearer(issued["access_token"])
    assert identity.is_person and identity.email == "fin@example.com" and identity.human_presence
    person = Actor(token=issued["access_token"], name="fin@example.com")
    [item] = person.ok("get_work")["items"]
    assert (item["runId"], item["workItem"]["stepId"]) == (run_id, "approve")
    view = decide(person, run_id, "approve", "approved")
    assert {step["id"]: step["state"] for step in view["steps"]}["approve"] == "done"
    assert view["data"]["steps"]["approve"]["by"] == "fin@example.com"  # a person's own decision


def test_authorization_requests_without_pkce_or_with_plain_pkce_are_refused(client, finance, mcp_app):
    client.force_login(finance)
    refusals = {}
    for case, response in (("none", authorize(client, mcp_app, challenge=None)),
                           ("plain", authorize(client, mcp_app, challenge="a" * 43, method="plain")),
                           ("no method, so plain", authorize(client, mcp_app, challenge="a" * 43, method=None))):
        assert response.status_code == 302, case  # back to the client, before any consent page
        query = parse_qs(urlsplit(response["Location"]).query)
        assert query["error"] == ["invalid_request"] and query["state"] == ["st-1"], (case, query)
        assert "code" not in query
        refusals[case] = query["error_description"][0]
    assert refusals["none"] == "Code challenge required."
    assert refusals["plain"] == refusals["no method, so plain"] == "Transform algorithm not supported."
    assert not AccessToken.objects.exists()


def test_a_code_is_exchanged_only_with_its_verifier(client, finance, mcp_app):
    client.force_login(finance)
    verifier, challenge = pkce()
    code = consent(client, mcp_app, challenge)["code"]
    base = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
            "client_id": mcp_app.client_id}
    assert token_request(client, base).json()["error"] == "invalid_request"  # no code_verifier
    assert token_request(client, {**base, "code_verifier": pkce()[0]}).json()["error"] == "invalid_grant"
    assert not AccessToken.objects.exists()


def test_implicit_and_password_grants_are_refused(client, finance, mcp_app):
    client.force_login(finance)
    response = client.get("/o/authorize/?" + urlencode({"response_type": "token", "client_id": mcp_app.client_id,
                                                        "redirect_uri": REDIRECT_URI}))
    assert "access_token" not in response.get("Location", "")
    assert "error=" in response.get("Location", "") or response.status_code >= 400
    response = token_request(client, {"grant_type": "password", "username": "fin@example.com",
                                      "password": PASSWORD, "client_id": mcp_app.client_id})
    assert response.status_code >= 400 and "access_token" not in response.json()


DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


@pytest.mark.parametrize("form", [
    {"grant_type": DEVICE_CODE},                                    # DOT's device branch: was a 500
    {"grant_type": DEVICE_CODE, "device_code": "abc"},              # was a 404 "device_not_found"
    {"grant_type": "password"},                                     # was "missing username"
    {"grant_type": "password", "username": "fin@example.com", "password": PASSWORD},
    {"grant_type": "implicit"},
    {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": "x"},
    {"grant_type": "garbage"},
    {"grant_type": ""},
    {},
])
@pytest.mark.parametrize("who", ["public client", "agent application"])
def test_grants_this_server_does_not_offer_answer_unsupported_grant_type(client, finance, mcp_app, agent_app, form,
                                                                         who):
    """RFC 6749 §5.2: a grant the server does not offer is `unsupported_grant_type`, whatever
    parameters come with it, and never a 500; no token is issued."""
    if who == "public client":
        response = token_request(client, {**form, "client_id": mcp_app.client_id})
    else:
        response = token_request(client, form, basic(agent_app[1], agent_app[2]))
    assert (response.status_code, response.json()) == (400, {"error": "unsupported_grant_type"})
    assert not AccessToken.objects.exists()


def test_offered_grants_without_their_parameters_answer_invalid_request(client, mcp_app):
    for form, description in [({"grant_type": "authorization_code"}, "Missing code parameter."),
                              ({"grant_type": "refresh_token"}, "Missing refresh token parameter.")]:
        response = token_request(client, {**form, "client_id": mcp_app.client_id})
        assert (response.status_code, response.json()) == (
            400, {"error": "invalid_request", "error_description": description})


def test_refresh_tokens_rotate_and_a_replayed_one_revokes_the_family(client, finance, mcp_app):
    first = code_flow_tokens(client, mcp_app, finance)
    refresh = {"grant_type": "refresh_token", "client_id": mcp_app.client_id}
    second = token_request(client, {**refresh, "refresh_token": first["refresh_token"]}).json()
    assert second["refresh_token"] != first["refresh_token"]
    assert identity_from_bearer(first["access_token"]) is None  # the refreshed-from token is gone
    renewed = identity_from_bearer(second["access_token"])
    assert renewed.is_person and renewed.human_presence  # still that person's consent

    replay = token_request(client, {**refresh, "refresh_token": first["refresh_token"]})
    assert replay.json()["error"] == "invalid_grant"
    assert identity_from_bearer(second["access_token"]) is None  # replay detection revoked the family
    assert token_request(client, {**refresh, "refresh_token": second["refresh_token"]}).json()["error"] == \
        "invalid_grant"


def test_an_agent_application_cannot_run_the_code_flow(client, finance, agent_app):
    _agent, client_id, _secret = agent_app
    client.force_login(finance)
    app = Application.objects.get(client_id=client_id)
    response = authorize(client, app, challenge=pkce()[1])
    assert response.status_code == 400 or "error=" in response.get("Location", "")
    assert not AccessToken.objects.exists()


def test_every_code_needs_the_consent_page_even_after_an_earlier_consent(client, finance, mcp_app):
    code_flow_tokens(client, mcp_app, finance)  # consented once; that token is still valid
    response = authorize(client, mcp_app, challenge=pkce()[1], approval_prompt="auto")
    assert response.status_code == 200 and "to act as you?" in response.content.decode()


def test_a_person_of_no_organization_cannot_consent(client, db, mcp_app):
    loner = get_user_model().objects.create_user("loner", email="loner@example.com", password=PASSWORD)
    client.force_login(loner)
    response = authorize(client, mcp_app, challenge=pkce()[1])
    assert response.status_code == 403
    assert "belongs to no organization" in response.content.decode()


def test_signing_in_happens_before_consent(client, finance, mcp_app):
    response = authorize(client, mcp_app, challenge=pkce()[1])
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=/o/authorize/")


def test_personal_and_agent_api_tokens_keep_working(client, make_person, make_agent):
    for actor in (make_person("p@example.com"), make_agent("bot")):
        assert rest_call(client, actor.token, "describe", {})[0] == 200
        assert identity_from_bearer(actor.token) is not None


# --- admin ------------------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client, org):
    from kernel.organizations import create_person

    create_person(org, "root@example.com", password="admin-pass-1", superuser=True)
    assert client.login(username="root@example.com", password="admin-pass-1")
    return client


def test_admin_registers_an_agent_application_shows_the_secret_once_and_revokes_tokens(admin_client, org):
    agent = Agent.objects.create(organization=org, name="reviewer")
    assert "Agent applications (OAuth)" in admin_client.get(reverse("admin:index")).content.decode()
    assert admin_client.get(reverse("admin:agentprocess_agentapplication_add")).status_code == 200
    assert admin_client.get(reverse("admin:oauth2_provider_application_add")).status_code == 200  # people's clients
    response = admin_client.post(reverse("admin:agentprocess_agentapplication_add"),
                                 {"agent": agent.pk, "name": "Reviewer bot"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    page = response.content.decode()
    client_id = re.search(r'<code id="client-id">([^<]+)</code>', page)[1]
    secret = re.search(r'<code id="client-secret">([^<]+)</code>', page)[1]
    link = AgentApplication.objects.get()
    assert (link.agent, link.application.client_id, link.application.name) == (agent, client_id, "Reviewer bot")
    assert check_password(secret, link.application.client_secret)

    change = admin_client.get(reverse("admin:agentprocess_agentapplication_change", args=[link.pk])).content.decode()
    assert client_id in change and secret not in change

    admin_client.logout()
    token = client_credentials_token(admin_client, client_id, secret)["access_token"]
    assert identity_from_bearer(token).agent == agent
    admin_client.login(username="root@example.com", password="admin-pass-1")

    listing = admin_client.get(reverse("admin:oauth2_provider_accesstoken_changelist")).content.decode()
    assert "a_reviewer" in listing and "Client credentials" in listing and token not in listing
    row = AccessToken.objects.get()
    admin_client.post(reverse("admin:oauth2_provider_accesstoken_changelist"),
                      {"action": "revoke_tokens", "_selected_action": [row.pk]})
    assert identity_from_bearer(token) is None

    # A new secret replaces the old one, shown once again.
    response = admin_client.post(reverse("admin:agentprocess_agentapplication_changelist"),
                                 {"action": "reset_secret", "_selected_action": [link.pk]})
    new_secret = re.search(r'<code id="client-secret">([^<]+)</code>', response.content.decode())[1]
    assert new_secret != secret
    old_secret = token_request(admin_client, {"grant_type": "client_credentials"}, basic(client_id, secret))
    assert old_secret.status_code == 401
    token = client_credentials_token(admin_client, client_id, new_secret)["access_token"]

    # Deleting the agent application takes its Application and tokens along.
    admin_client.post(reverse("admin:agentprocess_agentapplication_delete", args=[link.pk]), {"post": "yes"})
    assert not Application.objects.filter(client_id=client_id).exists()
    assert identity_from_bearer(token) is None


def test_admin_lists_and_revokes_api_tokens(admin_client, make_agent):
    bot = make_agent("bot")
    listing = admin_client.get(reverse("admin:agentprocess_apitoken_changelist")).content.decode()
    assert "a_bot" in listing
    from kernel.models import ApiToken

    row = ApiToken.objects.get(agent__name="bot")
    admin_client.post(reverse("admin:agentprocess_apitoken_changelist"),
                      {"action": "revoke_selected", "_selected_action": [row.pk]})
    assert identity_from_bearer(bot.token) is None


# --- the official MCP client against a real server process ----------------------------------------


class MemoryTokens:
    """TokenStorage for the MCP SDK's OAuth providers."""

    def __init__(self):
        self.tokens = self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


async def ok(client: Client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments or None)
    envelope = result.structured_content
    check_envelope(tool, envelope)
    assert envelope["ok"], envelope
    return envelope["data"]


def new_request_id() -> str:
    return str(uuid.uuid4())


class FewRoundsPBKDF2(PBKDF2PasswordHasher):
    """pbkdf2_sha256 with few rounds: the server process (Django's default hashers, not the tests'
    MD5) verifies it with the rounds recorded in the hash, so secrets are checked quickly there too."""

    iterations = 1000


SERVER_HASHERS = ["tests.test_oauth.FewRoundsPBKDF2", "kernel.hashers.ClientSecretHasher"]


@pytest.mark.live
def test_mcp_client_gets_a_token_by_client_credentials_and_works_then_a_revoked_token_is_refused(
        live_server_url, publish, org, settings):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    settings.PASSWORD_HASHERS = SERVER_HASHERS
    link, secret = oauth.register_agent_application(Agent.objects.create(organization=org, name="screener"))
    client_id = link.application.client_id
    storage = MemoryTokens()
    auth = ClientCredentialsOAuthProvider(server_url=f"{live_server_url}/mcp", storage=storage, client_id=client_id,
                                          client_secret=secret, issuer=live_server_url)
    seen = []

    async def log_request(request):
        seen.append((request.method, request.url.path))

    async def scenario():
        http = httpx2.AsyncClient(auth=auth, timeout=30, event_hooks={"request": [log_request]})
        async with http, Client(streamable_http_client(f"{live_server_url}/mcp", http_client=http)) as client:
            described = await ok(client, "describe")
            run_id = (await ok(client, "start_run", process="supplier-onboarding",
                               inputs={"vendorName": "Acme", "amount": 48000},
                               requestId=new_request_id()))["run"]["id"]
            [item] = (await ok(client, "get_work"))["items"]
            assert (item["runId"], item["stepId"]) == (run_id, "check_vendor")
            claim = await ok(client, "claim", runId=run_id, stepId="check_vendor", requestId=new_request_id())
            upload = await ok(client, "upload", fileName="report.txt", contentType="text/plain",
                              contentBase64=base64.b64encode(b"no hits").decode(), requestId=new_request_id())
            view = await ok(client, "submit", token=claim["token"], output={"cleared": True, "summary": "No hits."},
                            evidence=[{"kind": "file", "ref": upload["id"]}], summary="Screened both lists.",
                            next="approve", reason="Cleared.", requestId=new_request_id())
            return described, view

    described, view = anyio.run(scenario)
    assert described["protocol"] == "agentprocess"
    assert view["data"]["steps"]["check_vendor"]["by"] == "a_screener"
    # The client found its way by discovery: 401 → RFC 9728 document → RFC 8414 document → token.
    assert ("GET", "/.well-known/oauth-protected-resource/mcp") in seen
    assert ("GET", "/.well-known/oauth-authorization-server") in seen
    assert ("POST", "/o/token/") in seen
    token = storage.tokens.access_token
    row = AccessToken.objects.get()
    assert row.resource == [f"{live_server_url}/mcp"]  # the SDK asked for this resource (RFC 8707)

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "describe"}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    described = httpx2.post(f"{live_server_url}/mcp", json=body, timeout=30,
                            headers={**headers, "Authorization": f"Bearer {token}"})
    assert described.status_code == 200
    refused = httpx2.post(f"{live_server_url}/mcp?access_token={token}", json=body, headers=headers, timeout=30)
    assert refused.status_code == 401

    revoked = httpx2.post(f"{live_server_url}/o/revoke_token/", data={"token": token}, auth=(client_id, secret),
                          timeout=30)
    assert revoked.status_code == 200
    response = httpx2.post(f"{live_server_url}/mcp", json=body, timeout=30,
                           headers={**headers, "Authorization": f"Bearer {token}"})
    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    assert challenge == (f'Bearer realm="agentprocess", resource_metadata="{live_server_url}/.well-known/'
                         f'oauth-protected-resource/mcp", scope="tools", error="invalid_token"')
    assert response.json() == UNKNOWN_CREDENTIAL
    metadata = httpx2.get(re.search(r'resource_metadata="([^"]+)"', challenge)[1], timeout=30).json()
    assert metadata["resource"] == f"{live_server_url}/mcp"
    assert metadata["authorization_servers"] == [live_server_url]
    issuer = httpx2.get(f"{live_server_url}/.well-known/oauth-authorization-server", timeout=30).json()["issuer"]
    assert issuer == live_server_url
    assert not RefreshToken.objects.exists()
