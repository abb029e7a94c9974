"""Ownership of shared work (issue 15, point 1): take ("I'm on it"), release, and an operator's
assign, shown to everyone in the group, recorded with actor and time, and never part of the
protocol: spec §3.4 "the item is shared, any member may complete it, and the first decision wins".
"""

import re

import pytest
from django.test import Client
from django.urls import reverse

from kernel.models import AuditEvent
from runs.models import WorkItem
from tests.support.flows import open_item
from tests.support.processes import SCREEN_AND_APPROVE

PASSWORD = "a-long-password-1"


@pytest.fixture
def approval(publish, make_agent, make_person):
    """An open finance approval; two finance members, an operator and an outsider."""
    from tests.support.flows import LINK

    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    people = {name: make_person(email, groups=groups, operator=operator, password=PASSWORD) for name, email, groups,
              operator in (("mira", "mira@example.com", ["finance"], False), ("li", "li@example.com", ["finance"], False),
                           ("ops", "ops@example.com", [], True), ("sam", "sam@example.com", ["warehouse"], False))}
    agent = make_agent("screener")
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    agent.ok("submit", token=token, output={"cleared": True}, evidence=LINK, summary="Clear.")
    return run_id, open_item(people["mira"], run_id, "approve")["id"], people


def client_of(actor) -> Client:
    client = Client()
    assert client.login(username=actor.name, password=PASSWORD)
    return client


def protocol_view(actor, run_id):
    """What the protocol says of the item: get_work's work item without the read-time snapshot."""
    item = open_item(actor, run_id, "approve")
    return {key: value for key, value in item.items() if key not in ("snapshot", "decide")}


def test_a_member_takes_an_item_and_the_group_sees_who_holds_it(approval):
    run_id, item_id, people = approval
    before = protocol_view(people["li"], run_id)
    mira, li = client_of(people["mira"]), client_of(people["li"])
    assert mira.post(f"/work/{item_id}/take").status_code == 302
    item = WorkItem.objects.get(pk=item_id)
    assert item.held_by == "mira@example.com" and item.held_at is not None
    page = li.get(f"/work/{item_id}").content.decode()
    holder = page.split('id="holder"')[1].split("</section>")[0]
    assert "mira@example.com</strong> has been on this since" in holder and "You can still decide it" in holder
    assert 'data-confirm="mira@example.com is on this item. Decide it anyway?"' in page
    assert "mira@example.com is on it" in li.get("/").content.decode()
    assert "You are on it" in mira.get("/").content.decode()
    refused = li.post(f"/work/{item_id}/take", follow=True).content.decode()
    assert "mira@example.com has held this work item since" in refused
    assert WorkItem.objects.get(pk=item_id).held_by == "mira@example.com"
    # The protocol does not know: assignedTo, get_work and decide are as before.
    assert protocol_view(people["li"], run_id) == before
    item = open_item(people["li"], run_id, "approve")
    people["li"].ok("decide", runId=run_id, workItemId=item_id, snapshot=item["snapshot"], decision="approved")
    taken = AuditEvent.objects.get(kind="item_taken")
    assert (taken.actor, taken.work_item_id, taken.run_id) == ("mira@example.com", item_id, run_id)


def test_release_is_for_the_holder_or_an_operator(approval):
    _run_id, item_id, people = approval
    mira, li, ops = client_of(people["mira"]), client_of(people["li"]), client_of(people["ops"])
    mira.post(f"/work/{item_id}/take")
    page = li.post(f"/work/{item_id}/release", follow=True).content.decode()
    assert "Only the person who holds a work item, or an operator, releases it." in page
    assert WorkItem.objects.get(pk=item_id).held_by == "mira@example.com"
    ops.post(f"/work/{item_id}/release")
    assert WorkItem.objects.get(pk=item_id).held_by is None
    released = AuditEvent.objects.get(kind="item_released")
    assert (released.actor, released.actor_kind, released.data) == ("ops@example.com", "operator",
                                                                   {"heldBy": "mira@example.com"})


def test_an_operator_assigns_an_item_to_a_named_member_of_its_group(approval):
    _run_id, item_id, people = approval
    ops = client_of(people["ops"])
    page = ops.get(f"/work/{item_id}").content.decode()
    assert re.findall(r'<option value="([^"]+)"', page.split('id="assign-to"')[1].split("</select>")[0]) == [
        "li@example.com", "mira@example.com"]
    ops.post(f"/work/{item_id}/assign", {"to": "li@example.com"})
    assert WorkItem.objects.get(pk=item_id).held_by == "li@example.com"
    refused = ops.post(f"/work/{item_id}/assign", {"to": "sam@example.com"}, follow=True).content.decode()
    assert "This person cannot hold this work item." in refused
    assert WorkItem.objects.get(pk=item_id).held_by == "li@example.com"
    assert client_of(people["mira"]).post(f"/work/{item_id}/assign", {"to": "mira@example.com"}).status_code == 403
    assigned = AuditEvent.objects.get(kind="item_assigned")
    assert (assigned.actor, assigned.data) == ("ops@example.com", {"to": "li@example.com", "heldBy": None})


def test_people_outside_the_assignment_cannot_take_it(approval):
    _run_id, item_id, people = approval
    # Sam takes no part in the run: the item does not exist for him (runs/visibility.py).
    assert client_of(people["sam"]).post(f"/work/{item_id}/take").status_code == 404
    assert WorkItem.objects.get(pk=item_id).held_by is None


def test_admin_lists_filters_assigns_and_releases_the_queue(approval, org):
    from kernel.organizations import create_person

    _run_id, item_id, _people = approval
    create_person(org, "root@example.com", password=PASSWORD, superuser=True, operator=True)
    admin = Client()
    assert admin.login(username="root@example.com", password=PASSWORD)
    changelist = reverse("admin:runs_workitem_changelist")
    listing = admin.get(changelist + "?state__exact=open&overdue=no").content.decode()
    assert item_id in listing and f'href="/work/{item_id}">open</a>' in listing
    chooser = admin.post(changelist, {"action": "assign_selected", "_selected_action": [item_id]}).content.decode()
    assert 'value="li@example.com"' in chooser and 'value="mira@example.com"' in chooser
    admin.post(changelist, {"action": "assign_selected", "_selected_action": [item_id], "apply": "1",
                            "assign_to": "mira@example.com"})
    assert WorkItem.objects.get(pk=item_id).held_by == "mira@example.com"
    assert item_id in admin.get(changelist + "?held_by=mira%40example.com").content.decode()
    admin.post(changelist, {"action": "release_selected", "_selected_action": [item_id]})
    assert WorkItem.objects.get(pk=item_id).held_by is None
    assert [e.actor for e in AuditEvent.objects.filter(kind__in=["item_assigned", "item_released"]).order_by("id")] \
        == ["root@example.com", "root@example.com"]
