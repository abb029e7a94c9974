"""Issue 25, "Done when": Chromium signs a person in through a real OpenID Connect provider running
as a second server process (django-oauth-toolkit's, tests/support/oidc_provider.py). The person is
created with the mapped groups, sees their group's work in the inbox and decides it; signing in
again after their groups changed at the provider changes them here, with audit events."""

import re

import pytest
from django.contrib.auth import get_user_model

from kernel.models import AuditEvent, EventKind
from kernel.organizations import organization_group
from runs.models import WorkItem
from tests.support import readme_settings
from tests.support.oidc_provider import CLIENT_ID, CLIENT_SECRET, ProviderProcess, free_port

from .conftest import horizontal_overflow, screenshot
from .test_inbox_browser import QUICK_APPROVAL

pytestmark = pytest.mark.browser
PASSWORD = "provider-password-1"
ADA = {"password": PASSWORD, "email": "ada@example.com", "given_name": "Ada", "family_name": "Lovelace",
       "groups": ["idp-approvers", "idp-everyone"]}


@pytest.fixture
def idp(server, settings, tmp_path):
    provider = ProviderProcess(tmp_path, free_port(), f"{server}/accounts/oidc/oidc/callback/",
                               f"{server}/accounts/login/")
    provider.write_directory({"ada": ADA})
    # The settings block of README "Sign-in for people", with this provider's address and client.
    readme_settings.apply(settings, "oidc", OIDC_ISSUER=provider.issuer, OIDC_CLIENT_ID=CLIENT_ID,
                          OIDC_CLIENT_SECRET=CLIENT_SECRET)
    with provider.running():
        yield provider


def through_the_button(page, server):
    page.goto(f"{server}/accounts/login/")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in at the provider").click()
    page.wait_for_url(f"{server}/")


def test_a_person_signs_in_through_the_provider_decides_their_groups_work_and_follows_group_changes(
        server, idp, new_page, publish, agent, org):
    organization_group(org, "approvers")
    organization_group(org, "finance")
    publish(QUICK_APPROVAL, {"finance-approver": "approvers"})
    first = agent.ok("start_run", process="quick-approval", inputs={"vendorName": "Acme", "amount": 100})

    page = new_page()
    through_the_button(page, server)
    ada = get_user_model().objects.get(email="ada@example.com")
    assert sorted(ada.groups.values_list("name", flat=True)) == ["approvers"]
    assert AuditEvent.objects.get(kind=EventKind.PERSON_ADDED).actor == "identity provider Test IdP"
    assert "ada@example.com" in page.inner_text(".who")
    row = page.locator("tr.inbox-row")
    assert row.count() == 1 and "Acme" in row.inner_text()
    screenshot(page, "oidc-inbox")
    row.get_by_role("link", name="Approve").click()
    page.wait_for_url(re.compile(r"/work/w_"))
    page.locator("#decide-approved").click()
    page.wait_for_url(f"{server}/")
    assert "Approved: quick-approval · Approve." in page.inner_text(".messages")
    decided = WorkItem.objects.get(pk=first["workItems"][0]["id"])
    assert (decided.decision, decided.decided_by) == ("approved", "ada@example.com")

    # At the provider, Ada leaves the approvers for finance; new approvals no longer reach her.
    agent.ok("start_run", process="quick-approval", inputs={"vendorName": "Globex", "amount": 200})
    idp.write_directory({"ada": {**ADA, "groups": ["idp-finance"]}})
    page.get_by_role("button", name="Log out").click()  # here and at the provider (RP-initiated logout)
    page.wait_for_url(re.compile(rf"^{re.escape(server)}/accounts/login/\?state="))
    assert "GET /o/logout/?id_token_hint=" in idp.log_path.read_text()
    through_the_button(page, server)  # the provider asks for the password again: its session ended too
    assert sorted(ada.groups.values_list("name", flat=True)) == ["finance"]
    changed = AuditEvent.objects.get(kind=EventKind.PERSON_CHANGED)
    assert changed.actor == "identity provider Test IdP"
    assert (changed.data["groupsBefore"], changed.data["groups"]) == (["approvers"], ["finance"])
    assert page.locator("tr.inbox-row").count() == 0


def test_the_providers_only_login_page_and_a_refusal_read_well_on_a_phone(server, settings, new_page):
    readme_settings.apply(settings, "oidc")
    readme_settings.apply(settings, "password-off")
    page = new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{server}/accounts/login/")
    button = page.get_by_role("link", name="Sign in with Test IdP")
    assert button.is_visible() and page.locator("input[type=password]").count() == 0
    reached = []
    for _ in range(5):  # skip link, brand, then the button: reachable by keyboard
        page.keyboard.press("Tab")
        reached.append(page.evaluate("document.activeElement.textContent.trim()"))
    assert "Sign in with Test IdP" in reached, reached
    assert horizontal_overflow(page) == 0
    screenshot(page, "oidc-login-phone")

    page.goto(f"{server}/accounts/oidc/oidc/callback/?code=stolen&state=forged")
    assert page.get_by_role("heading", name="You were not signed in").is_visible()
    assert "This sign-in was not started in this browser" in page.get_by_role("alert").inner_text()
    assert horizontal_overflow(page) == 0
    screenshot(page, "oidc-refused-phone")
    page.get_by_role("link", name="Back to sign-in").click()
    page.wait_for_url(f"{server}/accounts/login/")
