"""What an identity may be called (issue 21, point 5): agent names and people's email addresses
become the `by` values people read (spec §2.2: "`by`, `at` | Every completed step: who and when"),
so both are checked wherever an identity is made — `create_identity`, admin's Add person and Agents
— and nothing with a control character, a bidirectional override or a blank gets in."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from kernel.identity_names import agent_name_issues, email_issues
from kernel.models import Agent, Member, Organization
from kernel.organizations import create_agent, create_person

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "a_mallory\u202eecnanif" reads as "a_malloryfinance"…


def create_identity(*arguments) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of manage.py create_identity."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("create_identity", *arguments, stdout=out, stderr=err)
    except SystemExit as leaving:
        return leaving.code, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


# --- the rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["screener", "invoice-bot-2", "a", "7", "x" * 64, "bench-agent-12"])
def test_agent_names_of_the_spec_name_pattern_are_accepted(name):
    assert agent_name_issues(name) == []


@pytest.mark.parametrize("name, issues", [
    ("", ["name: must not be blank"]),
    ("   ", ["name: must not be blank"]),
    (f"finance{RLO}bot", ["name: holds invisible or control characters (U+202E), which would make it read as "
                          "something else"]),
    ("bot\x07\x1b[31m", ["name: holds invisible or control characters (U+0007, U+001B), which would make it read "
                         "as something else",
                         'name: only lowercase letters a-z, digits and hyphens, not "[" (like invoice-bot-2)']),
    ("zero\u200bwidth", ["name: holds invisible or control characters (U+200B), which would make it read as "
                         "something else"]),
    ("Screener_1", ['name: only lowercase letters a-z, digits and hyphens, not "S", "_" (like invoice-bot-2)']),
    ("my agent", ['name: only lowercase letters a-z, digits and hyphens, not U+0020 (like invoice-bot-2)']),
    ("ränder", ['name: only lowercase letters a-z, digits and hyphens, not "ä" (like invoice-bot-2)']),
    ("-bot", ["name: a hyphen goes between letters or digits, never first, last or doubled"]),
    ("bot--2", ["name: a hyphen goes between letters or digits, never first, last or doubled"]),
    ("x" * 65, ["name: at most 64 characters, not 65"]),
    ("X" * 65, ['name: only lowercase letters a-z, digits and hyphens, not "X" (like invoice-bot-2)',
                "name: at most 64 characters, not 65"]),
])
def test_agent_names_outside_the_pattern_are_refused_with_every_issue(name, issues):
    assert agent_name_issues(name) == issues


@pytest.mark.parametrize("email, issues", [
    ("mira@example.com", []),
    ("  Mira.Lind@Example.COM ", []),  # stored as mira.lind@example.com
    ("", ["email: must not be blank"]),
    ("not-an-address", ["email: not-an-address is not a valid email address (like mira@example.com)"]),
    (f"mira@exa{RLO}mple.com", ["email: holds invisible or control characters (U+202E), which would make it "
                                "read as something else"]),
    ("mira\r\n@example.com", ["email: holds invisible or control characters (U+000D, U+000A), which would make "
                              "it read as something else"]),
    ("mira lind@example.com", ["email: must not contain spaces"]),
    ("m" * 250 + "@example.com", ["email: at most 254 characters, not 262"]),
])
def test_email_addresses_are_checked_by_django_and_for_hidden_characters(email, issues):
    assert email_issues(email) == issues


# --- create_identity -----------------------------------------------------------------------------


def test_create_identity_prints_every_issue_of_an_agent_name_and_exits_1(db):
    status, out, err = create_identity("agent", f"Bad_Name{RLO}", "--org", "newco")
    assert status == 1 and out == ""
    assert err.splitlines() == [
        "name: holds invisible or control characters (U+202E), which would make it read as something else",
        'name: only lowercase letters a-z, digits and hyphens, not "B", "_", "N" (like invoice-bot-2)']
    assert not Agent.objects.exists() and not Organization.objects.filter(slug="newco").exists()


def test_create_identity_refuses_an_invalid_email_and_creates_nothing(db):
    for email, issue in [("not-an-address", "email: not-an-address is not a valid email address (like "
                                            "mira@example.com)"),
                         ("  ", "email: must not be blank")]:
        status, out, err = create_identity("person", email, "--groups", "finance")
        assert (status, out, err.splitlines()) == (1, "", [issue])
    assert not get_user_model().objects.exists() and not Member.objects.exists()


def test_a_persons_email_is_stored_lower_cased_and_she_signs_in_in_any_case(db):
    status, out, _ = create_identity("person", " Mira.Lind@Example.COM", "--password", "a-long-passphrase-1")
    assert status == 0 and out.splitlines()[0] == "person mira.lind@example.com in default"
    user = get_user_model().objects.get()
    assert (user.email, user.username) == ("mira.lind@example.com", "mira.lind@example.com")
    assert Client().login(username="MIRA.LIND@example.com", password="a-long-passphrase-1")
    # The same address in another case is the same person: a second token, no second account.
    assert create_identity("person", "mira.lind@EXAMPLE.com")[0] == 0
    assert get_user_model().objects.count() == 1


def test_an_account_made_before_keeps_its_case_and_still_signs_in(db, org):
    get_user_model().objects.create_user(username="Old.Timer@example.com", email="Old.Timer@example.com",
                                         password="a-long-passphrase-1")
    assert Client().login(username="old.timer@example.com", password="a-long-passphrase-1")
    assert Client().login(username="Old.Timer@example.com", password="a-long-passphrase-1")
    assert not Client().login(username="old.timer@example.com", password="wrong")


def test_an_existing_agent_keeps_its_name_and_gets_a_token(org):
    Agent.objects.create(organization=org, name="Legacy_Bot")  # made before names were checked
    status, out, _ = create_identity("agent", "Legacy_Bot")
    assert status == 0 and out.splitlines()[0] == "agent a_Legacy_Bot in default"


def test_the_services_refuse_as_well(org):
    with pytest.raises(Exception) as refused:
        create_agent(org, "")
    assert refused.value.issues == ["name: must not be blank"]
    with pytest.raises(Exception) as refused:
        create_person(org, f"ops@exa{RLO}mple.com")
    assert refused.value.issues == ["email: holds invisible or control characters (U+202E), which would make it "
                                    "read as something else"]


# --- admin ---------------------------------------------------------------------------------------


@pytest.fixture
def admin_client(org, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    create_person(org, "root@example.com", password="admin-pass-1", superuser=True)
    client = Client()
    assert client.login(username="root@example.com", password="admin-pass-1")
    return client


def test_add_person_shows_the_issues_of_the_address_and_names(admin_client, org):
    response = admin_client.post(reverse("admin:agentprocess_member_add"), {
        "email": f"pat@exa{RLO}mple.com", "first_name": f"Pat{RLO}", "last_name": "Lee\u200b", "organization": org.pk})
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count("Holds invisible or control characters (U+202E), which would make it read as something "
                      "else.") == 2  # the address and the first name
    assert "Holds invisible or control characters (U+200B), which would make it read as something else." in page
    assert not get_user_model().objects.exclude(email="root@example.com").exists()


def test_add_person_stores_the_address_lower_cased(admin_client, org):
    admin_client.post(reverse("admin:agentprocess_member_add"), {
        "email": " Pat.Lee@Example.com", "first_name": "Pat", "organization": org.pk})
    assert get_user_model().objects.filter(email="pat.lee@example.com", username="pat.lee@example.com").exists()


def test_admin_shows_every_issue_of_an_agent_name(admin_client, org):
    response = admin_client.post(reverse("admin:agentprocess_agent_add"), {
        "organization": org.pk, "name": f"Bot{RLO}_1"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "Holds invisible or control characters (U+202E), which would make it read as something else." in page
    assert "Only lowercase letters a-z, digits and hyphens, not &quot;B&quot;, &quot;_&quot; (like invoice-bot-2)." \
        in page
    assert not Agent.objects.exists()
    response = admin_client.post(reverse("admin:agentprocess_agent_add"), {"organization": org.pk,
                                                                           "name": "invoice-bot-2"})
    assert response.status_code == 302 and Agent.objects.get().ref == "a_invoice-bot-2"
