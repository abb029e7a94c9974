"""Styled pages for every error a person can meet (issue 16, point 5): 403, 404, 500 and an expired
form (CSRF) have the site's look and its navigation; the 500 page needs no database, no request and
no URLconf to render."""

import pytest
from django.template import loader
from django.test import Client

from tests.support.actors import Actor

PASSWORD = "correct-horse-42"
STYLESHEET = '<link rel="stylesheet" href="/static/workqueue/inbox.css">'


@pytest.fixture
def signed_in(db, make_person) -> tuple[Client, Actor]:
    person = make_person("fin@example.com", password=PASSWORD)
    client = Client()
    assert client.login(username="fin@example.com", password=PASSWORD)
    return client, person


@pytest.fixture
def error_urls(settings):
    settings.ROOT_URLCONF = "tests.support.error_urls"
    settings.DEBUG = False


def test_an_unknown_address_gives_the_styled_404_with_the_navigation(signed_in):
    client, _ = signed_in
    response = client.get("/no-such-page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert [t.name for t in response.templates][:2] == ["404.html", "base.html"]
    assert "There is nothing at this address" in html
    assert "The address may be mistyped" in html and "<code>/no-such-page/</code>" in html
    assert STYLESHEET in html
    assert 'aria-label="Main"' in html and '<a href="/runs/"' in html and "fin@example.com" in html
    assert "Resolver404" not in html
    assert 'href="/">Go to your inbox</a>' in html


def test_a_missing_work_item_says_what_is_missing(signed_in):
    client, _ = signed_in
    response = client.get("/work/w_nosuchitem")
    assert response.status_code == 404
    html = response.content.decode()
    assert "No such work item in your organization." in html
    assert "There is nothing at this address" in html


def test_a_signed_out_404_offers_the_sign_in(db):
    response = Client().get("/no-such-page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert 'href="/accounts/login/">Sign in</a>' in html
    assert "Log out" not in html


def test_permission_denied_gives_the_styled_403(signed_in, error_urls):
    client, _ = signed_in
    response = client.get("/test-errors/forbidden")
    html = response.content.decode()
    assert response.status_code == 403
    assert "You are not allowed to see this" in html
    assert "Only the finance team approves payments." in html
    assert STYLESHEET in html and 'aria-label="Main"' in html
    plain = client.get("/test-errors/forbidden-plain").content.decode()
    assert "ask an administrator of your organization" in plain


def test_an_expired_form_gives_the_styled_csrf_page_and_changes_nothing(db, make_person):
    make_person("fin@example.com", password=PASSWORD)
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "fin@example.com", "password": PASSWORD})
    html = response.content.decode()
    assert response.status_code == 403
    assert "The form could not be sent" in html and "Nothing was changed." in html
    assert STYLESHEET in html and 'aria-label="Main"' in html
    assert "_auth_user_id" not in client.session  # not signed in


def test_a_crash_gives_the_static_500_page(error_urls):
    # No `db` fixture: pytest-django refuses any query, so the page must not make one.
    client = Client(raise_request_exception=False)
    response = client.get("/test-errors/broken")
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on our side" in html
    assert STYLESHEET in html and 'aria-label="Main"' in html and '<a href="/runs/">Runs</a>' in html
    assert "a bug in a view" not in html  # nothing of the error reaches the person


def test_the_500_page_renders_with_no_context_at_all(settings):
    settings.ROOT_URLCONF = "tests.support.no_such_urlconf"  # even a broken URLconf is not touched
    html = loader.get_template("500.html").render()
    assert html.startswith("<!doctype html>") and "Something went wrong on our side" in html
    assert STYLESHEET in html


def test_an_operator_keeps_the_operators_link_on_a_404(db, make_person):
    """The navigation is the same on every page: an operator meeting a 404 for an unknown address
    (no person view ran) still sees Operators; a person who is not one does not."""
    make_person("ops@example.com", operator=True, password=PASSWORD)
    make_person("fin@example.com", password=PASSWORD)
    for email, shown in (("ops@example.com", True), ("fin@example.com", False)):
        client = Client()
        assert client.login(username=email, password=PASSWORD)
        html = client.get("/no-such-page/").content.decode()
        assert ('href="/operators/"' in html) is shown, email
