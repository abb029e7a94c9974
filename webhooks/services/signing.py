"""The Standard Webhooks signature (issue 28, point 2), through the `standardwebhooks` library:
`webhook-id`, `webhook-timestamp`, `webhook-signature` (HMAC-SHA256 of id.timestamp.body). After a
rotation the old secret signs too until its grace period ends: both signatures are sent,
separated by a space, so a receiver with either secret verifies."""

import datetime as dt

from standardwebhooks.webhooks import Webhook


def secrets_at(subscription, at: dt.datetime) -> list[str]:
    """The secrets that sign at this moment: the current one, and the previous one in its grace."""
    secrets = [subscription.secret]
    if subscription.previous_secret and subscription.previous_secret_until and subscription.previous_secret_until > at:
        secrets.append(subscription.previous_secret)
    return secrets


def headers(subscription, webhook_id: str, body: str, at: dt.datetime) -> dict[str, str]:
    signatures = " ".join(Webhook(secret).sign(webhook_id, at, body) for secret in secrets_at(subscription, at))
    return {"webhook-id": webhook_id, "webhook-timestamp": str(int(at.timestamp())), "webhook-signature": signatures}


def valid_secret(secret: str) -> bool:
    try:
        Webhook(secret)
    except Exception:  # noqa: BLE001 - the library's any refusal: bad base64, empty
        return False
    return secret.startswith("whsec_") and len(secret) >= 6 + 24
