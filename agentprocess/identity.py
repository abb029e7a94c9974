"""Who is calling. Every transport resolves an Identity here and nowhere else; `by` in run data
comes from it, never from arguments."""

from dataclasses import dataclass, field

from django.utils import timezone

from .models import ApiToken, Member, Organization, hash_token

AGENT = "agent"
PERSON = "person"


@dataclass(frozen=True)
class Identity:
    organization: Organization
    kind: str  # AGENT or PERSON
    agent: object | None = None
    user: object | None = None
    groups: frozenset[str] = field(default_factory=frozenset)
    # False for a person's credential that was not established as that person's own
    # (spec §6 rule 4); such a credential may read and act as an agent never could, but not decide.
    human_presence: bool = True

    @property
    def is_agent(self) -> bool:
        return self.kind == AGENT

    @property
    def is_person(self) -> bool:
        return self.kind == PERSON

    @property
    def is_operator(self) -> bool:
        return self.is_person and self.organization.operators.name in self.groups

    @property
    def ref(self) -> str:
        """The `by` value: `a_<name>` for an agent, the email for a person."""
        return self.agent.ref if self.is_agent else self.user.email

    @property
    def email(self) -> str | None:
        return self.user.email if self.is_person else None


def person_identity(user, *, human_presence: bool = True) -> Identity | None:
    """The identity of a signed-in Django user, or None when they belong to no organization."""
    member = Member.objects.select_related("organization__operators").filter(user=user).first()
    if member is None or not user.is_active:
        return None
    groups = frozenset(user.groups.values_list("name", flat=True))
    return Identity(
        organization=member.organization, kind=PERSON, user=user, groups=groups, human_presence=human_presence
    )


def identity_from_api_token(token: str) -> Identity | None:
    """Resolve a bearer API token (agent or personal). Unknown or revoked → None."""
    row = (
        ApiToken.objects.select_related("organization__operators", "agent", "user")
        .filter(token_hash=hash_token(token), revoked_at__isnull=True)
        .first()
    )
    if row is None:
        return None
    if row.agent_id:
        return Identity(organization=row.organization, kind=AGENT, agent=row.agent)
    if not row.user.is_active:
        return None
    groups = frozenset(row.user.groups.values_list("name", flat=True))
    return Identity(organization=row.organization, kind=PERSON, user=row.user, groups=groups)


def identity_from_bearer(token: str) -> Identity | None:
    """One entry point for every bearer credential: API tokens (`apt_…`), then OAuth 2.1 access
    tokens (issue 7; resolved in agentprocess/oauth.py, which imports this module)."""
    if not token:
        return None
    from .oauth import identity_from_access_token

    return identity_from_api_token(token) or identity_from_access_token(token)


def revoke_token(row: ApiToken) -> None:
    row.revoked_at = timezone.now()
    row.save(update_fields=["revoked_at"])
