"""Who may see a run (issue 15, point 5). Spec §3.1: "Run data is visible to everyone who works a
step". A person sees a run's page, its run data and its files when they are an operator, started
it, or work or worked a step of it; everyone else gets 404 and does not find it in the runs list
or its search."""

import base64
import re

import pytest
from django.test import Client

from tests.support.flows import open_item

PASSWORD = "a-long-password-1"
VISIBLE_RUN = """---
name: visible-run
description: A report reviewed by finance, a manager's sign-off, then legal.
inputs:
  vendorName: string
  managerEmail: person
steps:
  - id: report
    agent: Write the report.
    evidence: [file]
  - id: finance_review
    person: finance
    approve: Review the report.
  - id: sign_off
    person: inputs.managerEmail
    task: Sign it off.
  - id: legal_review
    person: legal
    approve: Check the contract terms.
  - id: done
    finish: done
---
Visibility.
"""


@pytest.fixture
def world(publish, make_agent, make_person):
    publish(VISIBLE_RUN, {"finance": "finance", "legal": "legal"})
    people = {
        "operator": make_person("ops@example.com", operator=True, password=PASSWORD),
        "initiator": make_person("starter@example.com", password=PASSWORD),
        "participant": make_person("fin@example.com", groups=["finance"], password=PASSWORD),
        "later step": make_person("lawyer@example.com", groups=["legal"], password=PASSWORD),
        "named by a path": make_person("boss@example.com", password=PASSWORD),
        "unrelated": make_person("someone@example.com", groups=["warehouse"], password=PASSWORD),
        "other organization": make_person("ops@other.example", operator=True, password=PASSWORD, org_slug="other"),
    }
    agent = make_agent("writer")
    run_id = people["initiator"].ok("start_run", process="visible-run", inputs={
        "vendorName": "Acme Steel GmbH", "managerEmail": "boss@example.com"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="report")["token"]
    upload = agent.ok("upload", fileName="report.pdf", contentType="application/pdf",
                      contentBase64=base64.b64encode(b"%PDF-1.4 the report").decode())
    agent.ok("submit", token=token, output={}, evidence=[{"kind": "file", "ref": upload["id"]}], summary="Written.")
    item = open_item(people["participant"], run_id, "finance_review")
    people["participant"].ok("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                             decision="approved")
    # Now sign_off waits on the manager; legal_review is not reached yet.
    file_url = agent.ok("get_run", runId=run_id)["data"]["steps"]["report"]["evidence"][0]["url"]
    return run_id, file_url, people


SEES = {"operator": True, "initiator": True, "participant": True, "later step": True, "named by a path": True,
        "unrelated": False, "other organization": False}


def signed_in(actor) -> Client:
    client = Client()
    assert client.login(username=actor.name, password=PASSWORD)
    return client


@pytest.mark.parametrize("who", list(SEES))
def test_the_visibility_matrix_for_run_pages_lists_search_and_files(world, who):
    run_id, file_url, people = world
    client = signed_in(people[who])
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == (200 if SEES[who] else 404), who
    listed = re.findall(r'<tr data-run="([^"]+)">', client.get("/runs/").content.decode())
    assert (run_id in listed) is SEES[who], who
    searched = client.get("/runs/?process=visible-run&input.vendorName=Acme+Steel+GmbH").content.decode()
    assert (f'data-run="{run_id}"' in searched) is SEES[who], who
    path = file_url.split("://", 1)[1].split("/", 1)[1]
    downloaded = client.get("/" + path)
    assert downloaded.status_code == (200 if SEES[who] else 404), who
    if SEES[who]:
        assert b"".join(downloaded.streaming_content) == b"%PDF-1.4 the report"


def test_the_file_link_alone_still_works_for_agents_and_scripts(world):
    """An agent gets the signed URL from run data the protocol gives it; it has no session."""
    _run_id, file_url, _people = world
    path = file_url.split("://", 1)[1].split("/", 1)[1]
    response = Client().get("/" + path)
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"%PDF-1.4 the report"


def test_agents_keep_what_the_protocol_gives_them(world, make_agent):
    """tools.md: get_run and list_runs are for anyone in the organization."""
    run_id, _file_url, _people = world
    stranger = make_agent("stranger")
    assert stranger.ok("get_run", runId=run_id)["run"]["id"] == run_id
    assert run_id in [item["id"] for item in stranger.ok("list_runs")["items"]]


def test_the_runs_list_asks_one_query_for_visibility_whatever_the_number_of_runs(world, django_assert_max_num_queries):
    run_id, _file_url, people = world
    client = signed_in(people["later step"])
    client.get("/runs/")  # warm: session, catalogue, compiled definitions
    for _ in range(10):
        people["initiator"].ok("start_run", process="visible-run",
                               inputs={"vendorName": "Bolt", "managerEmail": "boss@example.com"})
    with django_assert_max_num_queries(12):
        html = client.get("/runs/").content.decode()
    assert len(re.findall(r'<tr data-run="', html)) == 11
