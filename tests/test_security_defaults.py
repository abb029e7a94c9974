"""Safe by default in production (issue 13, point 1): no insecure default reaches a deployment.

Spec §6 rule 2: "Tokens are opaque, unforgeable"; the rest is the deployment a README reader gets
when they copy its settings.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from django.test import Client

from kernel import clock
from runs.models import StepState
from runs.services import tokens
from tests.support.flows import LINK

ROOT = Path(__file__).resolve().parent.parent
STRONG_KEY = "k" * 20 + "3Yq9-PvT_uX2mW7sLr8cBn4JdA6fHe1Z" + "q" * 10
README_DEPLOYMENT = {  # README "Deploying on PostgreSQL + Redis with several workers"
    "DATABASE_URL": "postgres://agentprocess_app:secret@db:5432/agentprocess",
    "MIGRATION_DATABASE_URL": "postgres://agentprocess_owner:secret@db:5432/agentprocess",  # the migrate line's
    "REDIS_URL": "redis://redis:6379/0",
    "PUBLIC_BASE_URL": "https://process.example.com",
    "SECRET_KEY": STRONG_KEY,
    "EMAIL_URL": "smtp+tls://mailer:secret@smtp.example.com:587",
    "FILE_STORAGE": "s3", "S3_BUCKET": "agentprocess-files", "S3_REGION": "eu-central-1",
}


def clean_environment() -> dict:
    """This process's environment without the settings under test (and the browser tests' async
    switch, which no deployment has)."""
    return {key: value for key, value in os.environ.items()
            if key not in ("SECRET_KEY", "DATABASE_URL", "MIGRATION_DATABASE_URL", "PUBLIC_BASE_URL", "ALLOWED_HOSTS",
                           "DEBUG", "REDIS_URL", "CACHE_URL", "CSRF_TRUSTED_ORIGINS", "DJANGO_ALLOW_ASYNC_UNSAFE")}


def run_django(code: str, env: dict) -> subprocess.CompletedProcess:
    """Python with Django set up from agentprocess.settings under exactly this environment."""
    clean = clean_environment()
    program = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'agentprocess.settings'); " \
              "django.setup(); " + code
    return subprocess.run([sys.executable, "-c", program], cwd=ROOT, env={**clean, **env}, capture_output=True,
                          text=True, timeout=60)


def test_a_deployment_refuses_to_start_without_its_own_secret_key():
    deployment = {**README_DEPLOYMENT}
    del deployment["SECRET_KEY"]
    started = run_django("print('started')", deployment)
    assert started.returncode != 0 and "started" not in started.stdout
    assert "SECRET_KEY is not set. A server published at https://process.example.com needs its own key" in started.stderr
    for weak in ("dev-only-insecure-key-change-me-0123456789abcdef", "short-key", "django-insecure-" + "x" * 60):
        started = run_django("print('started')", {**deployment, "SECRET_KEY": weak})
        assert started.returncode != 0 and "SECRET_KEY is too weak for a deployment" in started.stderr, weak


def test_the_embedded_default_makes_one_random_key_and_keeps_it_in_var():
    first = run_django("from django.conf import settings; print(settings.SECRET_KEY)", {})
    second = run_django("from django.conf import settings; print(settings.SECRET_KEY)", {})
    kept = (ROOT / "var" / "secret_key").read_text().strip()
    assert first.stdout.strip() == second.stdout.strip() == kept and len(kept) >= 64
    assert oct((ROOT / "var" / "secret_key").stat().st_mode)[-3:] == "600"
    assert "var" in (ROOT / ".gitignore").read_text().split("/")  # never committed


def test_check_deploy_is_clean_with_the_readmes_deployment_environment():
    checked = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60, env={**clean_environment(), **README_DEPLOYMENT})
    assert checked.returncode == 0, checked.stderr
    # One check is silenced on purpose: DOT's warning about http redirect URIs, which native MCP
    # clients need on loopback (RFC 8252 §7.3; agentprocess/settings.py says why).
    assert checked.stdout.strip() == "System check identified no issues (1 silenced).", checked.stdout + checked.stderr


@pytest.mark.parametrize(("migration_url", "message"), [
    ("postgres://agentprocess_owner:secret@db:5432/elsewhere",
     "MIGRATION_DATABASE_URL must name the same host, port and database as DATABASE_URL; only its role differs"),
    ("postgres://agentprocess_app:secret@db:5432/agentprocess",
     "DATABASE_URL and MIGRATION_DATABASE_URL must each name a role, two different ones: the app's, which owns "
     "nothing, and the schema's owner"),
    ("sqlite:///other.sqlite3", "MIGRATION_DATABASE_URL is for PostgreSQL"),
])
def test_a_migration_url_that_is_not_the_same_database_under_another_role_is_refused_at_start(migration_url, message):
    """README "Deploying": the owner's role migrates the app's own database, never another one."""
    started = run_django("print('started')", {**README_DEPLOYMENT, "MIGRATION_DATABASE_URL": migration_url})
    assert started.returncode != 0 and "started" not in started.stdout
    assert message in started.stderr, started.stderr


def test_hosts_default_to_the_public_base_url_never_a_wildcard():
    show = "from django.conf import settings; import json; print(json.dumps([settings.ALLOWED_HOSTS, " \
           "settings.CSRF_TRUSTED_ORIGINS, settings.SESSION_COOKIE_SECURE, settings.SECURE_HSTS_SECONDS, " \
           "list(settings.SECURE_PROXY_SSL_HEADER or [])]))"
    deployed = json.loads(run_django(show, README_DEPLOYMENT).stdout)
    assert deployed == [["process.example.com"], ["https://process.example.com"], True, 31536000,
                        ["HTTP_X_FORWARDED_PROTO", "https"]]
    embedded = json.loads(run_django(show, {"PUBLIC_BASE_URL": "http://127.0.0.1:8000"}).stdout)
    assert embedded == [["127.0.0.1", "127.0.0.1", "localhost", "::1", "[::1]"], ["http://127.0.0.1:8000"], False, 0,
                        []]


def test_on_a_deployment_mcp_refuses_a_loopback_host_as_pages_and_rest_do(transactional_db, tmp_path, agent):
    """README "Security settings": ALLOWED_HOSTS is the host of PUBLIC_BASE_URL, loopback only when
    embedded, and the REST route and MCP check the Host too. MCP used to add loopback to its list."""
    import httpx2
    from django.db import connection

    from api.hosts import UNKNOWN_HOST
    from tests.support.live import database_url, start_live_server

    deployment = {"PUBLIC_BASE_URL": README_DEPLOYMENT["PUBLIC_BASE_URL"], "SECRET_KEY": STRONG_KEY,
                  "ALLOWED_HOSTS": "process.example.com"}  # the deployment's default (test above)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "describe", "arguments": {}}}
    mcp_headers = {"Authorization": f"Bearer {agent.token}", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-11-25"}
    with start_live_server(database_url(connection.settings_dict), tmp_path, env=deployment) as server:
        def answers(host: str) -> dict:
            page = httpx2.get(f"{server.url}/accounts/login/", headers={"Host": host}, timeout=10)
            rest = httpx2.post(f"{server.url}/api/v1/tools/describe", json={}, timeout=10,
                               headers={"Host": host, "Authorization": f"Bearer {agent.token}"})
            mcp = httpx2.post(f"{server.url}/mcp", json=call, headers={**mcp_headers, "Host": host}, timeout=10)
            return {"page": page.status_code, "rest": (rest.status_code, rest.json()),
                    "mcp": (mcp.status_code, mcp.json())}

        for loopback in ("127.0.0.1", f"127.0.0.1:{server.url.rsplit(':', 1)[1]}", "localhost"):
            assert answers(loopback) == {"page": 400, "rest": (400, UNKNOWN_HOST), "mcp": (400, UNKNOWN_HOST)}, loopback
        served = answers("process.example.com")
        assert served["page"] == 301  # to https: the proxy terminates TLS
        assert served["rest"][0] == 200 and served["rest"][1]["data"]["protocol"] == "agentprocess"
        assert served["mcp"][0] == 200 and served["mcp"][1]["result"]["structuredContent"]["ok"] is True


def test_mcp_dns_rebinding_protection_is_on_by_default(settings):
    from api.mcp import transport_security

    settings.ALLOWED_HOSTS = ["process.example.com"]
    security = transport_security()
    assert security.enable_dns_rebinding_protection
    assert "process.example.com" in security.allowed_hosts and "evil.example" not in security.allowed_hosts
    assert "127.0.0.1" not in security.allowed_hosts  # loopback only when ALLOWED_HOSTS has it (embedded)


def test_the_rest_route_answers_a_foreign_host_with_an_envelope(live_server_url, agent):
    import urllib.request

    request = urllib.request.Request(f"{live_server_url}/api/v1/tools/describe", data=b"{}", method="POST",
                                     headers={"Authorization": f"Bearer {agent.token}", "Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    assert json.loads(refused.value.read()) == {"ok": False, "error": {
        "code": "invalid", "message": "this server does not answer to that host name",
        "issues": ["Host: not one of this server's ALLOWED_HOSTS"]}}


def test_password_reset_links_come_from_public_base_url_not_the_host_header(settings, make_person):
    settings.ALLOWED_HOSTS = ["*"]  # even where an admin allowed every host
    settings.PUBLIC_BASE_URL = "https://process.example.com"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    make_person("mira@example.com", password="a-long-password-1")
    response = Client().post("/accounts/password_reset/", {"email": "mira@example.com"}, HTTP_HOST="evil.example")
    assert response.status_code == 302
    (message,) = mail.outbox
    links = re.findall(r"https?://\S+", message.body)
    assert links and all(link.startswith("https://process.example.com/accounts/reset/") for link in links), links


def test_a_token_minted_for_another_agent_never_completes_a_claim_whatever_the_key(publish, make_agent):
    """check_lease compares the token's subject with the step's current holder: even a token
    signed with the server's own key, naming the right generation, is refused for another agent."""
    from tests.support.processes import SCREEN_AND_APPROVE

    publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    holder, intruder = make_agent("holder"), make_agent("intruder")
    run_id = holder.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    holder.ok("claim", runId=run_id, stepId="screen")
    state = StepState.objects.get(run_id=run_id, step_id="screen")
    forged = tokens.issue(organization_id=state.organization_id, run_id=run_id, step_id="screen",
                          generation=state.lease_gen, holder="a_intruder", expires_at=state.lease_expires_at,
                          issued_at=clock.now(), checked=False)
    refused = intruder.error("submit", token=forged, output={"cleared": True}, evidence=LINK, summary="Not mine.")
    assert refused == {"code": "forbidden", "message": "this step is claimed by another identity"}
    assert StepState.objects.get(pk=state.pk).state == "claimed"


def test_every_page_carries_a_content_security_policy_and_inline_style_needs_a_fresh_nonce(client, make_person):
    policy = client.get("/accounts/login/")["Content-Security-Policy"]
    assert policy == ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                      "object-src 'none'; base-uri 'self'; frame-ancestors 'none'")
    # The OAuth consent page is standalone, with its own <style>: allowed by that response's nonce only.
    make_person("mira@example.com", password="a-long-password-1")
    assert client.login(username="mira@example.com", password="a-long-password-1")
    pages = [client.get("/o/authorize/?response_type=code&client_id=nobody") for _ in range(2)]
    nonces = []
    for response in pages:
        nonce = re.search(r"style-src 'self' 'nonce-([^']+)'", response["Content-Security-Policy"]).group(1)
        assert f'<style nonce="{nonce}">' in response.content.decode()
        nonces.append(nonce)
    assert nonces[0] != nonces[1] and "unsafe-inline" not in pages[0]["Content-Security-Policy"]


def test_the_api_docs_load_nothing_from_a_cdn(client):
    page = client.get("/api/v1/docs/").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and all(source.startswith("/") for source in sources), sources
    assert "<script>" not in page  # no inline script: the split view serves its init script as a file
    for source in sources:
        response = client.get(source)
        assert response.status_code == 200, source


def test_process_bodies_show_remote_images_as_links():
    from processes.rendering import render_markdown

    html = str(render_markdown("![The *logo*](https://tracker.example/pixel.png)"))
    assert "<img" not in html
    assert html == '<p><a href="https://tracker.example/pixel.png" rel="noopener noreferrer nofollow">' \
                   "The <em>logo</em> (image)</a></p>\n"


def test_a_process_texts_headings_sit_under_the_pages_heading():
    """WCAG 1.3.1 / heading order (issue 16, point 3): the text's `#` sits under the page's h2."""
    from processes.rendering import render_markdown

    html = str(render_markdown("# Expense approval\n\n## Steps\n\n###### Deep", under_heading=2))
    assert html.startswith("<h3>Expense approval</h3>") and "<h4>Steps</h4>" in html and "<h6>Deep</h6>" in html
    assert str(render_markdown("# Title")).startswith("<h1>Title</h1>")  # admin shows it as written
