"""One webhook POST (issue 28, point 3): to an address that passed the check (addresses.vet), with
a timeout, following at most MAX_REDIRECTS redirects (each one checked again), reading at most
ANSWER_BYTES of the answer."""

import http.client
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urljoin

from django.conf import settings

from . import addresses

MAX_REDIRECTS = 3
ANSWER_BYTES = 500
REDIRECTS = (301, 302, 303, 307, 308)
USER_AGENT = "agentprocess-webhooks/1"


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: no answer (refused, timed out, connection failed)
    body: bytes
    error: str
    latency_ms: int

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def _connect(target: addresses.Target, timeout: float) -> socket.socket:
    last = None
    for address in target.addresses:
        try:
            return socket.create_connection((address, target.port), timeout=timeout)
        except OSError as error:
            last = error
    raise last or OSError(f"{target.host} has no address")


class _Connection(http.client.HTTPConnection):
    """http.client, but to the checked address (the Host header still names the host)."""

    def __init__(self, target: addresses.Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self._target = target

    def connect(self):
        self.sock = _connect(self._target, self.timeout)
        if self._target.scheme == "https":
            self.sock = ssl.create_default_context().wrap_socket(self.sock, server_hostname=self._target.host)


def post(url: str, body: bytes, headers: dict[str, str]) -> Answer:
    """POST the body; an Answer whatever happens (a refused address is an answer with its error)."""
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    started = time.monotonic()

    def answer(status, data=b"", error=""):
        return Answer(status, data, error[:500], round((time.monotonic() - started) * 1000))

    for _hop in range(MAX_REDIRECTS + 1):
        try:
            target = addresses.vet(url)
        except addresses.Refused as refused:
            return answer(None, error=f"refused: {refused.message}")
        connection = _Connection(target, timeout)
        try:
            connection.request("POST", target.path, body=body, headers={
                "Content-Type": "application/json", "User-Agent": USER_AGENT, **headers})
            response = connection.getresponse()
            data = response.read(ANSWER_BYTES)
            location = response.getheader("Location")
        except TimeoutError:
            return answer(None, error=f"no answer within {timeout:g} s")
        except (OSError, http.client.HTTPException) as error:
            return answer(None, error=f"{type(error).__name__}: {error}")
        finally:
            connection.close()
        if response.status in REDIRECTS and location:
            url = urljoin(url, location)
            continue
        return answer(response.status, data)
    return answer(None, error=f"more than {MAX_REDIRECTS} redirects")
