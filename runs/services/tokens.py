"""Lease tokens (spec §6 rule 2): signed JWTs naming the lease generation they were issued for.

The signature makes them unforgeable; the generation, compared with the step row, makes them
stale the moment the lease is renewed, replaced, lapsed or the run ends.
"""

import datetime as dt
import functools
import hashlib
import hmac
from dataclasses import dataclass

import jwt
from django.conf import settings

from kernel import observe
from kernel.errors import invalid

ISSUER = "agentprocess"
AUDIENCE = "lease"


def _key() -> bytes:
    # A key of its own, derived from SECRET_KEY, so lease tokens cannot be confused with other signatures.
    return hmac.new(settings.SECRET_KEY.encode(), b"agentprocess lease tokens", hashlib.sha256).digest()


@dataclass(frozen=True)
class LeaseClaim:
    organization_id: int
    run_id: str
    step_id: str
    generation: int
    holder: str
    checked: bool = False  # the step has a check-1 `check:`; its verdict is taken before the write


def issue(*, organization_id: int, run_id: str, step_id: str, generation: int, holder: str,
          expires_at: dt.datetime, issued_at: dt.datetime, checked: bool = False) -> str:
    payload = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": holder,
        "org": organization_id,
        "run": run_id,
        "step": step_id,
        "gen": generation,
        "iat": int(issued_at.timestamp()),
        "exp": int(expires_at.timestamp()),
    }
    if checked:
        payload["chk"] = 1
    return jwt.encode(payload, _key(), algorithm="HS256")


def verify(token: str) -> LeaseClaim:
    """Check the signature only; expiry and generation are judged against the database."""
    claim = _verified(token, settings.SECRET_KEY)
    observe.note_target(run_id=claim.run_id, step_id=claim.step_id)  # the call's log line names them
    return claim


@functools.lru_cache(maxsize=1024)
def _verified(token: str, secret_key: str) -> LeaseClaim:
    """What a token says, once its signature verified. Cached: a submit checks its token before
    its transaction and again inside it, and what a signed token says never changes (expiry and
    generation are the database's to judge); keyed by the secret too, so a new key verifies anew.
    A token that does not verify raises, and lru_cache keeps no exceptions."""
    try:
        payload = jwt.decode(
            token,
            _key(),
            algorithms=["HS256"],
            audience=AUDIENCE,
            issuer=ISSUER,
            options={"verify_exp": False, "require": ["run", "step", "gen", "org", "sub"]},
        )
        claim = LeaseClaim(
            organization_id=int(payload["org"]),
            run_id=str(payload["run"]),
            step_id=str(payload["step"]),
            generation=int(payload["gen"]),
            holder=str(payload["sub"]),
            checked=bool(payload.get("chk")),
        )
    except (jwt.PyJWTError, ValueError, TypeError) as error:
        raise invalid("the token does not verify", ["token: does not verify"]) from error
    return claim
