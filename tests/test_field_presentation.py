"""How fields are shown to finance and operations staff (issue 21, points 7, 8 and 9).

7. A number field can be an amount in a currency, declared in admin beside the published version
   (the PROCESS.md format does not change, and a published version never changes: spec §6 rule 5,
   "the content hash covers the file only"); pages show "USD 12,500.50", exports keep the number.
8. A run has one name (its business key) and a field one label on every page.
9. A list of objects starts with the columns admin declared, else those earlier runs used, so a
   clerk fills rows rather than designing a schema.

Spec §2.3: "Numbers are JSON numbers; a server MUST NOT round them." Showing an amount with its
currency's decimals pads; it never drops a digit that was sent.
"""

import csv
import io
import re
from decimal import Decimal

import pytest
from django.urls import reverse

from kernel.models import AuditEvent
from processes.models import ProcessVersion
from runs.models import Run
from tests.test_inbox_views import _fresh_definitions, hidden, page, person_client  # noqa: F401

NBSP = "\u00a0"

TRAVEL = """---
name: travel-claim
description: Staff claim travel; an agent checks the policy, finance records the lines.
inputs:
  manager: person
  policy: { type: string, description: Which travel policy applies }
  amount: { type: number, description: Expected annual spend in USD }
steps:
  - id: check_policy
    agent: Check the claim against the travel policy.
  - id: record_lines
    person: finance
    task: Enter every line of the claim and its total.
    output:
      lines: { type: list, items: { type: object } }
      total: { type: number, description: Total of the lines }
  - id: done
    finish: recorded
---
Travel claims.
"""

INPUTS = {"manager": "manager@example.com", "policy": "travel", "amount": 12500.5}


@pytest.fixture
def travel(publish):
    return publish(TRAVEL, {"finance": "finance"})


def fields_url(version) -> str:
    return reverse("admin:processes_processversion_fields", args=[version.pk])


def declare(admin_client, version, data: dict, status=302):
    """Post the version's "How fields are shown" page with these values (every other field empty)."""
    response = admin_client.post(fields_url(version), data)
    assert response.status_code == status, response.content.decode()[:2000]
    return response


def at_record_lines(agent, **inputs):
    view = agent.ok("start_run", process="travel-claim", inputs={**INPUTS, **inputs})
    run_id = view["run"]["id"]
    token = agent.ok("claim", runId=run_id, stepId="check_policy")["token"]
    view = agent.ok("submit", token=token, output={}, summary="Within policy.")
    item = next(item for item in view["workItems"] if item["stepId"] == "record_lines")
    return run_id, item["id"]


def escalated(agent):
    view = agent.ok("start_run", process="travel-claim", inputs=INPUTS)
    token = agent.ok("claim", runId=view["run"]["id"], stepId="check_policy")["token"]
    view = agent.ok("escalate", token=token, note="The policy page is down.")
    return view["run"]["id"], view["workItems"][0]["id"]


# ---------------------------------------------------------------- point 7: money


def test_amounts_read_with_their_currency_and_never_lose_a_digit():
    from workqueue.presenting import money

    assert money(12500.5, "USD", 2) == f"USD{NBSP}12,500.50"
    assert money(12500, "USD", 2) == f"USD{NBSP}12,500.00"
    assert money(125000, "JPY", 0) == f"JPY{NBSP}125,000"
    assert money(Decimal("1.2345"), "KWD", 3) == f"KWD{NBSP}1.2345"  # more decimals than KWD's three: all shown
    assert money(Decimal("38990.123456789012345"), "EUR", 2) == f"EUR{NBSP}38,990.123456789012345"
    assert money(-1250.5, "EUR", 2) == f"EUR{NBSP}-1,250.50"
    assert money(Decimal("1E+3"), "USD", 2) == f"USD{NBSP}1,000.00"
    assert money(10**20, "USD", 0) == f"USD{NBSP}100,000,000,000,000,000,000"


def test_a_currency_brings_its_decimals_and_only_known_codes_and_number_fields_take_one():
    from processes.currencies import decimals_of
    from processes.presentation import Column, FieldFacts, facts_issues

    assert (decimals_of("USD"), decimals_of("EUR"), decimals_of("JPY"), decimals_of("BHD")) == (2, 2, 0, 3)
    assert FieldFacts(currency="JPY").places == 0 and FieldFacts(currency="USD", decimals=4).places == 4
    number, text = {"type": "number"}, {"type": "string"}
    lines = {"type": "list", "items": {"type": "object"}}
    assert facts_issues(number, FieldFacts(currency="USD")) == []
    assert facts_issues(number, FieldFacts(currency="usd")) == [
        'currency: "usd" is not an ISO 4217 currency code (like USD, EUR, JPY)']
    assert facts_issues(text, FieldFacts(currency="USD")) == [
        "currency: only a number field is an amount in a currency"]
    assert facts_issues(number, FieldFacts(decimals=2)) == ["decimals: only an amount in a currency has decimals"]
    assert facts_issues(number, FieldFacts(currency="USD", decimals=9)) == ["decimals: a whole number from 0 to 8"]
    assert facts_issues(number, FieldFacts(columns=(Column("a", "A", "string"),))) == [
        "columns: only a list of objects has columns"]
    assert facts_issues(lines, FieldFacts(columns=(
        Column("what", "What", "string"), Column("", "Amount", "number"), Column("what", "Again", "json"),
        Column("paid", "Paid", "boolean", "USD")))) == [
        "columns, line 2: a name is needed",
        'columns, line 3: "what" is named twice',
        'columns, line 3: type "json" is not one of text, number, yes or no, date',
        "columns, line 4: only a number column has a currency"]


def test_admin_declares_an_amount_beside_the_version_audited_and_the_file_unchanged(admin_client, travel):
    version_page = admin_client.get(reverse("admin:processes_processversion_change", args=[travel.pk])).content.decode()
    assert f'href="{fields_url(travel)}"' in version_page
    form = admin_client.get(fields_url(travel)).content.decode()
    assert "inputs.amount" in form and "steps.record_lines.output.total" in form
    assert 'name="inputs.amount-currency"' in form and 'name="inputs.policy-currency"' not in form
    assert 'name="steps.record_lines.output.lines-columns"' in form

    before = (travel.content_hash, travel.source)
    declare(admin_client, travel, {"inputs.amount-currency": "USD", "steps.record_lines.output.total-currency": "USD",
                                   "inputs.amount-label": "Annual spend"})
    travel = ProcessVersion.objects.get(pk=travel.pk)
    assert (travel.content_hash, travel.source) == before  # the published version did not change
    facts = {row.path: (row.label, row.currency, row.decimals) for row in travel.field_presentations.all()}
    assert facts == {"inputs.amount": ("Annual spend", "USD", None),
                     "steps.record_lines.output.total": ("", "USD", None)}
    event = AuditEvent.objects.filter(kind="field_presentation").order_by("id").first()
    assert event.actor_kind == "admin" and event.organization_id == travel.process.organization_id
    assert event.data == {"process": "travel-claim", "version": 1, "path": "inputs.amount", "before": None,
                          "after": {"label": "Annual spend", "currency": "USD", "decimals": None, "columns": []}}
    assert "USD" in admin_client.get(reverse("admin:processes_processversion_change", args=[travel.pk])).content.decode()


def test_admin_refuses_a_wrong_currency_and_saves_nothing_of_the_page(admin_client, travel):
    response = declare(admin_client, travel, {"inputs.amount-currency": "DOLLARS",
                                              "steps.record_lines.output.total-currency": "USD"}, status=200)
    text = response.content.decode()
    assert "“DOLLARS” is not an ISO 4217 currency code (like USD, EUR, JPY)" in text.replace("&quot;", "“", 1).replace(
        "&quot;", "”", 1) or "&quot;DOLLARS&quot; is not an ISO 4217 currency code" in text
    assert not travel.field_presentations.exists()
    assert not AuditEvent.objects.filter(kind="field_presentation").exists()


def test_pages_show_the_amount_in_its_currency_and_exports_keep_the_number(admin_client, travel, person_client, agent):
    declare(admin_client, travel, {"inputs.amount-currency": "USD", "steps.record_lines.output.total-currency": "USD"})
    client, _ = person_client("fin@example.com", groups=["finance"])
    ops, _ = person_client("ops@example.com", operator=True)
    run_id, item_id = at_record_lines(agent)
    shown = f"USD{NBSP}12,500.50"

    inbox = page(client, "/")
    assert f"<dt>Amount</dt><dd>{shown}</dd>" in inbox
    work = page(client, f"/work/{item_id}")
    assert f"<dt>Amount</dt><dd>{shown}</dd>" in work
    # The form's amount says its currency beside the box, and to screen readers.
    total = re.search(r'<div class="field[^"]*" data-field="total">(.*?)</div>\s*</div>', work, re.DOTALL).group(1)
    assert re.search(r'<input type="number" id="field-out_total"[^>]*aria-describedby="field-out_total-unit ', total)
    assert '<span class="unit" id="field-out_total-unit">USD</span>' in total

    response = client.post(f"/work/{item_id}", {**hidden(work), "decision": "completed", "out.total": "980.1",
                                                "out.lines.ncols": "1", "out.lines.nrows": "1", "out.lines.c0": "what",
                                                "out.lines.r0.c0": "Train"})
    assert response.status_code == 302, response.content.decode()[:800]
    assert Run.objects.get(pk=run_id).steps_data["record_lines"]["output"]["total"] == 980.1  # the number as typed
    run_page = page(client, f"/runs/{run_id}")
    assert f"<dt>Amount</dt><dd>{shown}</dd>" in run_page and f"<dt>Total</dt><dd>USD{NBSP}980.10</dd>" in run_page
    listing = page(client, f"/runs/?process=travel-claim")
    assert f"<dt>Amount</dt><dd>{shown}</dd>" in listing

    # Exports and the protocol keep the raw values: the audit log records the declaration as data,
    # never a formatted amount; agents read the number as it was sent.
    export = ops.get("/audit/export?format=csv").getvalue().decode()
    declared = next(row for row in csv.DictReader(io.StringIO(export)) if row["kind"] == "field_presentation")
    assert '"currency":"USD"' in declared["data"].replace(" ", "") and "12,500" not in export
    data = agent.ok("get_run", runId=run_id)["data"]
    assert data["inputs"]["amount"] == 12500.5 and data["steps"]["record_lines"]["output"]["total"] == 980.1


def test_the_facts_carry_over_to_the_next_version_while_the_field_keeps_its_type(admin_client, travel, publish):
    declare(admin_client, travel, {"inputs.amount-currency": "EUR", "inputs.policy-label": "Travel policy",
                                   "steps.record_lines.output.lines-columns": "what | What | text"})
    second = publish(TRAVEL + "\nRevised.\n", {"finance": "finance"})
    assert second.number == 2
    assert {row.path: row.currency or row.label for row in second.field_presentations.all()} == {
        "inputs.amount": "EUR", "inputs.policy": "Travel policy", "steps.record_lines.output.lines": ""}
    # amount becomes text and lines goes away: only the policy's label is carried on.
    changed = TRAVEL.replace("amount: { type: number,", "amount: { type: string,").replace(
        "      lines: { type: list, items: { type: object } }\n", "")
    third = publish(changed, {"finance": "finance"})
    assert [row.path for row in third.field_presentations.all()] == ["inputs.policy"]


# ---------------------------------------------------------------- point 8: one name, one label


def test_a_run_has_one_name_on_every_page(travel, person_client, agent):
    client, _ = person_client("ops@example.com", operator=True, groups=["finance"])
    run_id, item_id = escalated(agent)
    name = "Check policy – travel"  # the first text input; the manager's address is a person, not a name

    inbox = page(client, "/")
    assert re.search(rf'class="item-link"[^>]*>{name}<', inbox)
    operators = page(client, "/operators/")
    assert f">{name}<" in operators and "manager@example.com" not in operators
    assert f"travel · travel-claim v1 · run {run_id}" in page(client, f"/work/{item_id}")
    assert re.search(r'<h1>travel <span class="muted">· travel-claim</span>', page(client, f"/runs/{run_id}"))
    listing = page(client, "/runs/")
    assert re.search(rf'<a href="/runs/{run_id}">travel</a>', listing)

    snapshot = re.search(rf'name="snapshot.{item_id}" value="([^"]+)"', operators).group(1)
    result = client.post("/work/bulk", {"items": [item_id], f"snapshot.{item_id}": snapshot, "decision": "returned",
                                        "note": "Try again tomorrow.", "back_url": "/operators/"})
    html = result.content.decode()
    assert re.search(rf'<a href="/work/{item_id}">{name}</a>', html), html[html.find("<tbody>"):][:600]
    assert "manager@example.com" not in html


def test_business_key_and_labels_come_from_one_place():
    from processes.presentation import FieldFacts, field_label, human_key
    from workqueue.presenting import business_key, item_name

    declared = {"manager": "person", "policy": {"type": "string"}}
    assert business_key({"manager": "m@example.com", "policy": " travel "}, declared) == "travel"
    assert business_key({"manager": "m@example.com"}, declared) == ""
    assert business_key({"policy": "x" * 200}, declared) == "x" * 79 + "…"
    assert item_name("check_policy", "travel") == "Check policy – travel" and item_name("check_policy", "") == "Check policy"
    assert human_key("expectedAnnual_spend") == "Expected annual spend"
    assert field_label("amount") == "Amount" and field_label("amount", FieldFacts(label="Annual spend")) == "Annual spend"


def test_a_field_has_one_label_on_every_page_and_its_description_is_help(admin_client, travel, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    run_id, item_id = at_record_lines(agent)

    start = page(client, "/runs/start/?process=travel-claim")
    assert '<label for="field-in_amount">Amount <span' in start
    assert re.search(r'id="field-in_amount-help">Expected annual spend in USD\. ', start)
    assert "<dt>Amount</dt>" in page(client, f"/work/{item_id}") and "<dt>Amount</dt>" in page(client, f"/runs/{run_id}")
    assert '<label for="f-inputamountmin">Amount (at least)</label>' in page(client, "/?process=travel-claim")
    assert re.search(r'<label for="runs-input-3">Amount</label>', page(client, "/runs/?process=travel-claim"))
    assert '<label for="field-out_total">Total <span' in page(client, f"/work/{item_id}")

    # Admin's label is the field's label everywhere, the sentences of mistakes included.
    declare(admin_client, travel, {"inputs.amount-label": "Annual spend"})
    assert '<label for="field-in_amount">Annual spend <span' in page(client, "/runs/start/?process=travel-claim")
    for url in (f"/work/{item_id}", f"/runs/{run_id}", "/", "/runs/?process=travel-claim"):
        html = page(client, url)
        assert "<dt>Annual spend</dt>" in html and "<dt>Amount</dt>" not in html, url
    assert '<label for="f-inputamountmin">Annual spend (at least)</label>' in page(client, "/?process=travel-claim")
    refused = client.post("/runs/start/", {"process": "travel-claim", "in.manager": "manager@example.com",
                                     "in.policy": "travel", "in.amount": ""})
    assert "Enter the annual spend." in refused.content.decode()


# ---------------------------------------------------------------- point 9: columns a clerk fills


def test_a_table_starts_with_the_columns_earlier_runs_used_as_headers_not_a_schema(travel, person_client, agent):
    client, _ = person_client("fin@example.com", groups=["finance"])
    _, earlier = at_record_lines(agent)
    work = page(client, f"/work/{earlier}")
    assert 'name="out.lines.c0" value=""' in work  # nothing known yet: the clerk names the first column
    assert client.post(f"/work/{earlier}", {
        **hidden(work), "decision": "completed", "out.total": "12", "out.lines.ncols": "2", "out.lines.nrows": "1",
        "out.lines.c0": "what", "out.lines.t0": "string", "out.lines.c1": "amount", "out.lines.t1": "number",
        "out.lines.r0.c0": "Taxi", "out.lines.r0.c1": "12"}).status_code == 302

    run_id, item_id = at_record_lines(agent)
    work = page(client, f"/work/{item_id}")
    editor = re.search(r'<table class="row-editor">(.*?)</table>', work, re.DOTALL).group(1)
    headers = re.findall(r'<th scope="col"[^>]*>\s*<span class="column-label">([^<]*)</span>', editor)
    assert headers == ["What", "Amount"]
    assert 'type="text" id="field-out_lines-c0"' not in editor and "Column 1 name" not in editor  # no schema to design
    assert '<input type="hidden" name="out.lines.c1" value="amount">' in editor
    assert re.search(r'<input type="text" inputmode="decimal" id="field-out_lines-r0-c1"', editor)
    assert ">JSON<" not in work and 'value="Taxi"' not in work  # names and types only, never values
    assert 'value="out.lines|add_column"' in work  # nothing declared: the clerk may still add one

    response = client.post(f"/work/{item_id}", {
        **hidden(work), "decision": "completed", "out.total": "30", "out.lines.ncols": "2", "out.lines.nrows": "1",
        "out.lines.c0": "what", "out.lines.t0": "string", "out.lines.f0": "1", "out.lines.c1": "amount",
        "out.lines.t1": "number", "out.lines.f1": "1", "out.lines.r0.c0": "Hotel", "out.lines.r0.c1": "30.5"})
    assert response.status_code == 302
    assert Run.objects.get(pk=run_id).steps_data["record_lines"]["output"]["lines"] == [{"what": "Hotel", "amount": 30.5}]


def test_admin_declared_columns_are_the_table_with_their_currency(admin_client, travel, person_client, agent):
    declare(admin_client, travel, {"steps.record_lines.output.lines-columns":
                                   "what | What it was | text\namount | Amount | number | EUR\nbooked | Booked on | date"})
    client, _ = person_client("fin@example.com", groups=["finance"])
    run_id, item_id = at_record_lines(agent)
    work = page(client, f"/work/{item_id}")
    editor = re.search(r'<table class="row-editor">(.*?)</table>', work, re.DOTALL).group(1)
    assert re.findall(r'<span class="column-label">([^<]*)</span>', editor) == ["What it was", "Amount", "Booked on"]
    assert '<span class="unit">EUR</span>' in editor
    assert re.search(r'<input type="date" id="field-out_lines-r0-c2"', editor)
    assert 'value="out.lines|add_column"' not in work  # declared: nothing to design

    fields = {**hidden(work), "out.total": "80", "out.lines.ncols": "3", "out.lines.nrows": "1",
              "out.lines.r0.c0": "Train", "out.lines.r0.c1": "79.90", "out.lines.r0.c2": "2026-10-06"}
    for index, (name, kind) in enumerate((("what", "string"), ("amount", "number"), ("booked", "date"))):
        fields.update({f"out.lines.c{index}": name, f"out.lines.t{index}": kind, f"out.lines.f{index}": "1"})
    again = client.post(f"/work/{item_id}", {**fields, "edit": "out.lines|add_row"}).content.decode()
    assert re.findall(r'<span class="column-label">([^<]*)</span>', again) == ["What it was", "Amount", "Booked on"]
    assert 'name="out.lines.r1.c2"' in again and 'value="79.90"' in again
    assert client.post(f"/work/{item_id}", {**fields, "decision": "completed"}).status_code == 302
    output = Run.objects.get(pk=run_id).steps_data["record_lines"]["output"]
    assert output["lines"] == [{"what": "Train", "amount": 79.9, "booked": "2026-10-06"}]
    run_page = page(client, f"/runs/{run_id}")
    assert re.search(rf'<th scope="col">What it was</th><th scope="col">Amount</th><th scope="col">Booked on</th>'
                     rf'</tr></thead><tbody><tr><td>Train</td><td>EUR{NBSP}79.90</td><td>2026-10-06</td>', run_page)


def test_the_start_form_offers_the_columns_earlier_runs_were_started_with(publish, person_client, agent):
    from tests.test_people_values import SPEND

    publish(SPEND, {"finance": "finance"})
    client, _ = person_client("fin@example.com", groups=["finance"])
    agent.ok("start_run", process="spend-approval", inputs={
        "approver": "fin@example.com", "vendorName": "Acme", "amount": 1,
        "lines": [{"what": "Steel", "amount": 38990.1}]})
    form = page(client, "/runs/start/?process=spend-approval")
    editor = re.search(r'<table class="row-editor">(.*?)</table>', form, re.DOTALL).group(1)
    assert re.findall(r'<span class="column-label">([^<]*)</span>', editor) == ["What", "Amount"]
    assert "Column 1 name" not in editor and 'value="Steel"' not in form

    # A cell that is not its column's type is refused by the form: nothing is started.
    fields = {"process": "spend-approval", "in.approver": "fin@example.com", "in.vendorName": "Beta",
              "in.amount": "2", "in.lines.ncols": "2", "in.lines.nrows": "1", "in.lines.c0": "what",
              "in.lines.t0": "string", "in.lines.f0": "1", "in.lines.c1": "amount", "in.lines.t1": "number",
              "in.lines.f1": "1", "in.lines.r0.c0": "Bolts"}
    refused = client.post("/runs/start/", {**fields, "in.lines.r0.c1": "twelve"})
    assert refused.status_code == 422
    assert "Lines, row 1, amount: “twelve” is not a number (write it like 1250.50)." in refused.content.decode()
    assert Run.objects.count() == 1
    assert client.post("/runs/start/", {**fields, "in.lines.r0.c1": "12.5"}).status_code == 302
    assert Run.objects.order_by("-started_at").first().inputs["lines"] == [{"what": "Bolts", "amount": 12.5}]
