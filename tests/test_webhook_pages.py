"""The operators' page manages webhook subscriptions (issue 28, Build point 1: "admin, an operators'
page, and manage.py"): add one (its secret shown once), remove it, make it a new secret (the old one
signing for the grace period), resume a paused one. Every write goes through call_tool to the
services the command line uses; a refused subscription says why on the form and changes nothing;
CSRF is checked; only the organization's operators reach any of it.
"""

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils.html import escape

from api.tools import call_tool
from kernel import clock
from kernel.identity import person_identity
from tests.test_webhooks import HINT, SECRET
from tests.test_work_notices import INVOICE_CHECK
from webhooks.models import KIND_LABELS, Delivery, Subscription
from webhooks.services import subscriptions

PASSWORD = "correct-horse-42"
OPS, CLERK = "ops@example.com", "clerk@example.com"


@pytest.fixture
def people(publish, make_person, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the page's receivers below are on loopback unless a test says not
    publish(INVOICE_CHECK, {"clerks": "clerks", "finance": "finance"})
    make_person(OPS, operator=True, password=PASSWORD)
    make_person(CLERK, groups=["clerks"], password=PASSWORD)


def signed_in(email: str, **options) -> Client:
    client = Client(**options)
    assert client.login(username=email, password=PASSWORD)
    return client


def add(client, **fields):
    form = {"url": "http://127.0.0.1:9/hooks/erp", "kinds": ["run.ended", "alert.fired"], "process": "", **fields}
    return client.post("/operators/webhooks/add", form)


def test_the_page_offers_every_kind_in_plain_words_and_the_published_processes(people):
    page = signed_in(OPS).get("/operators/webhooks/").content.decode()
    for kind, label in KIND_LABELS.items():
        assert f'<input type="checkbox" name="kinds" value="{kind}"> {escape(label)} <code' in page
    assert "alert.fired" in KIND_LABELS and "alert.cleared" in KIND_LABELS
    assert '<option value="">Every process</option>' in page and '<option value="invoice-check">' in page
    assert '<input type="checkbox" id="webhook-test-runs" name="test_runs">' in page  # off unless ticked


def test_adding_a_subscription_shows_its_secret_once(people):
    ops = signed_in(OPS)
    answer = add(ops, kinds=["alert.fired", "run.ended"], process="invoice-check")
    assert answer.status_code == 200
    subscription = Subscription.objects.get()
    assert (subscription.url, subscription.kinds, subscription.process, subscription.test_runs) == (
        "http://127.0.0.1:9/hooks/erp", ["run.ended", "alert.fired"], "invoice-check", False)
    body = answer.content.decode()
    assert body.count(subscription.secret) == 1 and subscription.secret.startswith("whsec_")
    assert "Copy it now into the receiving system: it is shown only this once." in body
    assert 'data-copy="#subscription-secret"' in body
    assert "no-cache" in answer["Cache-Control"] and "no-store" in answer["Cache-Control"]
    assert subscription.secret not in ops.get("/operators/webhooks/").content.decode()
    assert subscription.secret not in ops.get(f"/operators/webhooks/{subscription.pk}").content.decode()
    add(ops, url="http://127.0.0.1:9/tests", kinds=["run.started"], test_runs="on")
    assert Subscription.objects.get(url="http://127.0.0.1:9/tests").test_runs is True


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"url": "http://10.1.2.3/hooks"}, "url", "http://10.1.2.3/hooks: 10.1.2.3 is a private address" + HINT),
    ({"url": "http://127.0.0.1/hooks"}, "url", "http://127.0.0.1/hooks: 127.0.0.1 is a loopback address" + HINT),
    ({"url": "ftp://example.com/x"}, "url", "'ftp://example.com/x': a webhook URL starts with https:// (or http://)"),
    ({"url": "https://"}, "url", "'https://' names no host"),
    ({"url": ""}, "url", "'': a webhook URL starts with https:// (or http://)"),
    ({"kinds": []}, "kinds", "Choose at least one kind of event."),
])
def test_a_refused_subscription_says_why_on_the_form_and_adds_nothing(people, settings, fields, field, message):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    if field == "kinds":
        fields["url"] = "https://8.8.8.8/hooks"  # a public address: only the kinds are wrong
    answer = add(signed_in(OPS), **fields)
    body = answer.content.decode()
    assert answer.status_code == 400
    assert f'<p class="field-error" id="webhook-{field}-error">{escape(message)}</p>' in body
    assert "Nothing was added. Check the fields marked below." in body
    assert not Subscription.objects.exists()
    if field == "url" and fields["url"]:
        assert f'value="{escape(fields["url"])}"' in body  # what was typed stays in the form


def test_a_private_address_is_taken_when_the_setting_allows_it(people, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    assert add(signed_in(OPS), url="http://10.1.2.3/hooks").status_code == 200
    assert Subscription.objects.get().url == "http://10.1.2.3/hooks"


def test_removing_a_subscription(people, org):
    subscription = subscriptions.add(organization=org, url="http://127.0.0.1:9/old", kinds=["run.ended"],
                                     now=clock.now())
    ops = signed_in(OPS)
    page = ops.get(f"/operators/webhooks/{subscription.pk}").content.decode()
    assert 'data-confirm="Remove the webhook to http://127.0.0.1:9/old? It hears of nothing more' in page
    answer = ops.post(f"/operators/webhooks/{subscription.pk}/remove")
    assert answer.status_code == 302 and answer["Location"] == "/operators/webhooks/"
    assert not Subscription.objects.exists()
    listing = ops.get("/operators/webhooks/").content.decode()
    assert ("Removed the webhook to http://127.0.0.1:9/old. It hears of nothing more; its delivery log is gone "
            "with it.") in listing
    assert ops.post(f"/operators/webhooks/{subscription.pk}/remove").status_code == 404  # gone: not found


def test_rotating_shows_the_new_secret_once_and_the_old_one_signs_for_the_grace_period(people, org, settings):
    settings.WEBHOOK_SECRET_GRACE_HOURS = 24
    subscription = subscriptions.add(organization=org, url="http://127.0.0.1:9/h", kinds=["run.ended"], secret=SECRET,
                                     now=clock.now())
    ops = signed_in(OPS)
    before = clock.now()
    answer = ops.post(f"/operators/webhooks/{subscription.pk}/rotate")
    assert answer.status_code == 200 and "no-store" in answer["Cache-Control"]
    subscription.refresh_from_db()
    assert subscription.secret != SECRET and subscription.previous_secret == SECRET
    assert before + dt.timedelta(hours=24) <= subscription.previous_secret_until <= clock.now() + dt.timedelta(hours=24)
    body = answer.content.decode()
    assert body.count(subscription.secret) == 1 and SECRET not in body
    assert "New secret made" in body and "signed with both the old and the new secret" in body
    assert subscription.secret not in ops.get(f"/operators/webhooks/{subscription.pk}").content.decode()


def test_resuming_a_paused_subscription_sends_what_waited(people, org):
    subscription = subscriptions.add(organization=org, url="http://127.0.0.1:9/h", kinds=["run.ended"],
                                     now=clock.now())
    long_ago = clock.now() - dt.timedelta(days=2)
    Subscription.objects.filter(pk=subscription.pk).update(paused_at=long_ago, paused_reason="gave up: HTTP 503")
    Delivery.objects.create(organization=org, subscription=subscription, event_seq=1, kind="run.ended", run_id="r_1",
                            payload={}, created_at=long_ago, retrying_since=long_ago, state=Delivery.GAVE_UP)
    ops = signed_in(OPS)
    page = ops.get(f"/operators/webhooks/{subscription.pk}").content.decode()
    assert "Paused since" in page and "gave up: HTTP 503" in page
    answer = ops.post(f"/operators/webhooks/{subscription.pk}/resume")
    assert answer.status_code == 302 and answer["Location"] == f"/operators/webhooks/{subscription.pk}"
    subscription.refresh_from_db()
    assert subscription.paused_at is None and subscription.paused_reason == ""
    delivery = Delivery.objects.get()
    assert delivery.state == Delivery.PENDING and delivery.next_attempt_at <= clock.now()
    page = ops.get(f"/operators/webhooks/{subscription.pk}").content.decode()
    assert "Resumed. Every delivery that waited goes out within seconds, in order; none was lost." in page
    assert "Paused since" not in page


def test_every_write_needs_the_csrf_token(people, org):
    subscription = subscriptions.add(organization=org, url="http://127.0.0.1:9/h", kinds=["run.ended"],
                                     now=clock.now())
    ops = signed_in(OPS, enforce_csrf_checks=True)
    for path in ("add", f"{subscription.pk}/remove", f"{subscription.pk}/rotate", f"{subscription.pk}/resume"):
        assert ops.post(f"/operators/webhooks/{path}", {"url": "http://127.0.0.1:9/x", "kinds": ["run.ended"]}
                        ).status_code == 403, path
    assert list(Subscription.objects.values_list("url", "secret")) == [(subscription.url, subscription.secret)]


def test_only_the_organizations_operators_manage_subscriptions(people, org, make_person):
    subscription = subscriptions.add(organization=org, url="http://127.0.0.1:9/h", kinds=["run.ended"],
                                     now=clock.now())
    Subscription.objects.filter(pk=subscription.pk).update(paused_at=clock.now())
    clerk = signed_in(CLERK)
    assert add(clerk).status_code == 403
    for action in ("remove", "rotate", "resume"):
        assert clerk.post(f"/operators/webhooks/{subscription.pk}/{action}").status_code == 403, action
    make_person("ops@other.example", operator=True, password=PASSWORD, org_slug="other")
    other = signed_in("ops@other.example")
    for action in ("remove", "rotate", "resume"):
        assert other.post(f"/operators/webhooks/{subscription.pk}/{action}").status_code == 404, action
    assert add(other).status_code == 200  # their own organization's
    [kept] = Subscription.objects.filter(organization=org)
    assert (kept.secret, kept.previous_secret, kept.paused_at is not None) == (subscription.secret, "", True)
    assert Subscription.objects.exclude(organization=org).count() == 1


def test_the_page_tools_answer_the_browser_only_and_operators_only(people, org):
    ops = person_identity(get_user_model().objects.get(username=OPS))
    clerk = person_identity(get_user_model().objects.get(username=CLERK))
    arguments = {"url": "http://127.0.0.1:9/h", "kinds": ["run.ended"]}
    assert call_tool(ops, "webhook_add", arguments, transport="rest")["error"] == {
        "code": "not_found", "message": "no tool webhook_add on this server"}
    assert call_tool(clerk, "webhook_add", arguments)["error"] == {
        "code": "forbidden", "message": "only the organization's operators manage webhooks"}
    refused = call_tool(ops, "webhook_add", {**arguments, "kinds": ["run.exploded"]})["error"]
    assert refused["code"] == "invalid" and [(i.path, i.code) for i in refused["issues"]] == [("kinds", "kinds")]
    assert not Subscription.objects.exists()
