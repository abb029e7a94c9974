"""The dashboard's transport (issue 27): /insight/ and /insight/<process name>/, as a page, or its
figures as JSON (?format=json) or CSV (?format=csv) with the same filters. A process the person
takes no part in is answered 404 on every format, like one that does not exist."""

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from kernel import clock
from kernel.errors import ToolError
from workqueue.views.plumbing import person_view, problem

from . import alerts, figures, formats, pages
from .filters import BadFilter, parse


def _scope(request, identity, name):
    filters = parse(request.GET, clock.now())
    scope = figures.scope_for(identity, name, filters)
    if scope is None:
        raise Http404("no such process")
    return scope


@person_view
def index(request, identity):
    return pages.index_page(request, identity)


@person_view
def dashboard(request, identity, name: str):
    fmt = request.GET.get("format", "html")
    if fmt not in ("html", "json", "csv"):
        return JsonResponse({"ok": False, "issues": ["format: html, json or csv"]}, status=400)
    try:
        scope = _scope(request, identity, name)
    except BadFilter as bad:
        if fmt == "html":
            return pages.bad_filters(request, identity, name, bad.issues)
        return JsonResponse({"ok": False, "issues": bad.issues}, status=400)
    data = figures.dashboard(scope)
    if fmt in formats.TYPES:  # the same text as manage.py process_insight prints
        response = HttpResponse(formats.render(data, fmt), content_type=formats.TYPES[fmt])
        if fmt == "csv":
            response["Content-Disposition"] = f'attachment; filename="insight-{scope.process.name}.csv"'
        return response
    return pages.dashboard_page(request, identity, scope, data)


def _threshold(figure: str, text: str):
    """The form's threshold in the figure's unit: hours for a time, per cent for a rate."""
    try:
        number = float(text.replace(",", "."))
    except ValueError:
        return text  # refused by the rule's own check, with the rest
    if number != number or number in (float("inf"), float("-inf")):
        return text
    unit = alerts.FIGURES[figure].unit if figure in alerts.FIGURES else "count"
    return number * 3600 if unit == "seconds" else number / 100 if unit == "rate" else number


@require_POST
@person_view
def set_alert(request, identity, name: str):
    figure = request.POST.get("figure", "")
    days = request.POST.get("days", "")
    try:
        alerts.set_rule(identity=identity, process=name, figure=figure, step=request.POST.get("step", ""),
                        threshold=_threshold(figure, request.POST.get("threshold", "").strip()),
                        days=int(days) if days.isdigit() else days, now=clock.now())
    except ToolError as refused:
        if refused.code == "forbidden":
            return problem(request, 403, "Operators only", "Only the organization's operators set alerts.")
        if refused.code == "not_found":
            raise Http404("no such process") from refused
        messages.error(request, "The alert was not set: " + "; ".join(refused.issues or [refused.message]))
    else:
        messages.success(request, "The alert is set. The server checks it every minute and mails the operators "
                                  "when it starts and when it clears.")
    return redirect(reverse("insight:dashboard", args=[name]) + "#h-alerts")


@require_POST
@person_view
def remove_alert(request, identity, name: str, rule_id: int):
    try:
        alerts.remove_rule(identity=identity, rule_id=rule_id, now=clock.now())
    except ToolError as refused:
        if refused.code == "forbidden":
            return problem(request, 403, "Operators only", "Only the organization's operators remove alerts.")
        raise Http404("no such alert") from refused
    messages.success(request, "The alert is removed.")
    return redirect(reverse("insight:dashboard", args=[name]) + "#h-alerts")
