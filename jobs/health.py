"""Whether the console is healthy: its database answers and its worker is alive.

The worker says it is alive with a heartbeat, one row (models.WorkerHeartbeat) it updates
as it ticks, at most every HEARTBEAT_SECONDS: one indexed UPDATE, so a tick of 1 s costs
the database one write every 5 s. The row lives in the database, not in a file of the var
dir, because the database is all a web server and a worker on two machines share. A worker
that stops cleanly (SIGTERM, Ctrl-C) says so in the same row; one killed outright just stops
beating, and is taken for not running once WORKER_STALE_SECONDS pass without a beat.

Ages are worked out with the web server's clock against the worker's: the two machines'
clocks must agree (NTP) to within well under WORKER_STALE_SECONDS.

Read by the health endpoint (`GET /healthz`, jobs.health_views), the banner on users' pages
and staff's admin pages, and the job page's "why waiting" line (jobs.scheduler.why_waiting).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import metadata

from django.conf import settings
from django.contrib.auth.models import User
from django.db import DatabaseError
from django.db.models import BooleanField, Case, Exists, OuterRef, Subquery, Value, When
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from .models import Job, JobStatus, WorkerHeartbeat

HEARTBEAT_SECONDS = 5.0
# The one row's key.
HEARTBEAT_PK = 1
# The statuses in which a job waits for the worker to move it on (start, submit, follow, stop).
WORKER_STATUSES = frozenset(
    {JobStatus.QUEUED, JobStatus.SUBMITTING, JobStatus.RUNNING, JobStatus.STOPPING}
)

OK, STALE, STOPPED, NEVER_SEEN = "ok", "stale", "stopped", "never_seen"


def console_version() -> str:
    try:
        return metadata.version("ai-job-console")
    except metadata.PackageNotFoundError:  # a checkout that was never installed
        return ""


@dataclass(frozen=True)
class WorkerState:
    """What the heartbeat says now (None everywhere: no worker ever reported)."""

    now: datetime
    seen_at: datetime | None = None
    stopped_at: datetime | None = None
    started_at: datetime | None = None
    host: str = ""
    pid: int | None = None
    version: str = ""

    @property
    def status(self) -> str:
        if self.seen_at is None:
            return NEVER_SEEN
        if self.stopped_at is not None:
            return STOPPED
        if self.last_seen_seconds > settings.WORKER_STALE_SECONDS:
            return STALE
        return OK

    @property
    def running(self) -> bool:
        return self.status == OK

    @property
    def last_seen_seconds(self) -> int | None:
        if self.seen_at is None:
            return None
        # A worker's clock a little ahead of the web server's does not make a negative age.
        return max(int((self.now - self.seen_at).total_seconds()), 0)

    @property
    def banner(self) -> str | None:
        """What users waiting on the worker are told while it does not run (None: it runs)."""
        if self.running:
            return None
        minutes = (self.last_seen_seconds or 0) // 60
        if not minutes:  # never seen, or stopped a moment ago
            return _(
                "The job scheduler (worker) is not running: queued jobs will not start and "
                "running jobs are not tracked. Please contact an administrator."
            )
        return ngettext(
            "The job scheduler (worker) has not run for %(minutes)d minute: queued jobs will "
            "not start and running jobs are not tracked. Please contact an administrator.",
            "The job scheduler (worker) has not run for %(minutes)d minutes: queued jobs will "
            "not start and running jobs are not tracked. Please contact an administrator.",
            minutes,
        ) % {"minutes": minutes}


FIELDS = ("seen_at", "stopped_at", "started_at", "host", "pid", "version")


def worker_state(*, now: datetime | None = None) -> WorkerState:
    """The heartbeat as it stands: one query of one row."""
    row = WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK).values(*FIELDS).first()
    return WorkerState(now=now or timezone.now(), **(row or {}))


def worker_state_for(*, user: User) -> tuple[WorkerState, bool]:
    """The heartbeat, and whether `user` has jobs waiting on the worker (WORKER_STATUSES), in
    one query: the job list asks on every load, and must cost one query more, not two. The
    user's jobs are looked at only while the worker does not run (the database skips the
    CASE's other branch): with it running, the query reads the heartbeat's row alone."""
    now = timezone.now()
    heartbeat = WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK)
    alive = heartbeat.filter(
        stopped_at=None, seen_at__gte=now - timedelta(seconds=settings.WORKER_STALE_SECONDS)
    )
    waiting = Job.objects.filter(owner=OuterRef("pk"), status__in=WORKER_STATUSES)
    row = (
        User.objects.filter(pk=user.pk)
        .annotate(
            **{f"heartbeat_{name}": Subquery(heartbeat.values(name)[:1]) for name in FIELDS},
            waiting_on_worker=Case(
                When(Exists(alive), then=Value(False)),
                default=Exists(waiting),
                output_field=BooleanField(),
            ),
        )
        .values("waiting_on_worker", *(f"heartbeat_{name}" for name in FIELDS))
        .get()
    )
    state = WorkerState(
        now=now,
        **{name: row[f"heartbeat_{name}"] for name in FIELDS if row[f"heartbeat_{name}"]},
    )
    return state, bool(row["waiting_on_worker"])


def worker_beat(*, started_at: datetime) -> None:
    """The worker says it is alive (and who it is); one UPDATE, an INSERT the first time."""
    fields = {
        "seen_at": timezone.now(),
        "stopped_at": None,
        "started_at": started_at,
        "host": socket.gethostname()[:255],
        "pid": os.getpid(),
        "version": console_version()[:32],
    }
    if not WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK).update(**fields):
        WorkerHeartbeat.objects.update_or_create(pk=HEARTBEAT_PK, defaults=fields)


def worker_stopped() -> None:
    """The worker says it stopped cleanly: it is not running from now on, whatever its last
    beat (a stopped worker is not waited out for WORKER_STALE_SECONDS)."""
    now = timezone.now()
    WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK, pid=os.getpid()).update(
        seen_at=now, stopped_at=now
    )


def health(*, check_worker: bool) -> tuple[bool, dict[str, object]]:
    """Whether the console is healthy, and the small document the health endpoint answers:
    nothing secret and nothing of the machines (it is answered to anyone), no write."""
    try:
        state = worker_state()
    except DatabaseError:
        body: dict[str, object] = {"status": "error", "database": "error"}
        if check_worker:
            body["worker"] = {"status": "unknown", "last_seen_seconds": None}
        return False, body
    healthy = state.running or not check_worker
    body = {"status": "ok" if healthy else "error", "database": "ok"}
    if check_worker:
        body["worker"] = {"status": state.status, "last_seen_seconds": state.last_seen_seconds}
    return healthy, body
