"""Throttling (issue 13): sign-in, password reset, OAuth client secrets and personal-token creation
slow down and then refuse repeated attempts with a clear message and a 429. Who is counted where
(issue 21: the pair (account, address), the account, the address) is pinned in test_lockout.py."""

import base64
import threading
import uuid

import pytest
from django.test import Client, override_settings

from kernel import throttle
from tests.conftest import redis_reachable, redis_url, service_unavailable

PASSWORD = "a-long-password-1"


def sign_in(client, email, password, address="10.0.0.1"):
    return client.post("/accounts/login/", {"username": email, "password": password}, REMOTE_ADDR=address)


def test_failed_sign_ins_slow_down_then_are_refused(make_person):
    make_person("mira@example.com", password=PASSWORD)
    client = Client()
    for _ in range(throttle.SIGN_IN.pair.free):
        assert sign_in(client, "mira@example.com", "wrong").status_code == 200  # the form, with its error
    paused = sign_in(client, "mira@example.com", PASSWORD)  # right password, but inside the pause
    assert paused.status_code == 429 and paused["Retry-After"] == "2"
    assert "Too many attempts. To protect the account, wait 2 seconds and try again." in paused.content.decode()
    assert "_auth_user_id" not in client.session

    now = throttle.clock.now().timestamp() + 3600  # an hour later the window has passed
    pair = (throttle.SIGN_IN.pair, throttle._pair_key("mira@example.com", "10.0.0.1"))
    throttle.check(pair, now=now)
    for _ in range(throttle.SIGN_IN.pair.limit):
        throttle.count(pair, now=now)
    with pytest.raises(throttle.Throttled) as refused:
        throttle.check(pair, now=now + 60)
    assert refused.value.retry_after == throttle.SIGN_IN.pair.window - 60 and refused.value.wait_text == "14 minutes"


def test_a_pause_never_outlasts_the_window():
    rule = throttle.Rule("test-capped", free=1, limit=100, window=60)
    for _ in range(10):  # the tenth pause would be 2 ** 10 seconds
        throttle.count((rule, "key"), now=1000)
    with pytest.raises(throttle.Throttled) as refused:
        throttle.check((rule, "key"), now=1010)
    assert refused.value.retry_after == 50


def test_failures_from_one_address_across_accounts_are_slowed_there(make_person):
    for index in range(throttle.SIGN_IN.address.free):
        assert sign_in(Client(), f"guess{index}@example.com", "wrong", address="10.9.9.9").status_code == 200
    make_person("other@example.com", password=PASSWORD)
    assert sign_in(Client(), "other@example.com", PASSWORD, address="10.9.9.9").status_code == 429
    assert sign_in(Client(), "other@example.com", PASSWORD, address="10.1.1.1").status_code == 302  # elsewhere: fine


def test_a_successful_sign_in_clears_its_pairs_failures(make_person):
    make_person("mira@example.com", password=PASSWORD)
    for _ in range(2):
        for _ in range(throttle.SIGN_IN.pair.free - 1):
            assert sign_in(Client(), "mira@example.com", "wrong", address="10.0.0.2").status_code == 200
        assert sign_in(Client(), "mira@example.com", PASSWORD, address="10.0.0.2").status_code == 302


def test_password_reset_requests_are_limited_per_email_and_address(make_person, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    make_person("mira@example.com", password=PASSWORD)
    for _ in range(throttle.PASSWORD_RESET.free):
        assert Client().post("/accounts/password_reset/", {"email": "mira@example.com"},
                             REMOTE_ADDR="10.0.1.1").status_code == 302
    refused = Client().post("/accounts/password_reset/", {"email": "mira@example.com"}, REMOTE_ADDR="10.0.1.1")
    assert refused.status_code == 429 and "wait 2 seconds" in refused.content.decode()
    from django.core import mail

    assert len(mail.outbox) == throttle.PASSWORD_RESET.free


def test_personal_token_creation_is_limited(make_person):
    make_person("mira@example.com", password=PASSWORD)
    client = Client()
    assert client.login(username="mira@example.com", password=PASSWORD)
    for _ in range(throttle.TOKEN_CREATION.free):
        assert client.post("/tokens/", {"label": "script"}).status_code == 200
    refused = client.post("/tokens/", {"label": "script"})
    assert refused.status_code == 429 and refused["Retry-After"] == "2"
    assert "Too many new tokens. Wait 2 seconds, then try again." in refused.content.decode()


@pytest.mark.redis
def test_counters_are_shared_and_atomic_on_redis():
    """On Redis every worker and host counts against the same keys; concurrent failures are all
    counted (INCR), none lost to a read-modify-write race."""
    url = redis_url()
    if not redis_reachable(url):
        service_unavailable(f"Redis is not reachable at {url}")
    redis_cache = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url,
                               "KEY_PREFIX": "agentprocess-test-throttle"}}
    with override_settings(CACHES=redis_cache):
        from django.core.cache import cache

        rule = throttle.Rule("test-shared", free=1000, limit=2000, window=60)
        throttle.clear((rule, "account:shared"))

        def hammer():
            for _ in range(50):
                throttle.count((rule, "account:shared"))

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert cache.get(f"{throttle._cache_key(rule, 'account:shared')}:n") == 200
        throttle.clear((rule, "account:shared"))


@pytest.mark.redis
def test_a_guard_keeps_pairs_and_trust_on_redis():
    """The guard's three counters and its trusted pairs round-trip through Redis: the attack of
    test_lockout.py, at the guard, on a shared cache."""
    url = redis_url()
    if not redis_reachable(url):
        service_unavailable(f"Redis is not reachable at {url}")
    redis_cache = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url,
                               "KEY_PREFIX": "agentprocess-test-throttle"}}
    run = uuid.uuid4().hex[:8]  # Redis is shared between runs: counters of this run only
    guard = throttle.Guard(pair=throttle.Rule(f"test-pair-{run}", free=2, limit=4, window=60),
                           account=throttle.Rule(f"test-account-{run}", free=3, limit=6, window=60),
                           address=throttle.Rule(f"test-address-{run}", free=5, limit=10, window=60), trust=60)
    account = "owner@example.com"
    now = throttle.clock.now().timestamp()
    with override_settings(CACHES=redis_cache):
        for index in range(8):
            guard.check(account, f"198.51.100.{index}", now=now)
            guard.failed(account, f"198.51.100.{index}", now=now)
        with pytest.raises(throttle.Throttled):  # a guessing address, over the account's free failures
            guard.check(account, "198.51.100.1", now=now)
        guard.check(account, "192.0.2.10", now=now)  # the owner's address has not failed: no wait
        guard.succeeded(account, "192.0.2.10", now=now)
        for index in range(10):  # a sprayer at the owner's address, over its limit
            guard.failed(f"guess{index}-{account}", "192.0.2.10", now=now)
        guard.check(account, "192.0.2.10", now=now)  # the owner's pair is trusted there
        with pytest.raises(throttle.Throttled):
            guard.check(f"new-{account}", "192.0.2.10", now=now)
