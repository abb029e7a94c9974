"""Every envelope the suite receives is validated against the spec's JSON Schemas (tools.md wins
where they disagree; the one adjustment is noted below)."""

import copy
import json

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from .spec import SCHEMAS, spec_present

_validators: dict[str, Draft202012Validator] = {}


def _registry() -> Registry:
    resources = []
    for path in SCHEMAS.rglob("*.json"):
        schema = json.loads(path.read_text())
        if "$id" in schema:
            resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


def _load(relative: str) -> dict:
    schema = json.loads((SCHEMAS / relative).read_text())
    if relative == "tools/describe.result.json":
        # check-1 §5 and the issue: the check* limits are listed only while an evaluator is
        # configured (and check-1 is in profiles); the schema lists them as always required.
        schema = copy.deepcopy(schema)
        schema["properties"]["limits"]["required"] = ["runDataBytes"]
    return schema


def validator(relative: str) -> Draft202012Validator:
    if relative not in _validators:
        _validators[relative] = Draft202012Validator(_load(relative), registry=_registry())
    return _validators[relative]


def check_envelope(tool: str, envelope: dict) -> None:
    """Raise AssertionError when the envelope breaks the schema of the tool's result or of tool-error."""
    if not spec_present():
        return
    assert isinstance(envelope, dict) and isinstance(envelope.get("ok"), bool), envelope
    if envelope["ok"]:
        assert set(envelope) == {"ok", "data"}, envelope
        target, body = f"tools/{tool}.result.json", envelope["data"]
        if tool == "describe" and "check-1" in body.get("profiles", []):
            target = "tools/describe.result.json#full"
    else:
        assert set(envelope) == {"ok", "error"}, envelope
        target, body = "tool-error.json", envelope["error"]
    if target.endswith("#full"):
        v = Draft202012Validator(json.loads((SCHEMAS / "tools/describe.result.json").read_text()))
    else:
        v = validator(target)
    errors = sorted(v.iter_errors(body), key=lambda e: list(e.absolute_path))
    assert not errors, f"{tool} envelope breaks {target}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])
