"""Who a person is, from the verified claims of a provider's ID token (issue 25, point 2).

- Matched by the provider's `sub` (ProviderAccount, per issuer); an email address alone never
  matches an existing account, unless the provider marks it verified (`email_verified`) and the
  provider's `link_verified_email` allows linking, or the provider itself created the person over
  SCIM with that address (sso/provisioning.py).
- Created on first sign-in when the provider's `create_users` is on; refused otherwise.
- Groups from the provider's groups claim, through its group map, replaced on every sign-in (left
  to admins when the token carries no such claim); only groups that exist in the organization are
  given. The operator flag from its operator group when one is named. Each change is an audit event whose
  actor is the provider (kernel/people.py writes them).

The protocol (state, PKCE, nonce, signature, issuer, audience, expiry) was checked before this is
called (sso/oidc.py); nothing here trusts anything but those claims.
"""

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from kernel import audit, clock
from kernel.identity_names import email_issues, normalized_email
from kernel.models import ActorKind, Member, Organization
from kernel.organizations import IdentityRefused, OrganizationError
from kernel.people import add_person, change_person, existing_account, organization_groups

from .models import ProviderAccount, ProvisionedPerson
from .providers import Provider


@dataclass
class Refused(Exception):
    """A sign-in that ends on a page saying why: `code` for tests and support, `message` for the person."""

    code: str
    message: str

    def __str__(self):
        return f"{self.code}: {self.message}"


def provider_actor(provider: Provider) -> audit.Actor:
    return audit.Actor(ActorKind.SERVER, provider.source)


def _source(provider: Provider) -> dict:
    return {"kind": "oidc", "provider": provider.name, "issuer": provider.issuer}


def provider_groups(provider: Provider, claims: dict) -> list[str] | None:
    """The provider's groups claim as a list of names (a single string counts as one group); None
    when the token carries no such claim (Google's carry none): groups are then left to admins."""
    value = claims.get(provider.groups_claim)
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(item) for item in value if isinstance(item, str | int)]
    return []


def _organization(provider: Provider) -> Organization:
    organization = Organization.objects.select_related("operators").filter(slug=provider.organization).first()
    if organization is None:
        raise Refused("no_organization", f"This server has no organization {provider.organization!r} for "
                                         f"{provider.name} to sign people into. Tell your administrator.")
    return organization


def _linked_user(provider: Provider, subject: str, claims: dict, organization: Organization):
    """The account this `sub` is already tied to, else one an allowed verified email links, else None."""
    account = ProviderAccount.objects.select_related("user").filter(issuer=provider.issuer, subject=subject).first()
    if account is not None:
        return account.user, account
    # A person this provider manages over SCIM is who it says they are: linked by the address it gave
    # (their userName), from the ID token's email or, Entra ID's only one, preferred_username; not
    # one another provider already signs in.
    for claim in ("email", "preferred_username"):
        named = normalized_email(str(claims.get(claim) or ""))
        provisioned = named and ProvisionedPerson.objects.select_related("user").filter(
            issuer=provider.issuer, deleted_at__isnull=True, user__email=named,
            user__member__organization=organization, user__provider_accounts__isnull=True).first()
        if provisioned:
            return provisioned.user, None
    email = normalized_email(str(claims.get("email") or ""))
    if email and provider.link_verified_email and claims.get("email_verified") is True:
        user = existing_account(email)
        if user is not None and Member.objects.filter(user=user, organization=organization).exists():
            return user, None
    return None, None


@transaction.atomic
def sign_in(provider: Provider, claims: dict):
    """The Django user these verified claims are, created or updated; Refused when they may not sign in."""
    subject = str(claims.get("sub") or "")
    if not subject:
        raise Refused("no_subject", f"{provider.name} did not say who you are (no subject). Try again, or tell "
                                    "your administrator.")
    organization = _organization(provider)
    user, account = _linked_user(provider, subject, claims, organization)
    email = normalized_email(str(claims.get("email") or ""))
    names = {"first_name": str(claims.get("given_name") or "")[:150], "last_name": str(claims.get("family_name") or "")[:150]}
    theirs = provider_groups(provider, claims)
    groups = list(organization_groups(organization).filter(name__in=provider.groups_here(theirs or [])))
    actor, source = provider_actor(provider), _source(provider)
    now = clock.now()
    if user is None:
        if not provider.create_users:
            raise Refused("no_account", f"There is no account here for {email or 'you'} yet. Ask your "
                                        "administrator to add you, then sign in again.")
        if not email or email_issues(email):
            raise Refused("no_email", f"{provider.name} did not give a usable email address for you, and "
                                      "people here are known by theirs. Tell your administrator.")
        if existing_account(email) is not None:
            raise Refused("email_taken", f"An account with the email address {email} already exists here, and "
                                         f"{provider.name} has not signed it in before. Ask your administrator "
                                         "to link the two.")
        operator = bool(provider.operator_group) and provider.operator_group in (theirs or [])
        try:
            user = add_person(organization=organization, email=email, groups=groups, operator=operator,
                              actor=actor, source=source, **names)
        except (IdentityRefused, OrganizationError) as error:
            raise Refused("not_created", f"Your account could not be made here: {error}. Tell your "
                                         "administrator.") from error
    else:
        member = Member.objects.select_related("organization__operators", "user").filter(user=user).first()
        if member is None or member.organization_id != organization.id:
            raise Refused("other_organization", f"Your account here belongs to another organization than the one "
                                                f"{provider.name} signs into. Tell your administrator.")
        if not user.is_active:
            raise Refused("deactivated", "Your account here is switched off. If you still work here, ask your "
                                         "administrator to switch it on again.")
        if theirs is None:  # no groups claim: what admins set stays
            groups = list(organization_groups(organization).filter(user=user))
        operator = (provider.operator_group in theirs if provider.operator_group and theirs is not None
                    else user.groups.filter(pk=organization.operators_id).exists())
        change_person(member=member, groups=groups, operator=operator, actor=actor, source=source,
                      first_name=names["first_name"] or user.first_name, last_name=names["last_name"] or user.last_name)
    if account is None:
        account = ProviderAccount.objects.create(organization=organization, user=user, issuer=provider.issuer,
                                                 subject=subject, email=email, created_at=now, last_sign_in_at=now)
    else:
        account.email, account.last_sign_in_at = email, now
        account.save(update_fields=["email", "last_sign_in_at"])
    return get_user_model().objects.get(pk=user.pk)
