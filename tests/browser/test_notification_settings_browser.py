"""The notification settings page in real Chromium (issue 15, point 6): reached from the nav, a
radio group per kind with plain labels, a choice changed and saved is kept; with JavaScript off
it works the same (a plain form post)."""

import pytest

from kernel.models import NoticePreference

from .conftest import PASSWORD, sign_in

pytestmark = pytest.mark.browser


def test_a_changed_choice_is_saved_and_kept(server, new_page, make_person):
    make_person("clerk@example.com", groups=["clerks"], password=PASSWORD)
    page = new_page()
    sign_in(page, server, "clerk@example.com")
    page.get_by_role("link", name="Notifications").click()
    page.wait_for_url(f"{server}/settings/notifications")
    new_work = page.get_by_role("group", name="New work for me or my groups")
    assert new_work.get_by_role("radio", name="In a summary mail").is_checked()  # the usual setting
    assert page.get_by_role("group", name="An escalation waiting (operators)").count() == 0  # not an operator
    new_work.get_by_role("radio", name="Right away").check()
    page.get_by_role("group", name="Overdue items").get_by_role("radio", name="Not at all").check()
    page.get_by_role("button", name="Save my choices").click()
    page.wait_for_url(f"{server}/settings/notifications")
    assert "Your notification settings are saved." in page.inner_text(".messages")
    page.reload()
    assert page.get_by_role("group", name="New work for me or my groups").get_by_role(
        "radio", name="Right away").is_checked()
    assert page.get_by_role("group", name="Overdue items").get_by_role("radio", name="Not at all").is_checked()
    assert dict(NoticePreference.objects.values_list("kind", "delivery")) == {
        "new_work": "immediately", "assigned": "immediately", "returned": "immediately", "overdue": "off"}


def test_the_page_works_without_javascript(server, browser, make_person):
    make_person("ops@example.com", operator=True, password=PASSWORD)
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        sign_in(page, server, "ops@example.com")
        page.goto(f"{server}/settings/notifications")
        escalations = page.get_by_role("group", name="An escalation waiting (operators)")
        escalations.get_by_role("radio", name="Not at all").check()
        page.get_by_role("button", name="Save my choices").click()
        page.wait_for_url(f"{server}/settings/notifications")
        assert escalations.get_by_role("radio", name="Not at all").is_checked()
    finally:
        context.close()
    assert NoticePreference.objects.get(kind="escalation").delivery == "off"
