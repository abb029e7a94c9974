"""Process insight (issue 27): a known history, built through the tools with the clock fixed, and
every figure of the dashboard's JSON asserted exactly (the same on SQLite and PostgreSQL).

The history (minutes after T0, Monday 5 October 2026 09:00 UTC), process checked-vendor
(check_vendor: an agent step with a model check; approve: finance, due 2d, on_reject check_vendor):

  R1  0 ready · 60 claimed · 120 submitted (pass) · approve: 180 taken by fin · 300 approved: ended (5 h)
  R2  0 ready · 120 claimed · lease lapses · 240 claimed again · 300 submitted (pass) · approve: 360
      rejected by fin without taking it (rework) · check_vendor 420 claimed · 450 submitted (pass) ·
      approve: 470 taken · 480 approved: ended (8 h)
  R3  0 ready · 30 claimed · 60 escalated by the agent · 180 completed by ops · approve: overdue at
      the sweep (2 d 4 h) · 2 d 5 h approved by fin without taking it: ended (53 h)
  R4  0 ready · 60 claimed and submitted: the check is unsure · 180 completed by ops · approve:
      overdue at the sweep, still open
  R5  0 ready · 60 cancelled
  T1, T2  test runs (one ends, one waits): counted nowhere
"""

import base64
import datetime as dt

import pytest
from django.test import Client

from kernel import clock
from runs.services import queue
from runs.services.sweep import sweep
from tests.support.flows import decide, open_item
from tests.support.processes import CHECKED_VENDOR

from .test_check_profile import PASSING, Q1, evaluator  # noqa: F401 (the scripted evaluator fixture)

T0 = dt.datetime(2026, 10, 5, 9, 0, tzinfo=dt.UTC)
PASSWORD = "a-long-password-1"
H = 3600


def at(minutes: int):
    """Move the frozen clock to T0 + minutes."""
    target = T0 + dt.timedelta(minutes=minutes)
    clock.advance(target - clock.now())


def start(agent, mode="live", vendor="Acme"):
    return agent.ok("start_run", process="checked-vendor", inputs={"vendorName": vendor, "amount": 1000},
                    mode=mode)["run"]["id"]


def claim(agent, run_id):
    return agent.ok("claim", runId=run_id, stepId="check_vendor")["token"]


def submit(agent, token):
    report = agent.ok("upload", fileName="screening.txt", contentType="text/plain",
                      contentBase64=base64.b64encode(b"OFAC: no hits. EU: no hits.").decode())
    return agent.ok("submit", token=token, output={"cleared": True, "summary": "Clear on both lists."},
                    evidence=[{"kind": "file", "ref": report["id"]}], summary="Searched both lists by name.",
                    next="approve", reason="Cleared on both lists.")


def take(person, run_id, step_id="approve"):
    queue.take(identity=person.identity, work_item_id=open_item(person, run_id, step_id)["id"], now=clock.now())


@pytest.fixture
def history(publish, make_agent, make_person, evaluator, settings):
    settings.LEASE_SECONDS = 90 * 60
    publish(CHECKED_VENDOR, {"finance-approver": "finance"})
    agent = make_agent("screener")
    fin = make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    fin2 = make_person("fin2@example.com", groups=["finance"], password=PASSWORD)
    ops = make_person("ops@example.com", operator=True, password=PASSWORD)
    with clock.frozen(T0):
        r1, r2, r3, r4, r5 = (start(agent, vendor=f"Vendor {n}") for n in range(1, 6))
        t1, t2 = start(agent, "test", "Test one"), start(agent, "test", "Test two")
        at(30)
        t3 = claim(agent, r3)
        tt1 = claim(agent, t1)
        tt2 = claim(agent, t2)
        at(60)
        t1_ = claim(agent, r1)
        t4 = claim(agent, r4)
        agent.ok("escalate", token=t3, note="The registry is down; please check by hand.")
        submit(agent, tt1)
        submit(agent, tt2)
        evaluator.script[Q1] = {"probability": 0.62}  # unsure
        submit(agent, t4)
        evaluator.script.update(PASSING)
        ops.ok("cancel", runId=r5, reason="Duplicate request.")
        at(120)
        submit(agent, t1_)
        t2_ = claim(agent, r2)
        decide(fin, t2, "approve", "approved")
        at(180)
        upload = ops.ok("upload", fileName="registry.txt", contentType="text/plain", contentBase64="b2s=")
        decide(ops, r3, "check_vendor", "completed", output={"cleared": True, "summary": "Checked by hand."},
               evidence=[{"kind": "file", "ref": upload["id"]}], next="approve",
               reason="Clear in the registry.")
        decide(ops, r4, "check_vendor", "completed")  # with the held candidate
        take(fin, r1)
        at(240)
        t2_ = claim(agent, r2)  # the first lease (90 minutes) lapsed at 210
        at(300)
        submit(agent, t2_)
        decide(fin, r1, "approve", "approved")
        at(360)
        decide(fin, r2, "approve", "rejected", note="Screen the parent company too.")
        at(420)
        t2_ = claim(agent, r2)
        at(450)
        submit(agent, t2_)
        at(470)
        take(fin, r2)
        at(480)
        decide(fin, r2, "approve", "approved")
        at(2 * 24 * 60 + 240)
        sweep(clock.now())  # R3's, R4's and T1's approvals are overdue (due 2 d after 180 and 60)
        at(2 * 24 * 60 + 300)
        decide(fin, r3, "approve", "approved")
        at(2 * 24 * 60 + 360)
        yield {"runs": [r1, r2, r3, r4, r5], "test": [t1, t2], "fin": fin, "fin2": fin2, "ops": ops,
               "agent": agent}


def signed_in(email) -> Client:
    client = Client()
    assert client.login(username=email, password=PASSWORD)
    return client


def figures_of(email, **params) -> dict:
    response = signed_in(email).get("/insight/checked-vendor/", {"format": "json", **params})
    assert response.status_code == 200, response.content
    return response.json()


EXPECTED_STEPS = [
    {"step": "check_vendor", "kind": "agent", "count": 6,
     "waited": {"median": H, "p90": 2 * H, "n": 5}, "worked": {"median": 2 * H, "p90": 3 * H, "n": 5},
     "overdue": 0, "overdueRate": 0.0, "rework": 0, "reworkRate": 0.0,
     "escalations": 1, "escalationRate": 0.1667, "leaseExpiries": 1,
     "check": {"pass": 3, "unsure": 1, "fail": 0}},
    {"step": "approve", "kind": "approve", "count": 5,
     "waited": {"median": H, "p90": 50 * H, "n": 4}, "worked": {"median": 600, "p90": 2 * H, "n": 2},
     "overdue": 2, "overdueRate": 0.4, "rework": 1, "reworkRate": 0.2,
     "escalations": 0, "escalationRate": 0.0, "leaseExpiries": 0},
]


def test_every_figure_of_a_known_history(history):
    r1, r2, r3, _r4, _r5 = history["runs"]
    data = figures_of("ops@example.com", **{"from": "2026-10-01", "to": "2026-10-07"})
    assert data["process"] == "checked-vendor"
    assert data["filters"] == {"from": "2026-10-01T00:00:00Z", "to": "2026-10-08T00:00:00Z", "version": None,
                               "mode": "live", "q": "", "by": "day", "heat": "wait"}
    zero = {"started": 0, "ended": 0, "cancelled": 0, "failed": 0}
    assert data["timeline"] == [
        {"from": "2026-10-01", **zero}, {"from": "2026-10-02", **zero}, {"from": "2026-10-03", **zero},
        {"from": "2026-10-04", **zero},
        {"from": "2026-10-05", "started": 5, "ended": 2, "cancelled": 1, "failed": 0},
        {"from": "2026-10-06", **zero},
        {"from": "2026-10-07", "started": 0, "ended": 1, "cancelled": 0, "failed": 0}]
    assert data["openByStep"] == {"approve": 1}
    assert data["steps"] == EXPECTED_STEPS
    assert data["workers"] == {
        "agents": {"completions": 3, "medianWorked": H, "medianTook": 2 * H,
                   "by": [{"name": "a_screener", "completions": 3, "medianWorked": H, "medianTook": 2 * H}]},
        "persons": {"completions": 6, "medianWorked": 2 * H, "medianTook": 3 * H,
                    "by": [{"name": "fin@example.com", "completions": 4, "medianWorked": 600, "medianTook": H},
                           {"name": "ops@example.com", "completions": 2, "medianWorked": 2 * H,
                            "medianTook": 3 * H}]}}
    e2e = data["endToEnd"]
    assert (e2e["ended"], e2e["median"], e2e["p90"]) == (3, 8 * H, 53 * H)
    assert [bar["runs"] for bar in e2e["histogram"]] == [0, 0, 1, 1, 1, 0, 0, 0]
    assert [bar["label"] for bar in e2e["histogram"]][2:5] == ["4–8 hours", "8–24 hours", "1–3 days"]
    assert [(row["run"], row["seconds"], row["outcome"]) for row in e2e["slowest"]] == [
        (r3, 53 * H, "onboarded"), (r2, 8 * H, "onboarded"), (r1, 5 * H, "onboarded")]
    assert e2e["slowest"][0]["startedAt"] == "2026-10-05T09:00:00Z"
    assert e2e["slowest"][0]["endedAt"] == "2026-10-07T14:00:00Z"


def test_the_default_period_and_the_test_runs(history):
    # The last 7 days up to today (7 October) hold the same history.
    assert figures_of("ops@example.com", period="7")["steps"] == EXPECTED_STEPS
    tests = figures_of("ops@example.com", period="7", mode="test")
    assert [day["started"] for day in tests["timeline"]] == [0, 0, 0, 0, 2, 0, 0]
    assert tests["openByStep"] == {"approve": 1}
    check, approve = tests["steps"]
    assert (check["count"], check["check"], approve["count"], approve["overdue"]) == (2, {"pass": 2, "unsure": 0,
                                                                                           "fail": 0}, 2, 1)
    assert tests["endToEnd"]["ended"] == 1


def test_filters_narrow_the_runs(history):
    r1 = history["runs"][0]
    one = figures_of("ops@example.com", period="7", q="vendor 1")
    assert [row["run"] for row in one["endToEnd"]["slowest"]] == [r1]
    assert one["steps"][0]["count"] == 1 and one["openByStep"] == {}
    assert figures_of("ops@example.com", period="7", q=r1[-6:])["endToEnd"]["ended"] == 1
    assert figures_of("ops@example.com", period="7", version="2")["steps"][0]["count"] == 0
    assert figures_of("ops@example.com", period="7", version="1")["steps"] == EXPECTED_STEPS
    # Before the history: nothing.
    empty = figures_of("ops@example.com", **{"from": "2026-09-01", "to": "2026-09-30"})
    assert empty["steps"][0]["count"] == 0 and empty["steps"][0]["waited"] == {"median": None, "p90": None, "n": 0}
    assert empty["steps"][0]["overdueRate"] is None
    assert empty["endToEnd"]["ended"] == 0 and empty["endToEnd"]["median"] is None


def test_bad_filters_are_refused_with_every_issue(history):
    client = signed_in("ops@example.com")
    response = client.get("/insight/checked-vendor/", {"format": "json", "period": "5", "mode": "both",
                                                         "version": "x"})
    assert response.status_code == 400
    assert response.json() == {"ok": False, "issues": ["period: one of 7, 30, 90", "version: a version number or all",
                                                       "mode: live or test"]}
    response = client.get("/insight/checked-vendor/", {"format": "json", "from": "2026-10-09", "to": "2026-10-01"})
    assert response.json()["issues"] == ["to: before from"]
    assert client.get("/insight/checked-vendor/", {"format": "xml"}).status_code == 400


def test_people_of_the_process_see_names_of_their_own_groups_only(history, make_person):
    data = figures_of("fin2@example.com", period="7")
    assert data["steps"] == EXPECTED_STEPS  # the figures are the process's
    persons = data["workers"]["persons"]
    assert [(row["name"], row["completions"]) for row in persons["by"]] == [("fin@example.com", 4), (None, 2)]
    assert persons["by"][1]["medianWorked"] == 2 * H  # the operator, unnamed
    make_person("legal@example.com", groups=["legal"], password=PASSWORD)
    client = signed_in("legal@example.com")
    assert client.get("/insight/checked-vendor/", {"format": "json"}).status_code == 404
    assert client.get("/insight/checked-vendor/", {"format": "csv"}).status_code == 404
    assert client.get("/insight/no-such-process/", {"format": "json"}).status_code == 404


def test_the_csv_has_the_same_figures(history):
    response = signed_in("ops@example.com").get("/insight/checked-vendor/", {"format": "csv", "period": "7"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    lines = response.content.decode().splitlines()
    assert lines[0] == "section,item,figure,value"
    assert "step,approve,overdueRate,0.4" in lines
    assert "step,check_vendor,waited p90 seconds,7200" in lines
    assert "end to end,all,median seconds,28800" in lines


def test_the_heatmap_colours_each_step_by_the_chosen_figure(history):
    assert figures_of("ops@example.com", period="7")["heatmap"] == {"figure": "wait", "steps": {
        "check_vendor": {"value": H, "level": 4, "text": "1 h"}, "approve": {"value": H, "level": 4, "text": "1 h"}}}
    assert figures_of("ops@example.com", period="7", heat="work")["heatmap"]["steps"] == {
        "check_vendor": {"value": 2 * H, "level": 4, "text": "2 h"},
        "approve": {"value": 600, "level": 0, "text": "10 min"}}
    assert figures_of("ops@example.com", period="7", heat="overdue")["heatmap"]["steps"] == {
        "check_vendor": {"value": 0.0, "level": 0, "text": "0 %"},
        "approve": {"value": 0.4, "level": 4, "text": "40 %"}}
    assert figures_of("ops@example.com", period="7", heat="rework")["heatmap"]["steps"]["approve"] == {
        "value": 0.2, "level": 4, "text": "20 %"}
    assert figures_of("ops@example.com", period="7", heat="count")["heatmap"]["steps"] == {
        "check_vendor": {"value": 6, "level": 4, "text": "6"}, "approve": {"value": 5, "level": 4, "text": "5"}}
