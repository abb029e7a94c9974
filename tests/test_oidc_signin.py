"""Sign-in with an OpenID Connect provider (issue 25), against a real provider in a second process
(tests/support/oidc_provider.py: django-oauth-toolkit's). This server's side runs in the test
client; every call to the provider (discovery, JWKS, token) is real HTTP.

Refusals: a wrong state, a replayed code, a wrong nonce, an ID token for another audience, an
expired one and one signed with an unknown key each end on a page saying so, and create nobody.
A key rotation at the provider is followed without a restart here.
"""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model

from kernel.models import AuditEvent, EventKind
from kernel.organizations import organization_group
from sso import oidc
from sso.models import ProviderAccount
from sso.providers import by_slug
from tests.support import readme_settings
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, ProviderProcess, free_port, through_provider

BASE = "http://127.0.0.1:8000"  # PUBLIC_BASE_URL of the test client's requests
PASSWORD = "provider-password-1"
PEOPLE = {
    "ada": {"password": PASSWORD, "email": "Ada@Example.com", "given_name": "Ada", "family_name": "Lovelace",
            "groups": ["idp-approvers", "idp-unrelated"]},
    "nonce": {"password": PASSWORD, "email": "nonce@example.com", "groups": [], "misbehave": "nonce"},
    "audience": {"password": PASSWORD, "email": "audience@example.com", "groups": [], "misbehave": "audience"},
    "expired": {"password": PASSWORD, "email": "expired@example.com", "groups": [], "misbehave": "expired"},
    "unknown": {"password": PASSWORD, "email": "unknown@example.com", "groups": [], "misbehave": "unknown_key"},
}


def start_provider(tmp_path_factory) -> ProviderProcess:
    provider = ProviderProcess(tmp_path_factory.mktemp("idp"), free_port(),
                               f"{BASE}/accounts/oidc/oidc/callback/", f"{BASE}/accounts/login/")
    provider.write_directory(PEOPLE)
    return provider


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    with start_provider(tmp_path_factory).running() as provider:
        yield provider


def configure(settings, provider: ProviderProcess):
    """README's settings block, with this provider's address and client."""
    settings.PUBLIC_BASE_URL = BASE
    readme_settings.apply(settings, "oidc", OIDC_ISSUER=provider.issuer, OIDC_CLIENT_ID=CLIENT_ID,
                          OIDC_CLIENT_SECRET=CLIENT_SECRET)


@pytest.fixture
def signed_in_setup(settings, idp, org):
    configure(settings, idp)
    organization_group(org, "approvers")
    organization_group(org, "finance")
    return idp


def begin(client) -> str:
    """Press the button: the provider's authorization URL this server redirects to."""
    answer = client.get("/accounts/oidc/oidc/login/")
    assert answer.status_code == 302, answer.content[:500]
    return answer["Location"]


def back_here(client, location: str):
    """The provider sent the browser to `location` (our callback): follow it in the test client."""
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}" == BASE
    return client.get(f"{parts.path}?{parts.query}")


def nobody_made():
    assert not get_user_model().objects.exists()
    assert not ProviderAccount.objects.exists()


def refused_with(answer, code: str, sentence: str):
    assert answer.status_code == 403
    text = answer.content.decode()
    assert "You were not signed in" in text
    assert f"<code>{code}</code>" in text, re.findall(r"<code>[^<]*</code>", text)
    assert sentence in text
    assert "_auth_user_id" not in answer.wsgi_request.session


def test_the_login_page_shows_the_providers_button_whose_target_starts_the_flow(client, signed_in_setup):
    page = client.get("/accounts/login/?next=/runs/").content.decode()
    assert "Sign in with Test IdP" in page
    assert 'href="/accounts/oidc/oidc/login/?next=/runs/"' in page
    authorize = urlsplit(begin(client))
    query = parse_qs(authorize.query)
    assert f"{authorize.scheme}://{authorize.netloc}{authorize.path}" == f"{signed_in_setup.issuer}/authorize/"
    assert query["response_type"] == ["code"] and query["client_id"] == [CLIENT_ID]
    assert query["redirect_uri"] == [f"{BASE}/accounts/oidc/oidc/callback/"]
    assert query["scope"] == ["openid email profile"]
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) == 43
    assert len(query["state"][0]) >= 20 and len(query["nonce"][0]) >= 20


def test_a_person_is_created_with_the_mapped_groups_then_matched_by_sub(client, signed_in_setup, org, settings):
    answer = back_here(client, through_provider(begin(client), "ada", PASSWORD))
    assert answer.status_code == 302 and answer["Location"] == "/"
    user = get_user_model().objects.get()
    assert (user.email, user.first_name, user.last_name) == ("ada@example.com", "Ada", "Lovelace")
    assert sorted(user.groups.values_list("name", flat=True)) == ["approvers"]
    assert not user.has_usable_password()
    account = ProviderAccount.objects.get()
    assert (account.issuer, account.user_id, account.organization_id) == (signed_in_setup.issuer, user.pk, org.pk)
    added = AuditEvent.objects.get(kind=EventKind.PERSON_ADDED)
    assert (added.actor, added.actor_kind) == ("identity provider Test IdP", "server")
    assert added.data == {"email": "ada@example.com", "groups": ["approvers"], "operator": False,
                          "source": {"kind": "oidc", "provider": "Test IdP", "issuer": signed_in_setup.issuer}}
    assert client.get("/").status_code == 200

    # At the provider, Ada moves to finance and becomes an admin; her email changes too: `sub` matches.
    signed_in_setup.write_directory({**PEOPLE, "ada": {**PEOPLE["ada"], "email": "ada.l@example.com",
                                                       "groups": ["idp-finance", "idp-admins"]}})
    try:
        logout = client.post("/accounts/logout/")  # here, then at the provider (RP-initiated logout)
        assert logout["Location"].startswith(f"{signed_in_setup.issuer}/logout/?id_token_hint=ey")
        assert "post_logout_redirect_uri=http%3A%2F%2F127.0.0.1%3A8000%2Faccounts%2Flogin%2F" in logout["Location"]
        assert "_auth_user_id" not in client.session
        back_here(client, through_provider(begin(client), "ada", PASSWORD))
    finally:
        signed_in_setup.write_directory(PEOPLE)
    user = get_user_model().objects.get()
    assert sorted(user.groups.values_list("name", flat=True)) == ["finance", org.operators.name]
    changed = AuditEvent.objects.get(kind=EventKind.PERSON_CHANGED)
    assert changed.actor == "identity provider Test IdP"
    assert (changed.data["groupsBefore"], changed.data["groups"]) == (["approvers"], ["finance"])
    assert (changed.data["operatorBefore"], changed.data["operator"]) == (False, True)
    assert changed.data["source"]["kind"] == "oidc"

    # The same groups again: no change, no event.
    client.post("/accounts/logout/")
    settings.OIDC_OPERATOR_GROUP = "idp-admins"
    signed_in_setup.write_directory({**PEOPLE, "ada": {**PEOPLE["ada"], "groups": ["idp-finance", "idp-admins"]}})
    try:
        back_here(client, through_provider(begin(client), "ada", PASSWORD))
    finally:
        signed_in_setup.write_directory(PEOPLE)
    assert AuditEvent.objects.filter(kind=EventKind.PERSON_CHANGED).count() == 1


def test_without_create_users_an_unknown_person_is_refused_and_an_email_alone_matches_nobody(
        client, signed_in_setup, settings, make_person):
    settings.OIDC_CREATE_USERS = False
    refused_with(back_here(client, through_provider(begin(client), "ada", PASSWORD)), "no_account",
                 "There is no account here for ada@example.com yet.")
    assert not get_user_model().objects.exists()

    make_person("ada@example.com")  # an account with her address, never signed in by the provider
    settings.OIDC_CREATE_USERS = True
    refused_with(back_here(client, through_provider(begin(client), "ada", PASSWORD)), "email_taken",
                 "An account with the email address ada@example.com already exists here")
    assert not ProviderAccount.objects.exists()

    settings.OIDC_LINK_VERIFIED_EMAIL = True  # the provider says email_verified: true
    assert back_here(client, through_provider(begin(client), "ada", PASSWORD)).status_code == 302
    assert ProviderAccount.objects.get().user.email == "ada@example.com"


def test_a_wrong_state_is_refused(client, signed_in_setup):
    location = through_provider(begin(client), "ada", PASSWORD)
    forged = re.sub(r"state=[^&]+", "state=forged-state-value", location)
    refused_with(back_here(client, forged), "wrong_state", "This sign-in was not started in this browser")
    nobody_made()
    # Nor does the genuine state work from another browser (no session here).
    refused_with(back_here(client.__class__(), location), "wrong_state", "Start again from the sign-in page.")
    nobody_made()


def test_a_replayed_code_is_refused(client, signed_in_setup):
    first = through_provider(begin(client), "ada", PASSWORD)
    code = parse_qs(urlsplit(first).query)["code"][0]
    assert back_here(client, first).status_code == 302  # used once: Ada is made and signed in
    client.post("/accounts/logout/")
    made = list(get_user_model().objects.values_list("pk", flat=True))
    # The first code, sent back with a new flow's (valid, unused) state: the provider refuses it.
    second = through_provider(begin(client), "ada", PASSWORD)
    replayed = re.sub(r"code=[^&]+", f"code={code}", second)
    refused_with(back_here(client, replayed), "code_refused", "did not accept this sign-in")
    # The first URL again: its state was used up.
    refused_with(back_here(client, first), "wrong_state", "This sign-in was not started in this browser")
    assert list(get_user_model().objects.values_list("pk", flat=True)) == made
    assert ProviderAccount.objects.count() == 1


@pytest.mark.parametrize(("who", "code", "sentence"), [
    ("nonce", "wrong_nonce", "it was meant for another sign-in"),
    ("audience", "wrong_audience", "it was meant for another application"),
    ("expired", "expired", "it had expired"),
    ("unknown", "unknown_key", "it was signed with a key the provider does not publish"),
])
def test_an_id_token_that_does_not_verify_is_refused(client, signed_in_setup, who, code, sentence):
    answer = back_here(client, through_provider(begin(client), who, PASSWORD))
    refused_with(answer, code, sentence)
    assert "Test IdP&#x27;s answer could not be verified" in answer.content.decode()
    nobody_made()


def test_a_key_rotation_at_the_provider_is_followed_without_a_restart(client, settings, org, tmp_path_factory):
    provider = start_provider(tmp_path_factory)
    configure(settings, provider)
    organization_group(org, "approvers")
    with provider.running():
        back_here(client, through_provider(begin(client), "ada", PASSWORD))
        assert "_auth_user_id" in client.session
        first_kid = oidc.client(by_slug("oidc")).server_metadata["jwks"]["keys"][0]["kid"]
    provider.rotate_key()  # the provider restarts with a new signing key, on the same port
    with provider.running():
        client.post("/accounts/logout/")
        answer = back_here(client, through_provider(begin(client), "ada", PASSWORD))
        assert answer.status_code == 302 and "_auth_user_id" in client.session
        second_kid = oidc.client(by_slug("oidc")).server_metadata["jwks"]["keys"][0]["kid"]
    assert first_kid != second_kid
    assert provider.log_path.read_text().count("GET /o/.well-known/jwks.json") == 2  # fetched again once
    assert get_user_model().objects.count() == 1


def test_a_token_without_the_groups_claim_leaves_the_groups_admins_set(client, signed_in_setup, org):
    signed_in_setup.write_directory({**PEOPLE, "ada": {key: value for key, value in PEOPLE["ada"].items()
                                                       if key != "groups"}})
    try:
        back_here(client, through_provider(begin(client), "ada", PASSWORD))
        user = get_user_model().objects.get()
        assert list(user.groups.all()) == []
        user.groups.add(organization_group(org, "finance"))  # an admin gives her a group
        client.post("/accounts/logout/")
        back_here(client, through_provider(begin(client), "ada", PASSWORD))
    finally:
        signed_in_setup.write_directory(PEOPLE)
    assert list(user.groups.values_list("name", flat=True)) == ["finance"]
    assert not AuditEvent.objects.filter(kind=EventKind.PERSON_CHANGED).exists()


def test_readme_names_every_setting_it_documents_for_sign_in():
    from tests.support.readme_settings import README

    configuration = README.read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    for name in ("PASSWORD_LOGIN", "BREAK_GLASS_ACCOUNTS", "OIDC_ISSUER", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET",
                 "OIDC_SCOPES", "OIDC_NAME", "OIDC_PROVIDERS", "OIDC_CREATE_USERS", "OIDC_LINK_VERIFIED_EMAIL",
                 "OIDC_GROUPS_CLAIM", "OIDC_GROUP_MAP", "OIDC_OPERATOR_GROUP", "OIDC_TIMEOUT"):
        assert f"`{name}`" in configuration, name
