"""The README's run command sets up the demo: examples published, people (admin included), an agent."""

import io

import pytest
from django.core.management import call_command

from processes.models import Process
from tests.support.actors import Actor


@pytest.fixture(autouse=True)
def _demo_tokens_file(settings, tmp_path):
    settings.DEMO_TOKENS_FILE = tmp_path / "demo-tokens.json"


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


def _printed_tokens(output: str) -> dict[str, str]:
    people = {line.split()[0]: line.rsplit("API token: ", 1)[1] for line in output.splitlines()
              if "API token: " in line}
    return {**people, "a_demo-agent": output.split("Demo agent a_demo-agent, bearer token:\n  ")[1].split()[0]}


def test_every_start_prints_the_same_tokens_and_leaves_one_live_token_each(db, settings):
    """Issue 21, point 6: every `./dev run` minted new tokens and never revoked the last (a person
    ended with three live tokens). The demo prints the same tokens at every start."""
    from kernel.models import ApiToken

    first = _printed_tokens(run_setup())
    second = _printed_tokens(run_setup())
    assert second == first and len(first) == 7
    assert ApiToken.objects.filter(label="demo", revoked_at__isnull=True).count() == 7
    assert "These tokens stay the same at every start" in run_setup()
    assert oct(settings.DEMO_TOKENS_FILE.stat().st_mode & 0o777) == "0o600"


def test_a_revoked_demo_token_is_replaced_at_the_next_start_and_no_other_stays_live(db, settings):
    from kernel.identity import hash_token
    from kernel.models import ApiToken

    first = _printed_tokens(run_setup())
    ApiToken.objects.filter(token_hash=hash_token(first["fin@example.com"])).update(revoked_at="2026-01-01T00:00Z")
    settings.DEMO_TOKENS_FILE.write_text("{}")  # a lost file: the kept tokens are not known any more
    second = _printed_tokens(run_setup())
    assert second["fin@example.com"] != first["fin@example.com"]
    assert Actor(second["fin@example.com"], "fin").ok("get_work")["items"] == []
    # One live demo token per identity: the kept-but-unknown ones were revoked.
    assert ApiToken.objects.filter(label="demo", revoked_at__isnull=True).count() == 7
    from kernel.identity import identity_from_bearer

    assert identity_from_bearer(first["a_demo-agent"]) is None  # the earlier agent token stopped working
    assert identity_from_bearer(second["a_demo-agent"]).is_agent


def test_create_identity_replaces_the_token_it_printed_last_time(db):
    """Issue 21, point 6: the README's `create_identity person …` minted a token on every run and
    never revoked the last. Tokens made in the browser stay; --keep keeps earlier ones."""
    from kernel.identity import identity_from_bearer, issue_personal_token

    def create(*extra):
        out = io.StringIO()
        call_command("create_identity", "person", "fin@example.com", "--groups", "finance", *extra, stdout=out)
        return out.getvalue().splitlines()

    first = create()[-1]
    _row, browser_token = issue_personal_token(identity_from_bearer(first), label="my script")
    second_lines = create()
    assert second_lines[-2:-1] == ["revoked 1 earlier token printed by create_identity (--keep keeps them)"]
    assert identity_from_bearer(first) is None
    assert identity_from_bearer(second_lines[-1]).email == "fin@example.com"
    assert identity_from_bearer(browser_token).email == "fin@example.com"
    third = create("--keep")[-1]
    assert identity_from_bearer(second_lines[-1]) is not None and identity_from_bearer(third) is not None
