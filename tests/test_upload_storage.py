"""Uploads and the bytes in storage (issue 21, point 5): a requestId reused with other bytes is a
`conflict` refused before anything is written, and the sweep removes stored files no upload row
refers to (left by a crash between storing and committing) once they are older than a safety age.

Spec §4: "Every write takes `requestId` … Same requestId with different arguments → `conflict`."
"""

import base64
import datetime as dt
import hashlib
import os
from pathlib import Path

import pytest
from django.core.management import call_command

from api.tools.registry import TOOLS
from kernel import clock
from kernel.errors import ErrorCode, ToolError
from kernel.models import AuditEvent, EventKind
from runs.models import Upload
from runs.services import writes
from runs.services.sweep import ORPHAN_FILE_AGE, sweep, sweep_orphan_files
from tests.support.concurrency import run_together

CONFLICT = {"code": "conflict", "message": "this requestId was already used with other arguments",
            "issues": ["requestId: already used with other arguments"]}


def upload_arguments(content: bytes, request_id: str = "up-1") -> dict:
    return {"fileName": "report.txt", "contentType": "text/plain",
            "contentBase64": base64.b64encode(content).decode(), "requestId": request_id}


def stored_files(settings) -> list[str]:
    root = Path(settings.MEDIA_ROOT)
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


def sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def test_a_request_id_reused_with_other_bytes_is_a_conflict_and_stores_nothing(agent, org, settings):
    first = agent.ok("upload", **upload_arguments(b"the first report"))
    assert agent.error("upload", **upload_arguments(b"another report")) == CONFLICT
    assert stored_files(settings) == [f"{org.id}/{first['sha256']}"]
    assert Upload.objects.count() == 1


def test_a_twin_that_commits_after_the_look_up_is_a_conflict_before_the_bytes_are_stored(agent, org, settings):
    """The look-up before the transaction found nothing; the twin with other bytes committed right
    after. The late call must still refuse before writing its bytes (it used to store them, lose
    the idempotency insert, answer `conflict` and leave the file behind)."""
    identity, late_arguments = agent.identity, upload_arguments(b"the late twin's bytes")
    late = writes.Write(identity=identity, operation="upload", arguments=late_arguments, now=clock.now())
    assert not late.replayed  # looked up: nothing yet
    agent.ok("upload", **upload_arguments(b"the twin that won"))
    with pytest.raises(ToolError) as refused:
        writes.perform(late, lambda _: TOOLS["upload"].handler(identity, late_arguments, late.now), replay_first=True)
    assert refused.value.envelope()["error"] == CONFLICT
    assert stored_files(settings) == [f"{org.id}/{sha(b'the twin that won')}"]


@pytest.mark.postgres
def test_concurrent_uploads_of_other_bytes_under_one_request_id_store_one_file(transactional_db, agent, org, settings):
    contents = [f"report number {index}".encode() for index in range(4)]
    pending = list(contents)
    answers = run_together(lambda: agent.call("upload", **upload_arguments(pending.pop())), count=4)
    assert sorted(answer["ok"] for answer in answers) == [False, False, False, True]
    assert all(answer["error"] == CONFLICT for answer in answers if not answer["ok"])
    winner = Upload.objects.get()
    assert stored_files(settings) == [f"{org.id}/{winner.sha256}"]


# --- orphans -------------------------------------------------------------------------------------


def make_orphan(settings, org, content: bytes, *, age: dt.timedelta) -> str:
    """A file as a crash between storing and committing leaves it: bytes, no upload row."""
    name = f"{org.id}/{sha(content)}"
    path = Path(settings.MEDIA_ROOT) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    stamp = (clock.now() - age).timestamp()
    os.utime(path, (stamp, stamp))
    return name


def test_the_sweep_removes_old_orphan_files_and_records_each(agent, org, settings):
    kept = agent.ok("upload", **upload_arguments(b"a file a run refers to"))
    old = make_orphan(settings, org, b"left by a crash", age=ORPHAN_FILE_AGE + dt.timedelta(minutes=1))
    recent = make_orphan(settings, org, b"an upload in flight", age=ORPHAN_FILE_AGE - dt.timedelta(minutes=1))
    assert sweep_orphan_files(clock.now()) == 1
    assert stored_files(settings) == sorted([f"{org.id}/{kept['sha256']}", recent])
    (event,) = AuditEvent.objects.filter(kind=EventKind.ORPHAN_FILE_REMOVED)
    assert (event.organization_id, event.actor, event.data) == (
        org.id, "server", {"file": old, "bytes": len(b"left by a crash")})
    assert sweep_orphan_files(clock.now()) == 0  # nothing left to remove


def test_a_file_an_upload_row_refers_to_is_kept_however_old(agent, org, settings):
    content = b"an old report still in use"
    kept = agent.ok("upload", **upload_arguments(content))
    stamp = (clock.now() - 10 * ORPHAN_FILE_AGE).timestamp()
    os.utime(Path(settings.MEDIA_ROOT) / f"{org.id}/{kept['sha256']}", (stamp, stamp))
    assert sweep_orphan_files(clock.now()) == 0
    assert stored_files(settings) == [f"{org.id}/{kept['sha256']}"]


def test_uploading_the_bytes_of_an_old_orphan_keeps_the_file(agent, org, settings):
    """The same bytes arrive again: the stored file is theirs now, and no sweep may take it."""
    content = b"sent again after a crash"
    name = make_orphan(settings, org, content, age=2 * ORPHAN_FILE_AGE)
    agent.ok("upload", **upload_arguments(content))
    assert sweep_orphan_files(clock.now()) == 0
    assert stored_files(settings) == [name]


def test_manage_py_sweep_removes_orphans_and_says_so(org, settings, capsys):
    make_orphan(settings, org, b"left by a crash", age=2 * ORPHAN_FILE_AGE)
    call_command("sweep")
    assert "orphan files removed: 1" in capsys.readouterr().out
    assert stored_files(settings) == []
    assert sweep(clock.now()).orphan_files is None  # the every-15-seconds pass does not walk the storage
