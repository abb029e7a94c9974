"""JSON that keeps every number exactly as it was sent (spec §2.3: "Numbers are JSON numbers; a
server MUST NOT round them").

A JSON number that a double holds exactly as written (0.1, 48000, 1e21 …: almost every number)
is read as a Python float or int, as usual. One a double would round (3.14159265358979323846,
1e-400, a decimal of 30 digits) is read as a Decimal with all its digits, and written back as
that number: stored, hashed into the snapshot and returned without losing a digit. Writing takes
the standard library's fast path and falls back to simplejson only when a Decimal is present.

Used for run data everywhere: the REST and MCP bodies, the JSON columns that hold run data
(`Encoder` / `Decoder`), the snapshot and size of run data, idempotency fingerprints, exports.
"""

import json
import math
from decimal import Decimal, InvalidOperation

import simplejson


def number(text: str) -> float | Decimal:
    """A JSON number literal that is not an integer: a float when a double holds it exactly as
    written, else a Decimal with every digit."""
    value = float(text)
    try:
        if math.isfinite(value) and Decimal(repr(value)) == Decimal(text):
            return value
        return Decimal(text)
    except InvalidOperation:  # not reachable for a JSON number literal; keep the float
        return value


def loads(text: str | bytes):
    if isinstance(text, bytes | bytearray):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    return _decoder.decode(text)


def dumps(value, **options) -> str:
    try:
        return json.dumps(value, **options)
    except TypeError:
        # A Decimal (or something no JSON can hold: simplejson refuses that the same way).
        return simplejson.dumps(value, use_decimal=True, **options)


def plain(value):
    """The same data with every Decimal as the nearest float: for consumers that cannot carry an
    exact number (the MCP SDK's structured result); the JSON text beside it stays exact."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


class Encoder(json.JSONEncoder):
    """For JSONField(encoder=…): the standard encoder (C speed-ups and all); simplejson only for
    a document that holds a Decimal."""

    def encode(self, value) -> str:
        try:
            return super().encode(value)
        except TypeError:
            options = {"ensure_ascii": self.ensure_ascii, "sort_keys": self.sort_keys, "indent": self.indent}
            if self.item_separator != ", " or self.key_separator != ": ":
                options["separators"] = (self.item_separator, self.key_separator)
            return simplejson.dumps(value, use_decimal=True, **options)


_decoder = json.JSONDecoder(parse_float=number)  # built once: json.loads(…, parse_float=…) builds one a call


class Decoder(json.JSONDecoder):
    """For JSONField(decoder=…): numbers read as `number` reads them."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("parse_float", number)
        super().__init__(*args, **kwargs)
