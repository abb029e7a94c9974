"""Where links that leave a request point (issue 13): PUBLIC_BASE_URL when it is configured, else
the origin the request itself came to.

A server started on another port without PUBLIC_BASE_URL would otherwise hand out file URLs for
http://127.0.0.1:8000. The request's Host has passed ALLOWED_HOSTS by then, so it is one of this
server's own names. The transports set the origin around each call (`within`, on the thread that
runs the tool; `OriginMiddleware` for the pages).
"""

import contextlib
from contextvars import ContextVar

from django.conf import settings

_origin: ContextVar[str | None] = ContextVar("request_origin", default=None)


def base_url() -> str:
    if settings.PUBLIC_BASE_URL_CONFIGURED:
        return settings.PUBLIC_BASE_URL
    return _origin.get() or settings.PUBLIC_BASE_URL


@contextlib.contextmanager
def serving(origin: str | None):
    token = _origin.set(origin)
    try:
        yield
    finally:
        _origin.reset(token)


def within(origin: str | None, function, *args):
    """`function(*args)` with links built for `origin` (for the tool threads of the ASGI routes)."""
    with serving(origin):
        return function(*args)


def of_scope(scope) -> str | None:
    """scheme://host of an ASGI HTTP scope, from its Host header."""
    host = next((value.decode("latin-1") for key, value in scope.get("headers", []) if key == b"host"), None)
    return f"{scope.get('scheme', 'http')}://{host}" if host else None


class OriginMiddleware:
    """Django pages and the Django way into REST: the request's own origin, for links built while
    the request is answered."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with serving(f"{request.scheme}://{request.get_host()}"):
            return self.get_response(request)
