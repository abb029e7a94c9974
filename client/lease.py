"""A claim's lease kept alive in the background while its step is worked (tools.md `renew`).

The keeper renews at half of the time left (so one renewal may fail and be retried well before
`expiresAt`), with the progress note the work last reported, and swaps in the new token: the
previous one is invalid once a renewal returns. `finish()` stops the renewals and waits for one in
flight, so the submission that follows carries the current token.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time

from . import errors
from .api import new_request_id
from .types import Claim

log = logging.getLogger("client.lease")

MIN_PAUSE = 0.2  # seconds between renewals at the least, however short the lease


def seconds_left(expires_at: str, now: dt.datetime | None = None) -> float:
    at = dt.datetime.fromisoformat(expires_at)
    return (at - (now or dt.datetime.now(dt.UTC))).total_seconds()


class LeaseKeeper:
    def __init__(self, client, claim: Claim, *, run_id: str, step_id: str, lease_seconds: float | None = None):
        self.client = client
        self.run_id, self.step_id = run_id, step_id
        self._token = claim.token
        self._expires_at = claim.expires_at
        self._received = time.monotonic()
        self._lease_seconds = lease_seconds  # describe.leaseSeconds: a bound on a skewed clock
        self._progress: str | None = None
        self._progress_sent: str | None = None
        self._unanswered: tuple[str, str | None] | None = None  # (requestId, progress) of a renewal in doubt
        self._lock = threading.Lock()  # held while a renewal is in flight
        self._stop = threading.Event()
        self.lost: errors.ToolError | errors.ClientError | None = None
        self.renewals = 0
        self._thread = threading.Thread(target=self._keep, name=f"lease {run_id}/{step_id}", daemon=True)

    def start(self) -> LeaseKeeper:
        self._thread.start()
        return self

    @property
    def token(self) -> str:
        with self._lock:
            return self._token

    @property
    def expires_at(self) -> str:
        return self._expires_at

    def progress(self, note: str) -> None:
        """Kept on the step with the next renewal; handed to the next claimant if this lease lapses."""
        self._progress = note

    def _pause(self) -> float:
        left = seconds_left(self._expires_at)
        if self._lease_seconds:
            left = min(left, self._lease_seconds - (time.monotonic() - self._received))
        return max(MIN_PAUSE, left / 2)

    def _keep(self) -> None:
        while not self._stop.wait(self._pause()):
            with self._lock:
                if self._stop.is_set():
                    return
                self._renew(self._progress)
                if self.lost is not None:
                    return

    def _renew(self, progress: str | None) -> None:
        # A renewal that got no answer may have been applied (and the token replaced): the next
        # try repeats it with the same requestId and progress, so a replay hands over that token.
        request_id, progress = self._unanswered or (new_request_id(), progress)
        self._unanswered = None
        try:
            renewal = self.client.renew(self._token, progress=progress, request_id=request_id)
        except (errors.Stale, errors.Conflict, errors.Forbidden, errors.NotFound, errors.Invalid) as error:
            self.lost = error
            log.warning("lease lost", extra={"event": "lease_lost", "runId": self.run_id, "stepId": self.step_id,
                                             "code": error.code, "issues": error.issues})
            return
        except (errors.Unreachable, errors.Retry) as error:  # away past the retry budget: try again later
            self._unanswered = (request_id, progress)
            log.warning("renewal failed", extra={"event": "renew_failed", "runId": self.run_id,
                                                 "stepId": self.step_id, "cause": str(error)})
            return
        except errors.ClientError as error:  # an answer this client cannot read: keep the lease, say so
            log.error("renewal failed", extra={"event": "renew_failed", "runId": self.run_id,
                                               "stepId": self.step_id, "cause": str(error)})
            return
        self._token, self._expires_at, self._received = renewal.token, renewal.expires_at, time.monotonic()
        self._progress_sent = progress
        self.renewals += 1
        log.debug("lease renewed", extra={"event": "lease_renewed", "runId": self.run_id, "stepId": self.step_id,
                                          "expiresAt": renewal.expires_at})

    def use(self, call):
        """`call(token)` with no renewal in flight (a renewal replaces the token). Renewals stop
        once it returns or fails, except on `not_accepted`: then the claim stands and is kept."""
        with self._lock:
            try:
                result = call(self._token)
            except errors.NotAccepted:
                raise
            except BaseException:
                self._stop.set()
                raise
            self._stop.set()
            return result

    def finish(self) -> str:
        """Stop renewing (waiting out a renewal in flight) and return the current token."""
        self._stop.set()
        with self._lock:
            return self._token

    def release(self) -> None:
        """Give the step up without finishing it. There is no release tool: stop renewing, so the
        lease lapses and the step is ready again. Progress reported since the last renewal is sent
        first (it becomes the next claimant's handoff), at the price of one more lease length."""
        self._stop.set()
        with self._lock:
            if self.lost is None and self._progress is not None and self._progress != self._progress_sent:
                self._renew(self._progress)
