"""SCIM 2.0 provisioning (issue 25, point 4 and its "done when": "SCIM: create, update, deactivate a
user and change a group's members through the SCIM endpoints (the test drives them as an identity
provider does); the deactivated person's session, tokens and held work behave as in point 4").

The calls are the ones Entra ID and Okta send: Entra looks a person up with `filter=userName eq`,
creates them, PATCHes with capitalised ops and string booleans ("Replace", "False"); Okta PUTs the
whole user and PATCHes `{"op": "replace", "value": {"active": false}}` without a path. Two
providers sign into two organizations (README settings block `scim`); nothing crosses over.
"""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from kernel import api_tokens, audit, clock
from kernel.identity import identity_from_bearer, person_identity
from kernel.models import ApiToken, AuditEvent, EventKind
from kernel.organizations import create_person, get_or_create_organization, organization_group
from runs.models import Notice, WorkItem
from runs.services import notifications, queue
from sso import providers
from sso.models import ProviderAccount, ScimToken
from sso.signin import sign_in
from tests.support import readme_settings
from tests.test_inbox_views import QUICK_APPROVAL

SCIM = "application/scim+json"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


class Idp:
    """An identity provider's SCIM client: its bearer token on every call, JSON in and out."""

    def __init__(self, token: str):
        self.client = Client(enforce_csrf_checks=True)  # a bearer call needs no CSRF token
        self.token = token

    def call(self, method: str, path: str, body=None, token=None, raw: str | None = None):
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs = {"content_type": SCIM} if data is not None else {}
        answer = getattr(self.client, method)(f"/scim/v2/{path}", *([data] if data is not None else []),
                                              HTTP_AUTHORIZATION=f"Bearer {token or self.token}", **kwargs)
        answer.json_body = json.loads(answer.content) if answer.content else None
        return answer

    def find(self, user_name: str):
        answer = self.call("get", f'Users?filter=userName eq "{user_name}"')
        assert answer.status_code == 200
        return answer.json_body

    def create(self, user_name: str, given="", family="", **extra):
        """Entra ID's POST: the whole user, a work email equal to the userName."""
        body = {"schemas": [USER], "externalId": user_name.split("@")[0], "userName": user_name, "active": True,
                "displayName": f"{given} {family}".strip(), "name": {"givenName": given, "familyName": family},
                "emails": [{"primary": True, "type": "work", "value": user_name}], **extra}
        return self.call("post", "Users", body)


def _error(answer, status: int, scim_type: str | None, detail_part: str):
    assert answer.status_code == status, answer.content
    assert answer["Content-Type"] == SCIM
    body = json.loads(answer.content)
    assert body["schemas"] == [ERROR] and body["status"] == str(status)
    assert body.get("scimType") == scim_type
    assert detail_part in body["detail"], body["detail"]


@pytest.fixture
def idps(settings, org):
    readme_settings.apply(settings, "scim")
    get_or_create_organization("subsidiary")
    tokens = {}
    for slug in ("entra", "okta"):
        out = StringIO()
        call_command("scim_token", slug, stdout=out)
        tokens[slug] = out.getvalue().strip()
    return Idp(tokens["entra"]), Idp(tokens["okta"])


def _events(kind):
    return list(AuditEvent.objects.filter(kind=kind).order_by("id"))


def test_the_token_is_shown_once_stored_hashed_and_replaced_by_the_next(idps):
    entra, _okta = idps
    assert entra.token.startswith("scim_") and len(entra.token) > 40
    row = ScimToken.objects.get(provider="entra", revoked_at__isnull=True)
    assert entra.token not in (row.token_hash,) and len(row.token_hash) == 64
    assert entra.call("get", "Users").status_code == 200
    out = StringIO()
    call_command("scim_token", "entra", stdout=out)
    _error(entra.call("get", "Users"), 401, None, "bearer token")  # the earlier one stopped working
    assert Idp(out.getvalue().strip()).call("get", "Users").status_code == 200
    with pytest.raises(CommandError, match="no identity provider 'nope' \\(configured: entra, okta\\)"):
        call_command("scim_token", "nope")


def test_a_missing_or_wrong_token_is_401_and_changes_nothing(idps, org):
    entra, _okta = idps
    for token in ("scim_wrong", "", entra.token + "x"):
        answer = entra.call("post", "Users", {"schemas": [USER], "userName": "eve@example.com"}, token=token or " ")
        _error(answer, 401, None, "needs the bearer token")
        assert answer["WWW-Authenticate"] == 'Bearer realm="scim"'
    answer = Client().get("/scim/v2/Users")  # no Authorization header at all
    assert answer.status_code == 401
    assert not AuditEvent.objects.filter(kind=EventKind.PERSON_ADDED).exists()
    assert entra.find("eve@example.com")["totalResults"] == 0
    operator = create_person(org, "op@example.com", operator=True, superuser=True, token_label=None)[0]
    browser = Client()
    browser.force_login(operator)  # a signed-in person's session counts for nothing here
    _error(browser.get("/scim/v2/Users"), 401, None, "needs the bearer token")


def test_discovery_documents(idps):
    entra, _okta = idps
    config = entra.call("get", "ServiceProviderConfig").json_body
    assert config["patch"] == {"supported": True} and config["filter"]["supported"] is True
    assert config["authenticationSchemes"][0]["type"] == "oauthbearertoken"
    types = {resource["id"]: resource for resource in entra.call("get", "ResourceTypes").json_body["Resources"]}
    assert types["User"]["endpoint"] == "/Users" and types["Group"]["endpoint"] == "/Groups"
    schemas = [schema["id"] for schema in entra.call("get", "Schemas").json_body["Resources"]]
    assert schemas == ["urn:ietf:params:scim:schemas:core:2.0:Group", USER]


def test_entra_creates_finds_and_updates_a_person(idps):
    entra, _okta = idps
    assert entra.find("Ada@Example.com") == {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"], "totalResults": 0, "itemsPerPage": 0,
        "startIndex": 1, "Resources": []}
    created = entra.create("Ada@Example.com", "Ada", "Lovelace")
    assert created.status_code == 201, created.content
    ada = created.json_body
    assert (ada["userName"], ada["name"]["givenName"], ada["active"], ada["externalId"]) == (
        "ada@example.com", "Ada", True, "Ada")
    assert created["Location"] == f"http://testserver/scim/v2/Users/{ada['id']}"
    added = _events(EventKind.PERSON_ADDED)[-1]
    assert (added.actor, added.data["email"], added.data["source"]) == (
        "identity provider Entra ID", "ada@example.com",
        {"kind": "scim", "provider": "Entra ID", "issuer": "https://login.microsoftonline.com/3f6c0000-tenant/v2.0"})

    found = entra.find("ADA@example.com")  # userName is compared without case
    assert [resource["id"] for resource in found["Resources"]] == [ada["id"]]
    assert entra.call("get", f'Users?filter=emails[type eq "work"].value eq "ada@example.com"').json_body[
        "totalResults"] == 1

    answer = entra.call("patch", f"Users/{ada['id']}", {"schemas": [PATCH_OP], "Operations": [
        {"op": "Replace", "path": "name.familyName", "value": "Byron"},
        {"op": "Add", "path": 'emails[type eq "work"].value', "value": "ada@example.com"},
        {"op": "Replace", "path": "title", "value": "Analyst"},  # not kept here: ignored
        {"op": "Replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department",
         "value": "Finance"}]})
    assert answer.status_code == 200, answer.content
    assert answer.json_body["name"]["familyName"] == "Byron"
    assert entra.call("get", f"Users/{ada['id']}").json_body["name"] == {
        "givenName": "Ada", "familyName": "Byron", "formatted": "Ada Byron"}


def test_bad_input_gets_a_scim_error_and_changes_nothing(idps, publish, org):
    entra, _okta = idps
    ada = entra.create("ada@example.com", "Ada", "Lovelace").json_body
    _error(entra.create("ADA@example.com"), 409, "uniqueness", "already exists")
    _error(entra.create("not an address"), 400, "invalidValue", "userName is the person's email address")
    _error(entra.create("eve@example.com", emails=[{"value": "other@example.com", "primary": True}]), 400,
           "mutability", "emails may only hold the userName eve@example.com")
    _error(entra.call("post", "Users", raw="{not json"), 400, None, "Could not decode JSON")
    _error(entra.call("post", "Users", raw="[1, 2]"), 400, "invalidSyntax", "a JSON object")
    _error(entra.call("post", "Users", {"schemas": [USER], "userName": "eve@example.com", "active": "maybe"}),
           400, "invalidValue", "active is true or false, not 'maybe'")
    _error(entra.call("get", "Users/999999"), 404, None, "Resource 999999 not found")
    _error(entra.call("get", "Users/abc"), 404, None, "Resource abc not found")
    _error(entra.call("get", "Users?filter=userName eq"), 400, "invalidFilter", "Invalid filter")
    path = f"Users/{ada['id']}"
    for operations, scim_type, detail in [
        ([{"op": "Replace", "path": "active", "value": "Perhaps"}], "invalidValue", "active is true or false"),
        ([{"op": "Rename", "path": "active", "value": "False"}], "invalidSyntax", "op is add, remove or replace"),
        ([{"op": "Replace", "path": "userName", "value": "ada@elsewhere.com"}], "mutability", "stays ada@example.com"),
        ([{"op": "Replace", "path": "name.givenName", "value": "Eve"},  # refused with the next: neither applies
          {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "eve@example.com"}], "mutability",
         "emails may only hold the userName ada@example.com"),
        ([{"op": "Remove", "path": "active"}], "mutability", "active cannot be removed"),
        ([{"op": "Replace", "value": "False"}], "invalidSyntax", "has an object as its value"),
        ("not a list", "invalidSyntax", "Operations is a list"),
    ]:
        _error(entra.call("patch", path, {"schemas": [PATCH_OP], "Operations": operations}), 400, scim_type, detail)
    user = entra.call("get", path).json_body
    assert (user["active"], user["name"]["givenName"], user["userName"]) == (True, "Ada", "ada@example.com")
    assert _events(EventKind.PERSON_CHANGED) == [] and _events(EventKind.PERSON_DEACTIVATED) == []
    assert len(_events(EventKind.PERSON_ADDED)) == 1

    organization_group(org, "approvers")
    publish(QUICK_APPROVAL, {"finance-approver": "approvers"})
    approvers = entra.call("get", 'Groups?filter=displayName eq "approvers"').json_body["Resources"][0]
    _error(entra.call("post", "Groups", {"displayName": "approvers"}), 409, "uniqueness", "already exists")
    _error(entra.call("patch", f"Groups/{approvers['id']}", {"Operations": [
        {"op": "Add", "path": "members", "value": [{"value": ada["id"]}, {"value": "424242"}]}]}), 400,
        "invalidValue", "no person with id '424242' here")
    _error(entra.call("patch", f"Groups/{approvers['id']}", {"Operations": [
        {"op": "Replace", "path": "displayName", "value": "Approvers EMEA"}]}), 400, "mutability",
        "a group's displayName is fixed here")
    _error(entra.call("delete", f"Groups/{approvers['id']}"), 400, "mutability",
           "bound to the process quick-approval")
    assert entra.call("get", f"Groups/{approvers['id']}").json_body["members"] == []


def test_deactivated_by_entra_the_persons_session_tokens_held_work_and_notices_end(idps, org, publish, agent):
    """Spec of issue 25 point 4: "a deactivated person's sessions end at once, their personal tokens
    stop working, work they held is released to their groups, and they drop out of notices"."""
    entra, _okta = idps
    organization_group(org, "approvers")
    publish(QUICK_APPROVAL, {"finance-approver": "approvers"})
    ada = entra.create("ada@example.com", "Ada", "Lovelace").json_body
    ben = entra.create("ben@example.com", "Ben", "Ito").json_body
    group = entra.call("get", 'Groups?filter=displayName eq "approvers"').json_body["Resources"][0]
    answer = entra.call("patch", f"Groups/{group['id']}", {"schemas": [PATCH_OP], "Operations": [
        {"op": "Add", "path": "members", "value": [{"value": ada["id"]}, {"value": ben["id"]}]}]})
    assert answer.status_code == 200, answer.content
    assert [member["display"] for member in answer.json_body["members"]] == ["ada@example.com", "ben@example.com"]

    user = person_identity_user("ada@example.com")
    view = agent.ok("start_run", process="quick-approval", inputs={"vendorName": "Acme", "amount": 100})
    item_id = view["workItems"][0]["id"]
    queue.take(identity=person_identity(user), work_item_id=item_id, now=clock.now())
    _row, token = api_tokens.issue(organization=org, label="laptop", actor=audit.COMMAND_LINE, user=user)
    browser = Client()
    browser.force_login(user, backend="sso.backends.ProviderBackend")
    assert browser.get("/").status_code == 200 and identity_from_bearer(token) is not None

    answer = entra.call("patch", f"Users/{ada['id']}", {"schemas": [PATCH_OP], "Operations": [
        {"op": "Replace", "path": "active", "value": "False"}]})
    assert answer.status_code == 200, answer.content
    assert answer.json_body["active"] is False

    page = browser.get("/")  # the open session ended: the next request goes to the login page
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert identity_from_bearer(token) is None
    assert ApiToken.objects.get(user=user).revoked_at is not None
    item = WorkItem.objects.get(pk=item_id)
    assert (item.held_by, item.state) == (None, "open")
    assert queue.members_who_may_hold(item) == ["ben@example.com"]
    deactivated = _events(EventKind.PERSON_DEACTIVATED)[-1]
    assert (deactivated.actor, deactivated.data["reason"], deactivated.data["itemsReleased"]) == (
        "identity provider Entra ID", "deactivated by Entra ID (SCIM)", [item_id])
    released = _events(EventKind.ITEM_RELEASED)[-1]
    assert (released.actor, released.work_item_id) == ("identity provider Entra ID", item_id)
    agent.ok("start_run", process="quick-approval", inputs={"vendorName": "Globex", "amount": 200})
    notifications.fan_out(clock.now())
    told = set(Notice.objects.exclude(recipient="").values_list("recipient", flat=True))
    assert "ben@example.com" in told and "ada@example.com" not in told
    # Entra sends the same PATCH again on its next cycle: nothing happens twice.
    assert entra.call("patch", f"Users/{ada['id']}", {"Operations": [
        {"op": "Replace", "path": "active", "value": "False"}]}).status_code == 200
    assert len(_events(EventKind.PERSON_DEACTIVATED)) == 1

    answer = entra.call("patch", f"Users/{ada['id']}", {"schemas": [PATCH_OP], "Operations": [
        {"op": "Replace", "path": "active", "value": "True"}]})
    assert answer.json_body["active"] is True
    back = _events(EventKind.PERSON_REACTIVATED)
    assert [(event.actor, event.data) for event in back] == [
        ("identity provider Entra ID", {"email": "ada@example.com", "reason": "switched on by Entra ID (SCIM)"})]
    assert identity_from_bearer(token) is None  # a revoked token stays revoked
    browser.force_login(person_identity_user("ada@example.com"), backend="sso.backends.ProviderBackend")
    assert browser.get("/").status_code == 200


def person_identity_user(email):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(email=email)


def test_okta_puts_a_person_and_deactivates_without_a_path(idps):
    _entra, okta = idps
    lena = okta.call("post", "Users", {"schemas": [USER], "userName": "lena@sub.example", "active": True,
                                       "name": {"givenName": "Lena", "familyName": "Berg"},
                                       "emails": [{"primary": True, "value": "lena@sub.example", "type": "work"}]})
    assert lena.status_code == 201, lena.content
    lena = lena.json_body
    answer = okta.call("put", f"Users/{lena['id']}", {
        "schemas": [USER], "id": lena["id"], "userName": "lena@sub.example", "active": True,
        "name": {"givenName": "Lena", "familyName": "Nyberg"},
        "emails": [{"primary": True, "value": "lena@sub.example", "type": "work"}], "groups": []})
    assert answer.status_code == 200 and answer.json_body["name"]["familyName"] == "Nyberg"
    changed = _events(EventKind.PERSON_CHANGED)
    assert changed == []  # a name is not a change of groups or rights: no event, only the name
    answer = okta.call("patch", f"Users/{lena['id']}", {"schemas": [PATCH_OP], "Operations": [
        {"op": "replace", "value": {"active": False}}]})
    assert answer.status_code == 200 and answer.json_body["active"] is False
    event = _events(EventKind.PERSON_DEACTIVATED)[-1]
    assert (event.actor, event.organization.slug) == ("identity provider Okta", "subsidiary")
    answer = okta.call("put", f"Users/{lena['id']}", {
        "schemas": [USER], "userName": "lena@sub.example", "active": True, "name": {"givenName": "Lena"}})
    assert answer.json_body["active"] is True and answer.json_body["name"]["familyName"] == ""


def test_groups_members_added_removed_and_replaced_as_each_provider_sends_them(idps):
    entra, okta = idps
    ids = [okta.create(f"{name}@sub.example", name.title()).json_body["id"] for name in ("lena", "omar", "pia")]
    created = okta.call("post", "Groups", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
                                           "displayName": "sub-finance", "members": [{"value": ids[0]}]})
    assert created.status_code == 201, created.content
    group = created.json_body
    assert [member["value"] for member in group["members"]] == [ids[0]]
    assert created["Location"] == f"http://testserver/scim/v2/Groups/{group['id']}"

    def members():
        return [member["value"] for member in okta.call("get", f"Groups/{group['id']}").json_body["members"]]

    path = f"Groups/{group['id']}"
    assert okta.call("patch", path, {"Operations": [
        {"op": "add", "path": "members", "value": [{"value": ids[1], "display": "omar@sub.example"}]}]}).status_code == 200
    assert members() == ids[:2]
    assert okta.call("patch", path, {"Operations": [
        {"op": "remove", "path": f'members[value eq "{ids[0]}"]'}]}).status_code == 200
    assert members() == [ids[1]]
    assert okta.call("patch", path, {"Operations": [  # Entra's shape: capitalised, a list of values
        {"op": "Add", "path": "members", "value": [{"value": ids[2]}]},
        {"op": "Remove", "path": "members", "value": [{"value": ids[1]}]}]}).status_code == 200
    assert members() == [ids[2]]
    assert okta.call("patch", path, {"Operations": [
        {"op": "replace", "path": "members", "value": [{"value": ids[0]}, {"value": ids[1]}]}]}).status_code == 200
    assert members() == ids[:2]
    answer = okta.call("put", path, {"displayName": "sub-finance", "members": [{"value": ids[2]}]})
    assert answer.status_code == 200 and members() == [ids[2]]
    assert okta.call("get", f"Users/{ids[2]}").json_body["groups"][0]["display"] == "sub-finance"

    events = [event for event in _events(EventKind.PERSON_CHANGED) if event.data["email"] == "pia@sub.example"]
    assert [(event.actor, event.data["groupsBefore"], event.data["groups"]) for event in events] == [
        ("identity provider Okta", [], ["sub-finance"]), ("identity provider Okta", ["sub-finance"], []),
        ("identity provider Okta", [], ["sub-finance"])]
    assert events[0].data["source"] == {"kind": "scim", "provider": "Okta", "issuer": "https://acme.okta.com"}
    assert {event.organization.slug for event in events} == {"subsidiary"}

    assert okta.call("delete", path).status_code == 204
    _error(okta.call("get", path), 404, None, "not found")
    assert okta.call("get", f"Users/{ids[2]}").json_body["groups"] == []


def test_delete_deactivates_and_hides_the_person(idps):
    entra, _okta = idps
    ada = entra.create("ada@example.com").json_body
    assert entra.call("delete", f"Users/{ada['id']}").status_code == 204
    _error(entra.call("get", f"Users/{ada['id']}"), 404, None, "not found")
    assert entra.find("ada@example.com")["totalResults"] == 0
    assert not person_identity_user("ada@example.com").is_active
    assert _events(EventKind.PERSON_DEACTIVATED)[-1].data["reason"] == "deleted by Entra ID (SCIM)"
    _error(entra.create("ada@example.com"), 409, "uniqueness", "already exists")


def test_nothing_crosses_organizations(idps, org):
    entra, okta = idps
    ada = entra.create("ada@example.com").json_body
    lena = okta.create("lena@sub.example").json_body
    organization_group(org, "approvers")
    entra_group = entra.call("get", 'Groups?filter=displayName eq "approvers"').json_body["Resources"][0]
    okta_group = okta.call("post", "Groups", {"displayName": "sub-finance"}).json_body

    create_person(org, "zoe@example.com", token_label=None)  # added here, not over SCIM: seen all the same
    assert [user["userName"] for user in okta.call("get", "Users").json_body["Resources"]] == ["lena@sub.example"]
    assert [user["userName"] for user in entra.call("get", "Users").json_body["Resources"]] == [
        "ada@example.com", "zoe@example.com"]
    assert [group["displayName"] for group in okta.call("get", "Groups").json_body["Resources"]] == ["sub-finance"]
    assert [group["displayName"] for group in entra.call("get", "Groups").json_body["Resources"]] == ["approvers"]
    assert okta.find("ada@example.com")["totalResults"] == 0
    assert okta.call("get", 'Users?filter=userName eq "ada@example.com" or userName eq "lena@sub.example"'
                     ).json_body["totalResults"] == 1
    for method, body in (("get", None), ("put", {"userName": "ada@example.com", "active": False}),
                         ("patch", {"Operations": [{"op": "Replace", "path": "active", "value": "False"}]}),
                         ("delete", None)):
        _error(okta.call(method, f"Users/{ada['id']}", body), 404, None, f"Resource {ada['id']} not found")
    _error(okta.call("get", f"Groups/{entra_group['id']}"), 404, None, "not found")
    _error(okta.call("patch", f"Groups/{okta_group['id']}", {"Operations": [
        {"op": "add", "path": "members", "value": [{"value": ada["id"]}]}]}), 400, "invalidValue",
        f"no person with id '{ada['id']}' here")
    _error(entra.call("patch", f"Groups/{entra_group['id']}", {"Operations": [
        {"op": "add", "path": "members", "value": [{"value": lena["id"]}]}]}), 400, "invalidValue", "no person")
    _error(okta.call("post", "Groups", {"displayName": "approvers"}), 409, "uniqueness", "already exists")
    _error(okta.create("ada@example.com"), 409, "uniqueness", "already exists")
    assert person_identity_user("ada@example.com").is_active
    assert entra.call("get", f"Groups/{entra_group['id']}").json_body["members"] == []
    assert _events(EventKind.PERSON_CHANGED) == []


def test_a_person_the_provider_created_is_linked_at_their_first_sign_in(idps):
    entra, okta = idps
    ada = entra.create("ada@example.com", "Ada").json_body
    entra_provider, okta_provider = providers.by_slug("entra"), providers.by_slug("okta")
    # Entra's ID token names the person in preferred_username (no email unless asked for).
    user = sign_in(entra_provider, {"sub": "entra-oid-1", "preferred_username": "Ada@Example.com"})
    assert str(user.pk) == ada["id"]
    assert ProviderAccount.objects.get(user=user).subject == "entra-oid-1"
    # Another provider (another organization) is not linked by the address.
    from sso.signin import Refused

    with pytest.raises(Refused) as refused:
        sign_in(okta_provider, {"sub": "okta-1", "email": "ada@example.com"})
    assert refused.value.code == "no_account"


def test_malformed_calls_never_answer_500(idps):
    """Whatever an identity provider sends, the answer is a SCIM error of the 4xx kind, never a 500."""
    entra, okta = idps
    ada = entra.create("ada@example.com").json_body["id"]
    group = entra.call("post", "Groups", {"displayName": "reviewers"}).json_body["id"]
    calls = [
        ("get", "Users?startIndex=0", None), ("get", "Users?count=abc", None), ("get", "Users?count=-1", None),
        ("get", "Users?filter=))((", None), ('get', 'Groups?filter=displayName xx "a"', None),
        ("get", "Groups/abc", None), ("get", "ResourceTypes/Nope", None), ("get", "Schemas/urn:nope", None),
        ("post", "Users", {"userName": 7}), ("post", "Users", {"userName": "eve@example.com", "name": "Eve"}),
        ("post", "Users", {"userName": "eve@example.com", "emails": 5}),
        ("post", "Users", {"userName": "eve@example.com", "emails": [1, 2]}),
        ("post", "Users", {"userName": "eve@example.com", "name": {"givenName": 5}}),
        ("post", "Users", {"userName": "eve@example.com", "name": {"givenName": "E\u202eve"}}),
        ("post", "Users", {"userName": "eve@example.com", "externalId": ["x"]}),
        ("post", "Users", {}), ("put", f"Users/{ada}", {}), ("put", f"Users/{ada}", {"userName": None}),
        ("patch", f"Users/{ada}", {}), ("patch", f"Users/{ada}", {"Operations": ["replace"]}),
        ("patch", f"Users/{ada}", {"Operations": [{"op": None}]}),
        ("patch", f"Users/{ada}", {"Operations": [{"op": "replace", "path": 5, "value": "x"}]}),
        ("patch", f"Users/{ada}", {"Operations": [{"op": "replace", "path": "name", "value": "x"}]}),
        ("patch", f"Users/{ada}", {"Operations": [{"op": "replace", "value": {"active": None}}]}),
        ("patch", f"Users/{ada}", {"Operations": [{"op": "add", "path": "emails", "value": 5}]}),
        ("patch", f"Users/{ada}", {"Operations": [{"op": "remove"}]}),
        ("patch", f"Users/{ada}", {"Operations": [{"op": "add", "path": "", "value": "x"}]}),
        ("post", "Groups", {"displayName": 5}), ("post", "Groups", {"displayName": "x", "members": "ada"}),
        ("post", "Groups", {"displayName": "x", "members": [{"value": "abc"}]}),
        ("patch", f"Groups/{group}", {"Operations": [{"op": "add", "path": "members", "value": "ada"}]}),
        ("patch", f"Groups/{group}", {"Operations": [{"op": "add", "path": "members", "value": [{"x": 1}]}]}),
        ("patch", f"Groups/{group}", {"Operations": [{"op": "add", "path": 'members[value eq "1"]'}]}),
        ("patch", f"Groups/{group}", {"Operations": [{"op": "remove", "path": "displayName"}]}),
        ("put", f"Groups/{group}", {"members": []}), ("delete", "Groups/999999", None), ("delete", "Users/x", None),
    ]
    for method, path, body in calls:
        answer = entra.call(method, path, body)
        assert 400 <= answer.status_code < 500, (method, path, body, answer.status_code, answer.content)
    assert entra.find("eve@example.com")["totalResults"] == 0
    assert not okta.call("get", "Groups").json_body["Resources"]
    assert [g["displayName"] for g in entra.call("get", "Groups").json_body["Resources"]] == ["reviewers"]


def test_a_generic_scim_client_finds_the_discovery_documents_conform(idps):
    """scim2-tester (a maintained RFC 7643/7644 checker) reads ServiceProviderConfig, ResourceTypes,
    Schemas and an unknown URL through its own client, in process. Its CRUD checks are left out:
    they create people with random userNames, and a person's userName is an email address here."""
    from django.core.signals import request_finished, request_started
    from django.core.wsgi import get_wsgi_application
    from django.db import close_old_connections
    from scim2_client.engines.wsgi import WSGISCIMClient
    from scim2_tester import Status, check_server

    entra, _okta = idps
    client = WSGISCIMClient(get_wsgi_application(), base_url="http://testserver/scim/v2",
                            headers={"Authorization": f"Bearer {entra.token}"})
    # As Django's test client does: the test's one database connection stays open between calls.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        results = check_server(client, include_tags={"discovery", "misc"})
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    ran = [result for result in results if result.status != Status.SKIPPED]
    assert len(ran) >= 20
    assert [(result.title, result.reason) for result in ran if result.status != Status.SUCCESS] == []
