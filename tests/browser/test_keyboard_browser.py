"""The inbox by keyboard alone in real Chromium (issue 16, point 3, "Done when"): a person approves
the top item with the shortcuts alone, goes on to the next item in the view; r asks for the note
first; nothing fires while typing in a field; ? opens the help; every control is reachable by Tab
and shows a focus ring that stands out from the background it is drawn on; a submit button shows
that it is busy."""

import re

import pytest

from runs.models import Run, WorkItem

from .conftest import screenshot, sign_in
from .people_pages import PERSON, build_world, page_paths

pytestmark = pytest.mark.browser


def focused(page) -> dict:
    return page.evaluate("""() => {
        const el = document.activeElement;
        return {tag: el.tagName.toLowerCase(), id: el.id, text: (el.innerText || el.value || '').trim().slice(0, 80),
                row: el.closest('tr.inbox-row') ? el.closest('tr.inbox-row').dataset.workItem : null};
    }""")


def test_a_person_approves_the_top_item_with_the_shortcuts_alone(server, new_page, publish, make_person, agent):
    world = build_world(publish, make_person, agent)
    top, second = world.approvals
    page = new_page()
    sign_in(page, server, PERSON)
    page.goto(f"{server}/?kind=approve")  # a view: the next item must come from the same one
    assert page.locator("tr.inbox-row").first.get_attribute("data-work-item") == top

    page.keyboard.press("j")
    assert focused(page)["row"] == top
    page.keyboard.press("j")
    assert focused(page)["row"] == second
    page.keyboard.press("k")
    assert focused(page)["row"] == top
    assert page.locator("tr.inbox-row.is-current").get_attribute("data-work-item") == top

    page.keyboard.press("a")  # opens the item with Approve ready, nothing decided yet
    page.wait_for_url(re.compile(rf"/work/{top}\?back="))
    assert focused(page)["id"] == "decide-approved"
    assert WorkItem.objects.get(pk=top).state == "open"
    page.keyboard.press("a")  # the second press approves
    page.wait_for_url(f"{server}/?kind=approve")
    assert WorkItem.objects.get(pk=top).decision == "approved"
    assert WorkItem.objects.get(pk=top).decided_by == PERSON
    assert Run.objects.get(pk=world.approval_runs[0]).steps_data["approve"]["by"] == PERSON
    message = page.locator(".messages")
    assert "Approved: vendor-onboarding · Approve. The run is now ended (approved)." in message.inner_text()
    assert message.get_by_role("link", name="Open the run").get_attribute("href") == f"/runs/{world.approval_runs[0]}"
    screenshot(page, "inbox-after-a-decision-1280")
    next_link = message.get_by_role("link", name="Next item in this view")
    assert next_link.get_attribute("href") == f"/work/{second}?back=kind%3Dapprove"

    page.keyboard.press("n")  # the next approval of this view, not the task or the escalation
    page.wait_for_url(f"{server}/work/{second}?back=kind%3Dapprove")

    # r: Reject needs a note; the first press goes to the note, and nothing is sent.
    page.keyboard.press("r")
    assert focused(page)["id"] == "note"
    assert "A note is needed to reject" in page.inner_text("#note-needed")
    page.keyboard.type("ra")  # typing in the note is typing: no shortcut fires
    assert page.locator("#note").input_value() == "ra"
    assert page.url == f"{server}/work/{second}?back=kind%3Dapprove"
    page.keyboard.press("Control+Enter")  # sends the decision chosen with r
    page.wait_for_url(f"{server}/?kind=approve")
    assert WorkItem.objects.get(pk=second).decision == "rejected"
    assert "No more items in this view." in page.inner_text(".messages")


def test_shortcuts_never_fire_while_typing_and_the_help_opens(server, new_page, publish, make_person, agent):
    build_world(publish, make_person, agent)
    page = new_page()
    sign_in(page, server, PERSON)
    search = page.locator("#filter-q")
    search.focus()
    page.keyboard.type("jako?")
    assert search.input_value() == "jako?"
    assert page.url == f"{server}/"
    assert page.locator("tr.inbox-row.is-current").count() == 0
    assert not page.locator("#shortcut-help").is_visible()

    page.locator("h1").click()  # out of the field
    page.keyboard.press("?")
    help_dialog = page.locator("#shortcut-help")
    help_dialog.wait_for(state="visible")
    assert "Next item" in help_dialog.inner_text() and "Ctrl" in help_dialog.inner_text()
    assert focused(page)["text"] == "Close"  # the dialog has the focus, the page is inert
    screenshot(page, "inbox-shortcut-help-1280")
    page.keyboard.press("j")
    assert page.locator("tr.inbox-row.is-current").count() == 0
    page.keyboard.press("Escape")
    help_dialog.wait_for(state="hidden")
    # The same help from a button, for people who do not know the key.
    page.get_by_role("button", name="Shortcuts").click()
    help_dialog.wait_for(state="visible")
    page.get_by_role("button", name="Close").click()
    help_dialog.wait_for(state="hidden")


# Every control a person can see and use: the Tab key must reach each of them.
REACHABLE = """Array.from(document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]'))
    .filter(el => el.tabIndex >= 0 && !el.disabled && el.checkVisibility({visibilityProperty: true})
                  && !el.closest('[hidden], dialog:not([open])'))"""
FOCUS_RING = """() => {
    // The focused element's outline, and the colour it is drawn on: the first opaque background
    // among its ancestors (the ring sits outside the element, outline-offset > 0).
    const el = document.activeElement, style = getComputedStyle(el);
    el.setAttribute('data-tab-seen', '');
    const parse = c => (c.match(/[\\d.]+/g) || []).map(Number);
    let node = el.parentElement, behind = [255, 255, 255];
    if (parseFloat(style.outlineOffset) < 0) node = el;
    while (node) {
        const rgba = parse(getComputedStyle(node).backgroundColor);
        if (rgba.length === 3 || (rgba.length === 4 && rgba[3] > 0.9)) { behind = rgba.slice(0, 3); break; }
        node = node.parentElement;
    }
    return {what: el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + (el.innerText || el.name || '').trim().slice(0, 30),
            style: style.outlineStyle, width: parseFloat(style.outlineWidth),
            ring: parse(style.outlineColor).slice(0, 3), behind: behind};
}"""


def contrast(first, second) -> float:
    def luminance(rgb):
        channels = [c / 255 for c in rgb]
        channels = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]
    lighter, darker = sorted((luminance(first), luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


@pytest.mark.parametrize("which", ["inbox", "approval", "task", "run"])
def test_every_control_is_reachable_by_tab_with_a_visible_focus_ring(server, new_page, publish, make_person, agent,
                                                                    which):
    world = build_world(publish, make_person, agent)
    page = new_page()
    sign_in(page, server, PERSON)
    page.goto(server + page_paths(world)[which])
    page.wait_for_load_state("networkidle")
    controls = page.evaluate(REACHABLE + ".length")
    weak = []
    for _ in range(controls * 3 + 20):  # a date input alone takes 4 stops (day, month, year, calendar)
        page.keyboard.press("Tab")
        ring = page.evaluate(FOCUS_RING)
        if ring["what"].startswith("body"):
            break
        if ring["style"] == "none" or ring["width"] < 2 or contrast(ring["ring"], ring["behind"]) < 3:
            weak.append(ring)
    assert not weak, weak
    missed = page.evaluate(REACHABLE + ".filter(el => !el.hasAttribute('data-tab-seen')).map(el => el.outerHTML.slice(0, 120))")
    assert not missed, missed
    assert controls > 10


def test_a_submit_button_says_it_is_working(server, new_page, publish, make_person, agent):
    world = build_world(publish, make_person, agent)
    page = new_page()
    sign_in(page, server, PERSON)
    page.goto(f"{server}/work/{world.approvals[0]}")
    seen = []
    page.on("console", lambda message: seen.append(message.text) if message.text.startswith("busy ") else None)
    page.evaluate("""() => {  // report the button each time it changes, before the page is gone
        const button = document.getElementById('decide-approved'), form = button.form;
        new MutationObserver(() => console.log('busy ' + JSON.stringify([button.disabled, button.textContent,
            button.getAttribute('aria-busy'), form.getAttribute('aria-busy')])))
            .observe(form, {attributes: true, subtree: true, childList: true, characterData: true});
    }""")
    page.locator("#decide-approved").click()
    page.wait_for_url(f"{server}/")
    assert 'busy [true,"Working…","true","true"]' in seen, seen
    assert WorkItem.objects.get(pk=world.approvals[0]).decision == "approved"  # the button's value was sent
