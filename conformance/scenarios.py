"""The runner's own scenarios, each driving its processes (conformance/processes/) through the
protocol only. Section numbers are the spec's (specification.md, tools.md, the profiles)."""

import base64
import datetime as dt
import hashlib
import json
import time
import uuid
from decimal import Decimal

from .core import Context, new_request_id, observes
from .evaluator import default_verdict
from .session import CORE_PROCESSES, PROFILE_PROCESSES, scenario
from .walk import load_frontmatter, runner_process_text

REQUIRED_TOOLS = ["describe", "list_processes", "start_run", "get_run", "get_work", "claim", "submit", "escalate",
                  "decide", "cancel"]
UNSETTLED = {"ready", "claimed", "waiting"}
LINK = {"kind": "link", "ref": "https://example.org/conformance-evidence"}
PAST = "2020-01-01T00:00:00Z"


def tag() -> str:
    return f"conformance {uuid.uuid4().hex[:12]}"


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def parse_instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def without_urls(value):
    """Run data with the short-lived file URLs taken out (a replay may sign them afresh, §5)."""
    if isinstance(value, dict):
        return {k: without_urls(v) for k, v in value.items() if k != "url"}
    if isinstance(value, list):
        return [without_urls(v) for v in value]
    return value


@observes("tools-upload")
def upload_file(ctx: Context, actor, content: bytes = b"Conformance screening report: no hits.") -> dict:
    uploaded = ctx.ok(actor, "upload", fileName="report.txt", contentType="text/plain",
                      contentBase64=base64.b64encode(content).decode())
    ctx.equal(uploaded["sha256"], hashlib.sha256(content).hexdigest(), "upload returns the SHA-256 of the bytes")
    ctx.equal(uploaded["bytes"], len(content), "upload returns the byte count")
    return uploaded


def exact_number(ctx: Context, text: str):
    """The number as the transport carries it exactly: a Decimal over REST, a float over MCP."""
    return Decimal(text) if getattr(ctx.session.transport, "exact_numbers", False) else float(text)


def tool_offered(ctx: Context, tool: str) -> bool:
    offered = tool in (ctx.session.described.get("tools") or [])
    if not offered:
        ctx.note(f"{tool} is not offered: its checks are left out")
    return offered


def decide(ctx: Context, actor, item: dict, decision: str, **extra):
    arguments = {**item["decide"]["arguments"], "requestId": new_request_id(), "decision": decision, **extra}
    return ctx.ok(actor, "decide", **arguments)


def decide_refused(ctx: Context, actor, item: dict, decision: str, code, label: str, issues=None, **extra):
    arguments = {**item["decide"]["arguments"], "requestId": new_request_id(), "decision": decision, **extra}
    exchange = ctx.call(actor, "decide", **arguments)
    codes = code if isinstance(code, tuple) else (code,)
    ctx.check(not exchange.ok and exchange.error.get("code") in codes, f"{label}: refused as {' or '.join(codes)}",
              exchange)
    if issues is not None:
        ctx.equal(sorted(exchange.error.get("issues") or []), sorted(issues), f"{label}: the issues", exchange)
    return exchange.error


def submit_screen(ctx: Context, token: str, file_ref: str, *, cleared=True, findings="No hits.", **extra):
    return ctx.ok(ctx.agent, "submit", token=token, output={"cleared": cleared, "findings": findings},
                  evidence=[{"kind": "file", "ref": file_ref}], summary="Screened both lists; nothing found.",
                  next="approve" if cleared else "decline", reason="The findings support the verdict.", **extra)


@observes("3.5-states")
def ended_checks(ctx: Context, view: dict, outcome: str | None, *, state="ended"):
    ctx.equal(view["run"]["state"], state, "the run's state")
    if outcome is not None:
        ctx.equal(view["run"]["outcome"], outcome, "the run's outcome")
    ctx.check(isinstance(view["run"]["ended"], dict), "run.ended is set once the run ended (§3.5)")
    unsettled = [s["id"] for s in view["steps"] if s["state"] in UNSETTLED]
    ctx.equal(unsettled, [], "no step is ready, claimed or waiting after the end (§3.5)")
    ctx.equal(view["workItems"], [], "every open work item is removed at the end (§3.5)")


@observes("3.5-run-ended")
def ended_writes_refused(ctx: Context, view: dict, token: str | None = None, item: dict | None = None):
    """§3.5: every write to an ended run other than a replay is conflict run_ended, checked first."""
    run_id = view["run"]["id"]
    tools = ctx.session.described.get("tools") or []
    if token:
        ctx.refused(ctx.agent, "submit", "conflict", ["run_ended"], token=token, output={}, summary="late",
                    label="submit on an ended run")
        ctx.refused(ctx.agent, "escalate", "conflict", ["run_ended"], token=token, note="late",
                    label="escalate on an ended run")
        if "renew" in tools:
            ctx.refused(ctx.agent, "renew", "conflict", ["run_ended"], token=token, label="renew on an ended run")
    first = view["steps"][0]["id"]
    ctx.refused(ctx.agent, "claim", "conflict", ["run_ended"], runId=run_id, stepId=first,
                label="claim on an ended run")
    ctx.refused(ctx.agent, "claim", "conflict", ["run_ended"], runId=run_id, stepId="conformance-no-such-step",
                label="claim of an unknown step on an ended run: run_ended before not_found")
    if item:
        ctx.refused(ctx.agent, "decide", "conflict", ["run_ended"], runId=run_id, workItemId=item["id"],
                    snapshot="not-a-snapshot", decision="approved", label="decide on an ended run, before all else")
    ctx.refused(ctx.operator, "cancel", "conflict", ["run_ended"], runId=run_id, reason="again",
                label="cancel on an ended run")
    if "send_event" in tools:
        ctx.refused(ctx.agent, "send_event", "conflict", ["run_ended"], runId=run_id, name="conformance-late",
                    label="send_event on an ended run")


# ==================================================================== describe and identities


@scenario("describe", always=True)
def describe(ctx: Context):
    """§4.1: describe; list_processes lists every process the runner needs (publishing is out of band)."""
    ctx.must("4.1-describe")
    described = ctx.ok(ctx.agent, "describe")
    ctx.session.described = described
    ctx.equal(described["protocol"], "agentprocess", "describe.protocol")
    ctx.equal(described["version"], "core-2", "describe.version")
    missing = [tool for tool in REQUIRED_TOOLS if tool not in described["tools"]]
    ctx.equal(missing, [], "describe.tools lists every required tool (§4.1)")
    ctx.check(described["leaseSeconds"] > 0, "describe.leaseSeconds is positive")
    ctx.check(isinstance(described["person"]["format"], str), "describe.person.format is named")
    limits = described.get("limits") or {}
    ctx.check(limits.get("runDataBytes", 0) > 0, "describe.limits.runDataBytes is positive (§6 rule 3)")
    if "check-1" in described["profiles"]:
        for key in ("checkPass", "checkFail", "checkConfidence", "checkStateBytes"):
            ctx.check(key in limits, f"describe.limits.{key} is listed with check-1 (check-1 §5)")
    for person in (ctx.approver, ctx.operator):
        ctx.equal(ctx.ok(person, "describe")["version"], "core-2", f"describe answers {person.name} too")
    ctx.note(f"profiles: {', '.join(described['profiles']) or 'none'}; lease {described['leaseSeconds']} s")

    ctx.must("4.1-list-processes")
    listed, cursor = {}, None
    for _ in range(100):
        page = ctx.ok(ctx.agent, "list_processes", **({"cursor": cursor} if cursor else {}))
        for item in page["items"]:
            ctx.check(item["name"] not in listed, f"list_processes lists {item['name']} once across pages")
            listed[item["name"]] = item
        cursor = page.get("nextCursor")
        if not cursor:
            break
    ctx.session.published = listed
    needed = CORE_PROCESSES + [name for name, profile in PROFILE_PROCESSES.items()
                               if profile in described["profiles"]]
    absent = [name for name in needed if name not in listed]
    ctx.check(not absent, f"list_processes lists every runner process; not published: {', '.join(absent)} "
                          "(run the lines of --print-publish first)")
    from .fixtures import FIXTURE_PROFILES, spec_fixtures

    fixtures = [name for name in spec_fixtures(ctx.session.options.spec)
                if FIXTURE_PROFILES.get(name) in (None, *described["profiles"])]
    absent = [name for name in fixtures if name not in listed]
    ctx.check(not absent, f"list_processes lists every spec fixture the profiles allow; not published: "
                          f"{', '.join(absent)} (run the lines of --print-publish --spec DIR first)")
    for name in needed:
        frontmatter = load_frontmatter(runner_process_text(name))
        item = listed[name]
        ctx.equal(item["description"], frontmatter["description"], f"list_processes description of {name}")
        ctx.equal(item["inputs"], frontmatter.get("inputs", {}), f"list_processes inputs of {name} (§2, tools.md)")
        ctx.check(isinstance(item["version"], int) and item["version"] >= 1, f"{name} has a version number")
        if "requires" in frontmatter:
            with ctx.must("2.1-requires"):
                ctx.equal(item.get("requires"), frontmatter["requires"], f"list_processes requires of {name}")


@scenario("identities", processes=["conformance-initiator", "conformance-queue"], always=True)
def identities(ctx: Context):
    """§3.4 initiator: each person starts a run whose task is theirs; its assignment tells the runner the
    person value (§2.3 `person`) the server resolves the token to. An agent may not start it."""
    ctx.must("3.4-initiator")
    people = [*ctx.session.people, ctx.operator]
    for person in people:
        view = ctx.start(person, "conformance-initiator", {"purpose": tag()})
        item = ctx.item_for(view, "confirm")
        assigned = item["assignedTo"]
        ctx.check(set(assigned) == {"person"}, f"an initiator task is assigned to a person: {assigned}")
        person.person = assigned["person"]
        if ctx.session.described["person"]["format"] == "email":
            ctx.check(isinstance(person.person, str) and "@" in person.person,
                      f"the person value of {person.name} is an email: {person.person!r}")
        ctx.equal(item["decide"]["decisions"], ["completed", "failed"], "a task's decisions (tools.md)")
        ctx.equal(item.get("mode"), "test", "a work item of a test run says so (§3.3)")
        view = decide(ctx, person, item, "completed", output={"confirmed": True})
        ended_checks(ctx, view, "confirmed")
        ctx.equal(view["run"]["ended"], {"by": "server", "at": view["run"]["ended"]["at"], "note": None},
                  "a finish ends the run with by server and a null note (§3.5)")
        ctx.check(view["data"]["steps"]["confirm"].get("by"), "a completed task records who (by)")
    ctx.must("3.4-initiator")
    values = [person.person for person in people]
    ctx.equal(len(set(values)), len(values), "every person token resolves to its own person")
    ctx.refused(ctx.agent, "start_run", "invalid", label="an agent may not start a process with an initiator step "
                "(tools.md start_run)", process="conformance-initiator", inputs={"purpose": tag()})
    view = ctx.start(ctx.agent, "conformance-queue", {"label": tag()})
    ctx.session.agent_ref = view["run"]["startedBy"]
    ctx.check(isinstance(ctx.session.agent_ref, str) and ctx.session.agent_ref, "run.startedBy names the agent")
    ctx.note("people: " + ", ".join(f"{p.name}={p.person}" for p in people))


# ==================================================================== the agent loop


@scenario("agent-loop", processes=["conformance-agent-loop"])
def agent_loop(ctx: Context):
    """§3.3 and tools.md: get_work, claim (replay, claimed_by_you/other), renew, upload, submit
    (not_accepted with every issue, a failed call not recorded), the token rules of §6 rule 2 (a
    lapsed lease: the lease-lapse scenario)."""
    agent, described = ctx.agent, ctx.session.described
    inputs = {"subject": tag()}
    ctx.must("3.2-moving-on")
    started_request = new_request_id()
    view = ctx.start(agent, "conformance-agent-loop", inputs, requestId=started_request)
    run_id = view["run"]["id"]
    ctx.equal(ctx.states(view), {"screen": "ready", "approve": None, "decline": None, "done": None},
              "only the first step is ready at start (§3.2)")
    ctx.equal(view["run"]["state"], "active", "a run with a ready agent step is active (§3.5)")
    ctx.equal(view["run"]["mode"], "test", "run.mode")
    ctx.equal(view["run"]["version"], ctx.session.published["conformance-agent-loop"]["version"],
              "start_run takes the latest published version")
    ctx.check(isinstance(view["body"], str) and "Conformance: agent loop" in view["body"], "the run view has the body")
    ctx.equal(view["data"]["inputs"], inputs, "run data inputs")
    ctx.must("4-idempotent")
    again = ctx.ok(agent, "start_run", process="conformance-agent-loop", inputs=inputs, mode="test",
                   requestId=started_request)
    ctx.equal(again["run"]["id"], run_id, "a replayed start_run returns the original run (§4)")
    ctx.refused(agent, "start_run", "conflict", label="a requestId reused with other arguments",
                process="conformance-agent-loop", inputs={"subject": tag()}, mode="test", requestId=started_request)

    ctx.must("tools-claim")
    item = ctx.find_work(agent, run_id, "screen", process="conformance-agent-loop")
    ctx.equal(item["claim"]["tool"], "claim", "get_work gives the claim call")
    ctx.equal({k: v for k, v in item["claim"]["arguments"].items() if k != "requestId"},
              {"runId": run_id, "stepId": "screen"}, "the claim call's arguments")
    ctx.check("requestId" in item["claim"]["arguments"], "the claim call has a requestId to fill")
    ctx.equal(item["handoff"], None, "a first attempt has no handoff (§3.3)")
    ctx.equal(item["mode"], "test", "a get_work item of a test run says so")
    ctx.equal((item["process"], item["version"]), ("conformance-agent-loop", view["run"]["version"]),
              "the item names its process and version")

    claim_request = new_request_id()
    claimed = ctx.ok(agent, "claim", runId=run_id, stepId="screen", requestId=claim_request)
    token = claimed["token"]
    ctx.equal(claimed["step"]["output"], {"cleared": "boolean", "findings": "string"}, "claim.step.output")
    ctx.equal(claimed["step"]["evidence"], ["file"], "claim.step.evidence")
    ctx.equal([route["to"] for route in claimed["step"]["next"]], ["approve", "decline"], "claim.step.next routes")
    ctx.equal(claimed["step"]["next"][0].get("when"), "The subject is cleared", "a route keeps its when text")
    ctx.check("Screen the subject" in claimed["step"]["instructions"], "claim.step.instructions")
    ctx.equal((claimed["handoff"], claimed["mode"]), (None, "test"), "claim handoff and mode")
    ctx.equal(claimed["data"]["inputs"], inputs, "claim carries the run data")
    lease = (parse_instant(claimed["expiresAt"]) - parse_instant(view["run"]["startedAt"])).total_seconds()
    ctx.check(described["leaseSeconds"] - 5 <= lease <= described["leaseSeconds"] + 120,
              f"claim.expiresAt is about leaseSeconds ahead ({lease:.0f} s)")
    ctx.must("4-idempotent")
    replayed = ctx.ok(agent, "claim", runId=run_id, stepId="screen", requestId=claim_request)
    ctx.equal(replayed["token"], token, "a replayed claim returns the original token (§3.3)")
    ctx.must("tools-claim")
    ctx.refused(agent, "claim", "conflict", ["claimed_by_you"], runId=run_id, stepId="screen",
                label="claiming a step you hold")
    if len(ctx.session.agents) > 1:
        other = ctx.session.agents[1]
        ctx.refused(other, "claim", "conflict", ["claimed_by_other"], runId=run_id, stepId="screen",
                    label="claiming a step another agent holds")
        ctx.must("tools-get-work")
        ctx.find_work(other, run_id, "screen", process="conformance-agent-loop", present=False,
                      label="get_work does not list a step another agent holds")
    else:
        ctx.note("one agent token: claimed_by_other not tried (give --agent-token twice)")
    ctx.must("tools-claim")
    ctx.refused(agent, "claim", "forbidden", runId=run_id, stepId="approve",
                label="claiming a person's step (tools.md claim)")
    ctx.refused(agent, "claim", "not_found", runId="r_conformance_none", stepId="screen",
                label="claiming on a run that does not exist")
    ctx.must("6.2-one-actor")
    seen = ctx.ok(agent, "get_run", runId=run_id)
    ctx.equal(ctx.states(seen)["screen"], "claimed", "get_run shows the step claimed")
    ctx.check(token not in json.dumps(seen), "get_run never shows a token (§6 rule 2)")

    ctx.must("3.3-lease")
    if tool_offered(ctx, "renew"):
        renewed = ctx.ok(agent, "renew", token=token, progress="Checked the first list.")
        ctx.check(renewed["token"] != token, "renew returns a new token")
        ctx.check(parse_instant(renewed["expiresAt"]) >= parse_instant(claimed["expiresAt"]),
                  "renew moves the expiry on")
        ctx.refused(agent, "submit", "stale", token=token, output={"cleared": True, "findings": "x"},
                    summary="With the replaced token.", label="submit with a token renew replaced (§6 rule 2)")
        token, claimed["expiresAt"] = renewed["token"], renewed["expiresAt"]
    ctx.must("4.3-errors")
    ctx.refused(agent, "submit", "invalid", token="not-a-token", output={}, summary="x",
                label="a token that does not verify")

    uploaded = upload_file(ctx, agent)
    ctx.must("6.3-acceptance")
    failed_request = new_request_id()
    refusal = ctx.refused(agent, "submit", "not_accepted", requestId=failed_request, token=token,
                          output={"cleared": "yes", "extra": 1}, summary="Screened.",
                          label="a submission breaking every rule at once (§6 rule 3)")
    expected = ["output.cleared: expected boolean", "output.findings: missing", "output.extra: not declared",
                "evidence: file required", "next: required, one of approve, decline", "reason: required"]
    ctx.equal(sorted(refusal.get("issues") or []), sorted(expected), "every issue at once, as tools.md words them")
    missing_file = ctx.refused(agent, "submit", "not_accepted", token=token,
                               output={"cleared": True, "findings": "x"}, summary="Screened.",
                               evidence=[{"kind": "file", "ref": "f_conformance_none"}], next="approve",
                               reason="Cleared.", label="evidence naming no upload")
    ctx.check("evidence f_conformance_none: not found" in (missing_file.get("issues") or []),
              "the issue names the missing upload (tools.md)")
    ctx.equal(ctx.states(ctx.ok(agent, "get_run", runId=run_id))["screen"], "claimed",
              "a refused submission changes nothing; the claim stands")

    ctx.must("4-write-view")
    done = submit_screen(ctx, token, uploaded["id"], requestId=failed_request)  # a refused call is not recorded
    ctx.equal(ctx.states(done), {"screen": "done", "approve": "waiting", "decline": None, "done": None},
              "the chosen route is made ready in the same write (§4)")
    ctx.equal(done["run"]["state"], "waiting", "a run waiting on a person is waiting (§3.5)")
    ctx.must("3.1-run-data")
    record = done["data"]["steps"]["screen"]
    ctx.equal(record["output"], {"cleared": True, "findings": "No hits."}, "steps.screen.output")
    ctx.equal((record["next"], record["reason"]), ("approve", "The findings support the verdict."),
              "the chosen next and reason are recorded (§3.2)")
    ctx.equal(record["summary"], "Screened both lists; nothing found.", "the summary is recorded (§3.3)")
    ctx.equal(record["by"], ctx.session.agent_ref, "by is the authenticated agent")
    ctx.must("5-evidence")
    [evidence] = record["evidence"]
    ctx.equal((evidence["kind"], evidence["ref"], evidence["sha256"]), ("file", uploaded["id"], uploaded["sha256"]),
              "a file evidence item in run data carries its hash")
    ctx.check(isinstance(evidence.get("url"), str) and evidence["url"], "a file item carries a url (§5)")
    ctx.must("3.1-run-data")
    ctx.equal(record.get("history") or [], [], "a first completion has no history")
    ctx.must("3.3-lost-replay")
    replay = ctx.ok(agent, "submit", token=token, output={"cleared": True, "findings": "No hits."},
                    evidence=[{"kind": "file", "ref": uploaded["id"]}], summary="Screened both lists; nothing found.",
                    next="approve", reason="The findings support the verdict.", requestId=failed_request)
    ctx.equal(without_urls(replay), without_urls(done), "a replayed submit returns the original result (§4)")
    ctx.must("6.2-one-actor")
    ctx.refused(agent, "submit", "stale", token=token, output={"cleared": True, "findings": "x"}, summary="Twice.",
                label="submit again with the token of a completed claim")
    ctx.must("tools-claim")
    ctx.refused(agent, "claim", "conflict", ["not_ready"], runId=run_id, stepId="screen",
                label="claiming a step that is done")

    # Rework through on_reject (§3.1): the approver sends it back; the note is readable at steps.approve.note.
    ctx.must("3.4-work-items")
    item = ctx.item_for(done, "approve")
    ctx.equal(item["decide"]["decisions"], ["approved", "rejected", "failed"], "an approval's decisions")
    ctx.equal((item["output"], item["evidence"], item["next"]), (None, None, None), "an approval takes no output")
    listed = ctx.find_work(ctx.approver, run_id, "approve", process="conformance-agent-loop")
    ctx.equal(listed["workItem"]["id"], item["id"], "the person's get_work lists the same work item")
    ctx.equal(listed["workItem"]["decide"]["arguments"]["workItemId"], item["id"], "with the exact decide call")
    ctx.must("3.1-run-data")
    rejected = decide(ctx, ctx.approver, listed["workItem"], "rejected", note="Name the lists you searched.")
    ctx.equal(ctx.states(rejected)["screen"], "ready", "a rejection makes on_reject ready (§3.2)")
    ctx.equal(rejected["data"]["steps"]["approve"]["decision"], "rejected", "the rejection stays current")
    ctx.equal(rejected["data"]["steps"]["approve"]["note"], "Name the lists you searched.",
              "the rejection note is at steps.approve.note (§3.1)")
    claimed = ctx.claim(agent, run_id, "screen")
    ctx.equal(claimed["data"]["steps"]["approve"]["note"], "Name the lists you searched.",
              "the returned-to step reads the note in its claim")
    second = submit_screen(ctx, claimed["token"], uploaded["id"], findings="OFAC and EU: no hits.")
    history = second["data"]["steps"]["screen"]["history"]
    ctx.equal(len(history), 1, "the earlier completion is kept in history (§3.1)")
    ctx.equal(history[0]["output"], {"cleared": True, "findings": "No hits."}, "history keeps the output")
    ctx.equal(history[0]["summary"], "Screened both lists; nothing found.", "history keeps the summary")
    ctx.equal(second["data"]["steps"]["screen"]["output"]["findings"], "OFAC and EU: no hits.", "the new output")
    ctx.must("3.1-run-data")
    approved = decide(ctx, ctx.approver, ctx.item_for(second, "approve"), "approved")
    ended_checks(ctx, approved, "accepted")
    ctx.equal([h["decision"] for h in approved["data"]["steps"]["approve"]["history"]], ["rejected"],
              "the approval's rejection moves to its history when it completes again")
    ended_writes_refused(ctx, approved, token=claimed["token"], item=item)


@scenario("escalation", processes=["conformance-agent-loop"])
def escalation(ctx: Context):
    """§3.3, §3.4: escalate, returned (handoff.returned), and a person completing in the agent's place."""
    agent, operator = ctx.agent, ctx.operator
    ctx.must("3.3-escalate")
    view = ctx.start(agent, "conformance-agent-loop", {"subject": tag()})
    run_id = view["run"]["id"]
    claimed = ctx.claim(agent, run_id, "screen")
    escalated = ctx.ok(agent, "escalate", token=claimed["token"], note="The EU list is unreachable.")
    ctx.equal(ctx.states(escalated)["screen"], "waiting", "an escalated step waits on a person")
    item = ctx.item_for(escalated, "screen")
    ctx.equal((item["escalation"]["note"], item["escalation"]["by"]), ("The EU list is unreachable.",
                                                                        ctx.session.agent_ref), "work item escalation")
    ctx.equal(item["decide"]["decisions"], ["returned", "completed", "failed"], "an escalated step's decisions")
    ctx.equal((item["output"], item["evidence"], [r["to"] for r in item["next"]]),
              (claimed["step"]["output"], claimed["step"]["evidence"], ["approve", "decline"]),
              "the work item carries the step's requirements as claim does")
    exchange = ctx.call(agent, "submit", token=claimed["token"], output={"cleared": True, "findings": "x"},
                        summary="After escalating.")
    ctx.check(not exchange.ok and exchange.error.get("code") in ("stale", "invalid"),
              "the token of an escalated claim no longer works", exchange)
    ctx.must("tools-get-work")
    ctx.find_work(agent, run_id, "screen", process="conformance-agent-loop", present=False,
                  label="an escalated step is not offered to agents")
    ctx.must("3.3-escalate")
    listed = ctx.find_work(operator, run_id, "screen", process="conformance-agent-loop",
                           label="the escalation reaches the operator's get_work")
    decide_refused(ctx, operator, listed["workItem"], "returned", ("not_accepted", "invalid"),
                   "returned without a note")
    ctx.must("3.3-handoff")
    returned = decide(ctx, operator, listed["workItem"], "returned", note="Use the mirror of the EU list.")
    ctx.equal(ctx.states(returned)["screen"], "ready", "a returned step is ready again")
    item = ctx.find_work(agent, run_id, "screen", process="conformance-agent-loop")
    back = (item["handoff"] or {}).get("returned") or {}
    ctx.equal(back.get("note"), "Use the mirror of the EU list.", "handoff.returned.note (§3.3)")
    ctx.check(back.get("by") and back.get("at"), "handoff.returned carries by and at")
    claimed = ctx.claim(agent, run_id, "screen")
    ctx.equal(((claimed["handoff"] or {}).get("returned") or {}).get("note"), "Use the mirror of the EU list.",
              "the claim carries handoff.returned")
    ctx.must("6.3-acceptance")
    escalated = ctx.ok(agent, "escalate", token=claimed["token"], note="Still unreachable.")
    item = ctx.item_for(escalated, "screen")
    decide_refused(ctx, operator, item, "completed", "not_accepted", "completing without the required file",
                   issues=["evidence: file required"], output={"cleared": False, "findings": "Hit on EU list."},
                   next="decline", reason="A hit.")
    uploaded = upload_file(ctx, operator, b"Operator's own screening: EU hit.")
    ctx.must("6.4-people-decide")
    done = decide(ctx, operator, item, "completed", output={"cleared": False, "findings": "Hit on EU list."},
                  evidence=[{"kind": "file", "ref": uploaded["id"]}], next="decline", reason="A hit.")
    ended_checks(ctx, done, "declined")
    ctx.check(done["data"]["steps"]["screen"]["by"] not in (None, ctx.session.agent_ref),
              "a person completing an escalated step is recorded as by")


@scenario("lease-lapse", processes=["conformance-agent-loop"], background=True)
def lease_lapse(ctx: Context):
    """§3.3: "When a lease ends the step is claimable immediately"; the handoff carries the last
    progress note and the issues of the last refused submission; the lapsed token is stale for
    submit and renew; "a lost claim … is retried with the same requestId and returns the original
    result, token included, even if the lease has ended since". The lease is waited out (beside the
    other scenarios) when describe's leaseSeconds is at most --lease-wait-max."""
    ctx.must("3.3-lease-lapse")
    agent, lease = ctx.agent, ctx.session.described["leaseSeconds"]
    longest = ctx.session.options.lease_wait_max
    if lease > longest:
        ctx.skip(f"the lease of {lease} s is longer than --lease-wait-max {longest:.0f} s: its lapse is not waited out")
    view = ctx.start(agent, "conformance-agent-loop", {"subject": tag()})
    run_id, claim_request = view["run"]["id"], new_request_id()
    claimed = ctx.ok(agent, "claim", runId=run_id, stepId="screen", requestId=claim_request)
    token = first_token = claimed["token"]
    expires, progress = claimed["expiresAt"], None
    if "renew" in (ctx.session.described.get("tools") or []):
        progress = "Half way: the first list is clear."
        renewed = ctx.ok(agent, "renew", token=token, progress=progress)
        token, expires = renewed["token"], renewed["expiresAt"]
    else:
        ctx.note("renew is not offered: no progress note to hand off")
    refused = ctx.refused(agent, "submit", "not_accepted", token=token, output={"cleared": True, "findings": "x"},
                          summary="Without the file.", label="a submission without its file (its issues are handed off)")
    lapse = max(0.0, (parse_instant(expires) - utc_now()).total_seconds())
    ctx.wait_for(lambda: utc_now() > parse_instant(expires) + dt.timedelta(seconds=0.5), lapse + 5,
                 "the lease lapses", pause=min(5.0, max(0.25, lapse / 20)))
    item = ctx.find_work(agent, run_id, "screen", process="conformance-agent-loop",
                         label="a step whose lease ended is listed again at once (§3.3)")
    handoff = item["handoff"] or {}
    if progress:
        ctx.equal(handoff.get("progress"), progress, "handoff.progress after a lapse")
    ctx.equal(sorted(handoff.get("issues") or []), sorted(refused.get("issues") or []),
              "handoff.issues of the last refused submission")
    ctx.refused(agent, "submit", "stale", token=token, output={"cleared": True, "findings": "x"},
                summary="Too late.", label="submit after the lease ended (§6 rule 2)")
    if progress:
        ctx.refused(agent, "renew", "stale", token=token, label="renew after the lease ended (tools.md renew)")
    lost = ctx.ok(agent, "claim", runId=run_id, stepId="screen", requestId=claim_request)
    ctx.equal(lost["token"], first_token, "a lost claim replayed after its lease ended: the original token")
    claimed = ctx.claim(agent, run_id, "screen")
    ctx.equal((claimed["handoff"] or {}).get("progress"), progress, "the next claim carries the handoff")
    ctx.note(f"lease of {lease} s waited out")


# One minute is the shortest duration a file can say (§2.4). Times in run data may be whole seconds,
# so a deadline read from them can be up to a second early: the late event goes this much after it.
MINUTE = dt.timedelta(minutes=1)
LATE_MARGIN = dt.timedelta(seconds=1.5)


@scenario("timers", processes=["conformance-timers"], background=True)
def timers(ctx: Context):
    """§2.2 `due`, `timeout` and `on_timeout`, with the shortest duration (1m), beside the other
    scenarios: an event before the timeout is consumed by the wait; after it, the run "continues
    at on_timeout" whether or not the server's timer fired yet, and the late event is not consumed
    by the timed-out wait; the timeout fires on its own within --timer-bound; a step past its `due`
    is overdue and still open."""
    ctx.must("2.2-timeout")
    agent, bound = ctx.agent, ctx.session.options.timer_bound
    if not tool_offered(ctx, "send_event"):
        ctx.skip("send_event is not offered")
    waiting = {}
    for role in ("in-time", "late-event", "alone"):
        view = ctx.start(agent, "conformance-timers", {"label": tag()})
        claimed = ctx.claim(agent, view["run"]["id"], "start")
        view = ctx.ok(agent, "submit", token=claimed["token"], output={}, summary="Started.")
        ctx.equal(ctx.states(view)["hold"], "waiting", f"a wait_for with a timeout waits ({role})")
        waiting[role] = (view["run"]["id"], parse_instant(view["data"]["steps"]["start"]["at"]) + MINUTE)
    ctx.must("2.2-due")
    view = ctx.start(agent, "conformance-timers", {"label": tag()})
    due_run = view["run"]["id"]
    [row] = [step for step in view["steps"] if step["id"] == "start"]
    item = ctx.find_work(agent, due_run, "start", process="conformance-timers")
    due = parse_instant(item["due"])
    ctx.check(abs((due - parse_instant(item["readySince"]) - MINUTE).total_seconds()) <= 1,
              f"due is a minute after the step became ready ({item['readySince']} → {item['due']})")
    ctx.equal((row.get("due"), row.get("overdue")), (item["due"], False), "the run view shows the due, not overdue")
    ctx.equal(item["overdue"], False, "get_work: not overdue before its due")

    ctx.must("2.2-timeout")
    run_id, _ = waiting["in-time"]
    sent = ctx.ok(agent, "send_event", runId=run_id, name="conformance-timer", data={"n": 1})
    ctx.equal(sent["consumedBy"], "hold", "an event before the timeout is consumed by the wait")
    view = ctx.ok(agent, "get_run", runId=run_id)
    ctx.equal({k: ctx.states(view)[k] for k in ("hold", "caught", "late")}, {"hold": "done", "caught": "ready",
              "late": None}, "an event in time: the run goes on at the wait's next, not at on_timeout")

    run_id, deadline = waiting["late-event"]
    time.sleep(max(0.0, (deadline + LATE_MARGIN - utc_now()).total_seconds()))
    exchange = ctx.call(agent, "send_event", runId=run_id, name="conformance-timer", data={"n": 2})
    ctx.check(exchange.ok and exchange.data.get("consumedBy") != "hold",
              "an event after the timeout is not consumed by the timed-out wait", exchange)
    view = ctx.ok(agent, "get_run", runId=run_id)
    ctx.equal({k: ctx.states(view)[k] for k in ("hold", "caught", "late")}, {"hold": "done", "caught": None,
              "late": "ready"}, "after the timeout the run goes on at on_timeout, however soon an event came")
    ctx.equal(("output" in view["data"]["steps"]["hold"], view["data"]["steps"]["hold"].get("by")), (False, "server"),
              "a timed-out wait records by server and no event data")

    run_id, deadline = waiting["alone"]

    def timed_out():
        current = ctx.ok(agent, "get_run", runId=run_id)
        return current if ctx.states(current)["late"] == "ready" else None

    left = max(0.0, (deadline - utc_now()).total_seconds())
    view, _ = ctx.wait_for(timed_out, left + bound, "the timeout fires and the run goes on at on_timeout", pause=0.5)
    ctx.equal(ctx.states(view)["caught"], None, "a timeout alone: the wait's next is not made ready")
    ctx.note(f"timeout fired within {(utc_now() - deadline).total_seconds():.1f} s of its time (bound {bound:.0f} s)")

    ctx.must("2.2-due")
    time.sleep(max(0.0, (due + dt.timedelta(seconds=0.5) - utc_now()).total_seconds()))
    view = ctx.ok(agent, "get_run", runId=due_run)
    [row] = [step for step in view["steps"] if step["id"] == "start"]
    ctx.equal((row["state"], row.get("due"), row.get("overdue")), ("ready", item["due"], True),
              "past its due the step is overdue and still open (§2.2: the work stays open)")
    item = ctx.find_work(agent, due_run, "start", process="conformance-timers")
    ctx.equal(item["overdue"], True, "get_work: overdue past its due")


@scenario("replays", processes=["conformance-agent-loop", "conformance-waits"])
def replays(ctx: Context):
    """§4: "Repeating it with the same arguments returns the original result and changes nothing.
    Repeating it with different arguments is a conflict." For upload, renew, escalate, decide,
    send_event and submit (start_run, claim and cancel: agent-loop and cancel): the replay's answer
    is compared with the original's, so a server that runs a replay again fails here."""
    agent, operator = ctx.agent, ctx.operator
    ctx.must("4-idempotent")

    def replayed(actor, tool, label, changed: dict, **arguments):
        """The write, its replay (the same answer), and the requestId reused with `changed` (conflict)."""
        arguments.setdefault("requestId", new_request_id())
        first = ctx.ok(actor, tool, **arguments)
        again = ctx.call(actor, tool, **arguments)
        ctx.check(again.ok and without_urls(again.data) == without_urls(first),
                  f"a replayed {label} returns the original result", again)
        ctx.refused(actor, tool, "conflict", label=f"a {label} requestId reused with other arguments",
                    **{**arguments, **changed})
        return first

    tools = ctx.session.described.get("tools") or []
    if "upload" in tools:
        content = base64.b64encode(b"replayed upload").decode()
        uploaded = replayed(agent, "upload", "upload", {"contentBase64": base64.b64encode(b"other").decode()},
                            fileName="replay.txt", contentType="text/plain", contentBase64=content)
        ctx.equal(uploaded["sha256"], hashlib.sha256(b"replayed upload").hexdigest(), "the upload's hash")
    view = ctx.start(agent, "conformance-agent-loop", {"subject": tag()})
    run_id = view["run"]["id"]
    token = ctx.claim(agent, run_id, "screen")["token"]
    if "renew" in tools:
        renewed = replayed(agent, "renew", "renew", {"progress": "Something else."}, token=token,
                           progress="A third done.")
        ctx.check(renewed["token"] != token, "renew's replay kept the one new token")
        token = renewed["token"]
    submit = {"token": token, "output": {"cleared": True, "findings": "x"}, "summary": "Too early.",
              "requestId": new_request_id()}
    refused = ctx.call(agent, "submit", **submit)
    ctx.equal(refused.error.get("code"), "not_accepted", "a submission without its file is not accepted", refused)
    escalated = replayed(agent, "escalate", "escalate", {"note": "Another note."}, token=token,
                         note="Replays: to a person.")
    ctx.equal(ctx.states(escalated)["screen"], "waiting", "the escalated step waits on a person")
    item = ctx.item_for(escalated, "screen")
    decided = replayed(operator, "decide", "decide", {"note": "Another note."},
                       **{**item["decide"]["arguments"], "requestId": new_request_id()}, decision="returned",
                       note="Replays: back to the agent.")
    ctx.equal(ctx.states(decided)["screen"], "ready", "the returned step is ready once, however often replayed")
    ctx.must("4-idempotent")
    if "send_event" in tools:
        view = ctx.start(agent, "conformance-waits", {"at": PAST})
        event_run = view["run"]["id"]
        sent = replayed(agent, "send_event", "send_event", {"data": {"n": 2}}, runId=event_run,
                        name="conformance-signal", data={"n": 1})
        ctx.equal(sent["consumedBy"], None, "the event is held")
        claimed = ctx.claim(agent, event_run, "prepare")
        view = ctx.ok(agent, "submit", token=claimed["token"], output={"ready": True}, summary="Prepared.")
        ctx.equal((ctx.states(view)["signal"], ctx.states(view)["again"]), ("done", "waiting"),
                  "a replayed send_event held one event, not two")
        ctx.ok(operator, "cancel", runId=event_run, reason="Replays done.")
    claimed = ctx.claim(agent, run_id, "screen")
    uploaded = upload_file(ctx, agent)
    ctx.must("4-idempotent")
    view = replayed(agent, "submit", "submit", {"output": {"cleared": False, "findings": "Other."}, "next": "decline"},
                    token=claimed["token"], output={"cleared": True, "findings": "No hits."},
                    evidence=[{"kind": "file", "ref": uploaded["id"]}], summary="Screened both lists.",
                    next="approve", reason="The findings support the verdict.")
    ctx.equal(ctx.states(view)["approve"], "waiting", "the submitted step's next waits on a person once")
    ctx.ok(operator, "cancel", runId=run_id, reason="Replays done.")


# ==================================================================== decide


@scenario("decisions", processes=["conformance-decisions"])
def decisions(ctx: Context):
    """§3.4 and tools.md decide: every decision and the order of its refusals: run_ended,
    already_decided, not_found, stale, forbidden, not_accepted; the invalid combinations."""
    agent, reviewer, approver = ctx.agent, ctx.reviewer, ctx.approver
    ctx.must("3.4-work-items")
    view = ctx.start(agent, "conformance-decisions", {"topic": tag()})
    run_id = view["run"]["id"]
    claimed = ctx.claim(agent, run_id, "draft")
    view = ctx.ok(agent, "submit", token=claimed["token"], output={"note": "A note."}, summary="Drafted.")
    review = ctx.item_for(view, "review")
    ctx.equal(review["decide"]["decisions"], ["completed", "failed"], "a task's decisions")
    ctx.equal((review["output"], review["evidence"], review["next"]), ({"answer": "string"}, ["link"], None),
              "a task's requirements on its work item")
    ctx.equal(set(review["assignedTo"]), {"group"}, "a role's work item is assigned to a group")
    ctx.must("6.4-people-decide")
    decide_refused(ctx, agent, review, "completed", "forbidden", "decide from an agent identity (§6 rule 4)",
                   output={"answer": "x"}, evidence=[LINK])
    decide_refused(ctx, approver, review, "completed", "forbidden", "decide by a person outside the assignment",
                   output={"answer": "x"}, evidence=[LINK])
    ctx.must("tools-decide")
    stale_item = {**review, "decide": {**review["decide"], "arguments": {**review["decide"]["arguments"],
                                                                          "snapshot": "0" * 64}}}
    decide_refused(ctx, approver, stale_item, "completed", "stale", "a stale snapshot is checked before forbidden",
                   output={"answer": "x"}, evidence=[LINK])
    gone = {**review, "decide": {**review["decide"], "arguments": {**stale_item["decide"]["arguments"],
                                                                    "workItemId": "w_conformance_none"}}}
    decide_refused(ctx, reviewer, gone, "completed", "not_found", "an item that never existed, before stale",
                   output={"answer": "x"}, evidence=[LINK])
    ctx.must("tools-decide")
    decide_refused(ctx, reviewer, review, "completed", "invalid", "note with completed", output={"answer": "x"},
                   evidence=[LINK], note="A note.")
    ctx.must("3.2-next-list")
    decide_refused(ctx, reviewer, review, "failed", "invalid", "next with a decision other than completed",
                   note="Failing.", next="first_approval", reason="Because.")
    ctx.must("tools-decide")
    decide_refused(ctx, reviewer, review, "failed", "invalid", "output with a decision other than completed",
                   note="Failing.", output={"answer": "x"})
    ctx.must("3.2-next-list")
    decide_refused(ctx, reviewer, review, "completed", "not_accepted", "next on a step whose next is not a list",
                   output={"answer": "x"}, evidence=[LINK], next="first_approval", reason="Because.")
    ctx.must("6.3-acceptance")
    decide_refused(ctx, reviewer, review, "completed", "not_accepted", "a completion breaking the rules",
                   issues=["output.answer: expected string", "evidence: link required"], output={"answer": 5})
    ctx.must("tools-decide")
    decide_refused(ctx, reviewer, review, "approved", ("not_accepted", "invalid"), "approved on a task")
    view = decide(ctx, reviewer, review, "completed", output={"answer": "Yes."}, evidence=[LINK],
                  summary="Reviewed.")
    ctx.equal(view["data"]["steps"]["review"]["output"], {"answer": "Yes."}, "the task's output is recorded")
    ctx.equal(view["data"]["steps"]["review"]["evidence"], [LINK], "a link is recorded as stated (§5)")
    ctx.must("3.4-snapshot")
    decide_refused(ctx, approver, stale_item, "completed", "conflict", "a decided item: already_decided first",
                   issues=["already_decided"], output={"answer": "x"}, evidence=[LINK])
    decide_refused(ctx, reviewer, review, "completed", "conflict", "the same person deciding twice",
                   issues=["already_decided"], output={"answer": "x"}, evidence=[LINK])
    first = ctx.item_for(view, "first_approval")
    outdated = {**first, "decide": {**first["decide"], "arguments": {**first["decide"]["arguments"],
                                                                      "snapshot": review["snapshot"]}}}
    decide_refused(ctx, approver, outdated, "approved", "stale", "a snapshot read before the run data changed")
    ctx.must("tools-decide")
    decide_refused(ctx, approver, first, "rejected", ("not_accepted", "invalid"), "rejected without a note")
    decide_refused(ctx, approver, first, "approved", "invalid", "summary with approved", summary="x")
    ctx.must("3.1-run-data")
    view = decide(ctx, approver, first, "rejected", note="Answer in full.")
    ctx.equal(ctx.states(view)["review"], "waiting", "a rejection returns to the task")
    ctx.equal(view["data"]["steps"]["first_approval"]["note"], "Answer in full.", "the note stays current")
    review = ctx.item_for(view, "review")
    view = decide(ctx, reviewer, review, "completed", output={"answer": "Yes, in full."}, evidence=[LINK])
    ctx.equal([h["output"] for h in view["data"]["steps"]["review"]["history"]], [{"answer": "Yes."}],
              "the task's first completion is in its history")
    view = decide(ctx, approver, ctx.item_for(view, "first_approval"), "approved")
    ctx.must("3.5-states")
    final = ctx.item_for(view, "final_approval")
    view = decide(ctx, approver, final, "rejected", note="Not this quarter.")
    ended_checks(ctx, view, "rejected")
    ctx.equal(view["run"]["ended"]["note"], "Not this quarter.", "run.ended.note is the rejection note (§3.5)")
    ctx.equal(view["run"]["ended"]["by"], view["data"]["steps"]["final_approval"]["by"], "run.ended.by")
    ctx.equal(len(view["data"]["steps"]["first_approval"]["history"]), 1, "the approval's history")
    ended_writes_refused(ctx, view, item=final)

    # failed ends the run: the step is failed and run data has decision failed (§3.4, §3.5)
    ctx.must("3.5-states")
    view = ctx.start(agent, "conformance-decisions", {"topic": tag()})
    claimed = ctx.claim(agent, view["run"]["id"], "draft")
    view = ctx.ok(agent, "submit", token=claimed["token"], output={"note": "A note."}, summary="Drafted.")
    review = ctx.item_for(view, "review")
    decide_refused(ctx, reviewer, review, "failed", ("not_accepted", "invalid"), "failed without a note")
    view = decide(ctx, reviewer, review, "failed", note="The topic is withdrawn.")
    ended_checks(ctx, view, "failed")
    ctx.equal(ctx.states(view)["review"], "failed", "the failing step is failed (§3.5)")
    record = view["data"]["steps"]["review"]
    ctx.equal((record["decision"], record["note"]), ("failed", "The topic is withdrawn."),
              "steps.review records decision failed and its note")
    ctx.equal(view["run"]["ended"]["note"], "The topic is withdrawn.", "run.ended.note is the failed note")


# ==================================================================== fields and acceptance


@scenario("fields", processes=["conformance-fields"])
def fields(ctx: Context):
    """§2.3 and §6 rule 3: every type, one_of (inside lists too), optional, null, undeclared, on
    start and on submit; numbers kept exactly; a task through a person path."""
    agent, approver = ctx.agent, ctx.approver
    label = tag()
    good = {"text": label, "amount": 9007199254740993, "day": "2026-10-06", "at": "2026-10-06T09:00:00+02:00",
            "flag": False, "tags": ["a", "b"], "meta": {"k": [1, 2.5]}, "owner": approver.person, "level": "high"}
    ctx.must("2.3-fields")
    bad = {"text": 5, "amount": "12", "day": "2026-02-30", "at": "2026-10-06T09:00:00", "flag": "yes", "tags": "a",
           "meta": [], "owner": 7, "level": "medium", "remark": None, "bogus": 1}
    refusal = ctx.refused(agent, "start_run", "invalid", process="conformance-fields", inputs=bad, mode="test",
                          label="start_run with every input wrong")
    issues = refusal.get("issues") or []
    for name in bad:
        ctx.check(any(issue.startswith(f"inputs.{name}") for issue in issues), f"an issue names inputs.{name}")
    refusal = ctx.refused(agent, "start_run", "invalid", process="conformance-fields", mode="test",
                          inputs={k: v for k, v in good.items() if k != "day"}, label="a missing input")
    ctx.check(any(issue.startswith("inputs.day") for issue in refusal.get("issues") or []), "the issue names it")
    if "list_runs" in ctx.session.described["tools"]:
        page = ctx.ok(agent, "list_runs", process="conformance-fields", inputs={"text": label})
        ctx.equal(page["items"], [], "refused starts created nothing")
    ctx.must("2.3-no-rounding")
    view = ctx.start(agent, "conformance-fields", good)
    ctx.equal(view["data"]["inputs"], good, "inputs are kept exactly as sent, numbers unrounded (§2.3)")
    run_id = view["run"]["id"]
    if getattr(ctx.session.transport, "exact_numbers", False):
        # Decimals a binary float cannot hold and exponents beyond its range, sent and read digit for
        # digit (the runner reads every fraction as a Decimal, so a rounded one shows).
        exact = {**good, "amount": Decimal("1.23456789012345678901"),
                 "meta": {"tenth": Decimal("0.1"), "huge": Decimal("1e400"), "tiny": Decimal("-2.5e-400"),
                          "long": [Decimal("123456789012345678901234567890.000000000000000000001")]}}
        started = ctx.start(agent, "conformance-fields", exact)
        ctx.equal(started["data"]["inputs"], exact, "start_run answers decimals and huge exponents unrounded")
        ctx.equal(ctx.ok(agent, "get_run", runId=started["run"]["id"])["data"]["inputs"], exact,
                  "get_run returns decimals and huge exponents unrounded")
    else:
        ctx.note("decimals beyond a double and huge exponents are checked over REST (the MCP client rounds them)")
    ctx.must("2.3-fields")
    claimed = ctx.claim(agent, run_id, "fill")
    wrong = {"total": "x", "day": "2026-13-01", "at": "yesterday", "ok": 1, "lines": ["red", "blue"], "meta": "x",
             "reviewer": 5, "grade": "c", "extra": None, "surplus": True}
    refusal = ctx.refused(agent, "submit", "not_accepted", token=claimed["token"], output=wrong, evidence=[LINK],
                          summary="Filled.", label="a submission with every output wrong")
    issues = refusal.get("issues") or []
    for name in wrong:
        ctx.check(any(issue.startswith(f"output.{name}") for issue in issues), f"an issue names output.{name}")
    ctx.check(any(issue.startswith("output.lines[1]") for issue in issues),
              "a value outside one_of inside a list is refused, by its index (§6 rule 3)")
    refusal = ctx.refused(agent, "submit", "not_accepted", token=claimed["token"], evidence=[LINK], summary="Filled.",
                          output={"total": 1, "day": "2026-10-06", "at": "2026-10-06T09:00:00Z", "ok": True,
                                  "lines": [], "meta": {}, "reviewer": approver.person, "grade": "c"},
                          label="one value outside one_of")
    ctx.equal([i for i in refusal.get("issues") or [] if i.startswith("output.")][:1],
              [i for i in refusal.get("issues") or [] if i.startswith("output.grade")][:1],
              "the only output issue is output.grade")
    ctx.check(any(i.startswith("output.grade") for i in refusal.get("issues") or []), "output.grade is refused")
    ctx.must("2.3-no-rounding")
    output = {"total": exact_number(ctx, "0.1"), "day": "2026-10-06", "at": "2026-10-06T09:00:00.5-05:00", "ok": True,
              "lines": ["red", "green"], "meta": {"nested": {"deep": [None, True]}}, "reviewer": approver.person,
              "grade": "a"}
    view = ctx.ok(agent, "submit", token=claimed["token"], output=output, evidence=[LINK], summary="Filled.")
    ctx.equal(view["data"]["steps"]["fill"]["output"], output, "the output is kept exactly as submitted")
    ctx.must("3.4-work-items")
    confirm = ctx.item_for(view, "confirm")
    ctx.equal(confirm["assignedTo"], {"person": approver.person}, "a person path assigns the task to that person")
    listed = ctx.find_work(approver, run_id, "confirm", process="conformance-fields")
    ctx.equal([r["to"] for r in listed["workItem"]["next"]], ["done", "stopped"], "the task's routes")
    ctx.must("3.2-next-list")
    decide_refused(ctx, approver, listed["workItem"], "completed", "not_accepted", "a route list without a choice",
                   issues=["next: required, one of done, stopped", "reason: required"], output={"confirmed": True})
    decide_refused(ctx, approver, listed["workItem"], "completed", "not_accepted", "a route that is not listed",
                   output={"confirmed": True}, next="nowhere", reason="Because.")
    done = decide(ctx, approver, listed["workItem"], "completed", output={"confirmed": False}, next="stopped",
                  reason="The grade looks wrong.")
    ended_checks(ctx, done, "stopped")
    ctx.equal((done["data"]["steps"]["confirm"]["next"], done["data"]["steps"]["confirm"]["reason"]),
              ("stopped", "The grade looks wrong."), "a person's chosen route and reason are recorded")


# ==================================================================== waits and events


@scenario("waits-and-events", processes=["conformance-waits", "conformance-wait-missing"])
def waits_and_events(ctx: Context):
    """§2.2 waits, §3.6 events: held before the wait is ready, consumed oldest first, data as output;
    wait_until in the past continues at once, a few seconds ahead fires within the reported bound,
    missing fails the run."""
    if not tool_offered(ctx, "send_event"):
        ctx.skip("send_event is not offered")
    agent = ctx.agent
    ctx.must("3.6-events")
    view = ctx.start(agent, "conformance-waits", {"at": PAST})
    run_id = view["run"]["id"]
    for n in (1, 2):
        sent = ctx.ok(agent, "send_event", runId=run_id, name="conformance-signal", data={"n": n})
        ctx.equal(sent["consumedBy"], None, f"event {n} before its wait is ready is held")
    ctx.equal(ctx.ok(agent, "send_event", runId=run_id, name="conformance-nobody")["consumedBy"], None,
              "an event with no matching wait is held")
    ctx.refused(ctx.approver, "send_event", "forbidden", runId=run_id, name="conformance-signal",
                label="send_event from a person who is not an operator (§3.6)")
    ctx.refused(agent, "send_event", "not_found", runId="r_conformance_none", name="conformance-signal",
                label="send_event to a run that does not exist")
    ctx.must("2.2-waits")
    claimed = ctx.claim(agent, run_id, "prepare")
    view = ctx.ok(agent, "submit", token=claimed["token"], output={"ready": True}, summary="Prepared.")
    ended_checks(ctx, view, "signalled")
    steps = view["data"]["steps"]
    ctx.equal(steps["gate"].get("by"), "server", "a wait_until in the past continues at once, by server")
    ctx.must("3.6-events")
    ctx.equal((steps["signal"]["output"], steps["again"]["output"]), ({"n": 1}, {"n": 2}),
              "held events are consumed oldest first; data becomes the wait's output (§3.6)")
    ctx.equal(steps["signal"]["by"], ctx.session.agent_ref, "a wait_for records the sender as by")

    ctx.must("2.2-waits")
    bound = ctx.session.options.timer_bound
    due = utc_now() + dt.timedelta(seconds=3)
    view = ctx.start(agent, "conformance-waits", {"at": due.isoformat().replace("+00:00", "Z")})
    run_id = view["run"]["id"]
    claimed = ctx.claim(agent, run_id, "prepare")
    view = ctx.ok(agent, "submit", token=claimed["token"], output={"ready": True}, summary="Prepared.")
    ctx.equal(ctx.states(view)["gate"], "waiting", "a wait_until ahead waits")
    ctx.equal(view["run"]["state"], "waiting", "a run waiting on a timer is waiting")

    def fired():
        current = ctx.ok(agent, "get_run", runId=run_id)
        return current if ctx.states(current)["gate"] == "done" else None

    view, _ = ctx.wait_for(fired, bound + 3, "the wait_until timer fires", pause=0.5)
    late = (utc_now() - due).total_seconds()
    ctx.note(f"timer fired within {late:.1f} s of its time (bound {bound:.0f} s)")
    ctx.equal(ctx.states(view)["signal"], "waiting", "the wait_for is waiting after the timer")
    ctx.must("3.6-events")
    sent = ctx.ok(agent, "send_event", runId=run_id, name="conformance-signal", data={"n": 3})
    ctx.equal(sent["consumedBy"], "signal", "an event for a waiting wait_for is consumed by it")
    sent = ctx.ok(ctx.operator, "send_event", runId=run_id, name="conformance-signal")
    ctx.equal(sent["consumedBy"], "again", "an operator may send an event; the next wait takes it")
    view = ctx.ok(agent, "get_run", runId=run_id)
    ended_checks(ctx, view, "signalled")
    ended_writes_refused(ctx, view)

    ctx.must("2.2-waits")
    view = ctx.start(agent, "conformance-wait-missing", {})
    ended_checks(ctx, view, "failed")
    ctx.equal(ctx.states(view)["gate"], "failed", "a wait_until on a missing value fails that step (§3.5)")
    ctx.equal(view["run"]["ended"]["by"], "server", "the server ended it")
    ctx.check(isinstance(view["run"]["ended"]["note"], str) and view["run"]["ended"]["note"], "with a note")


# ==================================================================== test mode, cancel, paging, caps


@scenario("test-mode", processes=["conformance-decisions", "conformance-queue"])
def test_mode(ctx: Context):
    """§3.3: a test run says so in every get_work item, claim and work item; a live run says live."""
    agent = ctx.agent
    ctx.must("3.3-test-mode")
    view = ctx.start(agent, "conformance-decisions", {"topic": tag()}, mode="test")
    run_id = view["run"]["id"]
    ctx.equal(ctx.find_work(agent, run_id, "draft", process="conformance-decisions")["mode"], "test",
              "get_work item mode")
    claimed = ctx.claim(agent, run_id, "draft")
    ctx.equal(claimed["mode"], "test", "claim mode")
    view = ctx.ok(agent, "submit", token=claimed["token"], output={"note": "n"}, summary="Drafted.")
    ctx.equal(ctx.item_for(view, "review").get("mode"), "test", "work item mode in the run view")
    listed = ctx.find_work(ctx.reviewer, run_id, "review", process="conformance-decisions")
    ctx.equal((listed["mode"], listed["workItem"].get("mode")), ("test", "test"), "a person's get_work item mode")
    ctx.must("tools-start-run")
    live = ctx.ok(agent, "start_run", process="conformance-queue", inputs={"label": tag()})
    ctx.session.started_runs.append(live["run"]["id"])
    ctx.equal(live["run"]["mode"], "live", "mode defaults to live")
    ctx.must("3.3-test-mode")
    item = ctx.find_work(agent, live["run"]["id"], "work", process="conformance-queue")
    ctx.equal(item["mode"], "live", "a live run's get_work item")
    ctx.equal(ctx.claim(agent, live["run"]["id"], "work")["mode"], "live", "a live run's claim")


@scenario("cancel", processes=["conformance-decisions"])
def cancel(ctx: Context):
    """§3.5: an operator cancels an active or waiting run; its tokens and work items are gone; others may not."""
    agent, operator = ctx.agent, ctx.operator
    ctx.must("3.5-cancel")
    view = ctx.start(agent, "conformance-decisions", {"topic": tag()})
    run_id = view["run"]["id"]
    claimed = ctx.claim(agent, run_id, "draft")
    ctx.refused(agent, "cancel", "forbidden", runId=run_id, reason="No.", label="cancel by an agent")
    ctx.refused(ctx.reviewer, "cancel", "forbidden", runId=run_id, reason="No.", label="cancel by a non-operator")
    ctx.refused(operator, "cancel", "not_found", runId="r_conformance_none", reason="No.",
                label="cancel of a run that does not exist")
    request = new_request_id()
    view = ctx.ok(operator, "cancel", runId=run_id, reason="Opened by mistake.", requestId=request)
    ended_checks(ctx, view, None, state="cancelled")
    ctx.equal(view["run"]["ended"]["note"], "Opened by mistake.", "run.ended.note is the reason (§3.5)")
    ctx.check(view["run"]["ended"]["by"] not in (None, "server", ctx.session.agent_ref),
              "run.ended.by is the operator who cancelled")
    ctx.equal(ctx.states(view)["draft"], "cancelled", "the claimed step is cancelled")
    ctx.must("4-idempotent")
    ctx.equal(without_urls(ctx.ok(operator, "cancel", runId=run_id, reason="Opened by mistake.", requestId=request)),
              without_urls(view), "a replayed cancel returns the original result")
    ended_writes_refused(ctx, view, token=claimed["token"])

    ctx.must("3.5-cancel")
    view = ctx.start(agent, "conformance-decisions", {"topic": tag()})
    claimed = ctx.claim(agent, view["run"]["id"], "draft")
    view = ctx.ok(agent, "submit", token=claimed["token"], output={"note": "n"}, summary="Drafted.")
    review = ctx.item_for(view, "review")
    view = ctx.ok(operator, "cancel", runId=view["run"]["id"], reason="No longer needed.")
    ended_checks(ctx, view, None, state="cancelled")
    ctx.find_work(ctx.reviewer, view["run"]["id"], "review", process="conformance-decisions", present=False,
                  label="a cancelled run's work item leaves the person's get_work")
    ctx.must("3.5-run-ended")
    decide_refused(ctx, ctx.reviewer, review, "completed", "conflict", "deciding an item of a cancelled run",
                   issues=["run_ended"], output={"answer": "x"}, evidence=[LINK])


@scenario("paging", processes=["conformance-queue"])
def paging(ctx: Context):
    """tools.md get_work and list_runs: oldest first, paged, every item once; bad paging is invalid."""
    ctx.must("tools-paging")
    agent, label = ctx.agent, tag()
    started = [ctx.start(agent, "conformance-queue", {"label": label})["run"]["id"] for _ in range(25)]
    seen, cursor, pages, ready_since = [], None, 0, []
    while True:
        page = ctx.ok(agent, "get_work", process="conformance-queue", limit=10, **({"cursor": cursor} if cursor else {}))
        pages += 1
        ctx.check(len(page["items"]) <= 10, "a page holds at most limit items")
        seen += [item["runId"] for item in page["items"]]
        ready_since += [parse_instant(item["readySince"]) for item in page["items"]]
        cursor = page.get("nextCursor")
        if not cursor or pages > 500:
            break
    ctx.equal(len(seen), len(set(seen)), "no item appears on two pages")
    ctx.equal([run for run in seen if run in started], started, "get_work is oldest first across pages")
    ctx.check(ready_since == sorted(ready_since), "readySince never goes back across pages")
    ctx.check(pages >= 3, f"25 items in pages of 10 take at least 3 pages ({pages})")
    for bad in ({"limit": 0}, {"limit": 101}, {"cursor": "not-a-cursor!"}):
        ctx.refused(agent, "get_work", "invalid", label=f"get_work with {bad}", **bad)
    if "list_runs" in ctx.session.described["tools"]:
        ctx.must("tools-list-runs")
        listed, cursor = [], None
        for _ in range(10):
            page = ctx.ok(agent, "list_runs", process="conformance-queue", inputs={"label": label}, limit=7,
                          **({"cursor": cursor} if cursor else {}))
            listed += [item["id"] for item in page["items"]]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        ctx.equal(sorted(listed), sorted(started), "list_runs filtered by an input lists exactly those runs, paged")
        page = ctx.ok(agent, "list_runs", process="conformance-queue", state="active", inputs={"label": label},
                      limit=100)
        ctx.equal(len(page["items"]), 25, "list_runs filters by state")
        ctx.equal(page["items"][0]["inputs"], {"label": label}, "a list_runs item carries the inputs")
    for run_id in started:
        ctx.ok(ctx.operator, "cancel", runId=run_id, reason="Paging done.")


@scenario("concurrency", processes=["conformance-queue"])
def concurrency(ctx: Context):
    """§6: "the server, not the client, resolves concurrent writes to one run". Two claims of one step
    sent at the same moment: exactly one wins, the other is conflict claimed_by_other (claimed_by_you
    when the runner has one agent token); and the winner's token is the one that submits."""
    ctx.must("4-concurrent")
    agents = ctx.session.agents
    first, second = (agents[0], agents[1]) if len(agents) > 1 else (agents[0], agents[0])
    expected = "claimed_by_other" if first is not second else "claimed_by_you"
    for attempt in range(3):
        run_id = ctx.start(first, "conformance-queue", {"label": tag()})["run"]["id"]
        exchanges = ctx.call_together([(first, "claim", {"runId": run_id, "stepId": "work"}),
                                       (second, "claim", {"runId": run_id, "stepId": "work"})])
        won = [e for e in exchanges if e.ok]
        ctx.equal(len(won), 1, f"of two claims at once exactly one wins (attempt {attempt + 1})", exchanges[1],
                  hard=True)
        [lost] = [e for e in exchanges if not e.ok]
        ctx.equal((lost.error.get("code"), lost.error.get("issues")), ("conflict", [expected]),
                  "the other claim is refused as the spec says", lost)
        done = ctx.ok(won[0].actor, "submit", token=won[0].data["token"], output={"result": "won"},
                      summary="The winner submits.")
        ctx.equal(done["run"]["outcome"], "worked", "the winner's token completes the step")


@scenario("size-caps", processes=["conformance-queue", "conformance-waits"])
def size_caps(ctx: Context):
    """§6 rule 3: limits.runDataBytes bounds inputs at start, submissions and held event data;
    maxUploadBytes bounds upload; summary at most 2000 characters."""
    ctx.must("6.3-acceptance")
    agent, described = ctx.agent, ctx.session.described
    cap = described["limits"]["runDataBytes"]
    if cap > 8 * 1024 * 1024:
        ctx.skip(f"limits.runDataBytes is {cap}: too large to send over")
    label = tag()
    ctx.refused(agent, "start_run", "invalid", process="conformance-queue", mode="test",
                inputs={"label": label, "payload": "x" * (cap + 1)}, label="inputs over limits.runDataBytes")
    if "list_runs" in described["tools"]:
        ctx.equal(ctx.ok(agent, "list_runs", process="conformance-queue", inputs={"label": label})["items"], [],
                  "the refused start created nothing")
    view = ctx.start(agent, "conformance-queue", {"label": label})
    claimed = ctx.claim(agent, view["run"]["id"], "work")
    ctx.refused(agent, "submit", "not_accepted", token=claimed["token"], output={"result": "y" * (cap + 1)},
                summary="Too much.", label="a submission that takes run data over the cap")
    ctx.must("tools-submit")
    ctx.refused(agent, "submit", "invalid", token=claimed["token"], output={"result": "ok"}, summary="s" * 2001,
                label="a summary over 2000 characters")
    ctx.must("6.3-acceptance")
    done = ctx.ok(agent, "submit", token=claimed["token"], output={"result": "y" * 1000}, summary="Within the cap.")
    ctx.equal(done["run"]["outcome"], "worked", "a submission within the cap is accepted")
    if "send_event" in described["tools"]:
        held = ctx.start(agent, "conformance-waits", {"at": PAST})
        exchange = ctx.call(agent, "send_event", runId=held["run"]["id"], name="conformance-signal",
                            data={"blob": "z" * (cap + 1)})
        ctx.check(not exchange.ok and exchange.error.get("code") in ("invalid", "not_accepted"),
                  "held event data over the cap is refused (§6 rule 3)", exchange)
    ctx.must("tools-upload")
    limit = described.get("maxUploadBytes", 10 * 1024 * 1024)
    if "upload" in described["tools"] and limit <= 16 * 1024 * 1024:
        exchange = ctx.call(agent, "upload", fileName="big.bin", contentType="application/octet-stream",
                            contentBase64=base64.b64encode(b"\0" * (limit + 1)).decode())
        ctx.check(not exchange.ok and exchange.error.get("code") in ("invalid", "not_accepted"),
                  "an upload over maxUploadBytes is refused (tools.md upload)", exchange)


# ==================================================================== profiles


@scenario("parallel", processes=["conformance-parallel"], profile="parallel-1")
def parallel(ctx: Context):
    """parallel-1 §3: fork in one write, a sibling's completion stales a snapshot, rework inside a
    branch touches no sibling, the join, and a rejection after the join rewinding the region."""
    ctx.must("parallel-run")
    agent, reviewer, approver = ctx.agent, ctx.reviewer, ctx.approver
    view = ctx.start(agent, "conformance-parallel", {"subject": tag()})
    run_id = view["run"]["id"]
    claimed = ctx.claim(agent, run_id, "open")
    view = ctx.ok(agent, "submit", token=claimed["token"], output={"reference": "BR-1"}, summary="Opened.")
    ctx.equal(ctx.states(view), {"open": "done", "fork": "waiting", "left": "ready", "right": "waiting",
                                 "right_check": None, "close": None, "done": None},
              "every branch entry is ready in the same write; the parallel step waits (parallel-1 §3)")
    ctx.equal(next(s for s in view["steps"] if s["id"] == "fork")["kind"], "parallel", "the step's kind")
    right = ctx.item_for(view, "right")
    ctx.find_work(agent, run_id, "left", process="conformance-parallel")
    claimed = ctx.claim(agent, run_id, "left")
    view = ctx.ok(agent, "submit", token=claimed["token"], output={"leftResult": "L1"}, summary="Left done.")
    ctx.equal(ctx.states(view)["fork"], "waiting", "a branch reaching join early waits for the others")
    decide_refused(ctx, reviewer, right, "completed", "stale", "a sibling's completion stales an open snapshot",
                   output={"rightResult": "R1"})
    right = ctx.item_for(ctx.ok(reviewer, "get_run", runId=run_id), "right")
    view = decide(ctx, reviewer, right, "completed", output={"rightResult": "R1"})
    view = decide(ctx, approver, ctx.item_for(view, "right_check"), "rejected", note="Redo the right half.")
    ctx.equal(ctx.states(view)["right"], "waiting", "a rejection inside a branch returns within it")
    ctx.equal(view["data"]["steps"]["left"]["output"], {"leftResult": "L1"}, "the sibling branch is untouched")
    ctx.equal(view["data"]["steps"]["left"].get("history") or [], [], "the sibling keeps no history")
    view = decide(ctx, reviewer, ctx.item_for(view, "right"), "completed", output={"rightResult": "R2"})
    view = decide(ctx, approver, ctx.item_for(view, "right_check"), "approved")
    ctx.equal((ctx.states(view)["fork"], ctx.states(view)["close"]), ("done", "waiting"),
              "the last branch joining makes the parallel step done and its next ready")
    view = decide(ctx, approver, ctx.item_for(view, "close"), "rejected", note="Both halves again.")
    states = ctx.states(view)
    ctx.equal({k: states[k] for k in ("fork", "left", "right", "right_check")},
              {"fork": "waiting", "left": "ready", "right": "waiting", "right_check": None},
              "a rejection into the parallel step rewinds the region: entries ready again, the rest null")
    steps = view["data"]["steps"]
    ctx.check("output" not in steps["left"] and len(steps["left"]["history"]) == 1,
              "the left branch's completion moved to history")
    ctx.equal(len(steps["right"]["history"]), 2, "both of the right branch's completions are in history")
    ctx.equal(steps["close"]["note"], "Both halves again.", "the rejecting approval keeps its note current")
    claimed = ctx.claim(agent, run_id, "left")
    view = ctx.ok(agent, "submit", token=claimed["token"], output={"leftResult": "L2"}, summary="Again.")
    view = decide(ctx, reviewer, ctx.item_for(view, "right"), "completed", output={"rightResult": "R3"})
    view = decide(ctx, approver, ctx.item_for(view, "right_check"), "approved")
    view = decide(ctx, approver, ctx.item_for(view, "close"), "approved")
    ended_checks(ctx, view, "joined")


@scenario("check", processes=["conformance-check"], profile="check-1")
def check(ctx: Context):
    """check-1 §3: each probe's verdict, and its effect: pass completes and records
    steps.<id>.check; unsure holds the candidate for a person; fail is not_accepted with check issues
    and handoff.check. With the runner's own evaluator (--evaluator-port) it also asserts each
    question's answer and result, the issue text, the worst-question rule and what the evaluator saw."""
    ctx.must("check-run")
    agent, operator, stub = ctx.agent, ctx.operator, ctx.session.evaluator
    subject = tag()
    view = ctx.start(agent, "conformance-check", {"subject": subject})
    run_id, seen = view["run"]["id"], []
    # Each probe asks what any evaluator can answer from the submission alone: that 4 is 4 (pass), the
    # submitter's mood (unsure), that 4 is negative (fail). A server whose verdicts differ (one that
    # passes everything, say) fails here rather than having its verdicts followed. The runner's own
    # evaluator gives exactly those verdicts, by the file's thresholds.
    expected = {"sure": "pass", "unsure": "unsure", "failing": "fail"}
    for step_id in ("sure", "unsure", "failing"):
        claimed = ctx.claim(agent, run_id, step_id)
        exchange = ctx.call(agent, "submit", token=claimed["token"], output={"answer": 4},
                            summary="The answer is 4.")
        verdict = ("pass" if ctx.states(exchange.data)[step_id] == "done" else "unsure") if exchange.ok else "fail"
        ctx.equal(verdict, expected[step_id], f"the {step_id} probe's verdict (check-1 §3)", exchange)
        if exchange.ok and ctx.states(exchange.data)[step_id] == "done":
            seen.append(f"{step_id}: pass")
            record = exchange.data["data"]["steps"][step_id].get("check") or {}
            ctx.equal(record.get("verdict"), "pass", f"steps.{step_id}.check records the pass verdict")
            ctx.check(record.get("questions"), "the verdict lists its questions")
            stub_answers(ctx, subject, record)
            view = exchange.data
        elif exchange.ok:
            seen.append(f"{step_id}: unsure")
            item = ctx.item_for(exchange.data, step_id)
            escalation = item.get("escalation") or {}
            ctx.equal((escalation.get("check") or {}).get("verdict"), "unsure", "escalation.check (check-1 §3)")
            ctx.equal((escalation.get("candidate") or {}).get("output"), {"answer": 4}, "escalation.candidate")
            ctx.equal(item["decide"]["decisions"], ["returned", "completed", "failed"], "an escalated step's decisions")
            stub_answers(ctx, subject, escalation.get("check") or {})
            view = decide(ctx, operator, item, "completed")
            ctx.equal(view["data"]["steps"][step_id]["output"], {"answer": 4},
                      "completed without output takes the candidate")
        else:
            seen.append(f"{step_id}: fail")
            ctx.equal(exchange.error.get("code"), "not_accepted", "a failing check is not_accepted", exchange)
            ctx.check(all(i.startswith("check: ") and " → " in i for i in exchange.error.get("issues") or [None]),
                      "each issue reads check: <ask> → <answer>", exchange)
            if stub:
                [ask] = [a for a in stub.questions if a.startswith("Conformance probe (fail)")]
                given = stub.given(subject, ask)
                ctx.equal(exchange.error.get("issues"), [f"check: {ask} → no ({given.value:.2f})"],
                          "the issue of a failed yes/no question: no (p) (check-1 §3)", exchange)
            escalated = ctx.ok(agent, "escalate", token=claimed["token"], note="The check disagrees.")
            item = ctx.item_for(escalated, step_id)
            ctx.check((item.get("handoff") or {}).get("check"), "the failed verdict travels in handoff.check")
            view = decide(ctx, operator, item, "completed", output={"answer": 4})
    ended_checks(ctx, view, "checked")
    ctx.note("verdicts: " + ", ".join(seen) + (" (the runner's evaluator)" if stub else ""))
    if stub:
        check_material(ctx, subject, view)
        check_worst_question(ctx)


@observes("check-run")
def stub_answers(ctx: Context, marker: str, record: dict):
    """With the runner's evaluator: each question's recorded answer is the one it gave, judged by
    the file's thresholds."""
    stub = ctx.session.evaluator
    if not stub:
        return
    for question in record.get("questions") or []:
        ask = question.get("ask")
        if ask not in stub.questions:
            ctx.check(False, f"a recorded question is one the step asks: {ask!r}")
            continue
        given = stub.given(marker, ask)
        answer, confidence = question.get("answer"), question.get("confidence")
        same = (near(answer, given.value) if isinstance(given.value, float) else answer == given.value) and \
            (given.confidence is None or near(confidence, given.confidence))
        ctx.check(same, f"the recorded answer to {ask!r} is the evaluator's ({given.value}, {given.confidence}): "
                        f"{answer}, {confidence}")
        ctx.equal(question.get("result"), stub.chosen.get((marker, ask), default_verdict(ask)),
                  f"the result of {ask!r} under the file's thresholds")


def near(got, expected: float) -> bool:
    """A probability as recorded (a float, or a Decimal over REST) is the one given, to a millionth."""
    return isinstance(got, int | float | Decimal) and not isinstance(got, bool) and abs(float(got) - expected) < 1e-6


@observes("check-material")
def check_material(ctx: Context, marker: str, view: dict):
    """check-1 §2: "What the evaluator sees: the step's instructions, the body, the run data, the
    submission's output, summary and evidence references, and each question"."""
    asked = ctx.session.evaluator.requests_about(marker)
    ctx.check(asked, f"the evaluator was asked about the run's submissions ({len(asked)} requests)")
    first_line = next(line for line in view["body"].splitlines() if line.strip())
    for ask, text in asked:
        shown = {"the question": ask, "the step's instructions": "Answer with answer 4",
                 "the body": first_line, "the run data": marker, "the summary": "The answer is 4."}
        missing = [what for what, part in shown.items() if part not in text]
        ctx.equal(missing, [], f"the evaluator, asked {ask!r}, sees all it is to see")


@observes("check-worst")
def check_worst_question(ctx: Context):
    """check-1 §3: "The verdict is the worst question: unsure outranks fail, fail outranks pass." The
    runner's evaluator answers the sure step's three questions pass, fail and unsure (unsure), then
    pass, fail and pass (fail: not_accepted, the choice's issue reads `<name> (confidence)`)."""
    stub, agent = ctx.session.evaluator, ctx.agent
    choice, rubric = [ask for ask in stub.questions if ask.startswith("Conformance probe (pass): wh")], \
        [ask for ask in stub.questions if ask.startswith("Conformance probe (pass): how")]
    for verdicts, expected in (((choice[0], "fail"), (rubric[0], "unsure")), "unsure"), \
                              (((choice[0], "fail"),), "fail"):
        subject = tag()
        for ask, verdict in verdicts:
            stub.choose(subject, ask, verdict)
        view = ctx.start(agent, "conformance-check", {"subject": subject})
        claimed = ctx.claim(agent, view["run"]["id"], "sure")
        exchange = ctx.call(agent, "submit", token=claimed["token"], output={"answer": 4}, summary="The answer is 4.")
        if expected == "unsure":
            ctx.check(exchange.ok and ctx.states(exchange.data)["sure"] == "waiting",
                      "pass, fail and unsure answers: the verdict is unsure, the step waits on a person", exchange)
            if exchange.ok:
                record = (ctx.item_for(exchange.data, "sure").get("escalation") or {}).get("check") or {}
                ctx.equal(record.get("verdict"), "unsure", "the worst question's verdict is recorded")
                stub_answers(ctx, subject, record)
        else:
            given = stub.given(subject, choice[0])
            ctx.equal((exchange.error.get("code"), exchange.error.get("issues")),
                      ("not_accepted", [f"check: {choice[0]} → {given.value} ({given.confidence:.2f})"]),
                      "pass, fail and pass answers: not_accepted, the failed choice's issue only", exchange)


# ==================================================================== cleanup


@observes("3.5-cancel")
def cleanup(ctx: Context):
    """Cancel every run the runner started that is still open, so a server keeps no stray work."""
    if not ctx.session.described:
        return
    for run_id in ctx.session.started_runs:
        exchange = ctx.call(ctx.operator, "get_run", runId=run_id)
        if exchange.ok and exchange.data["run"]["state"] in ("active", "waiting"):
            ctx.ok(ctx.operator, "cancel", runId=run_id, reason="Conformance run finished.")
