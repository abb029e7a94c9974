"""Envelope validation against the spec's JSON Schemas (draft 2020-12), when a schema folder is given.

Without one, only the envelope itself is checked ({ok: true, data} or {ok: false, error: {code,
message, issues?}}), and the runner says so once.
"""

import copy
import json
from pathlib import Path

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

ERROR_CODES = {"invalid", "not_accepted", "stale", "conflict", "forbidden", "not_found", "retry"}


def envelope_problems(envelope) -> list[str]:
    """The spec's envelope (§4), whatever the schemas say."""
    if not isinstance(envelope, dict) or not isinstance(envelope.get("ok"), bool):
        return ["the answer is not an envelope {ok: true|false, …}"]
    if envelope["ok"]:
        return [] if set(envelope) == {"ok", "data"} else [f"an ok envelope has keys {sorted(envelope)}, not ok and data"]
    if set(envelope) != {"ok", "error"}:
        return [f"an error envelope has keys {sorted(envelope)}, not ok and error"]
    error = envelope["error"]
    problems = []
    if not isinstance(error, dict) or error.get("code") not in ERROR_CODES:
        problems.append(f"error.code is not one of the spec's codes: {error!r}"[:300])
    elif not isinstance(error.get("message"), str):
        problems.append("error.message is not a string")
    elif "issues" in error and not (isinstance(error["issues"], list)
                                    and all(isinstance(i, str) for i in error["issues"])):
        problems.append("error.issues is not a list of strings")
    return problems


class Schemas:
    def __init__(self, folder: Path | None):
        self.folder = folder
        self._validators: dict[str, Draft202012Validator] = {}
        self._registry = self._load_registry() if folder else None

    @property
    def present(self) -> bool:
        return self.folder is not None

    def _load_registry(self) -> Registry:
        resources = []
        for path in self.folder.rglob("*.json"):
            schema = json.loads(path.read_text())
            if "$id" in schema:
                resources.append((schema["$id"], Resource.from_contents(schema)))
        return Registry().with_resources(resources)

    def _validator(self, relative: str, relaxed_limits: bool) -> Draft202012Validator:
        key = f"{relative}#{relaxed_limits}"
        if key not in self._validators:
            schema = json.loads((self.folder / relative).read_text())
            if relaxed_limits:
                # check-1 §5: the check* limits are listed by a server that offers check-1; tools.md
                # (which wins) shows describe without them, and the schema requires them always.
                schema = copy.deepcopy(schema)
                schema["properties"]["limits"]["required"] = ["runDataBytes"]
            self._validators[key] = Draft202012Validator(schema, registry=self._registry)
        return self._validators[key]

    def problems(self, tool: str, envelope) -> list[str]:
        problems = envelope_problems(envelope)
        if problems or not self.present:
            return problems
        if envelope["ok"]:
            relative, body = f"tools/{tool}.result.json", envelope["data"]
            relaxed = tool == "describe" and "check-1" not in (body.get("profiles") or [])
        else:
            relative, body, relaxed = "tool-error.json", envelope["error"], False
        if not (self.folder / relative).exists():
            return [f"no schema {relative} for the tool {tool}"]
        errors = sorted(self._validator(relative, relaxed).iter_errors(body), key=lambda e: list(e.absolute_path))
        return [f"{relative}: /{'/'.join(map(str, e.absolute_path))}: {e.message}"[:400] for e in errors[:5]]
