"""Runs and everything they hold: per-step state, work items, uploads, events, idempotency records.

Run data (spec §3.1) lives in `Run.inputs` and `Run.steps_data` as the JSON the spec shows, so a
write replaces it in one UPDATE and the snapshot is a hash of exactly that. Scheduling state
(leases, readiness, dues, timers) lives in StepState rows, indexed for get_work and the sweeps.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from kernel import jsonio
from kernel.models import Organization
from kernel.states import CLAIMABLE, ENDED_STATES, UNFINISHED, Decision, RunState, StepStatus, WorkItemState  # noqa: F401 (re-exported: the words of the rows below)
from processes.models import ProcessVersion

from .ids import new_run_id, new_upload_id, new_work_item_id


class Run(models.Model):
    id = models.CharField(primary_key=True, max_length=24, default=new_run_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="runs")
    version = models.ForeignKey(ProcessVersion, on_delete=models.PROTECT, related_name="runs")
    # Copies of immutable facts of the version, so lists and filters need no join.
    process_name = models.CharField(max_length=64)
    version_number = models.PositiveIntegerField()
    mode = models.CharField(max_length=8, default="live")
    state = models.CharField(max_length=16, choices=RunState.choices, default=RunState.ACTIVE)
    outcome = models.CharField(max_length=200, null=True, blank=True)
    ended_by = models.CharField(max_length=254, null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_note = models.TextField(null=True, blank=True)
    started_by = models.CharField(max_length=254)
    initiator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Run data keeps its numbers exactly as sent (kernel/jsonio.py).
    inputs = models.JSONField(default=dict, encoder=jsonio.Encoder, decoder=jsonio.Decoder)
    steps_data = models.JSONField(default=dict, encoder=jsonio.Encoder, decoder=jsonio.Decoder)
    snapshot = models.CharField(max_length=64)
    # Transition counter: orders completions for rework (which steps completed after which).
    seq = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["organization", "started_at", "id"], name="run_org_started"),
            models.Index(fields=["organization", "process_name", "started_at", "id"], name="run_org_process"),
            models.Index(fields=["organization", "state", "started_at", "id"], name="run_org_state"),
            # Process insight counts the runs not rolled up yet (open, or ended since the mark) from these.
            models.Index(fields=["organization", "process_name", "ended_at"], name="run_org_process_ended"),
            # /metrics counts the open runs by state (runs.services.gauges): only they are in it.
            models.Index(fields=["state"], name="run_open_state",
                         condition=Q(state__in=[RunState.ACTIVE, RunState.WAITING])),
        ]

    def __str__(self):
        return self.id

    @property
    def is_over(self) -> bool:
        return self.state in ENDED_STATES


class StepState(models.Model):
    """Where one step of one run stands. Created for every step at start; `state` None = not reached."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="step_states")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    process_name = models.CharField(max_length=64)
    step_id = models.CharField(max_length=64)
    position = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=16)
    state = models.CharField(max_length=16, null=True, blank=True, choices=StepStatus.choices)  # None: not reached
    ready_since = models.DateTimeField(null=True, blank=True)
    activated_seq = models.PositiveIntegerField(null=True, blank=True)
    completed_seq = models.PositiveIntegerField(null=True, blank=True)
    routed_to = models.CharField(max_length=64, null=True, blank=True)
    # Due clock (spec §2.2 `due`): starts when the step becomes ready, restarts on a repeat.
    due_at = models.DateTimeField(null=True, blank=True)
    due_notified_at = models.DateTimeField(null=True, blank=True)
    # Timers of waits: wake_at is when a wait/wait_until continues or a wait_for times out.
    wake_at = models.DateTimeField(null=True, blank=True)
    # Lease (spec §3.3). A token names lease_gen; a claim or renew bumps it, so older tokens go stale.
    claimed_by = models.CharField(max_length=254, null=True, blank=True)
    lease_gen = models.PositiveIntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    progress = models.TextField(null=True, blank=True)
    handoff = models.JSONField(null=True, blank=True, encoder=jsonio.Encoder, decoder=jsonio.Decoder)
    # check-1: a submission held while a person resolves an unsure verdict.
    candidate = models.JSONField(null=True, blank=True, encoder=jsonio.Encoder, decoder=jsonio.Decoder)
    # get_work's hand-out (issue 23): the agent this ready step was last listed first to, and until
    # when other agents' get_work leaves it out. Advisory only: claim never reads it.
    offered_to = models.CharField(max_length=254, null=True, blank=True)
    offered_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "step_id"], name="step_state_unique")]
        indexes = [
            # get_work for agents: claimable agent steps, oldest first (keyset paged).
            models.Index(
                fields=["organization", "ready_since", "id"],
                name="step_claimable",
                condition=Q(kind="agent", state__in=list(CLAIMABLE)),
            ),
            models.Index(
                fields=["organization", "process_name", "ready_since", "id"],
                name="step_claimable_process",
                condition=Q(kind="agent", state__in=list(CLAIMABLE)),
            ),
            # Sweeps: work proportional to what is due, not to the table.
            models.Index(fields=["lease_expires_at"], name="step_lease_expiry", condition=Q(state=StepStatus.CLAIMED)),
            models.Index(fields=["wake_at"], name="step_timer", condition=Q(state=StepStatus.WAITING, wake_at__isnull=False)),
            models.Index(
                fields=["organization", "due_at"],
                name="step_agent_due",
                condition=Q(kind="agent", state__in=list(CLAIMABLE), due_at__isnull=False),
            ),
            models.Index(
                fields=["due_at"],
                name="step_due",
                condition=Q(due_at__isnull=False, due_notified_at__isnull=True, state__in=list(UNFINISHED)),
            ),
        ]

    def __str__(self):
        return f"{self.run_id}/{self.step_id}"


class WorkItem(models.Model):
    """A person's part (spec §3.4): one per task/approve step when ready, one per escalation."""

    id = models.CharField(primary_key=True, max_length=24, default=new_work_item_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="work_items")
    step_state = models.ForeignKey(StepState, on_delete=models.CASCADE, related_name="work_items")
    step_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=16)  # task, approve, or agent (an escalated agent step)
    assigned_group = models.CharField(max_length=150, null=True, blank=True)
    assigned_person = models.CharField(max_length=254, null=True, blank=True)
    state = models.CharField(max_length=16, choices=WorkItemState.choices, default=WorkItemState.OPEN)
    escalation = models.JSONField(null=True, blank=True, encoder=jsonio.Encoder, decoder=jsonio.Decoder)
    due_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    decision = models.CharField(max_length=16, null=True, blank=True)
    decided_by = models.CharField(max_length=254, null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # Who is on it (runs/services/queue.py): advisory, never part of the protocol's assignment.
    held_by = models.CharField(max_length=254, null=True, blank=True)
    held_at = models.DateTimeField(null=True, blank=True)
    # The operator who gave it to `held_by`; null when the holder took it themselves.
    assigned_by = models.CharField(max_length=254, null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "held_by"], name="work_open_held", condition=Q(state="open")),
            models.Index(
                fields=["organization", "assigned_group", "created_at", "id"],
                name="work_open_group",
                condition=Q(state="open"),
            ),
            models.Index(
                fields=["organization", "assigned_person", "created_at", "id"],
                name="work_open_person",
                condition=Q(state="open"),
            ),
            models.Index(fields=["run", "state"], name="work_run_state"),
            # The inbox's "Done by me": a person's decisions, newest first.
            models.Index(fields=["organization", "decided_by", "decided_at"], name="work_decided_by",
                         condition=Q(state="decided")),
            # The inbox: due first (no due last), then oldest; the operators' queues.
            models.Index(
                fields=["organization", "assigned_group", "due_at", "created_at", "id"],
                name="work_open_group_due",
                condition=Q(state="open"),
            ),
            models.Index(
                fields=["organization", "assigned_person", "due_at", "created_at", "id"],
                name="work_open_person_due",
                condition=Q(state="open"),
            ),
            models.Index(
                fields=["organization", "created_at", "id"],
                name="work_open_escalations",
                condition=Q(state="open", escalation__isnull=False),
            ),
            models.Index(
                fields=["organization", "due_at"],
                name="work_open_due",
                condition=Q(state="open", due_at__isnull=False),
            ),
        ]

    def __str__(self):
        return self.id


def upload_path(instance, filename):
    """Content-addressed within the organization: the same bytes are one file, so a repeated or
    concurrent upload of them (one requestId or many) never leaves a second copy behind."""
    return f"{instance.organization_id}/{instance.sha256}"


def organization_of_upload_path(name: str) -> int | None:
    """The organization whose folder holds a stored file (upload_path), if the name is one of ours."""
    folder, _, rest = name.partition("/")
    return int(folder) if folder.isdigit() and rest else None


class Upload(models.Model):
    id = models.CharField(primary_key=True, max_length=24, default=new_upload_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="uploads")
    file = models.FileField(upload_to=upload_path, max_length=200)
    file_name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=160)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    uploaded_by = models.CharField(max_length=254)
    created_at = models.DateTimeField()

    def __str__(self):
        return f"{self.id} {self.file_name}"


class Event(models.Model):
    """An event delivered by send_event (spec §3.6), held until a wait_for consumes it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=64)
    data = models.JSONField(null=True, blank=True, encoder=jsonio.Encoder, decoder=jsonio.Decoder)
    sent_by = models.CharField(max_length=254)
    created_at = models.DateTimeField()
    consumed_by = models.CharField(max_length=64, null=True, blank=True)
    consumed_at = models.DateTimeField(null=True, blank=True)
    discarded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["run", "name", "id"], name="event_held", condition=Q(consumed_by__isnull=True))]


class IdempotencyRecord(models.Model):
    """One per successful write (spec §4): (organization, requestId) → caller, argument hash, result."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    request_id = models.CharField(max_length=128)
    tool = models.CharField(max_length=32)
    caller = models.CharField(max_length=254)
    arguments_hash = models.CharField(max_length=64)
    result = models.JSONField(encoder=jsonio.Encoder, decoder=jsonio.Decoder)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "request_id"], name="request_id_unique_in_org")
        ]


class Notice(models.Model):
    """One thing to tell one person, in the outbox (runs/services/outbox.py), written in the same
    transaction as what it tells, sent and marked by the sweep's worker; kept as the record of
    what was sent, when, and how many attempts it took. A person's rows that are due together go
    as one mail. An `event` row (new work, an escalation, a return, an assignment) names no one
    yet: the worker turns it into one row per person who hears of it (runs/services/notifications.py),
    so the write that caused it pays one INSERT and no look-up."""

    EVENT = "event"  # delivery of a row still to be fanned out to its people
    WEBHOOK = "webhook"  # delivery of a webhook event, fanned out to its subscriptions (webhooks/)
    FANNED_OUT = (EVENT, WEBHOOK)  # rows the mail sender never sends themselves

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32)  # kernel.models.NoticeKind
    recipient = models.EmailField(blank=True)  # "" on an event row
    delivery = models.CharField(max_length=16, default="immediately")  # event, immediately or digest
    # Why a row ended without a mail of its own: fanned out, or left out (the item was decided first).
    outcome = models.CharField(max_length=200, blank=True)
    subject = models.CharField(max_length=255)
    body = models.TextField()
    about = models.JSONField(default=list)  # [{run, step, workItem}] the message tells of
    created_at = models.DateTimeField()
    send_after = models.DateTimeField()
    attempts = models.PositiveSmallIntegerField(default=0)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["send_after", "id"], name="notice_unsent",
                                condition=Q(sent_at__isnull=True))]

    def __str__(self):
        return f"{self.kind} to {self.recipient or 'the people it concerns'}"



class SavedView(models.Model):
    """A person's named inbox view (issue 15, point 2): the inbox's own query string (filters and
    sort), so a saved view is exactly the bookmarkable URL it was saved from."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_views")
    name = models.CharField(max_length=80)
    query = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="saved_view_name_unique")]
        ordering = ["name", "id"]

    def __str__(self):
        return self.name


class InboxVisit(models.Model):
    """When a person last looked at their inbox: what arrived after it is "new"."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_visit")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    seen_at = models.DateTimeField()
