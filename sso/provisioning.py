"""SCIM provisioning's rules (issue 25, point 4): what an identity provider may do to the people
and groups of the one organization it signs into. sso/scim.py is only the transport (SCIM 2.0 over
django-scim2); everything it changes goes through here.

- A provider is known by its bearer token (`issue_token`, `provider_for_token`): only the token's
  SHA-256 is stored, looked up as personal API tokens are. A token acts on the organization its
  provider signed into when it was issued; a provider moved to another organization needs a new one.
- People: a person's `userName` is their email address here (their `person` value, stored
  lower-cased); it is fixed once they exist. Created with kernel/people.py's `add_person`, renamed
  and moved between groups with its `change_person`, with the provider as the audit actor and
  `{"kind": "scim", …}` as the source, as an OpenID Connect sign-in writes them (sso/signin.py).
- `active: false` (and DELETE) deactivates through sso/leavers.py: sessions end, tokens are
  revoked, held work goes back to the groups, notices skip them; `active: true` switches them on.
  A deleted person stays (their history does) but is gone from the provider's SCIM view.
- Groups: the organization's groups (its operators group is the operator flag, not a group here).
  A membership change is one `person_changed` event per person. A group a published process binds
  a role to is not deleted.
"""

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from kernel import clock
from kernel.identity_names import display_name_issues, email_issues, normalized_email
from kernel.models import Member, Organization, hash_token
from kernel.organizations import IdentityRefused, OrganizationError, organization_group
from kernel.people import add_person, change_person, existing_account, organization_groups
from processes.models import ProcessVersion

from . import leavers, providers
from .models import ProvisionedPerson, ScimToken
from .providers import Provider
from .signin import provider_actor

TOKEN_PREFIX = "scim_"


@dataclass
class Refused(Exception):
    """A change refused, nothing changed. `kind`: invalid (bad value), uniqueness (taken),
    mutability (may not change), not_found (no such person or group here)."""

    kind: str
    message: str

    def __str__(self):
        return self.message


# --- the provider behind a token ------------------------------------------------------------


@transaction.atomic
def issue_token(provider: Provider) -> str:
    """A new bearer token for the provider's SCIM client (shown once, never stored); the earlier
    one stops working."""
    organization = _organization(provider)
    now = clock.now()
    ScimToken.objects.filter(provider=provider.slug, revoked_at__isnull=True).update(revoked_at=now)
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
    ScimToken.objects.create(provider=provider.slug, organization=organization, token_hash=hash_token(plaintext),
                             created_at=now)
    return plaintext


def provider_for_token(token: str) -> Provider | None:
    """The provider this live token was issued to, while it still signs into the same organization."""
    if not token:
        return None
    row = ScimToken.objects.select_related("organization").filter(
        token_hash=hash_token(token), revoked_at__isnull=True).first()
    if row is None:
        return None
    provider = providers.by_slug(row.provider)
    if provider is None or provider.organization != row.organization.slug:
        return None
    return provider


def _organization(provider: Provider) -> Organization:
    organization = Organization.objects.select_related("operators").filter(slug=provider.organization).first()
    if organization is None:
        raise Refused("invalid", f"this server has no organization {provider.organization!r} for {provider.name}")
    return organization


def _source(provider: Provider) -> dict:
    return {"kind": "scim", "provider": provider.name, "issuer": provider.issuer}


# --- what a provider sees -------------------------------------------------------------------


def people(provider: Provider):
    """The people of the provider's organization it has not deleted."""
    return (get_user_model().objects.filter(member__organization__slug=provider.organization)
            .exclude(provisioned__deleted_at__isnull=False))


def groups(provider: Provider):
    return organization_groups(_organization(provider))


def external_id(user) -> str | None:
    row = ProvisionedPerson.objects.filter(user=user).first()
    return (row.external_id or None) if row is not None else None


def _person(provider: Provider, user_id) -> object:
    user = people(provider).filter(pk=user_id).first() if str(user_id).isdigit() else None
    if user is None:
        raise Refused("invalid", f"no person with id {user_id!r} here")
    return user


# --- people ---------------------------------------------------------------------------------


def _names(first_name: str, last_name: str) -> tuple[str, str]:
    issues = display_name_issues("givenName", first_name) + display_name_issues("familyName", last_name)
    if issues:
        raise Refused("invalid", "; ".join(issues))
    return first_name[:150], last_name[:150]


def _same_address(user_name: str, emails: list[str]) -> None:
    different = sorted({normalized_email(email) for email in emails} - {normalized_email(user_name)})
    if different:
        raise Refused("mutability", f"emails may only hold the userName {normalized_email(user_name)}: a person's "
                                    f"email address here is who they are (not {', '.join(different)})")


@transaction.atomic
def add(provider: Provider, *, user_name: str, emails: list[str] = (), first_name: str = "", last_name: str = "",
        active: bool = True, external_id: str = ""):
    """A new person of the provider's organization, known by `user_name` (their email address)."""
    organization = _organization(provider)
    if email_issues(user_name):
        raise Refused("invalid", f"userName is the person's email address here: {'; '.join(email_issues(user_name))}")
    _same_address(user_name, emails)
    first_name, last_name = _names(first_name, last_name)
    if existing_account(user_name) is not None:
        raise Refused("uniqueness", f"a person with the userName {normalized_email(user_name)} already exists")
    actor = provider_actor(provider)
    try:
        user = add_person(organization=organization, email=user_name, first_name=first_name, last_name=last_name,
                          actor=actor, source=_source(provider))
    except (IdentityRefused, OrganizationError) as error:
        raise Refused("invalid", str(error)) from error
    ProvisionedPerson.objects.create(user=user, issuer=provider.issuer, external_id=external_id[:255],
                                     created_at=clock.now())
    if not active:
        leavers.deactivate(user, actor=actor, reason=f"created inactive by {provider.name} (SCIM)")
    return get_user_model().objects.get(pk=user.pk)


@transaction.atomic
def change(provider: Provider, user, *, user_name: str | None = None, emails: list[str] | None = None,
           first_name: str | None = None, last_name: str | None = None, active: bool | None = None,
           external_id: str | None = None):
    """Change what is given (None: left as it is). The userName and the address may not change."""
    organization = _organization(provider)
    user = people(provider).select_related("member").get(pk=user.pk)
    if user_name is not None and normalized_email(user_name) != user.email:
        raise Refused("mutability", f"userName is the person's email address here and stays {user.email}")
    if emails is not None:
        _same_address(user.email, emails)
    first, last = _names(user.first_name if first_name is None else first_name,
                         user.last_name if last_name is None else last_name)
    actor = provider_actor(provider)
    if (first, last) != (user.first_name, user.last_name):
        change_person(member=user.member, groups=list(organization_groups(organization).filter(user=user)),
                      operator=user.groups.filter(pk=organization.operators_id).exists(),
                      first_name=first, last_name=last, actor=actor, source=_source(provider))
    if external_id is not None:
        ProvisionedPerson.objects.update_or_create(
            user=user, defaults={"external_id": external_id[:255]},
            create_defaults={"issuer": provider.issuer, "external_id": external_id[:255], "created_at": clock.now()})
    if active is False:
        leavers.deactivate(user, actor=actor, reason=f"deactivated by {provider.name} (SCIM)")
    elif active is True:
        leavers.reactivate(user, actor=actor, reason=f"switched on by {provider.name} (SCIM)")
    return get_user_model().objects.get(pk=user.pk)


@transaction.atomic
def delete(provider: Provider, user) -> None:
    """Deactivate the person and hide them from the provider's SCIM view; their history stays."""
    user = people(provider).get(pk=user.pk)
    leavers.deactivate(user, actor=provider_actor(provider), reason=f"deleted by {provider.name} (SCIM)")
    ProvisionedPerson.objects.update_or_create(
        user=user, defaults={"deleted_at": clock.now()},
        create_defaults={"issuer": provider.issuer, "created_at": clock.now(), "deleted_at": clock.now()})


# --- groups ---------------------------------------------------------------------------------


@transaction.atomic
def add_group(provider: Provider, *, name: str, member_ids: list = ()) -> Group:
    organization = _organization(provider)
    name = name.strip()
    if not name or display_name_issues("displayName", name) or len(name) > 150:
        raise Refused("invalid", "displayName is a group's name: 1 to 150 characters, nothing hidden")
    if Group.objects.filter(name=name).exists():
        raise Refused("uniqueness", f"a group named {name!r} already exists")
    try:
        group = organization_group(organization, name)
    except OrganizationError as error:
        raise Refused("uniqueness", str(error)) from error
    change_members(provider, group, add=member_ids)
    return group


@transaction.atomic
def change_members(provider: Provider, group: Group, *, add=(), remove=(), replace=None) -> None:
    """Put people in the group and take them out (`replace`: exactly these); each person whose
    groups changed is one `person_changed` event with the provider as its source. An id that is
    not a person of the organization refuses the whole change."""
    organization = _organization(provider)
    group = groups(provider).get(pk=group.pk)
    added = {user.pk: user for user in (_person(provider, user_id) for user_id in add)}
    removed = {user.pk: user for user in (_person(provider, user_id) for user_id in remove)}
    if replace is not None:
        wanted = {user.pk: user for user in (_person(provider, user_id) for user_id in replace)}
        added.update(wanted)
        removed.update({user.pk: user for user in people(provider).filter(groups=group) if user.pk not in wanted})
    for user_id in sorted(set(added) | set(removed)):
        user = added.get(user_id) or removed[user_id]
        own = list(organization_groups(organization).filter(user=user))
        after = [g for g in own if g.pk != group.pk] + ([group] if user_id in added else [])
        if {g.pk for g in after} == {g.pk for g in own}:
            continue
        member = Member.objects.select_related("organization__operators", "user").get(user=user)
        change_person(member=member, groups=after, operator=user.groups.filter(pk=organization.operators_id).exists(),
                      first_name=user.first_name, last_name=user.last_name, actor=provider_actor(provider),
                      source=_source(provider))


def rename_group(provider: Provider, group: Group, name: str) -> None:
    """Groups are named where processes bind roles to them: a provider may not rename one."""
    if name.strip() != group.name:
        raise Refused("mutability", f"a group's displayName is fixed here (processes bind roles to it by name); "
                                    f"create a group named {name.strip()!r} instead of renaming {group.name!r}")


def _bound(organization: Organization, group: Group) -> list[str]:
    versions = ProcessVersion.objects.filter(process__organization=organization).values_list("process__name",
                                                                                           "bindings")
    return sorted({process for process, bindings in versions if group.name in (bindings or {}).values()})


@transaction.atomic
def delete_group(provider: Provider, group: Group) -> None:
    """Take everyone out (audited) and delete the group, unless a process binds a role to it."""
    organization = _organization(provider)
    group = groups(provider).get(pk=group.pk)
    bound = _bound(organization, group)
    if bound:
        raise Refused("mutability", f"the group {group.name!r} is bound to the process "
                                    f"{', '.join(bound)}: bind those roles to another group first")
    change_members(provider, group, replace=[])
    group.delete()
