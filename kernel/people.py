"""Adding a person from admin: the account, their organization, groups and operator flag, and an
invitation mail whose link sets their first password.

The link is Django's password-reset link (token generator, uid), built from PUBLIC_BASE_URL like
the password-reset mails (workqueue/accounts.py), never from a request's Host header. It works
once (setting a password changes the hash the token is made from) and for PASSWORD_RESET_TIMEOUT.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from . import audit, clock
from .identity_names import display_name_issues, email_issues, normalized_email
from .models import EventKind, Member, Organization
from .organizations import IdentityRefused, OrganizationError


def existing_account(email: str):
    """The user already holding this email (or username), compared without case; None when free."""
    email = normalized_email(email)
    return get_user_model().objects.filter(Q(email__iexact=email) | Q(username__iexact=email)).first()


def duplicate_email_message(email: str) -> str:
    return (f"A person with the email address {normalized_email(email)} already exists. "
            "Find them under Members instead of adding them again.")


@transaction.atomic
def add_person(*, organization: Organization, email: str, first_name: str = "", last_name: str = "",
               groups: list[Group] = (), operator: bool = False, added_by=None, actor: audit.Actor | None = None,
               source: dict | None = None):
    """Create a person who can sign in once they set a password (none is set: the invitation's link
    sets it). Refuses an email address that is not valid or already taken (stored lower-cased), a
    name with hidden characters, and another organization's group. Recorded in the audit log with
    who added them (`added_by`, an admin user; `actor`, e.g. an identity provider, with its
    `source` in the event's data; else the command line)."""
    issues = (email_issues(email) + display_name_issues("first name", first_name)
              + display_name_issues("last name", last_name))
    if issues:
        raise IdentityRefused(issues)
    email = normalized_email(email)
    if existing_account(email) is not None:
        raise OrganizationError(duplicate_email_message(email))
    foreign = [group.name for group in groups
               if getattr(getattr(group, "organization_link", None), "organization_id", None) != organization.id]
    if foreign:
        raise OrganizationError(f"not groups of organization {organization.slug}: {', '.join(sorted(foreign))}")
    user = get_user_model().objects.create_user(username=email, email=email, first_name=first_name.strip(),
                                                last_name=last_name.strip())  # no password: unusable until set
    Member.objects.create(user=user, organization=organization)
    user.groups.add(*groups, *([organization.operators] if operator else []))
    audit.record(EventKind.PERSON_ADDED, organization_id=organization.id,
                 actor=_actor(added_by, actor), at=clock.now(),
                 data={"email": email, "groups": sorted(group.name for group in groups), "operator": operator,
                       **({"source": source} if source else {})})
    return user


def _actor(admin_user, actor: audit.Actor | None) -> audit.Actor:
    if actor is not None:
        return actor
    return audit.Actor.admin(admin_user) if admin_user is not None else audit.COMMAND_LINE


def organization_groups(organization: Organization):
    """The groups people of the organization are put in (its operators group is the operator flag)."""
    return Group.objects.filter(organization_link__organization=organization, operators_of__isnull=True)


@transaction.atomic
def change_person(*, member: Member, groups: list[Group], operator: bool, first_name: str, last_name: str,
                  changed_by=None, actor: audit.Actor | None = None, source: dict | None = None) -> bool:
    """Set a person's name, their groups of their organization and their operator flag; groups of
    no organization or another one are refused and left as they are. Who decides changes here, so
    a change is recorded in the audit log with the groups before and after. True when something
    changed."""
    organization, user = member.organization, member.user
    foreign = [group.name for group in groups
               if getattr(getattr(group, "organization_link", None), "organization_id", None) != organization.id]
    if foreign:
        raise OrganizationError(f"not groups of organization {organization.slug}: {', '.join(sorted(foreign))}")
    own = organization_groups(organization)
    before = sorted(own.filter(user=user).values_list("name", flat=True))
    was_operator = user.groups.filter(pk=organization.operators_id).exists()
    after = sorted(group.name for group in groups)
    user.groups.remove(*own.filter(user=user).exclude(pk__in=[group.pk for group in groups]))
    user.groups.add(*groups)
    (user.groups.add if operator else user.groups.remove)(organization.operators)
    named = (user.first_name, user.last_name) != (first_name.strip(), last_name.strip())
    if named:
        user.first_name, user.last_name = first_name.strip(), last_name.strip()
        user.save(update_fields=["first_name", "last_name"])
    if before == after and was_operator == operator:
        return named
    audit.record(EventKind.PERSON_CHANGED, organization_id=organization.id, actor=_actor(changed_by, actor),
                 at=clock.now(), data={"email": user.email, "groups": after, "groupsBefore": before,
                                       "operator": operator, "operatorBefore": was_operator,
                                       **({"source": source} if source else {})})
    return True


def invitation_link(user) -> str:
    """The absolute link that lets `user` set a password (Django's reset-confirm view)."""
    path = reverse("password_reset_confirm", kwargs={
        "uidb64": urlsafe_base64_encode(force_bytes(user.pk)), "token": default_token_generator.make_token(user)})
    return f"{settings.PUBLIC_BASE_URL}{path}"


def invitation_days() -> int:
    return max(1, round(settings.PASSWORD_RESET_TIMEOUT / 86400))


def send_invitation(user, *, organization: Organization, invited_by=None) -> None:
    """Mail `user` a fresh password-set link. Raises what the mail backend raises (SMTP down)."""
    inviter = (invited_by.get_full_name() or invited_by.email) if invited_by is not None else "An administrator"
    greeting = f"Hello {user.first_name}," if user.first_name else "Hello,"
    days = invitation_days()
    body = (
        f"{greeting}\n\n"
        f"{inviter} added you to {organization.name}, to work on its processes (approvals, tasks, reviews).\n\n"
        f"Choose your password here (the link works once, for {days} day{'s' if days != 1 else ''}):\n"
        f"{invitation_link(user)}\n\n"
        f"Then sign in at {settings.PUBLIC_BASE_URL}{reverse('login')} with your email address {user.email}.\n"
        "If the link has expired, ask your administrator to send a new invitation.\n"
    )
    send_mail(f"You are invited to {organization.name}", body, settings.DEFAULT_FROM_EMAIL, [user.email])
