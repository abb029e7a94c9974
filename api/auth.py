"""Bearer authentication for the REST and MCP transports (one place)."""

from django.conf import settings

from kernel.identity import Identity, identity_from_bearer


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
