"""Services for organizations, their groups, people and agents."""

import time

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from . import api_tokens, audit, clock
from .identity_names import agent_name_issues, email_issues, normalized_email
from .models import DEFAULT_ORGANIZATION_SLUG, Agent, EventKind, Member, Organization, OrganizationGroup


class OrganizationError(Exception):
    pass


class IdentityRefused(OrganizationError):
    """A name or email address an identity may not have (kernel/identity_names.py): every issue."""

    def __init__(self, issues: list[str]):
        super().__init__("; ".join(issues))
        self.issues = issues


_by_id: dict[int, tuple[float, Organization]] = {}
CACHE_SECONDS = 30.0


def organization_by_id(organization_id: int) -> Organization:
    """The organization with its operators group, cached for 30 s per process: it is needed on every
    request and by every sweep, and changes seldom."""
    cached = _by_id.get(organization_id)
    if cached is None or cached[0] < time.monotonic():
        organization = Organization.objects.select_related("operators").get(pk=organization_id)
        cached = _by_id[organization_id] = (time.monotonic() + CACHE_SECONDS, organization)
    return cached[1]


def operators_group_name(slug: str) -> str:
    return "operators" if slug == DEFAULT_ORGANIZATION_SLUG else f"{slug}-operators"


@transaction.atomic
def get_or_create_organization(slug: str = DEFAULT_ORGANIZATION_SLUG, name: str | None = None) -> Organization:
    organization = Organization.objects.filter(slug=slug).first()
    if organization:
        return organization
    operators, _ = Group.objects.get_or_create(name=operators_group_name(slug))
    organization = Organization.objects.create(slug=slug, name=name or slug.title(), operators=operators)
    OrganizationGroup.objects.get_or_create(group=operators, defaults={"organization": organization})
    return organization


def default_organization() -> Organization:
    return get_or_create_organization(DEFAULT_ORGANIZATION_SLUG, "Default organization")


def organization_group(organization: Organization, name: str, *, create: bool = True) -> Group:
    """The organization's group with this name; created when missing. Refuses another org's group."""
    group = Group.objects.filter(name=name).select_related("organization_link__organization").first()
    if group is None:
        if not create:
            raise OrganizationError(f'group "{name}" does not exist')
        group = Group.objects.create(name=name)
        OrganizationGroup.objects.create(group=group, organization=organization)
        return group
    link = getattr(group, "organization_link", None)
    if link is None:
        OrganizationGroup.objects.create(group=group, organization=organization)
    elif link.organization_id != organization.id:
        raise OrganizationError(f'group "{name}" belongs to organization "{link.organization.slug}"')
    return group


@transaction.atomic
def create_agent(organization: Organization, name: str, *,
                 token_label: str | None = "create_identity") -> tuple[Agent, str | None]:
    """Get or create the agent and issue it a fresh token labelled `token_label` (none when None);
    returns (agent, token). A new agent's name must be a valid one (an existing agent keeps the
    name it has)."""
    if not Agent.objects.filter(organization=organization, name=name).exists():
        issues = agent_name_issues(name)
        if issues:
            raise IdentityRefused(issues)
    agent, _ = Agent.objects.get_or_create(organization=organization, name=name)
    if token_label is None:
        return agent, None
    _, token = api_tokens.issue(organization=organization, agent=agent, label=token_label, actor=audit.COMMAND_LINE)
    return agent, token


@transaction.atomic
def create_person(
    organization: Organization,
    email: str,
    *,
    groups: list[str] = (),
    operator: bool = False,
    password: str | None = None,
    superuser: bool = False,
    token_label: str | None = "create_identity",
) -> tuple[object, str | None]:
    """Get or create the person (a Django user with this email, in any case) and issue a fresh API
    token labelled `token_label` (none when None). A new person's address must be valid, and is
    stored lower-cased."""
    User = get_user_model()
    email = normalized_email(email)
    user = User.objects.filter(email__iexact=email).first()
    if user is None:
        issues = email_issues(email)
        if issues:
            raise IdentityRefused(issues)
        user = User.objects.create_user(username=email, email=email)
    member = Member.objects.filter(user=user).first()
    added = member is None  # a person new to the organization (not one already there)
    if added:
        Member.objects.create(user=user, organization=organization)
    elif member.organization_id != organization.id:
        raise OrganizationError(f"{email} already belongs to organization {member.organization.slug}")
    if password:
        user.set_password(password)
    if superuser:
        user.is_staff = user.is_superuser = True
    user.save()
    for name in groups:
        user.groups.add(organization_group(organization, name))
    if operator:
        user.groups.add(organization.operators)
    if added:  # recorded as kernel/people.py `add_person` records a person added in admin
        audit.record(EventKind.PERSON_ADDED, organization_id=organization.id, actor=audit.COMMAND_LINE, at=clock.now(),
                     data={"email": email, "groups": sorted(groups), "operator": operator})
    if token_label is None:
        return user, None
    _, token = api_tokens.issue(organization=organization, user=user, label=token_label, actor=audit.COMMAND_LINE)
    return user, token
