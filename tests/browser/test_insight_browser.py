"""Process insight in real Chromium (issue 27, "Done when"): the list and the dashboard (with its
heatmap) at 1280 and 390 px, no serious or critical axe-core violation, no sideways scrolling of the
page on a phone, screenshots into var/artifacts/screenshots/ beside the other browser tests'."""

import pytest

from tests.test_check_profile import evaluator  # noqa: F401 (the scripted evaluator fixture)
from tests.test_insight_figures import history  # noqa: F401 (the known history fixture)

from .conftest import screenshot, sign_in
from .test_accessibility_browser import axe_source, check, describe  # noqa: F401 (axe's source, a fixture)
from .test_mobile_browser import wide_elements

pytestmark = pytest.mark.browser
PASSWORD = "a-long-password-1"  # the known history's people
PAGES = {"insight-list": "/insight/", "insight-dashboard": "/insight/checked-vendor/?period=7",
         "insight-heatmap-overdue": "/insight/checked-vendor/?period=7&heat=overdue#h-heat"}


@pytest.mark.parametrize("who", ["ops@example.com", "fin2@example.com"])
def test_the_dashboard_is_accessible_and_fits_a_phone(server, new_page, history, axe_source, who):
    from insight import alerts
    from kernel import clock

    for figure, step, threshold in (("median_wait", "approve", 1800), ("rework_rate", "approve", 0.5)):
        alerts.set_rule(identity=history["ops"].identity, process="checked-vendor", figure=figure, step=step,
                        threshold=threshold, days=7, now=clock.now())
    assert alerts.sweep(clock.now()) == (1, 0)  # the wait in approve is above 30 min; the rework rate is not
    page = new_page()
    sign_in(page, server, who, PASSWORD)
    found, overflowing = {}, {}
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for name, path in PAGES.items():
            response = page.goto(server + path)
            assert response.status == 200, (name, response.status)
            check(page, f"{name} at {width}", axe_source, found)
            if page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth"):
                overflowing[f"{name} at {width}"] = wide_elements(page)
            if who == "ops@example.com":
                screenshot(page, f"{name}-{width}")
    # The disclosures' tables, open.
    page.goto(server + PAGES["insight-dashboard"])
    for summary in page.locator("details > summary").all():
        summary.click()
    check(page, "insight-dashboard with its tables open", axe_source, found)
    blocking = {name: violations for name, violations in found.items() if violations}
    assert not blocking, "\n" + "\n".join(describe(name, v) for name, v in blocking.items())
    assert not overflowing, overflowing
    assert page.locator("svg.chart-timeline title").first.text_content() == "Runs started and finished"
    assert page.locator("figure.map svg .node.heat-4").count() == 2
    assert page.locator(".alert-rule.is-firing").count() == 1
