"""The README's run command sets up the demo: examples published, people (admin included), an agent."""

import io

from django.core.management import call_command

from processes.models import Process
from tests.support.actors import Actor


def run_setup():
    out = io.StringIO()
    call_command("setup_demo", stdout=out)
    return out.getvalue()


def test_setup_demo_publishes_the_examples_and_prints_working_tokens(db, client):
    output = run_setup()
    published = dict(Process.objects.values_list("name", "latest_version__number"))
    assert published == {"expense-approval": 1, "invoice-approval": 1, "supplier-onboarding": 1}
    agent_token = output.split("Demo agent a_demo-agent, bearer token:\n  ")[1].split()[0]
    assert [p["name"] for p in Actor(agent_token, "demo").ok("list_processes")["items"]] == sorted(published)
    fin_token = output.split("fin@example.com")[1].split("API token: ")[1].split()[0]
    assert Actor(fin_token, "fin").ok("get_work")["items"] == []
    assert client.login(username="admin@example.com", password="demo-pass-2026")
    page = client.get("/admin/processes/process/").content.decode()
    assert all(name in page for name in published)


def test_setup_demo_is_idempotent(db):
    run_setup()
    output = run_setup()
    assert "supplier-onboarding: version 1 is current" in output
    assert Process.objects.get(name="supplier-onboarding").versions.count() == 1
