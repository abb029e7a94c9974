"""The audit log survives its own database user (issue 21, point 3).

README "Deploying on PostgreSQL + Redis with several workers": `manage.py migrate` runs as the
role that owns the schema (MIGRATION_DATABASE_URL); the web, Celery and every other command run as
DATABASE_URL's role, which owns nothing and holds only SELECT and INSERT on the audit log. So that
role cannot TRUNCATE it, disable or drop its triggers, UPDATE or DELETE an event; and the BEFORE
TRUNCATE trigger refuses even the owner.

Each test makes its own roles and database on the suite's PostgreSQL server (names begin with the
suite's database name) and drops them at the end.
"""

import http.cookiejar
import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
import uuid

import psycopg
import pytest
from django.db import connection
from psycopg import sql

from tests.support.flows import LINK
from tests.support.live import ROOT, rest, start_live_server
from tests.support.processes import SCREEN_AND_APPROVE

pytestmark = pytest.mark.postgres

INSUFFICIENT_PRIVILEGE = "42501"
PASSWORD = "restricted-pass-21"
README = ROOT / "README.md"


class Roles:
    """An owner role, an app role and a database the owner owns (created empty, not migrated)."""

    def __init__(self):
        settings = connection.settings_dict
        self.server = {"host": settings["HOST"] or None, "port": settings["PORT"] or None,
                       "user": settings["USER"] or None, "password": settings["PASSWORD"] or None}
        base = urllib.parse.urlsplit(os.environ["DATABASE_URL"]).path.lstrip("/")
        suffix = uuid.uuid4().hex[:8]
        self.owner, self.app, self.database = f"{base}_owner_{suffix}", f"{base}_app_{suffix}", f"{base}_roles_{suffix}"

    def url(self, role: str) -> str:
        host = f"{self.server['host'] or ''}" + (f":{self.server['port']}" if self.server["port"] else "")
        return f"postgres://{role}@{host}/{self.database}"

    def admin(self, dbname: str = "postgres") -> psycopg.Connection:
        """The suite's own (superuser) role."""
        return psycopg.connect(dbname=dbname, autocommit=True, **self.server)

    def connect(self, role: str) -> psycopg.Connection:
        return psycopg.connect(dbname=self.database, autocommit=True, **{**self.server, "user": role, "password": None})

    def create(self) -> None:
        """The README's SQL for the two roles and the database, under this test's names."""
        with self.admin() as admin:
            for statement in readme_sql():
                for readme_name, name in (("agentprocess_owner", self.owner), ("agentprocess_app", self.app),
                                          ("agentprocess", self.database)):
                    statement = re.sub(rf"\b{readme_name}\b", name, statement)
                admin.execute(statement.replace("'…'", f"'{PASSWORD}'"))

    def drop(self) -> None:
        with self.admin() as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.database)))
            for role in (self.app, self.owner):
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))

    def manage(self, *args: str, migration: bool = False) -> subprocess.CompletedProcess:
        """`python manage.py …` as the app (DATABASE_URL: the app role), with the owner's
        MIGRATION_DATABASE_URL only when `migration`, as the README's deployment does."""
        env = {key: value for key, value in os.environ.items() if key != "MIGRATION_DATABASE_URL"}
        env.update({"DATABASE_URL": self.url(self.app), "CACHE_URL": "locmem"})
        if migration:
            env["MIGRATION_DATABASE_URL"] = self.url(self.owner)
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=60)


def readme_sql() -> list[str]:
    """The statements of the SQL block in README "Deploying on PostgreSQL + Redis with several workers"."""
    section = README.read_text().split("## Deploying on PostgreSQL", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sql\n(.*?)```", section, re.DOTALL).group(1)
    lines = [line.split("--", 1)[0] for line in block.splitlines()]
    return [statement.strip() for statement in "\n".join(lines).split(";") if statement.strip()]


@pytest.fixture
def roles():
    made = Roles()
    made.create()
    try:
        yield made
    finally:
        made.drop()


def refusal(conn: psycopg.Connection, statement: str) -> tuple[str, str]:
    """The SQLSTATE and message PostgreSQL refuses `statement` with."""
    with pytest.raises(psycopg.Error) as refused:
        conn.execute(statement)
    return refused.value.sqlstate, refused.value.diag.message_primary


def sign_in(base: str, email: str) -> str:
    """Sign in through the login form (a session row written by the app role); the inbox page."""
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    form = browser.open(f"{base}/accounts/login/", timeout=20).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": csrf, "username": email, "password": PASSWORD}).encode()
    with browser.open(f"{base}/accounts/login/", data=body, timeout=20) as inbox:  # the redirect, followed
        assert inbox.geturl() == f"{base}/"
        return inbox.read().decode()


def client_credentials_token(base: str, client_id: str, secret: str) -> str:
    body = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": client_id,
                                   "client_secret": secret}).encode()
    with urllib.request.urlopen(f"{base}/o/token/", data=body, timeout=20) as response:
        return json.loads(response.read())["access_token"]


def test_the_app_runs_as_a_role_that_owns_nothing_and_cannot_touch_the_audit_log(roles, tmp_path):
    migrated = roles.manage("migrate", migration=True)
    assert migrated.returncode == 0, migrated.stderr
    assert f'Granted "{roles.app}" the app\'s privileges (on the audit log: SELECT, INSERT).' in migrated.stdout

    # The whole app as the app role: commands, the REST route, OAuth, a browser session, the sweep.
    folder = tmp_path / "screen-and-approve"
    folder.mkdir()
    (folder / "PROCESS.md").write_text(SCREEN_AND_APPROVE)
    imported = roles.manage("import_process", str(folder), "--bind", "finance=finance", "--publish")
    assert imported.returncode == 0, imported.stderr
    assert "published screen-and-approve version 1" in imported.stdout
    agent = roles.manage("create_identity", "agent", "screener")
    person = roles.manage("create_identity", "person", "fin@example.com", "--groups", "finance", "--password", PASSWORD)
    assert agent.returncode == person.returncode == 0, agent.stderr + person.stderr
    agent_token, person_token = agent.stdout.split()[-1], person.stdout.split()[-1]
    registered = roles.manage("shell", "--no-imports", "-c", (  # what admin's Agent applications → Add does
        "from kernel.models import Agent; from kernel.oauth import register_agent_application as register; "
        "link, secret = register(Agent.objects.get(name='screener')); print(link.application.client_id, secret)"))
    assert registered.returncode == 0, registered.stderr
    client_id, secret = registered.stdout.split()

    with start_live_server(roles.url(roles.app), tmp_path, env={"CACHE_URL": "locmem"}) as server:
        run_id = rest(server.url, "start_run", agent_token, process="screen-and-approve",
                      inputs={"vendorName": "Acme"})["run"]["id"]
        lease = rest(server.url, "claim", agent_token, runId=run_id, stepId="screen")["token"]
        rest(server.url, "submit", agent_token, token=lease, output={"cleared": True}, evidence=LINK, summary="Clear.")
        oauth_token = client_credentials_token(server.url, client_id, secret)
        assert rest(server.url, "get_run", oauth_token, runId=run_id)["run"]["state"] == "waiting"
        assert "Inbox" in sign_in(server.url, "fin@example.com")
        item = next(entry["workItem"] for entry in rest(server.url, "get_work", person_token)["items"]
                    if entry["runId"] == run_id)
        ended = rest(server.url, "decide", person_token, runId=run_id, workItemId=item["id"],
                     snapshot=item["snapshot"], decision="approved")
        assert ended["run"]["state"] == "ended", ended
    swept = roles.manage("sweep")
    assert swept.returncode == 0, swept.stderr
    exported = roles.manage("audit_export", "--run", run_id, "--format", "jsonl")
    events = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [(e["kind"], e["actor"]["ref"]) for e in events if e["kind"] in ("run_started", "decided")] == [
        ("run_started", "a_screener"), ("decided", "fin@example.com")]

    with roles.connect(roles.app) as app:
        count = app.execute("SELECT count(*) FROM agentprocess_auditevent").fetchone()[0]
        assert count > len(events)  # the run's events and the publication's
        for statement, message in [
            ("TRUNCATE agentprocess_auditevent", "permission denied for table agentprocess_auditevent"),
            ("ALTER TABLE agentprocess_auditevent DISABLE TRIGGER audit_log_no_truncate",
             "must be owner of table agentprocess_auditevent"),
            ("ALTER TABLE agentprocess_auditevent DISABLE TRIGGER ALL",
             "must be owner of table agentprocess_auditevent"),
            ("DROP TRIGGER audit_event_append_only ON agentprocess_auditevent",
             "must be owner of relation agentprocess_auditevent"),
            ("DROP TRIGGER audit_log_no_truncate ON agentprocess_auditevent",
             "must be owner of relation agentprocess_auditevent"),
            ("UPDATE agentprocess_auditevent SET actor = 'someone else'",
             "permission denied for table agentprocess_auditevent"),
            ("DELETE FROM agentprocess_auditevent", "permission denied for table agentprocess_auditevent"),
            ("DROP TABLE agentprocess_auditevent", "must be owner of table agentprocess_auditevent"),
            ("TRUNCATE runs_run CASCADE", "permission denied for table runs_run"),
        ]:
            assert refusal(app, statement) == (INSUFFICIENT_PRIVILEGE, message), statement
        assert refusal(app, "INSERT INTO django_migrations (app, name, applied) VALUES ('x', 'y', now())") == (
            INSUFFICIENT_PRIVILEGE, "permission denied for table django_migrations")

    with roles.connect(roles.owner) as owner:  # the trigger itself: the owner may not TRUNCATE either
        assert refusal(owner, "TRUNCATE agentprocess_auditevent") == (
            INSUFFICIENT_PRIVILEGE, "audit events are append-only: TRUNCATE of the audit log refused")
        assert owner.execute("SELECT count(*) FROM agentprocess_auditevent").fetchone()[0] == count
        triggers = owner.execute("SELECT tgname, tgenabled FROM pg_trigger WHERE NOT tgisinternal AND "
                                 "tgrelid = 'agentprocess_auditevent'::regclass ORDER BY tgname").fetchall()
        assert triggers == [("audit_event_append_only", "O"), ("audit_log_no_truncate", "O")]  # O: enabled


def test_migrate_refuses_an_app_role_that_could_act_as_the_owner_and_changes_nothing(roles):
    with roles.admin() as admin:
        admin.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(roles.owner), sql.Identifier(roles.app)))
    refused = roles.manage("migrate", migration=True)
    assert refused.returncode == 1
    assert (f'CommandError: the role "{roles.app}" of DATABASE_URL is a member of the owner role of '
            "MIGRATION_DATABASE_URL: it could alter, drop or truncate the audit log; give the app a role that "
            "owns nothing") in refused.stderr
    with roles.admin(roles.database) as database:
        assert database.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
