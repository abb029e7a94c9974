"""Opaque keyset cursors: base64url JSON of the last row's sort key."""

import base64
import datetime as dt
import json

from .errors import invalid


def encode(*values) -> str:
    plain = [v.isoformat() if isinstance(v, dt.datetime) else v for v in values]
    return base64.urlsafe_b64encode(json.dumps(plain, separators=(",", ":")).encode()).decode().rstrip("=")


def decode(cursor: str, *types) -> list:
    """Values of a cursor made by encode(), converted to `types` (datetime or str)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(values, list) or len(values) != len(types):
            raise ValueError
        return [dt.datetime.fromisoformat(v) if t is dt.datetime else t(v) for v, t in zip(values, types, strict=True)]
    except (ValueError, TypeError, json.JSONDecodeError) as error:
        raise invalid("the cursor is not one this server gave out", ["cursor: not a cursor from this server"]) from error
