"""The operators' webhook pages in real Chromium (issue 28, points 1 and 4): no serious or critical
axe violation, no sideways scrolling at 390 px, "Send again" reached and pressed with the keyboard
alone (the delivery then waits to go again with the same webhook-id), and a subscription added on
the page (its secret shown once)."""

import pytest

from kernel import clock
from tests.test_webhooks import start
from tests.test_work_notices import INVOICE_CHECK
from webhooks.models import Delivery
from webhooks.services import fanout, sending, subscriptions

from .conftest import PASSWORD, horizontal_overflow, screenshot, sign_in
from .test_accessibility_browser import axe_source, check  # noqa: F401 (axe_source: a fixture)

pytestmark = pytest.mark.browser
OPERATOR = "ops@example.com"


@pytest.fixture
def log_page(server, settings, publish, make_person, make_agent, org):
    settings.WEBHOOK_ALLOW_PRIVATE, settings.WEBHOOK_TIMEOUT_SECONDS = True, 1.0
    publish(INVOICE_CHECK, {"clerks": "clerks", "finance": "finance"})
    make_person(OPERATOR, operator=True, password=PASSWORD)
    team = {"agent": make_agent("screener")}
    subscription = subscriptions.add(organization=org, url="http://127.0.0.1:9/hooks/erp-with-a-long-path-name",
                                     kinds=["run.started", "step.ready"], now=clock.now())
    start(team, "INV-2026-000123 Acme Steel GmbH, Duisburg")
    fanout.fan_out(clock.now())
    sending.send_due(clock.now)  # nothing listens on port 9: a failed attempt each
    return subscription


def test_the_webhook_pages_pass_axe_fit_a_phone_and_send_again_works_by_keyboard(
        server, new_page, log_page, axe_source):  # noqa: F811 (axe_source: the fixture)
    page = new_page()
    sign_in(page, server, OPERATOR)
    found = {}
    for name, path in (("webhooks", "/operators/webhooks/"), ("webhook log", f"/operators/webhooks/{log_page.pk}")):
        assert page.goto(server + path).status == 200
        check(page, name, axe_source, found)
        page.set_viewport_size({"width": 390, "height": 844})
        page.reload()
        assert horizontal_overflow(page) == 0, name
        page.set_viewport_size({"width": 1280, "height": 900})
    assert found == {"webhooks": [], "webhook log": []}
    assert page.get_by_text("no answer in").first.inner_text().count("ConnectionRefusedError") == 1

    delivery = Delivery.objects.order_by("id").first()
    button = page.get_by_role("button", name=f"Send again: {delivery.kind} {delivery.webhook_id}")
    for _ in range(60):
        page.keyboard.press("Tab")
        if button.evaluate("element => element === document.activeElement"):
            break
    else:
        pytest.fail("Send again is not reachable with Tab")
    page.keyboard.press("Enter")  # the page answers with itself again, saying what will happen
    page.get_by_text(f"will be sent again within seconds, with the same webhook-id {delivery.webhook_id}.").wait_for()
    delivery.refresh_from_db()
    assert delivery.state == Delivery.PENDING and delivery.next_attempt_at <= clock.now()


def test_an_operator_adds_a_subscription_on_the_page_and_it_fits_a_phone(
        server, new_page, settings, publish, make_person, axe_source):  # noqa: F811 (axe_source: the fixture)
    """Issue 28, Build point 1 ("an operators' page"): at 1280 px, an empty choice of kinds is refused
    on the form; then the subscription is added with the kinds ticked by their plain-words labels and
    its secret shown once; at 390 px the page (form and list) passes axe and does not scroll sideways."""
    from webhooks.models import KIND_LABELS, Subscription

    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on loopback
    publish(INVOICE_CHECK, {"clerks": "clerks", "finance": "finance"})
    make_person(OPERATOR, operator=True, password=PASSWORD)
    page = new_page()
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, server, OPERATOR)
    page.goto(server + "/operators/webhooks/")
    page.get_by_label("Address (URL) of the receiver").fill("http://127.0.0.1:9/hooks/erp")
    page.get_by_role("button", name="Add subscription").click()
    page.get_by_text("Choose at least one kind of event.").wait_for()
    assert not Subscription.objects.exists()
    found = {}
    check(page, "webhooks refused", axe_source, found)
    assert page.get_by_label("Address (URL) of the receiver").input_value() == "http://127.0.0.1:9/hooks/erp"

    page.get_by_label(KIND_LABELS["run.ended"]).check()
    page.get_by_label(KIND_LABELS["alert.fired"]).check()
    page.get_by_label(KIND_LABELS["alert.cleared"]).check()
    page.get_by_label("Process (optional)").select_option("invoice-check")
    page.get_by_role("button", name="Add subscription").click()
    page.get_by_role("heading", name="Subscribed http://127.0.0.1:9/hooks/erp").wait_for()
    subscription = Subscription.objects.get()
    assert (subscription.kinds, subscription.process, subscription.test_runs) == (
        ["run.ended", "alert.fired", "alert.cleared"], "invoice-check", False)
    assert page.locator("#subscription-secret").inner_text() == subscription.secret
    check(page, "webhooks added", axe_source, found)
    screenshot(page, "webhooks-add-1280")

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(server + "/operators/webhooks/")
    assert subscription.secret not in page.content()  # shown once: not on the page again
    check(page, "webhooks 390", axe_source, found)
    assert horizontal_overflow(page) == 0
    screenshot(page, "webhooks-390")
    page.goto(server + f"/operators/webhooks/{subscription.pk}")
    check(page, "webhook manage 390", axe_source, found)
    assert horizontal_overflow(page) == 0
    screenshot(page, "webhook-manage-390")
    assert found == {"webhooks refused": [], "webhooks added": [], "webhooks 390": [], "webhook manage 390": []}
