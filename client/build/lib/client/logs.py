"""Structured logs: every record of this package carries an `event` and its ids as `extra` fields;
`JsonLines` writes each record as one JSON object a line (for a log shipper, or to read in a test).

    import logging, sys
    from client.logs import use_json_lines
    use_json_lines(sys.stderr, level=logging.INFO)
"""

from __future__ import annotations

import datetime as dt
import json
import logging

# The attributes every LogRecord has; anything else on a record came in through `extra`.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


def extra_fields(record: logging.LogRecord) -> dict:
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {"at": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
                "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage(),
                **extra_fields(record)}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def use_json_lines(stream, level: int = logging.INFO, logger: str = "client") -> logging.Handler:
    """Send this package's records to `stream` as JSON lines; returns the handler (to remove it)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    target = logging.getLogger(logger)
    target.addHandler(handler)
    target.setLevel(level)
    return handler
