"""Speed is a feature: a claim + submit cycle stays within 12 SQL statements, and lists do no N+1.

The count includes the audit events of both writes (issue 14): on PostgreSQL they are written in
the same statement as the write's idempotency record (a data-modifying WITH clause); SQLite, the
development database, has no such clause and pays one INSERT more per write.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.flows import LINK

PROCESS = """---
name: three-steps
description: Three agent steps in a row.
steps:
  - id: one
    agent: First.
    output: { a: number }
    evidence: [link]
  - id: two
    agent: Second.
  - id: three
    agent: Third.
  - id: done
    finish: done
---
Three steps.
"""


def test_claim_and_submit_take_at_most_12_statements(publish, agent, is_postgres):
    publish(PROCESS)
    run_id = agent.ok("start_run", process="three-steps", inputs={})["run"]["id"]
    agent.ok("get_work")  # warm caches (compiled definition) as a running server has them
    with CaptureQueriesContext(connection) as claim_queries:
        token = agent.ok("claim", runId=run_id, stepId="one")["token"]
    with CaptureQueriesContext(connection) as submit_queries:
        view = agent.ok("submit", token=token, output={"a": 1}, evidence=LINK, summary="Done.")
    assert view["steps"][1]["state"] == "ready"
    statements = [q["sql"] for q in claim_queries.captured_queries + submit_queries.captured_queries
                  if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN"))]
    print(f"claim + submit: {len(statements)} statements")
    audit_inserts = sum(q.startswith('INSERT INTO "agentprocess_auditevent"') for q in statements)
    assert audit_inserts == (0 if is_postgres else 2), "\n".join(statements)
    assert len(statements) - audit_inserts <= 12, "\n".join(statements)


def test_get_work_uses_a_constant_number_of_statements(publish, agent, django_assert_max_num_queries):
    publish(PROCESS)
    for _ in range(3):
        agent.ok("start_run", process="three-steps", inputs={})
    with CaptureQueriesContext(connection) as few:
        assert len(agent.ok("get_work")["items"]) == 3
    for _ in range(30):
        agent.ok("start_run", process="three-steps", inputs={})
    with CaptureQueriesContext(connection) as many:
        assert len(agent.ok("get_work", limit=50)["items"]) == 33
    assert len(many.captured_queries) == len(few.captured_queries)


def test_person_get_work_uses_a_constant_number_of_statements(publish, agent, make_person):
    from tests.support.spec import EXAMPLES

    publish(EXAMPLES / "invoice-approval", {"team-lead": "leads", "finance-controller": "finance"})
    lead = make_person("lead@example.com", groups=["leads"])

    def add_runs(count):
        for _ in range(count):
            run_id = agent.ok("start_run", process="invoice-approval",
                              inputs={"invoiceNumber": "1", "supplier": "S", "total": 5})["run"]["id"]
            token = agent.ok("claim", runId=run_id, stepId="match_invoice")["token"]
            agent.ok("submit", token=token, output={"purchaseOrder": "po", "matched": True}, evidence=LINK,
                     summary="ok", next="lead_approval", reason="small")

    add_runs(2)
    with CaptureQueriesContext(connection) as few:
        assert len(lead.ok("get_work")["items"]) == 2
    add_runs(10)
    with CaptureQueriesContext(connection) as many:
        assert len(lead.ok("get_work", limit=50)["items"]) == 12
    assert len(many.captured_queries) == len(few.captured_queries)
