"""JSON that keeps every number exactly as it was sent (spec §2.3: "Numbers are JSON numbers; a
server MUST NOT round them"), written the same way on every database.

A JSON number that a double holds exactly and Python writes without an exponent (0.1, 48000,
1250.5 …: almost every number) is read as a Python float or int, as usual. Any other is read as a
`Number` (a Decimal with all its digits, written in plain notation) or, when it is a whole number,
an int: `1E+400` is 1 and 400 zeros, `1e-7` is 0.0000001. That is how PostgreSQL prints a jsonb
number, so SQLite and PostgreSQL store, hash into the snapshot and return the same text. Writing
takes the standard library's fast path and falls back to simplejson only when a Number is present.

PostgreSQL cannot hold every number: `stored` says which it refuses, and the tool layer refuses
those on every database (api/tools/registry.py), so both accept the same numbers.

Used for run data everywhere: the REST and MCP bodies, the JSON columns that hold run data
(`Encoder` / `Decoder`), the snapshot and size of run data, idempotency fingerprints, exports.
"""

import json
import math
from decimal import Decimal, InvalidOperation

import simplejson

# PostgreSQL stores a jsonb number as `numeric`, which holds at most this many digits before the
# decimal point and after it ("value overflows numeric format" beyond either).
DIGITS_BEFORE_POINT = 131072
DIGITS_AFTER_POINT = 16383
LIMIT = (f"at most {DIGITS_BEFORE_POINT} digits before the decimal point "
         f"and {DIGITS_AFTER_POINT} after")
# Python converts between int and text up to this many digits (sys.get_int_max_str_digits()); a
# longer whole number is a Number.
_INT_DIGITS = 4300


class Number(Decimal):
    """An exact number a double cannot hold, written in plain notation (no exponent)."""

    __slots__ = ()

    def __str__(self) -> str:
        return format(self, "f")


# Python writes a double without an exponent (`repr`) from 1e-4 up to 1e16: most numbers sent.
_PLAIN_FLOATS = (1e-4, 1e16)
# An exponent of 19 digits or more is too much for a Decimal: such a number reads as one just as
# far out, and is refused as that one is (`stored`).
_BEYOND = {"+": Number("1E+999999999999999999"), "-": Number("1E-999999999999999999")}


def number(text: str) -> float | int | Number:
    """A JSON number literal that is not an integer: a float when a double holds it exactly and
    Python writes it without an exponent, else the exact number (`exact`)."""
    value = float(text)
    if _PLAIN_FLOATS[0] <= abs(value) < _PLAIN_FLOATS[1] and Decimal(repr(value)) == Decimal(text):
        return value
    try:
        written = Decimal(text)
    except InvalidOperation:
        mantissa, _e, exponent = text.lower().partition("e")
        return _BEYOND["-" if exponent.startswith("-") else "+"] if mantissa.strip("-0.") else 0.0
    return exact(written) if written else 0.0  # every zero is 0.0: numeric has no negative zero


def integer(text: str) -> int | Number:
    """A JSON integer literal: an int, or a Number past Python's int digit limit."""
    return int(text) if len(text.lstrip("-")) <= _INT_DIGITS else Number(text)


def exact(value: Decimal) -> int | Number:
    """A finite Decimal as it is kept: a whole number written without a fraction is an int (when
    short enough for one), any other a Number. Never a float: no digit is lost."""
    if value.as_tuple().exponent >= 0 and value.adjusted() < _INT_DIGITS:
        return int(value)
    return value if type(value) is Number else Number(value)


def stored(value: int | float | Decimal) -> tuple[int | float | Decimal, str | None]:
    """(the number as it is stored, None), or (the number, why it cannot be stored exactly): the
    rule for every number of run data and filters. A number is stored as its JSON text reads."""
    if isinstance(value, float):
        if _PLAIN_FLOATS[0] <= abs(value) < _PLAIN_FLOATS[1]:
            return value, None
        if not math.isfinite(value):
            return value, "not a finite number"
        return (0.0, None) if not value else stored(number(repr(value)))
    if isinstance(value, int):
        return (value, None) if value.bit_length() < 14000 else stored(Number(value))  # 14000 bits: < 4300 digits
    if not value.is_finite():
        return value, "not a finite number"
    if not value:
        return (0 if value.as_tuple().exponent >= 0 else 0.0), None  # never -0
    if value.adjusted() >= DIGITS_BEFORE_POINT:
        return value, f"number too large to store exactly ({LIMIT})"
    if -value.as_tuple().exponent > DIGITS_AFTER_POINT:
        return value, f"number has too many digits after the decimal point to store exactly ({LIMIT})"
    return exact(value), None


def written_length(value: Number) -> int:
    """Characters of a Number's text, without writing it (1E+131071 is 131072 of them)."""
    exponent = value.as_tuple().exponent
    return (value < 0) + max(value.adjusted() + 1, 1) + (1 - exponent if exponent < 0 else 0)


def loads(text: str | bytes):
    if isinstance(text, bytes | bytearray):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    return _decode(text)


def _decode(text: str):
    try:
        return _decoder.decode(text)
    except json.JSONDecodeError:
        raise
    except ValueError:
        # An integer past Python's digit limit; read again with `integer` for every integer (slower,
        # so only then).
        return _long_decoder.decode(text)


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
_long_decoder = json.JSONDecoder(parse_float=number, parse_int=integer)


class Decoder(json.JSONDecoder):
    """For JSONField(decoder=…): a column's text read as `loads` reads it."""

    def decode(self, text, *_args):
        return _decode(text)
