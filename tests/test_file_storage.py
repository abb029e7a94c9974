"""Files behind Django's storage API (issue 22, point 1): FILE_STORAGE picks a local folder, the
database, or an S3-compatible bucket (moto in server mode here, the same code path as real S3).

Issue 22: "Hash verification, size limits and signed short-lived file URLs work the same on every
backend; with S3 the URL may be a presigned URL of the bucket (a setting), else the server streams
the object. A management command moves existing files from one backend to another and verifies
every hash."
"""

import base64
import hashlib
import io
import urllib.request
from pathlib import Path

import pytest
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command

from filestore.models import FileChunk, StoredFile
from runs.models import Upload
from runs.services import stored_files
from tests.support import s3
from tests.support.spec import EXAMPLES
from tests.test_security_defaults import run_django

BACKENDS = ("local", "database", "s3")
SMALL_CHUNKS = 5  # the database backend's chunk size here, so every file spans several chunks
TAMPERED = "stored bytes no longer match the hash recorded at upload"


def sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


class Backend:
    """One storage backend as the server uses it, and as an outsider would see and tamper with it."""

    def __init__(self, kind: str, settings, endpoint: str | None = None):
        self.kind, self.settings, self.endpoint = kind, settings, endpoint
        self.bucket = s3.new_bucket(endpoint) if kind == "s3" else None
        self.storage_settings = {
            "local": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"allow_overwrite": True}},
            "database": {"BACKEND": "filestore.storage.DatabaseStorage", "OPTIONS": {"chunk_bytes": SMALL_CHUNKS}},
            "s3": s3.s3_storage(endpoint, self.bucket) if endpoint else None,
        }[kind]

    def configure(self):
        """Configured (as its environment variables would), for move_files; not the server's storage."""
        self.settings.FILE_STORAGES = {**self.settings.FILE_STORAGES, self.kind: self.storage_settings}
        return self

    def use(self):
        """Configured and the server's FILE_STORAGE."""
        self.configure()
        self.settings.FILE_STORAGE = self.kind
        self.settings.STORAGES = {**self.settings.STORAGES, "default": self.storage_settings}
        return self

    def names(self) -> list[str]:
        """Every stored file's name, read past the server."""
        if self.kind == "local":
            root = Path(self.settings.MEDIA_ROOT)
            return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())
        if self.kind == "database":
            return sorted(StoredFile.objects.values_list("name", flat=True))
        listed = s3.client(self.endpoint).list_objects_v2(Bucket=self.bucket)
        return sorted(entry["Key"] for entry in listed.get("Contents", []))

    def raw(self, name: str) -> bytes:
        if self.kind == "local":
            return (Path(self.settings.MEDIA_ROOT) / name).read_bytes()
        if self.kind == "database":
            return b"".join(bytes(data) for data in FileChunk.objects.filter(file__name=name)
                            .order_by("offset").values_list("data", flat=True))
        return s3.client(self.endpoint).get_object(Bucket=self.bucket, Key=name)["Body"].read()

    def tamper(self, name: str, content: bytes):
        """Change stored bytes behind the server's back (a disk fault, an edit in the bucket)."""
        if self.kind == "local":
            path = Path(self.settings.MEDIA_ROOT) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        elif self.kind == "database":
            chunk = FileChunk.objects.filter(file__name=name).order_by("offset").first()
            FileChunk.objects.filter(pk=chunk.pk).update(data=content[:len(chunk.data)])
        else:
            s3.client(self.endpoint).put_object(Bucket=self.bucket, Key=name, Body=content)


@pytest.fixture(params=BACKENDS)
def backend(request, settings, db) -> Backend:
    endpoint = request.getfixturevalue("s3_endpoint") if request.param == "s3" else None
    return Backend(request.param, settings, endpoint).use()


@pytest.fixture
def make_backend(request, settings):
    def make(kind: str) -> Backend:
        return Backend(kind, settings, request.getfixturevalue("s3_endpoint") if kind == "s3" else None)
    return make


def upload(actor, content: bytes, file_name: str = "report.pdf") -> dict:
    return actor.ok("upload", fileName=file_name, contentType="application/pdf",
                    contentBase64=base64.b64encode(content).decode())


@pytest.fixture
def claimed(publish, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    run_id = agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": "A", "amount": 1})["run"]["id"]
    return run_id, agent.ok("claim", runId=run_id, stepId="check_vendor")["token"]


def submit(actor, token: str, file_id: str) -> dict:
    return actor.call("submit", token=token, output={"cleared": True, "summary": "ok"}, summary="done",
                      evidence=[{"kind": "file", "ref": file_id}], next="approve", reason="clear")


def local_path(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


# --- every backend alike ---------------------------------------------------------------------


def test_an_upload_is_stored_in_the_chosen_backend_only_and_reads_back_with_its_hash(backend, agent, org, settings):
    content = b"%PDF-1.4 the screening report, several chunks long"
    data = upload(agent, content)
    name = f"{org.id}/{sha(content)}"
    assert (data["sha256"], data["bytes"]) == (sha(content), len(content))
    assert backend.names() == [name]
    assert backend.raw(name) == content
    if backend.kind != "local":  # nothing on this host's disk: another host reads the same bytes
        assert not Path(settings.MEDIA_ROOT).exists() or not any(Path(settings.MEDIA_ROOT).rglob("*"))
    stored = Upload.objects.get(pk=data["id"])
    with stored.file.open("rb") as handle:
        assert handle.read() == content
    assert stored_files.sha256_of(name) == sha(content)
    upload(agent, content, file_name="again.pdf")  # the same bytes again: one stored file
    assert backend.names() == [name]


def test_the_size_limit_refuses_before_anything_is_stored(backend, agent, settings):
    settings.MAX_UPLOAD_BYTES = 10
    error = agent.error("upload", fileName="big", contentType="text/plain",
                        contentBase64=base64.b64encode(b"x" * 11).decode())
    assert (error["code"], error["message"], error["issues"]) == (
        "invalid", "the file is too large", ["contentBase64: 11 bytes, more than maxUploadBytes (10)"])
    assert backend.names() == []
    assert upload(agent, b"x" * 10)["bytes"] == 10
    assert len(backend.names()) == 1


def test_a_file_whose_stored_bytes_changed_is_refused_at_submit(backend, claimed, agent, org):
    """Spec §5: the server records the SHA-256 at upload; acceptance checks the stored bytes still match."""
    _run_id, token = claimed
    content = b"the report as uploaded"
    file_id = upload(agent, content)["id"]
    backend.tamper(f"{org.id}/{sha(content)}", b"THE REPORT AS CHANGED")
    envelope = submit(agent, token, file_id)
    assert (envelope["error"]["code"], envelope["error"]["issues"]) == (
        "not_accepted", [f"evidence {file_id}: {TAMPERED}"])


def test_a_file_missing_from_storage_is_refused_at_submit(backend, claimed, agent, org):
    _run_id, token = claimed
    content = b"a report that will vanish"
    file_id = upload(agent, content)["id"]
    default_storage.delete(f"{org.id}/{sha(content)}")
    assert backend.names() == []
    assert submit(agent, token, file_id)["error"]["issues"] == [f"evidence {file_id}: {TAMPERED}"]


def test_the_signed_url_streams_the_bytes_on_every_backend(backend, claimed, agent, client, settings):
    _run_id, token = claimed
    content = b"%PDF-1.4 evidence to open"
    file_id = upload(agent, content)["id"]
    [item] = submit(agent, token, file_id)["data"]["data"]["steps"]["check_vendor"]["evidence"]
    assert item["sha256"] == sha(content)
    response = client.get(local_path(item["url"]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == content
    assert (response["Content-Type"], response["Content-Length"]) == ("application/pdf", str(len(content)))
    assert response["Content-Disposition"] == 'inline; filename="report.pdf"'
    assert response["Content-Security-Policy"] == "sandbox; default-src 'none'"
    assert client.get(f"/files/{file_id}?t=forged").status_code == 404
    settings.FILE_URL_SECONDS = -1  # expired
    assert client.get(local_path(item["url"])).status_code == 404


# --- S3: a presigned URL of the bucket --------------------------------------------------------


def test_with_presigned_urls_the_signed_url_redirects_to_the_bucket(make_backend, claimed, agent, client, settings):
    """Issue 22: "with S3 the URL may be a presigned URL of the bucket (a setting)"."""
    bucket = make_backend("s3").use()
    settings.S3_PRESIGNED_URLS = True
    _run_id, token = claimed
    content = b"%PDF-1.4 served by the bucket"
    file_id = upload(agent, content, file_name="Prüfbericht 7.pdf")["id"]
    [item] = submit(agent, token, file_id)["data"]["data"]["steps"]["check_vendor"]["evidence"]
    response = client.get(local_path(item["url"]))
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(f"{bucket.endpoint}/{bucket.bucket}/") and "X-Amz-Signature=" in location
    with urllib.request.urlopen(location) as fetched:
        assert fetched.read() == content
        assert fetched.headers["Content-Type"] == "application/pdf"
        assert fetched.headers["Content-Disposition"] == "attachment; filename*=utf-8''Pr%C3%BCfbericht%207.pdf"
    # Our own signed URL still decides: forged or expired, no redirect to the bucket.
    assert client.get(f"/files/{file_id}?t=forged").status_code == 404
    settings.FILE_URL_SECONDS = -1
    assert client.get(local_path(item["url"])).status_code == 404


def test_presigned_urls_are_refused_for_another_backend():
    started = run_django("print('started')", {"FILE_STORAGE": "database", "S3_PRESIGNED_URLS": "true"})
    assert started.returncode != 0 and "S3_PRESIGNED_URLS is for FILE_STORAGE=s3" in started.stderr


@pytest.mark.parametrize(("environment", "message"), [
    ({"FILE_STORAGE": "nfs"}, "FILE_STORAGE='nfs': use local, database or s3"),
    ({"FILE_STORAGE": "s3"}, "FILE_STORAGE=s3 needs S3_BUCKET (and S3_ENDPOINT_URL for a store other than AWS)"),
])
def test_an_unknown_or_incomplete_file_storage_refuses_to_start(environment, message):
    started = run_django("print('started')", environment)
    assert started.returncode != 0 and "started" not in started.stdout
    assert message in started.stderr


# --- the database backend's own contract -----------------------------------------------------


def test_the_database_backend_keeps_bytes_in_chunks_and_reads_any_range(make_backend, org):
    """Bytes in a table, streamed: a file spans chunks, a reader seeks and reads across them."""
    make_backend("database").use()
    content = bytes(range(23))
    name = f"{org.id}/{sha(content)}"
    assert default_storage.save(name, ContentFile(content)) == name
    assert list(FileChunk.objects.filter(file__name=name).order_by("offset").values_list("offset", flat=True)) == \
        [0, 5, 10, 15, 20]
    assert set(FileChunk.objects.values_list("organization_id", flat=True)) == {org.id}
    assert (default_storage.size(name), default_storage.exists(name)) == (23, True)
    assert default_storage.listdir("") == ([str(org.id)], [])
    assert default_storage.listdir(str(org.id)) == ([], [sha(content)])
    with default_storage.open(name) as handle:
        handle.seek(7)
        assert handle.read(10) == content[7:17]
        assert handle.read() == content[17:]
        handle.seek(-3, io.SEEK_END)
        assert handle.read() == content[20:]
    assert default_storage.save(name, ContentFile(b"same name, saved again")) == name  # overwritten, not renamed
    assert StoredFile.objects.get(name=name).size == len(b"same name, saved again")
    default_storage.delete(name)
    assert (default_storage.exists(name), FileChunk.objects.count()) == (False, 0)
    with pytest.raises(FileNotFoundError):
        default_storage.open(name)


def test_the_database_backend_refuses_a_name_outside_an_organization(make_backend, org):
    make_backend("database").use()
    with pytest.raises(SuspiciousFileOperation) as refused:
        default_storage.save("loose.txt", ContentFile(b"x"))
    assert str(refused.value) == \
        "the database storage keeps uploads only, named <organization id>/<name>, not 'loose.txt'"
    assert StoredFile.objects.count() == 0


# --- manage.py move_files --------------------------------------------------------------------


def test_move_files_copies_every_file_between_backends_and_verifies_each_hash(make_backend, agent, make_agent,
                                                                            capsys):
    local = make_backend("local").use()
    database, bucket = make_backend("database").configure(), make_backend("s3").configure()
    contents = [b"first report", b"second report"]
    uploads = [upload(agent, content) for content in contents]
    uploads.append(upload(make_agent("spy", org_slug="acme"), b"another organization's report"))
    names = sorted(Upload.objects.get(pk=u["id"]).file.name for u in uploads)
    assert local.names() == names

    call_command("move_files", to="database")
    assert capsys.readouterr().out.strip() == "local -> database: copied 3, already there 0, refused 0"
    call_command("move_files", to="database")  # again: nothing new
    assert capsys.readouterr().out.strip() == "local -> database: copied 0, already there 3, refused 0"
    database.use()
    call_command("move_files", to="s3")
    assert capsys.readouterr().out.strip() == "database -> s3: copied 3, already there 0, refused 0"
    for backend in (database, bucket):
        assert backend.names() == names
        assert [sha(backend.raw(name)) for name in names] == [name.split("/")[1] for name in names]
    assert local.names() == names  # the source is never changed


def test_move_files_refuses_a_file_whose_bytes_do_not_match_and_copies_the_rest(make_backend, agent, org, capsys):
    local, bucket = make_backend("local").use(), make_backend("s3").configure()
    good, bad = upload(agent, b"a sound report")["sha256"], upload(agent, b"a report that rots")["sha256"]
    local.tamper(f"{org.id}/{bad}", b"rotten bytes")
    with pytest.raises(CommandError) as refused:
        call_command("move_files", to="s3")
    assert str(refused.value) == \
        "local -> s3: copied 1, already there 0, refused 1; fix or remove the refused files, then run again"
    assert capsys.readouterr().err.strip() == (
        f"refused {org.id}/{bad}: the bytes in local hash to {sha(b'rotten bytes')}, the upload recorded {bad}; "
        "nothing was written for it")
    assert bucket.names() == [f"{org.id}/{good}"]  # nothing of the refused file reached the bucket


def test_move_files_refuses_nonsense_before_touching_anything(settings):
    with pytest.raises(CommandError) as same:
        call_command("move_files", to="local")
    assert str(same.value) == "--from and --to are both local: nothing to move"
    settings.FILE_STORAGES = {kind: value for kind, value in settings.FILE_STORAGES.items() if kind != "s3"}
    with pytest.raises(CommandError) as unconfigured:
        call_command("move_files", to="s3")
    assert str(unconfigured.value) == ("s3 is not configured: set S3_BUCKET (and S3_ENDPOINT_URL, the credentials) "
                                       "as for FILE_STORAGE=s3")


def test_the_orphan_sweep_walks_every_backend(backend, agent, org):
    """The hourly sweep lists stored files through the storage API, whatever the backend."""
    from kernel import clock
    from runs.services.sweep import ORPHAN_FILE_AGE, sweep_orphan_files

    kept = upload(agent, b"a file a run refers to")["sha256"]
    orphan = f"{org.id}/{sha(b'left by a crash')}"
    default_storage.save(orphan, ContentFile(b"left by a crash"))
    assert sweep_orphan_files(clock.now()) == 0  # too young
    assert sweep_orphan_files(clock.now() + ORPHAN_FILE_AGE + ORPHAN_FILE_AGE) == 1
    assert backend.names() == [f"{org.id}/{kept}"]
