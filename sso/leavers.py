"""A person who left (issue 25, point 4): deactivated once, with everything they held let go.

- their account is switched off: every session of theirs ends at its next request (both
  authentication backends reload the person and refuse an inactive one), bearer and OAuth tokens
  stop resolving (kernel/identity.py refuses inactive people);
- their personal API tokens are revoked (each a `token_revoked` event) and their OAuth access and
  refresh tokens revoked at django-oauth-toolkit;
- the open work items they held are released to their groups (each an `item_released` event);
- notices skip them (runs/services/notifications.py sends to active people only);
- one `person_deactivated` event says who did it and why.

`manage.py deactivate_leavers --days N` applies it to people an identity provider signed in who
have not signed in for N days (OIDC_DEACTIVATE_AFTER_DAYS), for providers without provisioning.
"""

import datetime as dt

from django.contrib.auth import get_user_model
from django.db import transaction
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from kernel import api_tokens, audit, clock
from kernel.models import ApiToken, EventKind, Member
from runs.models import WorkItem, WorkItemState

from .models import ProviderAccount


@transaction.atomic
def deactivate(user, *, actor: audit.Actor, reason: str) -> bool:
    """Switch a person off and let go of what they held; False when they already were off."""
    user = get_user_model().objects.select_for_update().get(pk=user.pk)
    if not user.is_active:
        return False
    member = Member.objects.filter(user=user).first()
    now = clock.now()
    user.is_active = False
    user.save(update_fields=["is_active"])
    tokens = list(ApiToken.objects.filter(user=user, revoked_at__isnull=True))
    for row in tokens:
        api_tokens.revoke(row, actor=actor)
    oauth = 0
    for access in get_access_token_model().objects.filter(user=user):
        access.revoke()
        oauth += 1
    for refresh in get_refresh_token_model().objects.filter(user=user, revoked__isnull=True):
        refresh.revoke()
    released = []
    if member is not None and user.email:
        held = WorkItem.objects.select_for_update().filter(organization_id=member.organization_id,
                                                           state=WorkItemState.OPEN, held_by__iexact=user.email)
        for item in held:
            previous = item.held_by
            item.held_by, item.held_at, item.assigned_by = None, None, None
            item.save(update_fields=["held_by", "held_at", "assigned_by"])
            released.append(item.id)
            audit.record(EventKind.ITEM_RELEASED, organization_id=item.organization_id, actor=actor, at=now,
                         run_id=item.run_id, step_id=item.step_id, work_item_id=item.id,
                         data={"heldBy": previous, "reason": "person deactivated"})
    if member is not None:
        audit.record(EventKind.PERSON_DEACTIVATED, organization_id=member.organization_id, actor=actor, at=now,
                     data={"email": user.email, "reason": reason, "tokensRevoked": len(tokens),
                           "oauthTokensRevoked": oauth, "itemsReleased": released})
    return True


@transaction.atomic
def reactivate(user, *, actor: audit.Actor, reason: str) -> bool:
    """Switch a deactivated person on again (their identity provider says they are back); False when
    they were on. What deactivating let go of stays let go: revoked tokens stay revoked, released
    work stays with the group."""
    user = get_user_model().objects.select_for_update().get(pk=user.pk)
    if user.is_active:
        return False
    user.is_active = True
    user.save(update_fields=["is_active"])
    member = Member.objects.filter(user=user).first()
    if member is not None:
        audit.record(EventKind.PERSON_REACTIVATED, organization_id=member.organization_id, actor=actor,
                     at=clock.now(), data={"email": user.email, "reason": reason})
    return True


def not_seen_since(days: float):
    """Active people an identity provider signed in whose last sign-in anywhere is older than `days`."""
    cutoff = clock.now() - dt.timedelta(days=days)
    recent = ProviderAccount.objects.filter(last_sign_in_at__gte=cutoff).values("user_id")
    return (get_user_model().objects.filter(is_active=True, provider_accounts__isnull=False)
            .exclude(pk__in=recent).distinct())


def deactivate_absent(days: float) -> list[str]:
    """Deactivate everyone `not_seen_since(days)`; the emails of those switched off."""
    actor = audit.Actor(audit.ActorKind.SERVER, "deactivate_leavers")
    done = []
    for user in not_seen_since(days):
        if deactivate(user, actor=actor, reason=f"not signed in for {days:g} days"):
            done.append(user.email)
    return done
