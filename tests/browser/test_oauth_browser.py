"""A person connects an MCP client with OAuth in real Chromium (issue 7): the official MCP Python
client discovers the authorization server from the 401, sends the person's browser to
/o/authorize/ with PKCE S256, the person signs in and consents, the client exchanges the code for a
token and lists that person's work with get_work over /mcp on a real server process. An
authorization request without PKCE is refused.

Playwright's async API here (not tests/browser/conftest.py's sync `browser`): the MCP client's OAuth
flow is async and calls back into the browser in the middle of its first request.
"""

import os
import shutil
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from oauth2_provider.models import AccessToken, Application

from tests.conftest import service_unavailable
from tests.test_oauth import SERVER_HASHERS, MemoryTokens, ok, run_at_approval

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # stack notes §7

pytestmark = [pytest.mark.browser, pytest.mark.live]

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
PASSWORD = "consent-pass-1"


@contextmanager
def loopback_callback():
    """What a native MCP client runs to receive the code (RFC 8252 §7.3): an HTTP listener on a
    loopback port chosen now. Yields (redirect URI, list of the query strings it received)."""
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlsplit(self.path)
            if url.path != "/callback":  # the browser asks for /favicon.ico too
                self.send_error(404)
                return
            received.append(url.query)
            body = b"<!doctype html><title>Done</title><p>You can close this window.</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/callback", received
    finally:
        server.shutdown()
        server.server_close()


def test_person_authorizes_an_mcp_client_with_code_and_pkce_and_lists_their_work(
        live_server_url, publish, make_agent, make_person, settings, tmp_path):
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        service_unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.async_api import async_playwright

    settings.PASSWORD_HASHERS = SERVER_HASHERS  # the server process checks the password
    make_person("fin@example.com", groups=["finance"], password=PASSWORD)
    make_person("ops@example.com", groups=["operations"], password=PASSWORD)  # someone else's work stays theirs
    run_id = run_at_approval(publish, make_agent)
    app = Application.objects.create(
        name="Desk MCP client", client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris="http://127.0.0.1/callback",
    )
    storage = MemoryTokens()
    seen = {}

    async def scenario(callback: str, callbacks: list[str]):
        # Registered in admin beforehand (a public client), so no dynamic client registration.
        storage.client_info = OAuthClientInformationFull(
            client_id=app.client_id, redirect_uris=[callback], grant_types=["authorization_code", "refresh_token"],
            response_types=["code"], token_endpoint_auth_method="none")
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            context = await browser.new_context()
            context.set_default_timeout(20000)
            page = await context.new_page()

            async def sign_in_and_consent(authorization_url: str) -> None:
                query = parse_qs(urlsplit(authorization_url).query)
                seen["authorization request"] = query
                await page.goto(authorization_url)
                await page.wait_for_url("**/accounts/login/**")
                await page.get_by_label("Email or username").fill("fin@example.com")
                await page.get_by_label("Password").fill(PASSWORD)
                await page.get_by_role("button", name="Sign in").click()
                await page.wait_for_url("**/o/authorize/**")
                seen["consent"] = await page.locator("main").inner_text()
                await page.screenshot(path=str(tmp_path / "consent.png"))
                await page.get_by_role("button", name="Allow").click()
                await page.wait_for_url(f"{callback}**")

            async def code_from_callback() -> AuthorizationCodeResult:
                query = {key: values[0] for key, values in parse_qs(callbacks[-1]).items()}
                seen["callback"] = query
                return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

            auth = OAuthClientProvider(
                server_url=f"{live_server_url}/mcp",
                client_metadata=OAuthClientMetadata(
                    redirect_uris=[callback], grant_types=["authorization_code", "refresh_token"],
                    response_types=["code"], token_endpoint_auth_method="none", client_name="Desk MCP client"),
                storage=storage, redirect_handler=sign_in_and_consent, callback_handler=code_from_callback)
            http = httpx2.AsyncClient(auth=auth, timeout=30)
            async with http, Client(streamable_http_client(f"{live_server_url}/mcp", http_client=http)) as client:
                work = await ok(client, "get_work")
                [item] = work["items"]
                view = await ok(client, "decide", **{**item["workItem"]["decide"]["arguments"],
                                                     "requestId": "0b7c2d7e-5f7e-4a8e-9b1c-3f7a1d2e4c5b"},
                                decision="approved")

            # The same browser session, an authorization request without PKCE: refused, no consent page.
            await page.goto(f"{live_server_url}/o/authorize/?" + urlencode({
                "response_type": "code", "client_id": app.client_id, "redirect_uri": callback, "state": "no-pkce"}))
            await page.wait_for_url(f"{callback}**")
            seen["without pkce"] = {key: values[0] for key, values in parse_qs(callbacks[-1]).items()}
            await browser.close()
            return item, view

    with loopback_callback() as (callback, callbacks):
        item, view = anyio.run(scenario, callback, callbacks)

    request = seen["authorization request"]
    assert request["code_challenge_method"] == ["S256"] and request["code_challenge"][0]
    assert request["resource"] == [f"{live_server_url}/mcp"] and request["scope"] == ["tools"]
    assert "Allow Desk MCP client to act as you?" in seen["consent"]
    assert "fin@example.com" in seen["consent"]
    assert seen["callback"]["iss"] == live_server_url and seen["callback"]["code"]

    # The token acts as the person who consented: their group's approval, and they may decide it.
    assert (item["runId"], item["workItem"]["stepId"]) == (run_id, "approve")
    assert view["data"]["steps"]["approve"]["by"] == "fin@example.com"
    token = AccessToken.objects.get(application=app)
    assert token.user.email == "fin@example.com" and token.token == ""  # stored as a checksum only
    assert storage.tokens.refresh_token

    refused = seen["without pkce"]
    assert refused["error"] == "invalid_request" and refused["state"] == "no-pkce"
    assert refused["error_description"] == "Code challenge required."
    assert "code" not in refused
    assert AccessToken.objects.filter(application=app).count() == 1
