"""OpenAPI for the REST transport: drf-spectacular sees one view, POST /api/v1/tools/{tool}; this
hook replaces it with one operation per offered tool, whose request and response bodies are the
spec's own JSON Schemas (OpenAPI 3.1 speaks JSON Schema 2020-12)."""

import copy
import json

from api.tools import TOOLS
from api.tools.registry import SCHEMAS
from kernel.capabilities import offered_tools

ERROR_STATUSES = {
    "400": "invalid: the arguments break the tool's schema, a token does not verify, or the body is not JSON",
    "401": "invalid: no, a malformed or an unknown bearer credential (with a WWW-Authenticate challenge)",
    "403": "forbidden for this identity",
    "404": "not_found in this organization",
    "409": "conflict or stale",
    "422": "not_accepted: every issue at once",
    "503": "retry with the same requestId",
}


def _localize(schema: dict, prefix: str, components: dict) -> dict:
    """Move the schema's $defs into components and point its $refs there."""
    schema = copy.deepcopy(schema)
    defs = schema.pop("$defs", {})
    schema.pop("$schema", None)
    schema.pop("$id", None)
    names = {f"#/$defs/{name}": f"#/components/schemas/{prefix}_{name.strip('_')}" for name in defs}

    def rewrite(node):
        if isinstance(node, dict):
            return {k: (names.get(v, v) if k == "$ref" else rewrite(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    for name, definition in defs.items():
        components[f"{prefix}_{name.strip('_')}"] = rewrite(definition)
    return rewrite(schema)


def expand_tool_paths(result, generator, request, public):
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["ToolError"] = {
        "type": "object",
        "properties": {"ok": {"const": False},
                       "error": _localize(json.loads((SCHEMAS / "tool-error.json").read_text()), "ToolError", components)},
        "required": ["ok", "error"],
        "additionalProperties": False,
    }
    result.setdefault("components", {})["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer", "description": "An agent or personal API token (apt_…)"}}
    paths = {path: item for path, item in result.get("paths", {}).items() if "{tool}" not in path}
    for name in offered_tools():
        tool = TOOLS[name]
        arguments = _localize(tool.arguments_schema, f"{name}_arguments", components)
        data = _localize(tool.result_schema, f"{name}_result", components)
        if name == "describe":
            # check-1 §5: the check* limits are listed only while an evaluator is configured.
            data["properties"]["limits"]["required"] = ["runDataBytes"]
        responses = {"200": {"description": "ok", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"ok": {"const": True}, "data": data},
            "required": ["ok", "data"], "additionalProperties": False}}}}}
        for status, description in ERROR_STATUSES.items():
            responses[status] = {"description": description, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/ToolError"}}}}
        paths[f"/api/v1/tools/{name}"] = {"post": {
            "operationId": name,
            "summary": tool.description,
            "tags": ["tools"],
            "security": [{"bearer": []}],
            # A tool whose arguments are all optional may be called with no body at all.
            "requestBody": {"required": bool(arguments.get("required")),
                            "content": {"application/json": {"schema": arguments}}},
            "responses": responses,
        }}
    result["paths"] = paths
    return result
