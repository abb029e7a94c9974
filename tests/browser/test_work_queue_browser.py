"""The work queue in real Chromium (issue 15, "Done when"): two members of one group open the same
item, one takes it, the other sees who holds it; an operator assigns an item to a named person,
who finds it under Mine."""

import re

import pytest

from tests.support.flows import LINK
from tests.support.processes import SCREEN_AND_APPROVE

from .conftest import PASSWORD, sign_in

pytestmark = pytest.mark.browser


def test_take_shows_the_holder_to_the_group_and_an_operator_assigns(server, new_page, publish, make_person, agent):
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    for email in ("mira@example.com", "li@example.com"):
        make_person(email, groups=["finance"], password=PASSWORD)
    make_person("ops@example.com", operator=True, password=PASSWORD)
    items = []
    for vendor in ("Acme Steel GmbH", "Bolt AG"):
        run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": vendor})["run"]["id"]
        token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
        items.append(agent.ok("submit", token=token, output={"cleared": True}, evidence=LINK,
                              summary="Clear.")["workItems"][0]["id"])

    mira, li = new_page(), new_page()
    sign_in(mira, server, "mira@example.com")
    sign_in(li, server, "li@example.com")
    mira.goto(f"{server}/work/{items[0]}")
    li.goto(f"{server}/work/{items[0]}")
    assert "Nobody has taken this item yet." in li.inner_text("#holder")
    mira.locator("#take").click()
    mira.wait_for_url(f"{server}/work/{items[0]}")
    assert "You have been on this since" in mira.inner_text("#holder")
    li.reload()
    assert "mira@example.com has been on this since" in li.inner_text("#holder")
    li.goto(f"{server}/")
    row = li.locator(f'tr[data-work-item="{items[0]}"]')
    assert "mira@example.com is on it" in row.inner_text()

    ops = new_page()
    sign_in(ops, server, "ops@example.com")
    ops.goto(f"{server}/work/{items[1]}")
    ops.locator("#assign-to").select_option("li@example.com")
    ops.locator("#assign").click()
    ops.wait_for_url(re.compile(rf"/work/{items[1]}$"))
    assert "Assigned to li@example.com." in ops.inner_text(".messages")
    li.goto(f"{server}/")
    assert "Assigned to you by ops@example.com" in li.locator(f'tr[data-work-item="{items[1]}"]').inner_text()
    li.get_by_role("link", name=re.compile(r"^Mine")).click()
    li.wait_for_url(re.compile(r"\?view=mine$"))
    assert [row.get_attribute("data-work-item") for row in li.locator("tr.inbox-row").all()] == [items[1]]
    assert li.locator('[data-view-count="mine"]').inner_text() == "1"
    # Mira's taken item is not in My groups for Li (held), the assigned one neither.
    li.get_by_role("link", name=re.compile(r"^My groups")).click()
    li.wait_for_url(re.compile(r"\?view=groups$"))
    assert li.locator("tr.inbox-row").count() == 0
