"""Every page people use, with data on it: the shared ground of the accessibility, mobile and
keyboard tests. `build_world` publishes two processes and leaves, for one finance person who is also
an operator, an approval (its agent step carrying a file), a typed task with a file to upload and a
route, and an escalation; `page_paths` lists the pages to visit.
"""

import base64
from dataclasses import dataclass

from tests.support.flows import LINK

from .conftest import PASSWORD

ONBOARDING = """---
name: vendor-onboarding
description: An agent screens a vendor and attaches its report; finance approves or sends it back.
inputs:
  vendorName: string
  amount: number
steps:
  - id: screen
    agent: Screen the vendor against the sanctions lists and attach the report.
    output:
      cleared: boolean
      findings: string
    evidence: [file]
  - id: approve
    person: finance
    approve: Approve the vendor when the screening is clear and the amount is within budget.
    on_reject: screen
    due: 2d
  - id: done
    finish: approved
---

# Vendor onboarding

The agent screens; **finance** approves.
"""

REVIEW = """---
name: vendor-review
description: A person reviews a vendor with typed fields, a file and a route choice.
inputs:
  vendorName: string
steps:
  - id: review
    person: reviewers
    task: Review the vendor and record what you found.
    output:
      score: number
      approved: boolean
      reviewedOn: date
      meetingAt: datetime
      tags: { type: list, items: string }
      contact: person
      tier: { type: string, one_of: [gold, silver, bronze] }
      comment: { type: string, optional: true }
    evidence: [file]
    next:
      - { to: accept, when: The vendor passes }
      - { to: decline, when: The vendor fails }
  - id: accept
    finish: accepted
  - id: decline
    finish: declined
---

# Vendor review

Look at **everything**.
"""

PERSON = "fin@example.com"
NEWCOMER = "new@example.com"  # in no group, not an operator: an empty inbox, a 403


@dataclass
class World:
    approvals: list[str]  # work item ids, oldest first (the inbox's top item first)
    approval_runs: list[str]
    task: str
    escalation: str
    escalation_run: str


def approval_run(agent, vendor: str, amount) -> tuple[str, str]:
    """A vendor-onboarding run whose screening is done, with a file: (run id, approval item id)."""
    run_id = agent.ok("start_run", process="vendor-onboarding",
                      inputs={"vendorName": vendor, "amount": amount})["run"]["id"]
    report = agent.ok("upload", fileName=f"screening-{vendor.split()[0].lower()}.pdf",
                      contentType="application/pdf", contentBase64=base64.b64encode(b"%PDF report").decode())
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    view = agent.ok("submit", token=token, output={"cleared": True, "findings": "No match on the EU and UN lists."},
                    evidence=[{"kind": "file", "ref": report["id"]}, *LINK], summary="Both lists clear.")
    return run_id, view["workItems"][0]["id"]


def build_world(publish, make_person, agent) -> World:
    publish(ONBOARDING, {"finance": "finance"})
    publish(REVIEW, {"reviewers": "reviewers"})
    make_person(PERSON, groups=["finance", "reviewers"], operator=True, password=PASSWORD)
    make_person(NEWCOMER, password=PASSWORD)
    make_person("colleague@example.com", groups=["reviewers"])
    approvals, runs = [], []
    for vendor, amount in (("Acme Steel GmbH", 125000), ("Borealis Oy", 38990.1)):
        run_id, item = approval_run(agent, vendor, amount)
        runs.append(run_id)
        approvals.append(item)
    review = agent.ok("start_run", process="vendor-review", inputs={"vendorName": "Cobalt AG"})
    task = review["workItems"][0]["id"]
    escalation_run = agent.ok("start_run", process="vendor-onboarding",
                              inputs={"vendorName": "Delta SA", "amount": 5000})["run"]["id"]
    token = agent.ok("claim", runId=escalation_run, stepId="screen")["token"]
    escalation = agent.ok("escalate", token=token, note="The EU list is offline; please decide.")["workItems"][0]["id"]
    return World(approvals=approvals, approval_runs=runs, task=task, escalation=escalation,
                 escalation_run=escalation_run)


def page_paths(world: World) -> dict[str, str]:
    """The signed-in pages of the world, by name."""
    return {
        "inbox": "/",
        "approval": f"/work/{world.approvals[0]}",
        "task": f"/work/{world.task}",
        "escalation": f"/work/{world.escalation}",
        "run": f"/runs/{world.approval_runs[0]}",
        "runs": "/runs/",
        "start run": "/runs/start/?process=vendor-onboarding",
        "operators": "/operators/",
        "tokens": "/tokens/",
        "notification settings": "/settings/notifications",
    }
