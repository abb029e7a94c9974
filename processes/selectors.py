"""Reads of published processes: the catalogue (list_processes) and a version by its number."""

from kernel import paging

from .definition import definitions_for
from .models import Process, ProcessVersion

CATALOGUE_PAGE = 50


def published(organization, *, cursor: str | None = None, page: int = CATALOGUE_PAGE):
    """([(process, its latest compiled definition)], next cursor) by name; one page, two queries."""
    processes = Process.objects.filter(organization=organization, latest_version__isnull=False)
    if cursor:
        (after,) = paging.decode(cursor, str)
        processes = processes.filter(name__gt=after)
    rows = list(processes.select_related("latest_version").only("name", "latest_version__number")
                .order_by("name")[: page + 1])
    next_cursor = paging.encode(rows[page - 1].name) if len(rows) > page else None
    rows = rows[:page]
    definitions = definitions_for(p.latest_version_id for p in rows)
    return [(p, definitions[p.latest_version_id]) for p in rows], next_cursor


def version_id(organization, *, process: str, number: int) -> int | None:
    """The id of a published version of the organization's process, by its number."""
    return (ProcessVersion.objects.filter(process__organization=organization, process__name=process, number=number)
            .values_list("pk", flat=True).first())
