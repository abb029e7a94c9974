"""Chat notices (issue 28, point 5): a Slack or Microsoft Teams incoming webhook as a notice
channel beside e-mail, for one group's work: work waiting for the group, its overdue items, and
escalations (the operators' group). The message says it in plain words, with the run's business
key and a link to the work item; it travels as a delivery, with the same outbox and retry rules.

Slack takes `{"text": …}` (links as `<url|label>`); Teams' incoming webhook takes a MessageCard
with the link as an "Open" action."""

from processes.maps import humanize

from ..models import SLACK, TEAMS

SUBJECTS = {
    "work_item.waiting": "New work for {group}",
    "work_item.overdue": "Overdue for {group}",
    "run.escalated": "Escalation waiting for {group}",
}


def sentence(event: dict, group: str) -> tuple[str, str, str]:
    """(title, what, link) of an event (the standard payload) for a group's channel."""
    data = event["data"]
    title = SUBJECTS[event["type"]].format(group=group)
    key = data["run"]["businessKey"]
    step = humanize(data["step"] or "")
    what = f"{step} – {key}" if key else step
    what += f" ({data['process']['name']}, run {data['run']['id']})"
    if data["run"]["test"]:
        what += " · test run, no real effects"
    return title, what, data["links"]["workItem"] or data["links"]["run"]


def message(event: dict, group: str, form: str) -> dict:
    title, what, link = sentence(event, group)
    if form == SLACK:
        return {"text": f"{title}: {what}. <{link}|Open it>"}
    if form == TEAMS:
        return {"@type": "MessageCard", "@context": "https://schema.org/extensions", "summary": title,
                "title": title, "text": f"{what}.",
                "potentialAction": [{"@type": "OpenUri", "name": "Open it",
                                     "targets": [{"os": "default", "uri": link}]}]}
    raise ValueError(form)
