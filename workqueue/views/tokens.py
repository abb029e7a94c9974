"""A person's API tokens: create one (shown once), list them, revoke one."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from api.tools import call_tool
from kernel import throttle
from kernel.identity import personal_tokens

from .. import refusals
from .plumbing import person_view


# ---------------------------------------------------------------- API tokens


@person_view
@never_cache
@require_http_methods(["GET", "POST"])
def tokens(request, identity):
    created, label_error, status, retry_after = None, "", 200, None
    if request.method == "POST":
        counter = (throttle.TOKEN_CREATION, identity.ref)
        try:
            throttle.check(counter)
        except throttle.Throttled as error:
            label_error, status = f"Too many new tokens. Wait {error.wait_text}, then try again.", 429
            retry_after = error.retry_after
        else:
            envelope = call_tool(identity, "create_token", {"label": request.POST.get("label", "")},
                                 transport="browser")
            if envelope["ok"]:
                throttle.count(counter)
                created = envelope["data"]
            else:  # "label: at most 100 characters", shown beside the label
                label_error = "; ".join(problem.capitalize() + "." for problem in refusals.problems(envelope["error"]))
                status = 400
    response = render(request, "workqueue/tokens.html",
                      {"tokens": personal_tokens(identity), "created": created, "label_error": label_error},
                      status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


@person_view
@require_POST
def revoke(request, identity, token_id: int):
    envelope = call_tool(identity, "revoke_token", {"tokenId": token_id}, transport="browser")
    if not envelope["ok"]:
        raise Http404(envelope["error"]["message"])
    row = envelope["data"]["row"]
    messages.success(request, f"Token “{row.label or row.pk}” revoked. It stops working at once.")
    return redirect(reverse("workqueue:tokens"))
