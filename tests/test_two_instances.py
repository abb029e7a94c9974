"""Two independent server instances on one PostgreSQL and one shared file storage (issue 22,
"Done when", first point): separate processes, separate local folders, different ports.

Issue 22: "an upload through instance A is accepted as evidence and downloaded through instance B
with the same bytes and hash; a claim taken on A is submitted on B." Run once with
FILE_STORAGE=database and once with FILE_STORAGE=s3 against a moto server this test starts (the same
code path as real S3), so nothing here depends on a service that might be missing.
"""

import base64
import hashlib
import secrets
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.db import connection

from filestore.models import StoredFile
from runs.models import Upload
from tests.support import s3
from tests.support.live import database_url, rest, start_live_server
from tests.support.spec import EXAMPLES

pytestmark = [pytest.mark.postgres, pytest.mark.live]


def download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        return response.read()


def files_under(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


@pytest.fixture(params=["database", "s3"])
def shared_storage(request) -> dict[str, str]:
    """The environment both instances get: one storage backend that every host reaches."""
    if request.param == "database":
        return {"FILE_STORAGE": "database"}
    endpoint = request.getfixturevalue("s3_endpoint")
    return s3.s3_environment(endpoint, s3.new_bucket(endpoint))


def test_an_upload_on_one_instance_is_evidence_and_a_download_on_the_other(
        transactional_db, shared_storage, publish, make_agent, tmp_path):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    agent = make_agent("screener")
    db_url = database_url(connection.settings_dict)
    # Every host of a deployment shares SECRET_KEY (lease tokens and file URLs are signed with it).
    environment = {**shared_storage, "SECRET_KEY": secrets.token_urlsafe(64)}
    for host in ("a", "b"):
        (tmp_path / host).mkdir()  # each host's own folder (its MEDIA_ROOT is media/ in it)
    with start_live_server(db_url, tmp_path / "a", env=environment) as a, \
            start_live_server(db_url, tmp_path / "b", env=environment) as b:
        assert urlsplit(a.url).port != urlsplit(b.url).port

        run_id = rest(a.url, "start_run", agent.token, process="supplier-onboarding",
                      inputs={"vendorName": "Acme", "amount": 1})["run"]["id"]
        lease = rest(a.url, "claim", agent.token, runId=run_id, stepId="check_vendor")["token"]
        content = b"%PDF-1.4 the vendor check, uploaded through instance A"
        uploaded = rest(a.url, "upload", agent.token, fileName="check.pdf", contentType="application/pdf",
                        contentBase64=base64.b64encode(content).decode())
        assert uploaded["sha256"] == hashlib.sha256(content).hexdigest()

        # B never saw the upload: it reads the bytes from the shared storage to check their hash.
        view = rest(b.url, "submit", agent.token, token=lease, output={"cleared": True, "summary": "ok"},
                    summary="checked", evidence=[{"kind": "file", "ref": uploaded["id"]}], next="approve",
                    reason="clear")
        [evidence] = view["data"]["steps"]["check_vendor"]["evidence"]
        assert (evidence["ref"], evidence["sha256"]) == (uploaded["id"], uploaded["sha256"])

        [on_b] = rest(b.url, "get_run", agent.token, runId=run_id)["data"]["steps"]["check_vendor"]["evidence"]
        assert on_b["url"].startswith(f"{b.url}/files/")
        assert download(on_b["url"]) == content
        # A link A issued opens on B as well (one SECRET_KEY, one storage).
        [on_a] = rest(a.url, "get_run", agent.token, runId=run_id)["data"]["steps"]["check_vendor"]["evidence"]
        assert on_a["url"].startswith(f"{a.url}/files/")
        assert download(b.url + on_a["url"].removeprefix(a.url)) == content
        assert hashlib.sha256(download(on_b["url"])).hexdigest() == uploaded["sha256"]

    # The bytes are in the shared storage, not in either host's folder.
    assert files_under(tmp_path / "a" / "media") == files_under(tmp_path / "b" / "media") == []
    name = Upload.objects.get(pk=uploaded["id"]).file.name
    if shared_storage["FILE_STORAGE"] == "database":
        assert StoredFile.objects.get(name=name).size == len(content)
    else:
        stored = s3.client(shared_storage["S3_ENDPOINT_URL"]).get_object(Bucket=shared_storage["S3_BUCKET"], Key=name)
        assert stored["Body"].read() == content
