"""Publishing an admin enjoys (issue 16, point 6): an unchanged file publishes nothing (CLI and
admin); the version page shows the stored text verbatim beside the rendered body and the map, and
its runs; a draft with issues is edited in place and validated again; a draft shows its diff."""

import html
import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from kernel.models import AuditEvent
from processes.diffing import source_diff
from processes.models import ProcessDraft, ProcessVersion
from processes.publishing import PublishRefused, import_draft, publish_draft, revise_draft
from tests.support.concurrency import run_together
from tests.support.spec import EXAMPLES

ONBOARDING = EXAMPLES / "supplier-onboarding"
ONBOARDING_TEXT = (ONBOARDING / "PROCESS.md").read_text()
BIND = "--bind=finance-approver=finance"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "var" / "artifacts" / "screenshots"

# Indentation that collapses when a page does not keep white space: nested lists, a block scalar.
INDENTED = """---
name: indented-review
description: A review whose file leans on indentation.
inputs:
  vendorName: string
steps:
  - id: review
    agent: |
      Review the vendor.
        1. Check the register.
        2.   Check the    sanctions lists.
    output:
      verdict: { type: string, one_of: [clear, hold] }
  - id: done
    finish: reviewed
---

# Indented review

    an indented code block, kept as written
"""


def run_cli(*args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_process", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, out.getvalue(), err.getvalue()


def published_events():
    return list(AuditEvent.objects.filter(kind="process_published").values_list("data__version", flat=True))


@pytest.fixture
def admin_client(client, org):
    from kernel.organizations import create_person

    create_person(org, "root@example.com", password="admin-pass-1", superuser=True)
    assert client.login(username="root@example.com", password="admin-pass-1")
    return client


def admin_import(admin_client, source: str, **extra):
    response = admin_client.post(reverse("admin:processes_processdraft_import"), {"source": source, **extra},
                                 follow=True)
    return ProcessDraft.objects.latest("pk"), response.content.decode()


def draft_url(draft) -> str:
    return reverse("admin:processes_processdraft_change", args=[draft.pk])


def version_url(version) -> str:
    return reverse("admin:processes_processversion_change", args=[version.pk])


# --- an unchanged file publishes nothing: the command line -----------------------------------


def test_cli_publishing_an_unchanged_file_creates_no_version_and_exits_0(db):
    assert run_cli(str(ONBOARDING), BIND, "--publish")[0] == 0
    version = ProcessVersion.objects.get()
    code, out, err = run_cli(str(ONBOARDING), BIND, "--publish")
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == f"supplier-onboarding unchanged, version 1 is current ({version.content_hash})"
    assert ProcessVersion.objects.count() == 1
    assert published_events() == [1]  # nothing published, nothing recorded as published
    assert version.process.latest_version_id == version.pk


def test_cli_import_without_publish_says_the_file_is_unchanged(db):
    run_cli(str(ONBOARDING), BIND, "--publish")
    code, out, _err = run_cli(str(ONBOARDING))
    assert code == 0
    assert "supplier-onboarding unchanged, version 1 is current (" in out
    assert "publishing it creates no version unless a role is bound to another group" in out


def test_cli_a_changed_body_or_line_ending_is_a_new_version(db, tmp_path):
    """The hash is over the body exactly as written (spec §6 rule 5): one trailing space, or CRLF
    line endings, is another file and another version."""
    folder = tmp_path / "supplier-onboarding"
    folder.mkdir()
    path = folder / "PROCESS.md"
    run_cli(str(ONBOARDING), BIND, "--publish")
    path.write_bytes(ONBOARDING_TEXT.encode() + b" ")
    assert run_cli(str(folder), BIND, "--publish")[1].startswith("published supplier-onboarding version 2 ")
    path.write_bytes(ONBOARDING_TEXT.encode().replace(b"\n", b"\r\n") + b" ")
    assert run_cli(str(folder), BIND, "--publish")[1].startswith("published supplier-onboarding version 3 ")
    code, out, _err = run_cli(str(folder), BIND, "--publish")  # the CRLF file once more: unchanged
    assert code == 0 and out.startswith("supplier-onboarding unchanged, version 3 is current (")
    assert ProcessVersion.objects.count() == 3


def test_cli_the_same_file_bound_to_another_group_is_a_new_version(db):
    """Bindings are fixed at publication: rebinding a role needs a version, though the file is the same."""
    run_cli(str(ONBOARDING), BIND, "--publish")
    code, out, _err = run_cli(str(ONBOARDING), "--bind=finance-approver=controllers", "--publish")
    assert code == 0 and out.startswith("published supplier-onboarding version 2 ")
    assert ProcessVersion.objects.get(number=2).bindings == {"finance-approver": "controllers"}


def test_a_file_equal_to_an_older_version_is_a_new_version(db, publish):
    """Compared with the latest version only: going back to version 1's text is a change."""
    bindings = {"finance-approver": "finance"}
    publish(ONBOARDING_TEXT, bindings)
    publish(ONBOARDING_TEXT + "\nRevised.\n", bindings)
    assert publish(ONBOARDING_TEXT, bindings).number == 3


@pytest.mark.postgres
def test_two_admins_publishing_the_same_file_at_once_make_one_version(transactional_db, org):
    drafts = [import_draft(organization=org, source=ONBOARDING_TEXT, folder_name="supplier-onboarding")
              for _ in range(2)]
    for draft in drafts:
        draft.bindings = {"finance-approver": "finance"}
        draft.save(update_fields=["bindings"])
    ids = iter(draft.pk for draft in drafts)
    results = run_together(lambda: publish_draft(draft=ProcessDraft.objects.get(pk=next(ids))))
    assert sorted(result.created for result in results) == [False, True]
    assert ProcessVersion.objects.count() == 1
    assert {result.version.pk for result in results} == {ProcessVersion.objects.get().pk}


# --- an unchanged file publishes nothing: admin -----------------------------------------------


def test_admin_importing_and_publishing_an_unchanged_file_creates_no_version(admin_client, publish):
    version = publish(ONBOARDING, {"finance-approver": "finance"})
    draft, page = admin_import(admin_client, ONBOARDING_TEXT)
    # Issue 21, point 10: right after an import, nothing says "Nothing was published" (nobody asked
    # to publish), and Publish is not offered for a file that would publish nothing.
    assert ("This file is the same as version 1, the current version of supplier-onboarding: there is "
            "nothing new to publish. To change who decides, bind a role to another group below and save.") in page
    assert "Nothing was published" not in page
    assert 'name="_publish"' not in page
    assert "Nothing to publish: the current version has this text and these groups." in page
    assert "<strong>Unchanged</strong>: this file’s content hash equals" in page
    # Who decides starts from the current version's bindings.
    assert re.search(r'<input type="text" name="bind__finance-approver" value="finance"', page)
    assert "Version 1 binds it to finance." in page

    published = admin_client.post(draft_url(draft), {"bind__finance-approver": "finance", "_publish": "1"},
                                  follow=True).content.decode()
    assert ("Unchanged: version 1 is current with this text and these groups already, so no new version was "
            f"made (supplier-onboarding, content hash {version.content_hash}).") in published
    assert ProcessVersion.objects.count() == 1
    assert published_events() == [1]
    draft.refresh_from_db()
    assert draft.published_version_id == version.pk
    assert f"This draft is <a href=\"{version_url(version)}\">version 1</a>" in published


def test_admin_publishing_a_changed_file_creates_the_next_version(admin_client, publish):
    publish(ONBOARDING, {"finance-approver": "finance"})
    draft, page = admin_import(admin_client, ONBOARDING_TEXT + "\nRevised.\n")
    assert "publishing this draft creates version 2" in page
    published = admin_client.post(draft_url(draft), {"bind__finance-approver": "finance", "_publish": "1"},
                                  follow=True).content.decode()
    version = ProcessVersion.objects.get(number=2)
    assert f"Published supplier-onboarding version 2 ({version.content_hash})." in published
    assert published_events() == [1, 2]


# --- the version page --------------------------------------------------------------------------


def test_the_version_page_shows_the_source_verbatim_beside_the_body_and_the_map(admin_client, publish):
    version = publish(INDENTED)
    page = admin_client.get(version_url(version)).content.decode()
    source = re.search(r'<pre class="source-verbatim" tabindex="0" aria-label="PROCESS.md as stored">(.*?)</pre>',
                       page, re.DOTALL)
    assert source and html.unescape(source.group(1)) == INDENTED  # every space and line as stored
    assert "        1. Check the register.\n        2.   Check the    sanctions lists." in source.group(1)
    assert '<div class="process-body"><h1>Indented review</h1>' in page
    assert "<pre><code>an indented code block, kept as written\n</code></pre>" in page
    assert 'class="apmap"' in page and "Process map of indented-review version 1" in page
    assert "flowchart" in page  # the Mermaid text, for authors
    assert 'href="/static/processes/admin.css"' in page
    assert 'style="' not in source.group(0)  # the CSP allows no inline style: the sheet does it


def test_the_version_page_escapes_what_the_file_says(admin_client, publish):
    version = publish(ONBOARDING_TEXT + "\n<script>alert(1)</script>\n", {"finance-approver": "finance"})
    page = admin_client.get(version_url(version)).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_version_page_counts_its_runs_and_links_to_them(admin_client, publish, agent):
    first = publish(ONBOARDING, {"finance-approver": "finance"})
    page = admin_client.get(version_url(first)).content.decode()
    runs_link = f'{reverse("admin:runs_run_changelist")}?version__id__exact={first.pk}'
    assert f'<a href="{runs_link}">no runs</a>' in page

    pinned = [agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": name, "amount": 1})
              ["run"]["id"] for name in ("A", "B")]
    second = publish(ONBOARDING_TEXT + "\nRevised.\n", {"finance-approver": "finance"})
    later = agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": "C", "amount": 1})["run"]["id"]

    page = admin_client.get(version_url(first)).content.decode()
    assert f'<a href="{runs_link}">2 runs</a>' in page
    listing = admin_client.get(runs_link.replace("&amp;", "&")).content.decode()
    assert all(run_id in listing for run_id in pinned) and later not in listing
    assert '<a href="{}?version__id__exact={}">1 run</a>'.format(
        reverse("admin:runs_run_changelist"), second.pk) in admin_client.get(version_url(second)).content.decode()

    # The process page lists every version with its count, in one query for all of them.
    process_page = admin_client.get(reverse("admin:processes_process_change", args=[first.process_id]))
    assert f'<a href="{runs_link}">2 runs</a>' in process_page.content.decode()


def test_the_version_page_costs_the_same_queries_with_many_runs(admin_client, publish, agent,
                                                                 django_assert_max_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    version = publish(ONBOARDING, {"finance-approver": "finance"})
    with CaptureQueriesContext(connection) as few:
        admin_client.get(version_url(version))
    for name in "ABCDEFGH":
        agent.ok("start_run", process="supplier-onboarding", inputs={"vendorName": name, "amount": 1})
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert "8 runs" in admin_client.get(version_url(version)).content.decode()


# --- a draft with issues is edited in place ---------------------------------------------------


BROKEN = ONBOARDING_TEXT.replace("on_reject: check_vendor", "on_reject: chek_vendor", 1)


def test_a_draft_with_issues_is_edited_in_place_and_validated_again(admin_client):
    assert BROKEN != ONBOARDING_TEXT
    draft, page = admin_import(admin_client, BROKEN, folder_name="supplier-onboarding")
    assert draft.issues and "on_reject names unknown step &quot;chek_vendor&quot;" in page
    assert 'name="edited_source"' in page and 'value="Save and validate again"' in page
    assert 'name="_publish"' not in page

    # Still wrong: the new issue replaces the old, and the page says so.
    still = BROKEN.replace("finish: onboarded", "finish: ")
    page = admin_client.post(draft_url(draft), {"edited_source": still, "_continue": "1"}, follow=True)
    draft.refresh_from_db()
    assert draft.source == still and len(draft.issues) >= 2
    assert f"Saved. The text still has {len(draft.issues)} issue(s): see below." in page.content.decode()

    page = admin_client.post(draft_url(draft), {"edited_source": ONBOARDING_TEXT, "_continue": "1"},
                             follow=True).content.decode()
    draft.refresh_from_db()
    assert (draft.issues, draft.roles, draft.source) == ([], ["finance-approver"], ONBOARDING_TEXT)
    assert "Saved and validated again: no issues. Bind every role, then publish." in page
    assert "No issues." in page and 'name="_publish"' in page
    revised = AuditEvent.objects.filter(kind="process_imported", data__revised=True)
    assert [event.data["issues"] for event in revised] == [len(still_issues(still)), 0]

    # Bind and publish from the same page.
    published = admin_client.post(draft_url(draft), {"edited_source": ONBOARDING_TEXT,
                                                     "bind__finance-approver": "finance", "_publish": "1"},
                                  follow=True).content.decode()
    assert "Published supplier-onboarding version 1 (" in published
    assert ProcessVersion.objects.get().source == ONBOARDING_TEXT


def still_issues(text: str) -> list[str]:
    from processes.publishing import format_issues

    return format_issues(text, "supplier-onboarding")[2]


def test_editing_keeps_the_text_as_typed_and_the_line_endings_of_the_draft(admin_client):
    """A browser sends a textarea's line breaks as CRLF: an LF draft stays LF, a CRLF one CRLF."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    draft, _page = admin_import(admin_client, BROKEN)
    typed = "  " + ONBOARDING_TEXT + "\n\n"  # leading spaces (an issue) and trailing lines, kept as typed
    admin_client.post(draft_url(draft), {"edited_source": typed.replace("\n", "\r\n"), "_continue": "1"})
    draft.refresh_from_db()
    assert draft.source == typed

    crlf = BROKEN.replace("\n", "\r\n")
    admin_client.post(reverse("admin:processes_processdraft_import"),
                      {"upload": SimpleUploadedFile("PROCESS.md", crlf.encode())})
    uploaded = ProcessDraft.objects.latest("pk")
    assert uploaded.source == crlf  # an upload keeps the file's bytes
    fixed = ONBOARDING_TEXT.replace("\n", "\r\n")
    admin_client.post(draft_url(uploaded), {"edited_source": fixed, "_continue": "1"})
    uploaded.refresh_from_db()
    assert uploaded.source == fixed and uploaded.issues == []


def test_pasted_text_is_kept_with_lf_line_endings(admin_client):
    draft, _page = admin_import(admin_client, ONBOARDING_TEXT.replace("\n", "\r\n"))
    assert draft.source == ONBOARDING_TEXT  # the trailing newline too: nothing is stripped


def test_a_published_draft_is_no_longer_edited(admin_client, org, publish):
    version = publish(ONBOARDING, {"finance-approver": "finance"})
    draft = ProcessDraft.objects.get(published_version=version)
    page = admin_client.get(draft_url(draft)).content.decode()
    assert 'name="edited_source"' not in page and '<pre class="source-verbatim"' in page
    admin_client.post(draft_url(draft), {"edited_source": "changed", "_continue": "1"})
    draft.refresh_from_db()
    assert draft.source == ONBOARDING_TEXT
    with pytest.raises(PublishRefused) as refused:
        revise_draft(draft=draft, source="changed")
    assert refused.value.issues == ["this draft is already published as version 1; import the file again to change it"]


# --- a draft shows its diff against the current version ---------------------------------------


def test_a_draft_shows_its_changes_against_the_current_version(admin_client, publish):
    publish(ONBOARDING, {"finance-approver": "finance"})
    changed = ONBOARDING_TEXT.replace("due: 2d", "due: 3d", 1) + "\n<b>New</b> closing line.\n"
    assert changed.count("due: 3d") == 1
    draft, page = admin_import(admin_client, changed)
    assert "3 lines added, 1 line removed against version 1." in page  # a blank line too
    assert f"<caption>Changes of draft {draft.pk} against version 1</caption>" in page
    # Each changed line carries a sign and a word besides its colour; the text is escaped.
    assert re.search(r'<tr class="diff-removed">.*?<td class="diff-sign" aria-hidden="true">−</td>'
                     r'<td class="diff-text"><span class="visually-hidden">removed: </span><del>\s*due: 2d</del>',
                     page)
    assert re.search(r'<tr class="diff-added">.*?<span class="visually-hidden">added: </span>'
                     r'<ins>&lt;b&gt;New&lt;/b&gt; closing line.</ins>', page)
    assert "<b>New</b>" not in page


def test_a_new_process_has_nothing_to_compare_with(admin_client):
    _draft, page = admin_import(admin_client, ONBOARDING_TEXT)
    assert "A new process: there is no version to compare with." in page
    assert "None yet: publishing creates version 1." in page


def test_the_diff_numbers_lines_as_an_editor_does():
    diff = source_diff("a\nb\nc\n", "a\r\nB\r\nc\r\nd\r\n")
    [hunk] = diff.hunks
    assert [(line.kind, line.old_number, line.new_number, line.text) for line in hunk.lines] == [
        ("same", 1, 1, "a"), ("removed", 2, None, "b"), ("added", None, 2, "B"), ("same", 3, 3, "c"),
        ("added", None, 4, "d")]
    assert (diff.added, diff.removed) == (2, 1)
    only_endings = source_diff("a\nb\n", "a\r\nb\r\n")
    assert only_endings.hunks == () and only_endings.endings_only and not only_endings.unchanged
    assert source_diff("a\n", "a\n").unchanged


# --- the version page in real Chromium, at desktop and phone width ----------------------------

CHROMIUM = "/usr/bin/chromium"
LONG_LINE = "A line far wider than a phone: " + "vendor-register-lookup " * 12
WIDE = INDENTED.replace("name: indented-review", "name: wide-review").replace(
    "# Indented review", f"# Wide review\n\n{LONG_LINE.strip()}\n\n    {LONG_LINE.strip()}")

EDITED = WIDE.replace("  - id: done", "  - id: done  # kept as typed").replace("New line.", "") + "\n  indented tail\n"

# Everything the page draws outside its scrolling boxes (the admin's own tables, the source, the
# map) must fit the viewport: the right edge of each such element.
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const inScroller = (el) => el.closest('table, .table-scroll, pre, .version-map, textarea, #nav-sidebar');
  return [...document.querySelectorAll('#container *')]
    .filter((el) => !inScroller(el) || el.matches('.table-scroll, pre, .version-map, textarea'))
    .filter((el) => el.getClientRects().length && el.getBoundingClientRect().right > width + 0.5)
    .map((el) => `${el.tagName.toLowerCase()}.${el.className} right=${Math.round(el.getBoundingClientRect().right)}`);
}"""


def _shoot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.mark.browser
@pytest.mark.live
def test_the_version_page_in_chromium_at_1280_and_390_px(live_server_url, org, publish, agent, settings):
    import os

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    from kernel.organizations import create_person

    # A hash the server process can check (the test settings hash with MD5, which it does not list).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    create_person(org, "root@example.com", password="admin-pass-1", superuser=True)
    version = publish(WIDE)
    for name in ("Acme", "Globex"):
        agent.ok("start_run", process="wide-review", inputs={"vendorName": name})
    draft = import_draft(organization=org, source=WIDE.replace("2.   Check", "2.   Re-check") + "\nNew line.\n")
    url, draft_page = f"{live_server_url}{version_url(version)}", f"{live_server_url}{draft_url(draft)}"

    found, shots, csp_errors = {}, [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for width in (1280, 390):
                context = browser.new_context(viewport={"width": width, "height": 900})
                page = context.new_page()
                page.on("console", lambda message: csp_errors.append(message.text)
                        if "Content Security Policy" in message.text else None)
                page.goto(f"{live_server_url}/admin/login/?next={version_url(version)}")
                page.fill("#id_username", "root@example.com")
                page.fill("#id_password", "admin-pass-1")
                page.click("input[type=submit]")
                page.wait_for_url(url)
                source = page.locator("pre.source-verbatim[aria-label=\"PROCESS.md as stored\"]")
                found[width] = {
                    "text": source.text_content(),
                    "style": source.evaluate("el => [getComputedStyle(el).whiteSpace, getComputedStyle(el).fontFamily]"),
                    "scrolls": source.evaluate("el => el.scrollWidth > el.clientWidth"),
                    "overflowing": page.evaluate(OVERFLOWING),
                    "page_width": page.evaluate("document.documentElement.scrollWidth"),
                    "source_box": source.bounding_box(),
                    "body_box": page.locator(".process-body").bounding_box(),
                    "map_visible": page.locator("figure.version-map svg.apmap").is_visible(),
                    "runs": page.locator(".field-runs a").text_content(),
                }
                shots.append(_shoot(page, f"admin-version-{width}"))
                page.goto(draft_page)
                found[width]["diff_rows"] = page.locator(".source-diff tr.diff-added").count()
                found[width]["draft_overflowing"] = page.evaluate(OVERFLOWING)
                found[width]["editor_width"] = page.locator("textarea.source-editor").bounding_box()["width"]
                shots.append(_shoot(page, f"admin-draft-{width}"))
                if width == 1280:  # edited in place in a real browser, which sends CRLF line breaks
                    page.fill("textarea.source-editor", EDITED)
                    page.click("input[name=_continue]")
                    page.wait_for_load_state()
                    found[width]["saved_message"] = page.locator("ul.messagelist").inner_text()
                page.goto(f"{live_server_url}{reverse('admin:agentprocess_member_add')}")
                found[width]["people_overflowing"] = page.evaluate(OVERFLOWING)
                shots.append(_shoot(page, f"admin-add-person-{width}"))
                context.close()
        finally:
            browser.close()

    for width, seen in found.items():
        assert seen["text"] == WIDE, width  # verbatim: every space, every line
        assert seen["style"][0] == "pre" and "monospace" in seen["style"][1], seen["style"]
        assert seen["overflowing"] == seen["draft_overflowing"] == seen["people_overflowing"] == [], (width, seen)
        assert seen["page_width"] <= width, (width, seen["page_width"])
        assert seen["map_visible"] and seen["runs"] == "2 runs"
        assert seen["diff_rows"] == 3  # the changed line, the blank line and the new one
        assert seen["editor_width"] <= width
    assert found[390]["scrolls"]  # the long line scrolls inside its box on a phone
    desktop, phone = found[1280], found[390]
    assert abs(desktop["source_box"]["y"] - desktop["body_box"]["y"]) < 80  # side by side
    assert desktop["body_box"]["x"] > desktop["source_box"]["x"] + desktop["source_box"]["width"] - 1
    assert phone["body_box"]["y"] > phone["source_box"]["y"] + phone["source_box"]["height"] - 1  # stacked
    assert csp_errors == []
    draft.refresh_from_db()
    assert (draft.source, draft.issues) == (EDITED, [])
    assert "Saved and validated again: no issues." in desktop["saved_message"]
    assert all(path.stat().st_size > 10_000 for path in shots)


def test_the_draft_list_costs_the_same_queries_with_many_published_drafts(admin_client, publish,
                                                                           django_assert_max_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    publish(ONBOARDING_TEXT, {"finance-approver": "finance"})
    with CaptureQueriesContext(connection) as few:
        admin_client.get(reverse("admin:processes_processdraft_changelist"))
    for number in range(2, 7):
        publish(ONBOARDING_TEXT + "\n" * number, {"finance-approver": "finance"})
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = admin_client.get(reverse("admin:processes_processdraft_changelist")).content.decode()
    assert "supplier-onboarding v6" in page
