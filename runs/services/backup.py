"""One organization to one archive (issue 22, point 5); bringing it back: runs/services/restore.py.

The archive is a tar file (gzip-compressed when its name ends in .gz or .tgz) of:

    files/<sha256>        the bytes of every stored file the organization's uploads name, once each
    rows/<table>.jsonl    the organization's rows, one JSON object a line, columns by name; a JSON
                          column as its JSON text, exactly as the column holds it (numbers keep
                          every digit); instants in ISO 8601 with their offset
    manifest.json         format and version, the server (protocol, Django, applied migrations),
                          the organization, counts, when it was made, what was left out, and the
                          SHA-256 and size of every member above
    manifest.json.sha256  the SHA-256 of manifest.json

`tables()` names every table carried, in the order they are written and restored; `LEFT_OUT` every
organization-owned table deliberately not carried, and why. A model of ours that is in neither
makes `undecided_models` name it (tests/test_backup_restore.py, and the command refuses), so a new
table cannot silently fall out of backups. Nothing is held in memory beyond one row or one file
chunk at a time: rows stream from the database (in one consistent snapshot) into spooled members.
"""

import contextlib
import datetime as dt
import hashlib
import io
import json
import os
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import django
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection, models, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Q

from kernel import audit, capabilities
from kernel.models import (
    Agent,
    EventKind,
    Member,
    NoticePreference,
    Organization,
    OrganizationGroup,
    PageSettings,
    AuditEvent,
)
from insight.models import AlertRule
from processes.models import FieldPresentation, Process, ProcessDraft, ProcessVersion
from sso.models import ProviderAccount, ProvisionedPerson

from ..models import Event, IdempotencyRecord, InboxVisit, Notice, Run, SavedView, StepState, Upload, WorkItem

FORMAT = "agentprocess-organization-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MANIFEST_HASH = "manifest.json.sha256"
FILES = "files/"
ROWS = "rows/"
# The apps whose tables an archive holds: a restore needs exactly their migrations applied.
MIGRATION_APPS = ("auth", "contenttypes", "agentprocess", "processes", "runs", "sso")
SUFFIXES = {".tar": "", ".gz": "gz", ".tgz": "gz"}
CHUNK = 1 << 20
ROWS_PER_FETCH = 2000

# Our apps' organization-owned tables that an archive does not carry, and why (README "Backup and restore").
LEFT_OUT = {
    "agentprocess.ApiToken": "bearer tokens are live credentials and never leave the server: issue new ones "
                             "(create_identity, the Tokens page)",
    "agentprocess.AgentApplication": "OAuth clients of agents, with their secrets and tokens: register them again",
    "sso.ScimToken": "an identity provider's SCIM token is a live credential: issue a new one (manage.py scim_token)",
    # FILE_STORAGE=database keeps bytes in these tables; every backend's bytes travel as the
    # archive's file members, through the storage API, so they land in whatever the target uses.
    "filestore.StoredFile": "file bytes travel as the archive's file members, through the storage API",
    "filestore.FileChunk": "file bytes travel as the archive's file members, through the storage API",
    "webhooks.Subscription": "webhook secrets are live credentials: subscribe the receivers again "
                             "(manage.py webhooks add)",
    "webhooks.Delivery": "what this server sent to other systems: its log, not the organization's work",
    "webhooks.Attempt": "what this server sent to other systems: its log, not the organization's work",
    # insight/rollup.py: sums of ended runs the sweep folds from the runs and the audit log, which
    # travel; on the restoring server the sweep folds them again from the start (no mark there).
    **{f"insight.{name}": "process insight's rollup, derived from runs and the audit log: the insight "
                          "sweep rebuilds it after a restore"
       for name in ("AttemptRoll", "EventRoll", "RollMark", "RunRoll", "TookRoll")},
}


@dataclass(frozen=True)
class Table:
    model: type[models.Model]
    rows: Callable[[Organization], models.QuerySet]  # the organization's rows of this table
    never: tuple[str, ...] = ()  # columns never exported (restored with their default)

    @property
    def member(self) -> str:
        return f"{ROWS}{self.model._meta.db_table}.jsonl"

    @property
    def label(self) -> str:
        return self.model._meta.label

    def columns(self, *, password_hashes: bool = True) -> list[models.Field]:
        omitted = set(self.never) | (set() if password_hashes else set(SECRET_COLUMNS.get(self.label, ())))
        return [column for column in self.model._meta.concrete_fields if column.attname not in omitted]


def _owned(model) -> Callable[[Organization], models.QuerySet]:
    return lambda organization: model._base_manager.filter(organization=organization)


def _groups(organization: Organization) -> models.QuerySet:
    return Group.objects.filter(Q(organization_link__organization=organization) | Q(pk=organization.operators_id))


def tables() -> list[Table]:
    """Every table an archive carries, parents before children."""
    user = get_user_model()
    memberships = user.groups.through
    return [
        Table(Group, _groups),
        # People: their accounts, never their staff or superuser flags (those are the server's, not
        # the organization's); password hashes only when asked for (SECRET_COLUMNS).
        Table(user, lambda organization: user.objects.filter(member__organization=organization),
              never=("is_staff", "is_superuser")),
        Table(memberships, lambda organization: memberships.objects.filter(
            user__member__organization=organization, group__in=_groups(organization))),
        Table(Organization, lambda organization: Organization.objects.filter(pk=organization.pk)),
        Table(OrganizationGroup, _owned(OrganizationGroup)),
        Table(Member, _owned(Member)),
        # Who each identity provider's `sub` is here: without it a restored person signing in through
        # their provider would be refused as an unlinked address (sso/signin.py).
        Table(ProviderAccount, _owned(ProviderAccount)),
        # Whom each identity provider manages over SCIM (its externalId, a DELETE it sent).
        Table(ProvisionedPerson, lambda organization: ProvisionedPerson.objects.filter(
            user__member__organization=organization)),
        Table(Agent, _owned(Agent)),
        Table(NoticePreference, _owned(NoticePreference)),
        Table(PageSettings, _owned(PageSettings)),
        Table(Process, _owned(Process)),
        Table(ProcessVersion, _owned(ProcessVersion)),
        Table(FieldPresentation, _owned(FieldPresentation)),
        Table(ProcessDraft, _owned(ProcessDraft)),
        Table(Run, _owned(Run)),
        Table(StepState, _owned(StepState)),
        Table(WorkItem, _owned(WorkItem)),
        Table(Upload, _owned(Upload)),
        Table(Event, _owned(Event)),
        Table(IdempotencyRecord, _owned(IdempotencyRecord)),
        Table(Notice, _owned(Notice)),
        Table(SavedView, _owned(SavedView)),
        Table(InboxVisit, _owned(InboxVisit)),
        Table(AlertRule, _owned(AlertRule)),  # process insight's alert rules and their state (issue 27)
        Table(AuditEvent, _owned(AuditEvent)),
    ]


SECRET_COLUMNS = {"auth.User": ("password",)}  # carried only with --password-hashes
OUR_APPS = ("agentprocess", "processes", "runs", "insight")


def undecided_models() -> list[str]:
    """Models of ours, or holding an organization, that are neither carried nor left out on purpose."""
    decided = {table.label for table in tables()} | set(LEFT_OUT)
    undecided = []
    for model in apps.get_models():
        owned = any(column.is_relation and column.related_model is Organization
                    for column in model._meta.concrete_fields)
        if (owned or model._meta.app_label in OUR_APPS) and model._meta.label not in decided:
            undecided.append(model._meta.label)
    return sorted(undecided)


def migration_state(db=connection) -> dict[str, list[str]]:
    """The applied migrations of the apps an archive holds, by app."""
    applied = MigrationRecorder(db).applied_migrations()
    return {app: sorted(name for label, name in applied if label == app) for app in MIGRATION_APPS}


def archive_compression(path: Path) -> str | None:
    """'gz' or '' by the archive's name; None for a name that is neither."""
    name = path.name.lower()
    if name.endswith(".tar.gz") or name.endswith(".tgz"):
        return "gz"
    if name.endswith(".tar"):
        return ""
    return None


# --- rows as lines ----------------------------------------------------------------------------


def encode_value(column: models.Field, value):
    """A column's value as the archive writes it."""
    if value is None:
        return None
    if isinstance(column, models.JSONField):
        return json.dumps(value, cls=column.encoder, ensure_ascii=False)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bool | int | str):
        return value
    return str(value)  # a FileField's name


def decode_value(column: models.Field, value):
    """The Python value of a column as the archive wrote it (encode_value's inverse)."""
    if value is None:
        return None
    if isinstance(column, models.JSONField):
        return json.loads(value, cls=column.decoder) if column.decoder else json.loads(value)
    if isinstance(column, models.DateTimeField | models.DateField | models.TimeField):
        return column.to_python(value)
    return value


# --- the archive ------------------------------------------------------------------------------


class BackupRefused(Exception):
    def __init__(self, issues: list[str]):
        super().__init__("; ".join(issues))
        self.issues = issues


class _Hashing:
    """A file object's bytes, hashed and counted as they are read."""

    def __init__(self, raw):
        self.raw, self.sha256, self.size = raw, hashlib.sha256(), 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.sha256.update(data)
        self.size += len(data)
        return data


class _Writer:
    """Adds members to the tar and keeps the SHA-256 and size of each, for the manifest."""

    def __init__(self, tar: tarfile.TarFile, mtime: float):
        self.tar, self.mtime, self.members = tar, mtime, {}

    def _info(self, name: str, size: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = size, self.mtime, 0o600
        return info

    def add(self, name: str, stream, size: int) -> str:
        reader = _Hashing(stream)
        self.tar.addfile(self._info(name, size), reader)
        digest = reader.sha256.hexdigest()
        self.members[name] = {"sha256": digest, "bytes": size}
        return digest

    def add_bytes(self, name: str, content: bytes) -> str:
        return self.add(name, io.BytesIO(content), len(content))


@dataclass
class BackupSummary:
    path: Path
    organization: str
    counts: dict[str, int]
    files: int
    file_bytes: int
    archive_bytes: int
    manifest_sha256: str
    cleared: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@contextlib.contextmanager
def _snapshot():
    """One consistent view of every table for the whole backup: on PostgreSQL a repeatable-read,
    read-only transaction (writers go on); on SQLite the transaction (writers wait)."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def _stored_files(writer: _Writer, organization: Organization) -> tuple[int, int]:
    """Every distinct stored file of the organization's uploads, verified against its upload row."""
    seen: set[str] = set()
    count = total = 0
    uploads = Upload.objects.filter(organization=organization).order_by("pk").only("id", "file", "sha256", "size")
    for upload in uploads.iterator(chunk_size=ROWS_PER_FETCH):
        if upload.sha256 in seen:
            continue
        seen.add(upload.sha256)
        where = f"upload {upload.id} ({upload.file.name})"
        try:
            with upload.file.open("rb") as stored:
                digest = writer.add(f"{FILES}{upload.sha256}", stored, upload.size)
                extra = stored.read(1)
        except FileNotFoundError:
            raise BackupRefused([f"{where}: the stored file is missing"]) from None
        except OSError as error:  # tarfile: fewer bytes than the row records
            raise BackupRefused([f"{where}: the stored file could not be read whole ({error})"]) from None
        if digest != upload.sha256 or extra:
            raise BackupRefused([f"{where}: the stored bytes do not match the upload's SHA-256 and size"])
        count, total = count + 1, total + upload.size
    return count, total


def _rows(table: Table, organization: Organization, people: set[int], *, password_hashes: bool,
          cleared: dict[str, int]) -> Iterator[bytes]:
    """The table's rows of the organization as lines. A reference to a person outside the
    organization (an admin who published a version) is cleared when it may be empty, and the row
    left out when it may not (their saved view), counted in `cleared`."""
    columns = table.columns(password_hashes=password_hashes)
    people_refs = [(index, column) for index, column in enumerate(columns)
                   if column.is_relation and column.related_model is get_user_model()]
    query = table.rows(organization).order_by("pk").values_list(*[column.attname for column in columns])
    for values in query.iterator(chunk_size=ROWS_PER_FETCH):
        values = list(values)
        for index, column in people_refs:
            if values[index] is not None and values[index] not in people:
                key = f"{table.model._meta.db_table}.{column.attname}"
                cleared[key] = cleared.get(key, 0) + 1
                if not column.null:
                    break
                values[index] = None
        else:
            row = {column.attname: encode_value(column, value) for column, value in zip(columns, values, strict=True)}
            yield (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def backup_organization(*, slug: str, path: Path, password_hashes: bool = False, now: dt.datetime) -> BackupSummary:
    """Write the organization's archive to `path` (created readable by its owner only, and only
    once complete: a failed backup leaves no file). Refuses an unknown organization, a name that
    is not .tar/.tar.gz/.tgz, or a stored file that does not match its upload."""
    started = time.monotonic()
    path = Path(path)
    issues = []
    if undecided := undecided_models():
        issues.append("tables neither backed up nor left out on purpose (runs/services/backup.py): "
                      + ", ".join(undecided))
    compression = archive_compression(path)
    if compression is None:
        issues.append(f"{path.name}: the archive's name must end in .tar.gz, .tgz or .tar")
    organization = Organization.objects.filter(slug=slug).first()
    if organization is None:
        issues.append(f'organization "{slug}": no such organization')
    if issues:
        raise BackupRefused(issues)
    partial = path.with_name(f".{path.name}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    counts: dict[str, int] = {}
    cleared: dict[str, int] = {}
    try:
        with os.fdopen(descriptor, "wb") as raw, \
                tarfile.open(fileobj=raw, mode=f"w:{compression}" if compression else "w",
                             **({"compresslevel": 6} if compression else {})) as tar, _snapshot():
            writer = _Writer(tar, now.timestamp())
            files, file_bytes = _stored_files(writer, organization)
            people = set(Member.objects.filter(organization=organization).values_list("user_id", flat=True))
            for table in tables():
                with tempfile.TemporaryFile() as spool:
                    lines = 0
                    for line in _rows(table, organization, people, password_hashes=password_hashes, cleared=cleared):
                        spool.write(line)
                        lines += 1
                    size = spool.tell()
                    spool.seek(0)
                    writer.add(table.member, spool, size)
                counts[table.member] = lines
            manifest = {
                "format": FORMAT,
                "formatVersion": FORMAT_VERSION,
                "createdAt": now.astimezone(dt.UTC).isoformat(),
                "server": {"protocol": f"{capabilities.PROTOCOL} {capabilities.VERSION}",
                           "django": django.get_version(), "database": connection.vendor,
                           "migrations": migration_state()},
                "organization": {"id": organization.id, "slug": organization.slug, "name": organization.name},
                "counts": {**counts, "files": files},
                "passwordHashes": password_hashes,
                "leftOut": LEFT_OUT,
                "clearedReferences": cleared,
                "members": writer.members,
            }
            manifest_bytes = (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode()
            manifest_sha256 = hashlib.sha256(manifest_bytes).hexdigest()
            writer.add_bytes(MANIFEST, manifest_bytes)
            writer.add_bytes(MANIFEST_HASH, f"{manifest_sha256}  {MANIFEST}\n".encode())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(partial)
        raise
    summary = BackupSummary(path=path, organization=slug, counts=counts, files=files, file_bytes=file_bytes,
                            archive_bytes=path.stat().st_size, manifest_sha256=manifest_sha256, cleared=cleared,
                            seconds=time.monotonic() - started)
    audit.record(EventKind.ORGANIZATION_BACKED_UP, organization_id=organization.id, actor=audit.COMMAND_LINE, at=now,
                 data={"archive": path.name, "manifestSha256": manifest_sha256, "runs": counts[_member(Run)],
                       "files": files, "passwordHashes": password_hashes})
    return summary


def _member(model) -> str:
    return f"{ROWS}{model._meta.db_table}.jsonl"
