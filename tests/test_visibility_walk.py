"""One visibility rule on every surface (issue 21, point 1): a person who takes no part in a run
walks every page and every tool, and learns nothing of it.

Spec §3.1: "Run data is visible to everyone who works a step"; §4.3: `not_found` is "No such run,
step or process in this organization". To a person outside a run (not its initiator, not in a group
bound to one of its steps, not named by a `person` path, never given one of its work items) the run
does not exist: every page and tool answers exactly what it answers for an id that never existed,
and no list, count, search or bulk result shows its id or its name.
"""

import base64
import re
import uuid
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from api.tools.registry import TOOLS
from runs.models import Run
from tests.support.actors import rest_call
from tests.support.flows import open_item

PASSWORD = "a-long-password-1"
BUSINESS_KEY = "Zephyr Hidden Supplies"
HIDDEN_PROCESS = """---
name: hidden-review
description: A supplier file screened by an agent, then approved by finance.
inputs:
  vendorName: string
  amount: number
steps:
  - id: screen
    agent: Screen the supplier and attach the report.
    evidence: [file]
  - id: approve
    person: finance-approver
    approve: Approve the supplier.
    due: 1d
  - id: done
    finish: approved
---
Hidden from everyone outside finance.
"""
OTHER_PROCESS = """---
name: warehouse-count
description: Count the stock.
steps:
  - id: count
    person: counter
    task: Count the stock.
  - id: done
    finish: counted
---
The warehouse's own process.
"""
FAKE = {"run": "r_0000000000000000000000", "item": "w_0000000000000000000000", "upload": "f_0000000000000000000000"}


@pytest.fixture
def hidden(publish, make_agent, make_person):
    """A run of finance's, its open approval, its uploaded file; an outsider from the warehouse."""
    publish(HIDDEN_PROCESS, {"finance-approver": "finance"})
    publish(OTHER_PROCESS, {"counter": "warehouse"})
    agent = make_agent("screener")
    finance = make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    outsider = make_person("outsider@example.com", groups=["warehouse"], password=PASSWORD)
    view = agent.ok("start_run", process="hidden-review", inputs={"vendorName": BUSINESS_KEY, "amount": 48000})
    run_id = view["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    upload = agent.ok("upload", fileName="screening.pdf", contentType="application/pdf",
                      contentBase64=base64.b64encode(b"%PDF-1.4 no hits").decode())
    view = agent.ok("submit", token=token, output={}, evidence=[{"kind": "file", "ref": upload["id"]}],
                    summary="Screened.")
    item = open_item(finance, run_id, "approve")
    # The outsider has work of their own, so every list and count has something to show.
    outsider.ok("start_run", process="warehouse-count", inputs={})
    return {"run": run_id, "item": item["id"], "upload": upload["id"], "snapshot": item["snapshot"],
            "file_url": view["data"]["steps"]["screen"]["evidence"][0]["url"], "agent": agent,
            "finance": finance, "outsider": outsider}


def _secrets(hidden) -> list[str]:
    return [hidden["run"], hidden["item"], hidden["upload"], BUSINESS_KEY]


def _signed_in(actor) -> Client:
    client = Client()
    assert client.login(username=actor.name, password=PASSWORD)
    return client


_NOISE = [
    re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"'),
    re.compile(r'nonce="[^"]+"'),
    re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),  # fresh requestIds
]


def _normalized(text: str, ids: dict[str, str]) -> str:
    for placeholder, value in ids.items():
        text = text.replace(value, f"<{placeholder}>")
    for noise in _NOISE:
        text = noise.sub("…", text)
    return text


# ---------------------------------------------------------------- every URL


def _people_urls():
    """Every route of the project that a signed-in person can reach: the people's pages, the file
    link and the REST tool route (walked below tool by tool). Admin, sign-in, OAuth and the API
    documents hold no run data; nor does SCIM, which a person's session cannot reach (only an
    identity provider's bearer token: tests/test_scim.py)."""
    skipped = ("admin/", "accounts/", "o/", ".well-known/", "api/v1/schema/", "api/v1/docs/", "static/", "scim/v2/")

    def walk(patterns, prefix=""):
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns, route)
            elif isinstance(entry, URLPattern) and not route.startswith(skipped):
                yield route

    return sorted(set(walk(get_resolver().url_patterns)))


def _filled(route: str, values: dict[str, str]) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda match: str(values[match.group(1)]), route)


def test_the_walk_covers_every_route_a_person_can_reach():
    # A new route must be added to the walk below (with the ids it takes), or this fails.
    assert _people_urls() == sorted([
        "", "api/v1/tools/<str:tool>", "audit/export", "files/<str:upload_id>", "files/viewer/pdf", "insight/",
        "insight/<str:name>/", "insight/<str:name>/alerts", "insight/<str:name>/alerts/<int:rule_id>/remove",
        "operators/", "operators/webhooks/", "operators/webhooks/<int:subscription_id>",
        "operators/webhooks/<int:subscription_id>/deliveries/<int:delivery_id>/send-again",
        "operators/webhooks/<int:subscription_id>/remove", "operators/webhooks/<int:subscription_id>/replay",
        "operators/webhooks/<int:subscription_id>/resume", "operators/webhooks/<int:subscription_id>/rotate",
        "operators/webhooks/add",
        "runs/", "runs/<str:run_id>", "runs/<str:run_id>/audit.<str:fmt>", "runs/<str:run_id>/cancel",
        "runs/bulk-cancel", "runs/start/", "settings/notifications", "settings/time-zone", "tokens/",
        "tokens/<int:token_id>/revoke", "views/<int:view_id>/delete", "views/save", "work/<str:work_item_id>",
        "work/<str:work_item_id>/assign", "work/<str:work_item_id>/release", "work/<str:work_item_id>/take",
        "work/bulk"])


OBJECT_ROUTES = [route for route in _people_urls() if "<" in route and route not in (
    "api/v1/tools/<str:tool>", "files/<str:upload_id>")]


@pytest.mark.parametrize("route", OBJECT_ROUTES)
@pytest.mark.parametrize("method", ["get", "post"])
def test_every_page_of_a_hidden_run_answers_as_for_an_id_that_never_existed(hidden, route, method):
    """Pages answer 404 (or, on operators' pages, the same 403 whatever the id), the same page for
    the hidden run's ids as for ids that never existed."""
    finance = hidden["finance"]
    from kernel.identity import issue_personal_token
    from runs.services import saved_views
    from kernel import clock

    # Things of finance's that the outsider must not reach either: a saved view and a token.
    view = saved_views.save(identity=finance.identity, name="Mine", query="view=mine", now=clock.now())
    token_row, _ = issue_personal_token(finance.identity, label="finance script")
    # The hidden process's alert rule and a webhook subscription with a delivery (issues 27 and 28).
    from insight.models import AlertRule
    from webhooks.models import Delivery, Subscription

    organization = finance.identity.organization
    rule = AlertRule.objects.create(organization=organization, process_name="hidden-review", figure="overdue",
                                    threshold=1, created_by=finance.identity.ref, created_at=clock.now())
    subscription = Subscription.objects.create(organization=organization, url="https://erp.example.com/hooks",
                                               kinds=["run.ended"], secret="whsec_" + "A" * 32, created_at=clock.now())
    delivery = Delivery.objects.create(organization=organization, subscription=subscription, event_seq=1,
                                       kind="run.ended", run_id=hidden["run"], payload={}, created_at=clock.now(),
                                       retrying_since=clock.now())
    real = {"run_id": hidden["run"], "work_item_id": hidden["item"], "fmt": "csv", "view_id": view.pk,
            "token_id": token_row.pk, "name": "hidden-review", "rule_id": rule.pk,
            "subscription_id": subscription.pk, "delivery_id": delivery.pk}
    fake = {"run_id": FAKE["run"], "work_item_id": FAKE["item"], "fmt": "csv", "view_id": 987654,
            "token_id": 987655, "name": "never-published", "rule_id": 987656, "subscription_id": 987657,
            "delivery_id": 987658}
    client = _signed_in(hidden["outsider"])
    form = {"decision": "approved", "snapshot": hidden["snapshot"], "note": "Looks fine.", "reason": "Done.",
            "to": "outsider@example.com", "request_id": str(uuid.uuid4())}
    answers = []
    for values in (real, fake):
        url = _filled(route, values)
        response = getattr(client, method)(url, form) if method == "post" else client.get(url)
        body = response.content.decode()
        # The page may echo the address asked for, and a saved view's number: those are the caller's.
        body_seen = re.sub(rf"\bview {values['view_id']}\b", "view <view>", body.replace(url, "<url>"))
        body_seen = body_seen.replace(values["name"], "<name>")  # the process name asked for
        answers.append((response.status_code, _normalized(body_seen, {
            "run": values["run_id"], "item": values["work_item_id"]})))
        assert response.status_code in (403, 404, 405), (url, response.status_code)
        for secret in _secrets(hidden):
            if secret not in url:
                assert secret not in body, (url, secret)
    assert answers[0] == answers[1], route
    # Nothing happened to the run or to finance's things.
    run = Run.objects.get(pk=hidden["run"])
    assert run.state == "waiting" and open_item(finance, hidden["run"], "approve")["id"] == hidden["item"]
    assert saved_views.views_of(finance.identity) and token_row.__class__.objects.filter(
        pk=token_row.pk, revoked_at__isnull=True).exists()
    # Nor to the operators' webhook subscription (removed, rotated, resumed) or its delivery.
    assert list(Subscription.objects.values_list("pk", "secret", "previous_secret")) == [
        (subscription.pk, "whsec_" + "A" * 32, "")]
    assert Delivery.objects.get().attempts == 0


def test_an_outsider_cannot_add_a_webhook_subscription(hidden, settings):
    """The one operators' write that names no object (walked above): the same 403, nothing added."""
    from webhooks.models import Subscription

    settings.WEBHOOK_ALLOW_PRIVATE = True
    client = _signed_in(hidden["outsider"])
    for method in ("get", "post"):
        response = getattr(client, method)("/operators/webhooks/add", {"url": "http://127.0.0.1:9/h",
                                                                      "kinds": ["run.started"]})
        assert response.status_code == 403, method  # operators only, before the method is looked at
    assert not Subscription.objects.exists()


LIST_PAGES = ["/", "/?view=all", "/?view=mine", "/?view=groups", "/?view=done", f"/?q={BUSINESS_KEY}",
              "/?q=Zephyr&partial=1", "/?process=hidden-review", "/runs/", "/runs/?process=hidden-review",
              "/runs/?process=hidden-review&input.vendorName=Zephyr+Hidden+Supplies", "/runs/?state=waiting",
              "/runs/start/", "/runs/start/?process=hidden-review", "/settings/notifications", "/tokens/",
              "/operators/", "/audit/export?format=csv"]


@pytest.mark.parametrize("url", LIST_PAGES)
def test_no_list_search_or_count_shows_a_hidden_run(hidden, url):
    response = _signed_in(hidden["outsider"]).get(url)
    body = response.content.decode()
    assert response.status_code in (200, 403), (url, response.status_code)
    for secret in _secrets(hidden):
        if secret.replace(" ", "+") not in url and secret not in url:  # a search echoes its own words
            assert secret not in body, (url, secret)
    if url.startswith("/?") and "partial" not in url and "done" not in url and "q=" not in url \
            and "hidden-review" not in url:
        # The counts of the outsider's own queue: their one warehouse item, not finance's approval.
        assert re.search(r"All open[^0-9]*1\b", body), url


def test_the_bulk_result_reports_a_hidden_item_as_one_that_never_existed(hidden):
    client = _signed_in(hidden["outsider"])
    pages = []
    for item_id in (hidden["item"], FAKE["item"]):
        response = client.post("/work/bulk", {"items": [item_id], f"snapshot.{item_id}": hidden["snapshot"],
                                              "decision": "approved", "request_id": str(uuid.uuid4())})
        body = response.content.decode()
        assert response.status_code == 200
        for secret in (hidden["run"], BUSINESS_KEY, "hidden-review"):
            assert secret not in body
        pages.append(_normalized(body, {"item": item_id}))
    assert pages[0] == pages[1]
    assert "No longer open" in pages[0]
    assert open_item(hidden["finance"], hidden["run"], "approve")["id"] == hidden["item"]


def test_a_file_link_of_a_hidden_run_is_404_for_a_signed_in_outsider(hidden):
    link = urlsplit(hidden["file_url"])
    assert _signed_in(hidden["finance"]).get(f"{link.path}?{link.query}").status_code == 200
    assert _signed_in(hidden["outsider"]).get(f"{link.path}?{link.query}").status_code == 404


# ---------------------------------------------------------------- every tool


def _tool_arguments(ids: dict) -> dict[str, dict]:
    """Each tool's call naming the run (or its item, or its file) by id."""
    return {
        "describe": {}, "list_processes": {},
        "get_run": {"runId": ids["run"]},
        "list_runs": {"process": "hidden-review"},
        "get_work": {"process": "hidden-review"},
        "start_run": {"process": "warehouse-count", "inputs": {}},
        "claim": {"runId": ids["run"], "stepId": "screen"},
        "renew": {"token": "x" * 40},
        "upload": {"fileName": "a.txt", "contentType": "text/plain", "contentBase64": "YQ=="},
        "submit": {"token": "x" * 40, "output": {}, "summary": "s"},
        "escalate": {"token": "x" * 40, "note": "n"},
        "decide": {"runId": ids["run"], "workItemId": ids["item"], "snapshot": ids["snapshot"],
                   "decision": "approved"},
        "cancel": {"runId": ids["run"], "reason": "No."},
        "send_event": {"runId": ids["run"], "name": "paid"},
    }


def test_the_walk_covers_every_tool():
    assert set(_tool_arguments({"run": "", "item": "", "snapshot": ""})) == set(TOOLS)


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_tool_answers_for_a_hidden_run_as_for_one_that_never_existed(hidden, tool, client):
    """Over REST with the outsider's own personal token: the same envelope for the hidden run's ids
    as for ids that never existed, and neither names it."""
    answers = []
    for ids in ({**hidden, "snapshot": hidden["snapshot"]}, {**FAKE, "snapshot": hidden["snapshot"]}):
        arguments = _tool_arguments(ids)[tool]
        if tool in ("start_run", "claim", "renew", "upload", "submit", "escalate", "decide", "cancel",
                    "send_event"):
            arguments["requestId"] = str(uuid.uuid4())
        status, envelope, response = rest_call(client, hidden["outsider"].token, tool, arguments)
        text = response.content.decode()
        for secret in (hidden["item"], hidden["upload"], BUSINESS_KEY):
            assert secret not in text, (tool, secret)
        if hidden["run"] not in str(arguments):
            assert hidden["run"] not in text, tool
        answers.append((status, _normalized(text, {"run": ids["run"], "item": ids["item"]})
                        if not envelope["ok"] else None))
    assert answers[0] == answers[1], (tool, answers)
    if tool in ("get_run", "decide"):
        assert answers[0][0] == 404, answers


def test_list_runs_and_get_work_do_not_list_a_hidden_run(hidden):
    outsider = hidden["outsider"]
    assert outsider.ok("list_runs", process="hidden-review")["items"] == []
    assert [item["id"] for item in outsider.ok("list_runs")["items"]] != [] and all(
        item["id"] != hidden["run"] for item in outsider.ok("list_runs", limit=100)["items"])
    assert outsider.ok("list_runs", inputs={"vendorName": BUSINESS_KEY})["items"] == []
    assert all(item["runId"] != hidden["run"] for item in outsider.ok("get_work", limit=100)["items"])


def test_people_who_take_part_and_agents_still_read_the_run(hidden, make_person):
    """The rule hides a run from outsiders only: its approver, an operator and any agent read it."""
    operator = make_person("ops@example.com", operator=True)
    for actor in (hidden["finance"], operator, hidden["agent"]):
        assert actor.ok("get_run", runId=hidden["run"])["run"]["id"] == hidden["run"]
        assert hidden["run"] in [item["id"] for item in actor.ok("list_runs", process="hidden-review")["items"]]


def test_a_participant_outside_the_assignment_still_gets_forbidden_from_decide(hidden, publish, make_person):
    """tools.md decide: `forbidden` for "a person outside the assignment" — a person who may see
    the run (here: they started it) but is not in the approval's group."""
    starter = make_person("starter@example.com", groups=["sales"])
    run_id = starter.ok("start_run", process="hidden-review", inputs={"vendorName": "Visible", "amount": 1})[
        "run"]["id"]
    agent = hidden["agent"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    upload = agent.ok("upload", fileName="r.pdf", contentType="application/pdf", contentBase64="JVBERg==")
    agent.ok("submit", token=token, output={}, evidence=[{"kind": "file", "ref": upload["id"]}], summary="Done.")
    item = open_item(hidden["finance"], run_id, "approve")
    error = starter.error("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                          decision="approved")
    assert (error["code"], error["message"]) == ("forbidden", "this work item is not assigned to you")
    outsider_error = hidden["outsider"].error("decide", runId=run_id, workItemId=item["id"],
                                              snapshot=item["snapshot"], decision="approved")
    assert (outsider_error["code"], outsider_error["message"]) == ("not_found", f"no run {run_id} in this organization")


@pytest.mark.live
def test_over_mcp_an_outsider_gets_not_found_and_an_empty_list(hidden, live_server_url):
    """The audit read the whole run with a personal token over MCP `get_run` and `list_runs`."""
    import anyio

    from tests.test_mcp import call, mcp_client

    async def scenario():
        async with mcp_client(live_server_url, hidden["outsider"].token) as client:
            got = await call(client, "get_run", runId=hidden["run"])
            assert got == {"ok": False, "error": {"code": "not_found",
                                                  "message": f"no run {hidden['run']} in this organization"}}
            listed = await call(client, "list_runs", process="hidden-review")
            assert listed == {"ok": True, "data": {"items": [], "nextCursor": None}}
        async with mcp_client(live_server_url, hidden["finance"].token) as client:
            assert (await call(client, "get_run", runId=hidden["run"]))["data"]["run"]["id"] == hidden["run"]

    anyio.run(scenario)
