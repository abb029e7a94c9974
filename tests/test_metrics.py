"""/metrics (issue 22, point 3): "`/metrics` in Prometheus text format (open to loopback by default; a
setting `METRICS_ALLOW` lists other addresses or networks, and `METRICS_TOKEN` a bearer token): tool
calls by tool, transport and outcome code; latency histograms per tool; open runs and work items by
state; ready agent steps and their oldest age; overdue items; lease expiries; sweep duration and
items handled; outbox backlog; evaluator calls and failures"; done when "the metrics move when a
step cycle runs"."""

import datetime as dt
import ipaddress
import time
from pathlib import Path

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from api.health import FORBIDDEN, UNAUTHORIZED
from kernel import clock
from runs.services.sweep import sweep
from tests.support.actors import rest_call
from tests.support.live import database_url, start_live_server
from tests.support.processes import SCREEN_AND_APPROVE
from tests.test_check_profile import evaluator, screening, vendor_check  # noqa: F401 - fixtures
from tests.test_security_defaults import run_django

TOKEN = "metrics-token-" + "x7Qp" * 8
OUTSIDE = "203.0.113.9"
YESTERDAY = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)


def samples(text: str) -> dict[tuple, float]:
    """{(sample name, sorted labels): value} of a Prometheus text exposition."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(read: dict, name: str, **labels) -> float:
    return read.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(client) -> dict:
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    return samples(response.content.decode())


def test_metrics_are_open_to_loopback_in_prometheus_text(transactional_db, client):
    response = client.get("/metrics")  # the test client connects from 127.0.0.1
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=1.0.0; charset=utf-8"
    read = samples(response.content.decode())
    assert value(read, "agentprocess_database_up") == 1
    assert value(read, "agentprocess_open_runs", state="active") == 0
    assert ("agentprocess_ready_agent_steps", ()) in read and ("agentprocess_outbox_backlog", ()) in read


@pytest.mark.parametrize("headers", [{"REMOTE_ADDR": OUTSIDE}, {"HTTP_X_FORWARDED_FOR": OUTSIDE},
                                     {"REMOTE_ADDR": OUTSIDE, "HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}],
                         ids=["another-address", "through-a-proxy", "a-token-nobody-configured"])
def test_anyone_else_is_refused_without_data(client, headers):
    """No `db` fixture: a refusal reads nothing. A loopback connection from a proxy (it names the
    client in X-Forwarded-For) is not a loopback caller."""
    response = client.get("/metrics", **headers)
    assert response.status_code == 403
    assert response.content.decode() == FORBIDDEN
    assert "agentprocess_" not in FORBIDDEN


def test_the_bearer_token_opens_metrics_to_other_addresses(transactional_db, client, settings):
    settings.METRICS_TOKEN = TOKEN
    for authorization in (None, "Bearer wrong-token-of-the-same-sort", f"Basic {TOKEN}", f"Bearer {TOKEN}x"):
        headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
        refused = client.get("/metrics", REMOTE_ADDR=OUTSIDE, **headers)
        assert refused.status_code == 401, authorization
        assert refused.content.decode() == UNAUTHORIZED and refused["WWW-Authenticate"] == 'Bearer realm="metrics"'
    opened = client.get("/metrics", REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert opened.status_code == 200 and b"agentprocess_database_up 1.0" in opened.content


def test_metrics_allow_replaces_loopback_with_its_addresses_and_networks(transactional_db, client, settings):
    settings.METRICS_ALLOW = (ipaddress.ip_network("203.0.113.0/24"), ipaddress.ip_network("2001:db8::1/128"))
    for address in (OUTSIDE, f"::ffff:{OUTSIDE}", "2001:db8::1"):
        assert client.get("/metrics", REMOTE_ADDR=address).status_code == 200, address
    for address in ("127.0.0.1", "198.51.100.1", "2001:db8::2"):
        assert client.get("/metrics", REMOTE_ADDR=address).status_code == 403, address


@pytest.mark.parametrize(("environment", "message"), [
    ({"METRICS_ALLOW": "10.0.0.0/8,prometheus.internal"},
     "METRICS_ALLOW lists addresses or networks (127.0.0.1, 10.0.0.0/8, ::1): "
     "'prometheus.internal' does not appear to be an IPv4 or IPv6 network"),
    ({"METRICS_TOKEN": "short"}, "METRICS_TOKEN must be at least 16 characters"),
    ({"PROMETHEUS_MULTIPROC_DIR": "/nonexistent/metrics"},
     "PROMETHEUS_MULTIPROC_DIR is not a folder this process can write: /nonexistent/metrics"),
])
def test_a_malformed_metrics_setting_stops_the_server_at_start(environment, message):
    started = run_django("print('started')", environment)
    assert started.returncode != 0 and "started" not in started.stdout
    assert message in started.stderr, started.stderr


def test_a_step_cycle_moves_the_tool_counters_by_one_each_and_the_gauges(transactional_db, client, publish,
                                                                          make_agent):
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    agent = make_agent("screener")
    with clock.frozen(YESTERDAY):  # lease tokens carry the real time they were issued at: never a future one
        run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
        clock.advance(dt.timedelta(hours=2))  # the agent step is past its 1h due
        _a_step_cycle_over_rest(client, agent, run_id)


def _a_step_cycle_over_rest(client, agent, run_id):
    before = scrape(client)
    assert value(before, "agentprocess_ready_agent_steps") == 1
    assert value(before, "agentprocess_overdue_agent_steps") == 1
    assert value(before, "agentprocess_oldest_ready_agent_step_age_seconds") >= 7200
    assert value(before, "agentprocess_open_runs", state="active") == 1
    assert value(before, "agentprocess_open_work_items", kind="approve") == 0

    status, work, _ = rest_call(client, agent.token, "get_work", {})
    assert status == 200 and [item["runId"] for item in work["data"]["items"]] == [run_id]
    _, claimed, _ = rest_call(client, agent.token, "claim", work["data"]["items"][0]["claim"]["arguments"])
    _, submitted, _ = rest_call(client, agent.token, "submit", {
        "token": claimed["data"]["token"], "output": {"cleared": True}, "summary": "No hits.",
        "evidence": [{"kind": "link", "ref": "https://example.com/screening"}], "requestId": "cycle-submit-1"})
    assert submitted["ok"], submitted
    status, _, _ = rest_call(client, agent.token, "get_run", {"runId": "r_doesnotexist"})
    assert status == 404
    after = scrape(client)

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    for tool in ("get_work", "claim", "submit"):
        assert moved("agentprocess_tool_calls_total", tool=tool, transport="rest", outcome="ok") == 1, tool
        assert moved("agentprocess_tool_call_seconds_count", tool=tool) == 1, tool
    assert moved("agentprocess_tool_calls_total", tool="get_run", transport="rest", outcome="not_found") == 1
    changed = {key for key in set(before) | set(after) if key[0].startswith("agentprocess_tool_calls")
               and before.get(key, 0) != after.get(key, 0)}
    assert {dict(labels)["tool"] for _name, labels in changed} == {"get_work", "claim", "submit", "get_run"}
    assert value(after, "agentprocess_ready_agent_steps") == value(after, "agentprocess_overdue_agent_steps") == 0
    assert value(after, "agentprocess_oldest_ready_agent_step_age_seconds") == 0
    assert value(after, "agentprocess_open_runs", state="active") == 0
    assert value(after, "agentprocess_open_runs", state="waiting") == 1
    assert value(after, "agentprocess_open_work_items", kind="approve") == 1


def test_a_lapsed_lease_counts_once_in_the_sweep(transactional_db, client, publish, make_agent):
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    agent = make_agent("screener")
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    agent.ok("claim", runId=run_id, stepId="screen")
    before = scrape(client)
    clock.advance(dt.timedelta(minutes=11))  # LEASE_SECONDS is 600
    assert value(scrape(client), "agentprocess_ready_agent_steps") == 1  # claimable at once, before any sweep
    assert sweep(clock.now()).leases == 1
    after = scrape(client)
    assert value(after, "agentprocess_lease_expiries_total") - value(before, "agentprocess_lease_expiries_total") == 1
    for kind, items in (("leases", 1), ("timers", 0), ("dues", 0), ("notices", 0)):
        assert value(after, "agentprocess_sweep_items_total", kind=kind) - \
            value(before, "agentprocess_sweep_items_total", kind=kind) == items, kind
        assert value(after, "agentprocess_sweep_seconds_count", kind=kind) - \
            value(before, "agentprocess_sweep_seconds_count", kind=kind) == 1, kind


def test_the_outbox_backlog_is_the_notices_due_and_unsent(transactional_db, client, publish, make_agent,
                                                          make_person):
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    make_person("fin@example.com", groups=["finance"])
    agent = make_agent("screener")
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    agent.ok("submit", token=token, output={"cleared": True}, summary="No hits.",
             evidence=[{"kind": "link", "ref": "https://example.com/screening"}])
    clock.advance(dt.timedelta(hours=2))  # past the summary mail's hour: the new-work notice is due
    assert value(scrape(client), "agentprocess_outbox_backlog") >= 1
    sweep(clock.now())
    assert value(scrape(client), "agentprocess_outbox_backlog") == 0


def test_evaluator_calls_and_failures_are_counted(transactional_db, client, vendor_check, agent, evaluator):  # noqa: F811
    before = scrape(client)
    evaluator.failures_left = 2  # the first question fails, and so does the server's one retry
    _claim, arguments = screening(agent, vendor_check, request_id="submit-once")
    assert agent.error("submit", **arguments)["code"] == "retry"
    failed = scrape(client)
    assert value(failed, "agentprocess_check_evaluator_calls_total") - \
        value(before, "agentprocess_check_evaluator_calls_total") == 2
    assert value(failed, "agentprocess_check_evaluator_failures_total") - \
        value(before, "agentprocess_check_evaluator_failures_total") == 2
    agent.ok("submit", **arguments)  # three questions, each answered
    passed = scrape(client)
    assert value(passed, "agentprocess_check_evaluator_calls_total") - \
        value(failed, "agentprocess_check_evaluator_calls_total") == 3
    assert value(passed, "agentprocess_check_evaluator_failures_total") == \
        value(failed, "agentprocess_check_evaluator_failures_total")


def test_an_unknown_tool_name_is_counted_under_one_label(transactional_db, client, make_agent):
    """A caller cannot make a new series per name it invents."""
    agent = make_agent("screener")
    before = scrape(client)
    for name in ("no_such_tool", "another_made_up_one"):
        assert rest_call(client, agent.token, name, {})[0] == 404
    after = scrape(client)
    assert value(after, "agentprocess_tool_calls_total", tool="unknown", transport="rest", outcome="not_found") - \
        value(before, "agentprocess_tool_calls_total", tool="unknown", transport="rest", outcome="not_found") == 2
    assert not [key for key in after if "no_such_tool" in str(key)]


def test_several_workers_report_one_sum_in_multiprocess_mode(transactional_db, tmp_path,
                                                             make_agent):
    """PROMETHEUS_MULTIPROC_DIR: every uvicorn worker writes its counts to the folder and whichever
    worker answers /metrics reads them all, so the total is the same from any of them."""
    from django.db import connection

    agent = make_agent("screener")
    folder = tmp_path / "metrics"
    folder.mkdir()
    headers = {"Authorization": f"Bearer {agent.token}"}
    with start_live_server(database_url(connection.settings_dict), tmp_path, workers=2,
                           env={"PROMETHEUS_MULTIPROC_DIR": str(folder)}) as server:
        calls = 0
        deadline = time.monotonic() + 60
        while len(_writers(folder)) < 2 and time.monotonic() < deadline:  # until both workers answered some
            with httpx2.Client() as fresh:  # a new connection each time: either worker may take it
                assert fresh.post(f"{server.url}/api/v1/tools/describe", json={}, headers=headers).status_code == 200
            calls += 1
        assert len(_writers(folder)) >= 2, "one worker took every call"
        for _ in range(6):
            with httpx2.Client() as fresh:
                read = samples(fresh.get(f"{server.url}/metrics").text)
            assert value(read, "agentprocess_tool_calls_total", tool="describe", transport="rest", outcome="ok") \
                == calls
            assert value(read, "agentprocess_database_up") == 1


def _writers(folder: Path) -> set[str]:
    """The processes that recorded a counter: prometheus-client names their files counter_<pid>.db."""
    return {path.stem.rsplit("_", 1)[1] for path in folder.glob("counter_*.db")}
