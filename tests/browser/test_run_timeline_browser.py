"""The run page's timeline in real Chromium (issue 14, "Done when"): after an agent escalates, an
operator returns the step with a note, the agent submits, finance rejects into rework and then
approves, the run page shows all of it, in order, with who did it, and filters by who acted."""

import re

import pytest

from tests.support.flows import LINK
from tests.support.processes import SCREEN_AND_APPROVE

from .conftest import PASSWORD, sign_in

pytestmark = pytest.mark.browser



def decide_in_browser(page, server, work_item_id, decision, note=None):
    page.goto(f"{server}/work/{work_item_id}")
    if note:
        page.locator("#note").fill(note)
    page.locator(f"#decide-{decision}").click()
    page.wait_for_url(f"{server}/")


def test_the_run_page_shows_escalation_return_rework_and_approval_in_order(server, new_page, publish, make_person,
                                                                          agent):
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    make_person("ops@example.com", operator=True, password=PASSWORD)
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    escalation = agent.ok("escalate", token=token, note="The EU list is offline.")["workItems"][0]["id"]

    ops = new_page()
    sign_in(ops, server, "ops@example.com")
    decide_in_browser(ops, server, escalation, "returned", "It is back online; try again.")

    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    approval = agent.ok("submit", token=token, output={"cleared": True}, evidence=LINK,
                        summary="Both lists clear.")["workItems"][0]["id"]
    finance = new_page()
    sign_in(finance, server, "fin@example.com")
    decide_in_browser(finance, server, approval, "rejected", "Check the aliases too.")
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    approval = agent.ok("submit", token=token, output={"cleared": True}, evidence=LINK,
                        summary="Aliases clear.")["workItems"][0]["id"]
    decide_in_browser(finance, server, approval, "approved")

    finance.goto(f"{server}/runs/{run_id}")
    timeline = finance.locator("#activity .timeline-entry")
    sentences = [text.split("\n")[1] for text in timeline.all_inner_texts()]  # under the time
    expected_in_order = [
        "a_screener started the run (version 1)",
        "a_screener took “Screen”",
        "a_screener handed “Screen” to the operators",
        "ops@example.com returned “Screen” · the work item",
        "ops@example.com sent “Screen” back for another attempt",
        "a_screener finished “Screen”",
        "“Approve” is waiting for group finance",
        "fin@example.com rejected “Approve” · the work item",
        "The rejection sent the run back to “Screen”",
        "fin@example.com approved “Approve” · the work item",
        "The run ended: approved",
    ]
    positions = [next((i for i, s in enumerate(sentences) if s == wanted), None) for wanted in expected_in_order]
    assert None not in positions, (expected_in_order, sentences)
    assert positions == sorted(positions), sentences
    main = finance.inner_text("#activity")
    assert "The EU list is offline." in main and "It is back online; try again." in main
    assert "Check the aliases too." in main

    finance.get_by_role("link", name="People", exact=True).click()
    finance.wait_for_url(re.compile(r"who=people"))
    people = finance.locator("#activity .timeline-entry").all_inner_texts()
    assert len(people) == 5 and all("a_screener" not in text.split("\n")[1] for text in people)
    finance.locator("#activity .timeline-entry", has_text="fin@example.com rejected").get_by_role(
        "link", name="the work item").click()
    finance.wait_for_url(re.compile(r"/work/w_"))
    assert "Already decided: rejected by fin@example.com" in finance.inner_text("#decided")
