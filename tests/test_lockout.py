"""Throttling that stops attackers, not owners (issue 21, point 2).

Failures are counted per (account, address) pair, which slows and then refuses a brute force from
one address; the account's and the address's own counters are higher and never refuse a correct
credential from an address that has not failed for that account (kernel/throttle.py)."""

import base64
import datetime as dt

import pytest
from django.core import mail
from django.test import Client

from kernel import clock, throttle

PASSWORD = "a-long-password-1"
START = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def frozen_clock():
    with clock.frozen(START):
        yield


def later(seconds: float) -> None:
    clock.advance(dt.timedelta(seconds=seconds))


def sign_in(email, password, address, client=None):
    client = client or Client()
    response = client.post("/accounts/login/", {"username": email, "password": password}, REMOTE_ADDR=address)
    return response, client


def assert_signed_in(response, client):
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.session.get("_auth_user_id")
    assert client.get("/").status_code == 200  # the inbox


def assert_refused(response, retry_after: int, wait_text: str):
    assert response.status_code == 429 and response["Retry-After"] == str(retry_after)
    assert f"Too many attempts. To protect the account, wait {wait_text} and try again." in response.content.decode()


# --- the audit's attack: many addresses guess one account ---------------------------------------------


def test_wrong_passwords_from_many_addresses_do_not_lock_the_owner_out(make_person, frozen_clock):
    make_person("mira@example.com", password=PASSWORD)
    for index in range(12):
        response, _ = sign_in("mira@example.com", "wrong", f"198.51.100.{index}")
        assert response.status_code == 200  # the form, with its error
    # The owner, with the right password from her own address, signs in at once.
    assert_signed_in(*sign_in("mira@example.com", PASSWORD, "192.0.2.10"))
    # The account's counter still slows the addresses that guessed: even the right password waits.
    retry, _ = sign_in("mira@example.com", PASSWORD, "198.51.100.3")
    assert_refused(retry, 2 ** (12 - throttle.SIGN_IN.account.free + 1), "8 seconds")


def test_wrong_secrets_from_many_addresses_do_not_lock_the_agent_out(org):
    from kernel.models import Agent
    from kernel.oauth import register_agent_application

    link, secret = register_agent_application(Agent.objects.create(organization=org, name="bot"))
    client_id = link.application.client_id
    for index in range(12):
        assert token_request(client_id, "wrong", f"198.51.100.{index}").status_code == 401
    granted = token_request(client_id, secret, "192.0.2.20")  # the agent, from its own address
    assert granted.status_code == 200 and granted.json()["access_token"]


def token_request(client_id: str, secret: str, address: str):
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    return Client().post("/o/token/", {"grant_type": "client_credentials", "scope": "tools"},
                         HTTP_AUTHORIZATION=f"Basic {basic}", REMOTE_ADDR=address)


# --- a brute force from one address is still slowed, then refused ------------------------------------


def test_brute_force_from_one_address_waits_longer_each_time_then_is_refused(make_person, frozen_clock):
    make_person("mira@example.com", password=PASSWORD)
    attacker = "203.0.113.66"
    rule = throttle.SIGN_IN.pair
    for _ in range(rule.free):
        assert sign_in("mira@example.com", "wrong", attacker)[0].status_code == 200
    for pause in (2, 4, 8, 16):  # a doubling pause after each further failure
        assert_refused(sign_in("mira@example.com", "wrong", attacker)[0], pause, f"{pause} seconds")
        later(pause)
        assert sign_in("mira@example.com", "wrong", attacker)[0].status_code == 200
    later(32)
    assert sign_in("mira@example.com", "wrong", attacker)[0].status_code == 200  # the limit's failure
    # From here on the pair is refused for the rest of the window, even with the right password.
    elapsed = 2 + 4 + 8 + 16 + 32
    refused, client = sign_in("mira@example.com", PASSWORD, attacker)
    assert_refused(refused, rule.window - elapsed, "14 minutes")
    assert "_auth_user_id" not in client.session
    # The owner, elsewhere, is not: her address has not failed.
    assert_signed_in(*sign_in("mira@example.com", PASSWORD, "192.0.2.10"))
    later(rule.window - elapsed)
    assert_signed_in(*sign_in("mira@example.com", PASSWORD, attacker))  # the window has passed


def test_guessing_a_client_secret_from_one_address_is_refused_there_only(org):
    from kernel.models import Agent
    from kernel.oauth import register_agent_application

    link, secret = register_agent_application(Agent.objects.create(organization=org, name="bot"))
    client_id = link.application.client_id
    for _ in range(throttle.CLIENT_SECRET.pair.free):
        assert token_request(client_id, "wrong", "203.0.113.66").status_code == 401
    refused = token_request(client_id, secret, "203.0.113.66")
    assert refused.status_code == 429 and refused["Retry-After"] == "2"
    assert refused.json() == {"error": "invalid_client", "error_description": (
        "too many failed client authentications; try again in 2 seconds")}
    assert token_request(client_id, secret, "192.0.2.20").status_code == 200


# --- an office behind one address (NAT) --------------------------------------------------------------


def test_an_office_behind_one_address_signs_in_while_a_sprayer_there_is_slowed(make_person, frozen_clock):
    office = "203.0.113.5"
    people = [f"person{index}@example.com" for index in range(15)]
    for email in people:
        make_person(email, password=PASSWORD)
    # Monday morning: a third of the office mistypes once; everyone who types it right gets in.
    for index, email in enumerate(people):
        if index % 3 == 0:
            assert sign_in(email, "mistyped", office)[0].status_code == 200
        assert_signed_in(*sign_in(email, PASSWORD, office))

    # Someone behind the same address sprays one password over many accounts.
    rule = throttle.SIGN_IN.address
    answered = sum(sign_in(f"guess{index}@example.com", "Spring2026!", office)[0].status_code == 200
                   for index in range(rule.free))
    assert answered == rule.free - len(people[::3])  # the office's five typos counted too
    assert_refused(sign_in("guess99@example.com", "Spring2026!", office)[0], 2, "2 seconds")
    later(2)
    assert sign_in("guess100@example.com", "Spring2026!", office)[0].status_code == 200
    assert_refused(sign_in("guess101@example.com", "Spring2026!", office)[0], 4, "4 seconds")

    # Meanwhile the office, who have signed in from here before, get in on their first try.
    for email in people:
        assert_signed_in(*sign_in(email, PASSWORD, office))
    # The documented cost: someone who never signed in from this address waits out the sprayer's pause.
    make_person("newcomer@example.com", password=PASSWORD)
    assert_refused(sign_in("newcomer@example.com", PASSWORD, office)[0], 4, "4 seconds")
    later(4)
    assert_signed_in(*sign_in("newcomer@example.com", PASSWORD, office))


def test_an_office_behind_one_address_can_all_reset_their_passwords(make_person, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    people = [f"person{index}@example.com" for index in range(10)]
    for email in people:
        make_person(email, password=PASSWORD)
        response = Client().post("/accounts/password_reset/", {"email": email}, REMOTE_ADDR="203.0.113.5")
        assert response.status_code == 302
    assert sorted(message.to[0] for message in mail.outbox) == sorted(people)


def test_reset_mails_to_one_mailbox_are_capped_from_any_address(make_person, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    make_person("mira@example.com", password=PASSWORD)
    rule = throttle.PASSWORD_RESET_EMAIL
    for index in range(rule.free):
        assert Client().post("/accounts/password_reset/", {"email": "mira@example.com"},
                             REMOTE_ADDR=f"198.51.100.{index}").status_code == 302
    refused = Client().post("/accounts/password_reset/", {"email": "mira@example.com"}, REMOTE_ADDR="192.0.2.10")
    assert_refused(refused, 2, "2 seconds")
    assert len(mail.outbox) == rule.free  # each of those links still works for the owner


def test_personal_tokens_are_limited_per_person_not_per_address(make_person):
    clients = []
    for email in ("ana@example.com", "ben@example.com"):
        make_person(email, password=PASSWORD)
        client = Client(REMOTE_ADDR="203.0.113.5")
        assert client.login(username=email, password=PASSWORD)
        clients.append(client)
    for client in clients:  # two people behind one address: each has their own allowance
        for _ in range(throttle.TOKEN_CREATION.free):
            assert client.post("/tokens/", {"label": "script"}, REMOTE_ADDR="203.0.113.5").status_code == 200
