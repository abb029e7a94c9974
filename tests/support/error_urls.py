"""The project's URLs plus three views that fail on purpose, for tests/test_error_pages.py."""

from django.core.exceptions import PermissionDenied
from django.urls import path

from agentprocess.urls import urlpatterns as project_urls


def forbidden(request):
    raise PermissionDenied("Only the finance team approves payments.")


def broken(request):
    raise RuntimeError("a bug in a view")


def forbidden_plain(request):
    raise PermissionDenied


urlpatterns = [
    path("test-errors/forbidden", forbidden),
    path("test-errors/forbidden-plain", forbidden_plain),
    path("test-errors/broken", broken),
    *project_urls,
]
