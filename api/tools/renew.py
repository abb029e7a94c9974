from kernel.clock import iso
from runs.services.leases import renew as extend

from .registry import tool


@tool("renew", write=True, description="Extend the lease: a new token and expiry; the old token stops working at once.")
def renew(identity, arguments, now) -> dict:
    lease = extend(identity=identity, token=arguments["token"], progress=arguments.get("progress"), now=now)
    return {"token": lease.token, "expiresAt": iso(lease.expires_at)}
