"""The inbox approval POST stays cheap (issue 29): "the work item is read twice and the assignment
checked twice per POST" — now once each — and its statements are counted and pinned.

The count leaves out savepoints (the unit of work's nesting, not work) like
tests/test_statement_budget.py; SQLite pays one audit INSERT more than PostgreSQL (issue 14).
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.test_inbox_views import hidden, item_of, page, person_client, quick, start  # noqa: F401 - fixtures
from tests.test_inbox_views import _fast_passwords, _fresh_definitions  # noqa: F401 - fixtures

def _work_item_reads(statements: list[str], item_id: str) -> list[str]:
    """SELECTs of this work item by its id (the inbox's next-item query reads other rows)."""
    return [sql for sql in statements if sql.startswith("SELECT") and 'FROM "runs_workitem"' in sql
            and f"\"runs_workitem\".\"id\" = '{item_id}'" in sql]


def _approve(client, item_id) -> list[str]:
    fields = hidden(page(client, f"/work/{item_id}"))
    with CaptureQueriesContext(connection) as captured:
        response = client.post(f"/work/{item_id}", {**fields, "decision": "approved", "note": ""})
    assert response.status_code == 302, response.content[:300]
    return [q["sql"] for q in captured.captured_queries
            if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN"))]


def test_the_approval_post_reads_the_work_item_once(quick, person_client, agent):
    """Issue 29: "the work item is read twice and the assignment checked twice per POST" (2 → 1)."""
    client, _ = person_client("fin@example.com", groups=["finance"])
    item = item_of(start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1}))
    statements = _approve(client, item["id"])
    reads = _work_item_reads(statements, item["id"])
    print(f"approval POST: {len(statements)} statements, {len(reads)} reads of the work item")
    assert len(reads) == WORK_ITEM_READS, "\n".join(statements)


def test_the_approval_post_stays_within_its_statement_budget(quick, person_client, agent, is_postgres):
    """Issue 29: "The inbox approval POST: statements before and after (16 today)"."""
    client, _ = person_client("fin@example.com", groups=["finance"])
    start(agent, "quick-approval", {"vendorName": "Warm", "amount": 1})  # warm the caches, as a server has them
    warm = item_of(start(agent, "quick-approval", {"vendorName": "Warm", "amount": 2}))
    _approve(client, warm["id"])
    item = item_of(start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1}))
    statements = _approve(client, item["id"])
    audit_inserts = sum(sql.startswith('INSERT INTO "agentprocess_auditevent"') for sql in statements)
    print(f"approval POST: {len(statements)} statements ({audit_inserts} audit inserts)")
    assert len(statements) - audit_inserts <= BUDGET, "\n".join(statements)


# Before issue 29: 17 statements on both databases (SQLite: 18 with its audit INSERT), 2 reads of the
# work item and 2 visibility checks; after: one read, one check (the decide tool's).
BUDGET = 15
WORK_ITEM_READS = 1


def test_an_item_read_before_another_decision_is_not_decided_twice(quick, person_client, agent):
    """The row the page read is used without a lock; one decided meanwhile is refused as
    already_decided (the conditional UPDATE), and the first decision stands."""
    from django.contrib.auth import get_user_model

    from api.tools import call_tool
    from kernel.identity import person_identity
    from runs.models import Run, WorkItem
    from runs.selectors import work_item_read_already

    person_client("fin@example.com", groups=["finance"])
    view = start(agent, "quick-approval", {"vendorName": "Acme", "amount": 1})
    item = item_of(view)
    identity = person_identity(get_user_model().objects.get(email="fin@example.com"))
    read_before = WorkItem.objects.get(pk=item["id"])  # open, as the page read it
    arguments = {"runId": view["run"]["id"], "workItemId": item["id"], "snapshot": item["snapshot"]}
    first = call_tool(identity, "decide", {**arguments, "decision": "approved", "requestId": "first"})
    assert first["ok"], first
    with work_item_read_already(read_before):
        second = call_tool(identity, "decide", {**arguments, "snapshot": Run.objects.get(pk=view["run"]["id"]).snapshot,
                                                 "decision": "failed", "note": "late", "requestId": "second"})
    assert second["error"]["code"] == "conflict" and second["error"]["issues"] == ["already_decided"], second
    assert second["error"]["message"].startswith("this work item was already decided (approved) by fin@example.com")
    assert WorkItem.objects.get(pk=item["id"]).decision == "approved"
