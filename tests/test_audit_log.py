"""The audit log (issue 14): every change recorded once, in its own write's transaction, with the
actor from authentication.

Spec §3.1: "`by`, `at` | Every completed step: who and when" and §3.3 "`by` in run data always
comes from the authenticated identity" (DESIGN.md); the log extends the same rule to everything
that happens to a run: claims, lapses, refusals, escalations, returns, overdue crossings, events.
"""

import base64
import datetime as dt
import json

import pytest
from django.core import mail
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from kernel import clock
from kernel.models import AuditEvent, EventKind
from runs.services.sweep import sweep
from tests.support.flows import LINK
from tests.support.processes import SCREEN_AND_APPROVE

from .test_inbox_views import decide_form, person_client  # noqa: F401 (person_client: a fixture)

T0 = dt.datetime(2026, 10, 6, 9, 0, tzinfo=dt.UTC)


WAITS_AND_EVENTS = """---
name: waits-and-events
description: A cooling-off period, a settlement that may time out, a confirmation event.
steps:
  - id: cool_off
    wait: 1h
  - id: settle
    wait_for: settled
    timeout: 1d
  - id: confirm
    wait_for: confirmed
  - id: done
    finish: settled
---
Waits and events.
"""


def events_of(run_id: str) -> list[tuple]:
    return [(e.kind, e.actor, e.step_id) for e in AuditEvent.objects.filter(run_id=run_id).order_by("id")]


def last_events(run_id: str, since: int) -> list[tuple]:
    return [(e.kind, e.actor, e.step_id) for e in AuditEvent.objects.filter(run_id=run_id, id__gt=since)
            .order_by("id")]


def newest_id() -> int:
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


@pytest.fixture
def screening(publish, make_agent, person_client):
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    finance, _ = person_client("fin@example.com", groups=["finance"])
    operator, _ = person_client("ops@example.com", operator=True)
    return make_agent("screener"), make_agent("backup"), finance, operator


def test_an_agent_loop_with_people_in_it_is_recorded_in_order_with_every_actor(screening, settings):
    """Start, claim, renew, a refused submission, a lapsed lease, a second agent's claim and
    escalation, an overdue crossing and its notice, the operator's return in the inbox, an accepted
    submission, a rejection into rework, an approval and the finish."""
    settings.LEASE_SECONDS = 600
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    screener, backup, finance, operator = screening
    with clock.frozen(T0):
        run_id = screener.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
        token = screener.ok("claim", runId=run_id, stepId="screen")["token"]
        token = screener.ok("renew", token=token, progress="Searched OFAC.")["token"]
        refused = screener.error("submit", token=token, output={}, summary="Half done.")
        assert refused["issues"] == ["output.cleared: missing"]
    with clock.frozen(T0 + dt.timedelta(minutes=11)):
        sweep(clock.now())
        token = backup.ok("claim", runId=run_id, stepId="screen")["token"]
        view = backup.ok("escalate", token=token, note="The EU list site is down.")
    escalation = view["workItems"][0]["id"]
    with clock.frozen(T0 + dt.timedelta(hours=2)):
        sweep(clock.now())
    assert [m.to for m in mail.outbox] == [["ops@example.com"]]
    decide_form(operator, escalation, {"decision": "returned", "note": "The site is back; try again."})
    token = screener.ok("claim", runId=run_id, stepId="screen")["token"]
    view = screener.ok("submit", token=token, output={"cleared": True}, evidence=LINK, summary="Both lists clear.")
    approval = view["workItems"][0]["id"]
    decide_form(finance, approval, {"decision": "rejected", "note": "Check the aliases too."})
    token = screener.ok("claim", runId=run_id, stepId="screen")["token"]
    view = screener.ok("submit", token=token, output={"cleared": True}, evidence=LINK, summary="Aliases clear.")
    decide_form(finance, view["workItems"][0]["id"], {"decision": "approved"})

    assert events_of(run_id) == [
        ("run_started", "a_screener", None),
        ("step_ready", "server", "screen"),
        ("step_claimed", "a_screener", "screen"),
        ("lease_renewed", "a_screener", "screen"),
        ("submission_refused", "a_screener", "screen"),
        ("lease_lapsed", "server", "screen"),
        ("step_claimed", "a_backup", "screen"),
        ("escalated", "a_backup", "screen"),
        ("overdue", "server", "screen"),
        ("notice_sent", "server", "screen"),
        ("decided", "ops@example.com", "screen"),
        ("returned", "ops@example.com", "screen"),
        ("step_ready", "server", "screen"),
        ("step_claimed", "a_screener", "screen"),
        ("submission_accepted", "a_screener", "screen"),
        ("step_ready", "server", "approve"),
        ("decided", "fin@example.com", "approve"),
        ("rework", "fin@example.com", "approve"),
        ("step_ready", "server", "screen"),
        ("step_claimed", "a_screener", "screen"),
        ("submission_accepted", "a_screener", "screen"),
        ("step_ready", "server", "approve"),
        ("decided", "fin@example.com", "approve"),
        ("run_ended", "server", None),
    ]
    by_kind = {}
    for event in AuditEvent.objects.filter(run_id=run_id).order_by("id"):
        by_kind.setdefault(event.kind, []).append(event)
    assert by_kind["submission_refused"][0].data == {"issues": ["output.cleared: missing"]}
    assert by_kind["lease_renewed"][0].data["progress"] == "Searched OFAC."
    assert by_kind["lease_lapsed"][0].data == {"leaseGeneration": 2, "heldBy": "a_screener",
                                               "progress": "Searched OFAC."}
    assert by_kind["escalated"][0].data == {"note": "The EU list site is down."}
    assert by_kind["escalated"][0].work_item_id == escalation
    assert [(e.data["decision"], e.data["note"], e.work_item_id, e.actor_kind) for e in by_kind["decided"]] == [
        ("returned", "The site is back; try again.", escalation, "operator"),
        ("rejected", "Check the aliases too.", approval, "person"),
        ("approved", None, by_kind["decided"][2].work_item_id, "person")]
    # The returned-to step keeps its completion current until it completes again (spec §3.1).
    assert by_kind["rework"][0].data == {"to": "screen", "movedToHistory": []}
    assert by_kind["notice_sent"][0].data == {"to": "ops@example.com", "notice": "overdue"}
    assert by_kind["run_ended"][0].data == {"outcome": "approved", "note": None}
    started = by_kind["run_started"][0]
    assert (started.data["version"], started.data["mode"], len(started.data["inputsSha256"])) == (1, "live", 64)
    # Each event of a write carries that write's requestId; sweeps have none.
    assert by_kind["step_claimed"][0].request_id and by_kind["lease_lapsed"][0].request_id is None
    assert by_kind["step_ready"][0].request_id == started.request_id
    assert [e.at for e in by_kind["lease_lapsed"]] == [T0 + dt.timedelta(minutes=11)]


def test_waits_events_and_their_ends_are_recorded(publish, make_agent, make_person):
    publish(WAITS_AND_EVENTS)
    agent = make_agent("bank-feed")
    with clock.frozen(T0):
        run_id = agent.ok("start_run", process="waits-and-events", inputs={})["run"]["id"]
        assert agent.ok("send_event", runId=run_id, name="confirmed", data={"ref": "C-1"}) == {"consumedBy": None}
        agent.ok("send_event", runId=run_id, name="stray")
    with clock.frozen(T0 + dt.timedelta(hours=1)):
        sweep(clock.now())
    with clock.frozen(T0 + dt.timedelta(days=1, hours=1)):
        sweep(clock.now())
    assert events_of(run_id) == [
        ("run_started", "a_bank-feed", None),
        ("step_ready", "server", "cool_off"),
        ("event_sent", "a_bank-feed", None),
        ("event_held", "server", None),
        ("event_sent", "a_bank-feed", None),
        ("event_held", "server", None),
        ("wait_elapsed", "server", "cool_off"),
        ("step_ready", "server", "settle"),
        ("wait_timed_out", "server", "settle"),
        ("step_ready", "server", "confirm"),
        ("event_consumed", "server", "confirm"),
        ("run_ended", "server", None),
        ("event_discarded", "server", None),
    ]
    consumed = AuditEvent.objects.get(run_id=run_id, kind="event_consumed")
    assert (consumed.data["event"], consumed.data["sentBy"]) == ("confirmed", "a_bank-feed")
    assert AuditEvent.objects.get(run_id=run_id, kind="event_discarded").data["event"] == "stray"
    assert AuditEvent.objects.get(run_id=run_id, kind="wait_timed_out").data == {"event": "settled",
                                                                                  "next": "confirm"}


def test_a_cancel_records_the_operator_and_the_reason(screening):
    screener, _backup, _finance, _operator = screening
    run_id = screener.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    from kernel.organizations import create_person, default_organization

    _user, token = create_person(default_organization(), "boss@example.com", operator=True)
    from tests.support.actors import Actor

    Actor(token=token, name="boss").ok("cancel", runId=run_id, reason="Duplicate request.")
    cancelled = AuditEvent.objects.get(run_id=run_id, kind="run_cancelled")
    assert (cancelled.actor, cancelled.actor_kind, cancelled.data) == ("boss@example.com", "operator",
                                                                       {"reason": "Duplicate request."})


def test_a_replay_and_a_refused_write_record_nothing_new(screening):
    screener, backup, _finance, _operator = screening
    run_id = screener.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    claim = screener.call("claim", runId=run_id, stepId="screen", requestId="claim-1")
    before = newest_id()
    assert screener.call("claim", runId=run_id, stepId="screen", requestId="claim-1") == claim  # a replay
    assert backup.error("claim", runId=run_id, stepId="screen")["issues"] == ["claimed_by_other"]
    assert backup.error("submit", token=claim["data"]["token"], output={"cleared": True},
                        summary="Not mine.")["code"] == "forbidden"
    assert screener.error("decide", runId=run_id, workItemId="w_nope", snapshot="x",
                          decision="approved")["code"] == "not_found"
    assert last_events(run_id, before) == []
    assert newest_id() == before


def test_a_rolled_back_write_leaves_no_event(screening):
    screener, _backup, _finance, _operator = screening
    run_id = screener.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    before = newest_id()
    with pytest.raises(RuntimeError), transaction.atomic():
        screener.ok("claim", runId=run_id, stepId="screen")
        assert last_events(run_id, before) == [("step_claimed", "a_screener", "screen")]
        raise RuntimeError("the surrounding transaction fails")
    assert last_events(run_id, before) == []


def test_uploads_and_personal_tokens_are_organization_events(screening):
    screener, _backup, finance, _operator = screening
    upload = screener.ok("upload", fileName="report.pdf", contentType="application/pdf",
                         contentBase64=base64.b64encode(b"%PDF").decode())
    event = AuditEvent.objects.get(kind="file_uploaded")
    assert (event.actor, event.run_id, event.data["upload"], event.data["fileName"]) == (
        "a_screener", None, upload["id"], "report.pdf")
    finance.post("/tokens/", {"label": "laptop"})
    created = AuditEvent.objects.get(kind="token_created", actor="fin@example.com")
    assert (created.actor, created.data["label"]) == ("fin@example.com", "laptop")
    finance.post(f"/tokens/{created.data['token']}/revoke")
    assert AuditEvent.objects.get(kind="token_revoked").data["token"] == created.data["token"]


def test_importing_binding_and_publishing_are_recorded_with_who_did_it(org, client, tmp_path):
    folder = tmp_path / "screen-and-approve"
    folder.mkdir()
    (folder / "PROCESS.md").write_text(SCREEN_AND_APPROVE)
    call_command("import_process", str(folder), "--bind", "finance=finance", "--publish", stdout=open("/dev/null", "w"))
    assert [(e.kind, e.actor, e.actor_kind) for e in AuditEvent.objects.order_by("id")] == [
        ("process_imported", "command line", "server"),
        ("process_bound", "command line", "server"),
        ("process_published", "command line", "server")]
    published = AuditEvent.objects.get(kind="process_published")
    assert (published.data["process"], published.data["version"]) == ("screen-and-approve", 1)

    from django.urls import reverse

    from kernel.organizations import create_person
    from processes.models import ProcessDraft

    create_person(org, "root@example.com", password="admin-pass-1", superuser=True)
    assert client.login(username="root@example.com", password="admin-pass-1")
    client.post(reverse("admin:processes_processdraft_import"), {"source": SCREEN_AND_APPROVE + "\nRevised.\n"})
    draft = ProcessDraft.objects.latest("pk")
    client.post(reverse("admin:processes_processdraft_change", args=[draft.pk]),
                {"bind__finance": "finance", "_publish": "1"})
    admin_events = AuditEvent.objects.filter(actor="root@example.com").order_by("id")
    assert [(e.kind, e.actor_kind) for e in admin_events] == [
        ("process_imported", "admin"), ("process_bound", "admin"), ("process_published", "admin")]
    assert admin_events.last().data["version"] == 2


@pytest.mark.postgres
def test_the_database_refuses_to_change_delete_or_truncate_events(screening):
    """Issue 21: TRUNCATE too, refused by a trigger for every role (here the suite's superuser)."""
    screener, *_ = screening
    run_id = screener.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    event = AuditEvent.objects.filter(run_id=run_id).first()
    with connection.cursor() as cursor:  # the test's transaction: TRUNCATE waits for no deferred FK check
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for statement, refused in (
            (f"UPDATE agentprocess_auditevent SET actor = 'someone else' WHERE id = {event.id}",
             f"UPDATE of audit event {event.id} refused"),
            (f"DELETE FROM agentprocess_auditevent WHERE id = {event.id}", f"DELETE of audit event {event.id} refused"),
            ("TRUNCATE agentprocess_auditevent", "TRUNCATE of the audit log refused"),
            ("TRUNCATE agentprocess_auditevent, runs_run CASCADE", "TRUNCATE of the audit log refused")):
        with pytest.raises(DatabaseError) as error, transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(statement)
        assert (error.value.__cause__.sqlstate, str(error.value).splitlines()[0]) == (
            "42501", f"audit events are append-only: {refused}")
    assert AuditEvent.objects.get(pk=event.pk).actor == "a_screener"
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()


# ---------------------------------------------------------------- export


def _run_with_history(screening) -> str:
    screener, _backup, finance, _operator = screening
    with clock.frozen(T0):
        run_id = screener.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
        token = screener.ok("claim", runId=run_id, stepId="screen")["token"]
        view = screener.ok("submit", token=token, output={"cleared": True}, evidence=LINK, summary="Clear.")
    with clock.frozen(T0 + dt.timedelta(days=1)):
        decide_form(finance, view["workItems"][0]["id"], {"decision": "rejected", "note": "Also the aliases,\nplease."})
    return run_id


def test_audit_export_streams_json_lines_and_csv_with_the_documented_fields(screening, capsys):
    """README "Audit log": one JSON object a line with at, kind, actor, run, step, workItem,
    requestId, data; the same columns in CSV."""
    import csv
    import io
    import json

    run_id = _run_with_history(screening)
    call_command("audit_export", "--run", run_id, "--format", "jsonl")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["kind"] for line in lines] == ["run_started", "step_ready", "step_claimed", "submission_accepted",
                                                "step_ready", "decided", "rework", "step_ready"]
    assert set(lines[0]) == {"at", "kind", "actor", "run", "step", "workItem", "requestId", "data"}
    assert lines[0]["actor"] == {"kind": "agent", "ref": "a_screener"} and lines[0]["at"] == "2026-10-06T09:00:00Z"
    decided = lines[5]
    assert (decided["actor"], decided["data"]["note"]) == ({"kind": "person", "ref": "fin@example.com"},
                                                           "Also the aliases,\nplease.")

    call_command("audit_export", "--run", run_id, "--since", "2026-10-07", "--format", "csv")
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["at", "kind", "actor", "run", "step", "workItem", "requestId", "data"]
    assert [row[1] for row in rows[1:]] == ["decided", "rework", "step_ready"]
    assert rows[1][2] == "person:fin@example.com" and json.loads(rows[1][7])["note"] == "Also the aliases,\nplease."

    call_command("audit_export", "--run", run_id, "--until", "2026-10-06T09:00:00Z", "--format", "jsonl")
    assert capsys.readouterr().out == ""


def test_audit_export_refuses_bad_options_clearly(screening):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--since: 'yesterday' is not an ISO 8601 date"):
        call_command("audit_export", "--since", "yesterday", "--format", "jsonl")
    with pytest.raises(CommandError, match="no organization 'nope'"):
        call_command("audit_export", "--org", "nope", "--format", "csv")


def test_audit_export_holds_the_same_memory_for_five_and_for_twenty_thousand_events(org):
    """Constant memory: the export reads a page at a time, so the peak does not grow with the log."""
    import tracemalloc

    from kernel import audit

    def fill(count: int) -> None:
        AuditEvent.objects.bulk_create([
            audit.event(EventKind.RUN_STARTED, organization_id=org.id, actor=audit.SERVER, at=T0,
                        run_id="r_bulk", data={"n": index, "note": "x" * 100}) for index in range(count)])

    def peak_of_export() -> tuple[int, int]:
        tracemalloc.start()
        lines = sum(1 for _line in audit.jsonl_lines(audit.events(run_id="r_bulk")))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return lines, peak

    fill(5000)
    small = peak_of_export()
    fill(15000)
    large = peak_of_export()
    assert (small[0], large[0]) == (5000, 20000)
    assert large[1] < small[1] * 1.5, (small, large)


def test_operators_download_a_runs_log_and_a_date_range_others_cannot(screening, person_client):
    import json

    run_id = _run_with_history(screening)
    _screener, _backup, finance, operator = screening
    response = operator.get(f"/runs/{run_id}/audit.jsonl")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"] == f'attachment; filename="audit-{run_id}.jsonl"'
    kinds = [json.loads(line)["kind"] for line in b"".join(response.streaming_content).decode().splitlines()]
    assert kinds[0] == "run_started" and kinds[-1] == "step_ready" and len(kinds) == 8

    response = operator.get("/audit/export?since=2026-10-07&until=2026-10-07&format=csv")
    body = b"".join(response.streaming_content).decode().splitlines()
    assert body[0] == "at,kind,actor,run,step,workItem,requestId,data" and len(body) == 4  # decided, rework, ready
    refused = operator.get("/audit/export?since=06.10.2026&format=csv")
    assert refused.status_code == 400 and "is not a date like 2026-10-06" in refused.content.decode()

    assert finance.get(f"/runs/{run_id}/audit.csv").status_code == 403  # operators only
    assert operator.get("/runs/r_elsewhere/audit.csv").status_code == 404
    other, _ = person_client("ops@other.example", operator=True, org_slug="other")
    assert other.get(f"/runs/{run_id}/audit.csv").status_code == 404
    lines = b"".join(other.get("/audit/export?format=jsonl").streaming_content).decode().splitlines()
    # Only the other organization's own: its operator and token, made on the command line (issue 29).
    assert sorted(json.loads(line)["kind"] for line in lines) == ["person_added", "token_created"], lines


def test_the_run_page_tells_what_happened_in_plain_words_and_filters_by_who(screening):
    run_id = _run_with_history(screening)
    _screener, _backup, finance, _operator = screening
    html = page_of(finance, f"/runs/{run_id}")
    timeline = html.split('id="activity"')[1].split("</section>")[0]
    assert "a_screener started the run (version 1)" in timeline
    assert "“Screen” is ready for an agent" in timeline and "a_screener took “Screen”" in timeline
    assert "“Approve” is waiting for group finance" in timeline
    assert "fin@example.com rejected “Approve”" in timeline and "Also the aliases,<br>please." in timeline
    assert "The rejection sent the run back to “Screen”" in timeline
    item = AuditEvent.objects.get(run_id=run_id, kind="decided").work_item_id
    assert f'href="/work/{item}">the work item</a>' in timeline
    assert "Download this run" not in html  # operators only
    people = page_of(finance, f"/runs/{run_id}?who=people").split('id="activity"')[1].split("</section>")[0]
    assert people.count('class="timeline-entry') == 2  # the decision and the rework it caused
    server = page_of(finance, f"/runs/{run_id}?who=server").split('id="activity"')[1].split("</section>")[0]
    assert "took" not in server and server.count('class="timeline-entry') == 3


def page_of(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


# ---------------------------------------------------------------- the remaining kinds

CHECKED = """---
name: checked-screening
description: An agent screens; a model checks the summary before the step completes.
inputs:
  vendorName: string
  manager: person
steps:
  - id: screen
    agent: Screen the vendor and say which lists you searched.
    output:
      cleared: boolean
    check: The summary names the lists that were searched.
  - id: sign_off
    person: inputs.manager
    task: Sign the screening off.
  - id: done
    finish: screened
---
Screening with a check.
"""


def test_check_verdicts_forks_joins_and_server_failures_are_recorded(publish, make_agent, make_person, settings):
    from tests.support.chat_server import ChatServer
    from tests.support.processes import PARALLEL_REVIEW

    server = ChatServer().start()
    try:
        settings.CHECK_EVALUATOR_URL, settings.CHECK_EVALUATOR_MODEL = server.url, "scripted-evaluator-1"
        publish(CHECKED)
        agent = make_agent("screener")
        question = "The summary names the lists that were searched."
        run_id = agent.ok("start_run", process="checked-screening",
                          inputs={"vendorName": "Acme", "manager": "nobody@example.com"})["run"]["id"]
        token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
        server.script[question] = {"yes": 0.1}
        agent.error("submit", token=token, output={"cleared": True}, summary="Looked around.")
        server.script[question] = {"yes": 0.97}
        agent.ok("submit", token=token, output={"cleared": True}, summary="Searched OFAC and the EU list.")
    finally:
        server.stop()
    assert events_of(run_id)[2:] == [
        ("step_claimed", "a_screener", "screen"),
        ("submission_refused", "a_screener", "screen"),
        ("check_verdict", "a_screener", "screen"),
        ("submission_accepted", "a_screener", "screen"),
        ("step_failed", "server", "sign_off"),  # the manager is no person of this organization
        ("run_ended", "server", None),
    ]
    refused = AuditEvent.objects.get(run_id=run_id, kind="submission_refused")
    assert refused.data["check"] == "fail" and refused.data["issues"][0].startswith(f"check: {question} → no (")
    assert AuditEvent.objects.get(run_id=run_id, kind="check_verdict").data == {"verdict": "pass", "advisory": False}
    failed = AuditEvent.objects.get(run_id=run_id, kind="step_failed")
    assert "resolves" in failed.data["note"] or "not a person" in failed.data["note"]
    assert AuditEvent.objects.get(run_id=run_id, kind="run_ended").data["outcome"] == "failed"

    publish(PARALLEL_REVIEW, {"finance-approver": "finance"})
    finance = make_person("fin@example.com", groups=["finance"])
    view = agent.ok("start_run", process="parallel-review", inputs={"vendorName": "Acme"})
    forked = view["run"]["id"]
    token = agent.ok("claim", runId=forked, stepId="screen")["token"]
    agent.ok("submit", token=token, output={"cleared": True, "findings": "none"}, summary="Screened.")
    item = [i["workItem"] for i in finance.ok("get_work")["items"] if i["runId"] == forked][0]
    finance.ok("decide", runId=forked, workItemId=item["id"], snapshot=item["snapshot"], decision="approved")
    kinds = [kind for kind, _actor, step in events_of(forked)]
    assert kinds[:4] == ["run_started", "step_ready", "step_ready", "step_ready"]  # the fork, then both entries
    assert AuditEvent.objects.filter(run_id=forked, kind="step_ready").first().data == {
        "kind": "parallel", "branches": ["screen", "approve"]}
    assert kinds[-3:] == ["decided", "branches_joined", "run_ended"]


def test_a_write_over_rest_carries_its_request_id_and_the_authenticated_actor(screening, client):
    """The actor comes from the bearer token, never from the arguments (a `by` argument is refused
    by the tool's schema and changes nothing)."""
    import json

    from kernel.organizations import create_agent, default_organization

    _agent, token = create_agent(default_organization(), "rest-agent")
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    body = {"process": "screen-and-approve", "inputs": {"vendorName": "Acme"}, "requestId": "rest-start-1"}
    response = client.post("/api/v1/tools/start_run", json.dumps(body), content_type="application/json", **headers)
    run_id = response.json()["data"]["run"]["id"]
    spoofed = client.post("/api/v1/tools/claim", json.dumps({"runId": run_id, "stepId": "screen", "by": "ceo@example.com",
                                                             "requestId": "rest-claim-1"}),
                          content_type="application/json", **headers)
    assert spoofed.status_code == 400 and spoofed.json()["error"]["issues"] == ["by: not an argument of this tool"]
    started = AuditEvent.objects.get(run_id=run_id, kind="run_started")
    assert (started.actor, started.actor_kind, started.request_id) == ("a_rest-agent", "agent", "rest-start-1")
    assert not AuditEvent.objects.filter(run_id=run_id, kind="step_claimed").exists()
