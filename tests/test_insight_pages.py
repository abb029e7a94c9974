"""Process insight's pages (issue 27, point 2): the list with a sparkline per process, the
dashboard in plain words, who may open them (operators and the people a process's roles name;
everyone else a 404, page and JSON alike), and people's names only of the viewer's own groups."""

import re

from .test_check_profile import evaluator  # noqa: F401 (the scripted evaluator fixture)
from .test_insight_figures import PASSWORD, history, signed_in  # noqa: F401 (the known history fixture)


def test_the_list_shows_each_process_with_a_sparkline(history, publish):
    publish("---\nname: other-process\ndescription: Another.\nsteps:\n  - id: work\n    agent: Do it.\n"
            "    next: done\n  - id: done\n    finish: done\n---\nOther.\n")
    page = signed_in("ops@example.com").get("/insight/").content.decode()
    assert page.index("checked-vendor") < page.index("other-process")
    card = page.split('href="/insight/checked-vendor/"')[1].split("</li>")[0]
    assert "5 runs started in the last 30 days" in card  # live runs only: the two test runs are not counted
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart sparkline" role="img"' in card
    assert "checked-vendor: 5 runs started in 30 days" in card
    # A person of finance takes part in checked-vendor only (other-process names no group of theirs).
    page = signed_in("fin2@example.com").get("/insight/").content.decode()
    assert "checked-vendor" in page and "other-process" not in page


def test_the_dashboard_in_plain_words(history):
    r1, r2, r3, _r4, _r5 = history["runs"]
    response = signed_in("ops@example.com").get("/insight/checked-vendor/", {"period": "7"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "<strong>5</strong> started · <strong>3</strong> finished · <strong>1</strong> cancelled" in page
    row = page.split('<tr data-step="approve">')[1].split("</tr>")[0]
    assert re.sub(r"\s+", " ", row).count("1 h · 2 d 2 h") == 1  # waited: median 1 h, p90 50 h
    assert "2 (40 %)" in row and "1 (20 %)" in row
    check_row = page.split('<tr data-step="check_vendor">')[1].split("</tr>")[0]
    assert "3 · 1 · 0" in check_row  # the check: pass · unsure · fail
    assert "Half took at most <strong>8 h</strong>, nine in ten at most <strong>2 d 5 h</strong>" in page
    slowest = page.split("<h3>The slowest runs</h3>")[1]
    assert slowest.index(f'href="/runs/{r3}"') < slowest.index(f'href="/runs/{r2}"') < slowest.index(f'href="/runs/{r1}"')
    heat = page.split('class="map"')[1].split("</figure>")[0]
    assert 'class="node kind-agent heat-4"' in heat and "1 h</text>" in heat
    assert 'href="/insight/checked-vendor/?period=7&amp;by=day&amp;format=csv"' in page
    assert "ops@example.com" in page and "fin@example.com" in page and "a_screener" in page


def test_people_see_names_of_their_own_groups_only_on_the_page(history):
    page = signed_in("fin2@example.com").get("/insight/checked-vendor/", {"period": "7"}).content.decode()
    who = page.split('id="h-who"')[1].split("</section>")[0]
    assert "fin@example.com" in who and "ops@example.com" not in who
    assert "People outside your groups" in who


def test_a_person_of_another_process_gets_404_everywhere(history, make_person):
    make_person("legal@example.com", groups=["legal"], password=PASSWORD)
    client = signed_in("legal@example.com")
    for params in ({}, {"format": "json"}, {"format": "csv"}, {"heat": "work"}):
        assert client.get("/insight/checked-vendor/", params).status_code == 404
    assert "checked-vendor" not in client.get("/insight/").content.decode()


def test_bad_filters_on_the_page_say_what_is_wrong(history):
    response = signed_in("ops@example.com").get("/insight/checked-vendor/", {"from": "yesterday"})
    assert response.status_code == 400
    assert "from: not a date (YYYY-MM-DD)" in response.content.decode()


def test_signed_out_people_are_sent_to_sign_in(db):
    from django.test import Client

    response = Client().get("/insight/checked-vendor/", {"format": "json"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_an_operator_sets_and_removes_an_alert_on_the_dashboard(history):
    from insight.models import AlertRule
    from kernel.models import AuditEvent

    client = signed_in("ops@example.com")
    refused = client.post("/insight/checked-vendor/alerts", {"figure": "median_wait", "step": "", "threshold": "x",
                                                             "days": "7"}, follow=True)
    assert "The alert was not set: step: required for this figure; threshold: a number, 0 or more" in \
        refused.content.decode()
    assert not AlertRule.objects.exists()
    response = client.post("/insight/checked-vendor/alerts", {"figure": "median_wait", "step": "approve",
                                                              "threshold": "1,5", "days": "30"})
    assert response.status_code == 302 and response["Location"] == "/insight/checked-vendor/#h-alerts"
    rule = AlertRule.objects.get()
    assert (rule.figure, rule.step_id, rule.threshold, rule.days, rule.created_by) == (
        "median_wait", "approve", 5400.0, 30, "ops@example.com")
    client.post("/insight/checked-vendor/alerts", {"figure": "rework_rate", "step": "approve", "threshold": "25",
                                                   "days": "7"})
    assert AlertRule.objects.get(figure="rework_rate").threshold == 0.25
    page = client.get("/insight/checked-vendor/").content.decode()
    section = page.split('id="h-alerts"')[1].split("</section>")[0]
    assert "Median wait in approve above 1 h 30 min over 30 days. Now: not checked yet" in section
    assert "Rework rate in approve above 25 % over 7 days" in section
    # A person of the process sees the rules but may not set or remove one.
    fin = signed_in("fin2@example.com")
    section = fin.get("/insight/checked-vendor/").content.decode().split('id="h-alerts"')[1]
    assert "Median wait in approve above 1 h 30 min" in section and "Set the alert" not in section
    assert fin.post("/insight/checked-vendor/alerts", {"figure": "overdue", "threshold": "1",
                                                       "days": "7"}).status_code == 403
    assert fin.post(f"/insight/checked-vendor/alerts/{rule.pk}/remove").status_code == 403
    assert client.post(f"/insight/checked-vendor/alerts/{rule.pk}/remove").status_code == 302
    assert list(AlertRule.objects.values_list("figure", flat=True)) == ["rework_rate"]
    assert list(AuditEvent.objects.filter(kind__startswith="alert_rule").order_by("id").values_list("kind", flat=True)) == [
        "alert_rule_set", "alert_rule_set", "alert_rule_removed"]
    assert client.get("/insight/checked-vendor/alerts").status_code == 405
