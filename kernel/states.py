"""The protocol's state words (spec §3.5, tools.md), one definition each, used everywhere.

Runs, steps and work items store these values; the processes app (maps) reads them too, so they
live here rather than in runs/models.py, which imports processes.
"""

from django.db import models


class RunState(models.TextChoices):
    ACTIVE = "active"
    WAITING = "waiting"
    ENDED = "ended"
    CANCELLED = "cancelled"


ENDED_STATES = (RunState.ENDED, RunState.CANCELLED)


class StepStatus(models.TextChoices):
    """`steps[].state` of the run view (spec §3.5). None (not a member) is a step not reached."""

    READY = "ready"
    CLAIMED = "claimed"
    WAITING = "waiting"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


# Reached and not finished: what ending a run cancels, what a due clock runs on.
UNFINISHED = (StepStatus.READY, StepStatus.CLAIMED, StepStatus.WAITING)
# An agent step an agent may claim (a claimed one once its lease lapsed).
CLAIMABLE = (StepStatus.READY, StepStatus.CLAIMED)


class WorkItemState(models.TextChoices):
    OPEN = "open"
    DECIDED = "decided"
    REMOVED = "removed"


class Decision(models.TextChoices):
    """What `decide` takes (tools.md)."""

    COMPLETED = "completed"
    APPROVED = "approved"
    REJECTED = "rejected"
    RETURNED = "returned"
    FAILED = "failed"
