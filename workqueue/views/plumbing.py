"""What every page shares: who may open it (a person of an organization, an operator), the
problem page, request ids, and the published processes every form lists."""

import functools
import uuid

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from api.tools import call_tool
from kernel.errors import HTTP_STATUS
from kernel.identity import person_identity
from processes.presentation import Presentation, presentation_of_number


# ---------------------------------------------------------------- plumbing


def person_view(view):
    """Signed in, and a person of an organization; the view receives the Identity."""

    @login_required
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        identity = person_identity(request.user)
        if identity is None:
            return render(request, "workqueue/no_organization.html", status=403)
        request.identity = identity
        return view(request, identity, *args, **kwargs)

    return wrapper


def operator_view(view):
    @person_view
    @functools.wraps(view)
    def wrapper(request, identity, *args, **kwargs):
        if not identity.is_operator:
            return problem(request, 403, "Operators only",
                            "This page is for the organization's operators. Ask an administrator if you need it.")
        return view(request, identity, *args, **kwargs)

    return wrapper


def problem(request, status: int, title: str, message: str, issues=None):
    return render(request, "workqueue/problem.html",
                  {"title": title, "message": message, "issues": issues or []}, status=status)


def error_page(request, error: dict):
    status = HTTP_STATUS.get(error["code"], 400)
    titles = {403: "Not allowed", 404: "Not found", 409: "Conflict", 503: "Try again"}
    return problem(request, status, titles.get(status, "Something went wrong"), error["message"],
                    error.get("issues"))


def new_request_id() -> str:
    return str(uuid.uuid4())


def process_catalog(identity) -> list[dict]:
    """Published processes (list_processes, every page)."""
    items, cursor = [], None
    for _ in range(100):
        envelope = call_tool(identity, "list_processes", {"cursor": cursor} if cursor else {})
        if not envelope["ok"]:
            break
        items += envelope["data"]["items"]
        cursor = envelope["data"]["nextCursor"]
        if not cursor:
            break
    return items


def declared_inputs(catalog: list[dict]):
    by_name = {item["name"]: item.get("inputs") or {} for item in catalog}
    return lambda process: by_name.get(process, {})


def latest_presentation(identity, catalog: list[dict]):
    """process -> how the fields of its latest version are shown (a query per process asked)."""
    numbers = {item["name"]: item["version"] for item in catalog}

    def of(process: str) -> Presentation:
        if process not in numbers:
            return Presentation()
        return presentation_of_number(identity.organization, process=process, number=numbers[process])

    return of
