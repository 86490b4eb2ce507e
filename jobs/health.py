"""Whether the console is healthy: its database answers and its worker is alive; and which
worker may dispatch.

One worker dispatches per database: it holds a lease, the one row of models.WorkerHeartbeat
(the holder's random instance id, host, pid, run directory, since when), renewed as it ticks,
at most every WORKER_HEARTBEAT_SECONDS (one indexed UPDATE). A second worker sharing the database
(another host, or another run directory) fails to take it and stands by, trying again as it
ticks; it takes the lease over once the holder stopped cleanly (SIGTERM, Ctrl-C) or its lease
is older than WORKER_STALE_SECONDS (killed, hung, its machine gone). Taking and renewing are
conditional UPDATEs of that one row (WHERE holder = me, or WHERE it is free): SQLite runs one
writer at a time, and PostgreSQL re-checks the condition on the row a concurrent winner just
wrote, so two workers can never both win. Every worker, active or standing by, also beats its
own row of models.WorkerProcess, for staff's list of workers.

Every time is the database's clock: written as NOW() and compared with NOW() in the same
query, so the web servers' and the workers' clocks may disagree without showing a live worker
as stale or a dead one as live.

Read by the health endpoint (`GET /healthz`, jobs.health_views), the banner on users' pages
and staff's admin pages, and the job page's "why waiting" line (jobs.scheduler.why_waiting).
"""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.models import User
from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    Error,
    IntegrityError,
    connections,
    transaction,
)
from django.db.models import (
    BooleanField,
    Case,
    Exists,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    Value,
    When,
)
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Now
from django.utils.formats import date_format
from django.utils.timezone import localtime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from .models import Job, JobStatus, WorkerHeartbeat, WorkerProcess
from .texts import display_text, list_words, recorded, source_of

if TYPE_CHECKING:
    from .job_users import Problem

# The one row's key.
HEARTBEAT_PK = 1
# How long staff's list of workers remembers one that stopped beating.
KNOWN_WORKERS_FOR = timedelta(days=1)
# The statuses in which a job waits for the worker to move it on (start, submit, follow, stop).
WORKER_STATUSES = frozenset(
    {JobStatus.QUEUED, JobStatus.SUBMITTING, JobStatus.RUNNING, JobStatus.STOPPING}
)

OK, STALE, STOPPED, NEVER_SEEN = "ok", "stale", "stopped", "never_seen"
# No worker runs, and the last one started since a worker last took the lease refused to run
# (its settings failed its start-up checks: worker_refused).
REFUSED = "refused"
# A worker process another was started in place of (KnownWorker.role), so gone.
REPLACED = "replaced"


def database_unreachable_reason() -> str | None:
    """Why the database cannot be connected to right now (the driver's words, on one line), or
    None when it can: after a failure, tells an outage from an error of one query."""
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        if connection.connection is not None and not connection.is_usable():
            connection.close()
        connection.ensure_connection()
    except Error as exc:
        return " ".join(str(exc).split())
    return None


def _sqlite_code(exception: BaseException | None) -> int | None:
    """SQLite's primary result code of the error Django wrapped in `exception`, if SQLite's."""
    cause = exception.__cause__ if exception is not None else None
    code = getattr(cause, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(cause, sqlite3.Error) and code is not None else None


def sqlite_busy(exception: BaseException | None) -> bool:
    """Whether `exception` is SQLite's "database is locked": another process (a backup, a
    `sqlite3` shell, a long migration) held the write lock past the connection's wait."""
    return _sqlite_code(exception) == sqlite3.SQLITE_BUSY


def database_disk_full(exception: BaseException | None) -> bool:
    """Whether `exception` is the database refusing a write for a full disk: SQLite's
    "database or disk is full", PostgreSQL's disk_full (SQLSTATE 53100)."""
    cause = exception.__cause__ if exception is not None else None
    return _sqlite_code(exception) == sqlite3.SQLITE_FULL or (
        getattr(cause, "sqlstate", None) == "53100"
    )


def database_write_refused_reason(exception: BaseException | None) -> str | None:
    """Why the database refused a write that `exception` reports, when it answers reads but
    cannot take writes for now (its disk full, SQLite held by another process); else None."""
    if database_disk_full(exception):
        return f"its disk is full ({' '.join(str(exception).split())})"
    if sqlite_busy(exception):
        return f"another connection holds it ({' '.join(str(exception).split())})"
    return None


def console_version() -> str:
    try:
        return metadata.version("ai-job-console")
    except metadata.PackageNotFoundError:  # a checkout that was never installed
        return ""


@dataclass(frozen=True)
class WorkerState:
    """What the lease says now (None everywhere: no worker ever reported). `age`: how long
    ago it was last renewed, by the database's clock."""

    age: timedelta | None = None
    seen_at: datetime | None = None
    stopped_at: datetime | None = None
    started_at: datetime | None = None
    host: str = ""
    pid: int | None = None
    version: str = ""
    # Why local jobs cannot start under this worker, found by its start-up check ("" when
    # they can): LOCAL_JOB_NETWORK=isolated where the kernel refuses network namespaces.
    network_problem: str = ""
    # Why the last worker started refused to run ("" when none did since the lease was last
    # taken): /healthz's English, and each reason's source (worker_refused).
    refused: str = ""
    refused_source: tuple | list = ()
    refused_at: datetime | None = None
    # Workers beating now that do not hold the lease (they take over if it lapses).
    standby: int = 0
    # The holder's remote threads (AIHC, Kubernetes: one each): when the one that got on least
    # recently last got on (None: no remote thread reported) and how long ago by the
    # database's clock, whether its worker finds one stuck (RemoteProgress), and on which
    # platforms then (remote_platforms).
    remote_progress_at: datetime | None = None
    remote_age: timedelta | None = None
    remote_stuck: bool = False
    remote_platform: str = ""

    @property
    def status(self) -> str:
        if self.seen_at is None:
            found = NEVER_SEEN
        elif self.stopped_at is not None:
            found = STOPPED
        elif (self.last_seen_seconds or 0) > settings.WORKER_STALE_SECONDS:
            found = STALE
        else:
            return OK
        # A refusal says why none runs; while one runs (another host's worker refused beside
        # it), it does not matter to monitoring, and the refused worker's output says it.
        return REFUSED if self.refusal_current else found

    @property
    def refusal_current(self) -> bool:
        """Whether the refusal recorded is why no worker runs now: made after the lease's
        last worker's last beat, or at most WORKER_STALE_SECONDS before it. Found in review:
        a refusal made once beside a running worker (`manage.py worker` run by hand as
        another user, a standby since fixed) was kept while that worker ran for days, and
        said as the reason when it stopped or died; a refused worker that is started again
        (serve, a service manager) renews it within that time, so it is said again then."""
        if not self.refused:
            return False
        if self.seen_at is None or self.refused_at is None:
            return True
        return self.refused_at >= self.seen_at - timedelta(seconds=settings.WORKER_STALE_SECONDS)

    @property
    def running(self) -> bool:
        return self.status == OK

    @property
    def last_seen_seconds(self) -> int | None:
        if self.seen_at is None or self.age is None:
            return None
        # Both ends are the database's clock: no skew. (A row an older release wrote with a
        # machine's clock ahead of the database's does not make a negative age.)
        return max(int(self.age.total_seconds()), 0)

    @property
    def problem(self) -> str | None:
        """What staff are told (the banner) of a running worker that cannot start local jobs,
        or of the refusal that is why none runs (REFUSED), in the reader's language; None
        otherwise. (/healthz says it in English: `health`.)"""
        if self.status == REFUSED:
            return refusal_shown(self.refused, self.refused_source)
        if not self.running or not self.network_problem:
            return None
        return problem_shown(self.network_problem)

    @property
    def remote_last_progress_seconds(self) -> int | None:
        """How long ago the running worker's remote thread last got on; None while no
        worker runs or none reported one (a worker older than 0041)."""
        if not self.running or self.remote_age is None:
            return None
        return max(int(self.remote_age.total_seconds()), 0)

    @property
    def remote_problem(self) -> str | None:
        """What staff are told of a running worker whose remote thread is stuck (its worker
        found it waiting longer than jobs.worker.REMOTE_STUCK_SECONDS), in the reader's
        language: the platform and since when. None otherwise. Local jobs are not held up by
        it, so it is no `problem` (which makes /healthz answer 503): restarting the console
        would not make a platform answer (left40)."""
        seconds = self.remote_last_progress_seconds
        if seconds is None or not self.remote_stuck or self.remote_progress_at is None:
            return None
        since = date_format(localtime(self.remote_progress_at), "Y-m-d H:i:s")
        minutes = seconds // 60
        # Each platform has a thread of its own (fix85b): the one stuck longest is the one
        # since `since`; another stuck too is named after it.
        platform, *others = [PLATFORM_NAMES.get(p, p) for p in self.remote_platforms] or [""]
        if platform and others:
            return ngettext(
                "AIHC and Kubernetes jobs are not being submitted or synced: the worker has "
                "waited on %(platform)s since %(since)s (%(minutes)d minute) and on %(other)s "
                "for less long. Local jobs run as usual; the worker's log names the jobs it "
                "waits on.",
                "AIHC and Kubernetes jobs are not being submitted or synced: the worker has "
                "waited on %(platform)s since %(since)s (%(minutes)d minutes) and on %(other)s "
                "for less long. Local jobs run as usual; the worker's log names the jobs it "
                "waits on.",
                minutes,
            ) % {"platform": platform, "other": others[0], "since": since, "minutes": minutes}
        if platform:
            return ngettext(
                "%(platform)s jobs are not being submitted or synced: the worker has waited on "
                "%(platform)s since %(since)s (%(minutes)d minute). Local jobs run as usual, "
                "as do other platforms' jobs; the worker's log names the job it waits on.",
                "%(platform)s jobs are not being submitted or synced: the worker has waited on "
                "%(platform)s since %(since)s (%(minutes)d minutes). Local jobs run as usual, "
                "as do other platforms' jobs; the worker's log names the job it waits on.",
                minutes,
            ) % {"platform": platform, "since": since, "minutes": minutes}
        # A worker written before fix85b that did not know the platform.
        return ngettext(
            "AIHC and Kubernetes jobs are not being submitted or synced: the worker's remote "
            "thread has not got on since %(since)s (%(minutes)d minute). Local jobs run as "
            "usual.",
            "AIHC and Kubernetes jobs are not being submitted or synced: the worker's remote "
            "thread has not got on since %(since)s (%(minutes)d minutes). Local jobs run as "
            "usual.",
            minutes,
        ) % {"since": since, "minutes": minutes}

    @property
    def remote_health(self) -> dict[str, object] | None:
        """/healthz's `remote` part of a running worker (None: no remote thread reported)."""
        seconds = self.remote_last_progress_seconds
        if seconds is None:
            return None
        part: dict[str, object] = {"last_progress_seconds": seconds, "stuck": self.remote_stuck}
        if self.remote_stuck and self.remote_platform:
            # `platform`: the one stuck longest, as before fix85b; `platforms`: each stuck.
            part["platform"] = self.remote_platforms[0]
            part["platforms"] = self.remote_platforms
        return part

    @property
    def remote_platforms(self) -> list[str]:
        """The platforms whose remote thread is stuck, the longest stuck first (RemoteProgress
        writes them comma-separated; a worker before fix85b wrote one, or none)."""
        return [p for p in self.remote_platform.split(",") if p] if self.remote_stuck else []

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

    @property
    def staff_banner(self) -> str | None:
        """`banner` as staff read it: what to check instead of "contact an administrator",
        which they are (qa102): the worker's log (serve's output, the journal under systemd,
        as README's "Where the logs are" names them) and /healthz."""
        if self.running:
            return None
        minutes = (self.last_seen_seconds or 0) // 60
        if not minutes:
            return _(
                "The job scheduler (worker) is not running: queued jobs will not start and "
                "running jobs are not tracked. Its log says why: the output of manage.py serve "
                "(the terminal of make run, or journalctl -u ai-job-console under systemd); "
                "/healthz says once it runs again."
            )
        return ngettext(
            "The job scheduler (worker) has not run for %(minutes)d minute: queued jobs will "
            "not start and running jobs are not tracked. Its log says why: the output of "
            "manage.py serve (the terminal of make run, or journalctl -u ai-job-console under "
            "systemd); /healthz says once it runs again.",
            "The job scheduler (worker) has not run for %(minutes)d minutes: queued jobs will "
            "not start and running jobs are not tracked. Its log says why: the output of "
            "manage.py serve (the terminal of make run, or journalctl -u ai-job-console under "
            "systemd); /healthz says once it runs again.",
            minutes,
        ) % {"minutes": minutes}


FIELDS = (
    "seen_at",
    "stopped_at",
    "started_at",
    "host",
    "pid",
    "version",
    "network_problem",
    "refused",
    "refused_source",
    "refused_at",
    "remote_progress_at",
    "remote_stuck",
    "remote_platform",
)

# How staff read the platform a stuck remote thread waits on (the backends' names).
PLATFORM_NAMES = {"aihc": "AIHC", "kubernetes": "Kubernetes"}


@dataclass(frozen=True)
class RemoteProgress:
    """What the worker's loop writes of its remote threads with each renewal of the lease:
    how long since the one that got on least recently last got on (seconds, by the worker's
    monotonic clock, written as the database's NOW() less that), whether that is stuck, and
    the platforms of the stuck ones, the longest stuck first, comma-separated
    (jobs.worker.remote_progress)."""

    waited_seconds: float
    stuck: bool = False
    platform: str = ""

    def fields(self) -> dict[str, object]:
        return {
            "remote_progress_at": Now() - timedelta(seconds=self.waited_seconds),
            "remote_stuck": self.stuck,
            "remote_platform": self.platform[:32] if self.stuck else "",
        }


NO_REMOTE = {"remote_progress_at": None, "remote_stuck": False, "remote_platform": ""}


def _stale_before() -> CombinedExpression:
    """The database's now less WORKER_STALE_SECONDS: a lease renewed before it has lapsed."""
    return Now() - timedelta(seconds=settings.WORKER_STALE_SECONDS)


def _replaced() -> Exists:
    """Whether a worker process was started since in this one's place (the same host and run
    directory). Only one worker runs per run directory (it holds `worker.lock` while it
    lives, and writes its row only once it holds it), so such a process is gone, killed,
    however recently it beat: a worker restarted after a kill -9 takes the lease at once
    (worker_beat's `run_dir_locked`), and its predecessor must not read as standing by
    until WORKER_STALE_SECONDS have passed. Two machines with the same host name and run
    directory are taken for one, as worker_beat takes them."""
    return Exists(
        WorkerProcess.objects.filter(
            host=OuterRef("host"), run_dir=OuterRef("run_dir"), pk__gt=OuterRef("pk")
        )
    )


def _standby() -> Subquery:
    """How many workers beat now without holding the lease (a subquery: no query more)."""
    holds = WorkerHeartbeat.objects.filter(
        pk=HEARTBEAT_PK, holder=OuterRef("instance"), stopped_at=None
    )
    beating = (
        WorkerProcess.objects.filter(stopped_at=None, seen_at__gte=_stale_before())
        .filter(~Exists(holds), ~_replaced())
        .annotate(n=Func(F("pk"), function="COUNT"))
        .values("n")
    )
    return Subquery(beating, output_field=IntegerField())


def _state(row: dict, *, prefix: str = "") -> WorkerState:
    values = {name: row[f"{prefix}{name}"] for name in FIELDS if row[f"{prefix}{name}"]}
    seen_at, db_now = row[f"{prefix}seen_at"], row[f"{prefix}db_now"]
    age = db_now - seen_at if seen_at is not None and db_now is not None else None
    progress_at = row[f"{prefix}remote_progress_at"]
    remote_age = db_now - progress_at if progress_at is not None and db_now is not None else None
    return WorkerState(
        age=age, remote_age=remote_age, standby=row[f"{prefix}standby"] or 0, **values
    )


def worker_state() -> WorkerState:
    """The lease as it stands, aged on the database's clock: one query of one row."""
    row = (
        WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK)
        .annotate(db_now=Now(), standby=_standby())
        .values("db_now", "standby", *FIELDS)
        .first()
    )
    return _state(row) if row else WorkerState()


def worker_state_for(*, user: User) -> tuple[WorkerState, bool]:
    """The lease, and whether `user` has jobs waiting on the worker (WORKER_STATUSES), in
    one query: the job list asks on every load, and must cost one query more, not two. The
    user's jobs are looked at only while the worker does not run (the database skips the
    CASE's other branch): with it running, the query reads the heartbeat's row alone."""
    heartbeat = WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK)
    alive = heartbeat.filter(stopped_at=None, seen_at__gte=_stale_before())
    waiting = Job.objects.filter(owner=OuterRef("pk"), status__in=WORKER_STATUSES)
    row = (
        User.objects.filter(pk=user.pk)
        .annotate(
            **{f"heartbeat_{name}": Subquery(heartbeat.values(name)[:1]) for name in FIELDS},
            heartbeat_db_now=Now(),
            heartbeat_standby=Value(0),
            waiting_on_worker=Case(
                When(Exists(alive), then=Value(False)),
                default=Exists(waiting),
                output_field=BooleanField(),
            ),
        )
        .values(
            "waiting_on_worker",
            "heartbeat_db_now",
            "heartbeat_standby",
            *(f"heartbeat_{name}" for name in FIELDS),
        )
        .get()
    )
    return _state(row, prefix="heartbeat_"), bool(row["waiting_on_worker"])


# The start-up check's own words in a worker's `network_problem` (jobs.network: the holder
# ended without saying why; jobs.worker: the check itself could not be made), stored in
# English as /healthz answers them, and read by people in their language (problem_recorded).
# Anything else there is the kernel's or the holder's own error, shown as it was written.
OWN_PROBLEMS = (
    (
        re.compile(r"exit code (?P<code>-?\d+)"),
        gettext_noop("the namespace holder ended with exit code %(code)s"),
    ),
    (
        re.compile(r"the check failed: (?P<error>.*)", re.S),
        gettext_noop("the check could not be made: %(error)s"),
    ),
    # LOCAL_JOB_NETWORK=isolated-outbound (jobs.network.slirp_missing, jobs/netns_holder.py).
    (
        re.compile(r"slirp4netns is not installed at (?P<path>.*)", re.S),
        gettext_noop("slirp4netns is not installed at %(path)s (apt-get install slirp4netns)"),
    ),
)


def problem_recorded(reason: str) -> str:
    """A worker's `network_problem` as a recorded text (jobs.texts: said in each reader's
    language) when it is in the check's own words; the kernel's words as they are."""
    for pattern, message in OWN_PROBLEMS:
        if found := pattern.fullmatch(reason):
            return recorded(message, **found.groupdict())
    return reason


def problem_shown(reason: str) -> str:
    """What staff read of a worker's `network_problem`, in the page's language (the banner,
    the admin index, the list of workers)."""
    said = problem_recorded(reason)
    return _("isolated networking unavailable: %(reason)s") % {
        "reason": display_text(said, source_of(said))
    }


def refusal_public(sources: list | tuple) -> str:
    """What /healthz says of a refusal (in English, to anyone): each reason in its wording
    that names no folder, user or group of this machine (jobs.job_users.Problem)."""
    said: list[str] = []
    for source in sources:
        try:
            text = (source.get("public") or source["key"]) % source["params"]
        except (AttributeError, KeyError, TypeError, ValueError):
            continue
        if text not in said:  # two folders blocked read the same without their names
            said.append(text)
    return "the worker refused to start: " + "; ".join(said)


def refusal_shown(refused: str, sources: list | tuple) -> str:
    """What staff read of a refusal, in the page's language: each reason in full (the folder
    to open, the user in the way), said again from its message; as stored when it cannot be."""
    said = []
    for source in sources:
        try:
            said.append(_(source["key"]) % source["params"])
        except (KeyError, TypeError, ValueError):
            said = []
            break
    return _("The worker refused to start: %(reason)s") % {
        "reason": "; ".join(said) if said else refused.removeprefix("the worker refused to start: ")
    }


def worker_refused(*, problems: list[Problem]) -> None:
    """A worker refusing to run (its settings failed its start-up checks: each of `problems`
    a jobs.job_users.Problem) records why in the lease, before it exits, so /healthz and
    staff's pages say it until a worker takes the lease (worker_beat clears it). The lease's
    holder, if any, is left as it is: a worker running elsewhere goes on. Made the very first
    time with no holder (never seen). Only the checks' own texts: no secret is in them (the
    database's password, keys are not among their parameters)."""
    sources = [problem.source() for problem in problems]
    fields = {
        "refused": refusal_public(sources)[:4000],
        "refused_source": sources,
        "refused_at": Now(),
    }
    with transaction.atomic():
        if WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK).update(**fields):
            return
        try:
            with transaction.atomic():  # a worker may insert it at the same moment
                WorkerHeartbeat.objects.create(pk=HEARTBEAT_PK, **fields)
        except IntegrityError:
            WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK).update(**fields)


@dataclass(frozen=True)
class KnownWorker:
    """A worker process staff are shown (known_workers)."""

    host: str
    pid: int | None
    version: str
    run_dir: str
    started_at: datetime | None
    seen_at: datetime | None
    stopped_at: datetime | None
    age: timedelta | None
    active: bool
    replaced: bool = False
    network_problem: str = ""

    @property
    def problem(self) -> str | None:
        """Why this worker cannot start local jobs, for one that runs or stands by (a
        standby's own finding says what a takeover would bring); None otherwise."""
        if not self.network_problem or self.role not in ("active", "standby"):
            return None
        return problem_shown(self.network_problem)

    @property
    def last_seen_seconds(self) -> int:
        return max(int(self.age.total_seconds()), 0) if self.age is not None else 0

    @property
    def role(self) -> str:
        """active (holds the lease), standby (beats, waits to take over), stopped, replaced
        (killed, and another started in its place) or stale."""
        if self.stopped_at is not None:
            return STOPPED
        if self.replaced and not self.active:
            return REPLACED
        if self.last_seen_seconds > settings.WORKER_STALE_SECONDS:
            return STALE
        return "active" if self.active else "standby"

    @property
    def role_label(self) -> str:
        return {
            "active": _("Active (dispatching)"),
            "standby": _("Standing by"),
            STOPPED: _("Stopped"),
            REPLACED: _("Gone (restarted in its place)"),
            STALE: _("Not responding"),
        }[self.role]


def known_workers() -> list[KnownWorker]:
    """Every worker process seen in the last day, the lease's holder first, then the most
    recently seen: one query."""
    holder = WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK, holder=OuterRef("instance"))
    rows = (
        WorkerProcess.objects.filter(seen_at__gte=Now() - KNOWN_WORKERS_FOR)
        .annotate(db_now=Now(), active=Exists(holder.filter(stopped_at=None)), replaced=_replaced())
        .order_by("-active", "-seen_at", "-pk")
        .values(
            "host",
            "pid",
            "version",
            "run_dir",
            "started_at",
            "seen_at",
            "stopped_at",
            "db_now",
            "active",
            "replaced",
            "network_problem",
        )
    )
    return [
        KnownWorker(
            **{k: v for k, v in row.items() if k != "db_now"},
            age=row["db_now"] - row["seen_at"] if row["seen_at"] else None,
        )
        for row in rows
    ]


@dataclass(frozen=True)
class WorkerIdentity:
    """Who a worker process is, in the lease and in its own row."""

    instance: str
    host: str
    pid: int
    run_dir: str
    version: str
    # What its start-up check found (jobs.network.isolation_problem): "" when local jobs can
    # start, else why not. Written with its row and into the lease as it takes it.
    network_problem: str = ""

    @classmethod
    def here(cls) -> WorkerIdentity:
        """This process's identity: one per process (a new one after a fork) and run
        directory (tests change LOCAL_RUN_DIR; the lease's run directory must name the one
        its jobs run in, as jobs.runner.runner_key does, for jobs.health.active_runner)."""
        global _this_process
        if (
            _this_process is None
            or _this_process.pid != os.getpid()
            or _this_process.run_dir != _run_dir()
        ):
            _this_process = cls.new()
        return _this_process

    @classmethod
    def new(cls) -> WorkerIdentity:
        return cls(
            instance=uuid.uuid4().hex,
            host=socket.gethostname()[:255],
            pid=os.getpid(),
            run_dir=_run_dir(),
            version=console_version()[:32],
        )

    def fields(self) -> dict[str, object]:
        return {
            "host": self.host,
            "pid": self.pid,
            "run_dir": self.run_dir,
            "version": self.version,
            "network_problem": self.network_problem,
        }


_this_process: WorkerIdentity | None = None


def _run_dir() -> str:
    return str(Path(settings.LOCAL_RUN_DIR).resolve())[:1024]


def worker_beat(
    *, worker: WorkerIdentity, run_dir_locked: bool = False, remote: RemoteProgress | None = None
) -> bool:
    """The worker says it is alive: its own row, and the lease. It renews the lease if it
    holds it, else tries to take it (free: never taken, stopped cleanly, or not renewed for
    WORKER_STALE_SECONDS). Returns whether it holds the lease now: False for a worker that
    held it means another took it over (this one had not renewed it in time), and it must
    stop dispatching.

    `run_dir_locked`: the caller holds `worker.lock` of its run directory (jobs.worker), so a
    holder on the same host with the same run directory is a predecessor that died (it held
    that lock while it lived): the lease is taken from it at once, as a worker restarted after
    a kill -9 has always resumed at once, not after WORKER_STALE_SECONDS.

    `remote`: how the holder's remote thread gets on (None: it has none running), written
    into the lease with it (WorkerState.remote_problem, /healthz's `remote`).

    One transaction; each step one conditional UPDATE (an INSERT the very first time)."""
    with transaction.atomic():
        mine = WorkerProcess.objects.filter(instance=worker.instance)
        if not mine.update(seen_at=Now(), stopped_at=None):
            WorkerProcess.objects.create(
                instance=worker.instance, started_at=Now(), seen_at=Now(), **worker.fields()
            )
        lease = WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK)
        remote_fields = remote.fields() if remote is not None else NO_REMOTE
        if lease.filter(holder=worker.instance, stopped_at=None).update(
            seen_at=Now(), **remote_fields
        ):
            return True
        taken = {
            "holder": worker.instance,
            **worker.fields(),
            **remote_fields,
            "started_at": Now(),
            "seen_at": Now(),
            "stopped_at": None,
            # A worker that starts fine (it got this far) ends what a refused one said.
            "refused": "",
            "refused_source": [],
            "refused_at": None,
        }
        free = (
            Q(stopped_at__isnull=False) | Q(seen_at__isnull=True) | Q(seen_at__lt=_stale_before())
        )
        if run_dir_locked:
            free |= Q(host=worker.host, run_dir=worker.run_dir)
        if lease.filter(free).update(**taken):
            return True
        if lease.exists():
            return False
        try:
            with transaction.atomic():  # another worker may insert it at the same moment
                WorkerHeartbeat.objects.create(pk=HEARTBEAT_PK, **taken)
        except IntegrityError:
            return False
        return True


def holds_lease(*, worker: WorkerIdentity) -> bool:
    """Whether `worker` still holds the lease: not taken over by another, not given up.

    The fence of a step that two workers must never both take (jobs.runner.start_job): asked
    in that step's own transaction, with the lease's row locked, so a takeover lands either
    before it (this answers False and the step is not taken) or after its commit (the new
    holder then reads what it did). On SQLite the transaction holds the database's write lock
    from its BEGIN (IMMEDIATE), which a takeover's UPDATE needs too; on PostgreSQL the row
    lock makes a takeover's UPDATE wait for the commit. A lease that merely looks lapsed
    (renewed longer than WORKER_STALE_SECONDS ago) but that nobody took still counts as held:
    no other worker can have acted on it."""
    return (
        WorkerHeartbeat.objects.select_for_update()
        .filter(pk=HEARTBEAT_PK, holder=worker.instance, stopped_at=None)
        .values_list("pk", flat=True)
        .first()
        is not None
    )


def lease_held(*, worker: WorkerIdentity) -> bool:
    """Whether `worker` still holds the lease, read without a lock: asked by the worker's
    remote thread before each submit and sync (jobs.worker.RemoteThread.holding). Not a
    fence as holds_lease is (a takeover may land just after it): a submit is fenced by its
    job's own Queued -> Submitting step, a sync only reads the platform and makes
    conditional changes. One query."""
    return WorkerHeartbeat.objects.filter(
        pk=HEARTBEAT_PK, holder=worker.instance, stopped_at=None
    ).exists()


def active_runner() -> str | None:
    """Where the active worker runs local jobs, as jobs.runner.runner_key names it (host and
    run directory); None while no worker runs (stale, stopped, or never seen): then no
    worker follows any local job. One query."""
    row = (
        WorkerHeartbeat.objects.filter(
            pk=HEARTBEAT_PK, stopped_at=None, seen_at__gte=_stale_before()
        )
        .values_list("host", "run_dir")
        .first()
    )
    return f"{row[0]}:{row[1]}"[:1024] if row else None


def forget_old_workers() -> int:
    """Deletes the rows of worker processes not seen for a week (each start of a worker
    adds one): called by a worker as it takes the lease. Returns how many went."""
    old = WorkerProcess.objects.filter(seen_at__lt=Now() - 7 * KNOWN_WORKERS_FOR)
    return old.delete()[0]


def worker_stopped(*, worker: WorkerIdentity) -> None:
    """The worker says it stopped cleanly: it is not running from now on, whatever its last
    beat (a stopped worker is not waited out for WORKER_STALE_SECONDS), and the lease is free
    for a worker standing by. Only its own lease: one that lost it leaves the new holder's."""
    with transaction.atomic():
        WorkerProcess.objects.filter(instance=worker.instance).update(
            seen_at=Now(), stopped_at=Now()
        )
        WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK, holder=worker.instance).update(
            seen_at=Now(), stopped_at=Now()
        )


@dataclass(frozen=True)
class FullDisk:
    """A file system the console writes to with less than HEALTH_DISK_FREE_MB free: the
    settings whose folders are on it (with those folders), and its free bytes."""

    folders: tuple[tuple[str, str], ...]  # (setting, folder)
    free: int
    # No inode left (statvfs's f_favail 0, of a fixed number): full whatever its free bytes,
    # as no file or folder can be made there (fix155).
    no_inodes: bool = False

    @property
    def holds_local_jobs(self) -> bool:
        return any(setting == "LOCAL_RUN_DIR" for setting, _folder in self.folders)

    def notice(self) -> str:
        """What staff are told of it (the staff pages' notice), in the reader's language."""
        values = {
            "folders": list_words(f"{setting} ({folder})" for setting, folder in self.folders),
            "free": self.free // (1024 * 1024),
            "threshold": settings.HEALTH_DISK_FREE_MB,
        }
        if self.no_inodes and self.holds_local_jobs:
            return (
                _(
                    "The disk of %(folders)s is full: no free inodes (files) left, though "
                    "%(free)s MB are free. No local job starts until files are removed from it "
                    '(they wait Queued, saying so), and /healthz answers 503 "disk": "full".'
                )
                % values
            )
        if self.no_inodes:
            return (
                _(
                    "The disk of %(folders)s is full: no free inodes (files) left, though "
                    "%(free)s MB are free. What the console writes there may fail until files "
                    'are removed from it, and /healthz answers 503 "disk": "full".'
                )
                % values
            )
        if self.holds_local_jobs:
            return (
                _(
                    "The disk of %(folders)s is full: %(free)s MB free, under "
                    "HEALTH_DISK_FREE_MB (%(threshold)s MB). No local job starts until space "
                    "is freed on it (they wait Queued, saying so), and /healthz answers 503 "
                    '"disk": "full".'
                )
                % values
            )
        return (
            _(
                "The disk of %(folders)s is full: %(free)s MB free, under HEALTH_DISK_FREE_MB "
                "(%(threshold)s MB). What the console writes there may fail until space is "
                'freed on it, and /healthz answers 503 "disk": "full".'
            )
            % values
        )


def _nearest_folder(path: Path) -> Path | None:
    """`path`, or its nearest folder that exists (a run folder not made yet is made there)."""
    for folder in (path, *path.parents):
        if folder.exists():
            return folder
    return None


def full_disks(*, run_dir: bool = True) -> list[FullDisk]:
    """The file systems the console writes to that have less than HEALTH_DISK_FREE_MB free:
    those of CONSOLE_VAR_DIR, of a SQLite database, and, with the local runner on, of
    LOCAL_RUN_DIR (job logs, run folders), which README recommends putting elsewhere. Found
    in QA (qa89): with the database's disk full, /healthz answered 200 "database": "ok" (it
    reads) while every log-in and wizard step answered 503; and (qa112) with LOCAL_RUN_DIR's
    disk full it answered 200 while every new local job failed. Free space is asked of the
    kernel (statvfs), so a probe writes nothing; a PostgreSQL server's own disk is not seen
    from here. Folders on one file system are one entry. `run_dir=False` leaves LOCAL_RUN_DIR
    out: `/healthz?worker=0` is the web pages' probe (review66: jobs filling their own run
    disk took the working web pages out of a load balancer, or had a liveness probe restart
    them; a statvfs of a hung network mount also held the probe). A disk with no inode left is
    full too, whatever its free bytes (fix155)."""
    folders = [("CONSOLE_VAR_DIR", Path(settings.VAR_DIR))]
    database = connections[DEFAULT_DB_ALIAS].settings_dict
    if database["ENGINE"] == "django.db.backends.sqlite3" and database["NAME"] != ":memory:":
        folders.append(("DATABASE_URL", Path(database["NAME"]).parent))
    if run_dir and "local" in settings.CONSOLE_BACKENDS:
        folders.append(("LOCAL_RUN_DIR", Path(settings.LOCAL_RUN_DIR)))
    least = settings.HEALTH_DISK_FREE_MB * 1024 * 1024
    found: dict[int, tuple[list[tuple[str, str]], int, bool]] = {}
    for setting, path in folders:
        folder = _nearest_folder(path)
        if folder is None:  # a folder gone: the database's own check says so
            continue
        try:
            device = os.stat(folder).st_dev
            info = os.statvfs(folder)
        except OSError:
            continue
        free = info.f_bavail * info.f_frsize
        no_inodes = info.f_files > 0 and info.f_favail == 0  # as runner.out_of_inodes
        if free < least or no_inodes:
            found.setdefault(device, ([], free, no_inodes))[0].append((setting, str(path)))
    return [FullDisk(tuple(named), free, no_inodes) for named, free, no_inodes in found.values()]


def disk_full(*, run_dir: bool = True) -> bool:
    """Whether a file system the console writes to is full (full_disks)."""
    return bool(full_disks(run_dir=run_dir))


def health(*, check_worker: bool) -> tuple[bool, dict[str, object]]:
    """Whether the console is healthy, and the small document the health endpoint answers:
    nothing secret and nothing of the machines (it is answered to anyone), no write."""
    # LOCAL_RUN_DIR's disk is the jobs' (and the worker's) concern, not the web pages'.
    disk = "full" if disk_full(run_dir=check_worker) else "ok"
    try:
        state = worker_state()
    except DatabaseError:
        body: dict[str, object] = {"status": "error", "database": "error", "disk": disk}
        if check_worker:
            body["worker"] = {"status": "unknown", "last_seen_seconds": None, "standby": None}
        return False, body
    # A worker that runs but cannot start local jobs (its start-up check failed) is a fault
    # for monitoring too: every local job waits Queued until someone fixes the machine.
    healthy = ((state.running and not state.problem) or not check_worker) and disk == "ok"
    body = {"status": "ok" if healthy else "error", "database": "ok", "disk": disk}
    if check_worker:
        body["worker"] = {
            "status": state.status,
            "last_seen_seconds": state.last_seen_seconds,
            # Workers beating now, ready to take over should the active one stop.
            "standby": state.standby,
        }
        if state.status == REFUSED:
            # In English whatever the request's language (read by monitoring, not people),
            # and naming no folder or user of this machine (answered to anyone).
            body["worker"]["problem"] = state.refused
        elif state.problem:
            # In English whatever the request's language: read by monitoring, not people.
            body["worker"]["problem"] = f"isolated networking unavailable: {state.network_problem}"
        # How its remote thread gets on (left out while none reports): a stuck one leaves
        # the status as it is (200), as local jobs go on and restarting would not make AIHC
        # or Kubernetes answer; monitoring alerts on `stuck` (left40).
        if (remote := state.remote_health) is not None:
            body["worker"]["remote"] = remote
    return healthy, body
