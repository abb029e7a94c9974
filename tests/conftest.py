import os
import socket
from pathlib import Path

import pytest
from django.db import connection

from kernel import clock

from .support.actors import Actor

pytest_plugins = ["tests.support.live", "tests.support.s3"]

CI = os.environ.get("CI", "").lower() == "true"


def pytest_collection_modifyitems(config, items):
    """PostgreSQL-only tests are deselected (not skipped) on a SQLite run; .ci/run does both runs."""
    from django.conf import settings

    on_postgres = settings.DATABASES["default"]["ENGINE"].startswith("django.db.backends.postgresql")
    if on_postgres:
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("postgres") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def service_unavailable(reason: str):
    """Skip a service test with a clear reason; under CI=true a missing service is a failure."""
    if CI:
        pytest.fail(f"CI=true and {reason}")
    pytest.skip(reason)


def redis_url() -> str:
    return os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


def redis_reachable(url: str) -> bool:
    from urllib.parse import urlparse

    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session", autouse=True)
def _reset_past_the_audit_guard():
    """Transactional tests are reset with TRUNCATE, which the audit log refuses on PostgreSQL
    (kernel migration 0010). The reset alone runs as a replica session, which fires no trigger:
    what a superuser (the suite's role) would do to empty the log on purpose."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, *args, **kwargs):
        statements = truncate(self, *args, **kwargs)  # run in one transaction (execute_sql_flush)
        return ["SET LOCAL session_replication_role = replica", *statements] if statements else statements

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "sql_flush", sql_flush)
        yield


@pytest.fixture(autouse=True)
def _fresh_cache():
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    if isinstance(caches["default"], LocMemCache):  # never flush a shared Redis (it may hold a broker's queues)
        caches["default"].clear()  # the throttles' counters (process memory under ./dev test)
    from webhooks.services import events

    events._wanted.clear()  # what an organization's webhook subscriptions want (ids are reused after a test)


@pytest.fixture(autouse=True)
def _reset_clock():
    clock.reset()
    yield
    clock.reset()


@pytest.fixture(autouse=True)
def _fresh_definitions():
    # Compiled definitions are cached by version id; test databases roll back and reuse ids.
    from kernel import organizations
    from processes import definition

    definition._cache.clear()
    organizations._by_id.clear()


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    # Password hashing is deliberately slow; tests need it to work, not to resist brute force.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher", "kernel.hashers.ClientSecretHasher"]


@pytest.fixture
def org(db):
    from kernel.organizations import default_organization

    return default_organization()


@pytest.fixture
def make_agent(org):
    from kernel.organizations import create_agent, get_or_create_organization

    def make(name="screener", org_slug=None) -> Actor:
        organization = get_or_create_organization(org_slug) if org_slug else org
        _agent, token = create_agent(organization, name)
        return Actor(token=token, name=name)

    return make


@pytest.fixture
def make_person(org):
    from kernel.organizations import create_person, get_or_create_organization

    def make(email="mira@example.com", groups=(), operator=False, password=None, org_slug=None) -> Actor:
        organization = get_or_create_organization(org_slug) if org_slug else org
        _user, token = create_person(organization, email, groups=list(groups), operator=operator, password=password)
        return Actor(token=token, name=email)

    return make


@pytest.fixture
def agent(make_agent):
    return make_agent("screener")


@pytest.fixture
def publish(org):
    """Publish a PROCESS.md (path to a folder or file, or text) with role bindings; returns the version."""
    from kernel.organizations import get_or_create_organization
    from processes.publishing import bind_roles, import_draft
    from processes.publishing import publish as publish_draft

    def do(source, bindings=None, org_slug=None, folder_name=None):
        organization = get_or_create_organization(org_slug) if org_slug else org
        if isinstance(source, Path):
            if source.is_dir():
                folder_name = source.name
                source = source / "PROCESS.md"
            source = source.read_text()
        draft = import_draft(organization=organization, source=source, folder_name=folder_name)
        assert not draft.issues, draft.issues
        if bindings:
            bind_roles(draft=draft, bindings=bindings)
        return publish_draft(draft=draft)

    return do


@pytest.fixture
def is_postgres():
    return connection.vendor == "postgresql"


def pytest_terminal_summary(terminalreporter):
    """Without ../shared/spec, one line says how many tests skipped for it and why (not one per test)."""
    from .support.spec import SPEC, SPEC_ABSENT, spec_present

    if spec_present():
        return
    skipped = [report for report in terminalreporter.stats.get("skipped", [])
               if isinstance(report.longrepr, tuple) and SPEC_ABSENT in str(report.longrepr[2])]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} tests skipped: they check the specification's own files, "
                                    f"which are not at {SPEC} (../shared/spec)")
