"""Repeated attempts slow down, then are refused (issue 13): sign-in, password reset, OAuth client
secrets and personal-token creation, each counted per account and per address.

Counters live in Django's cache (Redis when REDIS_URL is set, so every worker and host shares
them; process memory otherwise). After `free` counted attempts within `window` seconds, each further
one must wait a doubling pause after the last (2, 4, 8 … seconds), and from `limit` attempts on the
key is refused until the window has passed. Nothing sleeps on the server: a caller inside a pause is refused with the
seconds to wait, which the transports turn into a 429 with a clear message and Retry-After.
"""

import hashlib
import math
import time
from dataclasses import dataclass

from django.core.cache import cache


@dataclass(frozen=True)
class Rule:
    name: str
    free: int  # attempts that cost nothing
    limit: int  # from here on: refused for the rest of the window
    window: int  # seconds


SIGN_IN = Rule("sign-in", free=5, limit=10, window=15 * 60)
PASSWORD_RESET = Rule("password-reset", free=3, limit=6, window=60 * 60)
CLIENT_SECRET = Rule("client-secret", free=5, limit=10, window=15 * 60)
TOKEN_CREATION = Rule("token-creation", free=10, limit=20, window=60 * 60)


class Throttled(Exception):
    def __init__(self, rule: Rule, retry_after: int):
        super().__init__(f"{rule.name}: too many attempts; try again in {retry_after} seconds")
        self.rule = rule
        self.retry_after = retry_after

    @property
    def wait_text(self) -> str:
        minutes = math.ceil(self.retry_after / 60)
        return f"{self.retry_after} seconds" if self.retry_after < 120 else f"{minutes} minutes"


def _cache_key(rule: Rule, key: str) -> str:
    # Keys may hold emails and addresses: hashed, so the cache never stores them in the clear.
    return f"throttle:{rule.name}:{hashlib.sha256(key.lower().encode()).hexdigest()[:32]}"


def _wait(rule: Rule, name: str, now: float) -> int:
    found = cache.get_many([f"{name}:n", f"{name}:t0", f"{name}:last"])
    attempts, started, last = found.get(f"{name}:n", 0), found.get(f"{name}:t0", now), found.get(f"{name}:last", now)
    if started + rule.window <= now:
        return 0  # the window has passed (the cache forgets it soon after)
    if attempts >= rule.limit:
        until = started + rule.window
    elif attempts >= rule.free:
        until = last + 2 ** (attempts - rule.free + 1)
    else:
        return 0
    return max(0, math.ceil(until - now))


def check(rule: Rule, *keys: str, now: float | None = None) -> None:
    """Raise Throttled when any key is inside a pause or over the limit."""
    now = time.time() if now is None else now
    waits = [_wait(rule, _cache_key(rule, key), now) for key in filter(None, keys)]
    if any(waits):
        raise Throttled(rule, max(waits))


def count(rule: Rule, *keys: str, now: float | None = None) -> None:
    """One more attempt against each key (a failure, or a use that is limited in itself). The
    counter is incremented atomically (shared by every worker with Redis)."""
    now = time.time() if now is None else now
    for key in filter(None, keys):
        name = _cache_key(rule, key)
        started = cache.get(f"{name}:t0")
        if started is not None and started + rule.window <= now:
            cache.delete_many([f"{name}:n", f"{name}:t0", f"{name}:last"])  # a new window
        cache.add(f"{name}:t0", now, timeout=rule.window)  # the window starts with the first attempt
        cache.add(f"{name}:n", 0, timeout=rule.window)
        cache.incr(f"{name}:n")
        cache.set(f"{name}:last", now, timeout=rule.window)


def clear(rule: Rule, *keys: str) -> None:
    """A success forgets the account's failures (not the address's: one address, many accounts)."""
    cache.delete_many([f"{_cache_key(rule, key)}:{part}" for key in filter(None, keys) for part in ("n", "t0", "last")])


def address_of(request) -> str:
    return f"address:{request.META.get('REMOTE_ADDR', '')}"
