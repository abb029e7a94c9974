"""Notices people do not mute (spec §2.2 `due`, §5; issue 15, point 6). Never for a test run.

Who hears of what:

- **new work** (a task or approval became ready): its group's members, or its person; not the
  person whose own action made it ready.
- **an escalation waiting** (an agent escalated, or a check was unsure of a submission): the
  organization's operators.
- **work returned** (a step rejected into, or an escalated task returned): the person who last
  completed it, instead of "new work"; the rest of its group hear of it as new work.
- **an item assigned** (an operator's assign, runs/services/queue.py): the person it was assigned to.
- **overdue**: the assignee (each group member, or the person) and the organization's operators.

Each person chooses per kind: right away, in the summary mail (once per NOTICE_DIGEST_MINUTES,
on the clock's boundaries), or not at all (kernel.models.NoticePreference; DEFAULTS otherwise).

How a notice travels (runs/services/outbox.py): the write that made new work, an escalation, a
return or an assignment adds one `event` row to the outbox in its own transaction (one INSERT and
no look-up: it is on the path of an agent's submit). The worker fans event rows out, in one
transaction, into one row per person with the delivery that person chose, rendered as plain text;
then it sends each person's rows that are due as one mail. A crash at any point loses nothing.
"""

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from kernel.clock import iso
from kernel.errors import invalid
from kernel.models import Delivery, NoticeKind, NoticePreference, Organization
from processes.definition import definitions_for
from processes.maps import humanize
from processes.presentation import field_label

from ..models import Decision, Notice, StepState, WorkItem, WorkItemState
from . import locks

BATCH = 200
DEFAULTS = {
    NoticeKind.NEW_WORK: Delivery.DIGEST,
    NoticeKind.ASSIGNED: Delivery.IMMEDIATELY,
    NoticeKind.RETURNED: Delivery.IMMEDIATELY,
    NoticeKind.ESCALATION: Delivery.DIGEST,
    NoticeKind.OVERDUE: Delivery.IMMEDIATELY,
    NoticeKind.ALERT: Delivery.IMMEDIATELY,
}
# A mail's sections in this order; when two notices of one mail tell of one item, the first stands.
PRIORITY = (NoticeKind.ALERT, NoticeKind.OVERDUE, NoticeKind.RETURNED, NoticeKind.ASSIGNED, NoticeKind.ESCALATION,
            NoticeKind.NEW_WORK)
HINTS = {
    NoticeKind.NEW_WORK: "A task or approval is ready for you or one of your groups.",
    NoticeKind.ASSIGNED: "An operator put a shared item in your hands.",
    NoticeKind.RETURNED: "Something you completed was sent back to you, with the reviewer's note.",
    NoticeKind.ESCALATION: "An agent, or a check, needs an operator to decide.",
    NoticeKind.OVERDUE: "An item you or your group work on passed its due time.",
    NoticeKind.ALERT: "An alert rule on a process's figures started or cleared (Process insight).",
}
HEADINGS = {
    NoticeKind.ALERT: "Process alerts:",
    NoticeKind.OVERDUE: "These items passed their due time and are still open:",
    NoticeKind.RETURNED: "Sent back to you for rework:",
    NoticeKind.ASSIGNED: "An operator assigned these to you:",
    NoticeKind.ESCALATION: "Escalations waiting for an operator:",
    NoticeKind.NEW_WORK: "New work for you or your groups:",
}
SUBJECT_MANY = {
    NoticeKind.ALERT: "{n} process alerts",
    NoticeKind.OVERDUE: "{n} items are overdue",
    NoticeKind.RETURNED: "{n} items were returned to you for rework",
    NoticeKind.ASSIGNED: "{n} items were assigned to you",
    NoticeKind.ESCALATION: "{n} escalations are waiting",
    NoticeKind.NEW_WORK: "{n} new work items",
}
COUNT_WORDS = {
    NoticeKind.ALERT: "{n} alert(s)",
    NoticeKind.OVERDUE: "{n} overdue",
    NoticeKind.RETURNED: "{n} returned to you",
    NoticeKind.ASSIGNED: "{n} assigned to you",
    NoticeKind.ESCALATION: "{n} escalation(s)",
    NoticeKind.NEW_WORK: "{n} new",
}
SETTINGS_PATH = "/settings/notifications"
INPUTS_SHOWN, VALUE_CHARS, TEXT_CHARS = 4, 60, 160


def digest_time(at: dt.datetime) -> dt.datetime:
    """The end of the digest interval `at` falls in: every notice of one interval goes in one mail."""
    seconds = max(float(settings.NOTICE_DIGEST_MINUTES) * 60, 1.0)
    return dt.datetime.fromtimestamp((at.timestamp() // seconds + 1) * seconds, dt.UTC)


def send_time(delivery: str, at: dt.datetime) -> dt.datetime:
    return digest_time(at) if delivery == Delivery.DIGEST else at


# ---------------------------------------------------------------- a person's choices


@dataclass(frozen=True)
class Choice:
    kind: str
    label: str
    hint: str
    delivery: str
    default: str


def kinds_for(identity) -> list[str]:
    """The kinds a person can hear of: escalations and alerts go to operators only."""
    return [kind for kind in NoticeKind.values
            if kind not in (NoticeKind.ESCALATION, NoticeKind.ALERT) or identity.is_operator]


def choices_of(identity) -> list[Choice]:
    stored = dict(NoticePreference.objects.filter(user_id=identity.user.pk).values_list("kind", "delivery"))
    return [Choice(kind, NoticeKind(kind).label, HINTS[kind], stored.get(kind, DEFAULTS[kind]), DEFAULTS[kind])
            for kind in kinds_for(identity)]


@transaction.atomic
def save_choices(*, identity, chosen: dict[str, str], now) -> list[Choice]:
    """Keep a person's delivery per kind (the kinds they may hear of; every one of them named).
    Refused as a whole, changing nothing, when any kind or delivery is unknown or missing."""
    kinds, issues = kinds_for(identity), []
    for kind in kinds:
        delivery = chosen.get(kind)
        if delivery is None:
            issues.append(f"{kind}: missing")
        elif delivery not in Delivery.values:
            issues.append(f"{kind}: {delivery!r} is not one of {', '.join(Delivery.values)}")
    issues += [f"{kind}: not a kind of notice you can receive" for kind in chosen if kind not in kinds]
    if issues:
        raise invalid("these notification choices cannot be kept", issues)
    NoticePreference.objects.bulk_create(
        [NoticePreference(user_id=identity.user.pk, organization_id=identity.organization.id, kind=kind, delivery=chosen[kind], updated_at=now) for kind in kinds],
        update_conflicts=True, unique_fields=["user", "kind"], update_fields=["delivery", "updated_at"])
    return choices_of(identity)


def _deliveries(user_ids) -> dict[int, dict[str, str]]:
    chosen = defaultdict(dict)
    if user_ids:
        for user_id, kind, delivery in NoticePreference.objects.filter(user_id__in=set(user_ids)).values_list(
                "user_id", "kind", "delivery"):
            chosen[user_id][kind] = delivery
    return chosen


# ---------------------------------------------------------------- overdue (the sweep)


@dataclass(frozen=True)
class OverdueNotice:
    organization_id: int
    recipient: str
    run_id: str
    process: str
    step_id: str
    work_item_id: str | None
    due_at: str
    inputs: str = ""

    @property
    def link(self) -> str:
        path = f"/work/{self.work_item_id}" if self.work_item_id else f"/runs/{self.run_id}"
        return settings.PUBLIC_BASE_URL + path

    def line(self) -> str:
        what = f"work item {self.work_item_id}" if self.work_item_id else f"agent step {self.step_id}"
        about = f"\n  Inputs: {self.inputs}" if self.inputs else ""
        return (f"- {self.process}: {what} (step {self.step_id}) of run {self.run_id}, "
                f"overdue since {self.due_at}{about}\n  {self.link}")


def _members(group_names: set[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """group -> {email: (user id, organization id)} of its active people."""
    members = defaultdict(dict)
    if group_names:
        rows = get_user_model().objects.filter(groups__name__in=group_names, is_active=True).values_list(
            "groups__name", "email", "id", "member__organization_id")
        for group, email, user_id, organization_id in rows:
            if email:
                members[group][email] = (user_id, organization_id)
    return members


def _people(emails: set[str]) -> dict[str, tuple[str, int, int]]:
    """lower-case email -> (email, user id, organization id) of active people."""
    if not emails:
        return {}
    rows = get_user_model().objects.filter(email__in=emails, is_active=True).values_list(
        "email", "id", "member__organization_id")
    return {email.lower(): (email, user_id, organization_id) for email, user_id, organization_id in rows}


def overdue_notices(states: list[StepState]) -> list[OverdueNotice]:
    """Who hears of each crossing: the open work item's assignee and the organization's operators."""
    if not states:
        return []
    items = {item.step_state_id: item for item in WorkItem.objects.filter(
        step_state__in=states, state=WorkItemState.OPEN)}
    operators = dict(Organization.objects.filter(id__in={s.organization_id for s in states}).values_list(
        "id", "operators__name"))
    groups = set(operators.values()) | {i.assigned_group for i in items.values() if i.assigned_group}
    members = _members(groups)
    definitions = definitions_for({state.run.version_id for state in states})
    notices = []
    for state in states:
        item = items.get(state.pk)
        recipients = set(members[operators[state.organization_id]])
        if item is not None:
            recipients |= set(members[item.assigned_group]) if item.assigned_group else {item.assigned_person}
        inputs = inputs_line(state.run.inputs, definitions[state.run.version_id])  # runs loaded with their steps
        for recipient in sorted(r for r in recipients if r):
            notices.append(OverdueNotice(organization_id=state.organization_id, recipient=recipient, run_id=state.run_id,
                                         process=state.process_name, step_id=state.step_id,
                                         work_item_id=item.id if item else None, due_at=iso(state.due_at),
                                         inputs=inputs))
    return notices


def messages_for(notices: list[OverdueNotice], now) -> list[Notice]:
    """One outbox row per person and crossing, as each person chose to hear of overdue items;
    the outbox sends a person's rows that are due together as one mail."""
    emails = {notice.recipient for notice in notices}
    chosen = {email.lower(): delivery for email, delivery in NoticePreference.objects.filter(
        kind=NoticeKind.OVERDUE, user__email__in=emails).values_list("user__email", "delivery")} if emails else {}
    rows = []
    for notice in sorted(notices, key=lambda n: (n.recipient, n.run_id, n.step_id)):
        delivery = chosen.get(notice.recipient.lower(), DEFAULTS[NoticeKind.OVERDUE])
        if delivery == Delivery.OFF:
            continue
        rows.append(Notice(
            organization_id=notice.organization_id, kind=NoticeKind.OVERDUE, recipient=notice.recipient,
            delivery=delivery, subject=f"Overdue: {notice.process} step {notice.step_id}", body=notice.line(),
            about=[{"run": notice.run_id, "step": notice.step_id, "workItem": notice.work_item_id}],
            created_at=now, send_after=send_time(delivery, now)))
    return rows


# ---------------------------------------------------------------- alerts (insight's sweep)


def alert_messages(organization: Organization, *, subject: str, body: str, about: dict, now) -> list[Notice]:
    """An alert starting or clearing: one outbox row per operator of the organization, as each chose
    to hear of alerts (right away by default); the caller queues them with the change."""
    members = _members({organization.operators.name}).get(organization.operators.name, {})
    members = {email: ids for email, ids in members.items() if ids[1] == organization.id}
    chosen = _deliveries([user_id for user_id, _org in members.values()])
    rows = []
    for email, (user_id, _org) in sorted(members.items()):
        delivery = chosen[user_id].get(NoticeKind.ALERT, DEFAULTS[NoticeKind.ALERT])
        if delivery == Delivery.OFF:
            continue
        rows.append(Notice(organization_id=organization.id, kind=NoticeKind.ALERT, recipient=email, delivery=delivery,
                           subject=subject, body=body, about=[about], created_at=now,
                           send_after=send_time(delivery, now)))
    return rows


# ---------------------------------------------------------------- events (the writes' side)


def work_notices(run, items: list[WorkItem], *, caused_by: str, sent_back: dict[str, dict], now) -> list[Notice]:
    """The event rows of these new work items (the caller writes them in its transaction, with
    its other outbox rows: one INSERT), none for a test run. `sent_back` names the steps that came
    back for rework in this write: {step: {by, note}}."""
    if run.mode == "test":
        return []
    rows = []
    for item in items:
        if item.state != WorkItemState.OPEN:
            continue  # the same write ended the run
        about = {"run": run.id, "step": item.step_id, "workItem": item.id, "by": caused_by}
        if item.escalation is not None:
            kind = NoticeKind.ESCALATION
        elif item.step_id in sent_back:
            kind = NoticeKind.RETURNED
            about.update(sentBack=sent_back[item.step_id])
        else:
            kind = NoticeKind.NEW_WORK
        rows.append(_event(run.organization_id, kind, about, now))
    return rows


def queue_assigned(item: WorkItem, *, to: str, by: str, now) -> None:
    """In the assign's transaction: one event row (no one is told of assigning to themselves)."""
    if to.lower() != (by or "").lower():
        Notice.objects.bulk_create([_event(item.organization_id, NoticeKind.ASSIGNED, {
            "run": item.run_id, "step": item.step_id, "workItem": item.id, "by": by, "to": to}, now)])


def _event(organization_id: int, kind: str, about: dict, now) -> Notice:
    return Notice(organization_id=organization_id, kind=kind, recipient="", delivery=Notice.EVENT, subject="",
                  body="", about=[about], created_at=now, send_after=now)


# ---------------------------------------------------------------- fanning out (the worker's side)


def fan_out(now) -> int:
    """Every event row whose time came becomes one row per person who hears of it, in one
    transaction per batch (SKIP LOCKED: two workers never fan out one event); the rows made."""
    made = 0
    while True:
        with transaction.atomic():
            events = locks.due_notices(Notice.objects.filter(
                delivery=Notice.EVENT, sent_at__isnull=True, send_after__lte=now).order_by("send_after", "id"), BATCH)
            rows, outcomes = _people_rows(events, now)
            rows = _told_as_assigned(rows, now)
            Notice.objects.bulk_create(rows)
            for event in events:
                event.sent_at, event.outcome = now, outcomes[event.pk]
            Notice.objects.bulk_update(events, ["sent_at", "outcome"])
        made += len(rows)
        if len(events) < BATCH:
            return made


def _told_as_assigned(rows: list[Notice], now) -> list[Notice]:
    """A person an item is assigned to is told so; their pending "new work" about it is left out."""
    assigned = {(row.recipient, row.about[0]["workItem"]) for row in rows if row.kind == NoticeKind.ASSIGNED}
    if not assigned:
        return rows
    pending = Notice.objects.filter(sent_at__isnull=True, kind=NoticeKind.NEW_WORK,
                                    recipient__in={email for email, _ in assigned}).exclude(delivery__in=Notice.FANNED_OUT)
    stale = [row.pk for row in pending.only("pk", "recipient", "about")
             if (row.recipient, row.about[0]["workItem"]) in assigned]
    if stale:
        Notice.objects.filter(pk__in=stale).update(sent_at=now, outcome="left out: told as assigned instead")
    return [row for row in rows
            if row.kind != NoticeKind.NEW_WORK or (row.recipient, row.about[0]["workItem"]) not in assigned]


def _last_doers(step_state_ids: set[int]) -> dict[int, str]:
    """step state -> who last completed (or approved) it as a person, not as an escalation."""
    last = {}
    if step_state_ids:
        for state_id, by in WorkItem.objects.filter(
                step_state_id__in=step_state_ids, state=WorkItemState.DECIDED, escalation__isnull=True,
                decision__in=[Decision.COMPLETED, Decision.APPROVED]).order_by("decided_at", "id").values_list(
                "step_state_id", "decided_by"):
            last[state_id] = by
    return last


def _people_rows(events: list[Notice], now) -> tuple[list[Notice], dict[int, str]]:
    items = {item.pk: item for item in WorkItem.objects.select_related("run").filter(
        pk__in={event.about[0]["workItem"] for event in events})} if events else {}
    live = {pk: item for pk, item in items.items() if item.run.mode != "test" and item.state == WorkItemState.OPEN}
    members = _members({item.assigned_group for item in live.values() if item.assigned_group})
    returned_to = _last_doers({items[e.about[0]["workItem"]].step_state_id for e in events
                               if e.kind == NoticeKind.RETURNED and e.about[0]["workItem"] in live})
    people = _people({item.assigned_person for item in live.values() if item.assigned_person}
                     | {e.about[0]["to"] for e in events if e.kind == NoticeKind.ASSIGNED})
    audiences = {e.pk: _audience(e, live[e.about[0]["workItem"]], members, people, returned_to)
                 for e in events if e.about[0]["workItem"] in live}
    chosen = _deliveries({user_id for audience in audiences.values() for _, user_id, _ in audience})
    definitions = definitions_for({item.run.version_id for item in live.values()})
    rows, outcomes = [], {}
    for event in events:
        item = live.get(event.about[0]["workItem"])
        if item is None:
            missing = items.get(event.about[0]["workItem"])
            outcomes[event.pk] = ("a test run: no one is told" if missing is not None and missing.run.mode == "test"
                                  else "the item was no longer open: no one is told")
            continue
        told = 0
        for email, user_id, kind in audiences[event.pk]:
            delivery = chosen[user_id].get(kind, DEFAULTS[kind])
            if delivery == Delivery.OFF:
                continue
            subject, body = _render(kind, item, event.about[0], definitions[item.run.version_id])
            rows.append(Notice(organization_id=event.organization_id, kind=kind, recipient=email, delivery=delivery,
                               subject=subject[:255], body=body,
                               about=[{"run": item.run_id, "step": item.step_id, "workItem": item.id}],
                               created_at=now, send_after=send_time(delivery, event.created_at)))
            told += 1
        outcomes[event.pk] = f"fanned out to {told} of {len(audiences[event.pk])} people"
    return rows, outcomes


def _audience(event: Notice, item: WorkItem, members, people, returned_to) -> list[tuple[str, int, str]]:
    """(email, user id, kind) of everyone who hears of this event, each once."""
    about = event.about[0]
    by = (about.get("by") or "").lower()
    if event.kind == NoticeKind.ASSIGNED:
        person = people.get(about["to"].lower())
        still_theirs = (item.held_by or "").lower() == about["to"].lower()  # not reassigned meanwhile
        ok = person and person[2] == item.organization_id and still_theirs
        return [(person[0], person[1], NoticeKind.ASSIGNED)] if ok else []
    if item.assigned_group:
        eligible = {email: ids for email, ids in members[item.assigned_group].items()
                    if ids[1] == item.organization_id}
    else:
        person = people.get((item.assigned_person or "").lower())
        eligible = {person[0]: (person[1], person[2])} if person and person[2] == item.organization_id else {}
    back_to = (returned_to.get(item.step_state_id) or "").lower() if event.kind == NoticeKind.RETURNED else ""
    audience = []
    for email, (user_id, _) in sorted(eligible.items()):
        if email.lower() == by:
            continue  # their own action made it: they know
        if event.kind == NoticeKind.ESCALATION:
            kind = NoticeKind.ESCALATION
        else:
            kind = NoticeKind.RETURNED if email.lower() == back_to else NoticeKind.NEW_WORK
        audience.append((email, user_id, kind))
    return audience


# ---------------------------------------------------------------- what the mails say


def _short(value) -> str:
    text = value if isinstance(value, str) else str(value) if not isinstance(value, dict | list) else (
        "(…)" if value else "(none)")
    text = " ".join(text.split())
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def inputs_line(inputs: dict, definition) -> str:
    """The run's business inputs, briefly: the first few in the order the process declares them
    (PostgreSQL's jsonb keeps no order), each shortened."""
    inputs = inputs or {}
    names = [name for name in definition.inputs if name in inputs] + [n for n in inputs if n not in definition.inputs]
    shown = [f"{field_label(name)}: {_short(inputs[name])}" for name in names[:INPUTS_SHOWN]
             if inputs[name] is not None and inputs[name] != ""]
    more = len(names) - INPUTS_SHOWN
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def _first_line(text: str) -> str:
    line = next((part.strip() for part in (text or "").splitlines() if part.strip()), "")
    return line if len(line) <= TEXT_CHARS else line[: TEXT_CHARS - 1] + "…"


def _render(kind: str, item: WorkItem, about: dict, definition) -> tuple[str, str]:
    """(subject, body) of one notice about one work item, in plain words."""
    run, title = item.run, humanize(item.step_id)
    where = f"{title} (step {item.step_id}) in {run.process_name}, run {run.id}"
    lines = [f"- {where}"]
    if kind == NoticeKind.RETURNED and about.get("sentBack"):
        sent_back = about["sentBack"]
        lines.append(f"  Sent back by {sent_back.get('by')}: \u201c{_first_line(sent_back.get('note'))}\u201d")
    elif kind == NoticeKind.ESCALATION and item.escalation:
        lines.append(f"  Escalated by {item.escalation.get('by')}: \u201c{_first_line(item.escalation.get('note'))}\u201d")
    elif kind == NoticeKind.ASSIGNED:
        lines.append(f"  Assigned to you by {about.get('by')}")
    inputs = inputs_line(run.inputs, definition)
    if inputs:
        lines.append(f"  Inputs: {inputs}")
    who = f"the {item.assigned_group} group" if item.assigned_group else "you"
    due = f" \u00b7 due {item.due_at.astimezone(dt.UTC):%d %b %Y, %H:%M} UTC" if item.due_at else ""
    lines.append(f"  For {who}{due}")
    try:
        todo = _first_line(definition.step(item.step_id).text)
    except KeyError:
        todo = ""
    if todo and kind != NoticeKind.ESCALATION:
        lines.append(f"  What to do: {todo}")
    lines.append(f"  Open it: {settings.PUBLIC_BASE_URL}/work/{item.id}")
    subject = {
        NoticeKind.NEW_WORK: f"New work: {title} in {run.process_name}",
        NoticeKind.RETURNED: f"Returned to you for rework: {title} in {run.process_name}",
        NoticeKind.ESCALATION: f"Escalation waiting: {title} in {run.process_name}",
        NoticeKind.ASSIGNED: f"Assigned to you: {title} in {run.process_name}",
    }[kind]
    return subject, "\n".join(lines)


def _key(row: Notice):
    about = row.about[0] if row.about else {}
    if about.get("alert"):
        return ("alert", about["alert"], about.get("state"), row.pk)
    return about.get("workItem") or (about.get("run"), about.get("step"))


def sort_out(rows: list[Notice]) -> tuple[dict[str, list[Notice]], dict[int, str]]:
    """A batch of due rows as one mail per person ({recipient: rows}), and the rows left out with
    why: an item decided (or reassigned) before its notice went, or told of twice in one mail (the
    more pressing notice stands, PRIORITY)."""
    item_ids = {row.about[0]["workItem"] for row in rows if row.kind != NoticeKind.OVERDUE and row.about
                and row.about[0].get("workItem")}
    open_items = dict(WorkItem.objects.filter(pk__in=item_ids, state=WorkItemState.OPEN).values_list(
        "pk", "held_by")) if item_ids else {}
    mails, left_out = defaultdict(list), {}
    rank = {kind: index for index, kind in enumerate(PRIORITY)}
    for row in sorted(rows, key=lambda r: (rank.get(r.kind, len(PRIORITY)), r.send_after, r.pk)):
        item_id = row.about[0].get("workItem") if row.about else None
        if row.kind != NoticeKind.OVERDUE and item_id:
            if item_id not in open_items:
                left_out[row.pk] = "left out: the item was decided before this notice went"
                continue
            if row.kind == NoticeKind.ASSIGNED and (open_items[item_id] or "").lower() != row.recipient.lower():
                left_out[row.pk] = "left out: the item was reassigned before this notice went"
                continue
        mine = mails[row.recipient]
        if any(_key(kept) == _key(row) for kept in mine):
            left_out[row.pk] = "left out: told in the same mail as a more pressing notice"
            continue
        mine.append(row)
    return dict(mails), left_out


def compose(rows: list[Notice]) -> tuple[str, str]:
    """One plain-text mail of a person's rows: a section per kind, most pressing first, and a
    footer with the link to their notification settings."""
    by_kind = defaultdict(list)
    for row in rows:
        by_kind[row.kind].append(row)
    kinds = [kind for kind in PRIORITY if kind in by_kind] + [k for k in by_kind if k not in PRIORITY]
    if len(rows) == 1:
        subject = rows[0].subject
    elif len(kinds) == 1:
        subject = SUBJECT_MANY.get(kinds[0], "{n} notices").format(n=len(rows))
    else:
        subject = "Your work: " + ", ".join(COUNT_WORDS.get(k, "{n} " + k).format(n=len(by_kind[k])) for k in kinds)
    sections = [HEADINGS.get(kind, "") + "\n\n" + "\n\n".join(row.body for row in by_kind[kind]) for kind in kinds]
    footer = ("\n\n-- \nYou get this mail because of your notification settings. Choose for each kind of notice "
              "whether it comes right away, in a summary mail, or not at all:\n"
              f"{settings.PUBLIC_BASE_URL}{SETTINGS_PATH}\n")
    return subject, "\n\n".join(sections) + footer
