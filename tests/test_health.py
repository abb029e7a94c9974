"""/healthz and /readyz (issue 22, point 2): "`/healthz` (process alive, no dependencies touched) and
`/readyz` (database reachable and migrated, broker reachable when configured, storage writable),
JSON answers, no authentication, no secrets in the output"; done when "/readyz (and its failure
when PostgreSQL is stopped, answering 503 with the failing check named)" is tested."""

import socket
import threading
import time
from pathlib import Path

import httpx2
import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from kernel import readiness
from tests.conftest import redis_reachable, redis_url, service_unavailable
from tests.support.live import database_url, start_live_server

DEPLOYED = {"ALLOWED_HOSTS": ["process.example.com"], "SECURE_SSL_REDIRECT": True}


@pytest.fixture(autouse=True)
def _fresh_verdict():
    readiness.forget()  # each test judges its own configuration, not a verdict kept from the last
    yield
    readiness.forget()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


def test_healthz_answers_without_touching_the_database_whatever_the_host(client, settings):
    """No `db` fixture: a query would fail this test. A load balancer calls the web host by its
    address over plain http; on a deployment neither the host check nor the https redirect stops it."""
    for name, value in DEPLOYED.items():
        setattr(settings, name, value)
    response = client.get("/healthz", HTTP_HOST="10.0.0.11:8000")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store" and response["Content-Type"] == "application/json"
    assert client.post("/healthz").status_code == 405
    # Every other page of the deployment still refuses that host and redirects plain http.
    assert client.get("/accounts/login/", HTTP_HOST="10.0.0.11:8000").status_code == 400
    assert client.get("/accounts/login/", HTTP_HOST="process.example.com").status_code == 301


def test_readyz_names_each_check_and_answers_200_when_all_pass(transactional_db, client, settings):
    if not redis_reachable(redis_url()):
        service_unavailable(f"Redis is not reachable at {redis_url()}")
    settings.CELERY_BROKER_URL = redis_url()
    for name, value in DEPLOYED.items():
        setattr(settings, name, value)
    response = client.get("/readyz", HTTP_HOST="10.0.0.11:8000")
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ok", "failing": [], "checks": {
        "database": {"status": "ok", "reason": "reachable and migrated"},
        "broker": {"status": "ok", "reason": "reachable"},
        "storage": {"status": "ok", "reason": "writable"}}}
    assert not [path for path in Path(settings.MEDIA_ROOT).rglob("*") if path.is_file()]  # the probe is gone


def test_the_embedded_folder_broker_is_skipped_not_failed(transactional_db, client, settings):
    settings.CELERY_BROKER_URL = "filesystem://"
    answer = client.get("/readyz").json()
    assert answer["status"] == "ok"
    assert answer["checks"]["broker"] == {"status": "skipped", "reason": "no Redis broker configured"}


def test_readyz_is_503_naming_the_broker_when_redis_does_not_answer(transactional_db, client, settings):
    port = closed_port()
    settings.CELERY_BROKER_URL = f"redis://:hunter2-broker-password@127.0.0.1:{port}/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    answer = response.json()
    assert answer["status"] == "failing" and answer["failing"] == ["broker"]
    assert answer["checks"]["broker"] == {"status": "failing", "reason": "unreachable"}
    assert answer["checks"]["database"]["status"] == answer["checks"]["storage"]["status"] == "ok"
    body = response.content.decode()
    for secret in ("hunter2", str(port), "127.0.0.1", "redis://"):
        assert secret not in body


def test_readyz_is_503_naming_the_storage_when_the_media_folder_cannot_be_written(transactional_db, client,
                                                                                  settings, tmp_path):
    """The tests run as root, whom file modes do not stop: the media folder is made impossible to
    create instead (its parent is a file)."""
    settings.CELERY_BROKER_URL = "filesystem://"
    (tmp_path / "not-a-folder").write_text("a file")
    settings.MEDIA_ROOT = str(tmp_path / "not-a-folder" / "media")
    response = client.get("/readyz")
    assert response.status_code == 503
    answer = response.json()
    assert answer["failing"] == ["storage"]
    assert answer["checks"]["storage"] == {"status": "failing", "reason": "cannot store a file"}
    assert str(tmp_path) not in response.content.decode()


def test_readyz_is_503_naming_the_database_while_a_migration_is_not_applied(transactional_db, client, settings):
    settings.CELERY_BROKER_URL = "filesystem://"
    recorded = MigrationRecorder.Migration.objects.get(app="runs", name="0011_run_open_state")
    recorded.delete()
    try:
        response = client.get("/readyz")
    finally:
        MigrationRecorder.Migration.objects.create(app=recorded.app, name=recorded.name, applied=recorded.applied)
    assert response.status_code == 503
    assert response.json()["failing"] == ["database"]
    assert response.json()["checks"]["database"] == {
        "status": "failing", "reason": "1 migration not applied: runs.0011_run_open_state"}


def test_a_verdict_is_kept_for_a_few_seconds(transactional_db, client, settings):
    """"checked cheaply and cached for a few seconds": a second probe right after the first asks nothing."""
    settings.CELERY_BROKER_URL = "filesystem://"
    first = client.get("/readyz").json()
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    assert client.get("/readyz").json() == first  # within CACHE_SECONDS: the kept verdict
    readiness.forget()
    assert client.get("/readyz").json()["failing"] == ["broker"]


class TcpProxy:
    """A TCP relay on a loopback port to PostgreSQL, in threads of this test: `stop()` closes the
    port and every connection through it, which is what the server sees of a database that went away."""

    def __init__(self, target: tuple[str, int], port: int = 0):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", port))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(): the port stops listening
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            for end in self.sockets:
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                end.close()


def _poll(url: str, until, seconds: float = 45.0) -> httpx2.Response:
    deadline = time.monotonic() + seconds
    while True:
        response = httpx2.get(url, timeout=15)
        if until(response) or time.monotonic() > deadline:
            return response
        time.sleep(0.5)


@pytest.mark.postgres
def test_readyz_of_a_live_server_is_503_naming_the_database_while_postgresql_is_gone(transactional_db, tmp_path):
    """A real server process reaches PostgreSQL through a relay this test owns; closing the relay
    makes the database unreachable for that server only (the machine's PostgreSQL keeps running)."""
    settings_dict = connection.settings_dict
    proxy = TcpProxy((settings_dict["HOST"] or "127.0.0.1", int(settings_dict["PORT"] or 5432)))
    through_proxy = database_url({**settings_dict, "HOST": "127.0.0.1", "PORT": proxy.port})
    try:
        with start_live_server(through_proxy, tmp_path, env={"CELERY_BROKER_URL": "filesystem://"}) as server:
            healthy = _poll(f"{server.url}/readyz", lambda response: response.status_code == 200)
            assert healthy.status_code == 200, healthy.text
            assert healthy.json()["checks"]["database"] == {"status": "ok", "reason": "reachable and migrated"}

            proxy.stop()
            failing = _poll(f"{server.url}/readyz", lambda response: response.status_code == 503)
            assert failing.status_code == 503, failing.text
            answer = failing.json()
            assert answer["status"] == "failing" and answer["failing"] == ["database"]
            assert answer["checks"]["database"]["status"] == "failing"
            assert answer["checks"]["database"]["reason"] in ("unreachable", "no answer within 3 s")
            assert answer["checks"]["storage"] == {"status": "ok", "reason": "writable"}
            for secret in (str(proxy.port), settings_dict["NAME"], "postgres"):
                assert secret not in failing.text
            # Alive all the while: /healthz touches no dependency, and answers at once.
            started = time.monotonic()
            alive = httpx2.get(f"{server.url}/healthz", timeout=5)
            assert alive.status_code == 200 and alive.json() == {"status": "ok"}
            assert time.monotonic() - started < 1.0
            assert "X-Request-ID" in alive.headers

            # PostgreSQL back where the server expects it: ready again, with no restart.
            proxy = TcpProxy(proxy.target, proxy.port)
            back = _poll(f"{server.url}/readyz", lambda response: response.status_code == 200)
            assert back.status_code == 200 and back.json()["failing"] == [], back.text
    finally:
        proxy.stop()


def test_readyz_with_files_in_the_database_reports_the_storage_ready(transactional_db, client, settings):
    """Issue 22: "/readyz (… storage writable)". With FILE_STORAGE=database the bytes are rows of
    filestore/, whose names must sit in an organization's folder, so no probe file is written: the
    file table must answer on the app's connection."""
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.FILE_STORAGE = "database"
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "filestore.storage.DatabaseStorage"}}
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"]["storage"] == {"status": "ok", "reason": "in the database"}
