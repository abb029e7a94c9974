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


def _refused(message: str, issue: str) -> dict:
    return {"ok": False, "error": {"code": "invalid", "message": message, "issues": [issue]}}


# A call without a credential that verifies is `invalid` (HTTP 401), not `forbidden`: spec §4.3
# reserves `forbidden` for what is "Not allowed for this identity", and without a credential there
# is no identity; a credential that does not verify is like a token that "does not verify at all",
# which §4.3 and tools.md make `invalid`.
_SEND = "send Authorization: Bearer <token>"
NO_CREDENTIAL = _refused(f"no credential; {_SEND}", "Authorization: missing")
NOT_BEARER = _refused(f"not a bearer credential; {_SEND}", "Authorization: not the Bearer scheme")
EMPTY_BEARER = _refused(f"the bearer credential is empty; {_SEND}", "Authorization: no token after Bearer")
UNKNOWN_CREDENTIAL = _refused("the bearer credential is unknown, expired or revoked",
                              "Authorization: unknown, expired or revoked token")


def unauthenticated(authorization: str | None, resource_path: str) -> tuple[dict, dict[str, str]]:
    """The envelope and headers of the 401 that answers a call without a usable credential, the
    same on REST and MCP. The challenge's error follows RFC 6750 §3.1: none when no bearer
    credential was tried (nothing, or another scheme), invalid_request for an empty one,
    invalid_token for one that does not verify."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if not scheme:
        envelope, error = NO_CREDENTIAL, None
    elif scheme.lower() != "bearer":
        envelope, error = NOT_BEARER, None
    elif not token.strip():
        envelope, error = EMPTY_BEARER, "invalid_request"
    else:
        envelope, error = UNKNOWN_CREDENTIAL, "invalid_token"
    return envelope, {"WWW-Authenticate": www_authenticate(error, resource_path)}
UNAVAILABLE = {
    "ok": False,
    "error": {"code": "retry", "message": "the server cannot check credentials right now; retry in a moment"},
}
RETRY_AFTER = {"Retry-After": "1"}
