"""The providers' settings (sso/providers.py) and who a provider may sign in (sso/signin.py) when
several providers sign people into different organizations. The protocol itself is tested against a
real provider in tests/test_oidc_signin.py."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from kernel.models import Member
from kernel.organizations import get_or_create_organization, organization_group
from sso import providers
from sso.signin import Refused, sign_in
from tests.support import readme_settings


def test_the_readme_block_of_several_providers_gives_each_its_organization(settings):
    readme_settings.apply(settings, "oidc-providers")
    okta, keycloak = providers.configured()
    assert (okta.slug, okta.name, okta.issuer, okta.organization) == ("okta", "Okta", "https://acme.okta.com", "default")
    assert (keycloak.slug, keycloak.organization) == ("keycloak", "subsidiary")
    assert keycloak.group_map == (("finance-team", "finance"),) and okta.group_map == ()
    assert okta.scopes == "openid email profile" and okta.groups_claim == "groups"
    assert providers.by_slug("keycloak") == keycloak and providers.by_slug("nope") is None
    assert keycloak.groups_here(["finance-team", "other"]) == {"finance"}
    assert okta.groups_here(["finance-team", "other"]) == {"finance-team", "other"}


@pytest.mark.parametrize(("value", "problem"), [
    ([{"name": "A", "issuer": "https://a"}], "needs client_id"),
    ([{"name": "A", "issuer": "https://a", "client_id": "x", "colour": "red"}], "unknown keys colour"),
    ([{"issuer": "https://a", "client_id": "x"}], "needs a name or a slug"),
    ([{"name": "A", "issuer": "https://a", "client_id": "x"}, {"name": "a", "issuer": "https://b", "client_id": "y"}],
     "share a slug"),
    ([{"name": "A", "issuer": "https://a", "client_id": "x", "create_users": "maybe"}], "true or false"),
    ([{"name": "A", "issuer": "https://a", "client_id": "x", "group_map": "nothing-to-map"}], "provider-group=our-group"),
    ({"name": "A"}, "a JSON list of objects"),
])
def test_a_malformed_provider_setting_says_what_is_wrong(settings, value, problem):
    settings.OIDC_PROVIDERS = value
    with pytest.raises(ImproperlyConfigured, match=problem):
        providers.configured()


def test_a_malformed_setting_stops_the_server_at_start():
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin", "CACHE_URL": "locmem", "OIDC_ISSUER": "https://login.example.com"}
    started = subprocess.run([sys.executable, "manage.py", "check"], env=env, capture_output=True, text=True,
                             cwd=readme_settings.README.parent, timeout=120)
    assert started.returncode != 0
    assert "OIDC_ISSUER is set without OIDC_CLIENT_ID" in started.stderr


def test_a_provider_signs_people_into_its_own_organization_only(settings, db, make_person):
    readme_settings.apply(settings, "oidc-providers", OIDC_CREATE_USERS=True)
    subsidiary = get_or_create_organization("subsidiary")
    organization_group(subsidiary, "finance")
    keycloak = providers.by_slug("keycloak")
    user = sign_in(keycloak, {"sub": "k-1", "email": "sam@sub.example.com", "groups": ["finance-team"]})
    assert Member.objects.get(user=user).organization == subsidiary
    assert list(user.groups.values_list("name", flat=True)) == ["finance"]

    # The same sub at the other provider is another person; its organization's person is not linked.
    make_person("sam@example.com")
    with pytest.raises(Refused) as refused:
        sign_in(providers.by_slug("okta"), {"sub": "k-1", "email": "sam@example.com", "email_verified": True})
    assert refused.value.code == "email_taken"
    settings.OIDC_LINK_VERIFIED_EMAIL = True
    linked = sign_in(providers.by_slug("okta"), {"sub": "k-1", "email": "sam@example.com", "email_verified": True})
    assert linked.email == "sam@example.com" and linked.pk != user.pk
    # A verified address of the other organization's person never links across organizations.
    with pytest.raises(Refused) as refused:
        sign_in(providers.by_slug("okta"), {"sub": "k-2", "email": "sam@sub.example.com", "email_verified": True})
    assert refused.value.code == "email_taken"


def test_a_deactivated_person_is_refused(settings, db, make_person):
    readme_settings.apply(settings, "oidc", OIDC_CREATE_USERS=True)
    provider = providers.configured()[0]
    user = sign_in(provider, {"sub": "s-1", "email": "ada@example.com", "groups": []})
    user.is_active = False
    user.save()
    with pytest.raises(Refused) as refused:
        sign_in(provider, {"sub": "s-1", "email": "ada@example.com", "groups": []})
    assert refused.value.code == "deactivated"


def test_an_unreachable_provider_an_error_from_it_and_an_unknown_slug_are_pages_not_500s(client, settings, db):
    from tests.support.oidc_provider import free_port

    readme_settings.apply(settings, "oidc", OIDC_ISSUER=f"http://127.0.0.1:{free_port()}/o", OIDC_TIMEOUT=2.0)
    answer = client.get("/accounts/oidc/oidc/login/")
    assert answer.status_code == 403
    assert "<code>provider_unreachable</code>" in answer.content.decode()
    assert "Test IdP could not be reached just now." in answer.content.decode()
    answer = client.get("/accounts/oidc/oidc/callback/?error=access_denied&state=whatever")
    assert answer.status_code == 403
    assert "Test IdP did not sign you in (access_denied)." in answer.content.decode()
    assert client.get("/accounts/oidc/nobody/login/").status_code == 404
    assert client.post("/accounts/oidc/oidc/login/").status_code == 405
