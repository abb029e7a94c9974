"""Overdue notices by Django email (spec §2.2 `due`): the assignee (each group member, or the person)
and the organization's operators; one message per person per sweep, listing all their items."""

from collections import defaultdict
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model

from kernel.clock import iso

from ..models import Notice, StepState, WorkItem, WorkItemState


@dataclass(frozen=True)
class OverdueNotice:
    organization_id: int
    recipient: str
    run_id: str
    process: str
    step_id: str
    work_item_id: str | None
    due_at: str

    @property
    def link(self) -> str:
        path = f"/work/{self.work_item_id}" if self.work_item_id else f"/runs/{self.run_id}"
        return settings.PUBLIC_BASE_URL + path

    def line(self) -> str:
        what = f"work item {self.work_item_id}" if self.work_item_id else f"agent step {self.step_id}"
        return (f"- {self.process}: {what} (step {self.step_id}) of run {self.run_id}, "
                f"overdue since {self.due_at}\n  {self.link}")


def _members(group_names: set[str]) -> dict[str, set[str]]:
    members = defaultdict(set)
    if group_names:
        rows = get_user_model().objects.filter(groups__name__in=group_names, is_active=True).values_list(
            "groups__name", "email")
        for group, email in rows:
            if email:
                members[group].add(email)
    return members


def overdue_notices(states: list[StepState]) -> list[OverdueNotice]:
    """Who hears of each crossing: the open work item's assignee and the organization's operators."""
    if not states:
        return []
    items = {item.step_state_id: item for item in WorkItem.objects.filter(
        step_state__in=states, state=WorkItemState.OPEN)}
    from kernel.models import Organization

    operators = dict(Organization.objects.filter(id__in={s.organization_id for s in states}).values_list(
        "id", "operators__name"))
    groups = set(operators.values()) | {i.assigned_group for i in items.values() if i.assigned_group}
    members = _members(groups)
    notices = []
    for state in states:
        item = items.get(state.pk)
        recipients = set(members[operators[state.organization_id]])
        if item is not None:
            recipients |= members[item.assigned_group] if item.assigned_group else {item.assigned_person}
        for recipient in sorted(r for r in recipients if r):
            notices.append(OverdueNotice(organization_id=state.organization_id, recipient=recipient, run_id=state.run_id, process=state.process_name,
                                         step_id=state.step_id, work_item_id=item.id if item else None,
                                         due_at=iso(state.due_at)))
    return notices


def messages_for(notices: list[OverdueNotice], now) -> list[Notice]:
    """One outbox message per recipient, listing all their items (runs/services/outbox.py)."""
    by_recipient = defaultdict(list)
    for notice in notices:
        by_recipient[notice.recipient].append(notice)
    messages = []
    for recipient, mine in sorted(by_recipient.items()):
        subject = (f"Overdue: {mine[0].process} step {mine[0].step_id}" if len(mine) == 1
                   else f"{len(mine)} items are overdue")
        body = "These items passed their due time and are still open:\n\n" + "\n".join(
            n.line() for n in mine) + "\n"
        messages.append(Notice(
            organization_id=mine[0].organization_id, kind="overdue", recipient=recipient, subject=subject, body=body,
            about=[{"run": n.run_id, "step": n.step_id, "workItem": n.work_item_id} for n in mine],
            created_at=now, send_after=now))
    return messages
