"""The people's work queue on top of the protocol (issue 15, point 1): who is on a shared item.

Holding is advisory. A person takes an open item of their assignment ("I'm on it"), and everyone in
its group sees who holds it and since when; anyone assigned may still decide it (spec §3.4: the
first decision wins), the page warns them first. An operator assigns an item to a named member of
its group, or reassigns it. Nothing here changes assignedTo, get_work or who may decide.
Every change is recorded in the audit log with its actor.
"""

from django.contrib.auth import get_user_model
from django.db import transaction

from kernel import audit
from kernel.errors import ConflictIssue, Issue, conflict, forbidden, invalid, not_found
from kernel.identity import Identity
from kernel.models import EventKind

from ..models import WorkItem, WorkItemState
from ..selectors import is_assigned
from ..visibility import can_see
from . import locks, notifications


def _open_item(identity: Identity, work_item_id: str) -> WorkItem:
    item = locks.work_item_for_update(organization=identity.organization, work_item_id=work_item_id)
    if item is None or not can_see(identity, item.run):  # a run the person may not see: no such item
        raise not_found(f"no work item {work_item_id} in this organization")
    if item.state != WorkItemState.OPEN:
        raise conflict(ConflictIssue.ALREADY_DECIDED if item.state == WorkItemState.DECIDED
                       else ConflictIssue.RUN_ENDED, "this work item is no longer open")
    return item


def _record(kind, identity: Identity, item: WorkItem, now, **data) -> None:
    audit.record(kind, organization_id=identity.organization.id, actor=audit.Actor.of(identity), at=now,
                 run_id=item.run_id, step_id=item.step_id, work_item_id=item.id, data=data)


@transaction.atomic  # a savepoint when nested: a refusal rolls back this write only
def take(*, identity: Identity, work_item_id: str, now) -> WorkItem:
    item = _open_item(identity, work_item_id)
    if not identity.is_person or not is_assigned(identity, item):
        raise forbidden("only a person this work item is assigned to can take it")
    if item.held_by and item.held_by.lower() != identity.email.lower():
        raise conflict(ConflictIssue.HELD_BY_OTHER, f"{item.held_by} has held this work item since "
                                                    f"{item.held_at:%Y-%m-%d %H:%M} UTC; ask them or an operator")
    if not item.held_by:
        item.held_by, item.held_at, item.assigned_by = identity.email, now, None
        item.save(update_fields=["held_by", "held_at", "assigned_by"])
        _record(EventKind.ITEM_TAKEN, identity, item, now)
    return item


@transaction.atomic  # a savepoint when nested: a refusal rolls back this write only
def release(*, identity: Identity, work_item_id: str, now) -> WorkItem:
    item = _open_item(identity, work_item_id)
    holder = (item.held_by or "").lower()
    if holder and holder != (identity.email or "").lower() and not identity.is_operator:
        raise forbidden("only the person who holds a work item, or an operator, releases it")
    if holder:
        previous = item.held_by
        item.held_by, item.held_at, item.assigned_by = None, None, None
        item.save(update_fields=["held_by", "held_at", "assigned_by"])
        _record(EventKind.ITEM_RELEASED, identity, item, now, heldBy=previous)
    return item


def members_who_may_hold(item: WorkItem) -> list[str]:
    """The emails an operator may assign this item to: its group's active members, or its person."""
    if item.assigned_person:
        return [item.assigned_person]
    users = get_user_model().objects.filter(groups__name=item.assigned_group, is_active=True,
                                            member__organization_id=item.organization_id)
    return sorted(email for email in users.values_list("email", flat=True) if email)


@transaction.atomic  # a savepoint when nested: a refusal rolls back this write only
def assign(*, identity: Identity, work_item_id: str, to: str, now) -> WorkItem:
    item = _open_item(identity, work_item_id)
    if not identity.is_operator:
        raise forbidden("only operators assign work items")
    members = {email.lower(): email for email in members_who_may_hold(item)}
    target = members.get((to or "").strip().lower())
    if target is None:
        whom = f"group {item.assigned_group}" if item.assigned_group else item.assigned_person
        raise invalid("this person cannot hold this work item", [Issue("to", f"{to!r} is not a member of {whom}", "not_a_member")])
    if (item.held_by or "").lower() != target.lower():
        previous = item.held_by
        item.held_by, item.held_at, item.assigned_by = target, now, identity.email
        item.save(update_fields=["held_by", "held_at", "assigned_by"])
        _record(EventKind.ITEM_ASSIGNED, identity, item, now, to=target, heldBy=previous)
        notifications.queue_assigned(item, to=target, by=identity.email, now=now)  # notice hook (issue 15)
    return item
