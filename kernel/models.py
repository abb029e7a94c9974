"""Organizations and the identities that act in them: agents, people (Django users) and API tokens."""

import hashlib
import secrets

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models

from . import jsonio

DEFAULT_ORGANIZATION_SLUG = "default"


class Organization(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    # People in this group are the organization's operators: they cancel runs, send events
    # and receive escalations (spec §3.3, §3.5).
    operators = models.OneToOneField(Group, on_delete=models.PROTECT, related_name="operators_of")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.slug


class OrganizationGroup(models.Model):
    """Ties a Django group to the one organization it belongs to; nothing crosses organizations."""

    group = models.OneToOneField(Group, on_delete=models.CASCADE, related_name="organization_link")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="group_links")

    def __str__(self):
        return f"{self.group.name} ({self.organization.slug})"


class Member(models.Model):
    """A person: a Django user who works in one organization. Their `person` value is their email."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="member")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="members")

    def __str__(self):
        return f"{self.user.email} ({self.organization.slug})"


class Agent(models.Model):
    """A named service identity; it authenticates with bearer tokens (ApiToken)."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="agents")
    name = models.SlugField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="agent_name_unique_in_org")]

    def __str__(self):
        return self.name

    @property
    def ref(self) -> str:
        return f"a_{self.name}"


TOKEN_PREFIX = "apt_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token for an agent or a person. Only its SHA-256 is stored."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_tokens")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="api_tokens"
    )
    label = models.CharField(max_length=100, blank=True)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(agent__isnull=False, user__isnull=True)
                | models.Q(agent__isnull=True, user__isnull=False),
                name="api_token_for_agent_xor_person",
            )
        ]

    def __str__(self):
        owner = self.agent.ref if self.agent_id else self.user.email
        return f"{self.label or 'token'} for {owner}"

    @classmethod
    def issue(cls, *, organization, agent=None, user=None, label="") -> tuple["ApiToken", str]:
        """Create a token; returns (row, plaintext). The plaintext is shown once and never stored."""
        plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(
            organization=organization, agent=agent, user=user, label=label, token_hash=hash_token(plaintext)
        )
        return row, plaintext


# --- OAuth 2.1 (issue 7; the rest lives in kernel/oauth.py) ---------------------------

from oauth2_provider.settings import oauth2_settings  # noqa: E402  (no models imported; swappable name)


class AgentApplication(models.Model):
    """A django-oauth-toolkit Application registered for an agent: a confidential client whose
    client-credentials tokens act as that agent. Deleting it deletes the Application and its tokens."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="oauth_applications")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    application = models.OneToOneField(
        oauth2_settings.APPLICATION_MODEL, on_delete=models.CASCADE, related_name="agent_link"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "agent application (OAuth)"
        verbose_name_plural = "agent applications (OAuth)"

    def __str__(self):
        return f"{self.application.name} ({self.agent.ref})"


# --- the audit log (issue 14; written through kernel/audit.py) --------------------------------
# One append-only table of everything that happened, who did it, when.
#
# An event names its organization, and the run, step and work item when it has them, by id rather
# than by foreign key: the log outlives whatever it describes and is never cascaded away. `actor`
# is the `by` of run data, always taken from authentication (an agent `a_<name>`, a person's email,
# or `server` for what the server does on its own). Nothing updates or deletes an event: the admin
# offers no change or delete, and on PostgreSQL a trigger refuses UPDATE and DELETE (kernel/migrations/0004).


class ActorKind(models.TextChoices):
    AGENT = "agent"
    PERSON = "person"
    OPERATOR = "operator"
    ADMIN = "admin", "Administrator"
    SERVER = "server"


class EventKind(models.TextChoices):
    RUN_STARTED = "run_started", "Run started"
    STEP_READY = "step_ready", "Step ready"
    STEP_CLAIMED = "step_claimed", "Step claimed"
    LEASE_RENEWED = "lease_renewed", "Lease renewed"
    LEASE_LAPSED = "lease_lapsed", "Lease lapsed"
    SUBMISSION_ACCEPTED = "submission_accepted", "Submission accepted"
    SUBMISSION_REFUSED = "submission_refused", "Submission not accepted"
    CHECK_VERDICT = "check_verdict", "Check verdict"
    ESCALATED = "escalated", "Escalated"
    RETURNED = "returned", "Returned for rework"
    DECIDED = "decided", "Decided"
    REWORK = "rework", "Sent back into rework"
    BRANCHES_JOINED = "branches_joined", "Branches joined"
    WAIT_ELAPSED = "wait_elapsed", "Wait over"
    WAIT_TIMED_OUT = "wait_timed_out", "Wait timed out"
    OVERDUE = "overdue", "Overdue"
    NOTICE_SENT = "notice_sent", "Notice sent"
    EVENT_SENT = "event_sent", "Event sent"
    EVENT_HELD = "event_held", "Event held"
    EVENT_CONSUMED = "event_consumed", "Event consumed"
    EVENT_DISCARDED = "event_discarded", "Event discarded"
    STEP_FAILED = "step_failed", "Step failed"
    RUN_ENDED = "run_ended", "Run ended"
    RUN_CANCELLED = "run_cancelled", "Run cancelled"
    FILE_UPLOADED = "file_uploaded", "File uploaded"
    ORPHAN_FILE_REMOVED = "orphan_file_removed", "Orphan file removed"
    PROCESS_IMPORTED = "process_imported", "Process imported"
    PROCESS_BOUND = "process_bound", "Roles bound"
    PROCESS_PUBLISHED = "process_published", "Process published"
    ITEM_TAKEN = "item_taken", "Work item taken"
    ITEM_RELEASED = "item_released", "Work item released"
    ITEM_ASSIGNED = "item_assigned", "Work item assigned"
    TOKEN_CREATED = "token_created", "API token created"
    TOKEN_REVOKED = "token_revoked", "API token revoked"
    PERSON_ADDED = "person_added", "Person added"
    PERSON_CHANGED = "person_changed", "Person's groups or operator flag changed"
    FIELD_PRESENTATION = "field_presentation", "How a field is shown"
    ORGANIZATION_BACKED_UP = "organization_backed_up", "Organization backed up"
    ORGANIZATION_RESTORED = "organization_restored", "Organization restored from a backup"
    BREAK_GLASS_SIGN_IN = "break_glass_sign_in", "Signed in with a break-glass password"
    PERSON_DEACTIVATED = "person_deactivated", "Person deactivated"
    PERSON_REACTIVATED = "person_reactivated", "Person switched on again"
    ALERT_RULE_SET = "alert_rule_set", "Alert rule set"
    ALERT_RULE_REMOVED = "alert_rule_removed", "Alert rule removed"
    ALERT_FIRED = "alert_fired", "Alert started"
    ALERT_CLEARED = "alert_cleared", "Alert cleared"


class AuditEvent(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+")
    run_id = models.CharField(max_length=24, null=True, blank=True)
    step_id = models.CharField(max_length=64, null=True, blank=True)
    work_item_id = models.CharField(max_length=24, null=True, blank=True)
    kind = models.CharField(max_length=32, choices=EventKind.choices)
    actor = models.CharField(max_length=254)
    actor_kind = models.CharField(max_length=16, choices=ActorKind.choices)
    at = models.DateTimeField()
    request_id = models.CharField(max_length=128, null=True, blank=True)
    data = models.JSONField(default=dict, blank=True, encoder=jsonio.Encoder, decoder=jsonio.Decoder)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "run_id", "id"], name="audit_run"),
            models.Index(fields=["organization", "at", "id"], name="audit_at"),
            models.Index(fields=["organization", "kind", "at"], name="audit_kind"),
            models.Index(fields=["organization", "actor", "at"], name="audit_actor"),
        ]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.kind} by {self.actor}"


# --- notification choices (issue 15, point 6; the rules live in runs/services/notifications.py) ---


class NoticeKind(models.TextChoices):
    NEW_WORK = "new_work", "New work for me or my groups"
    ASSIGNED = "assigned", "An item assigned to me"
    RETURNED = "returned", "Work returned to me for rework"
    ESCALATION = "escalation", "An escalation waiting (operators)"
    OVERDUE = "overdue", "Overdue items"
    ALERT = "alert", "A process alert starting or clearing (operators)"


class Delivery(models.TextChoices):
    IMMEDIATELY = "immediately", "Right away"
    DIGEST = "digest", "In a summary mail"
    OFF = "off", "Not at all"


class NoticePreference(models.Model):
    """How one person hears of one kind of notice; no row means the kind's default."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notice_preferences")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32, choices=NoticeKind.choices)
    delivery = models.CharField(max_length=16, choices=Delivery.choices)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "kind"], name="notice_preference_unique")]

    def __str__(self):
        return f"{self.kind}: {self.delivery}"


class PageSettings(models.Model):
    """How the pages show things to one person (issue 16, point 2): their time zone; blank means
    the browser's own."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="page_settings")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    time_zone = models.CharField(max_length=64, blank=True)

    def __str__(self):
        return self.time_zone or "browser's time zone"
