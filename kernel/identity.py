"""Who is calling. Every transport resolves an Identity here and nowhere else; `by` in run data
comes from it, never from arguments."""

import hashlib
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection
from oauth2_provider.models import get_access_token_model

from . import api_tokens, audit, sql
from .errors import Issue, invalid, not_found
from .models import TOKEN_PREFIX, Agent, AgentApplication, ApiToken, Member, Organization, hash_token
from .oauth import SCOPE
from .organizations import organization_by_id

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


def _agent_from_api_token(token_hash: str) -> Identity | None | bool:
    """The hot path, one hand-written statement (see kernel/sql.py): an agent's token.
    False when the token is valid but belongs to a person."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.organization_id, t.agent_id, a.name FROM {sql.table(ApiToken)} t "
            f"LEFT JOIN {sql.table(Agent)} a ON a.id = t.agent_id "
            "WHERE t.token_hash = %s AND t.revoked_at IS NULL", [token_hash])
        row = cursor.fetchone()
    if row is None:
        return None
    organization_id, agent_id, name = row
    if agent_id is None:
        return False
    return Identity(organization=organization_by_id(organization_id), kind=AGENT,
                    agent=Agent(id=agent_id, organization_id=organization_id, name=name))


def identity_from_api_token(token: str) -> Identity | None:
    """Resolve a bearer API token (agent or personal). Unknown or revoked → None."""
    agent = _agent_from_api_token(hash_token(token))
    if agent is not False:
        return agent
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


def _audience_is_this_server(resources: list[str]) -> bool:
    """RFC 8707: a token restricted to resources must name this server (or a resource in it)."""
    if not resources:
        return True
    base = settings.PUBLIC_BASE_URL
    return any(uri.rstrip("/") == base or uri.startswith(base + "/") for uri in resources)


def identity_from_access_token(token: str) -> Identity | None:
    """Resolve an OAuth access token (looked up by its SHA-256 checksum). Unknown, expired or
    revoked (DOT deletes revoked access tokens) → None.

    - client credentials (no user): the agent its application is registered for;
    - authorization code + PKCE (or a refresh of such a token): the person who consented, as a
      human identity; the application must be an authorization-code client, not an agent's.
    """
    checksum = hashlib.sha256(token.encode()).hexdigest()
    row = (
        get_access_token_model().objects.select_related("application", "user")
        .filter(token_checksum=checksum).first()
    )
    if row is None or row.application is None or row.is_expired():
        return None
    if not row.allow_scopes([SCOPE]) or not _audience_is_this_server(row.resource):
        return None
    link = (
        AgentApplication.objects.select_related("agent__organization__operators")
        .filter(application_id=row.application_id).first()
    )
    if row.user_id is None:
        if link is None:
            return None
        return Identity(organization=link.agent.organization, kind=AGENT, agent=link.agent)
    if link is not None or row.application.authorization_grant_type != row.application.GRANT_AUTHORIZATION_CODE:
        return None
    return person_identity(row.user, human_presence=True)


def identity_from_bearer(token: str) -> Identity | None:
    """One entry point for every bearer credential: API tokens (`apt_…`), then OAuth 2.1 access
    tokens (issue 7)."""
    if not token:
        return None
    if token.startswith(TOKEN_PREFIX):
        return identity_from_api_token(token)
    return identity_from_access_token(token)


def revoke_earlier_tokens(token: str, *, label: str, actor: audit.Actor = audit.COMMAND_LINE) -> int:
    """Revoke the live tokens of `token`'s owner that carry `label`, all but `token` itself: a tool
    that prints a token (create_identity, the demo) replaces the one it printed last time instead of
    piling them up. Tokens made elsewhere (the browser's /tokens/, OAuth) are left alone. Returns how
    many were revoked."""
    row = ApiToken.objects.get(token_hash=hash_token(token))
    earlier = ApiToken.objects.filter(organization_id=row.organization_id, agent_id=row.agent_id,
                                      user_id=row.user_id, label=label, revoked_at__isnull=True).exclude(pk=row.pk)
    rows = list(earlier)
    for earlier_row in rows:  # each with its audit event, as on the pages
        api_tokens.revoke(earlier_row, actor=actor)
    return len(rows)


def token_still_works(token: str, *, agent=None, user=None) -> bool:
    """Whether `token` is a live token of this agent or person (a token kept from an earlier start)."""
    return ApiToken.objects.filter(token_hash=hash_token(token), agent=agent, user=user,
                                   revoked_at__isnull=True).exists()


# --- personal API tokens: a person's own bearer tokens, made and revoked in the browser ---------

TOKEN_LABEL_CHARS = ApiToken._meta.get_field("label").max_length


def personal_tokens(identity: Identity):
    return ApiToken.objects.filter(user=identity.user, organization=identity.organization).order_by("-created_at")


def issue_personal_token(identity: Identity, *, label: str) -> tuple[ApiToken, str]:
    """A new bearer token acting as this person; (row, plaintext), the plaintext shown once."""
    label = label.strip()
    if len(label) > TOKEN_LABEL_CHARS:
        raise invalid("the token was not created",
                      [Issue("label", f"at most {TOKEN_LABEL_CHARS} characters", "too_long")])
    return api_tokens.issue(organization=identity.organization, user=identity.user, label=label or "browser",
                            actor=audit.Actor.of(identity))


def revoke_personal_token(identity: Identity, token_id: int) -> ApiToken:
    """Revoke one of the person's own tokens (not_found for anyone else's); it stops working at once."""
    row = personal_tokens(identity).filter(pk=token_id).first()
    if row is None:
        raise not_found("no such token of yours")
    api_tokens.revoke(row, actor=audit.Actor.of(identity))
    return row
