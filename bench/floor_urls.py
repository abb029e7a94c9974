"""The stack's floor (bench/limits.py): the project's URLs plus two trivial endpoints.

- POST /bench/floor: authenticated like every tool (the same bearer lookup, one indexed read of the
  token), then one indexed read and one write in a transaction: look up (organization, requestId)
  in the idempotency table (its unique index) and insert a record, as the cheapest useful write.
- POST /bench/noop: no authentication, no database: uvicorn + Django + DRF dispatch alone.

Both are DRF APIViews with the same settings as the REST tools view (agentprocess/api/rest.py).
"""

import json

from django.db import transaction
from django.http import JsonResponse
from django.urls import path
from rest_framework.views import APIView

from agentprocess import clock
from agentprocess.api.rest import unauthenticated
from agentprocess.api.auth import authenticate
from agentprocess.urls import urlpatterns as project_urlpatterns
from runs.models import IdempotencyRecord


class FloorView(APIView):
    authentication_classes = []
    permission_classes = []
    parser_classes = []

    def post(self, request):
        identity = authenticate(request.headers.get("Authorization"))
        if identity is None:
            return unauthenticated(request)
        arguments = json.loads(request._request.body or b"{}")
        request_id = str(arguments.get("requestId", ""))
        with transaction.atomic():
            found = IdempotencyRecord.objects.filter(organization=identity.organization,
                                                     request_id=request_id).first()
            if found is None:
                IdempotencyRecord.objects.create(
                    organization=identity.organization, request_id=request_id, tool="floor",
                    caller=identity.ref, arguments_hash="-", result={"ok": True}, created_at=clock.now())
        return JsonResponse({"ok": True, "data": {"replayed": found is not None}})


class NoopView(APIView):
    authentication_classes = []
    permission_classes = []
    parser_classes = []

    def post(self, request):
        return JsonResponse({"ok": True, "data": {}})


urlpatterns = [
    path("bench/floor", FloorView.as_view()),
    path("bench/noop", NoopView.as_view()),
    *project_urlpatterns,
]
