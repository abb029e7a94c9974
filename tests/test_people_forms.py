"""Forms built for people (issue 16, point 1): lists and objects are rows to fill in, not JSON;
labels are words; errors are sentences next to their field with the protocol's line kept for support.

Spec §2.3: "`inputs` and `output` map a field name to a type, or to an object with `type` and
optional `description`, `optional: true`, `one_of: [...]`, and `items` for lists." Numbers are
JSON numbers and are never rounded. The form only turns what a person typed into those values; the
tool applies the rules.
"""

import re
from decimal import Decimal

import pytest
from django.http import QueryDict

from kernel.errors import Issue
from kernel.models import AuditEvent, EventKind
from processes.fields import check_fields
from runs.models import Run
from tests.support.flows import LINK
from tests.test_inbox_views import _fresh_definitions, hidden, page, person_client
from workqueue.forms import DecisionForm, build_widgets, read_widgets
from workqueue.plain_issues import sentence

CLAIMS = """---
name: claim-lines
description: A person lists what they spent; finance approves.
inputs:
  employee: { type: string, description: Employee name }
steps:
  - id: list_lines
    person: staff
    task: List every expense line with what it was and the amount.
    output:
      lines: { type: list, items: { type: object } }
      codes: { type: list, items: number, optional: true }
      extra: { type: object, optional: true }
      purpose: { type: string, description: Business purpose }
    evidence: [file]
  - id: done
    finish: listed
---
Expense lines.
"""


@pytest.fixture
def claims(publish):
    return publish(CLAIMS, {"staff": "staff"})


def _item(actor):
    view = actor.ok("start_run", process="claim-lines", inputs={"employee": "Mira"})
    return view["run"]["id"], view["workItems"][0]["id"]


def _post(client, item_id, fields, status):
    response = client.post(f"/work/{item_id}", fields)
    assert response.status_code == status, response.content[:400]
    return response.content.decode()


# ---------------------------------------------------------------- without JavaScript


def test_a_list_of_objects_is_filled_row_by_row_without_javascript(claims, person_client, agent):
    client, mira = person_client("mira@example.com", groups=["staff"])
    run_id, item_id = _item(agent)
    html = page(client, f"/work/{item_id}")
    assert 'name="out.lines.ncols" value="1"' in html and 'name="out.lines.nrows" value="1"' in html
    assert 'name="out.lines.c0"' in html and 'name="out.lines.r0.c0"' in html
    assert "<legend>Lines <span" in html and '<label for="field-out_purpose">Purpose <span' in html
    assert re.search(r'id="field-out_purpose-help">Business purpose\.<', html)  # the description is help
    fields = hidden(html)

    # Name the first column, add a column and a row: each press re-renders the same form, decides nothing.
    base = {**fields, "out.lines.ncols": "1", "out.lines.nrows": "1", "out.lines.c0": "what", "out.lines.t0": "string",
            "out.lines.r0.c0": "Taxi", "out.purpose": "Client visit"}
    html = _post(client, item_id, {**base, "edit": "out.lines|add_column"}, 200)
    assert 'name="out.lines.ncols" value="2"' in html and 'value="Taxi"' in html and ">Client visit</textarea>" in html
    html = _post(client, item_id, {**base, "out.lines.ncols": "2", "out.lines.c1": "amount", "out.lines.t1": "number",
                                   "out.lines.r0.c1": "42.40", "edit": "out.lines|add_row"}, 200)
    assert 'name="out.lines.nrows" value="2"' in html and 'name="out.lines.r1.c1"' in html
    assert re.search(r'<option value="number" selected>Number</option>', html)
    assert Run.objects.get(pk=run_id).state == "waiting"
    assert not AuditEvent.objects.filter(kind=EventKind.DECIDED).exists()
    assert hidden(html)["snapshot"] == fields["snapshot"]  # the snapshot first shown stays

    # Two rows, the second moved up, then completed: typed values, every digit kept.
    upload = mira.ok("upload", fileName="taxi.pdf", contentType="application/pdf", contentBase64="JVBERg==")
    rows = {**base, "out.lines.ncols": "2", "out.lines.nrows": "2", "out.lines.c1": "amount", "out.lines.t1": "number",
            "out.lines.r0.c1": "42.40", "out.lines.r1.c0": "Hotel", "out.lines.r1.c1": "123456789012345678.25"}
    html = _post(client, item_id, {**rows, "edit": "out.lines|up|1"}, 200)
    assert html.index('value="Hotel"') < html.index('value="Taxi"')
    _post(client, item_id, {**rows, "out.lines.r0.c0": "Hotel", "out.lines.r0.c1": "123456789012345678.25",
                            "out.lines.r1.c0": "Taxi", "out.lines.r1.c1": "42.40", "decision": "completed",
                            "attached": f"{upload['id']}|taxi.pdf", "out.codes.n": "2", "out.codes.0": "7",
                            "out.codes.1": "", "out.extra.n": "1", "out.extra.k0": "costCentre",
                            "out.extra.t0": "number", "out.extra.v0": "4100"}, 302)
    output = Run.objects.get(pk=run_id).steps_data["list_lines"]["output"]
    assert output == {"lines": [{"what": "Hotel", "amount": Decimal("123456789012345678.25")},
                                {"what": "Taxi", "amount": 42.4}],
                      "codes": [7], "extra": {"costCentre": 4100}, "purpose": "Client visit"}


def test_rows_remove_and_an_empty_table_is_missing_in_plain_words(claims, person_client, agent):
    client, _ = person_client("mira@example.com", groups=["staff"])
    _, item_id = _item(agent)
    fields = hidden(page(client, f"/work/{item_id}"))
    table = {**fields, "out.lines.ncols": "1", "out.lines.nrows": "2", "out.lines.c0": "what",
             "out.lines.r0.c0": "Taxi", "out.lines.r1.c0": "Hotel"}
    html = _post(client, item_id, {**table, "edit": "out.lines|remove_row|0"}, 200)
    assert 'value="Taxi"' not in html and 'value="Hotel"' in html and 'name="out.lines.nrows" value="1"' in html
    html = _post(client, item_id, {**fields, "out.lines.ncols": "1", "out.lines.nrows": "1", "out.lines.c0": "",
                                   "out.lines.r0.c0": "", "out.purpose": "", "decision": "completed"}, 422)
    errors = re.search(r'id="field-out_lines-errors">(.*?)</ul>', html, re.DOTALL).group(1)
    assert "Fill in the lines: at least one entry." in errors and "<code>output.lines: missing</code>" in errors
    purpose = re.search(r'id="field-out_purpose-errors">(.*?)</ul>', html, re.DOTALL).group(1)
    assert "Enter the purpose." in purpose
    assert "Attach at least one file (a receipt, a report, a scan)." in html


def test_a_value_that_is_not_a_number_is_a_sentence_next_to_its_row(claims, person_client, agent):
    client, _ = person_client("mira@example.com", groups=["staff"])
    _, item_id = _item(agent)
    fields = hidden(page(client, f"/work/{item_id}"))
    html = _post(client, item_id, {**fields, "out.lines.ncols": "1", "out.lines.nrows": "1", "out.lines.c0": "what",
                                   "out.lines.r0.c0": "Taxi", "out.codes.n": "2", "out.codes.0": "7",
                                   "out.codes.1": "seven", "out.purpose": "Visit", "decision": "completed",
                                   "evidence_links": "https://example.com/r"}, 422)
    errors = re.search(r'id="field-out_codes-errors">(.*?)</ul>', html, re.DOTALL).group(1)
    assert "Enter the codes, entry 2 as a number, like 1250.50." in errors
    assert "<code>output.codes[1]: expected number</code>" in errors
    assert 'value="seven"' in html  # what was typed is kept


def test_the_columns_people_used_before_are_offered(claims, person_client, agent):
    client, _ = person_client("mira@example.com", groups=["staff"])
    _, earlier_item = _item(agent)
    fields = hidden(page(client, f"/work/{earlier_item}"))
    upload = agent.ok("upload", fileName="r.pdf", contentType="application/pdf", contentBase64="JVBERg==")
    _post(client, earlier_item, {**fields, "out.lines.ncols": "2", "out.lines.nrows": "1", "out.lines.c0": "what",
                                 "out.lines.c1": "amount", "out.lines.t1": "number", "out.lines.r0.c0": "Taxi",
                                 "out.lines.r0.c1": "12", "out.purpose": "Visit", "decision": "completed",
                                 "attached": f"{upload['id']}|r.pdf"}, 302)
    _, item_id = _item(agent)
    html = page(client, f"/work/{item_id}")
    # Known columns are headings to fill under (issue 21, point 9), not names and types to choose.
    assert '<input type="hidden" name="out.lines.c0" value="what">' in html
    assert '<input type="hidden" name="out.lines.c1" value="amount">' in html
    assert '<input type="hidden" name="out.lines.t1" value="number">' in html
    assert 'value="Taxi"' not in html and 'value="12"' not in html  # names and types only, never values


# ---------------------------------------------------------------- units


def test_widgets_read_rows_items_and_pairs_and_prefill_from_values():
    widgets = build_widgets({"lines": {"type": "list", "items": "object"}, "tags": {"type": "list", "items": "string"},
                             "details": "object"}, "x.")
    data = QueryDict(mutable=True)
    data.update({"x.lines.ncols": "2", "x.lines.nrows": "3", "x.lines.c0": "what", "x.lines.t0": "string",
                 "x.lines.c1": "paid", "x.lines.t1": "boolean", "x.lines.r0.c0": "Taxi", "x.lines.r0.c1": "yes",
                 "x.lines.r1.c0": "", "x.lines.r1.c1": "", "x.lines.r2.c0": "Lunch", "x.lines.r2.c1": "no",
                 "x.tags.n": "3", "x.tags.0": "a", "x.tags.1": " ", "x.tags.2": "b",
                 "x.details.n": "2", "x.details.k0": "country", "x.details.t0": "string", "x.details.v0": "DE",
                 "x.details.k1": "meta", "x.details.t1": "json", "x.details.v1": '{"a": [1, 2]}'})
    for widget in widgets:
        widget.fill_from_post(data)
    assert read_widgets(widgets) == {"lines": [{"what": "Taxi", "paid": True}, {"what": "Lunch", "paid": False}],
                                     "tags": ["a", "b"], "details": {"country": "DE", "meta": {"a": [1, 2]}}}
    # Counts beyond the caps are cut, never trusted.
    flood = build_widgets({"tags": {"type": "list", "items": "string"}}, "x.")[0]
    flood.fill_from_post(QueryDict("x.tags.n=999999"))
    assert len(flood.items) == 500

    form = DecisionForm(requirements={"output": {"lines": {"type": "list", "items": "object"}}}, decisions=["completed"])
    form.fill_from_candidate({"output": {"lines": [{"what": "Taxi", "amount": 42.4, "on": "2026-10-01"},
                                                   {"what": "Hotel", "amount": 120}]}})
    lines = form.widgets[0]
    assert [(c["name"], c["type"]) for c in lines.columns] == [("what", "string"), ("amount", "number"),
                                                                ("on", "date")]
    assert lines.cells == [["Taxi", "42.4", "2026-10-01"], ["Hotel", "120", ""]]
    lines.edit("remove_column", 2)  # a column the values name is known: it stays (empty cells are not sent)
    lines.edit("add_column", None)
    assert [c["fixed"] for c in lines.columns] == [True, True, True, False]
    lines.edit("remove_column", 3)  # a column the person added is theirs to remove
    lines.cells[0][2] = ""
    assert lines.cells == [["Taxi", "42.4", ""], ["Hotel", "120", ""]]
    assert read_widgets(form.widgets) == {"lines": [{"what": "Taxi", "amount": 42.4}, {"what": "Hotel", "amount": 120}]}


@pytest.mark.parametrize(("issue", "expected"), [
    (check_fields({"manager": "string"}, {}, "output")[0], "Enter the manager."),
    (check_fields({"amount": "number"}, {"amount": "x"}, "inputs")[0], "Enter the amount as a number, like 1250.50."),
    (check_fields({"reviewedOn": "date"}, {"reviewedOn": "6.10."}, "output")[0],
     "Enter the reviewed on as a date, like 2026-10-06."),
    (check_fields({"tier": {"type": "string", "one_of": ["gold", "silver"]}}, {"tier": "tin"}, "output")[0],
     "Choose the tier from the list: gold, silver."),
    (check_fields({"lines": {"type": "list", "items": "number"}}, {"lines": [1, 2, "x"]}, "output")[0],
     "Enter the lines, entry 3 as a number, like 1250.50."),
    (Issue("output.lines[2].amount", "expected number", "wrong_type", kind="number"),
     "Enter the lines, entry 3, amount as a number, like 1250.50."),
    (check_fields({}, {"extra": 1}, "output")[0], "Extra is not a field of this step; leave it out."),
    # Issue 29: fields are worded by code too: the same code with other words reads the same.
    (Issue("inputs.amount", "not a number at all", "wrong_type", kind="number"),
     "Enter the amount as a number, like 1250.50."),
    # An uncoded line (no code to go by) is shown as written, as a sentence.
    ("inputs.amount: expected number", "Inputs.amount: expected number."),
    (Issue("evidence", "file required", "evidence_missing", kind="file"),
     "Attach at least one file (a receipt, a report, a scan)."),
    (Issue("next", "required, one of accept, decline", "route_missing"), "Choose where the work goes next."),
    (Issue("reason", "required", "reason_missing"), "Say in a sentence why you chose this route."),
    (Issue("summary", "missing", "summary_missing"), "Write a short summary of what you did and found."),
    (Issue("summary", "at most 2000 characters", "too_long", limit=2000),
     "Make the summary shorter (at most 2000 characters)."),
    (Issue("evidence f_1", "not found", "file_not_found"), "A file you attached is no longer available; attach it again."),
    # Issue 29: by code, not by text: a reworded service line reads the same to a person.
    (Issue("next", "pick one of the routes", "route_missing"), "Choose where the work goes next."),
    ("run data: 5 bytes would exceed limits.runDataBytes (1)", "Run data: 5 bytes would exceed limits.runDataBytes (1)."),
])
def test_issue_lines_read_as_sentences(issue, expected):
    assert sentence(issue, {}) == expected


def test_a_person_field_missing_asks_for_an_email_address():
    widgets = {w.name: w for w in build_widgets({"manager": {"type": "person", "description": "Your manager"}}, "in.")}
    issue = check_fields({"manager": "person"}, {}, "inputs")[0]
    assert sentence(issue, widgets, "inputs") == "Enter the manager (the person's email address)."


def test_a_refused_completion_leaves_the_run_data_untouched(claims, person_client, agent):
    """Bad input changes nothing: the step's run data stays empty for the next worker (spec §3.1)."""
    client, _ = person_client("mira@example.com", groups=["staff"])
    run_id, item_id = _item(agent)
    fields = hidden(page(client, f"/work/{item_id}"))
    _post(client, item_id, {**fields, "out.lines.ncols": "1", "out.lines.nrows": "1", "out.lines.c0": "what",
                            "out.lines.r0.c0": "Taxi", "out.purpose": "Visit", "decision": "completed",
                            "evidence_links": LINK[0]["ref"]}, 422)  # a link is not the file this step needs
    view = agent.ok("get_run", runId=run_id)
    assert view["data"]["steps"].get("list_lines") in (None, {})


def test_a_cell_that_is_not_its_columns_type_is_refused_by_the_form(claims, person_client, agent):
    """Objects are untyped in the process (spec §2.3), so the server accepts any cell: the column type
    the person chose is the form's own rule, and the form refuses a cell that does not read as it."""
    client, _ = person_client("mira@example.com", groups=["staff"])
    run_id, item_id = _item(agent)
    fields = hidden(page(client, f"/work/{item_id}"))
    html = _post(client, item_id, {**fields, "out.lines.ncols": "2", "out.lines.nrows": "1", "out.lines.c0": "what",
                                   "out.lines.c1": "amount", "out.lines.t1": "number", "out.lines.r0.c0": "Taxi",
                                   "out.lines.r0.c1": "42,40", "out.purpose": "Visit", "decision": "completed",
                                   "evidence_links": "https://example.com/r"}, 422)
    assert "Lines, row 1, amount: “42,40” is not a number (write it like 1250.50)." in html
    assert "Nothing was decided." in html
    assert Run.objects.get(pk=run_id).state == "waiting"
    assert not AuditEvent.objects.filter(kind=EventKind.DECIDED).exists()
