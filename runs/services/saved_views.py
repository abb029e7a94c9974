"""A person's saved inbox views (issue 15, point 2): a name and the view's query string.

Saving under a name the person already uses replaces that view, so "save" is also "update".
"""

from django.db import IntegrityError, transaction

from kernel.errors import Issue, invalid, not_found
from kernel.identity import Identity

from ..models import SavedView

NAME_LENGTH = 80
QUERY_LENGTH = 2000
MOST_VIEWS = 30


def views_of(identity: Identity) -> list[SavedView]:
    return list(SavedView.objects.filter(user=identity.user, organization=identity.organization))


@transaction.atomic
def save(*, identity: Identity, name: str, query: str, now) -> SavedView:
    name = " ".join((name or "").split())
    problems = []
    if not name:
        problems.append(Issue("name", "give the view a name", "missing"))
    elif len(name) > NAME_LENGTH:
        problems.append(Issue("name", f"at most {NAME_LENGTH} characters", "too_long"))
    if len(query) > QUERY_LENGTH:
        problems.append(Issue("filters", f"at most {QUERY_LENGTH} characters of filters", "too_long"))
    if problems:
        raise invalid("the view was not saved", problems)
    existing = SavedView.objects.select_for_update().filter(user=identity.user, name=name).first()
    if existing is not None:
        existing.query = query
        existing.save(update_fields=["query"])
        return existing
    if SavedView.objects.filter(user=identity.user).count() >= MOST_VIEWS:
        raise invalid("the view was not saved", [Issue("name", f"at most {MOST_VIEWS} saved views; delete one first", "too_many")])
    try:
        with transaction.atomic():
            return SavedView.objects.create(organization=identity.organization, user=identity.user, name=name,
                                            query=query, created_at=now)
    except IntegrityError:  # the same name saved at the same moment in another tab: keep one
        view = SavedView.objects.get(user=identity.user, name=name)
        view.query = query
        view.save(update_fields=["query"])
        return view


@transaction.atomic
def delete(*, identity: Identity, view_id: int) -> SavedView:
    view = SavedView.objects.filter(pk=view_id, user=identity.user).first()
    if view is None:
        raise not_found(f"no saved view {view_id} of yours")
    view.delete()
    return view
