"""Repeated attempts slow down, then are refused (issues 13 and 21): sign-in, OAuth client secrets,
password-reset mails and personal-token creation. Throttling stops attackers, not owners.

Counters live in Django's cache (Redis when REDIS_URL is set, so every worker and host shares
them; process memory otherwise). A `Rule` lets `free` counted attempts within `window` seconds
cost nothing; each further one must wait a doubling pause after the last (2, 4, 8 … seconds), and
from `limit` attempts on the key is refused until the window has passed. Nothing sleeps on the
server: a caller inside a pause is refused with the seconds to wait, which the transports turn into
a 429 with a plain message and Retry-After. Time is `kernel.clock`'s, so tests move it.

A credential (a password, a client secret) is guarded by a `Guard`, three counters of failures:

- the pair (account, address): a brute force from one address. Always checked before the
  credential; refused even with the right one once over its limit.
- the account, from every address: checked only for addresses that have already failed for this
  account. Each guessing address is then slowed after its first guess, while the owner, from an
  address that has not failed for the account, always has the credential checked and gets in.
  (No rule can tell a fresh guessing address from the owner's before the check, so a botnet's
  first guess from each address is answered: that is the price of never locking the owner out.)
- the address, over every account: higher than the pair's, for a sprayer trying many accounts
  from one address. It is checked before the credential, except for a pair that succeeded before
  (`Guard.trust` seconds, 30 days): so behind an office NAT, the typos of a busy morning stay under
  the address's free attempts, and when a sprayer behind the same NAT pushes the address over
  them, everyone who has signed in from there before still gets in on the first try. Someone
  signing in from that address for the first time waits the sprayer's pause (or, past the
  limit, the rest of the window): refusing them before the check is what slows the sprayer,
  since a sprayer's every guess is a first try. Trusted pairs still have the pair's limit.

A success clears only its pair: an attacker who signs into an account of their own must not wipe
an address's or an account's failures.

Addresses are the connecting ones (REMOTE_ADDR): behind a proxy, uvicorn puts the client's
address there from X-Forwarded-For when the proxy is trusted (`FORWARDED_ALLOW_IPS`).
"""

import hashlib
import math
from dataclasses import dataclass

from django.core.cache import cache

from kernel import clock


@dataclass(frozen=True)
class Rule:
    name: str
    free: int  # attempts that cost nothing
    limit: int  # from here on: refused for the rest of the window
    window: int  # seconds


@dataclass(frozen=True)
class Guard:
    """A credential for an account, tried from an address (see the module's docstring)."""

    pair: Rule
    account: Rule
    address: Rule
    trust: int = 30 * 24 * 3600  # seconds a pair that succeeded skips the address's counter

    def check(self, account: str, address: str, now: float | None = None) -> None:
        """Raise Throttled when this attempt must wait, before its credential is checked."""
        now = _now(now)
        pair = _pair_key(account, address)
        counters = [(self.pair, pair)]
        if not self._trusted(pair, now):
            counters.append((self.address, address))
            if _attempts(self.pair, pair, now):  # this address has failed for this account
                counters.append((self.account, account))
        check(*counters, now=now)

    def failed(self, account: str, address: str, now: float | None = None) -> None:
        count((self.pair, _pair_key(account, address)), (self.account, account), (self.address, address), now=now)

    def succeeded(self, account: str, address: str, now: float | None = None) -> None:
        pair = _pair_key(account, address)
        clear((self.pair, pair))
        cache.set(f"{_cache_key(self.pair, pair)}:trusted", _now(now), timeout=self.trust)

    def _trusted(self, pair: str, now: float) -> bool:
        since = cache.get(f"{_cache_key(self.pair, pair)}:trusted")
        return since is not None and since + self.trust > now


SIGN_IN = Guard(
    pair=Rule("sign-in", free=5, limit=10, window=15 * 60),
    account=Rule("sign-in-account", free=10, limit=30, window=15 * 60),
    address=Rule("sign-in-address", free=20, limit=100, window=15 * 60),
)
CLIENT_SECRET = Guard(
    pair=Rule("client-secret", free=5, limit=10, window=15 * 60),
    account=Rule("client-secret-client", free=10, limit=30, window=15 * 60),
    address=Rule("client-secret-address", free=20, limit=100, window=15 * 60),
)
# A reset request has no credential to check: each one counts (it mails someone). The mailbox's cap
# holds from every address, so nobody can flood a person with mails; each mail that went still
# works, so its owner is never without a link.
PASSWORD_RESET = Rule("password-reset", free=3, limit=6, window=60 * 60)  # per (email, address)
PASSWORD_RESET_EMAIL = Rule("password-reset-email", free=5, limit=10, window=60 * 60)
PASSWORD_RESET_ADDRESS = Rule("password-reset-address", free=20, limit=60, window=60 * 60)

# Per person only: they are signed in, so an address would add nothing but an office's shared limit.
TOKEN_CREATION = Rule("token-creation", free=10, limit=20, window=60 * 60)


def password_reset_counters(email: str, address: str) -> tuple[tuple[Rule, str], ...]:
    return ((PASSWORD_RESET, _pair_key(email, address)), (PASSWORD_RESET_EMAIL, email),
            (PASSWORD_RESET_ADDRESS, address))


class Throttled(Exception):
    def __init__(self, rule: Rule, retry_after: int):
        super().__init__(f"{rule.name}: too many attempts; try again in {retry_after} seconds")
        self.rule = rule
        self.retry_after = retry_after

    @property
    def wait_text(self) -> str:
        minutes = math.ceil(self.retry_after / 60)
        return f"{self.retry_after} seconds" if self.retry_after < 120 else f"{minutes} minutes"


def _now(now: float | None) -> float:
    return clock.now().timestamp() if now is None else now


def _pair_key(account: str, address: str) -> str:
    return f"{account}\n{address}"


def _cache_key(rule: Rule, key: str) -> str:
    # Keys may hold emails and addresses: hashed, so the cache never stores them in the clear.
    return f"throttle:{rule.name}:{hashlib.sha256(key.lower().encode()).hexdigest()[:32]}"


def _attempts(rule: Rule, key: str, now: float) -> int:
    name = _cache_key(rule, key)
    found = cache.get_many([f"{name}:n", f"{name}:t0"])
    started = found.get(f"{name}:t0")
    return 0 if started is None or started + rule.window <= now else found.get(f"{name}:n", 0)


def _wait(rule: Rule, key: str, now: float) -> int:
    name = _cache_key(rule, key)
    found = cache.get_many([f"{name}:n", f"{name}:t0", f"{name}:last"])
    attempts, started, last = found.get(f"{name}:n", 0), found.get(f"{name}:t0", now), found.get(f"{name}:last", now)
    if started + rule.window <= now:
        return 0  # the window has passed (the cache forgets it soon after)
    if attempts >= rule.limit:
        until = started + rule.window
    elif attempts >= rule.free:
        until = min(last + 2 ** (attempts - rule.free + 1), started + rule.window)  # never past the window
    else:
        return 0
    return max(0, math.ceil(until - now))


def check(*counters: tuple[Rule, str], now: float | None = None) -> None:
    """Raise Throttled when any (rule, key) is inside a pause or over its limit."""
    now = _now(now)
    waits = [(_wait(rule, key, now), rule) for rule, key in counters if key]
    longest, rule = max(waits, default=(0, None), key=lambda wait: wait[0])
    if longest:
        raise Throttled(rule, longest)


def count(*counters: tuple[Rule, str], now: float | None = None) -> None:
    """One more attempt against each (rule, key): a failure, or a use that is limited in itself.
    The counter is incremented atomically (shared by every worker with Redis)."""
    now = _now(now)
    for rule, key in counters:
        if not key:
            continue
        name = _cache_key(rule, key)
        started = cache.get(f"{name}:t0")
        if started is not None and started + rule.window <= now:
            cache.delete_many([f"{name}:n", f"{name}:t0", f"{name}:last"])  # a new window
        cache.add(f"{name}:t0", now, timeout=rule.window)  # the window starts with the first attempt
        cache.add(f"{name}:n", 0, timeout=rule.window)
        cache.incr(f"{name}:n")
        cache.set(f"{name}:last", now, timeout=rule.window)


def clear(*counters: tuple[Rule, str]) -> None:
    parts = ("n", "t0", "last")
    cache.delete_many([f"{_cache_key(rule, key)}:{part}" for rule, key in counters if key for part in parts])


def address_of(request) -> str:
    return request.META.get("REMOTE_ADDR", "")
