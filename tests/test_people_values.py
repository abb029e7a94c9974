"""Values people can read (issue 16, point 2): numbers with the locale's separators and every decimal
as sent, times in the person's time zone with UTC on hover, files by name, kind and size, runs by
their business key, field keys as words.

Spec §2.3: "Numbers are JSON numbers; a server MUST NOT round them." Formatting adds separators
only; the digits are the ones sent.
"""

import datetime as dt
import re
from decimal import Decimal

import pytest

from kernel import clock
from kernel.models import PageSettings
from runs.models import WorkItem
from tests.test_inbox_views import _fresh_definitions, hidden, page, person_client
from workqueue.templatetags.workqueue_tags import filesize, pretty

SPEND = """---
name: spend-approval
description: Finance approves a spend.
inputs:
  approver: person
  vendorName: string
  amount: { type: number, description: Amount in EUR }
  lines: { type: list, items: { type: object } }
steps:
  - id: approve_spend
    person: finance
    approve: Approve the spend.
    due: 2d
  - id: done
    finish: approved
---
Spend.
"""

T0 = dt.datetime(2026, 7, 6, 9, 4, tzinfo=dt.UTC)  # summer: Berlin is UTC+2 (CEST)


@pytest.fixture
def spend(publish):
    return publish(SPEND, {"finance": "finance"})


def _start(agent, **inputs):
    base = {"approver": "fin@example.com", "vendorName": "Acme Steel GmbH", "amount": 125000,
            "lines": [{"what": "Steel", "amount": Decimal("38990.123456789012345")}, {"what": "Freight", "amount": 1200.5}]}
    view = agent.ok("start_run", process="spend-approval", inputs={**base, **inputs})
    return view["run"]["id"], view["workItems"][0]["id"]


def test_numbers_keep_every_digit_and_gain_separators():
    assert pretty(125000) == "125,000"
    assert pretty(38990.1) == "38,990.1"
    assert pretty(Decimal("123456789012345678.25")) == "123,456,789,012,345,678.25"
    assert pretty(Decimal("38990.10")) == "38,990.10"  # the trailing zero sent stays
    assert pretty(True) == "yes" and pretty("12345") == "12345"  # text is never reformatted
    assert [filesize(n) for n in (980, 12_400, 3_100_000)] == ["980 bytes", "12.4 KB", "3.1 MB"]


def test_pages_show_amounts_rows_words_and_the_business_key(spend, person_client, make_person, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    run_id, item_id = _start(agent)
    inbox = page(client, "/")
    assert re.search(r'class="item-link"[^>]*>Approve spend – Acme Steel GmbH<', inbox)
    html = page(client, f"/work/{item_id}")
    assert "<dt>Vendor name</dt><dd>Acme Steel GmbH</dd>" in html and "<dt>Amount</dt><dd>125,000</dd>" in html
    assert re.search(r'<th scope="col">What</th><th scope="col">Amount</th>.*<td>Steel</td><td>38,990.123456789012345</td>', html,
                     re.DOTALL)  # a list of objects is a table, not JSON
    run_page = page(client, f"/runs/{run_id}")
    assert re.search(r"<h1>Acme Steel GmbH <span class=\"muted\">· spend-approval</span>", run_page)
    assert f"<code>{run_id}</code>" in run_page


def test_times_follow_the_browsers_zone_then_the_persons_choice(spend, person_client, agent):
    client, fin = person_client("fin@example.com", groups=["finance"])
    with clock.frozen(T0):
        _, item_id = _start(agent)
    due = WorkItem.objects.get(pk=item_id).due_at
    assert due == T0 + dt.timedelta(days=2)

    html = page(client, "/")
    assert '<time datetime="2026-07-08T09:04:00Z" title="2026-07-08 09:04 UTC">2026-07-08 09:04 UTC</time>' in html
    client.cookies["tz"] = "Europe/Berlin"  # what the page's script sets from the browser
    html = page(client, "/")
    assert '<time datetime="2026-07-08T09:04:00Z" title="2026-07-08 09:04 UTC">2026-07-08 11:04 CEST</time>' in html
    client.cookies["tz"] = "../../etc/passwd"  # not a zone: ignored
    assert "2026-07-08 09:04 UTC</time>" in page(client, "/")

    # The person's own choice wins over the browser's, on every page from then on.
    client.cookies["tz"] = "Europe/Berlin"
    response = client.post("/settings/time-zone", {"time_zone": "America/New_York"}, follow=True)
    assert "Times are now shown in America/New_York." in response.content.decode()
    assert "2026-07-08 05:04 EDT</time>" in page(client, "/")
    assert PageSettings.objects.get(user=fin.identity.user).time_zone == "America/New_York"
    response = client.post("/settings/time-zone", {"time_zone": "Mars/Olympus"}, follow=True)
    assert "Not saved: “Mars/Olympus” is not a time zone we know." in response.content.decode()
    assert PageSettings.objects.get(user=fin.identity.user).time_zone == "America/New_York"
    html = page(client, "/settings/notifications")
    assert '<option value="America/New_York" selected>America/New_York</option>' in html


def test_file_evidence_shows_its_name_kind_and_size_with_the_hash_on_hover(publish, person_client, agent):
    from tests.test_inbox_views import VENDOR_REVIEW, _task_payload

    publish(VENDOR_REVIEW, {"reviewers": "finance"})
    client, fin = person_client("fin@example.com", groups=["finance"])
    view = fin.ok("start_run", process="vendor-review", inputs={"vendorName": "Acme"})
    item_id = view["workItems"][0]["id"]
    upload = fin.ok("upload", fileName="Q3 report.pdf", contentType="application/pdf",
                    contentBase64="JVBERi0xLjQgcmVwb3J0IG9mIDQyIGJ5dGVzLCBsb25nIGVub3VnaA==")
    fields = hidden(page(client, f"/work/{item_id}"))
    response = client.post(f"/work/{item_id}", {**fields, **_task_payload(), "attached": f"{upload['id']}|Q3 report.pdf"})
    assert response.status_code == 302
    html = page(client, f"/runs/{view['run']['id']}")
    assert re.search(rf'title="SHA-256 {upload["sha256"]}">Q3 report.pdf</a>\s*<span class="muted">\(PDF, 40 bytes\)',
                     html), html[html.find("evidence-list"):][:1200]
    assert f"<code>{upload['id']}</code>" in html  # the id stays, for support, under Details
