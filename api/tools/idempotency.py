"""One idempotency mechanism for every write (spec §4).

The record is written in the same transaction as the write. A tool's `prepare` step runs before
that transaction opens (reads that may refuse the call, slow work such as asking the check
evaluator), under the same replay rules. The happy path costs one INSERT:
the record is not looked up first; when the insert collides (a replay) or the action fails,
the transaction is rolled back and the stored record decides the answer. A failed call is never
recorded, so a retry with the same requestId can succeed.
"""

import hashlib
import json

from django.db import IntegrityError, transaction

from kernel.errors import CONFLICT, ToolError

from kernel import sql
from runs.models import IdempotencyRecord


def fingerprint(tool: str, caller: str, arguments: dict) -> str:
    # The caller is part of it: a requestId replayed by another identity never returns its result.
    significant = {key: value for key, value in arguments.items() if key != "requestId"}
    text = json.dumps([tool, caller, significant], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _stored(identity, request_id: str) -> IdempotencyRecord | None:
    # Hand-written (kernel/sql.py): every refused claim in a race comes through here.
    found = sql.select(IdempotencyRecord, "organization_id = %s AND request_id = %s",
                       [identity.organization.id, request_id])
    return found[0] if found else None


def _replay(record: IdempotencyRecord, print_: str) -> dict:
    if record.arguments_hash != print_:
        raise ToolError(CONFLICT, "this requestId was already used with other arguments",
                        ["requestId: already used with other arguments"])
    return record.result


def run_write(*, identity, tool: str, arguments: dict, now, action, prepare=None, lookup_first: bool = False) -> dict:
    """`action(prepared)` in one transaction with the record; `prepared` is what `prepare()` returned."""
    request_id = arguments["requestId"]
    print_ = fingerprint(tool, identity.ref, arguments)
    if lookup_first:
        record = _stored(identity, request_id)
        if record is not None:
            return _replay(record, print_)
    try:
        prepared = prepare() if prepare is not None else None
        with transaction.atomic():
            data = action(prepared)
            sql.insert_row(IdempotencyRecord, {
                "organization": identity.organization.id, "request_id": request_id, "tool": tool,
                "caller": identity.ref, "arguments_hash": print_, "result": data, "created_at": now,
            })
        return data
    except IntegrityError:
        record = _stored(identity, request_id)
        if record is None:
            raise
        return _replay(record, print_)
    except ToolError as error:
        record = _stored(identity, request_id)
        if record is not None:
            return _replay(record, print_)
        if error.after_rollback is not None:
            error.after_rollback()
        raise
