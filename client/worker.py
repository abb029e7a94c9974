"""`Worker(url, token).run(handler)`: the agent loop of the spec — get_work, claim, work the step
under a lease renewed in the background, submit (or escalate) — on N threads.

    def handler(step: Step) -> Submission:
        return Submission(output={"recorded": True}, summary="Recorded it.")

    Worker("http://127.0.0.1:8000", token, concurrency=4).run(handler)

One dispatcher (the thread that called `run`) lists work and hands each ready step to an idle
thread, so the threads of one worker never race each other for a claim; several worker processes
may share a queue (a lost race is a `conflict`, and the thread moves on).

A handler returns a `Submission`, or raises `Escalate(note)` to hand the step to a person. A
submission that is `not_accepted` goes back to the handler with `step.issues` (the claim stands)
up to `max_attempts` times, then the step is escalated with the issues as the note. Any other
exception releases the step (logged; the lease lapses and the step is ready again).

SIGTERM (and SIGINT) when `run` is called on the main thread, or `stop()` from anywhere: no new
work is taken; a step being worked is finished within `grace_seconds`, else released. A second
signal releases at once.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import errors
from .api import Client, RetryPolicy, new_request_id
from .lease import LeaseKeeper
from .types import Claim, Evidence, ReadyStep, Submission

log = logging.getLogger("client.worker")


class Escalate(Exception):
    """Raised by a handler: hand this step to a person with `note` (tools.md `escalate`)."""

    def __init__(self, note: str):
        super().__init__(note)
        self.note = note


@dataclass
class Step:
    """A claimed step, as the handler sees it: what to do (`instructions`, `output`, `evidence`,
    `next`), what came before (`handoff`, `data`, `inputs`), and the run's `body`."""

    run_id: str
    step_id: str
    process: str
    version: int
    mode: str
    instructions: str
    output: dict
    evidence: list[str]
    next: list[dict] | None
    handoff: dict | None
    body: str
    data: dict
    extensions: dict
    client: Client
    claim: Claim
    issues: list[str] = field(default_factory=list)  # why the previous attempt was not accepted
    attempt: int = 1
    _keeper: LeaseKeeper | None = None

    @property
    def inputs(self) -> dict:
        return self.data.get("inputs") or {}

    def progress(self, note: str) -> None:
        """Report progress: kept on the step with the next renewal, handed on if this lease lapses."""
        if self._keeper is not None:
            self._keeper.progress(note)

    @property
    def lease_lost(self) -> bool:
        """True once a renewal found the lease gone: a submission would be `stale`."""
        return self._keeper is not None and self._keeper.lost is not None

    def upload(self, source: str | Path | bytes, **options) -> Evidence:
        """Upload a file (a path, or bytes with `file_name=`) and return it as a `file` evidence item."""
        return self.client.upload(source, **options).evidence()


Handler = Callable[[Step], Submission]


@dataclass
class WorkerStats:
    claimed: int = 0
    completed: int = 0
    escalated: int = 0
    not_accepted: int = 0
    released: int = 0
    failed: int = 0
    lease_lost: int = 0
    run_ended: int = 0
    claim_conflicts: int = 0


@dataclass
class _Job:
    item: ReadyStep
    keeper: LeaseKeeper | None = None
    released: bool = False
    started: float = field(default_factory=time.monotonic)


class Worker:
    def __init__(self, url: str, token: str, *, transport: str = "rest", concurrency: int = 1,
                 process: str | None = None, poll_seconds: float = 1.0, grace_seconds: float = 30.0,
                 max_attempts: int = 3, retry: RetryPolicy | None = None, client: Client | None = None,
                 name: str = "worker"):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.client = client or Client(url, token, transport=transport, retry=retry)
        self._own_client = client is None
        self.concurrency = concurrency
        self.process = process
        self.poll_seconds = poll_seconds
        self.grace_seconds = grace_seconds
        self.max_attempts = max_attempts
        self.name = name
        self.stats = WorkerStats()
        self._stop = threading.Event()
        self._hurry = threading.Event()  # a second signal: release now
        self._changed = threading.Condition(threading.RLock())  # re-entrant: a signal handler notifies it
        self._queue: queue.Queue[ReadyStep | None] = queue.Queue()
        self._inflight: set[tuple[str, str]] = set()  # queued or being worked
        self._busy: dict[int, _Job] = {}
        self._stats_lock = threading.Lock()
        self._lease_seconds: float | None = None

    # --- control -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Take no new work; finish (or, after `grace_seconds`, release) what is being worked."""
        if self._stop.is_set():
            self._hurry.set()
        self._stop.set()
        with self._changed:
            self._changed.notify_all()

    def _count(self, name: str) -> None:
        with self._stats_lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)

    def _log(self, level: int, message: str, event: str, **fields: Any) -> None:
        log.log(level, message, extra={"event": event, "worker": self.name, **fields})

    # --- the loop ------------------------------------------------------------------------------
    def run(self, handler: Handler, *, until_idle: bool = False) -> WorkerStats:
        """Work until stopped (SIGTERM, SIGINT, `stop()`), or with `until_idle` until no work is
        left. Returns the counts; raises `Invalid` (or `Forbidden`) at once for a token the server refuses."""
        threads = [threading.Thread(target=self._serve, args=(handler, index), name=f"{self.name}-{index}", daemon=True)
                   for index in range(self.concurrency)]
        previous = self._install_signals()
        try:
            self._lease_seconds = self.client.described().lease_seconds
            for thread in threads:
                thread.start()
            self._log(logging.INFO, "worker started", "worker_started", concurrency=self.concurrency,
                      forProcess=self.process, transport=self.client.transport.name)
            self._dispatch(until_idle)
        finally:
            self._shut_down([thread for thread in threads if thread.is_alive()])
            self._restore_signals(previous)
            if self._own_client:
                self.client.close()
        self._log(logging.INFO, "worker stopped", "worker_stopped", **vars(self.stats))
        return self.stats

    def _install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return None
        handler = lambda signum, frame: self._on_signal(signum)
        return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}

    def _restore_signals(self, previous) -> None:
        for sig, old in (previous or {}).items():
            signal.signal(sig, old)

    def _on_signal(self, signum: int) -> None:
        self._log(logging.INFO, "stopping on a signal", "worker_stopping", signal=signal.Signals(signum).name)
        self.stop()

    def _dispatch(self, until_idle: bool) -> None:
        page_size = min(100, max(20, 2 * self.concurrency))
        while not self._stop.is_set():
            with self._changed:
                # List work only when a thread is free and nothing listed waits for one.
                while not self._stop.is_set() and (self._queue.qsize() or len(self._busy) >= self.concurrency):
                    self._changed.wait(0.5)
                if self._stop.is_set():
                    return
                quiet = not self._inflight
                free = self.concurrency - len(self._busy)
            try:
                page = self.client.get_work(limit=page_size, process=self.process, interrupt=self._stop)
            except (errors.Forbidden, errors.Invalid):
                raise
            except errors.ClientError as error:
                self._log(logging.WARNING, "get_work failed", "get_work_failed", cause=str(error))
                self._stop.wait(self.poll_seconds)
                continue
            fresh = [item for item in page.items if isinstance(item, ReadyStep)
                     and (item.run_id, item.step_id) not in self._inflight][:free]
            if not fresh:
                if until_idle and quiet:
                    self._log(logging.INFO, "no work left", "worker_idle")
                    return
                with self._changed:  # a step finishing may make the next one ready: wake for it
                    self._changed.wait(self.poll_seconds)
                continue
            with self._changed:
                for item in fresh:
                    self._inflight.add((item.run_id, item.step_id))
                    self._queue.put(item)

    def _shut_down(self, threads: list[threading.Thread]) -> None:
        self._stop.set()
        with self._changed:
            while True:  # listed but not started: never claimed, nothing to give back
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    self._inflight.discard((item.run_id, item.step_id))
        for _ in threads:
            self._queue.put(None)
        deadline = time.monotonic() + self.grace_seconds
        for thread in threads:
            while thread.is_alive() and time.monotonic() < deadline and not self._hurry.is_set():
                thread.join(min(0.2, max(0.0, deadline - time.monotonic())))
        with self._changed:
            unfinished = list(self._busy.values())
        for job in unfinished:
            job.released = True
            if job.keeper is not None:
                job.keeper.release()
                self._count("released")
                self._log(logging.WARNING, "step released: the worker stopped before it was done", "step_released",
                          runId=job.item.run_id, stepId=job.item.step_id)

    # --- one thread ----------------------------------------------------------------------------
    def _serve(self, handler: Handler, index: int) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            job = _Job(item)
            with self._changed:
                self._busy[index] = job
            try:
                self._work(handler, job, index)
            except Exception:  # never lose the thread: log and go on with the next step
                self._count("failed")
                log.exception("step failed", extra={"event": "step_failed", "worker": self.name,
                                                    "runId": item.run_id, "stepId": item.step_id})
                if job.keeper is not None:
                    job.keeper.release()
            finally:
                with self._changed:
                    self._busy.pop(index, None)
                    self._inflight.discard((item.run_id, item.step_id))
                    self._changed.notify_all()

    def _work(self, handler: Handler, job: _Job, index: int) -> None:
        item = job.item
        ids = {"runId": item.run_id, "stepId": item.step_id, "slot": index}
        if self._stop.is_set():
            return
        try:
            claim = self.client.claim(item.run_id, item.step_id)
        except (errors.Conflict, errors.NotFound) as error:
            self._count("claim_conflicts")
            self._log(logging.DEBUG, "not claimed", "claim_refused", code=error.code, issues=error.issues, **ids)
            return
        self._count("claimed")
        keeper = LeaseKeeper(self.client, claim, run_id=item.run_id, step_id=item.step_id,
                             lease_seconds=self._lease_seconds).start()
        job.keeper = keeper
        self._log(logging.INFO, "step claimed", "step_claimed", expiresAt=claim.expires_at, **ids)
        step = Step(run_id=item.run_id, step_id=item.step_id, process=item.process, version=item.version,
                    mode=claim.mode, instructions=claim.step.instructions, output=claim.step.output,
                    evidence=claim.step.evidence, next=claim.step.next, handoff=claim.handoff, body=claim.body,
                    data=claim.data, extensions=claim.extensions, client=self.client, claim=claim, _keeper=keeper)
        try:
            self._attempts(handler, job, step, ids)
        finally:
            keeper.finish()

    def _attempts(self, handler: Handler, job: _Job, step: Step, ids: dict) -> None:
        keeper = job.keeper
        for attempt in range(1, self.max_attempts + 1):
            step.attempt = attempt
            try:
                submission = handler(step)
            except Escalate as escalation:
                if not job.released:
                    self._escalate(job, escalation.note, ids)
                return
            except Exception as error:
                if job.released:
                    return
                self._count("failed")
                log.exception("the handler failed; step released", extra={
                    "event": "handler_failed", "worker": self.name, **ids, "error": type(error).__name__})
                job.released = True
                keeper.release()
                return
            if job.released:  # the worker gave the step up while the handler worked
                return
            if not isinstance(submission, Submission):
                raise TypeError(f"the handler returned {type(submission).__name__}, not a Submission")
            try:
                request_id = new_request_id()
                self._settle(lambda token, s=submission, r=request_id: self.client.submit(token, s, request_id=r),
                             keeper, ids)
            except errors.NotAccepted as refusal:
                self._count("not_accepted")
                step.issues = refusal.issues
                self._log(logging.WARNING, "submission not accepted", "step_not_accepted", issues=refusal.issues,
                          attempt=attempt, **ids)
                continue
            except errors.Stale:
                self._count("lease_lost")
                self._log(logging.WARNING, "lease lost before the submission", "step_stale", **ids)
                return
            except errors.RunEnded:
                self._count("run_ended")
                self._log(logging.INFO, "the run ended while the step was worked", "step_run_ended", **ids)
                return
            self._count("completed")
            self._log(logging.INFO, "step completed", "step_completed", attempt=attempt, renewals=keeper.renewals,
                      seconds=round(time.monotonic() - job.started, 3), **ids)
            return
        self._escalate(job, f"Not accepted after {self.max_attempts} attempts: " + "; ".join(step.issues), ids)

    def _settle(self, call, keeper: LeaseKeeper, ids: dict, tries: int = 3):
        """A submit or escalate whose answer may be lost: each call has the client's whole retry
        budget; past it, the same call (same requestId) is sent again, because it may have been
        applied and only a replay can tell."""
        for attempt in range(1, tries + 1):
            try:
                return keeper.use(call)
            except (errors.Unreachable, errors.Retry) as error:
                if attempt == tries:
                    raise
                self._log(logging.WARNING, "no answer; sending the same call again", "settle_retry",
                          cause=str(error), **ids)
        raise AssertionError("unreachable")

    def _escalate(self, job: _Job, note: str, ids: dict) -> None:
        request_id = new_request_id()
        try:
            self._settle(lambda token: self.client.escalate(token, note, request_id=request_id), job.keeper, ids)
        except errors.Stale:
            self._count("lease_lost")
            self._log(logging.WARNING, "lease lost before the escalation", "step_stale", **ids)
            return
        except errors.RunEnded:
            self._count("run_ended")
            return
        self._count("escalated")
        self._log(logging.INFO, "step escalated", "step_escalated", note=note, **ids)
