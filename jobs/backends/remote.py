"""What the remote backends (AIHC, Kubernetes) do alike, whatever platform runs the job.

`RemoteBackend` holds the skeleton of submitting and following a job: the steps before a
create (queue groups, a pause after the platform could not be reached, the backend's own
refusals), what becomes of the job once the platform made it or could not, the state
machine's moves that follow the platform's status, and the stop resent at a bounded pace.
Each backend keeps what only its platform has: its settings and client (`_setup`), the
create itself (`_create`), reading the job's status, instances and events (`_sync_remote`),
finding what a create left behind, stopping, deleting and logs.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import abstractmethod
from collections import deque
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone, translation
from django.utils.translation import gettext_noop

from jobs.locks import job_events_locked
from jobs.logs import masked
from jobs.models import (
    FINAL_STATUSES,
    TRANSITIONS,
    Job,
    JobEvent,
    JobReplica,
    JobStatus,
    ReplicaStatus,
    ReviewState,
)
from jobs.runtime_env import with_group_task
from jobs.services import job_event, job_fail_unreadable, job_transition, recorded
from jobs.spec import SpecError
from jobs.texts import in_english, restored, source_of

from . import BACKEND_MODULES, get_backend
from .base import Backend, BackendError, Pool

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from jobs.spec import JobSpec

# A platform's errors and events quote a job's secrets the way its logs do: one masking rule.
scrub = masked

# A job stuck in Submitting this long (the worker died mid-create) is reconciled by sync.
STUCK_SUBMITTING = timedelta(minutes=2)
# A stop the worker decides itself (sent again to a job still running while it is stopping,
# or to one past its time limit) goes at most this often.
STOP_RESEND = timedelta(minutes=1)
# A job whose pods or events read (Kubernetes; AIHC: its events) got no answer in this many of
# its syncs in a row has the status its job read gave saved without them (`_unanswered_again`).
UNANSWERED_SYNCS_BEFORE_STATUS = 2
# A job stopped while a create of it got no clear answer (create_unsettled): Stopping, and
# the worker looks for what the create made and stops it (_finish_stop_in_flight).
STOP_LOOKING = gettext_noop(
    "Stop requested. A create of the job got no clear answer, so the platform may have made "
    "it: the worker looks for it and stops it, or ends the job Stopped if there is none."
)
# The same while the platform may still be working on that create (create_wait), said with
# the time the job is looked for (stop_look_at), as its Queued reason said it; the Stop's and
# Delete's words say it too (jobs.actions.stop_look_time). Until qa83 they said the ordinary
# words, and the stop waited for that time unsaid.
STOP_LOOKING_AT = gettext_noop(
    "Stop requested. A create of the job got no clear answer, and the platform may still make "
    "it: the worker looks for it there at %(time)s and stops it if found, or ends the job "
    "Stopped if there is none."
)
# The statuses in which a job submitted again after a submission given up on refused looks
# (given_up_submission_start) is stopped as one whose create is unsettled (create_unsettled).
# Pending review too: Submit again held it for review, and its Stop withdraws it and looks
# (until left51 it was Stopped at once, what the given-up submission made left running).
SUBMITTED_AGAIN = frozenset(
    {JobStatus.PENDING_REVIEW, JobStatus.QUEUED, JobStatus.SUBMITTING, JobStatus.STOPPING}
)
# A look for what an unanswered create made that the platform answered with a refusal (403,
# a 5xx, any error but "not found"): the job is looked for again at its own pace, not at every
# worker pass (two events each until left46) and not by pausing the platform's submits (the
# other jobs' creates on that account or cluster would wait on one job's refusal). The first
# wait is 30 s (a gateway's moment or a permission being applied passes within it), doubling
# to at most 10 minutes (a permission fixed is found within that); a refusal that has lasted
# an hour (about ten looks) is not going away by itself: the job is Submit failed, saying where
# to look for what its create may have made.
LOOK_REFUSED = "LookRefused"
LOOK_RETRY_FIRST = timedelta(seconds=30)
LOOK_RETRY_MAX = timedelta(minutes=10)
LOOK_REFUSED_GIVE_UP = timedelta(hours=1)
# A job's stop a Stop selected had no time left to send (BULK_ACTION_SECONDS): stop_unsent.
STOP_NOT_SENT = gettext_noop(
    "Stop requested; Stop selected ran out of time before it was sent. The worker sends it, "
    "and again until the job has ended."
)


def unanswered_creates(job: Job, reasons: tuple[str, ...]) -> QuerySet[JobEvent]:
    """The job's events of `reasons` (creates that got no clear answer) in its submission
    now: a Submit failed ends one, and Submit again starts the count afresh. Counting them
    all, a job Submit failed after its last unanswered create was given up again at once
    on Submit again, with no create sent (the job page's button did nothing)."""
    events = job.events.filter(reason__in=reasons)
    ended = (
        job.events.filter(reason="SubmitFailed").order_by("-pk").values_list("pk", flat=True)
    ).first()
    return events if ended is None else events.filter(pk__gt=ended)


def unsettled_creates(jobs: QuerySet[Job]) -> list[int]:
    """The ids of these remote jobs whose create is unsettled (Backend.create_unsettled): the
    platform may have made them, and only their submit's look would find them. Only those
    with a create that got no clear answer, or a refused look (a given-up submission's), are
    asked, picked in SQL: the worker's pass over a deactivated owner's held jobs costs one
    query when none has one."""
    reasons = {LOOK_REFUSED}
    for name in BACKEND_MODULES:
        reasons.update(getattr(get_backend(name), "unanswered_events", ()))
    candidates = jobs.filter(
        Exists(JobEvent.objects.filter(job=OuterRef("pk"), reason__in=reasons))
    ).only("id", "backend", "status", "external_id")
    return [job.pk for job in candidates if get_backend(job.backend).create_unsettled(job)]


def refused_looks(job: Job, unanswered: tuple[str, ...]) -> list[datetime]:
    """When the job's looks were refused (LOOK_REFUSED events), oldest first, in a row: since
    its last create that got no clear answer (of reasons `unanswered`) and in its submission
    now. Kept in the job's events, so a worker restarted, or another that takes over, keeps
    the job's pace (one query)."""
    times: list[datetime] = []
    for reason, at in (
        job.events.filter(reason__in=[LOOK_REFUSED, "SubmitFailed", *unanswered])
        .order_by("-pk")
        .values_list("reason", "created_at")
    ):
        if reason != LOOK_REFUSED:
            break
        times.append(at)
    return times[::-1]


def submission_start(job: Job) -> datetime:
    """When the job's submission now began: its first "Submitting" since its last Submit
    failed (the job's creation, if none). What a create of it made is not older."""
    ended = (
        job.events.filter(reason="SubmitFailed").order_by("-pk").values_list("pk", flat=True)
    ).first()
    started = job.events.filter(reason="Submitting")
    if ended is not None:
        started = started.filter(pk__gt=ended)
    first = started.order_by("pk").values_list("created_at", flat=True).first()
    return first or job.created_at


def given_up_submission_start(job: Job) -> datetime | None:
    """When the job's last ended submission began, if it ended Submit failed with a refused
    look in it (as the hour of refused looks ends one): the platform may have the job, so a
    Submit again looks for it before sending a create (until lookfix it sent one, and AIHC had
    two jobs). None when no submission ended so. A submission whose refused look was answered
    later, then ended on a clear refusal, is taken so too: one look more, never a job twice."""
    start: datetime | None = None
    seen_end = given_up = False
    for reason, at in (
        job.events.filter(reason__in=[LOOK_REFUSED, "SubmitFailed", "Submitting"])
        .order_by("-pk")
        .values_list("reason", "created_at")
    ):
        if not seen_end:
            seen_end = reason == "SubmitFailed"
        elif reason == "SubmitFailed":
            break  # the submission before it
        elif not given_up and reason == "Submitting":
            continue  # the move _fail makes on the way to Submit failed
        else:  # a refused look of that submission, then its older events: back to its start
            given_up = True
            start = at
    return start if given_up else None


def look_wait(refusals: int) -> timedelta:
    """How long a job waits for its next look after `refusals` refused looks in a row:
    LOOK_RETRY_FIRST after the first, each wait twice the last, at most LOOK_RETRY_MAX."""
    return min(LOOK_RETRY_FIRST * 2 ** (refusals - 1), LOOK_RETRY_MAX)


def recorded_error(exc: Exception) -> str:
    """A platform's error as a status reason or event message records it: the console's own
    wording of a transport failure in the console's language; the platform's messages as
    written."""
    with translation.override(settings.LANGUAGE_CODE):
        return str(exc)


def console_time(moment: datetime, *, date: bool = False) -> str:
    """A time as an event or a status reason says it: in the console's zone (TIME_ZONE), as
    everyone reads the same recorded text whatever their own zone (jobs.time_zones), to the
    second, the zone named by its offset, "18:24:50 (UTC+08:00)" (qa81: a user in another
    zone, reading the event's own time in theirs beside it, took it for theirs); `date`:
    with the day first."""
    local = timezone.localtime(moment, timezone.get_default_timezone())
    offset = local.strftime("%z") or "+0000"
    shown = local.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S")
    return f"{shown} (UTC{offset[:3]}:{offset[3:5]})"


def logged_error(exc: Exception) -> str:
    """A platform's error as a log line quotes it: the console's own wording of a transport
    failure in English, as the rest of the line (qa80: in the console's language, Chinese
    by default, inside an English line)."""
    if isinstance(exc, BackendError) and exc.logged:
        return exc.logged
    with translation.override("en"):
        return str(exc)


class InventoryTimes(Protocol):
    """The settings an inventory's refresh follows (AIHC's and Kubernetes' own)."""

    cache_seconds: float  # figures younger than this are served without asking again
    wait_seconds: float  # how long the first page waits for the first read
    refresh_wait_seconds: float  # how long a page waits for a refresh under way


class BackgroundInventory:
    """A platform's figures, cached and refreshed in the background by one thread at a time:
    a page is served the last figures (waiting a moment for a refresh under way), so a slow or
    failing platform never makes the wizard slow, and the platform is asked at most once per
    cache period however often the wizard polls. Subclasses read and keep the figures in
    `_read_and_keep`, catching their own errors (a refresh thread never dies silently)."""

    thread_name = "inventory"

    def __init__(self) -> None:
        self.attempted_at = float("-inf")  # monotonic time of the last refresh start
        self.loaded = threading.Event()  # set once the first refresh has finished
        self.refreshed = threading.Event()  # cleared while a refresh runs
        self._lock = threading.Lock()
        self._refreshing = False
        self._thread: threading.Thread | None = None

    def _await_figures(self, config: InventoryTimes) -> None:
        """Starts a refresh when the figures are due one, and waits the configured moment."""
        self._start_refresh(config)
        if not self.loaded.is_set():
            self.loaded.wait(config.wait_seconds)
        elif not self.refreshed.is_set():
            # A healthy platform answers well within this: the page opened after a quiet
            # spell shows current figures instead of old ones marked with their age. A slow
            # one costs at most this, once per cache period.
            self.refreshed.wait(config.refresh_wait_seconds)

    def join(self, timeout: float = 30) -> None:
        """Waits for a refresh in flight (tests, and callers that need fresh figures)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _start_refresh(self, config: InventoryTimes) -> None:
        with self._lock:
            # The age is looked at under the lock: a page that found the figures out of date
            # and came here once another's refresh had ended started a second one, asking the
            # platform twice in the period (until left41).
            if self._refreshing or time.monotonic() - self.attempted_at < config.cache_seconds:
                return
            self._refreshing = True
            self.refreshed.clear()
            self.attempted_at = time.monotonic()
        self._thread = threading.Thread(target=self.refresh, name=self.thread_name, daemon=True)
        self._thread.start()

    def refresh(self) -> None:
        try:
            self._read_and_keep()
        finally:
            with self._lock:
                self._refreshing = False
            self.refreshed.set()
            self.loaded.set()

    def _read_and_keep(self) -> None:
        raise NotImplementedError


class Keyed(Protocol):
    """A backend's settings: key() tells one account or API server apart (each has its own
    submit pause)."""

    def key(self) -> tuple[Any, ...]: ...


class RemoteBackend[ConfigT: Keyed, ClientT](Backend):
    """A backend whose jobs run on a remote platform: the worker submits them and syncs them.

    `platform` names the platform in log lines; `logger` is the backend's own."""

    platform: str
    logger: logging.Logger
    # The reasons of the events a create that got no clear answer leaves (unanswered_creates).
    unanswered_events: tuple[str, ...]

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        # Per account or API server (Config.key()): (monotonic time submits resume, the
        # pause's length) after a create that never reached the platform.
        self._pauses: dict[tuple[Any, ...], tuple[float, float]] = {}
        # Job pk -> when this process last sent a stop it decided itself (_stop_due).
        self._stops_sent: dict[int, datetime] = {}
        # Job public id -> its syncs in a row whose pods or events read got no answer.
        self._unanswered_syncs: dict[str, int] = {}

    # -- what each platform does its own way ------------------------------------------

    @abstractmethod
    def _setup(self, *, for_page: bool = False) -> tuple[ConfigT, ClientT]:
        """The settings as they are now, and a client for them; BackendError (code
        "Misconfigured") when they cannot be used."""

    @abstractmethod
    def _submitting(self, job: Job) -> str:
        """The "Submitting" event's message: where the job is sent."""

    @abstractmethod
    def _create(
        self, job: Job, *, spec: JobSpec, secrets: list[str], config: ConfigT, client: ClientT
    ) -> None:
        """Sends the create of a job now Submitting, and moves it on (`_created`, `_defer`,
        `_fail`, or back to Queued to be tried again)."""

    @abstractmethod
    def _sync_remote(self, job: Job) -> None:
        """Brings the status, replicas and events of a job the platform has up to date."""

    @abstractmethod
    def _finish_stop_in_flight(self, job: Job) -> None:
        """A job stopped while its create got no clear answer: what the platform made of it
        is found and stopped; when it has nothing, the job is Stopped."""

    # -- inventory -----------------------------------------------------------------

    def _unusable(self, exc: BackendError) -> list[Pool]:
        """No pools while the settings cannot be used; said in the log once, not on every
        poll."""
        said = logged_error(exc)
        if said not in self._warned:
            self._warned.add(said)
            self.logger.warning("%s backend is enabled but unusable: %s", self.platform, said)
        return []

    # -- submission ----------------------------------------------------------------

    def submit(self, job: Job) -> None:
        if job.external_id:
            # Already on the platform (queued there); the worker may hand it back: follow it.
            self.sync(job)
            return
        if job.status == JobStatus.SUBMITTING:
            try:
                self._reconcile_stuck(job)
            except BackendError as exc:
                # The platform did not answer the look for what the create made: expected
                # (slow or down), one line; the job's next sync looks again.
                self.logger.warning(
                    "looking for what %s's create made on %s failed: %s",
                    job.public_id,
                    self.platform,
                    logged_error(exc),
                )
            return
        if job.status != JobStatus.QUEUED:
            return
        # A task whose create got no clear answer holds its place in its group (it may run on
        # the platform): it is looked for at its time whatever the others do (qa81: it waited
        # behind the task sent in its place, and its late create ran on, unfollowed).
        if self._group_is_full(job) and not self.create_unsettled(job):
            return
        try:
            # A queue task is sent with its own AIHC_GROUP_TASK_* in its envs (with_group_task).
            spec = with_group_task(job.job_spec(), job)
        except SpecError as exc:  # it could never be created: it fails, saying why
            job_fail_unreadable(job=job, exc=exc)
            return
        secrets = spec.secret_values()
        refusals = self.check_spec(spec)
        try:
            config, client = self._setup()
        except BackendError as exc:
            self._fail(job, exc.message, secrets)
            return
        if self._submits_paused(config):
            return  # the platform could not be reached a moment ago: the job waits, Queued
        refused = refused_looks(job, self.unanswered_events)
        if refused and timezone.now() < refused[-1] + look_wait(len(refused)):
            return  # its last look was refused: looked for again at its time, Queued till then
        wait = self.create_wait(job)
        if wait is not None and timezone.now() < wait:
            return  # a create may still be under way: looked for (then sent) once it has landed
        # A job looked for again after a refusal moves without an event of its own: the
        # look's outcome says what came of it (one event a look, not two).
        if not self._move(
            job, JobStatus.SUBMITTING, "Submitting", self._submitting(job), event=not refused
        ):
            return
        if refusals:
            message = " ".join(f"{path}: {' '.join(msgs)}" for path, msgs in refusals.items())
            self._fail(job, message, secrets)
            return
        self._create(job, spec=spec, secrets=secrets, config=config, client=client)

    def create_wait(self, job: Job) -> datetime | None:
        """Until when the job is neither looked for nor sent again after a create that got no
        clear answer, as that create may still be under way; None: no wait. None here: a
        platform that refuses a second create of the same job (Kubernetes: one name) needs
        none."""
        return None

    def _group_is_full(self, job: Job) -> bool:
        """A queue group keeps at most `concurrency` of its tasks on the platform at once."""
        if job.group_id is None:
            return False
        live = (
            Job.objects.filter(group_id=job.group_id)
            .exclude(pk=job.pk)
            .exclude(status__in=FINAL_STATUSES)
            .filter(
                status__in=[
                    JobStatus.SUBMITTING,
                    JobStatus.RUNNING,
                    JobStatus.STOPPING,
                    JobStatus.QUEUED,
                ]
            )
            .exclude(status=JobStatus.QUEUED, external_id="")
            .count()
        )
        if live >= job.group.concurrency:
            return True
        # Queued again after a create that got no clear answer, the platform may run it: it
        # counts (qa81: the group's next task went out meanwhile, two running under "at most
        # 1"). The watch (Job.duplicate_watch_until, AIHC's) narrows it to the few such tasks.
        unsettled = (
            Job.objects.filter(
                group_id=job.group_id,
                status=JobStatus.QUEUED,
                external_id="",
                duplicate_watch_until__gt=timezone.now(),
            )
            .exclude(pk=job.pk)
            .only("pk", "status", "external_id")
        )
        live += sum(1 for task in unsettled if self.create_unsettled(task))
        return live >= job.group.concurrency

    # Submits pause after a create that never reached the platform, doubling up to a limit,
    # so an outage costs each queued job one attempt per pause, not one per worker tick.
    def _submits_paused(self, config: ConfigT) -> bool:
        with self._lock:
            until, _delay = self._pauses.get(config.key(), (0.0, 0.0))
        return time.monotonic() < until

    def _resume_submits(self, config: ConfigT) -> None:
        with self._lock:
            self._pauses.pop(config.key(), None)

    def _pause_submits(self, config: ConfigT, pause: tuple[float, float]) -> float:
        """No create is sent to the platform for a while (`pause`: the first pause and the
        longest; each in a row twice the last); the pause's length, in seconds."""
        with self._lock:
            _until, last = self._pauses.get(config.key(), (0.0, 0.0))
            delay = min(max(last * 2, pause[0]), pause[1])
            self._pauses[config.key()] = (time.monotonic() + delay, delay)
        return delay

    def _defer(
        self,
        job: Job,
        exc: Exception,
        secrets: list[str],
        *,
        config: ConfigT,
        pause: tuple[float, float],
        message: str,
        stopped: str,
    ) -> None:
        """The create never reached the platform (or it asked for fewer requests): nothing
        was created, so submits to it pause (`pause`: the first pause and the longest, in
        seconds) and the job goes back to Queued, sent again after. `message` (marked with
        gettext_noop, with %(error)s and %(seconds)d) says so on the job; `stopped` is the
        reason a job stopped meanwhile ends Stopped with (nothing runs for it)."""
        delay = self._pause_submits(config, pause)
        self.logger.warning(
            "%s create for %s not sent: %s; submits pause for %ds",
            self.platform,
            job.public_id,
            scrub(logged_error(exc), secrets),
            delay,
        )
        if self._move(
            job,
            JobStatus.QUEUED,
            "SubmitDeferred",
            scrub(
                recorded(message, error=recorded_error(exc), seconds=int(delay)),
                secrets,
            ),
            warning=True,
        ):
            return
        if job.status == JobStatus.STOPPING:
            # Stopped while the create was on its way, and it never arrived: nothing runs.
            self._move(job, JobStatus.STOPPED, "Stopped", stopped)

    def _created(self, job: Job, external_id: str, *, message: str) -> None:
        """The platform has the job as `external_id` (`message` says how it came to): Queued
        there and followed from now on; stopped while the create was in flight, what it
        made is stopped."""
        if self._move(job, JobStatus.QUEUED, "Submitted", message, external_id=external_id):
            # The worker's next sync follows the job if this first look fails.
            try:
                self.sync(job)
            except BackendError as exc:
                self.logger.info("first sync of %s failed: %s", job.public_id, logged_error(exc))
            return
        if job.status == JobStatus.STOPPING:
            self._adopt(job, external_id, message=message)
            try:
                self.stop(job)
            except BackendError as exc:
                self.logger.warning(
                    "%s stop of %s failed: %s", self.platform, job.public_id, logged_error(exc)
                )

    @staticmethod
    def _adopt(job: Job, external_id: str, *, message: str) -> None:
        """A job stopped while its create was in flight takes what the create made, to stop it."""
        Job.objects.filter(pk=job.pk).update(external_id=external_id)
        job.external_id = external_id
        job_event(job=job, reason="Submitted", message=message)

    def _fail(self, job: Job, message: str, secrets: list[str]) -> None:
        # In English, as the log's other lines (qa103: "集群未提供 MPIJob…" in an English line);
        # said before it is masked, which would leave only its stored wording to say.
        logged = scrub(in_english(message), secrets)
        message = scrub(message, secrets)
        self.logger.warning("%s submit of %s failed: %s", self.platform, job.public_id, logged)
        if job.status == JobStatus.QUEUED:
            self._move(job, JobStatus.SUBMITTING, "Submitting", "")
        if job.status == JobStatus.STOPPING:
            # Stopped while the create was in flight, and nothing was created.
            self._move(job, JobStatus.STOPPED, "Stopped", message)
            return
        self._move(job, JobStatus.SUBMIT_FAILED, "SubmitFailed", message, warning=True)

    def _look_due(self, job: Job) -> bool:
        """Whether the job may be looked for now: not before the wait after its last refused
        look has passed (refused_looks, look_wait)."""
        refused = refused_looks(job, self.unanswered_events)
        return not refused or timezone.now() >= refused[-1] + look_wait(len(refused))

    def _look_refused(
        self,
        job: Job,
        exc: Exception,
        secrets: list[str],
        *,
        message: str,
        given_up: str,
        stays: bool = False,
        **params: Any,
    ) -> None:
        """The platform refused the look for what the job's unanswered creates may have made:
        back to Queued, saying so and when the next look is (`message`, marked with
        gettext_noop, with %(error)s and %(time)s), looked for again then (look_wait);
        once the refusals have lasted LOOK_REFUSED_GIVE_UP, Submit failed (`given_up`, with
        %(error)s and `params`). A job stopped meanwhile is left to its sync, which looks.

        `stays`: the look of a sync, for a job that keeps its status while it waits (_look_due):
        Submitting after a create the worker died in (sent again only once looked for), or
        Stopping (what was made is to be stopped). The refusal is an event of its own, and
        the job given up is Submit failed, or Stopped when it was stopping, `given_up` saying
        where to look. Until left48 such a look was made again at every sync, never given up."""
        if job.status == JobStatus.STOPPING and not stays:
            return
        error = recorded_error(exc)
        refused = refused_looks(job, self.unanswered_events)
        now = timezone.now()
        if refused and now - refused[0] >= LOOK_REFUSED_GIVE_UP:
            said = recorded(given_up, error=error, **params)
            if job.status == JobStatus.STOPPING:
                self._move(job, JobStatus.STOPPED, "Stopped", scrub(said, secrets), warning=True)
            else:
                self._fail(job, said, secrets)
            return
        # Not before a create that may still be under way has had its time (create_wait).
        look_again = max(now + look_wait(len(refused) + 1), self.create_wait(job) or now)
        self.logger.warning(
            "%s refused the look for %s's create: %s; looked for again at %s",
            self.platform,
            job.public_id,
            scrub(logged_error(exc), secrets),
            look_again.isoformat(timespec="seconds"),
        )
        # To the second: the next look may be 30 s away, and "16:22" said it no better than
        # to the minute (qa80).
        said = scrub(recorded(message, error=error, time=console_time(look_again)), secrets)
        if stays:
            job_event(job=job, reason=LOOK_REFUSED, message=said, warning=True)
            if job.status == JobStatus.SUBMITTING:
                # Said on the job too: its page and the list said "Submitting" with no reason
                # while it waited. Its time in Submitting (updated_at) stays as it was.
                Job.objects.filter(pk=job.pk, status=job.status).update(
                    status_reason=said, status_reason_source=source_of(said)
                )
                job.status_reason, job.status_reason_source = said, source_of(said)
        else:
            self._move(job, JobStatus.QUEUED, LOOK_REFUSED, said, warning=True)

    def _reconcile_stuck(self, job: Job) -> None:
        """Left Submitting (the worker died mid-create): back to Queued, sent again."""
        if timezone.now() - job.updated_at < STUCK_SUBMITTING:
            return
        self._move(
            job,
            JobStatus.QUEUED,
            "SubmitRetry",
            recorded(gettext_noop("The submission was interrupted; it will be retried.")),
        )

    # -- a person's stop or delete -------------------------------------------------------

    def create_unsettled(self, job: Job) -> bool:
        """Also a job submitted again after a submission given up on an hour of refused looks
        (given_up_submission_start), until this submission's own create or look settles it:
        what that submission sent may run on the platform. Until left49 such a job stopped
        while Queued, before Submit again's look, was Stopped at once, unlooked-for, and the
        platform's job ran on untracked. A look that showed none (then a create that never
        arrived, Queued again) leaves it so: one look more, never a job left running.

        Decided: computed here, where a Stop or Delete asks (jobs.actions, the backends' stop,
        the Delete question and Delete selected's list of what it does to each chosen job), not
        prefetched: no list page asks it, so their query counts stay as they were, and the
        given-up submission's query runs only for a job not on the platform with no unanswered
        create in this submission.

        Not for the job Submit failed itself (its reason says where to look, and Submit again
        looks). For one Submit again held for review (Pending review) too: its Stop withdraws
        it from review and makes it Stopping (_move), the one way out of Pending review but
        Stopped; until left51 it was Stopped at once, unlooked-for."""
        if job.external_id:
            return False
        if unanswered_creates(job, self.unanswered_events).exists():
            return True
        return job.status in SUBMITTED_AGAIN and given_up_submission_start(job) is not None

    def stop_look_at(self, job: Job) -> datetime | None:
        if job.external_id:
            return None
        wait = self.create_wait(job)
        return wait if wait is not None and wait > timezone.now() else None

    def _stop_looking(self, job: Job) -> str:
        """The reason of a job stopped while a create of it got no clear answer."""
        at = self.stop_look_at(job)
        return recorded(STOP_LOOKING_AT, time=console_time(at)) if at else recorded(STOP_LOOKING)

    def stop_asks_platform(self, job: Job) -> bool:
        return bool(job.external_id)  # before the platform has it, its stop is the database's

    def stop_unsent(self, job: Job, *, message: str = "") -> None:
        """Stopping, the stop not sent: the worker's sync sends it (a STOP_RESEND after), as
        it sends again a stop the platform gave no clear answer to, until the platform
        reports the job ended."""
        if not self.stop_asks_platform(job):
            self.stop(job, message=message)
            return
        if job.status in FINAL_STATUSES or job.status == JobStatus.STOPPING:
            return
        self._keep_stop_reason(job, message)
        self._stopping(job, recorded(STOP_NOT_SENT), warning=True)

    def delete_asks_platform(self, job: Job) -> bool:
        return True  # (Kubernetes removes a job's Secret even before the job was made)

    # -- following a job ---------------------------------------------------------------

    def sync(self, job: Job) -> None:
        if job.status in FINAL_STATUSES:
            return
        if not job.external_id:
            if job.status == JobStatus.SUBMITTING:
                self._reconcile_stuck(job)
            elif job.status == JobStatus.STOPPING:
                self._finish_stop_in_flight(job)
            return
        try:
            self._sync_remote(job)
        finally:
            # Also when the sync raised after saving the status (a read that got no answer
            # after it, or one given up on before it: _unanswered_again).
            if job.status in FINAL_STATUSES:
                self._stops_sent.pop(job.pk, None)
                self._unanswered_syncs.pop(job.public_id, None)
                self._close_replicas(job)

    def _unanswered_again(self, job: Job) -> bool:
        """Counts a sync of `job` whose pods or events read got no answer, and says whether
        the status its job read gave is saved without them all the same: from the
        UNANSWERED_SYNCS_BEFORE_STATUS-th in a row. The sync still raises afterwards, so the
        worker's round leaves the platform's other jobs for the next one.

        Decided (review39): the first such sync leaves the job as it was, so a platform that
        hung for a moment gives the pods' exit codes and the events that say why the job
        ended with its status, in the next round. But a read that never answers again (a
        pods list the API server cannot finish within its timeout, an events service down)
        left the job Running for ever, its cards counted and its end never said, where
        before session 33 it ended without them; it ends now, one sync later."""
        with self._lock:
            count = self._unanswered_syncs.get(job.public_id, 0) + 1
            self._unanswered_syncs[job.public_id] = count
        return count >= UNANSWERED_SYNCS_BEFORE_STATUS

    def _answered(self, job: Job) -> None:
        """The job's pods and events reads answered: unanswered syncs are counted afresh."""
        with self._lock:
            self._unanswered_syncs.pop(job.public_id, None)

    @staticmethod
    def _move(
        job: Job,
        to: str,
        reason: str,
        message: str,
        *,
        warning: bool = False,
        event: bool = True,
        **fields: Any,
    ) -> bool:
        if to == job.status or to not in TRANSITIONS[job.status]:
            return False
        if job.status == JobStatus.PENDING_REVIEW:
            # A backend moves a job out of review only to stop it (Stopping, to look for what
            # a given-up submission made: create_unsettled): withdrawn, as jobs.actions.job_stop
            # withdraws the one it Stops, so off the reviewers' list (left51).
            fields.setdefault("review_state", ReviewState.WITHDRAWN)
        stop_reason = RemoteBackend._kept_stop_reason(job) if to == JobStatus.STOPPED else ""
        if stop_reason and not warning and str(message) != str(stop_reason):
            # Ended by a stop that gave its reason (a staff member's): the job ends with it,
            # as a local job does, and the platform's words ("AIHC reports
            # ManualTermination.") are its Stopped event's (fix108: they replaced it). Not a
            # warning's: one saying the job may still run on the platform stays the reason.
            with transaction.atomic():
                moved = job_transition(
                    job=job, to=to, reason=reason, message=stop_reason, event=False, **fields
                )
                if moved and event:
                    job_event(job=job, reason=reason, message=message or stop_reason)
            return moved
        return job_transition(
            job=job, to=to, reason=reason, message=message, warning=warning, event=event, **fields
        )

    @staticmethod
    def _keep_stop_reason(job: Job, message: str) -> None:
        """Keeps `message`, the reason a stop of the job gives (Backend.stop's), for the move to
        Stopped that may come later, in the worker (Job.stop_reason). Before the stop is sent:
        the worker may find the job ended by it before this process saves Stopping. Nothing
        without a message: a stop without one leaves a reason kept before it (the worker's
        stop of what a create made, after a staff member's Stop)."""
        if message:
            RemoteBackend._set_stop_reason(job, message)

    @staticmethod
    def _forget_stop_reason(job: Job, message: str) -> None:
        """The platform refused the stop that gave `message`: the job runs on, and ends with
        its platform's words should it end otherwise (stopped on the platform itself)."""
        if message:
            RemoteBackend._set_stop_reason(job, "")

    @staticmethod
    def _set_stop_reason(job: Job, message: str) -> None:
        fields = {"stop_reason": str(message), "stop_reason_source": source_of(message)}
        Job.objects.filter(pk=job.pk).update(**fields)
        for name, value in fields.items():
            setattr(job, name, value)

    @staticmethod
    def _kept_stop_reason(job: Job) -> str:
        """The reason a stop of the job gave (_keep_stop_reason), as the database has it now:
        the web's stop may have kept it after the worker read the job."""
        row = Job.objects.filter(pk=job.pk).values_list("stop_reason", "stop_reason_source").first()
        return restored(row[0], row[1]) if row and row[0] else ""

    def _stopping(self, job: Job, message: str, *, warning: bool = False) -> None:
        """Stopping, from the status the job has now: the worker may have moved it on while
        the stop was out (Queued to Running), and the move from the status the page loaded
        then lost. On Kubernetes that left the job Running with its resource deleted, to be
        failed as lost; on AIHC, Running with the stop sent, and a stop AIHC did not answer
        was never sent again. Once more from the status the database gave; a job that ended
        (or went Stopping) meanwhile stays so."""
        for _attempt in range(2):
            if self._move(job, JobStatus.STOPPING, "Stopping", message, warning=warning):
                return

    def _walk(
        self,
        job: Job,
        target: str,
        message: str,
        *,
        reason: str = "",
        started: datetime | None = None,
        resumed: datetime | None = None,
    ) -> None:
        """Moves the job to `target` through the state machine's shortest allowed path.

        Each step's event reason is the console status it reaches ("Running", "Stopped"),
        as for local jobs, so it reads in the page's language; the platform's own status
        name (AIHC's "ManualTermination") is in the final step's message.

        `started`: when the platform says the job began running. A job not started yet is
        started then, and one it reports ended goes through Running first: it ran between two
        syncs (seen Queued, then ended), and without a start its page showed no start time,
        duration or card-hours (qa80).

        `resumed`: when the platform says a job waiting to run again (back in Queued after its
        first start) ran again: its wait ends then, not at this sync (job_transition)."""
        fields = {"started_at": started} if started is not None and job.started_at is None else {}
        if (
            fields
            and target in FINAL_STATUSES
            and JobStatus.RUNNING in TRANSITIONS[job.status]
            and not self._move(job, JobStatus.RUNNING, "Running", "", **fields)
        ):
            return
        avoid = {
            JobStatus.SUBMIT_FAILED,
            JobStatus.PENDING_REVIEW,
            JobStatus.REJECTED,
            JobStatus.SUBMITTING,
        }
        paths = deque([[job.status]])
        seen = {job.status}
        route: list[str] | None = None
        while paths:
            path = paths.popleft()
            if path[-1] == target:
                route = path
                break
            for nxt in sorted(TRANSITIONS[path[-1]]):
                if nxt not in seen and (nxt == target or nxt not in avoid):
                    seen.add(nxt)
                    paths.append([*path, nxt])
        if not route:
            return
        for number, step in enumerate(route[1:]):
            final = step == target
            if not self._move(
                job,
                step,
                (reason if final and reason else "") or step.title().replace("_", ""),
                message if final else "",
                warning=final and target in (JobStatus.FAILED, JobStatus.TIMED_OUT),
                **(fields if step == JobStatus.RUNNING else {}),
                # The first step leaves Queued: the one that ends a wait to run again.
                **({"resumed_at": resumed} if resumed is not None and number == 0 else {}),
            ):
                return

    @staticmethod
    def _update_replica(
        job: Job,
        role: str,
        index: int,
        *,
        status: str,
        started: datetime,
        now: datetime,
        **fields: Any,
    ) -> None:
        """Brings one instance's row up to what the platform reports at `now` (`status`, and
        `fields` such as restarts and node): `started` the first time it is seen running,
        `now` as its end each time it ends (a pod that failed, ran again and failed again:
        a job's stop tells by it the instances it ended)."""
        replica, _created = JobReplica.objects.get_or_create(job=job, role=role, index=index)
        changed: dict[str, Any] = {"status": status, **fields}
        if status == ReplicaStatus.RUNNING and replica.started_at is None:
            changed["started_at"] = started
        if status in (ReplicaStatus.SUCCEEDED, ReplicaStatus.FAILED) and (
            replica.finished_at is None or replica.status != status
        ):
            changed["finished_at"] = now
        if any(getattr(replica, k) != v for k, v in changed.items()):
            JobReplica.objects.filter(pk=replica.pk).update(**changed)

    def _close_replicas(self, job: Job) -> None:
        """A finished job is not followed any more: instances still shown pending or running
        ended with it (the platform removes its running pods when the job ends)."""
        JobReplica.objects.filter(
            job=job, status__in=[ReplicaStatus.PENDING, ReplicaStatus.RUNNING]
        ).update(status=ReplicaStatus.STOPPED, finished_at=timezone.now())

    @staticmethod
    def _first_sent(job: Job) -> datetime:
        """When the job was first sent: none of the platform's events shows before it (they
        may be stamped in whole seconds, before the console's own "Submitting")."""
        return (
            job.events.filter(reason="Submitting").order_by("created_at").first() or job
        ).created_at

    @staticmethod
    def _save_events(new: list[tuple[JobEvent, datetime]]) -> None:
        """Copies the platform's events, each at its own time (created_at is stamped on
        insert: the event's time is set just after, in the same transaction), in the order
        of their ids (jobs.locks.job_events_locked: the events APIs' markers). One job's."""
        if not new:
            return
        with transaction.atomic():
            job_events_locked(job_id=new[0][0].job_id)
            created = JobEvent.objects.bulk_create([row for row, _when in new])
            for row, (_row, when) in zip(created, new, strict=True):
                row.created_at = when
            JobEvent.objects.bulk_update(created, ["created_at"])

    # -- actions -------------------------------------------------------------------

    def _stop_due(self, job: Job, *, since: datetime | None = None) -> bool:
        """Whether a stop the worker decides (sent again to a job that is stopping, or sent to
        one past its time limit) may go now: at most once per STOP_RESEND after `since` (the
        stop the job's owner asked for) and after the last one this process sent. A stop the
        platform gave no clear answer to is retried at that pace, not at every worker sync.
        True records now as the time of the last one."""
        now = timezone.now()
        last = max((t for t in (since, self._stops_sent.get(job.pk)) if t), default=None)
        if last is not None and now - last < STOP_RESEND:
            return False
        self._stops_sent[job.pk] = now
        return True

    @staticmethod
    def _stop_refused(job: Job, exc: Exception, secrets: list[str], *, message: str) -> None:
        """The platform said no to a stop: on the page for good, not only in the flash the
        person who pressed Stop saw (the job runs on, and its events say why). `message`
        (marked with gettext_noop) holds %(error)s."""
        job_event(
            job=job,
            reason="StopFailed",
            message=scrub(recorded(message, error=recorded_error(exc)), secrets),
            warning=True,
        )
