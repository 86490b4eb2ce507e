"""The worker: one long-running process that makes jobs happen (`manage.py worker`).

Each tick it
1. supervises local jobs that are Running or Stopping (exit codes, fault keywords,
   restarts, hang warnings, timeouts, SIGTERM then SIGKILL on stop);
2. runs one scheduling pass over the queued local jobs (jobs.scheduler);
3. deletes finished local jobs whose retention period has passed, and those whose owner
   asked to delete them while they ran (normally done as they end; this catches a worker
   killed in between, and a Delete that arrived just as the job ended).
Before all that it renews its lease (jobs.health), at most every WORKER_HEARTBEAT_SECONDS;
stopped cleanly, it gives the lease up.
Remote jobs (AIHC, Kubernetes) are submitted (Queued, never submitted: no external id) and,
every WORKER_REMOTE_SYNC_SECONDS, synced (active, or queued remotely) in a thread for each
platform while the worker holds the lease (RemoteThread), in turns of about
REMOTE_TICK_SECONDS each, so a platform that does not answer never holds up the local jobs'
ticks, the lease's renewal, or the other platform's jobs. Those threads are the only way
remote jobs are submitted and synced (tests drive a pass by hand: Worker.remote_pass).
Alert delivery runs in a thread as django tasks (jobs.tasks).

Only one worker dispatches per database: it holds the database lease (jobs.health). A worker
that cannot take it (another holds it, on another host or another run directory) stands by:
it logs who holds it, beats its own row so staff see it, and tries again every
WORKER_HEARTBEAT_SECONDS; it takes over once the holder stopped cleanly or went stale. A worker
that finds its lease taken over (it had not renewed it for WORKER_STALE_SECONDS: hung, or cut
off from the database) stops dispatching at once and stands by in turn. A step it was in the
middle of still finishes, so a job start is fenced: made only in a transaction that finds this
worker still holding the lease (jobs.runner.start_job). tests/test_worker_chaos.py kills and
freezes real workers at random to check nothing is lost or run twice.
Only one worker runs per run directory too: it holds an exclusive lock on `worker.lock`
before anything else, so two started there by mistake do not even stand by side by side.
Local jobs started by a worker on another host or run directory are not followed by this one
(jobs.runner.followed_here), but one that ended in another run directory of this host where no
worker runs is ended as its replicas' exit records say (jobs.runner
.end_jobs_ended_where_they_ran); replicas in its own run directory whose job ended meanwhile (an
administrator marked it as lost) are ended as it starts (jobs.runner.end_leftover_replicas).
Everything it needs to resume lives in the database and in files (jobs.runner), so it can be
killed at any moment.
"""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from subprocess import Popen
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connections
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone
from django.utils.translation import gettext_noop

from . import cgroups, job_users, network
from .alerts import jobs_with_alerts_pending
from .backends import BACKEND_MODULES, BackendError, configured, get_backend
from .backends.base import UNANSWERED_CODES
from .backends.remote import logged_error, unsettled_creates
from .checks import card_nodes_missing, queued_jobs_already_run, run_dir_smaller_than_a_log
from .health import (
    HEARTBEAT_PK,
    RemoteProgress,
    WorkerIdentity,
    database_disk_full,
    database_unreachable_reason,
    database_write_refused_reason,
    forget_old_workers,
    lease_held,
    worker_beat,
    worker_state,
    worker_stopped,
)
from .models import (
    ACTIVE_STATUSES,
    FINAL_STATUSES,
    Job,
    JobEvent,
    JobStatus,
    WorkerHeartbeat,
)
from .runner import (
    end_jobs_ended_where_they_ran,
    end_leftover_replicas,
    evict_for_disk_pressure,
    followed_here,
    minutes,
    remove_discarded,
    runner_key,
    supervise,
)
from .scheduler import dispatch_local, say_owner_deactivated
from .services import AUTO_DELETED_STATUSES, job_event
from .sessions import EXPIRED_SESSIONS_EVERY_SECONDS, delete_expired_sessions
from .stacks import StackCollector
from .texts import ngettext_noop, recorded, recorded_plural

logger = logging.getLogger("jobs.worker")
# The event on a local job this worker leaves alone (note_runs_elsewhere).
NOT_FOLLOWED = "NotFollowed"
# The event on a local job a worker taking the lease over follows again (note_followed_again).
FOLLOWED_AGAIN = "FollowedAgain"
# The takeover this process last said FollowedAgain for (the lease's holder and when it took
# the lease, both as the database has them), and on which jobs. A worker whose loop starts
# again while it still holds the lease (jobs.health.worker_beat renews it) made no new
# takeover, and says nothing twice; a later takeover (another worker, or this one taking
# the lease back) is another key, and says it again. Only compared, never against a clock.
_followed_again_said: tuple[tuple[str, datetime | None], set[int]] | None = None

# "仅针对于成功/失败状态的任务生效" (seed 000): a timeout is a failure (it alerts as jobFailed);
# a job a person stopped is kept for them to look at.
RETENTION_RE = re.compile(r"^([1-9][0-9]*)([mhd])\Z")
# How often the worker forgets what it kept of long-deleted jobs (Worker.forget_deleted).
FORGET_DELETED_SECONDS = 3600.0
# Jobs delete_expired deletes in one tick at most (a few ms each): the rest on the next ticks.
EXPIRED_PER_PASS = 20
RETENTION_MINUTES = {"m": 1, "h": 60, "d": 24 * 60}
# A deletion that keeps failing for the same reason is tried again every minute, and logged
# again once in this many minutes (JOB_MINUTE_SECONDS): its first failure and each change of
# reason are logged at once. Decision (session 19): a fixed hour, not a growing backoff, so a
# failure that lasts says so in any day's log, and the retries stay a minute apart, as a
# folder freed or a database fixed is then picked up within a minute.
DELETION_RELOGGED_MINUTES = 60
# The event reason of a job whose deletion failed (shown to its owner and to staff).
DELETE_FAILED = "DeleteFailed"


def retention(value: str) -> timedelta | None:
    match = RETENTION_RE.match(value or "")
    if not match:
        return None
    return minutes(int(match.group(1)) * RETENTION_MINUTES[match.group(2)])


def deletes_at(*, job: Job) -> datetime | None:
    """When the worker deletes `job` for its retention period (任务退出后自动删除), or None:
    a local job that succeeded, failed or timed out, once its retention has passed; a job
    stopped by someone, still running, or on another backend is never deleted for it."""
    return retention_ends(
        backend=job.backend, status=job.status, finished_at=job.finished_at, spec=job.spec
    )


def retention_ends(
    *, backend: str, status: str, finished_at: datetime | None, spec: Any
) -> datetime | None:
    """deletes_at of a job of that backend, status, end and stored spec: what job_transition
    stores as Job.deletes_at when a job ends, for delete_expired to find by its index."""
    if backend != "local" or status not in AUTO_DELETED_STATUSES or not finished_at:
        return None
    spec = spec if isinstance(spec, dict) else {}  # a stored spec no longer read
    keep = retention(str(spec.get("retentionPeriod", "")))
    return finished_at + keep if keep is not None else None


def deletion_due(*, job: Job) -> bool:
    """Whether `job` is past its retention (deletes_at) and not deleted yet: the worker has
    not got to it (none runs, or its sweep is behind), or keeps it for its alerts."""
    at = deletes_at(job=job)
    return at is not None and at <= timezone.now()


def kept_for_alerts(*, job: Job) -> bool:
    """Whether `job` is past its retention (deletes_at) and kept only because an alert about it
    is still to be delivered (jobs_with_alerts_pending): it is deleted once that is."""
    return deletion_due(job=job) and job.pk in jobs_with_alerts_pending({job.pk})


@dataclass
class FailingDeletion:
    """A job whose deletion by the worker failed, and is tried again (Worker.deletion_failed)."""

    reason: str  # why, as logged (no host folder above the job's, no secret)
    since: datetime  # its first failure
    tries: int
    logged_at: float  # monotonic: when its failure was last logged
    retry_at: float  # monotonic: when it is tried again


def deletion_failure_reason(exc: BaseException) -> tuple[str, str]:
    """Why a deletion failed, for the log and the job's event: (reason, event message).

    The local backend's FilesLeft (behind the ActionError job_delete raises) says what was
    left, from the job's own folder down; any other error by its class and first line,
    bounded (a database's refusal)."""
    from .backends.local import FilesLeft

    cause = exc.__cause__ if isinstance(exc.__cause__, FilesLeft) else exc
    if isinstance(cause, FilesLeft):
        return cause.left, recorded(
            gettext_noop(
                "The worker could not delete this job: its files on this machine could not "
                "all be removed (%(reason)s). It tries again every minute."
            ),
            reason=cause.left,
        )
    if isinstance(exc.__cause__, DatabaseError):
        exc = exc.__cause__  # (job_delete's ActionError says it for people: the log names it)
    said = (str(exc).strip().splitlines() or [""])[0]
    reason = f"{type(exc).__name__}: {said}"[:300] if said else type(exc).__name__
    return reason, recorded(
        gettext_noop(
            "The worker could not delete this job: %(reason)s. It tries again every minute."
        ),
        reason=reason,
    )


class LeaseLost(Exception):
    """Another worker took the lease over, or the database was out of reach for half of
    WORKER_STALE_SECONDS (its message says which): this one must not dispatch any more."""

    def __init__(self, why: str = "another worker took the lease over") -> None:
        super().__init__(why)


# While the database is out of reach, how often the worker says so again.
DATABASE_DOWN_REPEAT_SECONDS = 60.0


class DatabaseOutage:
    """Says in the log that the database cannot be reached, or cannot take writes (its disk
    full, SQLite held by another process): once when an outage starts (the driver's reason
    and no traceback, which adds nothing to it), again every minute while it lasts, and once
    when the database is back. Found in QA: a worker ticks every second or faster, and logged
    two tracebacks a tick (130 lines a second) while PostgreSQL was down; QA 69: as many, one
    more for each running job, while the database's disk was full."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.said_at = 0.0
        self.writes_only = False  # the database answered; it refused writes
        self.lock = threading.Lock()  # the loop and the task thread both report

    def failed(self) -> bool:
        """After an exception (the one being handled): True if the database cannot be
        reached or cannot take writes now (said here), False for any other failure, which
        the caller logs with its traceback."""
        reason = database_unreachable_reason()
        writes_only = False
        if reason is None:
            reason = database_write_refused_reason(sys.exc_info()[1])
            writes_only = True
        if reason is None:
            return False
        what = "the database takes no writes" if writes_only else "the database cannot be reached"
        with self.lock:
            now = time.monotonic()
            if self.since is None:
                self.since = self.said_at = now
                self.writes_only = writes_only
                logger.error("%s: %s", what, reason)
            elif now - self.said_at >= DATABASE_DOWN_REPEAT_SECONDS:
                self.said_at = now
                still = what.replace("the database", "the database still", 1)
                logger.error("%s, for %d s: %s", still, now - self.since, reason)
        return True

    def reached(self) -> None:
        """After a database round trip that worked."""
        with self.lock:
            if self.since is not None:
                logger.warning(
                    "the database %s again after %d s",
                    "takes writes" if self.writes_only else "can be reached",
                    time.monotonic() - self.since,
                )
                self.since = None


# One a process: the worker's loop and its stand-by share what they said.
database_outage = DatabaseOutage()


def ended_of(public_ids: Collection[str]) -> list[str]:
    """Which of these jobs this console knows as no longer Running or Stopping: those whose
    leftovers (cgroups, network holders) a starting worker removes. One query, none for no
    ids; a job it does not know may be another console's, setting up a replica right now."""
    if not public_ids:
        return []
    ended = Job.objects.filter(public_id__in=public_ids).exclude(
        status__in=[JobStatus.RUNNING, JobStatus.STOPPING]
    )
    return list(ended.values_list("public_id", flat=True))


def followed_again_message(unfollowed_seconds: int | None) -> str:
    """FollowedAgain's message: for how long no worker followed the job, when known."""
    if unfollowed_seconds is None:
        return recorded(
            gettext_noop(
                "A worker (job scheduler) took over and follows this job again: what its "
                "replicas did while no worker followed them (exiting, a stop asked for, its "
                "time limit) is acted on now."
            )
        )
    return recorded_plural(
        ngettext_noop(
            "A worker (job scheduler) took over and follows this job again, after "
            "%(count)s second in which no worker followed it: what its replicas did "
            "meanwhile (exiting, a stop asked for, its time limit) is acted on now.",
            "A worker (job scheduler) took over and follows this job again, after "
            "%(count)s seconds in which no worker followed it: what its replicas did "
            "meanwhile (exiting, a stop asked for, its time limit) is acted on now.",
        ),
        "count",
        count=unfollowed_seconds,
    )


# How long one remote pass spends submitting to remote platforms, and again syncing with
# them, before its thread asks the lease again: a job's requests started by then are
# finished, the next jobs' wait for the next pass (sync_remote says why).
REMOTE_TICK_SECONDS = 2.0
# A RemoteThread that has not got to its next job for this long (one job's requests wait at
# most a few minutes with the default timeouts) is said in the log to be stuck, again as
# often while it stays so (RemoteThread.say_if_stuck).
REMOTE_STUCK_SECONDS = 600.0
# How long a stop, or a lease lost, waits for the RemoteThread to end: it ends once the
# request it waits on is answered or timed out; the worker goes on without waiting longer
# (run_while_holding says what becomes of one still waiting).
REMOTE_JOIN_SECONDS = 5.0


def remote_to_sync() -> QuerySet[Job]:
    """Remote jobs the worker syncs: active, or queued by the platform (an external id)."""
    return (
        Job.objects.exclude(backend="local")
        .filter(status__in=[*ACTIVE_STATUSES, JobStatus.QUEUED])
        .exclude(status=JobStatus.QUEUED, external_id="")
    )


@dataclass
class RemoteLane:
    """What the passes over one remote backend's jobs keep between them: each backend has a
    RemoteThread of its own, so one platform waiting on a request never holds up another's
    submits and syncs (until fix85b one thread did both: a Kubernetes job stayed 排队中 while
    an AIHC create waited out its read timeout). `backend` None: every remote backend's jobs
    in one lane (passes driven by hand: Worker.remote_pass without a backend)."""

    backend: str | None = None
    last_sync: float = 0.0  # monotonic: when its last sync round began
    # What it is waiting on right now ("" between jobs), for the log of a RemoteThread stuck
    # for long (RemoteThread.say_if_stuck).
    doing: str = ""
    # The job being submitted right now (None between submits): a stop waits for its create
    # to be answered (finish_submits).
    submitting: Job | None = None
    # The current sync round's jobs not synced yet (pks, in order), and the backends that did
    # not answer in it with how many of their jobs were left out.
    sync_round: list[int] = field(default_factory=list)
    round_unanswered: dict[str, int] = field(default_factory=dict)
    # Jobs whose last sync got no answer, by pk: when (monotonic). Each round syncs them after
    # the others, the longest unanswered first (Worker.sync_remote says why).
    sync_unanswered: dict[int, float] = field(default_factory=dict)

    def jobs(self, jobs: QuerySet[Job]) -> QuerySet[Job]:
        """`jobs` narrowed to this lane's backend."""
        return jobs if self.backend is None else jobs.filter(backend=self.backend)


class Worker:
    def __init__(self, identity: WorkerIdentity | None = None) -> None:
        # Shims this process started: polled so they do not linger as zombies.
        self.children: dict[int, Popen[bytes]] = {}
        # What the passes of each remote backend's RemoteThread keep between them (lane).
        self.lanes: dict[str, RemoteLane] = {}
        # Remote backends not in CONSOLE_BACKENDS found with jobs to submit or sync: they
        # get a RemoteThread too (remote_backends), looked for once a minute.
        self.unconfigured_with_jobs: set[str] = set()
        self.next_backends_look = 0.0
        self.next_session_cleanup = 0.0  # at the first tick, then hourly
        # When delete_expired next looks (monotonic; 0: on the first tick).
        self.next_expiry_check = 0.0
        # When forget_deleted next looks (monotonic; 0: on the first tick).
        self.next_forget = 0.0
        # When remove_secrets_left next looks (monotonic; 0: on the first tick).
        self.next_secrets_left = 0.0
        self.next_duplicates_look = 0.0  # stop_aihc_duplicates: at the first pass, then a minute
        # When requeue_stale_tasks next looks (monotonic; 0: on the first tick).
        self.next_stale_tasks = 0.0
        # Jobs whose deletion for their retention failed, by pk: tried again a minute later,
        # so they do not take the pass's places from the others every tick, and logged as
        # deletion_failed says. And those deleted while they ran (delete_requested).
        self.expiry_failed: dict[int, FailingDeletion] = {}
        self.requested_failed: dict[int, FailingDeletion] = {}
        self.identity = identity or WorkerIdentity.here()
        # When the lease was last renewed (monotonic): None, renewed (or taken) first thing.
        self.last_beat: float | None = None
        # How roles' CPU and memory are enforced, for every job this worker starts.
        self.limits = cgroups.redetect()
        # Hang analysis: call stacks read in a thread of their own, off the tick.
        self.stacks = StackCollector()
        # When it last looked at each other run directory of this machine (monotonic), for
        # the jobs it does not follow that ended there: once a minute each, not every tick.
        self.other_run_dirs_looked_at: dict[str, float] = {}
        # Processes first: a cgroup or a network namespace with processes in it stays.
        try:
            end_leftover_replicas()
        except Exception:
            logger.exception("ending replicas of jobs that ended elsewhere failed")
        # Networks before cgroups: a holder and its slirp4netns are in their job's cgroups.
        self.end_leftover_networks()
        self.remove_leftover_cgroups()

    def remove_leftover_cgroups(self) -> None:
        """Removes the cgroups of local jobs that ended while no worker was there to (or
        whose last process outlived the end). Only jobs this console knows as ended: one
        it does not know may be another console's, setting up a replica right now."""
        for public_id in ended_of(cgroups.job_ids_with_cgroups(self.limits)):
            cgroups.remove_job_cgroups(self.limits, public_id=public_id)

    def end_leftover_networks(self) -> None:
        """Ends the network namespace holders (LOCAL_JOB_NETWORK=isolated or isolated-outbound,
        with their slirp4netns) of local jobs that ended while no worker was there to, as
        remove_leftover_cgroups does for cgroups."""
        for public_id in ended_of(network.job_ids_with_networks()):
            network.end_networks(public_id=public_id, children=self.children)

    def tick(self) -> None:
        """One pass of everything the serving loop (run_while_holding) does: local jobs, the
        lease, clean-ups. Remote jobs are submitted and synced by a RemoteThread beside it
        (remote_pass), so a platform that does not answer does not hold up local jobs' stops,
        starts and timeouts (it did until the remote thread: about 90 s a round with
        Kubernetes' default timeouts), nor the lease's renewal."""
        self.beat()
        # Before supervision, so a replica evicted now is ended in this very tick.
        try:
            evict_for_disk_pressure()
        except Exception:
            logger.exception("checking disk pressure failed")
        self.supervise_local()
        # Before dispatch, so the cards such a job held go to a job waiting in this very tick.
        try:
            end_jobs_ended_where_they_ran(looked_at=self.other_run_dirs_looked_at)
        except Exception:
            if not database_outage.failed():
                logger.exception("ending jobs that ended where they ran failed")
        try:
            self.stacks.tick(followed=followed_here())
        except Exception:
            logger.exception("capturing call stacks failed")
        dispatch_local(
            children=self.children,
            network_problem=self.identity.network_problem,
            worker=self.identity,
        )
        self.delete_expired()
        self.delete_expired_sessions()
        self.delete_requested()
        self.forget_deleted()
        self.requeue_stale_tasks()
        self.reap()
        try:
            remove_discarded()  # what ended jobs left in their /tmp, a part a tick
        except Exception:
            logger.exception("removing ended jobs' files failed")

    def lane(self, backend: str | None = None) -> RemoteLane:
        """What the passes over `backend`'s remote jobs keep (None: every remote backend's)."""
        return self.lanes.setdefault(backend or "", RemoteLane(backend))

    def remote_backends(self) -> list[str]:
        """The remote backends that get a RemoteThread: those CONSOLE_BACKENDS lists, and any
        other with jobs to submit or sync (a backend taken out of the settings while it had
        jobs: their submits and syncs fail and say why, as they did with one thread for
        all), looked for once a minute and kept."""
        configured = [b for b in settings.CONSOLE_BACKENDS if b != "local" and b in BACKEND_MODULES]
        clock = time.monotonic()
        if clock >= self.next_backends_look:
            self.next_backends_look = clock + settings.JOB_MINUTE_SECONDS
            try:
                found = (
                    Job.objects.filter(status__in=[*ACTIVE_STATUSES, JobStatus.QUEUED])
                    .exclude(backend__in=["local", *configured])
                    .values_list("backend", flat=True)
                    .distinct()
                )
                self.unconfigured_with_jobs |= set(found) & set(BACKEND_MODULES)
            except Exception:
                # Not the tick's failure: the loop goes on renewing the lease (beat says an
                # outage); looked for again in a minute.
                if not database_outage.failed():
                    logger.exception("looking for jobs on backends not configured failed")
        return configured + sorted(self.unconfigured_with_jobs - set(configured))

    def remote_pass(
        self, *, backend: str | None = None, go_on: Callable[[], bool] | None = None
    ) -> None:
        """Submits `backend`'s remote jobs (None: every remote backend's) for about
        REMOTE_TICK_SECONDS, then syncs them as long, when a sync round is under way or due
        (every WORKER_REMOTE_SYNC_SECONDS): the rest at the next pass; and, once a minute, the
        chores of that platform (Kubernetes: the Secrets deleted jobs left; AIHC: the
        duplicates a late create made). `go_on` is asked before each submit and each sync
        (RemoteThread.holding: only the lease's holder sends anything); once it says no, the
        pass ends there."""
        lane = self.lane(backend)
        self.dispatch_remote(budget=REMOTE_TICK_SECONDS, go_on=go_on, backend=backend)
        if (
            lane.sync_round
            or time.monotonic() - lane.last_sync >= settings.WORKER_REMOTE_SYNC_SECONDS
        ):
            if not lane.sync_round:  # a new round
                lane.last_sync = time.monotonic()
            self.sync_remote(budget=REMOTE_TICK_SECONDS, go_on=go_on, backend=backend)
        # Here, not in the loop's tick: it may wait on a cluster, as a sync does. Due once a
        # minute: go_on (a query for the lease) is asked only then, not on every pass.
        if (
            backend in (None, "kubernetes")
            and time.monotonic() >= self.next_secrets_left
            and (go_on is None or go_on())
        ):
            self.remove_secrets_left()
        if backend in (None, "aihc") and time.monotonic() >= self.next_duplicates_look:
            self.stop_aihc_duplicates(go_on=go_on)

    def beat(self) -> None:
        """Renews the lease: each tick, but written at most every WORKER_HEARTBEAT_SECONDS (a tick
        may come every 50 ms while jobs are submitted). A tick that hangs longer than
        WORKER_STALE_SECONDS shows as a stopped worker, which it is for the jobs waiting on
        it, and lets a standby take over. Waiting on a remote platform is no hang: the serving
        loop leaves that to its RemoteThread and goes on renewing the lease meanwhile.

        Raises LeaseLost when another worker took the lease over. When the database cannot
        be reached it carries on only while the last renewal is recent (half of
        WORKER_STALE_SECONDS), so it never dispatches past the point where another worker
        may have taken over."""
        now = time.monotonic()
        if self.last_beat is not None and now - self.last_beat < settings.WORKER_HEARTBEAT_SECONDS:
            return
        try:
            held = worker_beat(worker=self.identity, remote=remote_progress())
        except Exception as exc:
            if not database_outage.failed():
                logger.exception("renewing the worker's lease failed")
            if self.last_beat is None or now - self.last_beat > settings.WORKER_STALE_SECONDS / 2:
                # qa89: a full disk was said as "could not be reached" while the database
                # answered every read; the operator looked for a database that was down.
                what = (
                    "the database's disk is full and it took no writes"
                    if database_disk_full(exc)
                    else "the database could not be reached"
                )
                raise LeaseLost(
                    f"stopped dispatching: {what} for half of WORKER_STALE_SECONDS, so another "
                    "worker may take the lease over"
                ) from None
            return
        database_outage.reached()
        if not held:
            raise LeaseLost
        away = (
            self.last_beat is not None and now - self.last_beat > settings.WORKER_STALE_SECONDS / 2
        )
        self.last_beat = now
        if away:
            # Its lease may have looked lapsed meanwhile (the tick hung, the database was out
            # of reach) and no other worker took it: a reviewer may have marked its jobs as
            # lost, which it no longer supervises. It ends their replicas as on a start.
            try:
                end_leftover_replicas()
            except Exception:
                logger.exception("ending replicas of jobs that ended meanwhile failed")

    def note_runs_elsewhere(self) -> None:
        """On taking the lease: says on each local job that runs on another host or run
        directory that this worker does not follow it (jobs.runner.followed_here)."""
        here = runner_key()
        # Said once: a worker restarted again and again (serve restarts one that dies, a
        # standby takes over and hands back) does not add the same event each time, while
        # nothing else happened to the job. (Where, host and folder, is said in the log only:
        # users are not shown machines.)
        latest = JobEvent.objects.filter(job=OuterRef("pk")).order_by("-created_at", "-pk")
        elsewhere = (
            Job.objects.filter(backend="local", status__in=[JobStatus.RUNNING, JobStatus.STOPPING])
            .exclude(followed_here())
            .annotate(last_reason=Subquery(latest.values("reason")[:1]))
            .filter(Q(last_reason__isnull=True) | ~Q(last_reason=NOT_FOLLOWED))
            .values_list("pk", "local_run__runner")
        )
        for pk, runner in elsewhere:
            job = Job.objects.get(pk=pk)
            logger.warning("%s runs at %s, not followed from %s", job.public_id, runner, here)
            job_event(
                job=job,
                reason=NOT_FOLLOWED,
                message=recorded(
                    gettext_noop(
                        "The worker now active runs on another machine or run directory than "
                        "the one this job started on: it cannot see the job's processes, so it "
                        "neither follows them nor starts them again. The job is followed again "
                        "once a worker runs where it started."
                    )
                ),
                warning=True,
            )

    def note_followed_again(self, *, unfollowed_seconds: int | None) -> None:
        """On taking the lease over: says on each local job whose replicas the last worker
        left running, and which this one follows (it runs where the job started), that a
        worker follows it again, and for how long none did (`unfollowed_seconds`, since the
        last holder last renewed the lease; None when unknown). Without it a user read a gap
        in the job's events, and an exit or a stop acted on late, with nothing saying why
        (qa32). Said once, as NotFollowed is: a worker started again and again with nothing
        else happening to the job does not add it each time. Nothing of the worker (its
        machine, run directory, process) is said: users are not shown machines.

        Said once per takeover (left25): each worker that takes the lease over says it
        again, so a job followed by A, then B, then C says it twice; the same worker's loop
        starting again while it still holds the lease says nothing more. Before left25 a job
        whose last event was FollowedAgain got none, so only the first takeover was said."""
        global _followed_again_said
        takeover = (
            WorkerHeartbeat.objects.filter(pk=HEARTBEAT_PK, holder=self.identity.instance)
            .values_list("holder", "started_at")
            .first()
        )
        said: set[int] = set()
        if _followed_again_said is not None and _followed_again_said[0] == takeover:
            said = _followed_again_said[1]
        # Not holding the lease (a test's bare Worker), nothing tells a takeover: none kept.
        _followed_again_said = (takeover, said) if takeover is not None else None
        latest = JobEvent.objects.filter(job=OuterRef("pk")).order_by("-created_at", "-pk")
        present = [NOT_FOLLOWED, FOLLOWED_AGAIN, "Started", "Restarted"]
        followed = (
            Job.objects.filter(
                followed_here(),
                backend="local",
                status__in=[JobStatus.RUNNING, JobStatus.STOPPING],
                replicas__status="running",
            )
            .exclude(pk__in=said)
            .distinct()
            .annotate(
                # NotFollowed since it was last followed: a worker elsewhere held the lease
                # meanwhile, so no worker followed it for longer than the lease's last gap.
                last_presence=Subquery(latest.filter(reason__in=present).values("reason")[:1]),
            )
        )
        for job in followed:
            unknown = unfollowed_seconds is None or job.last_presence == NOT_FOLLOWED
            job_event(
                job=job,
                reason=FOLLOWED_AGAIN,
                message=followed_again_message(None if unknown else unfollowed_seconds),
            )
            said.add(job.pk)

    def supervise_local(self) -> None:
        for job in Job.objects.filter(
            followed_here(), backend="local", status__in=[JobStatus.RUNNING, JobStatus.STOPPING]
        ):
            try:
                supervise(job, children=self.children)
            except Exception:
                if not database_outage.failed():
                    logger.exception("supervising %s failed", job.public_id)

    def dispatch_remote(
        self,
        *,
        budget: float | None = None,
        go_on: Callable[[], bool] | None = None,
        backend: str | None = None,
    ) -> None:
        """Submits `backend`'s remote jobs never submitted yet (None: every remote backend's);
        with a `budget` (seconds, as each pass gives), no more once it is spent: the rest,
        still oldest first, in the next passes.
        `go_on`, asked before each submit, ends it once it says no (the lease lost).

        A submit already on its way when the lease is lost finishes (a create cut off
        halfway is no safer), and nothing is sent twice: the job went Queued -> Submitting
        (a conditional UPDATE) before its create, and the new holder submits only Queued
        jobs; its sync leaves a Submitting job alone for STUCK_SUBMITTING (2 minutes) after
        its last change, longer than a create waits (one read timeout: the clients never
        send a create twice; AIHC_READ_TIMEOUT above that would let the new holder, finding
        nothing made yet, send it again), so by then the old holder has moved it on (Queued with its
        external id, or with a SubmitTimedOut event saying to look first). A job left
        Submitting (the old holder killed mid-create) is sent again by the new one as after
        any kill: Kubernetes' objects are named from the console job id, so the create
        answers 409 on this job's label and is adopted; AIHC takes no name as a key (the
        console sends no clientToken), so the job's id label is: the pool's jobs of its
        name are listed and the one with its label adopted before any create again
        (jobs.backends.aihc: _reconcile_stuck, _create)."""
        # Jobs Pending review are never dispatched; a remote job queued by the cloud
        # (it has an external id) is synced, not submitted again.
        # Oldest first: first come, first sent (and a group's task 1/N before N/N).
        # A group's tasks are all on one backend (one submit), so a lane keeps their order.
        deadline = None if budget is None else time.monotonic() + budget
        lane = self.lane(backend)
        queued = lane.jobs(
            Job.objects.filter(status=JobStatus.QUEUED, external_id="").exclude(backend="local")
        )
        # A deactivated owner's jobs are not sent: they wait, saying so once, as on the local
        # pool (jobs.scheduler's rules), and go once the account is active again. All but one
        # whose create got no clear answer before (create_unsettled): the platform may run it
        # already, and only its submit looks for it (nothing else follows a job without its
        # platform's id), so it goes on to its submit, which adopts what the look finds (fix105:
        # held, it ran untracked while its page said it waited for the account). A look that
        # finds none sends it, as it was on its way before the deactivation: held after an
        # empty look, its unanswered create would be looked for again at every pass.
        deactivated = queued.filter(owner__is_active=False)
        on_its_way = unsettled_creates(deactivated)
        say_owner_deactivated(deactivated.exclude(pk__in=on_its_way))
        queued = queued.filter(Q(owner__is_active=True) | Q(pk__in=on_its_way))
        for job in queued.order_by("created_at", "id"):
            if go_on is not None and not go_on():
                return
            lane.doing = f"submitting {job.public_id} to {job.backend}"
            lane.submitting = job
            try:
                get_backend(job.backend).submit(job)
            except Exception:
                logger.exception("submitting %s to %s failed", job.public_id, job.backend)
            finally:
                lane.doing = ""
                lane.submitting = None
            if deadline is not None and time.monotonic() >= deadline:
                break

    def sync_remote(
        self,
        *,
        budget: float | None = None,
        go_on: Callable[[], bool] | None = None,
        backend: str | None = None,
    ) -> None:
        """Syncs each remote job of `backend` (None: of every remote backend): a round over
        them all, or with a `budget` (seconds, as each pass gives) the round's next jobs until
        it is spent, the rest in the next calls; `go_on`, asked before each job's sync, ends it once it says no (the job
        stays first in the round). Until session 32 one call synced every job, and a
        platform that answers slowly (within its read timeout, so not "no answer") cost
        each job's requests in turn: 40 jobs on a server taking 5 s a request, several
        minutes in which the same loop stopped or started no local job. A pass now spends
        at most about REMOTE_TICK_SECONDS and one job's sync on them, so submits and syncs
        take turns (and the RemoteThread asks the lease again between passes).

        Once a platform did not answer one job (unreachable, or no answer within its read
        timeout, each read tried three times) its other jobs wait for the next round: with
        an API server that takes connections and never answers, each would cost as long
        (40 jobs: an hour without a local job stopped or started, until qa55).

        Jobs that got no answer are synced after the others in the next round, the one that
        has waited longest first. Without it, when one job's reads alone never get an answer
        (a platform that answers the others), the jobs after it in the round's order were
        left for the next round every round, never synced (session 32). With a platform that
        answers none, each round starts with a different job."""
        deadline = None if budget is None else time.monotonic() + budget
        lane = self.lane(backend)
        if not lane.sync_round:
            lane.sync_round = self.remote_sync_round(lane)
            lane.round_unanswered = {}
        tried = False
        while lane.sync_round:
            if tried and deadline is not None and time.monotonic() >= deadline:
                return  # the round goes on at the next call
            if go_on is not None and not go_on():
                return
            job = remote_to_sync().filter(pk=lane.sync_round.pop(0)).first()
            if job is None:
                continue  # ended, or deleted, since the round began
            if job.backend in lane.round_unanswered:
                lane.round_unanswered[job.backend] += 1
                continue
            tried = True
            lane.doing = f"syncing {job.public_id} with {job.backend}"
            try:
                get_backend(job.backend).sync(job)
            except BackendError as exc:
                # Expected (the platform is slow or down): one line, tried again next round.
                logger.warning(
                    "syncing %s with %s failed: %s", job.public_id, job.backend, logged_error(exc)
                )
                if exc.code in UNANSWERED_CODES:
                    lane.round_unanswered[job.backend] = 0
                    lane.sync_unanswered[job.pk] = time.monotonic()
                    continue
            except Exception:
                logger.exception("syncing %s with %s failed", job.public_id, job.backend)
            finally:
                lane.doing = ""
            lane.sync_unanswered.pop(job.pk, None)
        for platform, left in lane.round_unanswered.items():
            if left:
                logger.warning(
                    "%s did not answer: %d more of its jobs not synced this round", platform, left
                )
        lane.round_unanswered = {}

    @staticmethod
    def remote_sync_round(lane: RemoteLane) -> list[int]:
        """The lane's remote jobs to sync in a new round, in their order: those answered last
        time (or never tried) first, newest first; then those that got no answer, the longest
        unanswered first."""
        jobs = list(lane.jobs(remote_to_sync()).values_list("pk", flat=True))
        lane.sync_unanswered = {
            pk: lane.sync_unanswered[pk] for pk in jobs if pk in lane.sync_unanswered
        }
        return sorted(jobs, key=lambda pk: lane.sync_unanswered.get(pk, 0.0))

    def delete_expired(self) -> None:
        """Deletes finished local jobs whose retention has passed (deletes_at).

        Retention is in whole minutes (30m, 12h, 7d), so this looks once a minute
        (JOB_MINUTE_SECONDS), not on every tick: each look reads every kept job that has a
        retention, and with a year of them (1,600 at 30,000 jobs) reading their whole rows,
        spec included, took 80 ms of each 1-second tick (scale review, session 18). It reads
        just the id, finish and retention of each, and deletes at most EXPIRED_PER_PASS jobs
        a tick, the longest overdue first: a backlog (the worker stopped for a week, a team's
        year of jobs reaching their retention at once) is worked off over the next ticks,
        which stay short, instead of one tick deleting thousands.

        A job whose deletion fails (its folder cannot be removed, the database refuses) is
        tried again a minute later, after the others (review 18b: the longest overdue
        first, EXPIRED_PER_PASS such jobs took every place of every pass, and no other job
        was ever deleted)."""
        from .actions import job_delete

        clock = time.monotonic()
        if clock < self.next_expiry_check:
            return
        now = timezone.now()
        # The jobs whose deletion time (stored when they ended: job_transition) has come, from
        # its index: reading every finished local job's retention from its spec took 213 ms
        # a minute at 19,534 of them (qa107).
        due = dict(
            Job.objects.filter(deletes_at__lte=now).order_by().values_list("pk", "deletes_at")
        )
        # A job an alert is still to be delivered about is kept until it is (a job that ended
        # while no worker ran is recorded, its alert queued, past its retention; a webhook
        # down is tried again up to 36 minutes later): the delivery needs the job.
        for pk in jobs_with_alerts_pending(due):
            del due[pk]
        # Forgotten once deleted or no longer due; not tried again before their time.
        self.expiry_failed = {pk: f for pk, f in self.expiry_failed.items() if pk in due}
        tried = sorted(
            (pk in self.expiry_failed, at, pk)
            for pk, at in due.items()
            if pk not in self.expiry_failed or self.expiry_failed[pk].retry_at <= clock
        )
        # More due than one pass deletes: the rest on the next tick, else in a minute.
        self.next_expiry_check = clock + (
            0 if len(tried) > EXPIRED_PER_PASS else settings.JOB_MINUTE_SECONDS
        )
        for _, _, pk in tried[:EXPIRED_PER_PASS]:
            job = Job.objects.filter(pk=pk).first()
            at = deletes_at(job=job) if job is not None else None
            if job is None or at is None or at > now:
                continue  # deleted or changed since it was read
            if pk not in self.expiry_failed:  # (a failing one: said as deletion_failed says)
                logger.info("deleting %s: its retention passed at %s", job.public_id, at)
            try:
                job_delete(job=job, for_retention=True)
            except Exception as exc:
                self.deletion_failed(
                    self.expiry_failed, job=job, exc=exc, why="its retention passed", clock=clock
                )
            else:
                self.deletion_done(self.expiry_failed, job=job)

    def forget_deleted(self) -> None:
        """Once an hour, forgets the deleted jobs kept past DELETED_JOB_KEEP_DAYS
        (jobs.actions.forget_deleted_jobs): days are its unit, so looking more often would
        only repeat a query; a failure is tried again the next hour, never failing the tick."""
        from .actions import forget_deleted_jobs

        clock = time.monotonic()
        if clock < self.next_forget:
            return
        self.next_forget = clock + FORGET_DELETED_SECONDS
        try:
            if forgotten := forget_deleted_jobs():
                logger.info("forgot %d deleted jobs kept past DELETED_JOB_KEEP_DAYS", forgotten)
        except Exception:
            logger.exception("forgetting deleted jobs kept past DELETED_JOB_KEEP_DAYS failed")

    def requeue_stale_tasks(self) -> None:
        """Once a minute (JOB_MINUTE_SECONDS), queues again the tasks a killed `db_worker`
        left Running (requeue_stale_tasks), also when this worker runs none (--no-tasks); a
        failure is tried again the next minute, never failing the tick."""
        clock = time.monotonic()
        if clock < self.next_stale_tasks:
            return
        self.next_stale_tasks = clock + settings.JOB_MINUTE_SECONDS
        try:
            requeue_stale_tasks()
        except Exception:
            logger.exception("queueing again the tasks left Running failed")

    def remove_secrets_left(self) -> None:
        """Once a minute (JOB_MINUTE_SECONDS), removes the Kubernetes Secrets that deleting
        their jobs left, the API server not answering in the Delete's short wait
        (DeletedJob.secret_left): the deletion is finished here, not lost. While the
        cluster still does not answer, the rest wait for the next minute; a failure never
        fails the tick."""
        from .models import DeletedJob

        clock = time.monotonic()
        if clock < self.next_secrets_left:
            return
        self.next_secrets_left = clock + settings.JOB_MINUTE_SECONDS
        if not configured("kubernetes"):
            # Left by Deletes while it is not configured (jobs.actions.job_delete): removed
            # once it is, not a warning a minute meanwhile.
            return
        try:
            left = list(
                DeletedJob.objects.exclude(secret_left="").values_list(
                    "pk", "public_id", "secret_left"
                )
            )
            for pk, public_id, secret_left in left:
                try:
                    backend = get_backend("kubernetes")
                    backend.remove_secret_left(public_id=public_id, secret_left=secret_left)
                except BackendError as exc:
                    logger.warning(
                        "removing Secret %s that deleting %s left failed: %s; tried again in "
                        "a minute",
                        secret_left,
                        public_id,
                        logged_error(exc),
                    )
                    if exc.code in UNANSWERED_CODES:
                        return  # the cluster does not answer: the others would wait as long
                    continue
                DeletedJob.objects.filter(pk=pk).update(secret_left="")
                logger.info("removed Secret %s that deleting %s left", secret_left, public_id)
        except Exception:
            logger.exception("removing Secrets that deleted jobs left failed")

    def stop_aihc_duplicates(self, *, go_on: Callable[[], bool] | None = None) -> None:
        """Once a minute (JOB_MINUTE_SECONDS), stops the AIHC jobs a create that got no clear
        answer made late, beside the one the console follows (AihcBackend.stop_duplicates).
        A failure never fails the pass; the look is made again the next minute."""
        self.next_duplicates_look = time.monotonic() + settings.JOB_MINUTE_SECONDS
        if "aihc" not in settings.CONSOLE_BACKENDS:
            return
        try:
            get_backend("aihc").stop_duplicates(go_on=go_on)
        except BackendError as exc:
            logger.warning("looking on AIHC for duplicate jobs failed: %s", logged_error(exc))
        except Exception:
            logger.exception("looking on AIHC for duplicate jobs failed")

    def delete_expired_sessions(self) -> None:
        """Once an hour, deletes the session rows past their expiry (jobs.sessions): a
        failure is tried again the next hour, never failing the tick."""
        clock = time.monotonic()
        if clock < self.next_session_cleanup:
            return
        self.next_session_cleanup = clock + EXPIRED_SESSIONS_EVERY_SECONDS
        try:
            delete_expired_sessions()
        except Exception:
            logger.exception("deleting expired sessions failed")

    def delete_requested(self) -> None:
        from .actions import job_delete
        from .models import LocalRun

        # The flagged runs first: a scan of the small LocalRun table (2 ms at 30,000 runs),
        # where joining from every finished job costs ten times that on each tick.
        flagged = list(
            LocalRun.objects.filter(delete_when_stopped=True).values_list("job_id", flat=True)
        )
        # Forgotten once deleted (or no longer flagged); not tried again before their time.
        still = set(flagged)
        self.requested_failed = {pk: f for pk, f in self.requested_failed.items() if pk in still}
        if not flagged:
            return
        clock = time.monotonic()
        waiting = [pk for pk, f in self.requested_failed.items() if f.retry_at > clock]
        for job in Job.objects.filter(
            pk__in=flagged, backend="local", status__in=FINAL_STATUSES
        ).exclude(pk__in=waiting):
            if job.pk not in self.requested_failed:
                logger.info("deleting %s: deleted while it ran", job.public_id)
            try:
                job_delete(job=job)
            except Exception as exc:
                self.deletion_failed(
                    self.requested_failed,
                    job=job,
                    exc=exc,
                    why="deleted while it ran",
                    clock=clock,
                )
            else:
                self.deletion_done(self.requested_failed, job=job)

    def deletion_failed(
        self,
        failing: dict[int, FailingDeletion],
        *,
        job: Job,
        exc: Exception,
        why: str,
        clock: float,
    ) -> None:
        """A deletion failed: tried again a minute later (JOB_MINUTE_SECONDS). Its first
        failure, and each change of reason, is logged as a warning (with the traceback of an
        error other than files left behind) and said on the job as a DeleteFailed event (its
        owner and staff, in the admin, read why); the same reason again is logged once in
        DELETION_RELOGGED_MINUTES, with how many tries failed since when. A job failing a
        minute for ever once filled the log with a traceback a minute (session 19)."""
        from .backends.local import FilesLeft

        reason, message = deletion_failure_reason(exc)
        minute = settings.JOB_MINUTE_SECONDS
        known = failing.get(job.pk)
        if known is None or known.reason != reason:
            traceback = not isinstance(exc.__cause__, FilesLeft)
            if known is None:
                logger.warning(
                    "deleting %s (%s) failed: %s; tried again every minute",
                    job.public_id,
                    why,
                    reason,
                    exc_info=traceback,
                )
            else:
                logger.warning(
                    "deleting %s (%s) failed for another reason: %s (was: %s); tried again "
                    "every minute",
                    job.public_id,
                    why,
                    reason,
                    known.reason,
                    exc_info=traceback,
                )
            failing[job.pk] = FailingDeletion(
                reason=reason,
                since=known.since if known is not None else timezone.now(),
                tries=(known.tries if known is not None else 0) + 1,
                logged_at=clock,
                retry_at=clock + minute,
            )
            self.say_deletion_failed(job=job, message=message)
            return
        known.tries += 1
        known.retry_at = clock + minute
        if clock - known.logged_at >= DELETION_RELOGGED_MINUTES * minute:
            known.logged_at = clock
            logger.warning(
                "deleting %s (%s) still fails, %d tries since %s: %s; tried again every minute",
                job.public_id,
                why,
                known.tries,
                known.since.isoformat(timespec="seconds"),
                reason,
            )

    @staticmethod
    def say_deletion_failed(*, job: Job, message: str) -> None:
        """The DeleteFailed event, unless the job's last one says the same (a worker started
        again finds the same failure, which its own memory of it went with)."""
        try:
            last = (
                job.events.filter(reason=DELETE_FAILED)
                .order_by("-created_at", "-id")
                .values_list("message", flat=True)
                .first()
            )
            if last != str(message):
                job_event(job=job, reason=DELETE_FAILED, message=message, warning=True)
        except Exception:
            logger.exception("recording that deleting %s failed failed", job.public_id)

    @staticmethod
    def deletion_done(failing: dict[int, FailingDeletion], *, job: Job) -> None:
        known = failing.pop(job.pk, None)
        if known is not None:
            logger.warning(
                "deleted %s, after %d failed tries since %s",
                job.public_id,
                known.tries,
                known.since.isoformat(timespec="seconds"),
            )

    def reap(self) -> None:
        for pid, child in list(self.children.items()):
            if child.poll() is not None:
                del self.children[pid]


# How the console's worker names itself to django-tasks-db (plus its pid).
CONSOLE_TASK_WORKER = "console-worker-"
TASK_THREADS_STARTED = itertools.count(1)
# The worker ids of this process's task threads still running: one a lease lost stopped may
# still be sending a slow mail (it is waited for 10 s), and its task is not left behind.
task_threads_alive: set[str] = set()


class TaskThread(threading.Thread):
    """Runs django tasks (alert delivery) next to the supervision loop."""

    def __init__(self, interval: float) -> None:
        super().__init__(name="tasks", daemon=True)
        self.interval = max(interval, 0.5)
        self.stopped = threading.Event()
        from django_tasks_db.management.commands.db_worker import Worker as DBWorker

        self.db_worker = DBWorker(
            queue_names=["default"],
            interval=interval,
            batch=False,
            backend_name="default",
            startup_delay=False,
            max_tasks=None,
            # One of its own a thread (a lease taken again starts another): the thread
            # requeues what it left Running by it (run), never what another one still runs.
            worker_id=f"{CONSOLE_TASK_WORKER}{os.getpid()}-{next(TASK_THREADS_STARTED)}",
            excluded_queue_names=[],
        )

    def start(self) -> None:
        task_threads_alive.add(self.db_worker.worker_id)  # from now on (run says when it ends)
        super().start()

    def run(self) -> None:
        failed = False
        try:
            while not self.stopped.is_set():
                try:
                    if failed:
                        # A task it was running when the error came stays Running (marking it
                        # done or failed was refused too), and no runner takes a Running task:
                        # its alert or mail would wait for the worker's restart. Queued again
                        # (delivered again rather than lost, as a killed worker's are).
                        requeue_interrupted_tasks(worker_id=self.db_worker.worker_id)
                        failed = False
                    self.db_worker.run()
                    break  # it returns when stopped, or after one batch (batch mode)
                except Exception:
                    failed = True
                    # Found in QA: the database out of reach for a moment (PostgreSQL
                    # restarted) ended this thread, and every alert and review mail with it,
                    # until the worker itself restarted. It waits for the database instead.
                    if not database_outage.failed():
                        logger.exception("running queued tasks failed; trying again")
                    while not self.stopped.wait(self.interval):
                        if database_unreachable_reason() is None:
                            break
        finally:
            task_threads_alive.discard(self.db_worker.worker_id)
            connections.close_all()  # this thread's; they outlive requests (CONN_MAX_AGE)

    def stop(self) -> None:
        self.stopped.set()
        self.db_worker.running = False


class RemoteThread(threading.Thread):
    """Submits and syncs one remote backend's jobs (AIHC or Kubernetes: a thread each) beside
    the serving loop, while this worker holds the lease: a pass (Worker.remote_pass) every
    WORKER_POLL_SECONDS, at once while a sync round is under way. The loop supervises local
    jobs each tick whatever the platforms do: until the remote thread, one job's sync with a
    platform that took connections and never answered held the loop for each read's timeout,
    three or four times (91.5 s with Kubernetes' default KUBERNETES_READ_TIMEOUT, 123.5 s with
    AIHC's), and a 停止 on a local job waited as long. And one platform's wait holds up no
    other's jobs: until fix85b one thread served both, and a Kubernetes job stayed 排队中
    while an AIHC create waited out AIHC_READ_TIMEOUT.

    Only the lease's holder sends anything: `holding` is asked before each submit and each
    sync, and says no once the thread is stopped (the lease lost, the worker asked to stop)
    or the lease is not this worker's any more. The loop renews the lease; while its last
    renewal is older than half of WORKER_STALE_SECONDS (the loop hung, the database out of
    reach) a takeover may be near, so the thread sends nothing either, as the loop itself
    stops dispatching then (Worker.beat). A request already on its way is not cut off:
    Worker.dispatch_remote says why a submit in flight is never sent twice."""

    def __init__(self, worker: Worker, stop: threading.Event, backend: str) -> None:
        super().__init__(name=f"remote-{backend}", daemon=True)
        self.worker = worker
        self.backend = backend
        self.lane = worker.lane(backend)
        self.stop_asked = stop  # the worker's own stop (SIGTERM, Ctrl-C)
        self.stopped = threading.Event()  # this thread's: the lease lost, or the loop ended
        # When (monotonic) it last got to a job or began a pass, and last said it was stuck.
        self.progress_at = time.monotonic()
        self.said_stuck_at: float | None = None

    def holding(self) -> bool:
        """Whether it may send its next request: not stopped, and the lease still this
        worker's (one query). Its progress too: it got to its next job."""
        self.progress_at = time.monotonic()
        if self.stopped.is_set() or self.stop_asked.is_set():
            return False
        renewed = self.worker.last_beat
        if renewed is None or time.monotonic() - renewed > settings.WORKER_STALE_SECONDS / 2:
            return False
        try:
            return lease_held(worker=self.worker.identity)
        except Exception:
            database_outage.failed()  # said by the loop's beat too; nothing sent meanwhile
            return False

    def run(self) -> None:
        try:
            while not (self.stopped.is_set() or self.stop_asked.is_set()):
                went_on = False  # a whole pass made, the lease held throughout
                try:
                    close_old_connections()
                    if self.holding():
                        self.worker.remote_pass(backend=self.backend, go_on=self.holding)
                        went_on = True
                except Exception:
                    # Never ends the thread: a failure is logged and the next pass tries
                    # again (a platform's BackendError is already one line, in sync_remote).
                    if not database_outage.failed():
                        logger.exception("submitting or syncing %s jobs failed", self.backend)
                self.progress_at = time.monotonic()
                if not (went_on and self.lane.sync_round):  # a round under way goes on
                    self.stopped.wait(settings.WORKER_POLL_SECONDS)
        finally:
            connections.close_all()  # this thread's; they outlive requests (CONN_MAX_AGE)

    def stop(self) -> None:
        self.stopped.set()

    def waiting_on(self) -> str:
        """What it waits on, for the log (the platform even between jobs)."""
        return self.lane.doing or f"in one pass over {self.backend} jobs"

    def finish_submit(self, job: Job, *, deadline: float) -> None:
        """Waits, once the worker is asked to stop, for this thread's create of `job` on its
        way until it is answered (its job leaves Submitting) or `deadline` (monotonic: its
        own timeout, create_wait_seconds, from the stop's wait; finish_submits) passes, the
        lease still held meanwhile. The process ends right after the stop, and a create cut
        off left its job Submitting: the next worker left it so for 2 minutes
        (STUCK_SUBMITTING, as after a kill) and then sent it again (review 40: a job submitted
        as the console was restarted showed 提交中 for two minutes, then "The submission was
        interrupted")."""
        while self.is_alive() and self.lane.submitting is job:
            if time.monotonic() >= deadline:
                logger.warning(
                    "stopped with the create of %s on %s unanswered: once the job has been "
                    "Submitting for 2 minutes, the next worker adopts what it made or sends "
                    "it again",
                    job.public_id,
                    job.backend,
                )
                return
            try:
                # Not yet sent (Queued, still getting ready to send) or on its way.
                unsent = Q(status=JobStatus.QUEUED, external_id="")
                if not Job.objects.filter(
                    unsent | Q(status=JobStatus.SUBMITTING), pk=job.pk
                ).exists():
                    return  # answered: what follows (its first sync) may be cut off
            except Exception:
                return  # the database out of reach: nothing to wait for
            self.join(timeout=0.1)

    def say_if_stuck(self) -> None:
        """Logs, from the loop, a thread that has not got to its next job for
        REMOTE_STUCK_SECONDS (its platform, what it waits on, for how long), again as often
        while it stays so, and once when it goes on. The worker is running (its loop
        supervises local jobs and renews the lease, so /healthz and the users' banner say
        so): what is stuck is this platform's submits and syncs (the other platform's go on,
        in their own thread), and this line is where it says so."""
        waited = time.monotonic() - self.progress_at
        if waited < REMOTE_STUCK_SECONDS:
            if self.said_stuck_at is not None:
                self.said_stuck_at = None
                logger.warning("submitting and syncing %s jobs goes on again", self.backend)
            return
        if self.said_stuck_at is None or time.monotonic() - self.said_stuck_at >= (
            REMOTE_STUCK_SECONDS
        ):
            self.said_stuck_at = time.monotonic()
            logger.error(
                "no %s job submitted or synced for %d s: still %s",
                self.backend,
                waited,
                self.waiting_on(),
            )


def finish_submits(threads: Collection[RemoteThread]) -> None:
    """Called once the worker is asked to stop and some of its RemoteThreads still run after
    REMOTE_JOIN_SECONDS: each one's create on its way is waited for, side by side, each until
    its own timeout (create_wait_seconds) from now, so the longest bounds the whole wait."""
    started = time.monotonic()
    waits = []
    for thread in threads:
        job = thread.lane.submitting
        if job is None or not thread.is_alive():
            continue
        seconds = create_wait_seconds(job.backend)
        logger.warning(
            "waiting up to %d s for the create of %s on %s to be answered before stopping",
            seconds,
            job.public_id,
            job.backend,
        )
        waits.append((thread, job, started + seconds))
    for thread, job, deadline in waits:  # deadlines from one start: the waits overlap
        thread.finish_submit(job, deadline=deadline)


def remote_progress() -> RemoteProgress | None:
    """How this process's RemoteThreads get on, for the lease (None: none runs). The last
    holding period's, still waiting on a request, count: no job of their platform is
    submitted or synced until they end. Stuck once one has not got to its next job for
    REMOTE_STUCK_SECONDS, as its log line says (RemoteThread.say_if_stuck). Decision
    (fix85b): the time is the longest one's (the thread that got on least recently), and
    `platform` names every stuck thread's platform, the longest stuck first, comma-separated
    ("kubernetes,aihc"): staff are told each platform whose jobs wait (jobs.health)."""
    threads = [thread for thread in remote_threads.values() if thread.is_alive()]
    if not threads:
        return None
    now = time.monotonic()
    waited = {thread.backend: max(now - thread.progress_at, 0.0) for thread in threads}
    stuck = sorted(
        (backend for backend, seconds in waited.items() if seconds >= REMOTE_STUCK_SECONDS),
        key=lambda backend: -waited[backend],
    )
    return RemoteProgress(
        waited_seconds=max(waited.values()), stuck=bool(stuck), platform=",".join(stuck)
    )


def create_wait_seconds(backend: str) -> float:
    """How long a create on `backend` waits at most for its answer: its client's connect and
    read timeouts (a create is sent once, never tried again)."""
    if backend == "aihc":
        return settings.AIHC_CONNECT_TIMEOUT + settings.AIHC_READ_TIMEOUT
    if backend == "kubernetes":
        return settings.KUBERNETES_CONNECT_TIMEOUT + settings.KUBERNETES_READ_TIMEOUT
    return REMOTE_JOIN_SECONDS


# This process's RemoteThreads, by backend, once started: a new holding period starts none for
# a backend while the last one's still runs (it is waiting on a request), so two never send
# side by side to one platform.
remote_threads: dict[str, RemoteThread] = {}


def start_remote_threads(worker: Worker, stop: threading.Event) -> None:
    """Starts the RemoteThreads of `worker`, one for each of its remote backends
    (remote_backends), each if there is none running: when the lease was just taken, and again if it
    ended on its own (it should not: it is said in the log). None for a backend whose last
    holding period's thread still waits on a request, its lease lost: the next tick asks
    again, and that backend's jobs are submitted and synced once it ended."""
    backends = worker.remote_backends()
    for backend, current in list(remote_threads.items()):
        if current.is_alive() and backend not in backends:
            current.say_if_stuck()  # the last holding period's, of a backend not served now
    for backend in backends:
        current = remote_threads.get(backend)
        if current is not None and current.is_alive():
            # The last holding period's too: none of its platform's jobs are submitted or
            # synced until it ends, which the log says while it lasts (once, at the start,
            # until review 40).
            current.say_if_stuck()
            continue
        if current is not None and current.worker is worker and not current.stopped.is_set():
            logger.error(
                "the thread submitting and syncing %s jobs ended; starting it again", backend
            )
        remote_threads[backend] = RemoteThread(worker, stop, backend)
        remote_threads[backend].start()


def requeue_interrupted_tasks(*, worker_id: str = "") -> int:
    """Alert deliveries a killed worker had started are queued again.

    Called once this process holds the worker lock, so no other console worker runs: a
    task one of them left Running will never finish. Delivered again rather than dropped,
    because a repeated alert is better than a missing one (it may have gone out just before
    the kill). Tasks a separate `manage.py db_worker` claimed are left to it, and so are
    those a task thread of this process still runs (one stopped when the lease was lost, not
    yet through its task: queued again, it went out twice). With `worker_id`, only those of
    that task thread (TaskThread.run, after an error)."""
    from django_tasks_db.models import DBTaskResult

    stuck = [
        result.pk
        for result in DBTaskResult.objects.running().only("worker_ids")
        if result.worker_ids
        and (
            result.worker_ids[-1] == worker_id
            if worker_id
            else result.worker_ids[-1].startswith(CONSOLE_TASK_WORKER)
            and result.worker_ids[-1] not in task_threads_alive
        )
    ]
    if stuck:
        DBTaskResult.objects.filter(pk__in=stuck, status="RUNNING").update(
            status="READY", started_at=None
        )
        logger.warning(
            "queued %d alert deliveries again that %s left",
            len(stuck),
            "an error" if worker_id else "a stopped worker",
        )
    return len(stuck)


# A task (an alert's delivery, a review mail) Running longer than this was left by a worker
# that died: its delivery is bounded by its own timeouts (longest_delivery), and this is at
# least twice that. Nothing else tells a killed `manage.py db_worker` from a live one:
# django-tasks-db records who claimed a task and when, and no heartbeat.
STALE_TASK_MINUTES = 30
# At most how many exchanges one mail takes, each within the mail server's timeout
# (settings.MAIL_TIMEOUT_SECONDS, MAILERS' "timeout"): connect, EHLO, STARTTLS, EHLO, AUTH,
# MAIL FROM, a RCPT TO per address (MAX_ALERT_EMAILS), DATA, the message, QUIT.
MAIL_EXCHANGES = 30
# What a task left Running too long is marked with when queued again (its `traceback`, which
# django-tasks-db clears when the task ends well): found there a second time, it is given up.
STALE_TASK_NOTE = "queued again by the console worker: Running since {started} by {worker}"


def longest_delivery() -> timedelta:
    """At most how long one alert's delivery takes by its own timeouts: each webhook (at most
    MAX_ALERT_WEBHOOKS) resolved, connected, written and read, each within
    ALERT_WEBHOOK_TIMEOUT_SECONDS, and its mails (one per reader's language: two) each within
    MAIL_EXCHANGES of the mail server's timeout. A review mail is one such mail."""
    from .spec import MAX_ALERT_WEBHOOKS

    webhooks = MAX_ALERT_WEBHOOKS * 4 * settings.ALERT_WEBHOOK_TIMEOUT_SECONDS
    mails = 2 * MAIL_EXCHANGES * settings.MAIL_TIMEOUT_SECONDS
    return timedelta(seconds=webhooks + mails)


def stale_task_after() -> timedelta:
    return max(timedelta(minutes=STALE_TASK_MINUTES), 2 * longest_delivery())


def requeue_stale_tasks() -> int:
    """Tasks Running for longer than stale_task_after are queued again, once; a second time,
    given up (Failed). Returns how many were queued again.

    A separate `manage.py db_worker` killed mid-delivery leaves its task Running for ever
    (requeue_interrupted_tasks leaves such tasks to it: it may be alive). Past a bound no
    live delivery reaches, it is not: queued again, its alert goes out, perhaps twice (at
    least once: a repeated alert is better than a lost one). Once only: a delivery that
    outlasts the bound again (a receiver trickling its answer a byte at a time passes every
    timeout) would otherwise be sent again every half hour for ever. The tasks this
    process's task threads still run are left alone: those are known to be alive."""
    from django_tasks_db.models import DBTaskResult

    started_before = timezone.now() - stale_task_after()
    requeued = 0
    for result in DBTaskResult.objects.running().filter(started_at__lt=started_before):
        worker = result.worker_ids[-1] if result.worker_ids else "?"
        if worker in task_threads_alive:
            continue
        # Only if its row is as read: a task its worker ended meanwhile stays ended.
        unchanged = DBTaskResult.objects.filter(
            pk=result.pk, status="RUNNING", started_at=result.started_at
        )
        if result.traceback.startswith(STALE_TASK_NOTE.partition(":")[0]):
            if unchanged.update(
                status="FAILED",
                finished_at=timezone.now(),
                exception_class_path="builtins.TimeoutError",  # as set_failed records one
                traceback=f"{result.traceback}\ngiven up: Running too long again by {worker}",
            ):
                logger.error(
                    "gave up task %s (%s): Running for longer than %d minutes a second time "
                    "(by %s); it is not queued again",
                    result.pk,
                    result.task_path,
                    stale_task_after().total_seconds() // 60,
                    worker,
                )
            continue
        note = STALE_TASK_NOTE.format(started=result.started_at.isoformat(), worker=worker)
        if unchanged.update(status="READY", started_at=None, traceback=note):
            requeued += 1
            logger.warning(
                "queued task %s (%s) again: Running for longer than %d minutes by %s, "
                "a worker that must have been killed (at least once: it may be sent twice)",
                result.pk,
                result.task_path,
                stale_task_after().total_seconds() // 60,
                worker,
            )
    return requeued


# How often a worker waiting for another's worker.lock tries it again.
LOCK_RETRY_SECONDS = 0.5


def take_worker_lock(stop: threading.Event) -> int | None:
    """Waits until this is the only worker on this run directory; returns the lock fd, or
    None once `stop` is set first. Tried again every LOCK_RETRY_SECONDS, not with a blocking
    flock: Python retries that after a signal whose handler only sets `stop`, so a second
    worker started on the same run directory ignored SIGTERM and Ctrl-C while it waited."""
    run_dir = Path(settings.LOCAL_RUN_DIR)
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / "worker.lock", os.O_RDWR | os.O_CREAT, 0o600)
    said = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if not said:
                logger.warning("another worker holds %s; waiting", run_dir / "worker.lock")
                said = True
        if stop.wait(LOCK_RETRY_SECONDS):
            os.close(fd)
            logger.info("stopped while waiting for %s", run_dir / "worker.lock")
            return None


WAKE_CHECK_SECONDS = 0.05


def work_marker() -> tuple[int, object]:
    """Changes when a local job is queued or asked to stop: a cheap indexed query.

    Remote jobs are left out: a backend that puts a job back to Queued after a failed
    submit must wait for the next tick, not be retried at once in a loop.
    """
    from django.db.models import Count, Max

    active = Job.objects.filter(backend="local", status__in=[JobStatus.QUEUED, JobStatus.STOPPING])
    row = active.aggregate(n=Count("id"), last=Max("updated_at"))
    return row["n"], row["last"]


def wait_for_work(stop: threading.Event, timeout: float) -> None:
    """Sleeps until the next tick, waking early when a job is submitted or stopped, so a
    new job starts (and a stop takes effect) in a fraction of the poll interval."""
    deadline = time.monotonic() + timeout
    try:
        marker = work_marker()
    except Exception:
        stop.wait(timeout)
        return
    while not stop.is_set() and time.monotonic() < deadline:
        stop.wait(min(WAKE_CHECK_SECONDS, max(deadline - time.monotonic(), 0)))
        try:
            if work_marker() != marker:
                return
        except Exception:
            continue


def wait_for_lease(
    stop: threading.Event, identity: WorkerIdentity
) -> tuple[float, int | None] | None:
    """Stands by until this worker holds the database lease, or is asked to stop (None).
    Tries every WORKER_HEARTBEAT_SECONDS, beating its own row meanwhile; says who holds the lease
    when it starts waiting and whenever the holder changes. Returns when (monotonic) the
    lease was taken: the Worker's first renewal is due WORKER_HEARTBEAT_SECONDS after it; and
    how many seconds before that its last holder (this process too, back after a database
    outage) last renewed it (None: never held), which Worker.note_followed_again says on the
    jobs it follows again."""
    told = None
    while not stop.is_set():
        asked = time.monotonic()
        try:
            holder = worker_state()  # as the last holder left it, aged on the database's clock
            # This process holds worker.lock (run_forever): a holder in its place is dead.
            if worker_beat(worker=identity, run_dir_locked=True):
                database_outage.reached()
                if told is not None:
                    logger.warning("took over as the active worker")
                return asked, holder.last_seen_seconds
        except Exception:
            if not database_outage.failed():
                logger.exception("taking the worker's lease failed")
        else:
            database_outage.reached()
            who = (holder.host, holder.pid, holder.started_at)
            if who != told:
                told = who
                logger.warning(
                    "another worker is active on host %s (pid %s) since %s; waiting",
                    holder.host,
                    holder.pid,
                    holder.started_at.isoformat() if holder.started_at else "?",
                )
        stop.wait(settings.WORKER_HEARTBEAT_SECONDS)
    return None


def checked_identity() -> WorkerIdentity:
    """This process's identity with what its start-up check found: with
    LOCAL_JOB_NETWORK=isolated, whether a job's network namespace can be made here at all
    (jobs.network.isolation_problem). If not, it says so in its log, in the lease (staff's
    banner and /healthz say it) and to every queued local job, which waits (jobs.scheduler)
    instead of failing at its start. Checked once: restart the worker once it is fixed."""
    identity = WorkerIdentity.here()
    if not network.isolated():
        return identity
    try:
        problem = network.isolation_problem()
    except Exception as exc:  # a check that cannot even be made says so, as a refusal would
        logger.exception("checking isolated networking failed")
        problem = f"the check failed: {exc}"  # as jobs.health.OWN_PROBLEMS reads it
    if problem:
        logger.error(
            "isolated networking unavailable: %s. Local jobs stay queued until a worker that "
            "can set up their network runs (LOCAL_JOB_NETWORK=%s; see README, "
            '"The network"), or LOCAL_JOB_NETWORK=host.',
            problem,
            settings.LOCAL_JOB_NETWORK,
        )
    return replace(identity, network_problem=problem[:2000])


def run_forever(stop: threading.Event, *, tasks: bool = True) -> None:
    lock = take_worker_lock(stop)
    if lock is None:  # asked to stop before the other worker on this run directory ended
        return
    identity = checked_identity()
    try:
        # Before standing by, too: a worker back on a machine whose jobs were marked as lost
        # meanwhile ends their replicas now, not once it may dispatch again.
        end_leftover_replicas()
    except Exception:
        logger.exception("ending replicas of jobs that ended elsewhere failed")
    try:
        resumed = False
        while (lease := wait_for_lease(stop, identity)) is not None:
            taken, unfollowed = lease
            run_while_holding(
                stop, identity, taken=taken, unfollowed=unfollowed, tasks=tasks, resumed=resumed
            )
            resumed = True
    finally:
        if stop.is_set():  # asked to stop (SIGTERM, Ctrl-C), not fallen over
            try:
                worker_stopped(worker=identity)
            except Exception:
                logger.exception("recording the worker's stop failed")
        connections.close_all()
        os.close(lock)


def join_remote_threads(threads: Collection[RemoteThread]) -> None:
    """Waits for `threads` to end, REMOTE_JOIN_SECONDS at most for them all."""
    deadline = time.monotonic() + REMOTE_JOIN_SECONDS
    for thread in threads:
        thread.join(timeout=max(deadline - time.monotonic(), 0.0))


def run_while_holding(
    stop: threading.Event,
    identity: WorkerIdentity,
    *,
    taken: float,
    tasks: bool,
    unfollowed: int | None = None,
    resumed: bool = False,
) -> None:
    """The worker's loop while it holds the lease (taken at `taken`, monotonic, `unfollowed`
    seconds after its last holder last renewed it): until asked to stop, or the lease lost.
    `resumed`: this process held it before (it stood by through a database outage or a full
    disk), which its first line says: "worker started" read as a restart (qa89)."""
    if tasks:
        # Holding the lease, no other console worker runs: a task one of them left Running
        # will never finish.
        requeue_interrupted_tasks()
    thread = TaskThread(settings.WORKER_POLL_SECONDS) if tasks else None
    if thread:
        thread.start()
    worker = Worker(identity)
    worker.last_beat = taken
    logger.info(
        "worker %s (poll %.2fs); CPU and memory of roles: %s; network of local jobs: %s; "
        "local jobs run as: %s",
        "resumed dispatching" if resumed else "started",
        settings.WORKER_POLL_SECONDS,
        worker.limits.describe(),
        network.describe(),
        job_users.describe(),
    )
    for warning in job_users.shared_folder_warnings():
        logger.warning("LOCAL_JOB_UID_BASE: %s", warning)
    for warning in [*card_nodes_missing(), *run_dir_smaller_than_a_log()]:
        logger.warning("%s (%s) %s", warning.msg, warning.id, warning.hint)
    try:
        for warning in queued_jobs_already_run(databases=["default"]):
            logger.warning("%s (%s) %s", warning.msg, warning.id, warning.hint)
    except Exception:
        logger.exception("looking for queued jobs that already ran failed")
    try:
        worker.note_runs_elsewhere()
        worker.note_followed_again(unfollowed_seconds=unfollowed)
        forget_old_workers()
    except Exception:
        logger.exception("looking for local jobs started elsewhere failed")
    # The last holding period's, their lease lost while they waited on a request: they send
    # nothing more (holding says no), and end once that request is answered or timed out.
    # Waited for a moment, together; a backend whose thread still waits gets this period's
    # once it ended (start_remote_threads), never beside it.
    previous = [thread for thread in remote_threads.values() if thread.is_alive()]
    join_remote_threads(previous)
    for thread in previous:
        if thread.is_alive():
            logger.warning(
                "the last remote thread still waits (%s): %s jobs are submitted and synced "
                "once it ends",
                thread.waiting_on(),
                thread.backend,
            )
    try:
        while not stop.is_set():
            close_old_connections()
            try:
                start_remote_threads(worker, stop)
                worker.tick()
            except LeaseLost as lost:
                logger.error("%s; standing by", lost)
                return
            except Exception:
                if not database_outage.failed():
                    logger.exception("worker tick failed")
            wait_for_work(stop, settings.WORKER_POLL_SECONDS)
    finally:
        mine = [thread for thread in remote_threads.values() if thread.worker is worker]
        # They send nothing more from now on; a request on its way is answered or timed out
        # first. One still waiting after REMOTE_JOIN_SECONDS is left: a daemon thread, it
        # ends with the process (a stopped worker), or before the next holding period's
        # thread for its backend starts (a lease lost).
        for remote in mine:
            remote.stop()
        join_remote_threads(mine)
        if stop.is_set():  # the process ends next: a create cut off leaves its job Submitting
            finish_submits(mine)
        if thread:
            thread.stop()
            thread.join(timeout=10)
