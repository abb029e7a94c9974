"""The one clock. Tests move time with `frozen(...)`/`advance(...)`; everything else calls now()."""

import contextlib
import datetime as dt
import threading

_offset = dt.timedelta(0)
_frozen: dt.datetime | None = None
_lock = threading.Lock()


def now() -> dt.datetime:
    if _frozen is not None:
        return _frozen
    return dt.datetime.now(dt.UTC) + _offset


def advance(delta: dt.timedelta) -> None:
    """Move the clock forward (tests)."""
    global _offset, _frozen
    with _lock:
        if _frozen is not None:
            _frozen = _frozen + delta
        else:
            _offset += delta


@contextlib.contextmanager
def frozen(at: dt.datetime):
    """Pin the clock at `at` (tests); advance() moves the pinned instant."""
    global _frozen
    previous = _frozen
    _frozen = at
    try:
        yield
    finally:
        _frozen = previous


def reset() -> None:
    global _offset, _frozen
    _offset = dt.timedelta(0)
    _frozen = None


def whole_second_up(moment: dt.datetime) -> dt.datetime:
    """The moment rounded up to a whole second, so that its `iso` text is never earlier."""
    return moment if not moment.microsecond else moment.replace(microsecond=0) + dt.timedelta(seconds=1)


def iso(moment: dt.datetime | None) -> str | None:
    """RFC 3339 in UTC with a Z, seconds precision, as the spec's examples show."""
    if moment is None:
        return None
    if moment.tzinfo is not dt.UTC:  # the database's datetimes are UTC already
        moment = moment.astimezone(dt.UTC)
    # isoformat is C code: a third of strftime's time, and four-digit years below 1000 too.
    return moment.replace(microsecond=0, tzinfo=None).isoformat() + "Z"
