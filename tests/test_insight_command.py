"""`manage.py process_insight NAME [--since DATE] [--format json|csv]` (issue 27, point 4: "printing
the same JSON"): the page's figures, from the same code, and a clear refusal for a process that is
not there or a date that is not one."""

import io
import json

import pytest
from django.core.management import call_command

from kernel import clock

from .test_check_profile import evaluator  # noqa: F401 (the scripted evaluator fixture)
from .test_insight_figures import EXPECTED_STEPS, history, signed_in  # noqa: F401 (the known history fixture)


def run(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("process_insight", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    return code, out.getvalue(), err.getvalue()


def test_the_command_prints_the_pages_json_and_csv(history):
    with clock.frozen(clock.now()):  # the page and the command see the same "today"
        code, out, err = run("checked-vendor", "--since", "2026-10-01")
        page = signed_in("ops@example.com").get("/insight/checked-vendor/", {"format": "json", "from": "2026-10-01"})
        assert (code, err) == (0, "")
        assert json.loads(out) == page.json()
        assert json.loads(out)["steps"] == EXPECTED_STEPS
        code, out, err = run("checked-vendor", "--since", "2026-10-01", "--format", "csv")
        page = signed_in("ops@example.com").get("/insight/checked-vendor/", {"format": "csv", "from": "2026-10-01"})
        assert (code, err) == (0, "")
        assert out == page.content.decode()
        # Without --since: the page's default, the last 30 days.
        code, out, _err = run("checked-vendor")
        assert json.loads(out) == signed_in("ops@example.com").get("/insight/checked-vendor/",
                                                                    {"format": "json"}).json()


@pytest.mark.parametrize("args, issue", [
    (("no-such-process",), "no-such-process: no such published process"),
    (("checked-vendor", "--since", "5 October"), "--since: not a date (YYYY-MM-DD)"),
    (("checked-vendor", "--since", "2030-01-01"), "--since: after today"),
    (("checked-vendor", "--org", "nowhere"), "--org nowhere: no such organization"),
])
def test_the_command_refuses_what_it_cannot_answer(history, args, issue):
    assert run(*args) == (1, "", issue + "\n")


def test_the_command_refuses_an_unknown_format(history):
    with pytest.raises(Exception, match="invalid choice: 'xml'"):
        call_command("process_insight", "checked-vendor", "--format", "xml")
