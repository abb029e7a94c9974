"""Throttling (issue 13): sign-in, password reset, OAuth client secrets and personal-token creation
slow down and then refuse repeated attempts, per account and per address, with a clear message
and a 429."""

import base64
import threading

import pytest
from django.test import Client, override_settings

from kernel import throttle
from tests.conftest import redis_reachable, redis_url, service_unavailable

PASSWORD = "a-long-password-1"


def sign_in(client, email, password, address="10.0.0.1"):
    return client.post("/accounts/login/", {"username": email, "password": password}, REMOTE_ADDR=address)


def test_failed_sign_ins_slow_down_then_are_refused_per_account(make_person):
    make_person("mira@example.com", password=PASSWORD)
    client = Client()
    for _ in range(throttle.SIGN_IN.free):
        assert sign_in(client, "mira@example.com", "wrong").status_code == 200  # the form, with its error
    paused = sign_in(client, "mira@example.com", PASSWORD)  # right password, but inside the pause
    assert paused.status_code == 429 and paused["Retry-After"] == "2"
    assert "Too many attempts. To protect the account, wait 2 seconds and try again." in paused.content.decode()
    assert "_auth_user_id" not in client.session

    now = throttle.time.time() + 3600  # an hour later the window has passed
    throttle.check(throttle.SIGN_IN, "account:mira@example.com", now=now)
    for _ in range(throttle.SIGN_IN.limit):
        throttle.count(throttle.SIGN_IN, "account:mira@example.com", now=now)
    with pytest.raises(throttle.Throttled) as refused:
        throttle.check(throttle.SIGN_IN, "account:mira@example.com", now=now + 60)
    assert refused.value.retry_after == throttle.SIGN_IN.window - 60 and refused.value.wait_text == "14 minutes"


def test_failures_from_one_address_across_accounts_are_refused_too(make_person):
    for index in range(throttle.SIGN_IN.free):
        assert sign_in(Client(), f"guess{index}@example.com", "wrong", address="10.9.9.9").status_code == 200
    make_person("other@example.com", password=PASSWORD)
    assert sign_in(Client(), "other@example.com", PASSWORD, address="10.9.9.9").status_code == 429
    assert sign_in(Client(), "other@example.com", PASSWORD, address="10.1.1.1").status_code == 302  # elsewhere: fine


def test_a_successful_sign_in_clears_the_accounts_failures(make_person):
    make_person("mira@example.com", password=PASSWORD)
    for _ in range(throttle.SIGN_IN.free - 1):
        sign_in(Client(), "mira@example.com", "wrong", address="10.0.0.2")
    assert sign_in(Client(), "mira@example.com", PASSWORD, address="10.0.0.3").status_code == 302
    for _ in range(throttle.SIGN_IN.free - 1):
        sign_in(Client(), "mira@example.com", "wrong", address="10.0.0.4")
    assert sign_in(Client(), "mira@example.com", PASSWORD, address="10.0.0.5").status_code == 302


def test_password_reset_requests_are_limited_per_email(make_person, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    make_person("mira@example.com", password=PASSWORD)
    for index in range(throttle.PASSWORD_RESET.free):
        assert Client().post("/accounts/password_reset/", {"email": "mira@example.com"},
                             REMOTE_ADDR=f"10.0.1.{index}").status_code == 302
    refused = Client().post("/accounts/password_reset/", {"email": "mira@example.com"}, REMOTE_ADDR="10.0.2.1")
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


def test_wrong_client_secrets_are_refused_with_a_429(org):
    from kernel.models import Agent
    from kernel.oauth import register_agent_application

    link, secret = register_agent_application(Agent.objects.create(organization=org, name="bot"))
    client_id = link.application.client_id

    def token_request(password: str, address: str = "10.0.3.1"):
        basic = base64.b64encode(f"{client_id}:{password}".encode()).decode()
        return Client().post("/o/token/", {"grant_type": "client_credentials", "scope": "tools"},
                             HTTP_AUTHORIZATION=f"Basic {basic}", REMOTE_ADDR=address)

    for _ in range(throttle.CLIENT_SECRET.free):
        assert token_request("wrong").status_code == 401
    refused = token_request(secret)
    assert refused.status_code == 429 and refused.json()["error"] == "invalid_client"
    assert "too many failed client authentications; try again in 2 seconds" in refused.json()["error_description"]
    assert token_request(secret, address="10.0.3.2").status_code == 429  # the client is paused, wherever it asks


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
        throttle.clear(rule, "account:shared")

        def hammer():
            for _ in range(50):
                throttle.count(rule, "account:shared")

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert cache.get(f"{throttle._cache_key(rule, 'account:shared')}:n") == 200
        throttle.clear(rule, "account:shared")
