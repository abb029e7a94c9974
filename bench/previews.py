"""Evidence previews: time until the first page of a 50-page PDF is on screen (issue 26, point 4).

    .venv/bin/python bench/previews.py [--pages 50] [--loads 10]

The embedded set-up (one uvicorn worker on loopback, PostgreSQL beside it, FILE_STORAGE=local):
an approval whose agent step carries a 50-page PDF (fpdf2). Chromium signs in and opens the work
item `--loads` times; each load's figure is Chromium's own clock on the work item page
(performance.now(), from the navigation's start) when the viewer in its sandboxed frame reports its
first page drawn (canvas and text layer). Printed: every load and the median. The first load fills
the server's preview cache and Chromium's cache of PDF.js, as a person's first item of the day does.
"""

import base64
import statistics
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402

PASSWORD = "bench-pass-2026"
PROCESS = """---
name: bench-invoice
description: An agent reads an invoice; finance approves.
inputs:
  vendorName: string
steps:
  - id: extract
    agent: Read the invoice.
    output: { total: number }
    evidence: [file]
  - id: approve
    person: finance
    approve: Approve when the total matches.
  - id: done
    finish: paid
---
"""


def item_with_pdf(pages: int) -> str:
    from api.tools import call_tool
    from kernel.identity import identity_from_bearer
    from kernel.organizations import create_agent, create_person, default_organization
    from processes.publishing import bind_roles, import_draft, publish
    from tests.support import evidence_files

    organization = default_organization()
    draft = import_draft(organization=organization, source=PROCESS, folder_name=None)
    bind_roles(draft=draft, bindings={"finance": "finance"})
    publish(draft=draft)
    create_person(organization, "ap@example.com", groups=["finance"], password=PASSWORD)
    _agent, token = create_agent(organization, "reader")
    agent = identity_from_bearer(token)

    def ok(tool, **arguments):
        envelope = call_tool(agent, tool, {"requestId": str(uuid.uuid4()), **arguments})
        if not envelope["ok"]:
            raise SystemExit(f"{tool}: {envelope['error']}")
        return envelope["data"]

    run_id = ok("start_run", process="bench-invoice", inputs={"vendorName": "Acme"})["run"]["id"]
    data = evidence_files.pdf(filler_pages=pages - len(evidence_files.PAGE_TEXTS))
    ref = ok("upload", fileName="invoice.pdf", contentType="application/pdf",
             contentBase64=base64.b64encode(data).decode())["id"]
    token = ok("claim", runId=run_id, stepId="extract")["token"]
    view = ok("submit", token=token, output={"total": 1}, summary="Read.", evidence=[{"kind": "file", "ref": ref}])
    return view["workItems"][0]["id"]


def main(argv=None) -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--loads", type=int, default=10)
    args = parser.parse_args(argv)
    port = common.free_port()
    base = f"http://127.0.0.1:{port}"
    extra = {"PUBLIC_BASE_URL": base, "FILE_STORAGE": "local"}
    with common.bench_database(extra):
        from django.db import connections

        item = item_with_pdf(args.pages)
        connections.close_all()
        server = common.start_server(workers=1, env=common.server_env(extra), log_name="previews", port=port)
        try:
            figures = measure(base, item, args.loads)
        finally:
            server.stop()
    for number, value in enumerate(figures, start=1):
        print(f"load {number}: first page on screen after {value:.0f} ms")
    print(f"previews: {args.pages}-page PDF, first page on screen, median of {len(figures)}: "
          f"{statistics.median(figures):.0f} ms (target < 1000 ms)")


def measure(base: str, item: str, loads: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    figures = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                             args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.goto(f"{base}/accounts/login/")
        page.get_by_label("Email or username").fill("ap@example.com")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{base}/")
        for _ in range(loads):
            page.goto(f"{base}/work/{item}")
            shown = page.locator("[data-pdf-shown-at]")
            shown.wait_for(state="attached", timeout=30_000)
            figures.append(float(shown.get_attribute("data-pdf-shown-at")))
        browser.close()
    return figures


if __name__ == "__main__":
    main()
