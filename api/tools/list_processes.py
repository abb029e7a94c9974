from kernel import paging
from processes.definition import Definition, definitions_for
from processes.models import Process

from .registry import tool

PAGE = 50


def process_entry(process: Process, definition: Definition) -> dict:
    entry = {
        "name": process.name,
        "description": definition.description,
        "version": process.latest_version.number,
        "inputs": definition.inputs,  # in declaration order (compiled from the source text)
    }
    if definition.requires:
        entry["requires"] = definition.requires
    return entry


@tool("list_processes", write=False, description="Published processes: name, description, version, inputs, requires.")
def list_processes(identity, arguments, now) -> dict:
    processes = Process.objects.filter(organization=identity.organization, latest_version__isnull=False)
    if arguments.get("cursor"):
        (after,) = paging.decode(arguments["cursor"], str)
        processes = processes.filter(name__gt=after)
    rows = list(processes.select_related("latest_version").only("name", "latest_version__number")
                .order_by("name")[: PAGE + 1])
    next_cursor = paging.encode(rows[PAGE - 1].name) if len(rows) > PAGE else None
    rows = rows[:PAGE]
    definitions = definitions_for(p.latest_version_id for p in rows)
    return {"items": [process_entry(p, definitions[p.latest_version_id]) for p in rows], "nextCursor": next_cursor}
