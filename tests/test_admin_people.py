"""One "Add person" screen in admin (issue 16, point 6): the account, its organization, groups and
operator flag, and an invitation mail whose password-set link is built from PUBLIC_BASE_URL."""

import io
import re
import smtplib

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.urls import reverse

from kernel.models import AuditEvent, Member
from kernel.organizations import create_person, get_or_create_organization, organization_group

ADD_PERSON = "admin:agentprocess_member_add"
LINK = re.compile(r"https?://\S+/accounts/reset/\S+/")


@pytest.fixture
def admin_client(org, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.PUBLIC_BASE_URL = "https://process.example.com"
    settings.ALLOWED_HOSTS = ["*"]  # the request's Host must not matter for the link
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    create_person(org, "root@example.com", password="admin-pass-1", superuser=True)
    client = Client(HTTP_HOST="evil.example")
    assert client.login(username="root@example.com", password="admin-pass-1")
    return client


@pytest.fixture
def groups(org):
    return {name: organization_group(org, name) for name in ("finance", "team-leads")}


def test_the_screen_offers_the_organizations_groups_and_the_operator_flag(admin_client, org, groups):
    other = get_or_create_organization("acme")
    organization_group(other, "acme-buyers")
    page = admin_client.get(reverse(ADD_PERSON)).content.decode()
    assert "<h1>Add person</h1>" in page
    for label in ("Email address", "First name", "Last name", "Groups", "Operator"):
        assert label in page
    # Two organizations: each group is named with its organization; operators groups are the flag.
    assert "finance (default)" in page and "acme-buyers (acme)" in page
    assert ">operators (default)<" not in page and "acme-operators" not in page


def test_adding_a_person_creates_the_account_groups_operator_flag_and_mails_the_invitation(
        admin_client, org, groups):
    response = admin_client.post(reverse(ADD_PERSON), {
        "email": "  Mira.Lind@example.com ", "first_name": "Mira", "last_name": "Lind",
        "organization": org.pk, "groups": [groups["finance"].pk], "operator": "on"}, follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == reverse("admin:agentprocess_member_changelist")
    assert "Added Mira Lind (mira.lind@example.com). An invitation to choose a password was mailed" in page

    user = get_user_model().objects.get(email="mira.lind@example.com")  # one spelling: lower-cased
    assert (user.username, user.first_name, user.last_name) == ("mira.lind@example.com", "Mira", "Lind")
    assert not user.has_usable_password()  # nobody typed a password for her
    assert Member.objects.get(user=user).organization == org
    assert sorted(user.groups.values_list("name", flat=True)) == ["finance", "operators"]

    (message,) = mail.outbox
    assert message.to == ["mira.lind@example.com"]
    assert message.subject == "You are invited to Default organization"
    assert "Hello Mira," in message.body and "the link works once, for 3 days" in message.body
    links = re.findall(r"https?://\S+", message.body)
    assert links and all(link.startswith("https://process.example.com/") for link in links), links
    assert "evil.example" not in message.body
    # In the audit log, with who added her (the actor from authentication, never from the form).
    (added,) = AuditEvent.objects.filter(kind="person_added", actor_kind="admin")
    assert (added.actor, added.actor_kind, added.organization_id) == ("root@example.com", "admin", org.id)
    assert added.data == {"email": "mira.lind@example.com", "groups": ["finance"], "operator": True}


def test_the_invitation_link_sets_the_password_once_and_she_signs_in(admin_client, org, groups, settings):
    admin_client.post(reverse(ADD_PERSON), {"email": "mira@example.com", "first_name": "Mira",
                                            "organization": org.pk, "groups": [groups["finance"].pk]})
    (link,) = LINK.findall(mail.outbox[0].body)
    path = link.removeprefix(settings.PUBLIC_BASE_URL)

    visitor = Client()
    form_page = visitor.get(path, follow=True)  # Django swaps the token for a session-held one
    assert form_page.status_code == 200 and "new_password1" in form_page.content.decode()
    done = visitor.post(form_page.redirect_chain[-1][0], {"new_password1": "a-long-new-passphrase-7",
                                                          "new_password2": "a-long-new-passphrase-7"})
    assert done.status_code == 302 and done["Location"] == reverse("password_reset_complete")
    assert Client().login(username="mira@example.com", password="a-long-new-passphrase-7")

    # Used once: the same link no longer sets a password.
    again = Client().get(path, follow=True).content.decode()
    assert "new_password1" not in again


def test_a_duplicate_email_is_refused_with_a_clear_message_and_changes_nothing(admin_client, org, groups):
    create_person(org, "mira@example.com")
    users = get_user_model().objects.count()
    response = admin_client.post(reverse(ADD_PERSON), {"email": "MIRA@example.com", "first_name": "Mira",
                                                       "organization": org.pk, "groups": [groups["finance"].pk]})
    assert response.status_code == 200
    page = response.content.decode()
    assert ("A person with the email address mira@example.com already exists. "
            "Find them under Members instead of adding them again.") in page
    assert get_user_model().objects.count() == users
    assert mail.outbox == []


def test_a_group_of_another_organization_is_refused(admin_client, org, groups):
    acme_buyers = organization_group(get_or_create_organization("acme"), "acme-buyers")
    response = admin_client.post(reverse(ADD_PERSON), {"email": "pat@example.com", "first_name": "Pat",
                                                       "organization": org.pk, "groups": [acme_buyers.pk]})
    page = response.content.decode()
    assert "Not groups of default: acme-buyers. Choose groups of the person&#x27;s own organization." in page
    assert not get_user_model().objects.filter(email="pat@example.com").exists()
    assert mail.outbox == []


def test_missing_fields_are_named_and_nothing_is_created(admin_client, org):
    response = admin_client.post(reverse(ADD_PERSON), {"email": "not-an-address", "organization": org.pk})
    page = response.content.decode()
    assert "Enter a valid email address." in page and "This field is required." in page
    assert not Member.objects.exclude(user__email="root@example.com").exists()


def test_when_mail_fails_the_person_exists_and_a_new_invitation_can_be_sent(admin_client, org, groups, monkeypatch):
    from kernel import people

    real_send = people.send_mail

    def refused(*args, **kwargs):
        raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")

    monkeypatch.setattr(people, "send_mail", refused)  # a mail server that is down
    page = admin_client.post(reverse(ADD_PERSON), {"email": "pat@example.com", "first_name": "Pat",
                                                   "organization": org.pk}, follow=True).content.decode()
    assert "Added Pat (pat@example.com). The invitation to pat@example.com could not be mailed" in page
    member = Member.objects.get(user__email="pat@example.com")

    monkeypatch.setattr(people, "send_mail", real_send)
    page = admin_client.post(reverse("admin:agentprocess_member_changelist"), {
        "action": "send_new_invitation", "_selected_action": [member.pk]}, follow=True).content.decode()
    assert "An invitation to choose a password was mailed to pat@example.com" in page
    (message,) = mail.outbox
    assert message.to == ["pat@example.com"] and LINK.search(message.body)


def test_people_without_admin_rights_cannot_open_the_screen(org, client):
    create_person(org, "fin@example.com", password="fin-pass-12345")
    before = AuditEvent.objects.count()  # her own person_added and token_created, from the command line
    assert client.login(username="fin@example.com", password="fin-pass-12345")
    response = client.get(reverse(ADD_PERSON))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert AuditEvent.objects.count() == before


def test_people_and_tokens_from_the_command_line_and_revoked_in_admin_are_audited(admin_client, org):
    """Issue 29: "People and tokens created from the command line and tokens revoked in admin write
    the same audit events as the pages." """
    from django.core.management import call_command

    from kernel.models import ApiToken

    def events(kind):
        return [(e.actor, e.actor_kind, e.data) for e in AuditEvent.objects.filter(kind=kind).order_by("id")]

    out = io.StringIO()
    call_command("create_identity", "person", "fin@example.com", "--groups", "finance", stdout=out)
    first = ApiToken.objects.get(user__email="fin@example.com", revoked_at__isnull=True)
    assert events("person_added")[-1] == ("command line", "server",
                                          {"email": "fin@example.com", "groups": ["finance"], "operator": False})
    assert events("token_created")[-1] == ("command line", "server", {"token": first.pk, "label": "create_identity"})
    call_command("create_identity", "person", "fin@example.com", "--groups", "finance", stdout=out)
    assert [e for e in events("person_added") if e[2]["email"] == "fin@example.com"] == [
        ("command line", "server", {"email": "fin@example.com", "groups": ["finance"], "operator": False})]  # once
    assert events("token_revoked") == [("command line", "server", {"token": first.pk, "label": "create_identity"})]
    second = ApiToken.objects.get(user__email="fin@example.com", revoked_at__isnull=True)
    response = admin_client.post(reverse("admin:agentprocess_apitoken_changelist"), {
        "action": "revoke_selected", "_selected_action": [second.pk]}, follow=True)
    assert "Revoked 1 API token(s)." in response.content.decode()
    assert events("token_revoked")[-1] == ("root@example.com", "admin",
                                           {"token": second.pk, "label": "create_identity"})
