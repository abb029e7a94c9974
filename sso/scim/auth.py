"""Who a SCIM call acts for: the provider whose bearer token it carries (sso/provisioning.py), and
so the one organization whose people and groups it may see and change. django-scim2 calls these
from its settings (SCIM_SERVICE_PROVIDER in agentprocess/settings.py)."""

import json

from django.http import HttpResponse
from django_scim import constants

from sso import provisioning


def error_response(status: int, detail: str, scim_type: str | None = None) -> HttpResponse:
    body = {"schemas": [constants.SchemaURI.ERROR], "status": str(status), "detail": detail}
    if scim_type:
        body["scimType"] = scim_type
    return HttpResponse(json.dumps(body), status=status, content_type=constants.SCIM_CONTENT_TYPE)


class BearerCheck:
    """Wraps every SCIM view (AUTH_CHECK_MIDDLEWARE): a missing or unknown token is 401 before
    anything is read or changed. Sessions and cookies count for nothing here."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request, *args, **kwargs):
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        provider = provisioning.provider_for_token(token.strip()) if scheme.lower() == "bearer" else None
        if provider is None:
            response = error_response(401, "a SCIM call needs the bearer token `manage.py scim_token` issued for "
                                           "its identity provider")
            response["WWW-Authenticate"] = 'Bearer realm="scim"'
            return response
        request.scim_provider = provider
        return self.get_response(request, *args, **kwargs)


def filter_kwargs_getter(model):
    """Every look-up, list and `filter=` search is narrowed to the provider's organization (as a
    list of ids: django-scim2 applies it to querysets and, after a filter, to the rows in Python)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    def kwargs(request, *args, **kw):
        provider = request.scim_provider
        if model is get_user_model():
            return {"pk__in": list(provisioning.people(provider).values_list("pk", flat=True))}
        if model is Group:
            return {"pk__in": list(provisioning.groups(provider).values_list("pk", flat=True))}
        return {"pk__in": []}  # anything else (a search across types): nothing

    return kwargs
