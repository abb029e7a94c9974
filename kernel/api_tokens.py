"""API tokens issued and revoked, each with its audit event, wherever it happens (issue 29): the
browser's /tokens/ page, the command line (create_identity, setup_demo) and the admin's revoke
action write the same `token_created` and `token_revoked` events, naming who did it."""

from django.utils import timezone

from . import audit, clock
from .models import ApiToken, EventKind


def issue(*, organization, label: str, actor: audit.Actor, user=None, agent=None) -> tuple[ApiToken, str]:
    """A new token (row, plaintext: shown once, never stored), recorded as created by `actor`."""
    row, plaintext = ApiToken.issue(organization=organization, user=user, agent=agent, label=label)
    audit.record(EventKind.TOKEN_CREATED, organization_id=organization.id, actor=actor, at=clock.now(),
                 data={"token": row.pk, "label": row.label})
    return row, plaintext


def revoke(row: ApiToken, *, actor: audit.Actor) -> None:
    """Revoke a live token (it stops working at once), recorded as revoked by `actor`; a revoked one
    stays as it is."""
    if row.revoked_at is not None:
        return
    row.revoked_at = timezone.now()
    row.save(update_fields=["revoked_at"])
    audit.record(EventKind.TOKEN_REVOKED, organization_id=row.organization_id, actor=actor, at=clock.now(),
                 data={"token": row.pk, "label": row.label})
