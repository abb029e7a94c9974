"""An organization's archive (runs/services/backup.py) brought back into a server that does not hold
it yet, in two passes over the archive.

1. Verify, writing nothing: the manifest's own hash, the format, the applied migrations (exactly
   the archive's: restore on the release that made it, then upgrade), the SHA-256 and size of
   every member against the manifest, every row against its table (every column known, every row
   of this organization), every run's snapshot against its run data, every process version's
   content hash against its text, every upload's file present; then the server: no organization
   with this slug, no account or group with a restored name, no run, work item or upload id taken.
   Every issue found is reported at once.
2. Restore, in one transaction: integer ids are kept where the table holds none from the lowest
   restored one up (an empty server keeps every id), else shifted past what the table holds, with
   every reference shifted alike (kernel/sequences.py moves the sequences); public ids (runs,
   work items, uploads) are always kept. File bytes are written through the storage API
   (runs/services/stored_files.py) and read back; before committing, every upload's stored file
   is hashed against its row, every version's content hash recomputed from the rows stored, and
   no restored row may point into another organization. A failure rolls everything back and
   removes the files this restore wrote.
"""

import hashlib
import json
import re
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from django.db import DatabaseError, connection, models, transaction
from django.db.models import Q
from django.db.models.functions import Lower

from kernel import audit, sequences
from kernel.models import EventKind, Organization
from processes.hashing import content_hash
from processes.models import Process, ProcessVersion
from processes.parsing import parse_process_file

from ..models import Run, Upload, WorkItem, upload_path
from . import rundata, stored_files
from .backup import (
    CHUNK,
    FILES,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MANIFEST_HASH,
    SECRET_COLUMNS,
    Table,
    decode_value,
    migration_state,
    tables,
    undecided_models,
)

SHA256 = re.compile(r"^[0-9a-f]{64}$")
MANIFEST_LIMIT = 256 << 20
INSERT_BATCH = 500
ISSUES_PER_MEMBER = 5
PUBLIC_IDS = (Run, WorkItem, Upload)


class RestoreRefused(Exception):
    def __init__(self, issues: list[str]):
        super().__init__("; ".join(issues))
        self.issues = issues


@dataclass
class RestoreSummary:
    organization: str
    organization_id: int
    counts: dict[str, int]
    files_written: int
    files_verified: int
    versions_verified: int
    runs_verified: int
    shifted: dict[str, int] = field(default_factory=dict)  # table -> id offset, where ids could not be kept
    password_hashes: bool = False
    seconds: float = 0.0


def _lines(stream, sha256) -> Iterator[bytes]:
    for line in stream:
        sha256.update(line)
        yield line


def _hash_stream(stream) -> tuple[str, int]:
    sha256, size = hashlib.sha256(), 0
    while chunk := stream.read(CHUNK):
        sha256.update(chunk)
        size += len(chunk)
    return sha256.hexdigest(), size


class _TableCheck:
    """What pass 1 learns of one table's rows: id range, organizations named, content issues."""

    def __init__(self, table: Table):
        self.table = table
        self.model = table.model
        self.columns = {column.attname: column for column in table.model._meta.concrete_fields}
        self.required = {column.attname for column in table.columns(password_hashes=False)}
        self.optional = set(SECRET_COLUMNS.get(table.label, ()))
        self.pk = table.model._meta.pk.attname
        self.integer_pk = isinstance(table.model._meta.pk, models.fields.AutoFieldMixin)
        self.low = self.high = None
        self.organizations: set = set()
        self.references: dict[str, list] = {}  # fk attname -> [min, max] of integer references
        self.rows = 0
        self.issues: list[str] = []
        self.public_ids: list[str] = []
        self.taken: list[str] = []
        self.names: list[tuple[str, str]] = []  # (kind, name) that must be free on the server
        self.with_password = 0

    def issue(self, text: str) -> None:
        if len(self.issues) < ISSUES_PER_MEMBER:
            self.issues.append(f"{self.table.member}: {text}")

    def row(self, number: int, line: bytes, seen: "_Seen") -> None:
        self.rows += 1
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("not an object")
            key = raw.get(self.pk)
            if self.integer_pk:  # the range first: a refused row is not also a missing one
                if not isinstance(key, int) or isinstance(key, bool):
                    raise ValueError(f"id {key!r} is not a number")
                self.low = key if self.low is None else min(self.low, key)
                self.high = key if self.high is None else max(self.high, key)
            unknown = set(raw) - self.required - self.optional  # never a staff or superuser flag
            missing = self.required - set(raw)
            if unknown or missing:
                self.issue(f"line {number}: " + "; ".join(
                    [*(f"unknown column {name}" for name in sorted(unknown)),
                     *(f"missing column {name}" for name in sorted(missing))]))
                return
            values = {name: decode_value(self.columns[name], value) for name, value in raw.items()}
        except (ValueError, TypeError) as error:
            self.issue(f"line {number}: not a row ({error})")
            return
        self.with_password += "password" in raw and self.table.label in SECRET_COLUMNS
        if self.model in PUBLIC_IDS:
            self.public_ids.append(key)
            if len(self.public_ids) >= INSERT_BATCH:
                self.flush_ids()
        if "organization_id" in values:
            self.organizations.add(values["organization_id"])
        for name, column in self.columns.items():
            if column.is_relation and name != "organization_id" and isinstance(values.get(name), int):
                bounds = self.references.setdefault(name, [values[name], values[name]])
                bounds[0], bounds[1] = min(bounds[0], values[name]), max(bounds[1], values[name])
        self.content(number, values, seen)

    def content(self, number: int, values: dict, seen: "_Seen") -> None:
        if self.model is Run and values["snapshot"] != rundata.snapshot_of(values["inputs"], values["steps_data"]):
            self.issue(f"line {number}: run {values['id']}: its snapshot does not match its run data")
        elif self.model is Process:
            seen.processes[values["id"]] = values["name"]
        elif self.model is ProcessVersion:
            parsed = parse_process_file(values["source"])
            if parsed.frontmatter is None or content_hash(parsed.frontmatter, parsed.body) != values["content_hash"] \
                    or content_hash(values["frontmatter"], values["body"]) != values["content_hash"]:
                process = seen.processes.get(values["process_id"], f"process {values['process_id']}")
                self.issue(f"line {number}: version {values['number']} of {process}: its content hash does not match "
                           "its text")
        elif self.model is Upload and values["sha256"] not in seen.file_hashes:
            self.issue(f"line {number}: upload {values['id']}: no {FILES}{values['sha256']} in the archive")
        elif self.model is get_user_model():
            self.names += [("account", values["username"]), ("email", values["email"])]
        elif self.model is Group:
            self.names.append(("group", values["name"]))

    def flush_ids(self) -> None:
        """Public ids of this table the server already holds (asked in batches while reading)."""
        if self.public_ids:
            self.taken += self.model._base_manager.filter(pk__in=self.public_ids).values_list("pk", flat=True)[:5]
            self.public_ids = []


@dataclass
class _Seen:
    """What earlier members told pass 1 that later ones are checked against."""

    file_hashes: set[str] = field(default_factory=set)  # files/<sha256> whose bytes hash to their name
    processes: dict[int, str] = field(default_factory=dict)  # process id -> name


@dataclass
class Verified:
    manifest: dict
    manifest_sha256: str
    checks: dict[str, _TableCheck]

    @property
    def organization(self) -> dict:
        return self.manifest["organization"]


def _open(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, "r:*")
    except FileNotFoundError:
        raise RestoreRefused([f"{path}: no such file"]) from None
    except (tarfile.TarError, OSError) as error:
        raise RestoreRefused([f"{path.name}: not a tar archive ({error})"]) from None


def verify_archive(path: Path) -> Verified:
    """Pass 1: everything that can be known from the archive and the server, writing nothing."""
    by_member = {table.member: table for table in tables()}
    checks = {member: _TableCheck(table) for member, table in by_member.items()}
    found: dict[str, tuple[str, int]] = {}
    issues: list[str] = []
    manifest_bytes = manifest_hash = None
    seen = _Seen()
    tar = _open(path)
    try:
        with tar:
            for member in tar:
                name = member.name
                if not member.isfile():
                    issues.append(f"{name}: not a regular file")
                    continue
                stream = tar.extractfile(member)
                if name in (MANIFEST, MANIFEST_HASH):
                    content = stream.read(MANIFEST_LIMIT)
                    if name == MANIFEST:
                        manifest_bytes = content
                    else:
                        manifest_hash = content.decode("ascii", "replace").split(" ", 1)[0].strip()
                elif name.startswith(FILES) and SHA256.match(name[len(FILES):]):
                    found[name] = _hash_stream(stream)
                    if found[name][0] == name[len(FILES):]:
                        seen.file_hashes.add(found[name][0])
                elif name in checks:
                    sha256, check = hashlib.sha256(), checks[name]
                    for number, line in enumerate(_lines(stream, sha256), 1):
                        check.row(number, line, seen)
                    check.flush_ids()
                    found[name] = (sha256.hexdigest(), member.size)
                else:
                    issues.append(f"{name}: not a member an archive holds")
    except (tarfile.TarError, OSError, EOFError) as error:
        raise RestoreRefused([f"{path.name}: the archive is damaged ({error})"]) from None
    manifest = _manifest(manifest_bytes, manifest_hash, issues)
    issues += _member_issues(manifest, found)
    if issues:
        raise RestoreRefused(issues)  # the archive is not what was written: nothing in it is trusted
    issues += _compatibility_issues(manifest)
    if issues:
        raise RestoreRefused(issues)
    issues += _content_issues(manifest, checks)
    issues += _server_issues(manifest, checks)
    if issues:
        raise RestoreRefused(issues)
    return Verified(manifest=manifest, manifest_sha256=manifest_hash, checks=checks)


def _manifest(content: bytes | None, recorded_hash: str | None, issues: list[str]) -> dict:
    if content is None or recorded_hash is None:
        raise RestoreRefused(issues + [f"{name}: missing from the archive" for name, value in
                                       ((MANIFEST, content), (MANIFEST_HASH, recorded_hash)) if value is None])
    if hashlib.sha256(content).hexdigest() != recorded_hash:
        raise RestoreRefused(issues + [f"{MANIFEST}: its SHA-256 does not match {MANIFEST_HASH} (the manifest was "
                                       "changed or damaged)"])
    try:
        manifest = json.loads(content)
        if manifest.get("format") != FORMAT:
            raise ValueError(f"the format is {manifest.get('format')!r}, not {FORMAT!r}")
        if manifest.get("formatVersion") != FORMAT_VERSION:
            raise ValueError(f"format version {manifest.get('formatVersion')!r}; this server reads version "
                             f"{FORMAT_VERSION}")
        for key in ("organization", "members", "counts", "server"):
            if not isinstance(manifest.get(key), dict):
                raise ValueError(f"no {key}")
    except (ValueError, AttributeError) as error:
        raise RestoreRefused(issues + [f"{MANIFEST}: not an archive this server restores ({error})"]) from None
    return manifest


def _member_issues(manifest: dict, found: dict[str, tuple[str, int]]) -> list[str]:
    issues = []
    listed = manifest["members"]
    for name, recorded in listed.items():
        if name not in found:
            issues.append(f"{name}: missing from the archive")
        elif found[name][0] != recorded.get("sha256") or found[name][1] != recorded.get("bytes"):
            issues.append(f"{name}: its SHA-256 does not match the manifest (the member was changed or damaged)")
    issues += [f"{name}: not in the manifest" for name in found if name not in listed]
    return issues


def _compatibility_issues(manifest: dict) -> list[str]:
    issues = []
    if undecided := undecided_models():
        issues.append("tables neither backed up nor left out on purpose (runs/services/backup.py): "
                      + ", ".join(undecided))
    archived, here = manifest["server"].get("migrations") or {}, migration_state()
    for app in sorted(set(archived) | set(here)):
        theirs, ours = set(archived.get(app, [])), set(here.get(app, []))
        if theirs != ours:
            only_theirs, only_ours = sorted(theirs - ours), sorted(ours - theirs)
            issues.append(
                f"migrations of {app} differ: " + "; ".join(
                    [*([f"the archive's server had {', '.join(only_theirs)}"] if only_theirs else []),
                     *([f"this server has {', '.join(only_ours)}"] if only_ours else [])])
                + ". Restore into a server of the release that made the archive (the same migrations), then upgrade it")
    return issues


def _content_issues(manifest: dict, checks: dict[str, _TableCheck]) -> list[str]:
    issues = []
    organization_id = manifest["organization"].get("id")
    ranges = {check.model: (check.low, check.high) for check in checks.values() if check.low is not None}
    for member, check in checks.items():
        issues += check.issues
        if check.rows != manifest["counts"].get(member):
            issues.append(f"{member}: {check.rows} rows, the manifest counts {manifest['counts'].get(member)}")
        if check.organizations - {organization_id}:
            issues.append(f"{member}: rows of another organization than {manifest['organization'].get('slug')}")
        if check.with_password and not manifest.get("passwordHashes"):
            issues.append(f"{member}: password hashes the manifest does not declare")
        for name, (low, high) in check.references.items():
            target = check.columns[name].related_model
            bounds = ranges.get(target)
            if bounds is None or low < bounds[0] or high > bounds[1]:
                issues.append(f"{member}: {name} names {target._meta.db_table} rows the archive does not hold")
    organizations = checks[f"rows/{Organization._meta.db_table}.jsonl"]
    if organizations.rows != 1 or organizations.low != organization_id:
        issues.append(f"rows/{Organization._meta.db_table}.jsonl: not the one organization of the manifest")
    return issues


def _server_issues(manifest: dict, checks: dict[str, _TableCheck]) -> list[str]:
    """What this server already holds that the archive would need."""
    slug = manifest["organization"].get("slug")
    if Organization.objects.filter(slug=slug).exists():  # its people and groups are then there too: one issue
        return [f'organization "{slug}" already exists on this server: a restore never replaces or merges into an '
                "organization"]
    issues = []
    user = get_user_model()
    names = [name for check in checks.values() for name in check.names]
    accounts = [name for kind, name in names if kind == "account"]
    emails = [name for kind, name in names if kind == "email" and name]
    groups = [name for kind, name in names if kind == "group"]
    taken_accounts = set(user.objects.filter(username__in=accounts).values_list("username", flat=True))
    taken_accounts |= set(user.objects.annotate(address=Lower("email"))
                          .filter(address__in=[email.lower() for email in emails]).values_list("email", flat=True))
    issues += [f"person {name}: an account with this name or email already exists on this server"
               for name in sorted(taken_accounts)]
    issues += [f'group "{name}": already exists on this server (group names are shared by every organization)'
               for name in sorted(Group.objects.filter(name__in=groups).values_list("name", flat=True))]
    for check in checks.values():
        issues += [f"{check.model._meta.verbose_name} {key}: this id already exists on this server"
                   for key in check.taken]
    return issues


# --- pass 2 -----------------------------------------------------------------------------------


class _Inserter:
    """Batched INSERTs of one table's rows, ids and references shifted, values adapted by the fields."""

    def __init__(self, table: Table, offsets: dict, file_names: dict[str, str]):
        self.model = table.model
        self.fields = list(table.model._meta.concrete_fields)
        self.offsets, self.file_names = offsets, file_names
        # What to add to each column: a reference moves with the table it names, the id with its own.
        self.shift = [offsets.get(column.related_model, 0) if column.is_relation else
                      offsets.get(table.model, 0) if column.primary_key else 0 for column in self.fields]
        quote = connection.ops.quote_name
        self.statement = (f"INSERT INTO {quote(table.model._meta.db_table)} "
                          f"({', '.join(quote(column.column) for column in self.fields)}) "
                          f"VALUES ({', '.join(['%s'] * len(self.fields))})")
        self.batch: list[list] = []
        self.rows = 0

    def add(self, line: bytes) -> None:
        raw = json.loads(line)
        values = []
        for column, shift in zip(self.fields, self.shift, strict=True):
            if column.attname in raw:
                value = decode_value(column, raw[column.attname])
            elif column.attname == "password":
                value = make_password(None)  # no password hash carried: set one through a reset mail
            else:
                value = column.get_default()
            if shift and value is not None:
                value += shift
            if self.model is Upload and column.attname == "file":
                value = self.file_names[raw["sha256"]]
            values.append(column.get_db_prep_save(value, connection))
        self.batch.append(values)
        if len(self.batch) >= INSERT_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            with connection.cursor() as cursor:
                cursor.executemany(self.statement, self.batch)
            self.rows += len(self.batch)
            self.batch = []


def _place_ids(verified: Verified) -> dict:
    """The id offset of every table with integer ids (0: kept), sequences moved past them."""
    offsets = {}
    for check in verified.checks.values():
        if check.low is not None:
            offsets[check.model] = sequences.place_ids(check.model, check.low, check.high)
    return offsets


def _store_file(name: str, stream, sha256: str, written: list[str]) -> str:
    """The file's bytes under `name` through the storage; bytes already there must be these."""
    if not stored_files.exists(name):
        stored = stored_files.save_stream(name, stream)
        written.append(stored)
        name = stored
    if stored_files.sha256_of(name) != sha256:
        raise RestoreRefused([f"{FILES}{sha256}: the storage holds other bytes under {name}"])
    return name


def _verify_restored(organization_id: int, verified: Verified) -> tuple[int, int]:
    """Read back what was written: every upload's stored file against its row, every version's
    content hash against its text, and no restored row pointing into another organization."""
    issues, files = [], {}
    for upload in Upload.objects.filter(organization_id=organization_id).order_by("pk").iterator():
        if upload.file.name not in files:
            files[upload.file.name] = (stored_files.sha256_of(upload.file.name), stored_files.size_of(upload.file.name))
        if files[upload.file.name] != (upload.sha256, upload.size):
            issues.append(f"upload {upload.id}: the stored file does not match its SHA-256 and size")
    versions = 0
    for version in ProcessVersion.objects.filter(organization_id=organization_id):
        versions += 1
        if content_hash(version.frontmatter, version.body) != version.content_hash:
            issues.append(f"{version}: its content hash does not match its text as stored")
    for table in tables():
        issues += _crossing_references(table.model, organization_id)
    if issues:
        raise RestoreRefused(issues)
    return len(files), versions


def _crossing_references(model, organization_id: int) -> list[str]:
    """References of the restored rows of `model` that leave the organization (expected: none)."""
    user = get_user_model()
    if not any(column.attname == "organization_id" for column in model._meta.concrete_fields):
        return []
    issues = []
    for column in model._meta.concrete_fields:
        if not column.is_relation or column.attname == "organization_id":
            continue
        target = column.related_model
        if target is user:
            outside = ~Q(**{f"{column.name}__member__organization_id": organization_id})
        elif target is Group:
            outside = ~Q(**{f"{column.name}__organization_link__organization_id": organization_id})
        elif any(field.attname == "organization_id" for field in target._meta.concrete_fields):
            outside = ~Q(**{f"{column.name}__organization_id": organization_id})
        else:
            continue
        crossing = (model._base_manager.filter(organization_id=organization_id)
                    .exclude(**{f"{column.attname}__isnull": True}).filter(outside))
        if crossing.exists():
            issues.append(f"{model._meta.db_table}.{column.attname}: names rows of another organization")
    return issues


def restore_organization(*, path: Path, now) -> RestoreSummary:
    started = time.monotonic()
    path = Path(path)
    verified = verify_archive(path)
    by_member = {table.member: table for table in tables()}
    written: list[str] = []
    try:
        with transaction.atomic():
            offsets = _place_ids(verified)
            organization_id = verified.organization["id"] + offsets.get(Organization, 0)
            file_names: dict[str, str] = {}
            counts: dict[str, int] = {}
            with _open(path) as tar:
                for member in tar:
                    stream = tar.extractfile(member)
                    if member.name.startswith(FILES):
                        sha256 = member.name[len(FILES):]
                        name = upload_path(Upload(organization_id=organization_id, sha256=sha256), None)
                        file_names[sha256] = _store_file(name, stream, sha256, written)
                    elif member.name in by_member:
                        inserter = _Inserter(by_member[member.name], offsets, file_names)
                        for line in stream:
                            inserter.add(line)
                        inserter.flush()
                        counts[member.name] = inserter.rows
            files_verified, versions = _verify_restored(organization_id, verified)
            audit.record(EventKind.ORGANIZATION_RESTORED, organization_id=organization_id, actor=audit.COMMAND_LINE,
                         at=now, data={"archive": path.name, "manifestSha256": verified.manifest_sha256,
                                       "createdAt": verified.manifest.get("createdAt"),
                                       "runs": counts.get(f"rows/{Run._meta.db_table}.jsonl", 0),
                                       "files": len(file_names)})
    except BaseException as error:
        for name in written:
            stored_files.remove(name)
        if isinstance(error, sequences.SequenceRefused):
            raise RestoreRefused([str(error)]) from error
        if isinstance(error, DatabaseError):
            raise RestoreRefused([f"the database refused the restore, and nothing of it was kept: {error}"]) from error
        raise
    return RestoreSummary(
        organization=verified.organization["slug"], organization_id=organization_id, counts=counts,
        files_written=len(written), files_verified=files_verified, versions_verified=versions,
        runs_verified=verified.checks[f"rows/{Run._meta.db_table}.jsonl"].rows,
        shifted={model._meta.db_table: offset for model, offset in offsets.items() if offset},
        password_hashes=bool(verified.manifest.get("passwordHashes")), seconds=time.monotonic() - started)
