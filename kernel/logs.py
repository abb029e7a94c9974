"""How log lines are written (issue 22, point 4): one JSON object per line (LOG_FORMAT=json, a
deployment's default), or readable text (LOG_FORMAT=text, the default of ./dev run and of DEBUG).

A small formatter of our own rather than python-json-logger: the lines' fields are a fixed set the
server writes itself (kernel/observe.py hands them over as `extra={"fields": {...}}`), nothing is
picked up from arbitrary record attributes, and it costs one json.dumps per line on the hot path.
"""

import datetime as dt
import json
import logging

# Loggers of the structured lines: one per HTTP request, per tool call, per sweep. They log at INFO
# whatever LOG_LEVEL says of the rest (settings.LOGGING).
ACTIVITY_LOGGERS = ("agentprocess.http", "agentprocess.tools", "agentprocess.sweeps")


# Made once: json.dumps builds an encoder per call. Compact, and any value it does not know is text.
_encode = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False, separators=(",", ":")).encode


def _time(record: logging.LogRecord) -> str:
    return dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    """{"time", "level", "logger", "message", …the line's fields, "exception"?} on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": _time(record), "level": record.levelname, "logger": record.name,
                "message": record.getMessage()}
        fields = getattr(record, "fields", None)
        if fields:
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return _encode(line)


class TextFormatter(logging.Formatter):
    """`time LEVEL logger: message key=value …` for a person reading a terminal."""

    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = getattr(record, "fields", None)
        if not fields:
            return text
        head, newline, rest = text.partition("\n")  # an exception's traceback stays below the line
        pairs = " ".join(f"{key}={value}" for key, value in fields.items() if value is not None)
        return f"{head} {pairs}{newline}{rest}"


def configuration(log_format: str, level: str) -> dict:
    """settings.LOGGING: every line through one handler on stderr, in `log_format`."""
    if log_format not in ("json", "text"):
        raise ValueError(f"LOG_FORMAT must be json or text, not {log_format!r}")
    formatter = {"()": f"kernel.logs.{'JsonFormatter' if log_format == 'json' else 'TextFormatter'}"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"line": formatter},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "line"}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {name: {"level": "INFO"} for name in ACTIVITY_LOGGERS},
    }
