"""Bearer authentication for the REST and MCP transports (one place)."""

from django.conf import settings

from agentprocess.identity import Identity, identity_from_bearer


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def authenticate(authorization: str | None) -> Identity | None:
    token = bearer_token(authorization)
    return identity_from_bearer(token) if token else None


def www_authenticate(error: str | None = None) -> str:
    """The challenge of a 401; points MCP clients at the protected-resource metadata (RFC 9728)."""
    value = f'Bearer realm="agentprocess", resource_metadata="{settings.PUBLIC_BASE_URL}/.well-known/oauth-protected-resource/mcp"'
    if error:
        value += f', error="{error}"'
    return value


UNAUTHENTICATED = {
    "ok": False,
    "error": {"code": "forbidden", "message": "no valid bearer credential; send Authorization: Bearer <token>"},
}
