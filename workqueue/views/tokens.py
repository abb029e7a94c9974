"""A person's API tokens: create one (shown once), list them, revoke one."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from kernel import throttle
from kernel.errors import ToolError
from kernel.identity import issue_personal_token, personal_tokens, revoke_personal_token

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
            row, plaintext = issue_personal_token(identity, label=request.POST.get("label", ""))
            throttle.count(counter)
            created = {"row": row, "plaintext": plaintext}
        except throttle.Throttled as error:
            label_error, status = f"Too many new tokens. Wait {error.wait_text}, then try again.", 429
            retry_after = error.retry_after
        except ToolError as error:  # "label: at most 100 characters", shown beside the label
            label_error, status = "; ".join(issue.split(": ", 1)[-1].capitalize() + "." for issue in error.issues), 400
    response = render(request, "workqueue/tokens.html",
                      {"tokens": personal_tokens(identity), "created": created, "label_error": label_error},
                      status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


@person_view
@require_POST
def revoke(request, identity, token_id: int):
    try:
        row = revoke_personal_token(identity, token_id)
    except ToolError as error:
        raise Http404(error.message) from None
    messages.success(request, f"Token “{row.label or row.pk}” revoked. It stops working at once.")
    return redirect(reverse("workqueue:tokens"))
