"""The Content-Security-Policy breaks no page (issue 13): every page people and admins use, and the
API docs (whose Swagger UI is allowed inline styles, nothing else), load in real Chromium without a
single CSP violation."""

import pytest

from tests.support.processes import SCREEN_AND_APPROVE

from .conftest import PASSWORD, sign_in

pytestmark = pytest.mark.browser


def test_no_page_violates_the_content_security_policy(server, new_page, publish, make_person, agent):
    from kernel.organizations import create_person, default_organization

    version = publish(SCREEN_AND_APPROVE, {"finance": "finance"})
    create_person(default_organization(), "root@example.com", password=PASSWORD, superuser=True, operator=True,
                  groups=["finance"])
    run_id = agent.ok("start_run", process="screen-and-approve", inputs={"vendorName": "Acme"})["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="screen")["token"]
    item = agent.ok("submit", token=token, output={"cleared": True},
                    evidence=[{"kind": "link", "ref": "https://example.com/report"}],
                    summary="Clear.")["workItems"][0]["id"]

    page = new_page()
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.add_init_script("document.addEventListener('securitypolicyviolation', e => "
                         "console.error('Content Security Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI))")
    sign_in(page, server, "root@example.com")
    seen = []
    page.on("console", lambda message: seen.append((page.url, message.text[:160]))
            if "Content Security Policy" in message.text else None)
    for path in ("/", f"/work/{item}", f"/runs/{run_id}", "/runs/", "/runs/start/", "/operators/", "/tokens/",
                 "/admin/", f"/admin/processes/processversion/{version.pk}/change/", "/admin/agentprocess/auditevent/",
                 "/api/v1/docs/", "/accounts/password_reset/"):
        response = page.goto(server + path)
        assert response.status == 200, path
        page.wait_for_load_state("networkidle")
    page.goto(server + "/api/v1/docs/")
    page.wait_for_selector(".swagger-ui .info", timeout=15000)  # Swagger UI ran, from our own files
    assert violations == [], seen
