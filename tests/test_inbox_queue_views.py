"""The inbox's queue views, saved views and bulk decisions over the Django test client
(issue 15, points 2 and 3).

Spec §3.4: "The first decision wins; a later one answers conflict with already_decided." and
tools.md `decide`: "snapshot … a decision made on data that changed since is stale". A bulk
decision is only many single decisions: each item goes through `decide` with the snapshot its row
showed, in its own transaction, so nothing here changes what the protocol answers.
"""

import datetime as dt
import re
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernel import clock
from runs.models import Run, SavedView, StepState, WorkItem
from runs.services import queue
from tests.support.processes import PARALLEL_REVIEW
from tests.test_inbox_views import _fresh_definitions, inbox_ids, page, person_client  # noqa: F401 (fixtures)

INVOICES = """---
name: invoice-approval-q
description: Finance approves a supplier invoice.
inputs:
  vendorName: string
  amount: number
  invoiceDate: date
steps:
  - id: approve_invoice
    person: finance
    approve: Approve the invoice when it matches the order.
    due: 2d
  - id: done
    finish: approved
---
Invoices for finance.
"""

PERSONAL = """---
name: personal-sign-off
description: One named person signs off.
inputs:
  approver: person
  topic: string
steps:
  - id: sign_off
    person: inputs.approver
    approve: Sign off the topic.
  - id: done
    finish: signed
---
A named approver.
"""


@pytest.fixture
def invoices(publish):
    return publish(INVOICES, {"finance": "finance"})


def invoice(agent, vendor, amount, day="2026-10-06", mode="live"):
    view = agent.ok("start_run", process="invoice-approval-q", mode=mode,
                    inputs={"vendorName": vendor, "amount": amount, "invoiceDate": day})
    return view["workItems"][0]["id"]


def ids(client, query: str = "") -> list[str]:
    return inbox_ids(page(client, "/" + (f"?{query}" if query else "")))


def view_count(html: str, view: str) -> int:
    return int(re.search(rf'data-view-count="{view}">(\d+)<', html).group(1))


# ---------------------------------------------------------------- views


def test_mine_my_groups_all_open_and_done_by_me(publish, invoices, person_client, agent, make_person):
    publish(PERSONAL, {})
    client, ana = person_client("ana@example.com", groups=["finance"])
    _, ben = person_client("ben@example.com", groups=["finance"])
    _, ops = person_client("ops@example.com", groups=["finance"], operator=True)
    unheld, mine_taken, bens, assigned, decided = (invoice(agent, f"Vendor {n}", 100 + n) for n in range(5))
    personal = agent.ok("start_run", process="personal-sign-off",
                        inputs={"approver": "ana@example.com", "topic": "Budget"})["workItems"][0]["id"]
    now = clock.now()
    queue.take(identity=ana.identity, work_item_id=mine_taken, now=now)
    queue.take(identity=ben.identity, work_item_id=bens, now=now)
    queue.assign(identity=ops.identity, work_item_id=assigned, to="ana@example.com", now=now)
    snapshot = WorkItem.objects.get(pk=decided).run.snapshot
    ana.ok("decide", runId=WorkItem.objects.get(pk=decided).run_id, workItemId=decided, decision="approved",
           snapshot=snapshot, requestId="r-decided")

    assert set(ids(client, "view=mine")) == {mine_taken, assigned, personal}
    assert ids(client, "view=groups") == [unheld]  # group items nobody holds
    assert set(ids(client)) == {unheld, mine_taken, bens, assigned, personal}
    html = page(client, "/?view=done")
    assert inbox_ids(html) == [decided]
    assert "Approved" in html and f'href="/runs/{WorkItem.objects.get(pk=decided).run_id}"' in html
    assert 'type="checkbox" name="items"' not in html  # nothing to decide in Done by me
    assert [view_count(html, view) for view in ("mine", "groups", "all", "done")] == [3, 1, 5, 1]
    # Ben's views are his own.
    ben_client, _ = person_client("ben2@example.com", groups=["finance"])
    assert ids(ben_client, "view=mine") == []
    assert ids(ben_client, "view=done") == []


def test_sort_by_due_waiting_since_and_process(publish, invoices, person_client, agent):
    publish(PARALLEL_REVIEW, {"finance-approver": "finance"})
    client, _ = person_client("ana@example.com", groups=["finance"])
    first, second, third = (invoice(agent, f"Vendor {n}", n) for n in range(3))
    other = agent.ok("start_run", process="parallel-review", inputs={"vendorName": "Par"})["workItems"][0]["id"]
    t0 = clock.now()
    for item, due, created in ((first, 3, 1), (second, 1, 2), (third, None, 3), (other, 2, 0)):
        WorkItem.objects.filter(pk=item).update(due_at=t0 + dt.timedelta(hours=due) if due else None,
                                                created_at=t0 - dt.timedelta(hours=10 - created))
    assert ids(client) == [second, other, first, third]  # due first, no due last
    assert ids(client, "sort=waiting") == [other, first, second, third]  # oldest first
    assert ids(client, "sort=process") == [second, first, third, other]  # by name, then due
    assert ids(client, "sort=nonsense") == [second, other, first, third]  # unknown: the default


# ---------------------------------------------------------------- filters


def test_typed_input_ranges_and_the_other_filters(invoices, person_client, agent):
    client, ana = person_client("ana@example.com", groups=["finance"])
    small = invoice(agent, "Acme Steel", 120, "2026-09-30")
    exact = invoice(agent, "Borealis Paper", 500, "2026-10-02")
    large = invoice(agent, "Cobalt Freight", 12500.75, "2026-10-15")
    test_run = invoice(agent, "Delta Test", 700, "2026-10-03", mode="test")
    base = "process=invoice-approval-q"

    assert set(ids(client, f"{base}&input.amount.min=500")) == {exact, large, test_run}
    assert set(ids(client, f"{base}&input.amount.min=200&input.amount.max=700")) == {exact, test_run}
    assert ids(client, f"{base}&input.amount.max=120") == [small]
    assert set(ids(client, f"{base}&input.invoiceDate.min=2026-10-01&input.invoiceDate.max=2026-10-03")) \
        == {exact, test_run}
    assert ids(client, f"{base}&input.vendorName=Cobalt+Freight") == [large]
    assert ids(client, f"{base}&mode=test") == [test_run]
    assert test_run not in ids(client, f"{base}&mode=live")
    assert ids(client, f"{base}&version=2") == []
    assert len(ids(client, f"{base}&version=1")) == 4

    # Not a number: said in plain words next to the field, and that filter is left out.
    html = page(client, f"/?{base}&input.amount.min=lots")
    assert "Amount (at least): “lots” is not a number; that filter was left out." in html
    assert 'aria-invalid="true"' in html
    assert len(inbox_ids(html)) == 4
    html = page(client, f"/?{base}&input.invoiceDate.max=31.12.2026")
    assert "Invoice date (at most): “31.12.2026” is not a date like 2026-10-06; that filter was left out." in html

    # Held by me / nobody / someone else.
    queue.take(identity=ana.identity, work_item_id=small, now=clock.now())
    _, ben = person_client("ben@example.com", groups=["finance"])
    queue.take(identity=ben.identity, work_item_id=large, now=clock.now())
    assert ids(client, "held=me") == [small]
    assert ids(client, "held=others") == [large]
    assert set(ids(client, "held=nobody")) == {exact, test_run}

    # Free text: inputs, the step (as its title reads), the process name and the run id.
    assert ids(client, "q=borealis") == [exact]
    assert len(ids(client, "q=approve+invoice")) == 4
    assert len(ids(client, "q=invoice-approval")) == 4
    run_id = WorkItem.objects.get(pk=large).run_id
    assert ids(client, f"q={run_id}") == [large]


def test_a_number_filter_is_bound_exactly_or_left_out(invoices, person_client, agent, is_postgres):
    """A filter bound no run can hold is left out, in plain words, on both databases (on PostgreSQL it was
    a 500: "value overflows numeric format"); any other is compared with every digit (spec §2.3)."""
    from decimal import Decimal

    client, _ana = person_client("ana@example.com", groups=["finance"])
    tiny = invoice(agent, "Acme Steel", Decimal("1e-601"))
    html = page(client, "/?process=invoice-approval-q&input.amount.min=1e200000")
    assert ("Amount (at least): “1e200000” is a number too large to store exactly (at most 131072 digits before "
            "the decimal point and 16383 after); that filter was left out.") in html
    assert inbox_ids(html) == [tiny]
    if is_postgres:  # SQLite's JSON functions compare numbers as doubles (README), both 0.0 here
        assert ids(client, "process=invoice-approval-q&input.amount.min=1e-600") == []
        assert ids(client, "process=invoice-approval-q&input.amount.min=1e-601") == [tiny]


# ---------------------------------------------------------------- saved views


def test_a_saved_view_keeps_filters_and_sort_and_shows_a_live_count(invoices, person_client, agent):
    client, _ = person_client("ana@example.com", groups=["finance"], csrf=False)
    for n, amount in enumerate((50, 900, 1500, 20000)):
        invoice(agent, f"Vendor {n}", amount)
    query = "process=invoice-approval-q&input.amount.min=1000&sort=waiting&page=2"
    response = client.post("/views/save", {"name": "  Large   invoices ", "query": query})
    assert response.status_code == 302
    view = SavedView.objects.get()
    assert view.name == "Large invoices"
    # The page number belongs to one visit, not to the view; keys are kept in a stable order.
    assert view.query == "input.amount.min=1000&process=invoice-approval-q&sort=waiting"
    assert response["Location"] == f"/?{view.query}"

    html = page(client, "/")
    assert re.search(rf'data-saved-view="Large invoices">Large invoices <span class="count-badge" '
                     rf'data-saved-count="{view.pk}">2</span>', html)
    invoice(agent, "Vendor big", 5000)
    html = page(client, "/")
    assert f'data-saved-count="{view.pk}">3<' in html  # live: counted on every visit
    html = page(client, f"/?{view.query}")
    assert len(inbox_ids(html)) == 3
    assert 'aria-current="page" data-saved-view="Large invoices"' in html

    # Saving under the same name replaces it; a blank name is refused and nothing changes.
    client.post("/views/save", {"name": "Large invoices", "query": "process=invoice-approval-q&overdue=1"})
    assert SavedView.objects.get().query == "overdue=1&process=invoice-approval-q"
    response = client.post("/views/save", {"name": "   ", "query": "overdue=1"}, follow=True)
    assert "The view was not saved: give the view a name." in response.content.decode()
    assert SavedView.objects.count() == 1

    # Someone else cannot delete it; its owner can.
    other, _ = person_client("ben@example.com", groups=["finance"])
    assert other.post(f"/views/{view.pk}/delete").status_code == 404
    assert SavedView.objects.count() == 1
    response = client.post(f"/views/{view.pk}/delete", follow=True)
    assert "Deleted the view “Large invoices”." in response.content.decode()
    assert not SavedView.objects.exists()


# ---------------------------------------------------------------- constant queries at 10k


def _clone_items(template_item: WorkItem, count: int) -> None:
    """`count` more open invoice items cloned from one real run (bulk rows: fast, same shape)."""
    run = template_item.run
    state = template_item.step_state
    runs, states, items = [], [], []
    for index in range(count):
        clone = Run(organization_id=run.organization_id, version_id=run.version_id, process_name=run.process_name,
                    version_number=run.version_number, mode="test" if index % 7 == 0 else "live", state=run.state,
                    started_by=run.started_by, steps_data={}, snapshot=run.snapshot, started_at=run.started_at,
                    updated_at=run.updated_at,
                    inputs={"vendorName": f"Vendor {index}", "amount": index % 3000,
                            "invoiceDate": f"2026-10-{index % 28 + 1:02d}"})
        runs.append(clone)
        step = StepState(run=clone, organization_id=state.organization_id, process_name=state.process_name,
                         step_id=state.step_id, position=state.position, kind="approve", state="waiting",
                         ready_since=state.ready_since, due_at=state.due_at)
        states.append(step)
        due = None if index % 5 == 0 else template_item.due_at + dt.timedelta(minutes=index % 300 - 150)
        items.append(WorkItem(organization_id=template_item.organization_id, run=clone, step_state=step,
                              step_id=state.step_id, kind="approve", assigned_group="finance", due_at=due,
                              held_by="ana@example.com" if index % 11 == 0 else None,
                              created_at=template_item.created_at + dt.timedelta(seconds=index)))
    Run.objects.bulk_create(runs, batch_size=1000)
    StepState.objects.bulk_create(states, batch_size=1000)
    WorkItem.objects.bulk_create(items, batch_size=1000)


QUEUE_URLS = [
    "/", "/?view=mine", "/?view=groups", "/?view=done", "/?sort=waiting", "/?sort=process", "/?page=7",
    "/?process=invoice-approval-q&input.amount.min=100&input.amount.max=900",
    "/?process=invoice-approval-q&input.invoiceDate.min=2026-10-05&sort=process",
    "/?process=invoice-approval-q&version=1&mode=test&held=nobody",
    "/?q=Vendor+12&overdue=1&kind=approve", "/?view=mine&held=me&sort=waiting", "/?partial=1&view=groups",
]


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured.captured_queries)


def test_every_view_filter_and_sort_is_constant_in_queries_at_10k_items(invoices, person_client, agent):
    client, ana = person_client("ana@example.com", groups=["finance"])
    first = WorkItem.objects.get(pk=invoice(agent, "Template", 1))
    for name, query in (("Small", "input.amount.max=100&process=invoice-approval-q"),
                        ("Mine late", "overdue=1&view=mine"), ("Search", "q=vendor+3")):
        SavedView.objects.create(organization=ana.identity.organization, user=ana.identity.user, name=name,
                                 query=query, created_at=clock.now())
    _clone_items(first, 9)
    for url in QUEUE_URLS:  # warm the caches (compiled definitions, how fields are shown), as in a running server
        page(client, url)
    small = [_queries(client, url) for url in QUEUE_URLS]

    _clone_items(first, 9990)
    assert WorkItem.objects.filter(state="open").count() == 10000
    large = [_queries(client, url) for url in QUEUE_URLS]
    assert large == small, list(zip(QUEUE_URLS, small, large, strict=True))
    assert max(large) <= 10, list(zip(QUEUE_URLS, large, strict=True))
    html = page(client, "/")
    assert len(inbox_ids(html)) == 50
    assert re.search(r'data-count="total"><strong>10000</strong>', html)
    small_count = sum(1 for i in range(9990) if i % 3000 <= 100) + sum(1 for i in range(9) if i % 3000 <= 100) + 1
    assert re.search(rf'data-saved-view="Small">Small <span class="count-badge" data-saved-count="\d+">'
                     rf'{small_count}</span>', html)


# ---------------------------------------------------------------- bulk decisions


def _bulk_form(html: str) -> dict:
    """The hidden fields of the inbox's bulk form as the page rendered them."""
    form = html[html.index('id="bulk-form"'):html.index("</form>", html.index('id="bulk-form"'))]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
    return fields


def test_bulk_approve_decides_each_item_with_its_own_snapshot(publish, person_client, agent):
    publish(PARALLEL_REVIEW, {"finance-approver": "finance"})
    client, _ = person_client("ana@example.com", groups=["finance"])
    _, ben = person_client("ben@example.com", groups=["finance"])
    views = [agent.ok("start_run", process="parallel-review", inputs={"vendorName": f"V{n}"}) for n in range(6)]
    items = [view["workItems"][0]["id"] for view in views]
    form = _bulk_form(page(client, "/"))

    # After the page was shown: the agent finishes the screening of run 0 (its data changes), Ben
    # approves run 1 first.
    token = agent.ok("claim", runId=views[0]["run"]["id"], stepId="screen")["token"]
    agent.ok("submit", token=token, output={"cleared": True, "findings": "none"}, summary="Clear.")
    ben.ok("decide", runId=views[1]["run"]["id"], workItemId=items[1], decision="approved",
           snapshot=views[1]["workItems"][0]["snapshot"], requestId="b1")
    # An item of another group, smuggled into the form, and one that does not exist.
    person_client("lea@example.com", groups=["legal"])
    publish(PARALLEL_REVIEW.replace("name: parallel-review", "name: legal-review"), {"finance-approver": "legal"})
    foreign_item = agent.ok("start_run", process="legal-review", inputs={"vendorName": "L"})["workItems"][0]
    foreign = foreign_item["id"]

    selected = [*items, foreign, "w_nosuchitem"]
    data = {**form, "items": selected, "decision": "approved", "note": "",
            f"snapshot.{foreign}": foreign_item["snapshot"]}
    with CaptureQueriesContext(connection) as captured:
        response = client.post("/work/bulk", data)
    assert response.status_code == 200
    html = response.content.decode()
    outcomes = dict(re.findall(r'<tr data-outcome="([^"]+)" data-item="([^"]+)"', html))
    by_item = {item: outcome for outcome, item in re.findall(r'<tr data-outcome="([^"]+)" data-item="([^"]+)"', html)}
    assert by_item == {items[0]: "stale", items[1]: "already_decided", items[2]: "applied", items[3]: "applied",
                       items[4]: "applied", items[5]: "applied", foreign: "not_found", "w_nosuchitem": "not_found"}, outcomes
    assert 'data-outcome-count="applied"><strong>4</strong>' in html
    assert "ben@example.com decided it at" in html
    assert f'<a href="/work/{items[0]}">Review the fresh data and decide</a>' in html
    # Nothing changed for the refused ones.
    assert WorkItem.objects.get(pk=items[0]).state == "open"
    assert WorkItem.objects.get(pk=items[1]).decided_by == "ben@example.com"
    assert WorkItem.objects.get(pk=foreign).state == "open"
    assert {WorkItem.objects.get(pk=i).decided_by for i in items[2:]} == {"ana@example.com"}
    assert len(captured.captured_queries) / len(selected) <= 25, len(captured.captured_queries)

    # The same form sent again replays: nothing is decided twice, the answers are the same.
    again = client.post("/work/bulk", data).content.decode()
    assert {item: o for o, item in re.findall(r'<tr data-outcome="([^"]+)" data-item="([^"]+)"', again)} == by_item


def test_bulk_reject_needs_a_note_and_decides_nothing_without_one(invoices, person_client, agent):
    client, _ = person_client("ana@example.com", groups=["finance"])
    items = [invoice(agent, f"V{n}", n) for n in range(3)]
    form = _bulk_form(page(client, "/"))
    response = client.post("/work/bulk", {**form, "items": items, "decision": "rejected", "note": "  "}, follow=True)
    assert "A note is needed to reject: say why" in response.content.decode()
    assert set(WorkItem.objects.values_list("state", flat=True)) == {"open"}
    response = client.post("/work/bulk", {**form, "items": [], "decision": "approved"}, follow=True)
    assert "Select at least one item first." in response.content.decode()
    response = client.post("/work/bulk", {**form, "items": items, "decision": "completed"}, follow=True)
    assert "Choose what to do with the selected items" in response.content.decode()
    assert set(WorkItem.objects.values_list("state", flat=True)) == {"open"}
    html = client.post("/work/bulk", {**form, "items": items, "decision": "rejected",
                                      "note": "Wrong cost centre"}).content.decode()
    assert html.count('data-outcome="applied"') == 3
    assert set(WorkItem.objects.values_list("decision", flat=True)) == {"rejected"}


def test_operators_cancel_runs_in_bulk_with_one_reason(invoices, person_client, agent):
    client, _ = person_client("ops@example.com", groups=["finance"], operator=True)
    runs = [WorkItem.objects.get(pk=invoice(agent, f"V{n}", n)).run_id for n in range(3)]
    client.post(f"/runs/{runs[2]}/cancel", {"reason": "duplicate"})
    html = page(client, "/runs/")
    assert f'name="items" value="{runs[0]}"' in html and f'name="items" value="{runs[2]}"' not in html
    response = client.post("/runs/bulk-cancel", {"items": runs, "reason": "", "request_id": "x",
                                                 "back_url": "/runs/"}, follow=True)
    assert "A reason is needed to cancel runs" in response.content.decode()
    assert Run.objects.filter(state="cancelled").count() == 1
    html = client.post("/runs/bulk-cancel", {"items": runs, "reason": "Supplier withdrew", "request_id": "x",
                                             "back_url": "https://evil.example/"}).content.decode()
    assert [o for o, _ in re.findall(r'<tr data-outcome="([^"]+)" data-item="([^"]+)"', html)] == \
        ["run_ended", "cancelled", "cancelled"]  # what needs a look first
    assert 'href="/runs/"' in html  # never back to another site
    assert set(Run.objects.values_list("ended_note", flat=True)) == {"Supplier withdrew", "duplicate"}
    person, _ = person_client("ana@example.com", groups=["finance"])
    assert person.post("/runs/bulk-cancel", {"items": runs, "reason": "x"}).status_code == 403


def test_the_list_refresh_answers_only_the_list(invoices, person_client, agent):
    client, _ = person_client("ana@example.com", groups=["finance"])
    invoice(agent, "Early", 1)
    page(client, "/")  # the visit: what arrives after it is new
    late = invoice(agent, "Late", 2)
    fragment = page(client, "/?partial=1")
    assert "<html" not in fragment and 'class="counts"' in fragment
    assert re.search(r'data-count="new"><strong>1</strong> new since you opened this page', fragment)
    assert re.search(rf'<tr class="inbox-row[^"]* is-new" data-work-item="{late}"', fragment)
    html = page(client, "/")
    assert "1</strong> new since your last visit" in html
    assert 'data-count="new"' not in page(client, "/")  # seen now


def test_bookmarkable_view_links_keep_the_filters(invoices, person_client, agent):
    client, _ = person_client("ana@example.com", groups=["finance"])
    invoice(agent, "A", 1)
    html = page(client, "/?" + urlencode({"process": "invoice-approval-q", "sort": "waiting", "page": "2"}))
    assert 'href="?view=mine&amp;process=invoice-approval-q&amp;sort=waiting"' in html
    assert 'href="?process=invoice-approval-q&amp;sort=waiting"' in html  # All open: no view parameter
    assert 'name="query" value="process=invoice-approval-q&amp;sort=waiting"' in html
