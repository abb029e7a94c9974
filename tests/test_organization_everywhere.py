"""Ready to shard by organization (issue 22, point 7): every table the project owns either carries
the organization it belongs to, or is on the short list of tables every organization reads (which
a distributed PostgreSQL such as Citus keeps as reference tables). A new model without one fails
here, so a new table cannot silently break the plan in ARCHITECTURE.md ("Scaling")."""

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

OUR_APPS = ("agentprocess", "processes", "runs", "filestore")
# Read by every organization's requests, small, or the key itself.
REFERENCE_TABLES = {"agentprocess.Organization"}
PAID = """---
name: paid-signal
description: Waits for the payment event.
steps:
  - id: paid
    wait_for: paid
  - id: done
    finish: paid
---
Waits.
"""


def test_every_model_of_ours_names_its_organization():
    missing = []
    for model in apps.get_models():
        if model._meta.app_label not in OUR_APPS or model._meta.label in REFERENCE_TABLES:
            continue
        field = next((f for f in model._meta.concrete_fields if f.name == "organization"), None)
        if field is None or field.null or field.related_model._meta.label != "agentprocess.Organization":
            missing.append(model._meta.label)
    assert missing == [], f"tables without a non-null organization: {missing} (ARCHITECTURE.md, Scaling)"


@pytest.mark.django_db(transaction=True)
def test_the_backfill_gives_existing_rows_their_organization(publish, make_agent, make_person):
    """Rows written before the column existed get it from their process, run, agent or person."""
    from kernel.models import AgentApplication, NoticePreference, PageSettings
    from kernel.oauth import register_agent_application
    from processes.models import ProcessVersion
    from runs.models import Event, InboxVisit
    publish(PAID)
    agent = make_agent("screener")
    person = make_person("mira@example.com", groups=["finance"])
    run_id = agent.ok("start_run", process="paid-signal", inputs={})["run"]["id"]
    agent.ok("send_event", runId=run_id, name="paid")
    link, _ = register_agent_application(agent.identity.agent)
    user = person.identity.user
    org_id = person.identity.organization.id
    NoticePreference.objects.create(user=user, organization_id=org_id, kind="new_work", delivery="off",
                                    updated_at="2026-12-05T00:00Z")
    PageSettings.objects.create(user=user, organization_id=org_id, time_zone="Europe/Berlin")
    InboxVisit.objects.create(user=user, organization_id=org_id, seen_at="2026-12-05T00:00Z")
    tables = {"processes_processversion", "runs_event", "runs_inboxvisit", "agentprocess_agentapplication",
              "agentprocess_noticepreference", "agentprocess_pagesettings"}
    with connection.cursor() as cursor:
        for table in sorted(tables):
            cursor.execute(f"SELECT COUNT(*) FROM {table}")
            assert cursor.fetchone()[0] >= 1, table
    executor = MigrationExecutor(connection)
    before = [("agentprocess", "0011_audit_event_kinds"), ("processes", "0002_field_presentation"),
              ("runs", "0009_work_item_assigned_by")]
    executor.migrate(before)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert set(ProcessVersion.objects.values_list("organization_id", flat=True)) == {org_id}
    assert list(Event.objects.values_list("organization_id", flat=True)) == [org_id]
    assert AgentApplication.objects.get(pk=link.pk).organization_id == org_id
    for model in (NoticePreference, PageSettings, InboxVisit):
        assert list(model.objects.values_list("organization_id", flat=True)) == [org_id], model
    call_command("migrate", verbosity=0)  # leave the schema as the other tests expect it
