from __future__ import annotations

import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import quote

import httpx
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from jobs.runtime_env import ReplicaRef, replica_environment, shown_group_task

if TYPE_CHECKING:
    from jobs.models import Job
    from jobs.spec import JobSpec


# BackendError codes of a platform that did not answer at all (the AIHC and Kubernetes
# clients' transport failures): asking it about another job now would wait as long.
# CONNECTION_CLOSED: it closed the connection without answering (connection_closed).
CONNECTION_CLOSED = "ConnectionClosed"
UNANSWERED_CODES = frozenset(
    {"Unreachable", "Timeout", "RequestTimeout", CONNECTION_CLOSED, "CertificateNotTrusted"}
)
# The BackendError code of a whole-log download whose platform was still sending the log when
# LOG_DOWNLOAD_TOTAL_SECONDS were up (DownloadTooLong): it answered, so trying again in a few
# minutes does not help a log this large.
DOWNLOAD_TOO_LONG = "DownloadTooLong"


# The stop a Delete makes first of a job not started yet (jobs.actions.job_delete), as
# recorded: a backend that says more of that stop says it as a Delete's (qa112).
STOPPED_BEFORE_DELETION = gettext_noop("Stopped before deletion.")


class BackendError(Exception):
    """A backend could not do what was asked; `message` is safe to show the user.
    `try_again`: the platform answered but did not say no (its own failure, throttling), and
    the message says to ask again in a moment, as for no answer at all (got_no_answer)."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        request_id: str = "",
        try_again: bool = False,
        logged: str = "",
    ):
        super().__init__(message)
        self.message = message
        self.code = code
        self.request_id = request_id
        self.try_again = try_again
        # The same in English for the server log (jobs.backends.remote.logged_error), when
        # `message` was rendered in a language already ("": it is `message`, or renders so).
        self.logged = logged


class NoLog(BackendError):
    """The replica has no log on its platform to give: not written yet (its pod not made yet,
    or its container waiting to start, as when the training operator re-creates a pod under
    the same name) or, the job stopping or ended, gone with its pod. A download says so on a 404 page, as
    for a local replica's log not written yet (until left37: an empty file, 200)."""

    def __init__(self, *, gone: bool = False):
        self.gone = gone
        super().__init__(
            _(
                "This replica's pod is no longer on its platform, and its log went with it: "
                "a container's log is kept only while its pod is there."
            )
            if gone
            else no_log_yet()
        )

    @classmethod
    def pod_missing(cls, job: Job) -> NoLog:
        """The replica's pod is not there: gone with its log once the job is stopping or has
        ended (a stop deletes its pods, and none is made again), else not made yet (review45:
        a download just after Stop said the replica was waiting to start, its output to show
        once it began)."""
        from jobs.models import JobStatus

        return cls(gone=job.is_final or job.status == JobStatus.STOPPING)


def no_log_yet() -> str:
    """Why a replica waiting to start (or starting) has no log to download, whatever runs it."""
    return _(
        "This replica has no log yet: it has not started writing one (it is waiting "
        "to start, or starting). Its output shows on the job's page once it begins."
    )


def got_no_answer(exc: BackendError) -> bool:
    """Whether a call got no answer at all (UNANSWERED_CODES), after its retries: a sync that
    meets one in any of its reads (the job, its pods, events or usage) ends there, raising
    it, so the worker's round leaves the platform's other jobs for the next round. An answer
    that refuses (403, 404, a body that does not read) is the platform answering: a sync
    swallows it in its secondary reads and goes on."""
    return exc.code in UNANSWERED_CODES


def connection_closed(exc: httpx.TransportError) -> bool:
    """Whether the platform closed (or reset) the connection without sending a whole answer:
    said so, not as an answer that did not come in time (qa80). Either way the call got no
    answer, so it may or may not have been carried out."""
    if isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.CloseError):
        return True
    # httpcore's "Server disconnected without sending a response.", h11's "peer closed
    # connection without sending complete message body"; any other is an answer garbled.
    text = str(exc)
    return isinstance(exc, httpx.RemoteProtocolError) and (
        "disconnected" in text or "closed connection" in text
    )


def download_deadline() -> float:
    """The monotonic time by which a whole-log download started now must have its log
    (LOG_DOWNLOAD_TOTAL_SECONDS): it holds one of the web server's few threads (WEB_THREADS)
    all that time, so a platform that hangs or trickles cannot make a few presses of
    Download hold up the console for everyone."""
    from django.conf import settings

    return time.monotonic() + settings.LOG_DOWNLOAD_TOTAL_SECONDS


class DownloadTooLong(httpx.ReadTimeout):
    """The platform was still sending a whole-log download's answer when its deadline passed,
    `received` bytes of it in: a log too large (or a link too slow) for
    LOG_DOWNLOAD_TOTAL_SECONDS, not a platform that did not answer."""

    def __init__(self, *, received: int, request: httpx.Request):
        super().__init__("the download took too long", request=request)
        self.received = received


# What a platform (AIHC, a Kubernetes API server) answers that an idempotent call is tried
# again on, as a connection that failed: it may pass a moment later.
RETRY_STATUSES = frozenset({500, 503})


class PlatformRetries:
    """How a platform's client tries one call: an idempotent one again (up to `retries`
    times) when it could not be sent or was answered RETRY_STATUSES, backoff * 2**attempt
    seconds after each failed try, and no try that would start past the call's `deadline`.
    The AIHC and Kubernetes clients both retry so (one place: the two cannot drift apart)."""

    retries: int
    backoff: float
    deadline: float | None
    # A page's Stop or Delete: each call, its tries and whole answer included, given up this
    # many seconds after it began (a platform sending its answer a few bytes at a time held
    # it past every read timeout: review 46). None: only `deadline` bounds it.
    call_seconds: float | None
    sleep: Callable[[float], None]
    # The worker's log line for a try that failed and is made again: method, path, why, delay.
    retry_logger: logging.Logger
    retry_log: str

    def _answer(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        send: Callable[[float | None], httpx.Response],
    ) -> httpx.Response:
        """The answer to the call `send` makes, given the call's deadline (a new request each
        try: a new signature, a new time left); a transport failure on the last try raised
        as the client's error (_transport_error)."""
        attempts = 1 + (self.retries if idempotent else 0)
        deadline = self.deadline
        if self.call_seconds is not None:
            deadline = time.monotonic() + self.call_seconds
        for attempt in range(attempts):
            try:
                response = send(deadline)
            except httpx.TransportError as exc:
                if self._another_try(attempt, attempts, deadline):
                    self._wait(attempt, method, path, type(exc).__name__)
                    continue
                raise self._transport_error(exc) from None
            if response.status_code in RETRY_STATUSES and self._another_try(
                attempt, attempts, deadline
            ):
                self._wait(attempt, method, path, f"HTTP {response.status_code}")
                continue
            return response
        raise AssertionError("unreachable")

    @staticmethod
    def _transport_error(exc: httpx.TransportError) -> BackendError:
        raise NotImplementedError

    def _another_try(self, attempt: int, attempts: int, deadline: float | None) -> bool:
        """Whether a failed try is followed by another: tries are left, and the next would
        start before the call's deadline."""
        return attempt < attempts - 1 and (
            deadline is None or time.monotonic() + self.backoff * 2**attempt < deadline
        )

    def _wait(self, attempt: int, method: str, path: str, why: str) -> None:
        delay = self.backoff * (2**attempt)
        self.retry_logger.warning(self.retry_log, method, path, why, delay)
        self.sleep(delay)


def send_by(
    http: httpx.Client,
    request: httpx.Request,
    *,
    deadline: float | None,
    into: BinaryIO | None = None,
    page: bool = False,
) -> httpx.Response:
    """Sends `request`; with a `deadline` (monotonic), its answer is read in chunks and given
    up (httpx.ReadTimeout, a transport error as any other read's) once the deadline passes:
    the client's read timeout bounds each wait for the next chunk, not a server that sends
    a few bytes now and then. Each wait is also cut to the time left.

    An answer still coming when the deadline passes is a download too long for its time
    (DownloadTooLong), or, `page`: a page's Stop or Delete, an answer that did not come in
    time (httpx.ReadTimeout, what a platform that does not answer at all gets: the same
    outcome for the person waiting).

    `into`: a successful answer's body (decoded) is written there, and the response returned
    has none: a whole log held in memory, then copied as text and as lines, took several
    times its size in one web thread (review 42), so a 1 GB log could get the console killed.
    An error's body is read as usual. `into` is emptied first, whatever the answer: a try
    again answered with an error (a container now waiting to start, which has no lines) left
    the part a try cut off mid-way had written there, given as the whole log (review 44)."""
    if deadline is None and into is None:
        return http.send(request)
    if into is not None:
        into.seek(0)
        into.truncate()
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise httpx.ReadTimeout("no time left for the request", request=request)
        timeout = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            kind: min(seconds, left) if seconds is not None else left
            for kind, seconds in {
                "connect": timeout.get("connect"),
                "read": timeout.get("read"),
                "write": timeout.get("write"),
                "pool": timeout.get("pool"),
            }.items()
        }
    response = http.send(request, stream=True)
    try:
        if into is not None and response.is_success:
            received = 0
            for chunk in response.iter_bytes():
                into.write(chunk)
                received += len(chunk)
                if deadline is not None and time.monotonic() > deadline:
                    raise _past(received=received, request=request, page=page)
            # Its body is in `into`, decoded: the headers that described it no longer do.
            headers = [
                (name, value)
                for name, value in response.headers.multi_items()
                if name.lower() not in ("content-encoding", "content-length")
            ]
            return httpx.Response(response.status_code, headers=headers, request=request)
        body = bytearray()
        for chunk in response.iter_raw():
            body += chunk
            if deadline is not None and time.monotonic() > deadline:
                raise _past(received=len(body), request=request, page=page)
    finally:
        response.close()
    # The body as the server sent it (still compressed, if it was): the new response decodes
    # it once, as httpx does a read.
    return httpx.Response(
        response.status_code, headers=response.headers, content=bytes(body), request=request
    )


def _past(*, received: int, request: httpx.Request, page: bool) -> httpx.ReadTimeout:
    """What a deadline passed mid-answer raises (send_by)."""
    if page:
        return httpx.ReadTimeout("no whole answer in time", request=request)
    return DownloadTooLong(received=received, request=request)


@dataclass
class AcceleratorStock:
    type: str  # resource name, e.g. baidu.com/a800_80g_cgpu
    total: int
    idle: int


@dataclass
class Volume:
    type: str  # hostpath, pfs, nas, ...
    name: str
    label: str = ""
    read_only: bool = False  # read-only for everyone (a local volume's ":ro")


@dataclass
class Pool:
    id: str
    name: str
    backend: str
    queues: list[str] = field(default_factory=lambda: ["default"])
    accelerators: list[AcceleratorStock] = field(default_factory=list)
    volumes: list[Volume] = field(default_factory=list)
    storage_types: list[str] = field(default_factory=list)
    # When the figures were read; remote pools may show a cached value and its age.
    as_of: datetime | None = None
    stale: bool = False
    error: str = ""
    # What the figures leave out, shown with them (a namespace's quotas the console may not
    # read); unlike `error`, the figures are current.
    note: str = ""
    # (nodes with the pool's cards, those with any of them in use), as far as the backend
    # knows its nodes (Kubernetes'); (0, 0) when it does not.
    nodes: tuple[int, int] = (0, 0)
    # A Kubernetes pool's KUBERNETES_TRAINING_API ("trainer": its PyTorch jobs are Kubeflow
    # Trainer TrainJobs, whose nodes get the torch runtime's PET_* variables).
    training_api: str = ""
    # Whether its jobs may have privileged containers (jobSpec.privileged): the wizard offers
    # the switch only then; the backend's check_spec is what refuses.
    privileged: bool = False
    # The local pool's: what the scheduler's next pass would do, read once, when first asked
    # (its idle figures and note come from it). A check of a job asking for cards reads the
    # same pass, not a second one that may differ (jobs.wizard.pool_refusals).
    next_pass: Callable[[], Any] | None = None

    def idle(self, accelerator_type: str) -> int:
        return next((a.idle for a in self.accelerators if a.type == accelerator_type), 0)

    def volumes_of(self, storage_type: str) -> list[Volume]:
        return [v for v in self.volumes if v.type == storage_type]

    def volume_for(self, storage_type: str, name: str) -> str:
        """The volume a mount row of `storage_type` holds, given the `name` it held: that
        name when it is one of the type's volumes, else the type's only volume, else none."""
        offered = [v.name for v in self.volumes_of(storage_type)]
        if name in offered:
            return name
        return offered[0] if len(offered) == 1 else ""


# Where the v1 CreateJob request goes when a pool's backend names no endpoint of its own.
DEFAULT_AIHC_ENDPOINT = "https://aihc.bj.baidubce.com"


def request_json(body: Any) -> str:
    """A request body's JSON text: what the AIHC client sends and what the review shows,
    byte for byte (indented so the review can be read; AIHC reads any JSON layout)."""
    return json.dumps(body, ensure_ascii=False, indent=2)


@dataclass(frozen=True)
class RequestPreview:
    """The create request a backend sends for a spec, secrets masked (the review step)."""

    method: str
    path: str  # with its query string, relative to `endpoint`
    headers: dict[str, str]  # besides Host, x-bce-date and Authorization (set when signing)
    body: dict[str, Any]
    endpoint: str = DEFAULT_AIHC_ENDPOINT
    # How the request is authenticated: "bce-auth-v1" (AIHC's signature) or "bearer" (a
    # Kubernetes API server's token).
    auth: str = "bce-auth-v1"
    # Requests sent first, in order (a Kubernetes job's Secret before its custom resource).
    before: tuple[RequestPreview, ...] = ()

    @property
    def body_text(self) -> str:
        """The body as sent (the review shows the requests sent first by it)."""
        return request_json(self.body)

    @property
    def signed_headers(self) -> str:
        """The signedHeaders list of the bce-auth-v1 signature the AIHC client computes."""
        return ";".join(sorted({"host", "x-bce-date", *(name.lower() for name in self.headers)}))


class Backend(ABC):
    """What the console needs from a place that runs jobs.

    Who calls what (jobs.worker, jobs.actions):
    - submit(job): the worker calls it for each Queued job of a remote backend that has no
      external_id yet; the backend makes its own transitions (Queued -> Submitting ->
      Queued/Running, or Submit failed). The local backend's submit does nothing: its
      scheduler starts queued jobs when they fit.
    - sync(job): the worker calls it periodically for active remote jobs (and Queued ones
      with an external_id); it brings status, replicas (JobReplica rows) and events
      (JobEvent rows) into the database, which is where pages read them from.
    - stop(job) / delete(job): the owner's actions. delete removes the backend's side (the
      cloud job, local processes and logs); the caller then deletes the row.
    - logs(job, replica, tail=N | since=t): lines of one replica ("<role>-<index>").
    """

    name: str

    @abstractmethod
    def pools(self) -> list[Pool]:
        """Resource pools with queues, accelerator stock and storage volumes."""

    def pool(self, pool_id: str) -> Pool | None:
        return next((p for p in self.pools() if p.id == pool_id), None)

    def pool_names(self) -> dict[str, str]:
        """The names of the pools offered now, by id, for lists that show many jobs and are
        refreshed often (the job list, the admin's): a backend that can tell them without a
        query, a remote call or a wait on its figures says so by overriding this."""
        return {p.id: p.name for p in self.pools()}

    def pool_names_read(self) -> bool:
        """Whether `pool_names` says which pools are offered: False while this server process
        has not read a remote list yet (AIHC before its first inventory read), when a pool
        missing from it may still be offered (jobs.pools.pool_labels)."""
        return True

    def settings_problem(self) -> str | None:
        """Why this console cannot reach the backend's platform at all, its settings unusable
        (no credentials, no API server), in the reader's language; None when they can be used
        (the default). A remote job of such a backend is followed by nothing
        (jobs.backends.configured)."""
        return None

    def inventory_problem(self) -> str | None:
        """Why its pools cannot be read now, for staff's notice (jobs.backends
        .inventory_problems), in the reader's language; None when they can (the default)."""
        return None

    def pools_unread(self) -> str | None:
        """Why the pools this server process offers of this backend now may lack some it has
        (its list could not be read, or has not been yet), for anyone, in their language;
        None while the list is current (the default). A pool the console knows but does not
        find is then said to be unreachable, not unknown (jobs.wizard.unreachable_pool)."""
        return None

    def check_spec(self, spec: JobSpec) -> dict[str, list[str]]:
        """Refusals particular to this backend (field path -> messages)."""
        return {}

    def request_preview(
        self, spec: JobSpec, *, job_id: str = "", training_api: str = "", owner: str = ""
    ) -> RequestPreview:
        """The request that creates this job (`job_id` once it exists). The canonical spec is
        the AIHC CreateJob v1 body, so that is what a backend without an API of its own
        (local) shows. `training_api`: a Kubernetes job's Job.training_api, the Kubeflow API
        it was created under ("": not created yet, the pool's setting); other backends have
        one API and ignore it. `owner`: the job's owner's user name, which Kubernetes objects
        carry (an annotation); ignored elsewhere. Its endpoint is this console's API (SITE_URL,
        as the API keys page gives it), which takes the body: AIHC's host has no such pool
        (qa109: the local pool's curl went to aihc.bj.baidubce.com)."""
        from django.conf import settings

        return RequestPreview(
            method="POST",
            path=f"/api/v1/aijobs?resourcePoolId={quote(spec.resource_pool_id, safe='')}",
            headers={"Content-Type": "application/json"},
            body=spec.to_v1_body(masked=True),
            endpoint=settings.SITE_URL,
        )

    def environment_preview(
        self,
        spec: JobSpec,
        ref: ReplicaRef,
        *,
        job_id: str,
        group_task: tuple[int, int] | None = None,
        training_api: str = "",
    ) -> dict[str, str]:
        """What one replica will find in its environment (secrets masked), for the review step
        and the admin. A cluster's addresses are the platform's: `<name>-<role>-<index>`.
        `group_task` is a queue task's index from 0 and its group's total (AIHC_GROUP_TASK_*);
        before the group is submitted the preview shows the range. `training_api`: as for
        request_preview."""
        return replica_environment(
            spec, ref, job_id=job_id, group_task=shown_group_task(spec, group_task), masked=True
        )

    @abstractmethod
    def submit(self, job: Job) -> None: ...

    @abstractmethod
    def stop(self, job: Job, *, message: str = "") -> None:
        """Stops the job. `message` (recorded): the status reason it ends with (a staff Stop's
        reason, qa98), also a remote job that ends Stopped later, when its platform reports
        it ended (RemoteBackend keeps it: Job.stop_reason, fix108)."""

    def create_unsettled(self, job: Job) -> bool:
        """Whether the platform may have made the job though the console has no id for it:
        a create of it got no clear answer, and no look since has found it or shown none (or
        the submission before this one was given up so). Such a job is stopped through
        stop(), never as one nothing runs for."""
        return False

    def stop_look_at(self, job: Job) -> datetime | None:
        """When a stop of the job, which the platform may still make from a create that got
        no clear answer, looks for it there, if that is still to come (jobs.actions.
        stop_look_time); None: at the worker's next pass."""
        return None

    def submit_looked_for(self, job: Job) -> bool:
        """Whether the job, left Submitting by a worker that died sending it, waits on a look
        for what that create made which the platform refused: nothing is being sent."""
        return False

    def stop_asks_platform(self, job: Job) -> bool:
        """Whether stop(job) waits on the job's platform to answer (a page waits with it)."""
        return False

    def stop_unsent(self, job: Job, *, message: str = "") -> None:
        """A person's stop there was no time left to send (a Stop selected past
        BULK_ACTION_SECONDS): the job marked so, the worker sending it. A backend whose stop
        waits on no platform stops it now."""
        self.stop(job, message=message)

    def delete_asks_platform(self, job: Job) -> bool:
        """Whether delete(job) waits on the job's platform to answer."""
        return False

    @abstractmethod
    def delete(self, job: Job) -> str | None:
        """Removes what the job holds; what it left for the worker to remove (a Kubernetes
        Secret, DeletedJob.secret_left), or None/"" when nothing."""

    def delete_here(self, job: Job) -> str | None:
        """What delete(job) removes of the console's own (files it kept of the job), nothing
        asked of the platform: the Delete of a job whose platform is not configured on this
        console (jobs.actions.job_delete). Returns what delete(job) does: what is left for
        the worker to remove there once it can."""
        return None  # a backend that keeps no files of its jobs (and local: always reachable)

    @abstractmethod
    def sync(self, job: Job) -> None:
        """Brings the job's status, replicas and events up to date."""

    @abstractmethod
    def logs(
        self,
        job: Job,
        replica: str,
        *,
        tail: int | None = None,
        since: datetime | None = None,
        say_gone: bool = False,
    ) -> list[str]:
        """A replica's last `tail` lines (all without), from `since` on when given. A replica
        with no log to give has no lines, except with `say_gone` (the job page's log panel, the
        admin's log view): a pod gone with its log, the job stopping or ended, raises its
        NoLog, as its download says (left39: the panel said "No output yet."). The API's log
        read keeps its empty answer."""

    def log_file(self, job: Job, replica: str) -> Path | None:
        """A local file holding the replica's whole log, if the backend keeps one (for
        download); None means the download is built from download_lines()."""
        return None

    def download_lines(self, job: Job, replica: str) -> Iterable[str]:
        """A replica's whole log for a download, a line at a time, each with its end (a line
        longer than jobs.logs.DOWNLOAD_LINE_CHARS in parts, all but the last without one),
        read from the platform now: a BackendError is raised here, before the first line, as
        logs() raises it. This default is logs(), held whole, each line ended by a newline; a
        backend whose platform sends the log as plain text, or a page at a time, gives it
        from a temporary file instead, so a download's memory does not grow with the log,
        nor with its longest line (KubernetesBackend, AihcBackend)."""
        return [line + "\n" for line in self.logs(job, replica)]

    def check_log(self, job: Job, replica: str) -> None:
        """What a download's HEAD asks (a link checker's, a download manager's): raises as
        download_lines() would before its first line (NoLog; BackendError when the platform
        does not answer), reading none of the log. This default: a log is there."""
        return None
