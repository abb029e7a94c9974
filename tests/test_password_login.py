"""PASSWORD_LOGIN=false (issue 25, point 3): the login page shows only the providers' buttons, a
password POST is refused, the reset and change pages answer 404, sessions a password opened end, and
admin staff follow the same rule except a break-glass superuser, whose use is an audit event."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from kernel.models import AuditEvent, EventKind
from tests.support import readme_settings

PASSWORD = "correct-horse-42"


@pytest.fixture
def providers_only(settings, org):
    """README's blocks: one provider, passwords off (its break-glass account not made until a test makes it)."""
    readme_settings.apply(settings, "oidc", OIDC_NAME="Finance SSO")
    readme_settings.apply(settings, "password-off", BREAK_GLASS_ACCOUNTS=[])
    return settings


def test_the_login_page_shows_only_the_provider_buttons(client, providers_only):
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with Finance SSO" in page
    assert 'type="password"' not in page and 'name="username"' not in page


def test_a_password_post_is_refused_even_with_the_right_password(client, providers_only, make_person):
    make_person("mira@example.com", password=PASSWORD)
    answer = client.post("/accounts/login/", {"username": "mira@example.com", "password": PASSWORD})
    assert answer.status_code == 403
    assert "Passwords are not used here. Sign in with Finance SSO." in answer.content.decode()
    assert "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302


def test_the_reset_and_change_pages_answer_404(client, providers_only, make_person, mailoutbox):
    make_person("mira@example.com", password=PASSWORD)
    user = get_user_model().objects.get(email="mira@example.com")
    uid, token = urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)
    for url in ("/accounts/password_reset/", "/accounts/password_reset/done/", f"/accounts/reset/{uid}/{token}/",
                "/accounts/reset/done/", "/accounts/password_change/", "/accounts/password_change/done/"):
        assert client.get(url).status_code == 404, url
    assert client.post("/accounts/password_reset/", {"email": "mira@example.com"}).status_code == 404
    assert client.post(f"/accounts/reset/{uid}/set-password/",
                       {"new_password1": "another-pass-99", "new_password2": "another-pass-99"}).status_code == 404
    assert mailoutbox == []
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_a_session_a_password_opened_ends_when_passwords_are_switched_off(client, settings, make_person):
    make_person("mira@example.com", password=PASSWORD)
    assert client.post("/accounts/login/", {"username": "mira@example.com", "password": PASSWORD}).status_code == 302
    assert client.get("/").status_code == 200
    readme_settings.apply(settings, "oidc")  # a provider, who did not sign her in
    assert client.post("/accounts/logout/")["Location"] == "/accounts/login/"
    assert client.post("/accounts/login/", {"username": "mira@example.com", "password": PASSWORD}).status_code == 302
    settings.PASSWORD_LOGIN = False
    assert client.get("/").status_code == 302


def test_admin_staff_follow_the_rule_but_a_break_glass_superuser_may_sign_in_audited(client, providers_only, org):
    users = get_user_model().objects
    users.create_user("staff@example.com", "staff@example.com", PASSWORD, is_staff=True)
    users.create_superuser("breakglass", "root@example.com", PASSWORD)
    answer = client.post("/admin/login/?next=/admin/", {"username": "staff@example.com", "password": PASSWORD})
    assert answer.status_code == 200 and "_auth_user_id" not in client.session
    answer = client.post("/admin/login/?next=/admin/", {"username": "breakglass", "password": PASSWORD})
    assert answer.status_code == 200 and "_auth_user_id" not in client.session  # not named yet
    assert not AuditEvent.objects.filter(kind=EventKind.BREAK_GLASS_SIGN_IN).exists()

    readme_settings.apply(providers_only, "password-off")  # BREAK_GLASS_ACCOUNTS=breakglass
    answer = client.post("/admin/login/?next=/admin/", {"username": "breakglass", "password": PASSWORD})
    assert answer.status_code == 302 and client.get("/admin/").status_code == 200
    event = AuditEvent.objects.get(kind=EventKind.BREAK_GLASS_SIGN_IN)
    assert (event.actor, event.actor_kind, event.organization_id) == ("root@example.com", "admin", org.id)
    assert event.data["account"] == "breakglass"
    # The people's login page still refuses it: the break-glass door is /admin/login/.
    client.post("/admin/logout/")
    assert client.post("/accounts/login/", {"username": "breakglass", "password": PASSWORD}).status_code == 403


def test_with_passwords_on_the_pages_are_as_before(client, settings, make_person):
    settings.OIDC_ISSUER = "https://login.example.com/realms/finance"
    settings.OIDC_CLIENT_ID = "agentprocess"
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with single sign-on" in page and 'type="password"' in page
    assert client.get("/accounts/password_reset/").status_code == 200
