"""The settings blocks of README.md (`<!-- settings block: NAME -->` above an ```ini fence), read
the way agentprocess/settings.py reads the environment (django-environ's casts, by the type of
each setting), so the tests run with what the README tells people to set."""

import json
import re
from pathlib import Path

import environ
from django.conf import settings

README = Path(__file__).resolve().parents[2] / "README.md"
JSON_SETTINGS = {"OIDC_PROVIDERS"}  # env.json in settings.py


def block(name: str) -> dict[str, str]:
    found = re.search(rf"<!-- settings block: {re.escape(name)} -->\n```ini\n(.*?)\n```", README.read_text(), re.S)
    assert found, f"README.md has no settings block {name!r}"
    pairs = (line.split("=", 1) for line in found.group(1).splitlines() if line.strip())
    return {key.strip(): value.strip() for key, value in pairs}


def apply(django_settings, name: str, **overrides) -> dict[str, object]:
    """Set the block's settings (cast as settings.py casts them), then `overrides`; returns what was set."""
    values = {}
    for key, raw in block(name).items():
        if key in JSON_SETTINGS:
            values[key] = json.loads(raw)
            continue
        cast = {bool: bool, list: list, float: float, int: int}.get(type(getattr(settings, key)), str)
        values[key] = environ.Env.parse_value(raw, cast)
    values.update(overrides)
    for key, value in values.items():
        setattr(django_settings, key, value)
    return values
