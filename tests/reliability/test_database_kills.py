"""PostgreSQL backends terminated mid-stream (issue 13): while agents write over HTTP, the server's
database connections are killed again and again. Every answer is still an envelope (a `retry`
at worst), and no write that was acknowledged is lost.

Spec §4.3: "`retry` | Transient server state. | Retry with the same requestId."
"""

import json
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest
from django.db import connection, connections

from runs.models import IdempotencyRecord, Run
from tests.support.live import database_url, start_live_server
from tests.support.processes import SCREEN_AND_APPROVE

pytestmark = [pytest.mark.postgres, pytest.mark.live, pytest.mark.django_db(transaction=True)]
WRITERS = 6
SECONDS = 8


def call(url: str, token: str, tool: str, arguments: dict) -> tuple[int, dict]:
    request = urllib.request.Request(f"{url}/api/v1/tools/{tool}", data=json.dumps(arguments).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_killed_database_connections_cost_retries_at_most_and_lose_no_acknowledged_write(publish, make_agent,
                                                                                         tmp_path):
    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    agent = make_agent("writer")
    # The server's connections carry a name (libpq's PGAPPNAME), so only they are killed.
    with start_live_server(database_url(connection.settings_dict), tmp_path, workers=2,
                           env={"DB_POOL_TIMEOUT": "5", "PGAPPNAME": "killed-server"}) as server:
        acknowledged, answers, kills, stop = [], [], [], threading.Event()
        lock = threading.Lock()

        def write():
            while not stop.is_set():
                request_id = str(uuid.uuid4())
                arguments = {"process": "screen-and-approve", "inputs": {"vendorName": request_id[:8]},
                             "requestId": request_id}
                for _attempt in range(20):  # an agent retries `retry` with the same requestId (spec §4.3)
                    status, envelope = call(server.url, agent.token, "start_run", arguments)
                    with lock:
                        answers.append((status, envelope["ok"], envelope.get("error", {}).get("code")))
                    if envelope["ok"]:
                        with lock:
                            acknowledged.append((request_id, envelope["data"]["run"]["id"]))
                        break
                    assert envelope["error"]["code"] == "retry" and status == 503, envelope
                    time.sleep(0.05)

        def kill():
            with connection.cursor() as cursor:
                while not stop.wait(0.4):
                    cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                   "WHERE application_name = 'killed-server'")
                    kills.append(cursor.fetchone()[0])
            connections.close_all()

        threads = [threading.Thread(target=write) for _ in range(WRITERS)] + [threading.Thread(target=kill)]
        for thread in threads:
            thread.start()
        time.sleep(SECONDS)
        stop.set()
        for thread in threads:
            thread.join(60)
    retries = sum(1 for _status, ok, code in answers if code == "retry")
    print(f"\n{len(answers)} answers, {len(acknowledged)} acknowledged writes, {retries} retries")
    print(f"{sum(kills)} server connections killed in {len(kills)} rounds")
    assert sum(kills) >= 10  # the server really lost its connections, again and again
    assert len(acknowledged) >= 20
    assert {status for status, _ok, _code in answers} <= {200, 503}
    # Every acknowledged write is there, once, with its idempotency record.
    runs = dict(Run.objects.filter(pk__in=[run_id for _rid, run_id in acknowledged]).values_list("pk", "state"))
    assert len(runs) == len(acknowledged) and set(runs.values()) == {"active"}
    recorded = set(IdempotencyRecord.objects.filter(tool="start_run").values_list("request_id", flat=True))
    assert {request_id for request_id, _run in acknowledged} <= recorded
