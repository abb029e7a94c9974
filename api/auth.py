"""Bearer authentication for the REST and MCP transports (one place)."""

import logging

from django.conf import settings
from django.db import DatabaseError

from kernel.identity import Identity, identity_from_bearer

log = logging.getLogger(__name__)


class CredentialsUnavailable(Exception):
    """The credential could not be looked up (the database is down or restarting): the caller gets
    a `retry` envelope, not a 500 and not a 401 (the credential may well be good)."""


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def authenticate(authorization: str | None) -> Identity | None:
    token = bearer_token(authorization)
    if not token:
        return None
    try:
        return identity_from_bearer(token)
    except DatabaseError as error:
        log.warning("credential look-up failed: %s", error)
        raise CredentialsUnavailable from error


def www_authenticate(error: str | None = None, resource_path: str = "/mcp") -> str:
    """The challenge of a 401; points clients at the protected-resource metadata (RFC 9728) of the
    resource they called (`/mcp` or `/api/v1`, kernel.oauth) and names the scope to ask for."""
    metadata = f"{settings.PUBLIC_BASE_URL}/.well-known/oauth-protected-resource{resource_path}"
    value = f'Bearer realm="agentprocess", resource_metadata="{metadata}", scope="tools"'
    if error:
        value += f', error="{error}"'
    return value


UNAUTHENTICATED = {
    "ok": False,
    "error": {"code": "forbidden", "message": "no valid bearer credential; send Authorization: Bearer <token>"},
}
UNAVAILABLE = {
    "ok": False,
    "error": {"code": "retry", "message": "the server cannot check credentials right now; retry in a moment"},
}
RETRY_AFTER = {"Retry-After": "1"}
