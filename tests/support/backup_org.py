"""An organization with runs in every state, made through the tool layer and the services (for
tests/test_backup_restore.py and bench/backup_restore.py).

Run i goes through `STAGES[i % len(STAGES)]`: started, claimed, waiting on a person with a file as
evidence, ended, sent back into rework (files in history), cancelled, escalated, held by a
person, a person's task completed with a file, an event held, an event consumed. Every run has a
file among its inputs (an upload's id). Times move on by a minute a run, so everything has its own
instant.
"""

import base64
import datetime as dt
from dataclasses import dataclass, field

from kernel import clock, jsonio
from tests.support.actors import Actor
from tests.support.flows import do_agent_step

REVIEW = """---
name: evidence-review
description: An agent screens a vendor with a report; finance approves or sends it back.
inputs:
  vendorName: string
  amount: number
  dossier: { type: string, description: The upload id of the vendor's dossier }
steps:
  - id: screen
    agent: Screen the vendor and attach the report.
    output:
      cleared: boolean
    evidence: [file]
    due: 1h
  - id: approve
    person: finance-approver
    approve: Approve the vendor.
    on_reject: screen
    due: 2d
  - id: done
    finish: approved
---
Screen, then approve.
"""

FILING = """---
name: filing
description: A clerk files the signed contract.
inputs:
  contract: string
steps:
  - id: file_it
    person: clerks
    task: File the signed contract and attach the scan.
    output:
      reference: string
    evidence: [file]
  - id: done
    finish: filed
---
File it.
"""

SIGNAL = """---
name: paid-after-check
description: An agent checks the invoice, then the run waits for the payment.
inputs:
  invoice: { type: string, description: The upload id of the invoice }
steps:
  - id: check
    agent: Check the invoice.
    output:
      ok: boolean
  - id: paid
    wait_for: paid
  - id: done
    finish: paid
---
Check, then wait.
"""

STAGES = ("started", "claimed", "waiting", "ended", "rework", "cancelled", "escalated", "held", "task", "event_held",
          "event_consumed")
START = dt.datetime(2026, 11, 2, 8, 0, tzinfo=dt.UTC)


@dataclass
class Organization:
    slug: str
    agent: Actor
    finance: Actor
    clerk: Actor
    operator: Actor
    run_ids: list[str] = field(default_factory=list)


def _publish(organization, source: str, bindings: dict[str, str]):
    from processes.publishing import bind_roles, import_draft, publish

    draft = import_draft(organization=organization, source=source)
    assert not draft.issues, draft.issues
    bind_roles(draft=draft, bindings=bindings)
    return publish(draft=draft)


def _file(actor: Actor, name: str, text: str) -> dict:
    upload = actor.ok("upload", fileName=name, contentType="text/plain",
                      contentBase64=base64.b64encode(text.encode()).decode())
    return {"kind": "file", "ref": upload["id"]}


def setup(slug: str) -> Organization:
    """The organization, its people, agent and processes (two versions of the review, how one of
    its fields is shown, a draft never published), and a person's page choices."""
    from kernel import audit
    from kernel.models import NoticePreference, PageSettings
    from kernel.organizations import create_agent, create_person, get_or_create_organization
    from processes.definition import definition_for
    from processes.presentation import FieldFacts, declare
    from processes.publishing import import_draft
    from runs.services import saved_views
    from sso.models import ProvisionedPerson

    organization = get_or_create_organization(slug, f"{slug.title()} Ltd")
    actors = {}
    for key, email, groups, operator in (("finance", f"fin@{slug}.example", [f"{slug}-finance"], False),
                                         ("clerk", f"clerk@{slug}.example", [f"{slug}-clerks"], False),
                                         ("operator", f"ops@{slug}.example", [], True)):
        _user, token = create_person(organization, email, groups=groups, operator=operator, password="pw-restored-1")
        actors[key] = Actor(token=token, name=email)
    _agent, token = create_agent(organization, "screener")
    first = _publish(organization, REVIEW, {"finance-approver": f"{slug}-finance"})
    version = _publish(organization, REVIEW.replace("with a report", "with a signed report"),
                       {"finance-approver": f"{slug}-finance"})
    declare(version=version, definition=definition_for(version.id), path="inputs.amount",
            facts=FieldFacts(label="Yearly spend", currency="EUR"), actor=audit.COMMAND_LINE)
    assert first.number == 1 and version.number == 2
    _publish(organization, FILING, {"clerks": f"{slug}-clerks"})
    _publish(organization, SIGNAL, {})
    import_draft(organization=organization, source=FILING.replace("files the signed", "files the countersigned"))
    finance = actors["finance"].identity
    now = clock.now()
    saved_views.save(identity=finance, name="Big ones", query="amount_min=10000&sort=due", now=now)
    NoticePreference.objects.create(user=finance.user, organization=organization, kind="new_work", delivery="digest",
                                    updated_at=now)
    PageSettings.objects.create(user=finance.user, organization=organization, time_zone="Europe/Berlin")
    ProvisionedPerson.objects.create(user=actors["clerk"].identity.user, issuer="https://login.example.com",
                                     external_id=f"clerk-{slug}", created_at=now)  # SCIM's row (sso/provisioning.py)
    return Organization(slug=slug, agent=Actor(token=token, name="screener"), **actors)


def _open_item(run_id: str, step_id: str):
    """The run's open work item of the step (read directly: get_work's first page may not show it
    among a thousand others)."""
    from runs.models import WorkItem

    return WorkItem.objects.select_related("run").get(run_id=run_id, step_id=step_id, state="open")


def decide(person: Actor, run_id: str, step_id: str, decision: str, **extra) -> dict:
    item = _open_item(run_id, step_id)
    return person.ok("decide", runId=run_id, workItemId=item.id, snapshot=item.run.snapshot, decision=decision,
                     **extra)


def add_runs(org: Organization, count: int, *, first: int = 0) -> list[str]:
    """`count` runs, run i at stage i (from `first`), each a minute after the one before."""
    made = []
    for i in range(first, first + count):
        with clock.frozen(START + dt.timedelta(minutes=i)):
            made.append(_run(org, i, STAGES[i % len(STAGES)]))
    org.run_ids += made
    return made


def _run(org: Organization, i: int, stage: str) -> str:
    agent, finance, clerk, operator = org.agent, org.finance, org.clerk, org.operator
    if stage == "task":
        scan = _file(clerk, f"contract-{i}.txt", f"Contract {i}, signed.\n")
        run_id = agent.ok("start_run", process="filing", inputs={"contract": scan["ref"]})["run"]["id"]
        decide(clerk, run_id, "file_it", "completed", output={"reference": f"K-{i}"}, evidence=[scan],
               summary="Filed in the archive room.")
        return run_id
    if stage.startswith("event"):
        invoice = _file(agent, f"invoice-{i}.txt", f"Invoice INV-{i}: 1250.50 EUR.\n")
        run_id = agent.ok("start_run", process="paid-after-check", inputs={"invoice": invoice["ref"]})["run"]["id"]
        if stage == "event_held":
            agent.ok("send_event", runId=run_id, name="paid", data={"amount": 1250.5, "ref": f"P-{i}"})
        do_agent_step(agent, run_id, "check", {"ok": True})
        if stage == "event_consumed":
            agent.ok("send_event", runId=run_id, name="paid", data={"amount": 99, "ref": f"P-{i}"})
        return run_id
    # Numbers a double cannot hold are kept exactly, through the archive too.
    amount = 48000 + i if i % 3 else jsonio.loads(f"1234567890123456789.{i:03d}")
    dossier = _file(agent, f"dossier-{i}.txt", f"Vendor {i}: registered in 2019.\n")
    run_id = agent.ok("start_run", process="evidence-review", inputs={"vendorName": f"Vendor {i}", "amount": amount,
                                                                       "dossier": dossier["ref"]})["run"]["id"]
    if stage == "started":
        return run_id
    if stage == "claimed":
        agent.ok("claim", runId=run_id, stepId="screen")
        return run_id
    if stage == "escalated":
        token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
        agent.ok("escalate", token=token, note="The EU list site is down.")
        return run_id
    report = _file(agent, f"screening-{i}.txt", f"Vendor {i}: no hits on OFAC or EU.\n")
    do_agent_step(agent, run_id, "screen", {"cleared": True}, evidence=[report])
    if stage == "ended":
        decide(finance, run_id, "approve", "approved")
    elif stage == "rework":
        decide(finance, run_id, "approve", "rejected", note="Check the aliases too.")
    elif stage == "cancelled":
        operator.ok("cancel", runId=run_id, reason="Vendor withdrew.")
    elif stage == "held":
        from runs.services import queue

        queue.take(identity=finance.identity, work_item_id=_open_item(run_id, "approve").id, now=clock.now())
    return run_id


# --- what a server answers about the organization: compared before a backup and after a restore ---


def without_urls(value):
    """Run data without the short-lived signed `url` of file evidence (they name the server's own
    signature and the organization's id)."""
    if isinstance(value, dict):
        return {key: without_urls(item) for key, item in value.items() if key != "url"}
    if isinstance(value, list):
        return [without_urls(item) for item in value]
    return value


def run_views(slug: str, at: dt.datetime) -> dict[str, dict]:
    """get_run of every run of the organization through the tool layer, as its agent, at `at`."""
    from api.tools import call_tool
    from kernel.identity import AGENT, Identity
    from kernel.models import Agent
    from kernel.organizations import organization_by_id
    from runs.models import Run

    agent = Agent.objects.get(organization__slug=slug, name="screener")
    identity = Identity(organization=organization_by_id(agent.organization_id), kind=AGENT, agent=agent)
    with clock.frozen(at):
        return {run_id: call_tool(identity, "get_run", {"runId": run_id}) for run_id in
                Run.objects.filter(organization_id=agent.organization_id).order_by("id").values_list("id", flat=True)}


def runs_seen_by(email: str) -> list[str]:
    """The run ids a person's list_runs gives (who sees what: their groups, runs they started)."""
    from django.contrib.auth import get_user_model

    from api.tools import call_tool
    from kernel.identity import person_identity

    identity = person_identity(get_user_model().objects.get(email=email))
    seen, arguments = [], {"limit": 100}
    while True:
        envelope = call_tool(identity, "list_runs", arguments)
        assert envelope["ok"], envelope
        seen += [run["id"] for run in envelope["data"]["items"]]
        if not envelope["data"]["nextCursor"]:
            return sorted(seen)
        arguments["cursor"] = envelope["data"]["nextCursor"]


def stored_file_hashes(slug: str) -> dict[str, tuple[str, str]]:
    """upload id -> (SHA-256 of the bytes read through the upload's file, the row's SHA-256)."""
    import hashlib

    from runs.models import Upload

    hashes = {}
    for upload in Upload.objects.filter(organization__slug=slug).order_by("id"):
        with upload.file.open("rb") as stored:
            hashes[upload.id] = (hashlib.sha256(stored.read()).hexdigest(), upload.sha256)
    return hashes


def table_rows() -> dict[str, int]:
    """Rows of every table an archive carries, whatever their organization."""
    from runs.services.backup import tables

    return {table.label: table.model._base_manager.count() for table in tables()}
