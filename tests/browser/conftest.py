"""Real Chromium (Debian's /usr/bin/chromium) driven by Playwright's sync API against live_server.

One browser per module; a fresh context (cookies, timezone) per test. Playwright's sync API runs an
event loop in this thread, so Django's async-safety check must be told the ORM calls are fine.
"""

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import service_unavailable

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
PASSWORD = "correct-horse-42"
# Screenshots the tests take for people to look at (not committed: var/ is ignored).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "artifacts" / "screenshots"


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def horizontal_overflow(page) -> int:
    """How many CSS pixels the page is wider than its viewport (0: no sideways scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.fixture(scope="module")
def browser():
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        service_unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(autouse=True)
def _fresh_definitions():
    from processes import definition

    definition._cache.clear()
    yield
    definition._cache.clear()


@pytest.fixture(scope="session", autouse=True)
def _static_headers_as_deployed():
    """The live server serves static files through Django's StaticFilesHandler, not WhiteNoise's
    middleware: give its answers the headers WhiteNoise adds in deployments (the same function,
    WHITENOISE_ADD_HEADERS_FUNCTION: the PDF viewer's modules readable from its sandboxed frame)."""
    from django.conf import settings
    from django.contrib.staticfiles.handlers import StaticFilesHandler

    plain = StaticFilesHandler.serve

    def serve(self, request):
        response = plain(self, request)
        headers = {}
        settings.WHITENOISE_ADD_HEADERS_FUNCTION(headers, "", request.path)
        for name, value in headers.items():
            response[name] = value
        return response

    StaticFilesHandler.serve = serve
    yield
    StaticFilesHandler.serve = plain


@pytest.fixture
def server(live_server, transactional_db, settings):
    """The live server's base URL; file links in run data point at it."""
    settings.PUBLIC_BASE_URL = live_server.url
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast sign-ins
    return live_server.url


@pytest.fixture
def new_page(browser, server):
    """new_page(timezone_id=None) -> a Playwright page in a fresh context."""
    contexts = []

    def make(timezone_id=None):
        context = browser.new_context(timezone_id=timezone_id) if timezone_id else browser.new_context()
        context.set_default_timeout(15000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def sign_in(page, server: str, email: str, password: str = PASSWORD) -> None:
    page.goto(f"{server}/accounts/login/")
    page.get_by_label("Email or username").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server}/")
