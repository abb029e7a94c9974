from processes.selectors import published

from .registry import tool


def process_entry(process, definition) -> dict:
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
    rows, next_cursor = published(identity.organization, cursor=arguments.get("cursor"))
    return {"items": [process_entry(process, definition) for process, definition in rows], "nextCursor": next_cursor}
