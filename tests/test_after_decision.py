"""After a decision (issue 16, point 5): the success message links to the run and to the next item
of the inbox view the person came from, and the person lands back on that view."""

import re
from urllib.parse import urlsplit

import pytest
from django.test import Client

from tests.support.flows import LINK, open_item

PASSWORD = "correct-horse-42"

PROCESS = """---
name: quick-approval
description: Finance approves a spend.
inputs:
  vendorName: string
steps:
  - id: screen
    agent: Screen the vendor.
    output: { cleared: boolean }
  - id: approve
    person: finance
    approve: Approve the spend.
  - id: done
    finish: approved
---
"""

TASK = """---
name: quick-task
description: Finance records a note.
inputs:
  vendorName: string
steps:
  - id: record
    person: finance
    task: Record it.
    output: { memo: string }
  - id: done
    finish: recorded
---
"""


@pytest.fixture
def world(db, publish, make_person, agent):
    publish(PROCESS, {"finance": "finance"})
    publish(TASK, {"finance": "finance"})
    person = make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    runs = []
    for vendor in ("Acme Steel GmbH", "Borealis Oy"):
        run_id = agent.ok("start_run", process="quick-approval", inputs={"vendorName": vendor})["run"]["id"]
        token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
        agent.ok("submit", token=token, output={"cleared": True}, evidence=LINK, summary="Clear.")
        runs.append(run_id)
    task_run = agent.ok("start_run", process="quick-task", inputs={"vendorName": "Cobalt AG"})["run"]["id"]
    client = Client()
    assert client.login(username="fin@example.com", password=PASSWORD)
    return client, person, runs, task_run


def approve(client, person, run_id, **extra):
    item = open_item(person, run_id, "approve")
    page = client.get(f"/work/{item['id']}", extra.pop("query", {}))
    snapshot = re.search(r'name="snapshot" value="([^"]+)"', page.content.decode()).group(1)
    return item, client.post(f"/work/{item['id']}", {"decision": "approved", "snapshot": snapshot, **extra})


def test_the_message_links_the_run_and_the_next_item_of_the_same_view(world):
    client, person, runs, task_run = world
    inbox = client.get("/", {"kind": "approve"}).content.decode()
    first = open_item(person, runs[0], "approve")["id"]
    assert f'href="/work/{first}?back=kind%3Dapprove"' in inbox  # the row carries its view
    _, response = approve(client, person, runs[0], query={"back": "kind=approve"}, back="kind=approve")
    assert response.status_code == 302 and response["Location"] == "/?kind=approve"
    page = client.get(response["Location"]).content.decode()
    second = open_item(person, runs[1], "approve")["id"]
    assert "Approved: quick-approval · Approve. The run is now ended (approved)." in page
    assert f'<a href="/runs/{runs[0]}">Open the run</a>' in page
    assert f'<a href="/work/{second}?back=kind%3Dapprove" data-next-item>Next item in this view</a>' in page
    # The task is open too, but not in this view.
    assert task_run not in page.split('class="messages"')[1].split("</ul>")[0]


def test_the_last_item_of_a_view_says_there_is_no_more(world):
    client, person, runs, _ = world
    approve(client, person, runs[0], back="kind=approve")
    _, response = approve(client, person, runs[1], back="kind=approve")
    page = client.get(response["Location"]).content.decode()
    assert "No more items in this view." in page and "data-next-item" not in page


def test_without_a_view_the_person_lands_on_the_inbox(world):
    client, person, runs, _ = world
    _, response = approve(client, person, runs[0])
    assert response["Location"] == "/"
    page = client.get("/").content.decode()
    assert "Next item in this view" in page  # the whole inbox is a view too


@pytest.mark.parametrize("back", ["//evil.example/x", "https://evil.example/", "view=mine&next=//evil.example"])
def test_back_is_only_ever_an_inbox_query(world, back):
    client, person, runs, _ = world
    _, response = approve(client, person, runs[0], back=back)
    location = urlsplit(response["Location"])
    assert (location.scheme, location.netloc, location.path) == ("", "", "/")  # the inbox, whatever the query
