from agentprocess import paging
from processes.models import Process

from .registry import tool

PAGE = 50


def process_entry(process: Process) -> dict:
    frontmatter = process.latest_version.frontmatter
    entry = {
        "name": process.name,
        "description": frontmatter["description"],
        "version": process.latest_version.number,
        "inputs": frontmatter.get("inputs") or {},
    }
    if frontmatter.get("requires"):
        entry["requires"] = frontmatter["requires"]
    return entry


@tool("list_processes", write=False, description="Published processes: name, description, version, inputs, requires.")
def list_processes(identity, arguments, now) -> dict:
    processes = Process.objects.filter(organization=identity.organization, latest_version__isnull=False)
    if arguments.get("cursor"):
        (after,) = paging.decode(arguments["cursor"], str)
        processes = processes.filter(name__gt=after)
    rows = list(processes.select_related("latest_version").order_by("name")[: PAGE + 1])
    next_cursor = paging.encode(rows[PAGE - 1].name) if len(rows) > PAGE else None
    return {"items": [process_entry(p) for p in rows[:PAGE]], "nextCursor": next_cursor}
