"""Evidence (spec §5) and organizations (DESIGN.md: nothing crosses organizations)."""

import base64

import pytest

from runs.models import Upload
from tests.support.spec import EXAMPLES


@pytest.fixture
def claimed(publish, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    run_id = agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": "A", "amount": 1})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="check_vendor")["token"]
    return run_id, token


def upload(actor, content: bytes = b"report bytes"):
    return actor.ok("upload", fileName="report.pdf", contentType="application/pdf",
                    contentBase64=base64.b64encode(content).decode())


def submit(actor, token, file_id):
    return actor.call("submit", token=token, output={"cleared": True, "summary": "ok"}, summary="done",
                      evidence=[{"kind": "file", "ref": file_id}], next="approve", reason="clear")


def test_upload_records_size_and_sha256(agent, db):
    data = upload(agent, b"hello")
    assert data["bytes"] == 5
    assert data["sha256"] == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert data["id"].startswith("f_")


def test_upload_over_the_size_limit_is_refused(agent, db, settings):
    settings.MAX_UPLOAD_BYTES = 10
    error = agent.error("upload", fileName="big", contentType="text/plain",
                        contentBase64=base64.b64encode(b"x" * 11).decode())
    assert (error["code"], error["issues"]) == ("invalid", ["contentBase64: 11 bytes, more than maxUploadBytes (10)"])
    error = agent.error("upload", fileName="bad", contentType="text/plain", contentBase64="not base64!")
    assert error["issues"] == ["contentBase64: not valid base64"]
    assert not Upload.objects.exists()


def test_a_file_whose_stored_bytes_changed_is_refused_at_submit(claimed, agent):
    run_id, token = claimed
    file_id = upload(agent)["id"]
    stored = Upload.objects.get(pk=file_id)
    with open(stored.file.path, "wb") as handle:
        handle.write(b"tampered")
    envelope = submit(agent, token, file_id)
    assert envelope["error"]["issues"] == [
        f"evidence {file_id}: stored bytes no longer match the hash recorded at upload"]


def test_file_evidence_carries_a_signed_url_that_opens(claimed, agent, client):
    run_id, token = claimed
    file_id = upload(agent, b"%PDF-1.4 report")["id"]
    view = submit(agent, token, file_id)["data"]
    [item] = view["data"]["steps"]["check_vendor"]["evidence"]
    assert item["sha256"] == Upload.objects.get(pk=file_id).sha256
    path = item["url"].split("://", 1)[1].split("/", 1)[1]
    response = client.get("/" + path)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"%PDF-1.4 report"
    assert response["Content-Security-Policy"] == "sandbox; default-src 'none'"
    # A forged or altered link opens nothing.
    assert client.get(f"/files/{file_id}?t=forged").status_code == 404
    other_path = "/" + path.replace(file_id, "f_other")
    assert client.get(other_path).status_code == 404


def test_the_file_url_expires(claimed, agent, client, settings):
    run_id, token = claimed
    file_id = upload(agent)["id"]
    url = submit(agent, token, file_id)["data"]["data"]["steps"]["check_vendor"]["evidence"][0]["url"]
    settings.FILE_URL_SECONDS = -1
    assert client.get("/" + url.split("://", 1)[1].split("/", 1)[1]).status_code == 404


def test_another_organizations_upload_is_not_found(claimed, agent, make_agent):
    run_id, token = claimed
    foreign = upload(make_agent("spy", org_slug="acme"))["id"]
    assert submit(agent, token, foreign)["error"]["issues"] == [f"evidence {foreign}: not found"]


def test_another_organizations_ids_and_tokens_are_not_found(claimed, agent, make_agent, make_person):
    """Every tool called with another organization's run id or token: not_found, never data."""
    run_id, token = claimed
    outsider = make_agent("outsider", org_slug="acme")
    outsider_person = make_person("eve@acme.example", org_slug="acme", operator=True)
    for actor in (outsider, outsider_person):
        assert actor.error("get_run", runId=run_id)["code"] == "not_found"
        assert actor.error("cancel", runId=run_id, reason="x")["code"] == "not_found"
        assert actor.error("send_event", runId=run_id, name="x")["code"] == "not_found"
        assert actor.error("decide", runId=run_id, workItemId="w_x", snapshot="s", decision="approved")["code"] == \
            "not_found"
        assert actor.ok("list_runs")["items"] == []
        assert actor.ok("list_processes")["items"] == []
        assert actor.ok("get_work")["items"] == []
    assert outsider.error("claim", runId=run_id, stepId="check_vendor")["code"] == "not_found"
    for tool, extra in (("submit", {"output": {}, "summary": "x"}), ("renew", {}), ("escalate", {"note": "x"})):
        assert outsider.error(tool, token=token, **extra)["code"] == "not_found"
    assert outsider.error("start_run", process="supplier-onboarding", inputs={})["code"] == "not_found"
