"""Where a webhook may go (issue 28, point 3): public addresses only, unless
WEBHOOK_ALLOW_PRIVATE allows private networks and loopback (on-premises receivers, tests).

A URL is checked when a subscription is added, and again on every attempt and every redirect,
after DNS resolution: the connection then goes to an address that passed (webhooks/services/http.py),
so a name that resolves differently a second later cannot slip a private address in. Link-local
(169.254.0.0/16, the cloud metadata address; fe80::/10), multicast, unspecified and reserved
addresses are refused even when private ones are allowed."""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings


class Refused(Exception):
    """A URL a webhook may not go to; `code` says why, the message says it in plain words."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


ALLOW_HINT = "; webhooks go to public addresses only (WEBHOOK_ALLOW_PRIVATE=true allows private networks and loopback)"


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # with its query
    addresses: tuple[str, ...]  # every address the host resolved to, each allowed


def category(address) -> str | None:
    """Why an address is not public ("loopback", "link-local", "private", "not public"), None if it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast or address.is_unspecified or address.is_reserved:
        return "not public"
    if address.is_private or not address.is_global:
        return "private"
    return None


def allowed(address, *, allow_private: bool) -> str | None:
    """None when a webhook may go to this address, else its category."""
    kind = category(address)
    if kind is None or (allow_private and kind in ("loopback", "private")):
        return None
    return kind


def parse(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path) of an http(s) URL, or Refused."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as error:
        raise Refused("url", f"{url!r} is not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise Refused("scheme", f"{url!r}: a webhook URL starts with https:// (or http://)")
    if not parts.hostname:
        raise Refused("url", f"{url!r} names no host")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path


def vet(url: str, *, allow_private: bool | None = None) -> Target:
    """The URL's target with every address it resolves to, or Refused with a clear message."""
    allow_private = settings.WEBHOOK_ALLOW_PRIVATE if allow_private is None else allow_private
    scheme, host, port, path = parse(url)
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        found = [literal]
    else:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as error:
            raise Refused("unresolvable", f"{url}: the host {host} could not be resolved ({error})") from None
        found = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))
    for address in found:
        kind = allowed(address, allow_private=allow_private)
        if kind is not None:
            named = host if literal is not None else f"{host} resolves to {address}, which"
            words = {"loopback": "a loopback address", "link-local": "a link-local address",
                     "private": "a private address", "not public": "not a public address"}[kind]
            rule = ("; webhooks never go to link-local, multicast or reserved addresses"
                    if kind in ("link-local", "not public") else ALLOW_HINT)
            raise Refused(kind.replace(" ", "_").replace("-", "_"), f"{url}: {named} is {words}{rule}")
    return Target(scheme, host, port, path, tuple(str(a) for a in found))
