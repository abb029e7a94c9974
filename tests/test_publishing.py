"""Publishing (spec §6 rule 5, §7; §4.2 tools) through the CLI and the service."""

import hashlib
import io
import json
from pathlib import Path

import pytest
import yaml  # PyYAML: an independent parser for the hash vector (the process has no 1.1/1.2 ambiguity)
from django.core.management import call_command
from django.test import override_settings

from processes.models import ImmutableError, ProcessVersion
from processes.parsing import parse_process_file
from processes.validation import role_names
from tests.support.processes import ACCOUNT_CLOSURE, CHECKED_VENDOR, OUTAGE_RESPONSE
from tests.support.spec import CORE_FIXTURES, EXAMPLES, FIXTURES, RUNNER_PROCESSES, fixture_text


def run_cli(*args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_process", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, out.getvalue(), err.getvalue()


def process_folder(tmp_path, text: str) -> Path:
    """A folder named as the process, holding the text as its PROCESS.md (the CLI reads folders)."""
    folder = tmp_path / parse_process_file(text).frontmatter["name"]
    folder.mkdir()
    (folder / "PROCESS.md").write_text(text)
    return folder


def bind_all(text: str) -> list[str]:
    frontmatter = parse_process_file(text).frontmatter
    return [f"--bind={role}=group-{role}" for role in role_names(frontmatter)]


@pytest.mark.parametrize("name", CORE_FIXTURES)
def test_core_fixture_imports_and_publishes_through_cli(db, name):
    """Conformance README: a conforming server publishes all ten core fixtures."""
    text = fixture_text(name)
    code, out, err = run_cli(str(FIXTURES / name), *bind_all(text), "--publish")
    assert (code, err) == (0, "")
    version = ProcessVersion.objects.get(process__name=name)
    assert out.strip() == f"published {name} version 1 {version.content_hash}"


def test_major_incident_publishes_with_parallel_offered(db):
    """parallel-1 preamble: a server that implements the profile publishes processes using it."""
    text = fixture_text("major-incident")
    code, out, err = run_cli(str(FIXTURES / "major-incident"), *bind_all(text), "--publish")
    assert (code, err) == (0, "")
    assert out.startswith("published major-incident version 1 ")


def test_a_check_process_is_refused_without_an_evaluator(db, settings, tmp_path):
    """check-1 preamble: without an evaluator configured, a process using check: is refused."""
    settings.CHECK_EVALUATOR_URL = ""
    text = CHECKED_VENDOR
    code, _out, err = run_cli(str(process_folder(tmp_path, text)), *bind_all(text), "--publish")
    assert code == 1
    assert err.splitlines() == ["steps[0] (check_vendor): needs profile check-1, which this server does not offer"]
    assert not ProcessVersion.objects.exists()


def test_without_the_parallel_profile_a_parallel_process_is_refused(db, settings, agent, tmp_path):
    """Spec §8: a server refuses at publication a process whose keys need a profile it lacks."""
    settings.DISABLED_PROFILES = ["parallel-1"]
    assert agent.ok("describe")["profiles"] == []
    text = OUTAGE_RESPONSE
    code, _out, err = run_cli(str(process_folder(tmp_path, text)), *bind_all(text), "--publish")
    assert code == 1
    # One line per step using a profile construct: `parallel:` on respond, `next: join` in each branch.
    assert err.splitlines() == [f"steps[{i}] ({step}): needs profile parallel-1, which this server does not offer"
                                for i, step in enumerate(["respond", "operations", "security", "communications"], 1)]


def test_content_hash_equals_an_independently_computed_vector(db, publish):
    """§6 rule 5: SHA-256 over the RFC 8785 JSON of the parsed frontmatter, one newline, the body."""
    text = (RUNNER_PROCESSES / "conformance-agent-loop" / "PROCESS.md").read_text()
    _, frontmatter_text, body = text.split("---\n", 2)
    # Keys and strings are ASCII and no floats occur, so sorted compact JSON is the RFC 8785 form.
    canonical = json.dumps(yaml.safe_load(frontmatter_text), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False).encode()
    expected = hashlib.sha256(canonical + b"\n" + body.encode()).hexdigest()
    version = publish(text, {"approver": "approvers"})
    assert version.content_hash == expected


def test_the_body_is_hashed_byte_exact(db, publish):
    text = (EXAMPLES / "invoice-approval" / "PROCESS.md").read_text()
    bindings = {"team-lead": "leads", "finance-controller": "finance"}
    first = publish(text, bindings)
    second = publish(text + " ", bindings)  # one trailing space more
    assert first.content_hash != second.content_hash
    assert second.body.endswith("new run.\n ")


def test_two_publishes_of_different_text_give_versions_1_and_2(db, publish):
    bindings = {"finance-approver": "finance"}
    source = (EXAMPLES / "supplier-onboarding" / "PROCESS.md").read_text()
    first = publish(source, bindings)
    second = publish(source + "\nRevised.\n", bindings)
    assert (first.number, second.number) == (1, 2)
    assert second.process.latest_version == second


def test_publishing_an_unchanged_file_again_creates_no_version(db, publish):
    bindings = {"finance-approver": "finance"}
    first = publish(EXAMPLES / "supplier-onboarding", bindings)
    again = publish(EXAMPLES / "supplier-onboarding", bindings)
    assert again.pk == first.pk and again.number == 1
    assert ProcessVersion.objects.count() == 1


def test_a_published_version_never_changes(db, publish):
    version = publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    version.body = "changed"
    with pytest.raises(ImmutableError):
        version.save()
    with pytest.raises(ImmutableError):
        ProcessVersion.objects.filter(pk=version.pk).update(body="changed")
    with pytest.raises(ImmutableError):
        version.delete()
    with pytest.raises(ImmutableError):
        ProcessVersion.objects.all().delete()
    assert ProcessVersion.objects.get(pk=version.pk).body.startswith("\n# Supplier onboarding")


def test_publish_refuses_unbound_roles(db):
    code, _out, err = run_cli(str(EXAMPLES / "invoice-approval"), "--bind=team-lead=leads", "--publish")
    assert code == 1
    assert err.splitlines() == ['role "finance-controller" is not bound to a group']


@override_settings(DISABLED_TOOLS=["upload"])
def test_publish_refuses_file_evidence_without_the_upload_tool(db, agent):
    """§4.2: a server MUST refuse to publish a process that needs a tool it does not offer."""
    assert "upload" not in agent.ok("describe")["tools"]
    code, _out, err = run_cli(str(EXAMPLES / "supplier-onboarding"), "--bind=finance-approver=finance", "--publish")
    assert code == 1
    assert err.splitlines() == [
        "steps[0] (check_vendor): evidence file needs the upload tool, which this server does not offer"]


@override_settings(DISABLED_TOOLS=["send_event"])
def test_publish_refuses_wait_for_without_the_send_event_tool(db, tmp_path):
    text = ACCOUNT_CLOSURE
    code, _out, err = run_cli(str(process_folder(tmp_path, text)), *bind_all(text), "--publish")
    assert code == 1
    assert err.splitlines() == [
        "steps[4] (settlement_event): wait_for needs the send_event tool, which this server does not offer"]


def test_cli_reports_every_issue_one_a_line_and_exits_1(db, tmp_path):
    folder = tmp_path / "wrong-name"
    folder.mkdir()
    (folder / "PROCESS.md").write_text(
        "---\nname: Bad_Name\ndescription: x\nsteps:\n  - id: a\n    agent: Do it.\n    next: nowhere\n---\nbody\n")
    code, out, err = run_cli(str(folder), "--publish")
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    assert len(lines) >= 3
    assert any(line.startswith("name: ") and "Bad_Name" in line for line in lines)
    assert 'steps[0] (a): next names unknown step "nowhere"' in lines


def test_cli_refuses_a_folder_whose_name_differs_from_the_process_name(db, tmp_path):
    folder = tmp_path / "other-name"
    folder.mkdir()
    (folder / "PROCESS.md").write_text((EXAMPLES / "supplier-onboarding" / "PROCESS.md").read_text())
    code, _out, err = run_cli(str(folder), "--bind=finance-approver=finance", "--publish")
    assert code == 1
    assert err.splitlines() == ['name: "supplier-onboarding" does not match the folder name "other-name"']


def test_cli_accepts_a_process_md_file_and_creates_groups(db):
    from django.contrib.auth.models import Group

    code, out, _err = run_cli(str(EXAMPLES / "supplier-onboarding" / "PROCESS.md"),
                              "--bind", "finance-approver=new-finance-team", "--publish")
    assert code == 0
    assert out.startswith("published supplier-onboarding version 1 ")
    group = Group.objects.get(name="new-finance-team")
    assert group.organization_link.organization.slug == "default"


def test_cli_without_publish_leaves_a_draft_listing_roles_to_bind(db):
    code, out, _err = run_cli(str(EXAMPLES / "invoice-approval"))
    assert code == 0
    assert "roles to bind before publishing: team-lead, finance-controller" in out
    assert not ProcessVersion.objects.exists()


def test_a_group_of_another_organization_cannot_be_bound(db, publish):
    from kernel.organizations import get_or_create_organization, organization_group

    organization_group(get_or_create_organization("acme"), "acme-finance")
    code, _out, err = run_cli(str(EXAMPLES / "supplier-onboarding"), "--bind=finance-approver=acme-finance",
                              "--publish")
    assert code == 1
    assert err.splitlines() == ['role "finance-approver": group "acme-finance" belongs to organization "acme"']


def test_republishing_a_changed_file_keeps_the_current_versions_groups(db, tmp_path):
    """Bindings are fixed at publication; a new version of a changed file starts from the current
    version's groups for the roles it still has (as the admin form pre-fills them), and --bind
    changes only the roles it names."""
    source = (EXAMPLES / "invoice-approval" / "PROCESS.md").read_text()
    folder = process_folder(tmp_path, source)
    code, _, err = run_cli(str(folder), "--bind=team-lead=leads", "--bind=finance-controller=controllers", "--publish")
    assert code == 0, err
    (folder / "PROCESS.md").write_text(source + "\nRevised.\n")
    code, out, err = run_cli(str(folder), "--publish")
    assert code == 0, err
    assert "roles kept from version 1: finance-controller=controllers, team-lead=leads" in out
    assert ProcessVersion.objects.get(number=2).bindings == {"team-lead": "leads", "finance-controller": "controllers"}
    (folder / "PROCESS.md").write_text(source + "\nRevised twice.\n")
    code, out, err = run_cli(str(folder), "--bind=team-lead=team-leads", "--publish")
    assert code == 0, err
    assert "roles kept from version 2: finance-controller=controllers" in out
    assert ProcessVersion.objects.get(number=3).bindings == {"team-lead": "team-leads",
                                                              "finance-controller": "controllers"}
