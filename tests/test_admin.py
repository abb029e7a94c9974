"""The admin flow for people who are not developers (spec §7): import → issues → bind → publish →
read-only version."""

import pytest
from django.urls import reverse

from processes.models import ProcessDraft, ProcessVersion
from tests.support.spec import EXAMPLES


@pytest.fixture
def admin_client(client, org):
    from kernel.organizations import create_person

    create_person(org, "root@example.com", password="admin-pass-1", superuser=True)
    assert client.login(username="root@example.com", password="admin-pass-1")
    return client


def test_admin_imports_binds_and_publishes(admin_client):
    source = (EXAMPLES / "supplier-onboarding" / "PROCESS.md").read_text()
    response = admin_client.post(reverse("admin:processes_processdraft_import"), {"source": source})
    draft = ProcessDraft.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:processes_processdraft_change", args=[draft.pk])

    page = admin_client.get(response["Location"]).content.decode()
    assert "No issues." in page
    assert "Group for role “finance-approver”" in page

    # Publishing before binding is refused, with the issue shown.
    refused = admin_client.post(response["Location"], {"_publish": "1"}, follow=True).content.decode()
    assert "Role &quot;finance-approver&quot; is not bound to a group" in refused  # admin capitalizes
    assert not ProcessVersion.objects.exists()

    admin_client.post(response["Location"], {"bind__finance-approver": "finance", "_continue": "1"})
    draft.refresh_from_db()
    assert draft.bindings == {"finance-approver": "finance"}

    published = admin_client.post(response["Location"], {"bind__finance-approver": "finance", "_publish": "1"},
                                  follow=True).content.decode()
    version = ProcessVersion.objects.get()
    assert f"Published supplier-onboarding version 1 ({version.content_hash})" in published

    version_page = admin_client.get(reverse("admin:processes_processversion_change", args=[version.pk]))
    text = version_page.content.decode()
    assert version.content_hash in text
    assert "<h1>Supplier onboarding</h1>" in text  # the body rendered from Markdown
    assert "check_vendor" in text and "finance-approver → finance" in text
    # Read-only: no save buttons, and a POST cannot change it.
    assert 'name="_save"' not in text
    assert admin_client.post(version_page.request["PATH_INFO"], {"number": 9}).status_code == 403


def test_admin_shows_every_issue_inline_on_the_draft(admin_client):
    source = "---\nname: x\ndescription: y\nsteps:\n  - id: a\n    agent: go\n    next: nope\n    color: red\n---\n"
    response = admin_client.post(reverse("admin:processes_processdraft_import"), {"source": source}, follow=True)
    page = response.content.decode()
    assert "next names unknown step &quot;nope&quot;" in page
    assert "color" in page and "unknown field" in page
    assert 'name="_publish"' not in page


def test_admin_import_accepts_an_uploaded_file(admin_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = (EXAMPLES / "invoice-approval" / "PROCESS.md").read_bytes()
    admin_client.post(reverse("admin:processes_processdraft_import"),
                      {"upload": SimpleUploadedFile("PROCESS.md", data), "folder_name": "invoice-approval"})
    draft = ProcessDraft.objects.get()
    assert (draft.name, draft.issues, draft.roles) == ("invoice-approval", [], ["team-lead", "finance-controller"])


def test_process_list_shows_the_latest_version(admin_client, publish):
    source = (EXAMPLES / "supplier-onboarding" / "PROCESS.md").read_text()
    publish(source, {"finance-approver": "finance"})
    publish(source + "\nRevised.\n", {"finance-approver": "finance"})  # a changed body: version 2
    page = admin_client.get(reverse("admin:processes_process_changelist")).content.decode()
    assert "supplier-onboarding" in page
    assert '<td class="field-latest">2</td>' in page


def test_markdown_body_is_sanitized(admin_client, publish):
    source = (EXAMPLES / "supplier-onboarding" / "PROCESS.md").read_text() + \
        '\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n'
    version = publish(source, {"finance-approver": "finance"})
    page = admin_client.get(reverse("admin:processes_processversion_change", args=[version.pk])).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "href=\"javascript" not in page


def test_runs_are_inspected_read_only_in_admin(admin_client, publish, agent):
    publish(EXAMPLES / "supplier-onboarding", {"finance-approver": "finance"})
    run_id = agent.ok("start_run", process="supplier-onboarding",
                      inputs={"vendorName": "<b>Acme</b>", "amount": 1})["run"]["id"]
    listing = admin_client.get(reverse("admin:runs_run_changelist")).content.decode()
    assert run_id in listing
    page = admin_client.get(reverse("admin:runs_run_change", args=[run_id])).content.decode()
    assert "check_vendor" in page and "&lt;b&gt;Acme&lt;/b&gt;" in page
    assert 'name="_save"' not in page
    assert admin_client.post(reverse("admin:runs_run_change", args=[run_id]), {"state": "ended"}).status_code == 403
