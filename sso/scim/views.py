"""django-scim2's views, made strict where a bad request would otherwise reach an unhandled error:
the body must be a JSON object, an id must be one of ours (digits) before it is looked up, a bad
`filter=` says `invalidFilter`, and every error body carries its status as a string (RFC 7644
§3.12). CSRF does not apply (django-scim2 exempts them): these calls carry a bearer token, no
cookie (sso/scim/auth.py)."""

import json

from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django_scim import constants, exceptions, views

from .auth import error_response


class Strict:
    def load_body(self, body):
        document = super().load_body(body)
        if not isinstance(document, dict):
            raise exceptions.BadRequestError("the body is a JSON object", scim_type="invalidSyntax")
        return document

    def get_object(self):
        uuid = self.kwargs.get(self.lookup_url_kwarg)
        if uuid is not None and not uuid.isdigit():
            raise exceptions.NotFoundError(uuid)
        return super().get_object()

    def _search(self, request, query, start, count):
        try:
            return super()._search(request, query, start, count)
        except exceptions.BadRequestError as error:
            error.scim_type = error.scim_type or "invalidFilter"
            raise

    @method_decorator(csrf_exempt)  # as django-scim2's own dispatch: overriding it must not lose that
    def dispatch(self, request, *args, **kwargs):
        response = super().dispatch(request, *args, **kwargs)
        if response.status_code >= 400 and response.get("Content-Type") == constants.SCIM_CONTENT_TYPE \
                and response.content:
            body = json.loads(response.content)
            body["status"] = str(body.get("status", response.status_code))
            response.content = json.dumps(body)
        return response


class Listed:
    """django-scim2's ResourceTypes and Schemas lists, with the counts a ListResponse carries (RFC
    7644 §3.4.2), and a SCIM error for an id it does not know."""

    def get(self, request, uuid=None, *args, **kwargs):
        response = super().get(request, uuid, *args, **kwargs)
        if response.status_code == 404:
            raise exceptions.NotFoundError(uuid)
        body = json.loads(response.content)
        if "Resources" in body:
            count = len(body["Resources"])
            body.update(totalResults=count, itemsPerPage=count, startIndex=1)
            response.content = json.dumps(body)
        return response


class ResourceTypes(Strict, Listed, views.ResourceTypesView):
    pass


class Schemas(Strict, Listed, views.SchemasView):
    pass


@csrf_exempt
def unknown(request, path=""):
    """Anything else under /scim/v2/ is a SCIM 404, not a page."""
    return error_response(404, f"no SCIM endpoint /{path}")


class Users(Strict, views.UsersView):
    pass


class Groups(Strict, views.GroupsView):
    pass
