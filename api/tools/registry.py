"""The tool layer every transport calls: REST, MCP and the browser inbox (in process).

A tool unpacks its arguments into a service's typed keyword arguments and presents the result:
a function (identity, arguments, now) -> result data. This module checks the arguments against
the tool's JSON Schema first (a broken schema is `invalid`, spec §6 rule 3), hands every write to
the unit of work (runs/services/writes.py: replay, prepare, transaction, idempotency record), and
turns everything into the spec's envelope.
"""

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, DataError, OperationalError
import jsonschema_rs
from jsonschema import Draft202012Validator

from kernel import clock, jsonio, observe
from kernel.capabilities import offered_tools
from kernel.errors import Issue, ToolError, invalid, not_found, retry
from kernel.identity import Identity
from runs.services import writes

from .page_tools import PAGE_TOOLS

log = logging.getLogger(__name__)
SCHEMAS = Path(__file__).resolve().parent.parent / "schemas" / "core-2"


@dataclass(frozen=True)
class Tool:
    name: str
    handler: Callable[[Identity, dict, object], dict]
    write: bool
    description: str
    # Look the requestId up before anything else (a write whose work must not be done twice).
    replay_first: bool = False
    # Work done before the write's transaction (a read that may refuse the call, asking the check
    # evaluator): (identity, arguments, now, write) -> what the handler gets as `prepared`. A
    # refusal it raises is answered like the write's own (a stored result for the requestId wins).
    prepare: Callable[[Identity, dict, object, writes.Write], object] | None = None

    @property
    def arguments_schema(self) -> dict:
        return argument_schema(self.name)

    @property
    def result_schema(self) -> dict:
        return json.loads((SCHEMAS / "tools" / f"{self.name}.result.json").read_text())


TOOLS: dict[str, Tool] = {}
_validators: dict[str, Draft202012Validator] = {}
_compiled_validators: dict[str, "jsonschema_rs.Draft202012Validator"] = {}


def tool(name: str, *, write: bool, description: str, replay_first: bool = False, prepare=None):
    def register(handler):
        TOOLS[name] = Tool(name=name, handler=handler, write=write, description=description,
                           replay_first=replay_first, prepare=prepare)
        return handler

    return register


def argument_schema(name: str) -> dict:
    return json.loads((SCHEMAS / "tools" / f"{name}.arguments.json").read_text())


def _validator(name: str) -> Draft202012Validator:
    validator = _validators.get(name)
    if validator is None:
        validator = _validators[name] = Draft202012Validator(argument_schema(name))
    return validator


def _compiled(name: str) -> jsonschema_rs.Draft202012Validator:
    validator = _compiled_validators.get(name)
    if validator is None:
        validator = _compiled_validators[name] = jsonschema_rs.Draft202012Validator(argument_schema(name))
    return validator


_EXACT_INT = 2**53


def _path(parts) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


_TYPE_NAMES = {"object": "object", "array": "list", "string": "string", "integer": "integer",
               "number": "number", "boolean": "boolean", "null": "null"}


def _issues_of(error) -> list[str]:
    """One line per schema violation, worded like the spec's issues (`limit: expected integer`)."""
    path, kind, expected, instance = _path(error.absolute_path), error.validator, error.validator_value, error.instance
    if kind == "required":
        return [f"{_join(path, name)}: missing" for name in expected if isinstance(instance, dict) and name not in instance]
    if kind == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        return [f"{_join(path, name)}: not an argument of this tool" if not path else f"{_join(path, name)}: not allowed"
                for name in sorted(set(instance) - allowed)]
    label = path or "arguments"
    if kind == "type":
        names = expected if isinstance(expected, list) else [expected]
        return [f"{label}: expected {' or '.join(_TYPE_NAMES.get(n, n) for n in names)}"]
    if kind == "enum":
        return [Issue(label, f"must be one of {', '.join(map(str, expected))}", "not_one_of")]
    if kind == "const":
        return [f"{label}: must be {expected}"]
    if kind == "minLength":
        return [f"{label}: must not be empty" if expected == 1 else f"{label}: at least {expected} characters"]
    if kind == "maxLength":
        return [Issue(label, f"at most {expected} characters", "too_long", limit=expected)]
    if kind in ("minimum", "exclusiveMinimum"):
        return [f"{label}: must be {'at least' if kind == 'minimum' else 'more than'} {expected}"]
    if kind in ("maximum", "exclusiveMaximum"):
        return [f"{label}: must be {'at most' if kind == 'maximum' else 'less than'} {expected}"]
    return [f"{label}: {error.message}"]


# Arguments nested deeper than this are refused (README "Limits"): nothing the protocol carries
# needs more, and rendering or hashing them stays bounded.
MAX_DEPTH = 64
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_problem(text: str) -> str | None:
    """Why a text cannot be stored or sent on as it is: PostgreSQL cannot store NUL, and a lone
    UTF-16 surrogate (a JSON escape like \\ud800 without its pair) is no character at all."""
    if "\x00" in text:
        return "must not contain NUL characters"
    found = _LONE_SURROGATE.search(text)
    return f"holds a lone surrogate (\\u{ord(found.group()):04x}), which is not a character" if found else None


def _value_issues(arguments) -> tuple[list[str], bool]:
    """Texts that cannot be stored (keys included), numbers that cannot be stored exactly and
    nesting past MAX_DEPTH, each with its place; and whether every number is a double or an integer
    a double holds exactly (what the compiled schema check reads the same as jsonschema). Every other number is put in the form it is stored
    in, in place (kernel/jsonio.py `stored`): SQLite and PostgreSQL then hold the same text, and
    neither meets a number it cannot hold. Iterative, so no depth of nesting can exhaust the stack."""
    issues, pending, written, plain = [], [(arguments, "", 0, None, None)], 0, True
    while pending:
        value, path, depth, container, slot = pending.pop()
        label = path or "arguments"
        if isinstance(value, str):
            problem = _text_problem(value)
            if problem:
                issues.append(f"{label}: {problem}")
        elif isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                issues.append(f"{label}: nested deeper than {MAX_DEPTH} levels")
                continue
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for slot, item in items:
                key = slot
                if isinstance(key, str):
                    problem = _text_problem(key)
                    if problem:
                        issues.append(f"{label}: a key {problem}")
                        key = key.encode("utf-8", "backslashreplace").decode()
                child = f"{path}.{key}" if isinstance(key, str) and path else str(key) if isinstance(key, str) \
                    else f"{path}[{key}]"
                pending.append((item, child, depth + 1, value, slot))
        elif isinstance(value, int | float | Decimal) and value is not True and value is not False:
            kept, problem = jsonio.stored(value)
            if problem:
                issues.append(f"{label}: {problem}")
                continue
            if kept is not value and container is not None:
                container[slot] = kept
            if type(kept) is jsonio.Number:
                written += jsonio.written_length(kept)
            if not (type(kept) is float or (type(kept) is int and -_EXACT_INT <= kept <= _EXACT_INT)):
                plain = False
    if written > settings.RUN_DATA_BYTES:
        # 1E+131071 is 9 characters sent and 131072 stored: bounded here, before anything writes them out.
        issues.append(f"arguments: the numbers written out take {written} characters, more than "
                      f"limits.runDataBytes ({settings.RUN_DATA_BYTES})")
    return issues, plain


def schema_issues(name: str, arguments) -> list[str]:
    value_issues, plain = _value_issues(arguments)
    if any("nested deeper" in issue for issue in value_issues):
        return sorted(value_issues)  # the schema is not walked into what is refused anyway
    if not value_issues and plain and _compiled(name).is_valid(arguments):
        # Nearly every call: the compiled check says yes in about a microsecond, where walking
        # jsonschema's errors took 0.1-0.5 ms. It reads exact numbers (Decimal) and integers past
        # 2**53 as doubles, so those, and every refusal, go through jsonschema for the worded issues.
        return []
    issues = []
    for error in _validator(name).iter_errors(arguments):
        issues.extend(_issues_of(error))
    # jsonschema reports `required` once per missing name, each of which lists every missing name.
    return sorted(set(issues + value_issues))


def call_tool(identity: Identity, name: str, arguments, *, transport: str = "browser") -> dict:
    """Run one tool call for an authenticated identity and return the envelope. Never raises.

    Every call of every transport passes here (`transport`: rest, mcp, or browser for the inbox's
    calls in process), so this is where each is counted and logged (kernel/observe.py). The pages'
    own writes (api/tools/page_tools.py) answer for transport "browser" only."""
    started = time.perf_counter()
    with observe.tool_call_facts() as facts:
        envelope = _answer(identity, name, arguments, transport)
    seconds = time.perf_counter() - started
    run_id, step_id = _target(arguments, envelope, facts)
    observe.tool_call(tool=name, known=name in TOOLS or (transport == "browser" and name in PAGE_TOOLS),
                      transport=transport, identity=identity,
                      outcome="ok" if envelope["ok"] else envelope["error"]["code"], seconds=seconds,
                      run_id=run_id, step_id=step_id)
    return envelope


def _target(arguments, envelope: dict, facts: dict) -> tuple[str | None, str | None]:
    """The run and step a call was about, for its log line: named in the arguments, said by a
    lease token that verified, or the run a call started."""
    named = arguments if isinstance(arguments, dict) else {}
    run_id, step_id = named.get("runId"), named.get("stepId")
    if not isinstance(run_id, str):
        run_id = facts.get("run_id")
        data = envelope.get("data")
        if run_id is None and isinstance(data, dict) and isinstance(run := data.get("run"), dict):
            run_id = run.get("id")
    if not isinstance(step_id, str):
        step_id = facts.get("step_id")
    return run_id, step_id


def _answer(identity: Identity, name: str, arguments, transport: str) -> dict:
    try:
        if transport == "browser" and name in PAGE_TOOLS:  # the pages' own writes (page_tools.py)
            return {"ok": True, "data": PAGE_TOOLS[name](identity, arguments, clock.now())}
        found = TOOLS.get(name)
        if found is None or name not in offered_tools():
            raise not_found(f"no tool {name} on this server")
        if arguments is None:
            arguments = {}
        issues = schema_issues(name, arguments)
        if issues:
            raise invalid(f"the arguments do not match the {name} schema", issues)
        now = clock.now()
        if found.write:
            prepare = (lambda write: found.prepare(identity, arguments, now, write)) if found.prepare else None
            data = writes.perform(
                writes.Write(identity=identity, operation=name, arguments=arguments, now=now),
                lambda prepared: found.handler(identity, arguments, now, **({"prepared": prepared} if prepare else {})),
                prepare=prepare, replay_first=found.replay_first)
        else:
            data = found.handler(identity, arguments, now)
        return {"ok": True, "data": data}
    except ToolError as error:
        return error.envelope()
    except OperationalError:
        log.warning("database busy during %s", name, exc_info=True)
        return retry("the server is busy; retry with the same requestId").envelope()
    except DataError:
        # The database refuses a value of this call, and would again: answering `retry` would have
        # the caller retry for ever. `_value_issues` refuses what a database cannot store first.
        log.exception("database refused a value during %s", name)
        return invalid("the database cannot store a value of this call",
                       ["arguments: a value the database cannot store"]).envelope()
    except DatabaseError:
        log.exception("database error during %s", name)
        return retry("the server could not complete this call; retry with the same requestId").envelope()
    except Exception:  # noqa: BLE001 - the envelope contract: never a 500, never a half-applied write
        log.exception("unexpected error during %s", name)
        return retry("the server could not complete this call; retry with the same requestId").envelope()
