"""The Host check of the two routes that bypass Django's request machinery (the REST route and
MCP): Django's own rule over ALLOWED_HOSTS, so pages, REST and MCP refuse the same hosts (a
deployment does not answer to `Host: 127.0.0.1`)."""

from django.conf import settings
from django.http.request import split_domain_port, validate_host

UNKNOWN_HOST = {"ok": False, "error": {"code": "invalid", "message": "this server does not answer to that host name",
                                       "issues": ["Host: not one of this server's ALLOWED_HOSTS"]}}


def host_allowed(scope) -> bool:
    host = next((value.decode("latin-1") for key, value in scope["headers"] if key == b"host"), "")
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)
