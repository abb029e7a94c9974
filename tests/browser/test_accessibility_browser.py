"""axe-core in real Chromium on every page people use (issue 16, point 3, "Done when"): no serious or
critical violation on the sign-in page, the inbox with items and with none, a work item of each kind
(approval, typed task with a file, escalation), the run page, the runs list, start run, operators,
tokens, notification settings, the bulk result page and the 403 and 404 pages.

axe-core comes from the npm registry at the version package-lock.json pins (`npm ci`, as .ci/run
does). The pages' Content-Security-Policy allows no inline script, so axe's source is evaluated
through the DevTools protocol (page.evaluate), which the page's CSP does not govern; the pages
themselves run exactly as served.
"""

from pathlib import Path

import pytest

from tests.conftest import service_unavailable

from .conftest import PASSWORD, screenshot, sign_in
from .people_pages import NEWCOMER, PERSON, build_world, page_paths

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")
# Moderate by axe's scale, but named by the issue: landmarks and headings in order.
STRUCTURE_RULES = {"heading-order", "landmark-one-main", "landmark-unique", "landmark-no-duplicate-main",
                   "page-has-heading-one", "region"}


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.exists():
        service_unavailable(f"axe-core is not installed ({AXE} missing): run `npm ci` in the repository root")
    return AXE.read_text(encoding="utf-8")


def axe_violations(page, source: str) -> list[dict]:
    """axe's violations on the page as it is now (WCAG 2.0-2.2 A and AA, and axe's best practices)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(source)
    return page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ['violations']});
        return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}));
    }""")


def describe(name: str, violations: list[dict]) -> str:
    lines = []
    for violation in violations:
        lines.append(f"{name}: [{violation['impact']}] {violation['id']}: {violation['help']}")
        for node in violation["nodes"][:6]:
            lines.append(f"    {node['target']}: {(node['summary'] or '').splitlines()[-1].strip()}")
    return "\n".join(lines)


def check(page, name: str, source: str, found: dict) -> None:
    page.wait_for_load_state("networkidle")
    violations = axe_violations(page, source)
    if violations:
        print(describe(name, violations))  # every finding, blocking or not, for whoever reads the log
    found[name] = [v for v in violations if v["impact"] in BLOCKING or v["id"] in STRUCTURE_RULES]


def test_no_page_has_a_serious_or_critical_violation(axe_source, server, new_page, publish, make_person, agent):
    world = build_world(publish, make_person, agent)
    found: dict[str, list] = {}

    page = new_page()
    response = page.goto(f"{server}/accounts/login/")
    assert response.status == 200
    check(page, "sign-in", axe_source, found)
    sign_in(page, server, PERSON)
    for name, path in page_paths(world).items():
        response = page.goto(server + path)
        assert response.status == 200, (name, response.status)
        check(page, name, axe_source, found)

    # The help overlay of the keyboard shortcuts, open.
    page.goto(server + "/")
    page.keyboard.press("?")
    page.locator("#shortcut-help").wait_for(state="visible")
    check(page, "inbox with the shortcut help open", axe_source, found)
    page.keyboard.press("Escape")

    # A decision's success message (links to the run and the next item).
    page.goto(f"{server}/work/{world.approvals[1]}")
    page.locator("#decide-approved").click()
    page.wait_for_url(f"{server}/")
    assert page.locator(".messages a").count() >= 1
    check(page, "inbox after a decision", axe_source, found)

    # The bulk result page: the remaining approval, approved from the inbox.
    page.locator(f'input[name="items"][value="{world.approvals[0]}"]').check()
    page.locator("#bulk-decision").select_option("approved")
    page.locator("[data-bulk-submit]").click()
    page.wait_for_url(f"{server}/work/bulk")
    assert page.locator('[data-outcome="applied"]').count() == 1
    check(page, "bulk result", axe_source, found)

    response = page.goto(f"{server}/no-such-page/")
    assert response.status == 404
    check(page, "404", axe_source, found)
    screenshot(page, "404-1280")
    response = page.goto(f"{server}/work/w_doesnotexist")
    assert response.status == 404
    check(page, "404 of a work item", axe_source, found)

    newcomer = new_page()
    sign_in(newcomer, server, NEWCOMER, PASSWORD)
    assert newcomer.locator("tr.inbox-row").count() == 0
    check(newcomer, "empty inbox", axe_source, found)
    response = newcomer.goto(f"{server}/operators/")
    assert response.status == 403
    check(newcomer, "403 (operators only)", axe_source, found)
    response = newcomer.goto(f"{server}/work/{world.task}")
    assert response.status == 404  # a run the newcomer takes no part in does not exist for them
    check(newcomer, "404 (a work item of someone else's run)", axe_source, found)

    blocking = {name: violations for name, violations in found.items() if violations}
    assert not blocking, "\n" + "\n".join(describe(name, v) for name, v in blocking.items())
    assert len(found) == 19, sorted(found)

