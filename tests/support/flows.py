"""Small helpers that drive runs through the tool layer in tests."""

LINK = [{"kind": "link", "ref": "https://example.com/evidence"}]


def do_agent_step(agent, run_id: str, step_id: str, output: dict, *, evidence=None, next=None, reason=None,
                  summary: str = "Done as instructed.") -> dict:
    """Claim and submit an agent step; returns the run view."""
    token = agent.ok("claim", runId=run_id, stepId=step_id)["token"]
    extra = {}
    if next is not None:
        extra = {"next": next, "reason": reason or f"Chose {next}."}
    return agent.ok("submit", token=token, output=output, evidence=evidence if evidence is not None else LINK,
                    summary=summary, **extra)


def open_item(person, run_id: str, step_id: str) -> dict:
    """The person's open work item for this step of the run, as get_work gives it."""
    items = [i["workItem"] for i in person.ok("get_work", limit=100)["items"]
             if i["runId"] == run_id and i["workItem"]["stepId"] == step_id]
    assert len(items) == 1, f"expected one open item for {step_id}, got {items}"
    return items[0]


def decide(person, run_id: str, step_id: str, decision: str, **extra) -> dict:
    item = open_item(person, run_id, step_id)
    return person.ok("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision=decision,
                     **extra)


def states(view: dict) -> dict:
    return {step["id"]: step["state"] for step in view["steps"]}
