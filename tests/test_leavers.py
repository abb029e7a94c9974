"""Leavers (issue 25, point 4): a deactivated person's sessions end at once, their personal and
OAuth tokens stop working and are revoked, the work they held goes back to their groups, and they
drop out of notices; `manage.py deactivate_leavers` does it for people a provider has not signed in
for a while."""

import datetime as dt
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from oauth2_provider.models import get_access_token_model, get_application_model

from kernel import clock
from kernel.identity import identity_from_bearer
from kernel.models import ApiToken, AuditEvent, EventKind
from kernel.organizations import organization_group
from runs.models import Notice, WorkItem
from runs.services import notifications, queue
from sso import providers
from sso.models import ProviderAccount
from sso.signin import sign_in
from tests.support import readme_settings
from tests.test_inbox_views import QUICK_APPROVAL


@pytest.fixture
def leaver(settings, org, publish, agent):
    readme_settings.apply(settings, "oidc")
    organization_group(org, "approvers")
    publish(QUICK_APPROVAL, {"finance-approver": "approvers"})
    provider = providers.configured()[0]
    user = sign_in(provider, {"sub": "s-ada", "email": "ada@example.com", "groups": ["idp-approvers"]})
    stayer = sign_in(provider, {"sub": "s-ben", "email": "ben@example.com", "groups": ["idp-approvers"]})
    return user, stayer


def _oauth_token(user) -> str:
    application = get_application_model().objects.create(
        name="desktop client", client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/callback", user=None)
    get_access_token_model().objects.create(user=user, application=application, token="oauth-token-of-ada-123",
                                            scope="tools", expires=clock.now() + dt.timedelta(hours=1))
    return "oauth-token-of-ada-123"


def test_a_person_not_seen_for_the_given_days_is_deactivated_with_everything_they_held(client, leaver, agent):
    from kernel.api_tokens import issue
    from kernel.audit import COMMAND_LINE
    from kernel.identity import person_identity

    user, stayer = leaver
    view = agent.ok("start_run", process="quick-approval", inputs={"vendorName": "Acme", "amount": 100})
    item_id = view["workItems"][0]["id"]
    queue.take(identity=person_identity(user), work_item_id=item_id, now=clock.now())
    _row, token = issue(organization=person_identity(user).organization, label="laptop", actor=COMMAND_LINE, user=user)
    oauth = _oauth_token(user)
    assert identity_from_bearer(token) is not None and identity_from_bearer(oauth) is not None
    client.force_login(user, backend="sso.backends.ProviderBackend")
    assert client.get("/").status_code == 200
    ProviderAccount.objects.filter(user=user).update(last_sign_in_at=clock.now() - dt.timedelta(days=40))
    ProviderAccount.objects.filter(user=stayer).update(last_sign_in_at=clock.now() - dt.timedelta(days=10))

    out = StringIO()
    call_command("deactivate_leavers", "--days", "30", "--dry-run", stdout=out)
    assert out.getvalue() == "would deactivate ada@example.com\n"
    user.refresh_from_db()
    assert user.is_active
    out = StringIO()
    call_command("deactivate_leavers", "--days", "30", stdout=out)
    assert out.getvalue() == "deactivated ada@example.com\n"

    user.refresh_from_db()
    stayer.refresh_from_db()
    assert not user.is_active and stayer.is_active
    assert client.get("/").status_code == 302  # the open session ended
    assert identity_from_bearer(token) is None and identity_from_bearer(oauth) is None
    assert ApiToken.objects.get(user=user).revoked_at is not None
    assert not get_access_token_model().objects.filter(user=user).exists()
    item = WorkItem.objects.get(pk=item_id)
    assert (item.held_by, item.held_at, item.state) == (None, None, "open")
    assert queue.members_who_may_hold(item) == ["ben@example.com"]
    released = AuditEvent.objects.get(kind=EventKind.ITEM_RELEASED)
    assert (released.actor, released.work_item_id, released.data["heldBy"]) == (
        "deactivate_leavers", item_id, "ada@example.com")
    event = AuditEvent.objects.get(kind=EventKind.PERSON_DEACTIVATED)
    assert event.data == {"email": "ada@example.com", "reason": "not signed in for 30 days", "tokensRevoked": 1,
                          "oauthTokensRevoked": 1, "itemsReleased": [item_id]}
    assert AuditEvent.objects.filter(kind=EventKind.TOKEN_REVOKED, actor="deactivate_leavers").count() == 1

    # New work for the approvers is no longer told to her.
    agent.ok("start_run", process="quick-approval", inputs={"vendorName": "Globex", "amount": 200})
    notifications.fan_out(clock.now())
    told = set(Notice.objects.exclude(recipient="").values_list("recipient", flat=True))
    assert "ben@example.com" in told and "ada@example.com" not in told

    # Again: nobody left to deactivate, nothing recorded twice.
    out = StringIO()
    call_command("deactivate_leavers", "--days", "30", stdout=out)
    assert out.getvalue() == ""
    assert AuditEvent.objects.filter(kind=EventKind.PERSON_DEACTIVATED).count() == 1


def test_without_days_the_command_refuses(db, settings):
    settings.OIDC_DEACTIVATE_AFTER_DAYS = 0
    with pytest.raises(CommandError, match="give --days N"):
        call_command("deactivate_leavers")


def test_admin_deactivates_a_leaver_by_their_provider_account(admin_client, leaver):
    user, stayer = leaver
    account = ProviderAccount.objects.get(user=user)
    answer = admin_client.post("/admin/sso/provideraccount/", {
        "action": "deactivate_people", "_selected_action": [account.pk]}, follow=True)
    assert "1 deactivated." in answer.content.decode()
    user.refresh_from_db()
    stayer.refresh_from_db()
    assert not user.is_active and stayer.is_active
    event = AuditEvent.objects.get(kind=EventKind.PERSON_DEACTIVATED)
    assert (event.actor_kind, event.data["reason"]) == ("admin", "deactivated in admin")
