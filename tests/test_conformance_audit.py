"""What a conformance audit found (issue 13, point 3): each a MUST (or SHOULD) of the spec."""

import base64
import datetime as dt
import hashlib
import io

import pytest
import rfc8785
from django.core.management import call_command

from kernel import clock
from processes.models import ProcessVersion
from processes.parsing import load_frontmatter, parse_process_file
from runs.models import StepState
from runs.services.sweep import sweep
from tests.support.chat_server import ChatServer
from tests.support.flows import LINK, open_item
from tests.support.processes import SCREEN_AND_APPROVE

T0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)


def test_yaml_is_read_with_the_core_schema_only():
    """Spec §2.1: "a server MUST parse it with the core schema only". The core schema's integers
    are [-+]?[0-9]+, 0o… and 0x…; its floats have no digit separators: 1_000, 1_000.5 and 0b101
    are text."""
    data, issues = load_frontmatter("a: 1_000\nb: 1_000.5\nc: 0b101\nd: 0o17\ne: 0x1F\nf: 017\ng: 1e3\n"
                                    "h: [1_0, 2]\ni: !!int 12\nj: yes\n")
    assert issues == []
    assert data == {"a": "1_000", "b": "1_000.5", "c": "0b101", "d": 15, "e": 31, "f": 17, "g": 1000.0,
                    "h": ["1_0", 2], "i": 12, "j": "yes"}
    assert parse_process_file("---\nname: a\ndescription: 1_000\nsteps:\n  - id: x\n    finish: done\n---\n"
                              ).frontmatter["description"] == "1_000"


def test_the_command_line_keeps_crlf_in_the_body_and_the_hash(tmp_path, org):
    """Spec §6 rule 5: the hash is "over … one newline character, then the body text exactly as
    written"; the run view returns the body as written too."""
    text = SCREEN_AND_APPROVE.replace("\n", "\r\n")
    folder = tmp_path / "screen-and-approve"
    folder.mkdir()
    (folder / "PROCESS.md").write_bytes(text.encode())
    call_command("import_process", str(folder), "--bind", "finance=finance", "--publish", stdout=io.StringIO())
    version = ProcessVersion.objects.get()
    assert version.body == "Screen, then approve.\r\n" and version.source == text
    frontmatter = parse_process_file(text).frontmatter
    expected = hashlib.sha256(rfc8785.dumps(frontmatter) + b"\n" + "Screen, then approve.\r\n".encode()).hexdigest()
    assert version.content_hash == expected


def test_the_command_line_prints_what_a_process_requires(org):
    from tests.support.spec import EXAMPLES

    out = io.StringIO()
    call_command("import_process", str(EXAMPLES / "expense-approval"), "--publish", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("requires: ") and "connect these first" in lines[0]
    assert lines[-1].startswith("published expense-approval version 1 ")


WAIT_WITH_TIMEOUT = """---
name: wait-with-timeout
description: Waits a day for the settlement, then chases it.
steps:
  - id: settle
    wait_for: settled
    timeout: 1d
    on_timeout: chase
    next: done
  - id: chase
    agent: Chase the settlement.
    next: done
  - id: done
    finish: settled
---
Wait, then chase.
"""


def test_an_event_after_the_timeout_is_held_and_the_run_goes_on_at_on_timeout(publish, agent):
    """Spec §2.2 `timeout`: a duration after which the run continues at `on_timeout`. The sweep
    only tidies up: send_event compares now with the deadline itself."""
    publish(WAIT_WITH_TIMEOUT)
    with clock.frozen(T0):
        run_id = agent.ok("start_run", process="wait-with-timeout", inputs={})["run"]["id"]
    with clock.frozen(T0 + dt.timedelta(days=1, minutes=1)):  # no sweep has run
        assert agent.ok("send_event", runId=run_id, name="settled", data={"ref": "S-1"}) == {"consumedBy": None}
        view = agent.ok("get_run", runId=run_id)
    states = {step["id"]: step["state"] for step in view["steps"]}
    assert states == {"settle": "done", "chase": "ready", "done": None}
    assert "output" not in view["data"]["steps"]["settle"]  # timed out: no event data
    with clock.frozen(T0 + dt.timedelta(days=1, minutes=2)):
        sweep(clock.now())
    assert StepState.objects.get(run_id=run_id, step_id="chase").state == "ready"  # nothing fired twice


def test_run_ended_comes_first_for_claim_decide_and_cancel(publish, agent, make_person):
    """Spec §3.5: "every write to the run other than a replay returns conflict with
    issues: ["run_ended"], checked before anything else"."""
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    operator = make_person("ops@example.com", operator=True)
    finance = make_person("fin@example.com", groups=["finance"])
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    agent.ok("submit", token=token, output={"cleared": True}, evidence=LINK, summary="Clear.")
    item = open_item(finance, run_id, "approve")
    operator.ok("cancel", runId=run_id, reason="Duplicate.")
    ended = {"code": "conflict", "message": "the run has ended; no more writes are accepted", "issues": ["run_ended"]}
    assert agent.error("claim", runId=run_id, stepId="no_such_step") == ended
    assert finance.error("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                         decision="approved", output={"x": 1}) == ended  # output with approved: invalid, later
    assert operator.error("cancel", runId=run_id, reason="   ") == ended  # a blank reason: invalid, later


CHECKED = """---
name: checked-screening
description: An agent screens; a model checks the summary.
steps:
  - id: screen
    agent: Screen the vendor and say which lists you searched.
    check:
      - ask: The summary names the lists that were searched.
        pass: 0.9
        fail: 0.5
  - id: done
    finish: screened
---
Screening with a check.
"""


def test_a_returned_unsure_check_hands_its_lines_to_the_next_attempt(publish, agent, make_person, settings):
    """check-1 §3: "When the same attempt continues, after a fail or a returned, the previous check
    travels in handoff.check and the agent's handoff.issues carries the same lines"."""
    server = ChatServer().start()
    try:
        settings.CHECK_EVALUATOR_URL, settings.CHECK_EVALUATOR_MODEL = server.url, "scripted-evaluator-1"
        server.script["The summary names the lists that were searched."] = {"yes": 0.62}
        publish(CHECKED)
        operator = make_person("ops@example.com", operator=True)
        run_id = agent.ok("start_run", process="checked-screening", inputs={})["run"]["id"]
        token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
        view = agent.ok("submit", token=token, output={}, summary="Looked into it.")
        item = view["workItems"][0]
        assert item["escalation"]["check"]["verdict"] == "unsure"
        operator.ok("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"], decision="returned",
                    note="Say which lists.")
        handoff = agent.ok("claim", runId=run_id, stepId="screen")["handoff"]
    finally:
        server.stop()
    assert handoff["issues"] == ["check: The summary names the lists that were searched. → no (0.62)"]
    assert handoff["check"]["verdict"] == "unsure" and handoff["returned"]["note"] == "Say which lists."


def test_expires_at_is_never_earlier_than_the_end_of_the_lease(publish, agent, settings):
    """Spec §3.3: "A claim lasts the server's lease … returned as expiresAt"; the text has whole
    seconds, so the lease ends on one."""
    settings.LEASE_SECONDS = 600
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    with clock.frozen(T0 + dt.timedelta(microseconds=750_000)):
        run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
        claim = agent.ok("claim", runId=run_id, stepId="screen")
        renewed = agent.ok("renew", token=claim["token"])
    lease_end = StepState.objects.get(run_id=run_id, step_id="screen").lease_expires_at
    assert claim["expiresAt"] == "2026-10-06T09:10:01Z" == renewed["expiresAt"]
    assert lease_end == dt.datetime(2026, 10, 6, 9, 10, 1, tzinfo=dt.UTC)


def test_file_urls_use_the_requests_own_origin_when_public_base_url_is_not_set(publish, agent, client, settings):
    """Spec §5: "each file item also carries a short-lived url so agents and people can open it":
    one that works on the port the server was started on."""
    import json

    publish(SCREEN_AND_APPROVE.replace("      cleared: boolean\n", "      cleared: boolean\n    evidence: [file]\n"),
            {"finance": "finance"})
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    upload = agent.ok("upload", fileName="r.pdf", contentType="application/pdf",
                      contentBase64=base64.b64encode(b"%PDF").decode())
    agent.ok("submit", token=token, output={"cleared": True}, evidence=[{"kind": "file", "ref": upload["id"]}],
             summary="Clear.")

    def file_url(host: str) -> str:
        response = client.post("/api/v1/tools/get_run", json.dumps({"runId": run_id}), content_type="application/json",
                               HTTP_AUTHORIZATION=f"Bearer {agent.token}", HTTP_HOST=host)
        return response.json()["data"]["data"]["steps"]["screen"]["evidence"][0]["url"]

    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    settings.PUBLIC_BASE_URL_CONFIGURED = False
    assert file_url("127.0.0.1:9123").startswith(f"http://127.0.0.1:9123/files/{upload['id']}?t=")
    settings.PUBLIC_BASE_URL_CONFIGURED, settings.PUBLIC_BASE_URL = True, "https://process.example.com"
    assert file_url("127.0.0.1:9123").startswith(f"https://process.example.com/files/{upload['id']}?t=")


@pytest.mark.parametrize("mode", ["live"])
def test_describe_validates_against_the_schema_without_an_evaluator(agent, settings, mode):
    settings.CHECK_EVALUATOR_URL = ""
    limits = agent.ok("describe")["limits"]
    assert set(limits) == {"runDataBytes", "checkPass", "checkFail", "checkConfidence", "checkStateBytes"}
