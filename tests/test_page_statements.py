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


# Measured before issue 29: 17 statements on both databases (SQLite: 18 with its audit INSERT), 2 reads.
BUDGET = 17
WORK_ITEM_READS = 2
