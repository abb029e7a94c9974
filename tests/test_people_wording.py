"""What people read after the audit's walk as a new finance user (issue 21, point 10): labels on a
phone's inbox cards, an operator's assignment called what it is, and admin that says what happened
and shows one list of people and one of groups."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from kernel.models import AuditEvent, Member
from processes.models import ProcessDraft
from tests.support.flows import open_item
from tests.support.processes import SCREEN_AND_APPROVE
from tests.test_admin_publishing import ONBOARDING, ONBOARDING_TEXT, admin_import

PASSWORD = "a-long-password-1"


def client_of(actor) -> Client:
    client = Client()
    assert client.login(username=actor.name, password=PASSWORD)
    return client


@pytest.fixture
def approval(publish, make_agent, make_person):
    from tests.support.flows import LINK

    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    people = {"mira": make_person("mira@example.com", groups=["finance"], password=PASSWORD),
              "li": make_person("li@example.com", groups=["finance"], password=PASSWORD),
              "ops": make_person("ops@example.com", operator=True, password=PASSWORD)}
    agent = make_agent("screener")
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    agent.ok("submit", token=token, output={"cleared": True}, evidence=LINK, summary="Clear.")
    return run_id, open_item(people["mira"], run_id, "approve")["id"], people


def test_a_phone_card_says_which_time_is_the_due_and_which_the_waiting_since(approval):
    """On a phone the table's headings are hidden and its rows become cards: each time cell carries
    its own label, which the phone stylesheet shows before it (tests/browser checks the pixels)."""
    _run, item_id, people = approval
    html = client_of(people["mira"]).get("/").content.decode()
    row = re.search(rf'<tr class="inbox-row[^"]*" data-work-item="{item_id}">(.*?)</tr>', html, re.S).group(1)
    assert re.search(r'<td data-label="Due">', row) and re.search(r'<td data-label="Waiting since">', row)
    done = client_of(people["mira"]).get("/?view=done").content.decode()
    assert 'data-label="Decided"' not in done or "<td data-label=\"Decided\">" in done
    css = (ONBOARDING.parents[2] / "workqueue" / "static" / "workqueue" / "inbox.css").read_text()
    assert '.table td[data-label]::before { content: attr(data-label) ": ";' in css


def test_an_item_an_operator_assigned_says_so_and_never_calls_it_a_hold(approval):
    _run, item_id, people = approval
    ops = client_of(people["ops"])
    assert ops.post(f"/work/{item_id}/assign", {"to": "mira@example.com"}).status_code == 302
    mine = client_of(people["mira"]).get(f"/work/{item_id}").content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", mine))
    assert "For group finance · Assigned to you by ops@example.com" in text
    assert "ops@example.com assigned this to you at" in text
    assert "hold" not in text.lower().replace("placeholder", "")
    operator_page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", ops.get(f"/work/{item_id}").content.decode()))
    assert "Unassign mira@example.com" in operator_page and "'s hold" not in operator_page
    assert "Assigned to mira@example.com by ops@example.com" in operator_page
    inbox = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", client_of(people["mira"]).get("/").content.decode()))
    assert "Assigned to you by ops@example.com" in inbox and "You are on it" not in inbox
    # Taking it oneself reads as before, and the assignment is gone.
    assert client_of(people["mira"]).post(f"/work/{item_id}/release").status_code == 302
    assert client_of(people["li"]).post(f"/work/{item_id}/take").status_code == 302
    li_page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", client_of(people["li"]).get(f"/work/{item_id}").content.decode()))
    assert "You have been on this since" in li_page and "assigned this" not in li_page


@pytest.fixture
def admin_client(client, org):
    from kernel.organizations import create_person

    create_person(org, "root@example.com", password="admin-pass-1", superuser=True)
    assert client.login(username="root@example.com", password="admin-pass-1")
    return client


def test_importing_the_same_text_twice_keeps_one_draft(admin_client, publish):
    first, _ = admin_import(admin_client, ONBOARDING_TEXT)
    again, page = admin_import(admin_client, ONBOARDING_TEXT)
    assert again.pk == first.pk and ProcessDraft.objects.count() == 1
    assert "You imported this text before: this is that draft (no second copy was kept)." in page
    changed, _ = admin_import(admin_client, ONBOARDING_TEXT + "\nRevised.\n")
    assert changed.pk != first.pk and ProcessDraft.objects.count() == 2


def test_publish_is_offered_again_once_a_role_goes_to_another_group(admin_client, publish):
    publish(ONBOARDING, {"finance-approver": "finance"})
    draft, page = admin_import(admin_client, ONBOARDING_TEXT)
    assert 'name="_publish"' not in page
    url = reverse("admin:processes_processdraft_change", args=[draft.pk])
    page = admin_client.post(url, {"bind__finance-approver": "treasury", "_continue": "1"},
                             follow=True).content.decode()
    assert 'name="_publish" value="Publish as the next version"' in page


def test_admin_lists_people_once_and_groups_once(admin_client, make_person):
    index = admin_client.get("/admin/").content.decode()
    assert 'href="/admin/agentprocess/member/"' in index and 'href="/admin/agentprocess/organizationgroup/"' in index
    assert 'href="/admin/auth/user/"' not in index and 'href="/admin/auth/group/"' not in index
    assert "Authentication and Authorization" not in index
    # Django's account page is still there for a password or staff rights.
    assert admin_client.get("/admin/auth/user/").status_code == 200


def test_a_persons_page_sets_their_groups_and_operator_flag_and_the_audit_log_says_so(admin_client, make_person,
                                                                                       org):
    from kernel.organizations import organization_group

    make_person("mira@example.com", groups=["finance"])
    organization_group(org, "treasury")
    member = Member.objects.get(user__email="mira@example.com")
    url = reverse("admin:agentprocess_member_change", args=[member.pk])
    page = admin_client.get(url).content.decode()
    assert 'value="Mira"' not in page and "finance" in page and "treasury" in page
    treasury = org.group_links.get(group__name="treasury").group
    response = admin_client.post(url, {"first_name": "Mira", "last_name": "Kahn", "groups": [treasury.pk],
                                       "operator": "on"})
    assert response.status_code == 302
    member.user.refresh_from_db()
    assert sorted(member.user.groups.values_list("name", flat=True)) == sorted(["treasury", org.operators.name])
    assert member.user.get_full_name() == "Mira Kahn"
    event = AuditEvent.objects.get(kind="person_changed")
    assert (event.actor_kind, event.actor) == ("admin", "root@example.com")
    assert event.data == {"email": "mira@example.com", "groups": ["treasury"], "groupsBefore": ["finance"],
                          "operator": True, "operatorBefore": False}
