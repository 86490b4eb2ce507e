"""The Baidu AIHC OpenAPI backend: AIHC resource pools, jobs submitted through CreateJob.

Inventory (pools, queues, idle cards) is cached per process for AIHC_CACHE_SECONDS. When the
cache is older, the last value is served at once (marked stale, with its age) while one
background thread refreshes it, so a slow or failing AIHC never makes the wizard slow or
fail, and AIHC is asked at most once per TTL however often the wizard polls.

Submission (`submit`) moves the job Queued -> Submitting -> Queued (AIHC accepted it; the
next `sync` follows it) or -> Submit failed with AIHC's own message. Creating is never
retried blindly: when AIHC does not answer in time, the pool's jobs of that name are listed
first and an unclaimed one created since the attempt began is adopted (queue groups submit
N jobs of one name, so jobs other console rows already own are skipped).

Usage: while a job runs, each sync also reads what its running pods use from AIHC's job
metrics API (v1 `GET /api/v1/aijobs/{id}/metrics`, v2 DescribeJobMetrics), at most once per
AIHC_METRICS_SECONDS per job: one call each for GpuUsage, CpuUsage and MemoryUsage, each
unretried, covering the last USAGE_WINDOW (or back to the last read, at most USAGE_CATCH_UP). AIHC's DescribeJobMetrics page
(https://cloud.baidu.com/doc/AIHC/s/4mayvot8u, updated 2025-05-30) describes all three as
utilisations (GPU 使用率, CPU 使用率, Memory 使用率), not amounts (cores, bytes), without
saying whether as 0-100 or 0-1. Decided, and UNCERTAIN until checked against a real account:
they are read as percent (0-100), as AIHC's own console shows them; a set whose every point
is <= 1.0 is not reinterpreted as fractions (no guessing), and nothing is clamped. A point
newer than its replica's last sample, with a CPU and a memory value at that time (GPU when
AIHC gives one: a pod without GPUs has none), is written as a sample (`gpu`, `cpu`, `mem`:
percent) into a file per replica under the console's var dir (`usage_file`, UtilisationLog),
which the job page and the API's job metrics read (jobs.monitoring). No /tmp figure. A read
AIHC refuses or does not answer (403, 404, 5xx, a timeout) is logged once per job and kind of
failure, and written, scrubbed of the job's secrets, to the job's `unavailable_file`, which
the page shows; the job's sync goes on after a refusal, and ends after a read with no answer
(raised, the status saved by then: `_sync_remote`). The next read that succeeds removes it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone, translation
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from jobs import spec as spec_module
from jobs.aihc.client import (
    AihcClient,
    AihcError,
    AihcTimeout,
    AihcUnavailable,
    Credentials,
)
from jobs.aihc.endpoints import API_VERSIONS, V1, V2, endpoint_for
from jobs.aihc.mapping import v2_from_v1
from jobs.aihc.signer import canonical_query
from jobs.logs import DOWNLOAD_SPOOL_BYTES, spooled_lines, unmarked
from jobs.models import (
    FINAL_STATUSES,
    DeletedJob,
    EventType,
    Job,
    JobEvent,
    JobReplica,
    JobStatus,
    JobWait,
    ReplicaStatus,
)
from jobs.runtime_env import (
    LOCAL_RUNNER_VARIABLES,
    ReplicaRef,
    replica_environment,
    shown_group_task,
)
from jobs.services import job_event, job_spec_or_noted, recorded
from jobs.shim import UsageLog, usage_lines
from jobs.texts import joined, list_words, source_of

from .base import (
    CONNECTION_CLOSED,
    STOPPED_BEFORE_DELETION,
    AcceleratorStock,
    BackendError,
    NoLog,
    Pool,
    RequestPreview,
    Volume,
    download_deadline,
    got_no_answer,
)
from .remote import (
    STUCK_SUBMITTING,
    UNANSWERED_SYNCS_BEFORE_STATUS,
    BackgroundInventory,
    RemoteBackend,
    console_time,
    given_up_submission_start,
    logged_error,
    recorded_error,
    scrub,
    submission_start,
    unanswered_creates,
)

logger = logging.getLogger("jobs.aihc")

NAME = "aihc"
# Data source types each API generation accepts (v1: "当前支持PFS", plus the types its
# official CLI template and Go SDK use; v2: its documented list).
STORAGE_TYPES = {
    V1: ["pfs", "pfsl1", "pfsl2", "hostpath", "dataset"],
    V2: ["pfs", "hostpath", "bos", "cfs", "rapidfs", "dataset"],
}
# Mounted by path alone, with no file system or volume to choose: BOS (a bucket path,
# spec.VOLUMELESS_TYPES) and 本地盘, the node's local disk (a path on the node; seed 000:
# "使用指定本地盘路径"), which the wizard names hostpath-<n> as AIHC's samples do.
PATH_ONLY_STORAGE_TYPES = frozenset({*spec_module.VOLUMELESS_TYPES, "hostpath"})
# "TFJob支持jobRunning、jobFailed、jobSucceed类型告警,PyTorchJob支持类型所有告警" (AlertConfig).
TF_ALERT_ITEMS = frozenset({"jobRunning", "jobFailed", "jobSucceed"})
# Every create carries the console job's id in this label: a create that got no answer is
# recognised on AIHC by it, never by its name alone (anyone may have made a job of that name,
# and adopting it would let this console stop or delete it). AIHC returns a job's labels.
CONSOLE_JOB_LABEL = "ai-job-console/job-id"
PREVIEW_JOB_ID = "<job-id>"  # the review's request, before the job (and its id) exists
# How the console records the stop it sends (AihcBackend.stop): a job that ended Stopped
# after one of these was stopped by the console, not on AIHC's side.
STOP_REQUESTED = gettext_noop("Stop requested.")
STOP_UNANSWERED = gettext_noop(
    "Stop requested; AIHC did not answer it yet (%(error)s). The console sends the stop again "
    "until AIHC reports the job ended."
)
# A stop AIHC answered with its own failure (a 5xx, 429): it did answer, so said so (qa80).
STOP_ANSWERED_ERROR = gettext_noop(
    "Stop requested; AIHC answered it with an error (%(error)s). The console sends the stop "
    "again until AIHC reports the job ended."
)
# The same two for the stop a Delete makes first of a job not started (qa112: a Delete AIHC
# gave no answer read "Stop requested; …", though its owner had asked to delete it).
STOP_BEFORE_DELETING_UNANSWERED = gettext_noop(
    "Stopped before deleting; AIHC did not answer the stop yet (%(error)s). The console sends "
    "the stop again until AIHC reports the job ended."
)
STOP_BEFORE_DELETING_ANSWERED_ERROR = gettext_noop(
    "Stopped before deleting; AIHC answered the stop with an error (%(error)s). The console "
    "sends the stop again until AIHC reports the job ended."
)
# A create that got no clear answer, or that a worker died sending, may land on AIHC late:
# after the console sent it again and followed what that made, or after the job ended here
# (stopped, Submit failed). For this long after such a create the worker looks, once a
# minute, for any other AIHC job carrying the job's id label and stops it (stop_duplicates;
# qa80: one console job could be two AIHC jobs, the second running on untracked).
DUPLICATE_WATCH = timedelta(hours=1)
DUPLICATE_STOPPED = gettext_noop(
    "AIHC had another job labelled with this job's id, %(id)s: a create that got no clear "
    "answer landed late. The console stopped it there. It stays in AIHC's job list: delete it "
    "there once its logs are not needed."
)
# A job with no AIHC job yet in these statuses still looks for what its creates made, and
# adopts it (its own looks: _settled_by_looking, _reconcile_stuck, _finish_stop_in_flight;
# Pending review: Submit again held it, and its send looks first). In any other (Stopped,
# Submit failed, Rejected) nothing of it is followed, so whatever carries its label is
# stopped (qa83: Submit failed after four creates was skipped as if still looking, and the
# four landing late ran on).
STILL_LOOKING = frozenset(
    {JobStatus.QUEUED, JobStatus.SUBMITTING, JobStatus.STOPPING, JobStatus.PENDING_REVIEW}
)
# An AIHC job in these statuses (STATUS_MAP) is left alone by stop_duplicates: it ended, or
# is stopping (stopped already, by the console or someone else).
ENDED_ON_AIHC = frozenset(
    {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.STOPPING}
)
# The same, of a job that had ended here with no AIHC job (Stopped, Submit failed).
LATE_CREATE_STOPPED = gettext_noop(
    "AIHC made this job after all, as %(id)s: a create that got no clear answer landed after "
    "the job ended here. The console stopped it there. It stays in AIHC's job list: delete it "
    "there once its logs are not needed."
)
DUPLICATE_NOT_STOPPED = gettext_noop(
    "AIHC has another job labelled with this job's id, %(id)s: a create that got no clear "
    "answer landed late. Stopping it there failed (%(error)s); the console tries again every "
    "minute until %(time)s. Stop it in AIHC's console if it runs on."
)
# Said as a job whose create got no clear answer waits, Queued, for it to land
# (AihcBackend.create_wait); the job list shows these (views.LISTED_REASONS).
CREATE_SETTLING = gettext_noop(
    "A create AIHC is still working on may show up later: the job is looked for again at "
    "%(time)s, and sent again only if AIHC still shows none."
)
CREATE_SETTLING_LAST = gettext_noop(
    "A create AIHC is still working on may show up later: the job is looked for again at "
    "%(time)s, and not sent again: once AIHC answers that it has no such job, the job is "
    "Submit failed."
)
# A job AIHC still reports running this long after it went Stopping, though the stop was sent
# again meanwhile, gets one "StopUnconfirmed" warning; it stays Stopping, the stop still resent.
STOP_UNCONFIRMED = timedelta(minutes=30)
# After this many create attempts that got no answer (and no job of that name showed up),
# the job is marked Submit failed instead of being tried again.
MAX_UNANSWERED_CREATES = 4
TIMEOUT_EVENT = "SubmitTimedOut"
SERVER_ERROR_EVENT = "SubmitServerError"
# Creates that got no clear answer: each may or may not have created the job.
UNANSWERED_EVENTS = (TIMEOUT_EVENT, SERVER_ERROR_EVENT)
# The console's events of its requests to AIHC (sending the job, a stop): AIHC's events of
# their second are listed after them (_sync_events). So are they after a "Submitted" that
# follows a "Stopping": a job stopped while its create had no clear answer, found then and
# adopted to stop it, its stop sent at once with no event of its own (it is Stopping already;
# qa83: AIHC's events of that stop showed before the adoption).
REQUEST_REASONS = ("Submitting", "Stopping")
# A look for what a create may have made that AIHC has refused for an hour (remote.
# LOOK_REFUSED_GIVE_UP): said as the job is given up, Submit failed, on the submit's look and on
# the look for a job the worker died while sending (_reconcile_stuck).
LOOKS_REFUSED_GIVEN_UP = gettext_noop(
    "AIHC refused the looks for the job its creates may have made for an hour (the last: "
    "%(error)s), so the console stopped looking. AIHC may have made it: look in pool %(pool)s "
    "for a job named %(name)s labelled ai-job-console/job-id=%(id)s. Submit again looks for it "
    "first and follows it as this job; to drop it instead, stop it there."
)
# A look AIHC refused, said on the job as it waits for the next (the job list shows these
# reasons: views.LISTED_REASONS): queued after a create that got no clear answer, or left
# Submitting by a worker that died sending it.
QUEUED_LOOK_REFUSED = gettext_noop(
    "AIHC refused the look for the job its creates may have made: %(error)s. The job stays "
    "queued and is looked for again at %(time)s."
)
SUBMITTING_LOOK_REFUSED = gettext_noop(
    "AIHC refused the look for the job its interrupted submission may have made: %(error)s. "
    "The job stays submitting and is looked for again at %(time)s; nothing is sent again "
    "before AIHC answers the look."
)
# The same, said as a stopped job whose look AIHC refused for an hour ends Stopped.
STOP_LOOKS_REFUSED_GIVEN_UP = gettext_noop(
    "AIHC refused the looks for the job its creates may have made for an hour (the last: "
    "%(error)s), so the console stopped looking and ended the job Stopped. AIHC may have made "
    "it: look in pool %(pool)s for a job named %(name)s labelled ai-job-console/job-id=%(id)s, "
    "and stop it there if it runs."
)

# AIHC job status -> console status. The full enum is not published; these are the values
# Baidu's docs and CLIs show, plus the Kubernetes training-operator conditions they wrap.
STATUS_MAP: dict[str, str] = {
    "created": JobStatus.QUEUED,
    "pending": JobStatus.QUEUED,
    "queuing": JobStatus.QUEUED,
    "queueing": JobStatus.QUEUED,
    "inqueue": JobStatus.QUEUED,
    "enqueued": JobStatus.QUEUED,
    "scheduled": JobStatus.QUEUED,
    "restarting": JobStatus.RUNNING,
    "running": JobStatus.RUNNING,
    "succeeded": JobStatus.SUCCEEDED,
    "completed": JobStatus.SUCCEEDED,
    "failed": JobStatus.FAILED,
    "terminating": JobStatus.STOPPING,
    "stopping": JobStatus.STOPPING,
    "manualtermination": JobStatus.STOPPED,
    "stopped": JobStatus.STOPPED,
    "terminated": JobStatus.STOPPED,
    "deleted": JobStatus.STOPPED,
}
POD_INDEX_RE = re.compile(r"-(\d+)$")
# Where the samples of AIHC jobs' pods are kept, and what is read for them (see the docstring).
USAGE_DIR = "aihc-usage"
# Utilisations in percent (see the docstring: the scale is a decision, uncertain).
GPU_METRIC, CPU_METRIC, MEMORY_METRIC = "GpuUsage", "CpuUsage", "MemoryUsage"
# How far back each read asks (at least): a worker that was down longer loses the gap.
USAGE_WINDOW = 120
# How far back a read reaches at most to join up with the last one (_sample_usage).
USAGE_CATCH_UP = 3600
UNAVAILABLE_FILE = "unavailable.json"


def usage_file(public_id: str, label: str) -> Path:
    """The utilisation samples of an AIHC job's replica (`<role>-<index>`), UtilisationLog's;
    they go when the job is deleted."""
    return Path(settings.VAR_DIR) / USAGE_DIR / public_id / f"{label}.usage"


def read_utilisation(path: Path, *, last: int | None = None) -> list[dict]:
    """The utilisation samples in the file at `path`, oldest first ([] if there is none):
    `t` (unix seconds), `s` (seconds covered), `gpu` (percent, or None: AIHC gave none),
    `cpu` and `mem` (percent); with `last`, only the newest `last`, read from the end."""
    records = []
    for line in usage_lines(path, last=last):
        with contextlib.suppress(ValueError, TypeError, AttributeError, KeyError):
            record = json.loads(line)
            gpu = record.get("gpu")
            records.append(
                {
                    "t": float(record["t"]),
                    "s": float(record["s"]),
                    "gpu": None if gpu is None else float(gpu),
                    "cpu": float(record["cpu"]),
                    "mem": float(record["mem"]),
                }
            )
    return records[-last:] if last is not None else records


def merge_utilisation(records: list[dict]) -> dict:
    """One utilisation record for several, as a local replica's are merged: GPU and CPU
    averaged over the time they span (GPU over the records that have it), memory at its
    peak."""
    span = sum(r["s"] for r in records)

    def averaged(key: str) -> float | None:
        having = [r for r in records if r[key] is not None]
        if not having:
            return None
        seconds = sum(r["s"] for r in having)
        if not seconds:
            return having[-1][key]
        return round(sum(r[key] * r["s"] for r in having) / seconds, 3)

    return {
        "t": records[-1]["t"],
        "s": round(span, 3),
        "gpu": averaged("gpu"),
        "cpu": averaged("cpu"),
        "mem": max(r["mem"] for r in records),
    }


class UtilisationLog(UsageLog):
    """An AIHC replica's utilisation samples (read_utilisation), kept and downsampled as a
    local replica's usage is."""

    def read(self, path: Path) -> list[dict]:
        return read_utilisation(path)

    def merge(self, records: list[dict]) -> dict:
        return merge_utilisation(records)


def unavailable_file(public_id: str) -> Path:
    """Why the last read of an AIHC job's usage failed (JSON: `error`), while it does."""
    return Path(settings.VAR_DIR) / USAGE_DIR / public_id / UNAVAILABLE_FILE


def usage_unavailable(public_id: str) -> str | None:
    """What the last failed read of the job's usage met (AIHC's message, code and status),
    or None when the last read succeeded (or none was made)."""
    try:
        data = json.loads(unavailable_file(public_id).read_text())
    except (OSError, ValueError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, str) and error else None


def _never_reached_aihc(exc: AihcError) -> bool:
    """Nothing was created: the connection failed, or AIHC throttled the request."""
    return isinstance(exc, AihcUnavailable) or exc.status == 429


def _refused(exc: AihcError) -> bool:
    """AIHC answered, and said no: a 4xx with its error code (not 429, which asks for fewer
    requests). Anything else (no answer, a server error, throttling) may be AIHC's hiccup."""
    return 400 <= exc.status < 500 and exc.status != 429


def _may_have_created(exc: AihcError) -> bool:
    """No answer, or a server error: AIHC may have created the job before failing."""
    return isinstance(exc, AihcTimeout) or exc.status >= 500


def _error_without_words(exc: AihcError) -> str:
    """AIHC's error without its message: its code, HTTP status and request id (never empty:
    the error's kind, if it has none of them). For a deleted job, whose secret values (which
    AIHC may quote) are no longer known to mask."""
    parts = (
        exc.code,
        f"HTTP {exc.status}" if exc.status else "",
        f"requestId {exc.request_id}" if exc.request_id else "",
    )
    return ", ".join(part for part in parts if part) or type(exc).__name__


def _sync_error(exc: AihcError, secrets: list[str]) -> BackendError:
    """A read of a job's sync that failed, as the worker is told it (secrets masked)."""
    return BackendError(
        scrub(str(exc), secrets),
        code=exc.code,
        request_id=exc.request_id,
        logged=scrub(logged_error(exc), secrets),
    )


def _shown(what: str, exc: AihcError, secrets: list[str]) -> BackendError:
    """An AIHC failure as the person who asked is told it: what did not happen (`what`, a
    gettext_noop-marked message, said in the language active now), then AIHC's reason, code
    and request id (for a support ticket), with the job's secrets masked; in English too for
    the log (qa112: the worker's log quoted it in the console's language)."""
    with translation.override("en"):
        logged = _(what) % {"error": logged_error(exc)}
    return BackendError(
        scrub(_(what) % {"error": exc}, secrets),
        code=exc.code,
        request_id=exc.request_id,
        logged=scrub(logged, secrets),
    )


def aihc_time(stamp: str) -> datetime | None:
    """An AIHC time as a datetime: UTC "2015-04-27T08:23:49Z" as BCE writes times (the
    Kubernetes event times AIHC passes on are RFC 3339, which this also reads: fractions, an
    offset); a time without an offset is UTC. None when it cannot be read."""
    try:
        when = datetime.fromisoformat(stamp.strip())
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        # OverflowError: a time that is no time in UTC, Go's zero time written with an offset
        # east of it ("0001-01-01T00:00:00+08:00": review63, one such timeline entry failed the
        # job's every sync).
        return None


@dataclass
class Config:
    endpoint: str
    access_key: str
    secret_key: str = field(repr=False)
    api_version: str
    pool_versions: dict[str, str]
    pool_filter: tuple[str, ...]
    cache_seconds: float
    wait_seconds: float
    refresh_wait_seconds: float
    connect_timeout: float
    read_timeout: float
    retries: int
    backoff: float

    @classmethod
    def from_settings(cls) -> Config:
        versions = [settings.AIHC_API_VERSION, *settings.AIHC_POOL_API_VERSIONS.values()]
        if any(v not in API_VERSIONS for v in versions):
            raise ValueError(
                "AIHC API versions are v1 or v2 (AIHC_API_VERSION, AIHC_POOL_API_VERSIONS)"
            )
        return cls(
            endpoint=endpoint_for(region=settings.AIHC_REGION, endpoint=settings.AIHC_ENDPOINT),
            access_key=settings.AIHC_ACCESS_KEY,
            secret_key=settings.AIHC_SECRET_KEY,
            api_version=settings.AIHC_API_VERSION,
            pool_versions=dict(settings.AIHC_POOL_API_VERSIONS),
            pool_filter=tuple(settings.AIHC_POOLS),
            cache_seconds=settings.AIHC_CACHE_SECONDS,
            wait_seconds=settings.AIHC_INVENTORY_WAIT_SECONDS,
            refresh_wait_seconds=settings.AIHC_REFRESH_WAIT_SECONDS,
            connect_timeout=settings.AIHC_CONNECT_TIMEOUT,
            read_timeout=settings.AIHC_READ_TIMEOUT,
            retries=settings.AIHC_RETRIES,
            backoff=settings.AIHC_RETRY_BACKOFF,
        )

    def key(self) -> tuple[Any, ...]:
        return (
            self.endpoint,
            self.access_key,
            self.api_version,
            tuple(sorted(self.pool_versions.items())),
            self.pool_filter,
        )

    def version(self, pool_id: str) -> str:
        return self.pool_versions.get(pool_id) or self.api_version


CREDENTIALS_MISSING = gettext_noop(
    "AIHC credentials are not configured (AIHC_ACCESS_KEY, AIHC_SECRET_KEY)."
)


class Inventory(BackgroundInventory):
    """The cached pool list of one AIHC account, refreshed by at most one thread at a time."""

    thread_name = "aihc-inventory"

    def __init__(self, config: Config, client: AihcClient):
        super().__init__()
        self.config = config
        self.client = client
        self.pools: list[Pool] = []
        self.as_of: datetime | None = None  # last successful read
        # What made the reads fail since `failing_since` (None: the last read succeeded, or
        # none has ended yet): for the pools' error (`get`) and staff's notice
        # (AihcBackend.inventory_problem), each said in the reader's language when it is read.
        self.failure: Exception | None = None
        self.failing_since: datetime | None = None
        # The names of the pools last kept in the database (AihcBackend._keep_names).
        self.kept_names: dict[str, str] | None = None

    def get(self, config: Config) -> list[Pool]:
        self.config = config  # TTL and wait changes apply at once
        self._await_figures(config)
        age = (timezone.now() - self.as_of).total_seconds() if self.as_of else None
        error = self._error()
        stale = bool(error) or age is None or age > config.cache_seconds
        return [Pool(**{**p.__dict__, "stale": stale, "error": error}) for p in self.pools]

    def _error(self) -> str:
        """Why the last read failed ("" when it succeeded), in the language active now: the
        page's. Worded here, not by the refresh thread, which runs in the console's language
        (qa112: the pool page in English said it in Chinese)."""
        failure = self.failure
        if failure is None:
            return ""
        if isinstance(failure, AihcError):
            return _("AIHC inventory could not be read: %(error)s") % {"error": failure}
        return _("AIHC inventory could not be read.")

    def _read_and_keep(self) -> None:
        try:
            pools = self._read()
        except AihcError as exc:
            self._failed(exc)
            # The endpoint named: "could not be reached" alone did not say where (qa94).
            logger.warning(
                "AIHC inventory refresh from %s failed: %s", self.config.endpoint, logged_error(exc)
            )
        except Exception as exc:  # never let a refresh thread die silently
            self._failed(exc)
            logger.exception("AIHC inventory refresh from %s failed", self.config.endpoint)
        else:
            self.pools, self.as_of = pools, timezone.now()
            self.failure = self.failing_since = None

    def _failed(self, exc: Exception) -> None:
        self.failure = exc
        if self.failing_since is None:
            self.failing_since = timezone.now()

    def _read(self) -> list[Pool]:
        cfg = self.config
        now = timezone.now()
        pools = []
        for raw in self.client.resource_pools(version=cfg.api_version):
            if cfg.pool_filter and raw["id"] not in cfg.pool_filter:
                continue
            version = cfg.version(raw["id"])
            queues = self.client.queues(pool=raw["id"], version=version) or ["default"]
            volumes = [Volume(type="pfs", name=pfs, label=pfs) for pfs in raw["pfs"]]
            # Only what a mount row can be filled in with: a type the pool has a volume of,
            # or one that needs none (a BOS bucket path, a path on the node). The API accepts
            # more types (check_spec), but the console cannot list CFS or RapidFS instances.
            mountable = {v.type for v in volumes} | PATH_ONLY_STORAGE_TYPES
            pools.append(
                Pool(
                    id=raw["id"],
                    name=raw["name"] or raw["id"],
                    backend=NAME,
                    queues=queues,
                    accelerators=[
                        AcceleratorStock(type=kind, total=total, idle=idle)
                        for kind, (total, idle) in sorted(raw["accelerators"].items())
                    ],
                    volumes=volumes,
                    storage_types=[t for t in STORAGE_TYPES[version] if t in mountable],
                    as_of=now,
                    privileged=version == V1,
                )
            )
        return pools


class AihcBackend(RemoteBackend[Config, AihcClient]):
    name = NAME
    platform = "AIHC"
    unanswered_events = UNANSWERED_EVENTS
    logger = logger

    def __init__(self) -> None:
        super().__init__()
        self._clients: dict[tuple[Any, ...], AihcClient] = {}
        self._inventories: dict[tuple[Any, ...], Inventory] = {}
        self._metrics_read: dict[str, float] = {}  # job id -> when its usage was last read
        self._metrics_said: set[tuple[str, str]] = set()  # (job id, kind of failure) logged
        # Per account (Config.key()): when a usage read last got no answer, and its error.
        self._metrics_unanswered: dict[tuple[Any, ...], tuple[float, str]] = {}
        self._usage_logs: dict[tuple[str, str], tuple[UtilisationLog, float]] = {}

    def __repr__(self) -> str:
        return "AihcBackend()"

    # -- configuration -------------------------------------------------------------

    @staticmethod
    def _config() -> Config:
        """The settings as they are now; BackendError ("Misconfigured") when unusable."""
        try:
            config = Config.from_settings()
        except ValueError as exc:
            raise BackendError(str(exc), code="Misconfigured") from None
        if not config.access_key or not config.secret_key:
            raise BackendError(
                _(CREDENTIALS_MISSING),
                code="Misconfigured",
                # The worker's log is English (qa112: "syncing … with aihc failed: 未配置…").
                logged=CREDENTIALS_MISSING,
            )
        return config

    def settings_problem(self) -> str | None:
        # Both keys set: the settings' presence alone, as Kubernetes' (review64); a setting
        # there but wrong (an API version) is said by the call that needs it.
        if not settings.AIHC_ACCESS_KEY or not settings.AIHC_SECRET_KEY:
            return _("AIHC credentials are not configured (AIHC_ACCESS_KEY, AIHC_SECRET_KEY).")
        return None

    def _setup(
        self, *, for_page: bool = False, for_action: bool = False, for_download: bool = False
    ) -> tuple[Config, AihcClient]:
        """Settings are read on each call, so a changed endpoint or key takes effect.

        `for_page`: a call a web request waits on (a log tail) gets no retries and a short
        read timeout (AIHC_PAGE_READ_TIMEOUT), so a slow AIHC cannot hold the console's
        threads.
        `for_action`: a person's Stop or Delete: for_page's client, each call also given up
        once AIHC_CONNECT_TIMEOUT + AIHC_PAGE_READ_TIMEOUT have passed, however its answer
        comes (a log tail is not: it may read a long answer).
        `for_download`: a whole-log download's own client (to be closed), its reads tried as
        the worker's are but waiting AIHC_DOWNLOAD_READ_TIMEOUT, all within
        LOG_DOWNLOAD_TOTAL_SECONDS."""
        config = self._config()
        if for_download:
            return config, AihcClient(
                endpoint=config.endpoint,
                credentials=Credentials(config.access_key, config.secret_key),
                connect_timeout=config.connect_timeout,
                read_timeout=settings.AIHC_DOWNLOAD_READ_TIMEOUT,
                retries=config.retries,
                backoff=config.backoff,
                deadline=download_deadline(),
            )
        for_page = for_page or for_action
        key = (*config.key(), config.secret_key, for_page, for_action)
        page_read_timeout = min(config.read_timeout, settings.AIHC_PAGE_READ_TIMEOUT)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = AihcClient(
                    endpoint=config.endpoint,
                    credentials=Credentials(config.access_key, config.secret_key),
                    connect_timeout=config.connect_timeout,
                    read_timeout=page_read_timeout if for_page else config.read_timeout,
                    retries=0 if for_page else config.retries,
                    backoff=config.backoff,
                    call_seconds=config.connect_timeout + page_read_timeout if for_action else None,
                )
                self._clients[key] = client
        return config, client

    def _inventory(self) -> Inventory:
        config, client = self._setup()
        key = config.key()
        with self._lock:
            inventory = self._inventories.get(key)
            if inventory is None or inventory.client is not client:
                inventory = Inventory(config, client)
                self._inventories[key] = inventory
        return inventory

    # -- inventory -----------------------------------------------------------------

    def pools(self) -> list[Pool]:
        try:
            config, _client = self._setup()
            inventory = self._inventory()
            pools = inventory.get(config)
        except BackendError as exc:
            return self._unusable(exc)
        self._keep_names(inventory)
        return pools

    def _keep_names(self, inventory: Inventory) -> None:
        """The names of a read's pools, kept in the database (KnownPool) so that a server
        process that has not read AIHC yet still names them (jobs.pools.pool_labels): once per
        read whose names differ from those this inventory kept last, here in the thread that
        asked for the pools, not in the refresh thread (which holds no request's connection)."""
        from jobs.pools import known_pools_keep  # jobs.pools imports the backends

        names = {p.id: p.name for p in inventory.pools}
        if (
            inventory.as_of is not None
            and names != inventory.kept_names
            and known_pools_keep(backend=NAME, names=names)
        ):
            inventory.kept_names = names

    def inventory_problem(self) -> str | None:
        """Why this server process cannot read AIHC's pools now, for staff, in the reader's
        language: what failed (the address that could not be reached, or AIHC's refusal with
        its code and requestId) and since when; None while the reads succeed or settings
        that cannot be used keep AIHC off (pools() logs those). Found in QA (qa94): with an
        unreachable endpoint or a refused key the AIHC pools just were not there, on every
        page. Starts a read when one is due, without waiting for it: the page after shows it."""
        try:
            config, _client = self._setup()
            inventory = self._inventory()
        except BackendError:
            return None
        inventory._start_refresh(config)
        failure, since = inventory.failure, inventory.failing_since
        if failure is None or since is None:
            return None
        values = {
            "since": date_format(timezone.localtime(since), "Y-m-d H:i:s"),
            "endpoint": config.endpoint,
            "error": failure,
            "access_key": config.access_key,
            "cause": getattr(failure, "cause", "") or type(failure).__name__,
        }
        if isinstance(failure, AihcUnavailable):
            return (
                _(
                    "AIHC's pools cannot be read since %(since)s: %(endpoint)s could not be "
                    "reached (%(cause)s). No AIHC pool is offered until it answers: check "
                    "AIHC_ENDPOINT (or AIHC_REGION) and that this machine can reach it."
                )
                % values
            )
        if isinstance(failure, AihcError) and failure.status in (401, 403):
            return (
                _(
                    "AIHC's pools cannot be read since %(since)s: AIHC at %(endpoint)s refused "
                    "the access key %(access_key)s: %(error)s. No AIHC pool is offered until "
                    "it accepts it: check AIHC_ACCESS_KEY and AIHC_SECRET_KEY."
                )
                % values
            )
        return (
            _(
                "AIHC's pools cannot be read since %(since)s from %(endpoint)s: %(error)s. "
                "The pools last read are offered, marked with their age, or none."
            )
            % values
        )

    def pools_unread(self) -> str | None:
        # No problem while settings that cannot be used keep AIHC off: it offers no pool at
        # all then, and the log says why (pools()).
        try:
            inventory = self._inventory()
        except BackendError:
            return None
        since = inventory.failing_since
        if inventory.failure is not None and since is not None:
            return _("AIHC's pools cannot be read since %(since)s") % {
                "since": date_format(timezone.localtime(since), "Y-m-d H:i:s")
            }
        if not inventory.loaded.is_set():
            return _("AIHC's pools have not been read yet")
        return None

    def pool_names(self) -> dict[str, str]:
        # The pools of the inventory's last read, as they are: no refresh started, no wait (a
        # page that reads the figures, the pools page or the full job list, refreshes it).
        # Before the first read there are none: a job shows its pool's last known name
        # (KnownPool, jobs.pools.pool_labels), or its id.
        try:
            return {p.id: p.name for p in self._inventory().pools}
        except BackendError:
            return {}

    def pool_names_read(self) -> bool:
        # Settings that cannot be used offer no pool, for certain; a read that failed has
        # finished too (its pools are none, or the last good read's).
        try:
            return self._inventory().loaded.is_set()
        except BackendError:
            return True

    # -- what AIHC cannot run --------------------------------------------------------

    def check_spec(self, spec: spec_module.JobSpec) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}

        def err(path: str, message: str) -> None:
            errors.setdefault(path, []).append(message)

        try:
            config = Config.from_settings()
        except ValueError:
            version = settings.AIHC_API_VERSION
        else:
            version = config.version(spec.resource_pool_id)
        self._check_pool_and_queue(spec, err)
        if spec.framework == spec_module.CUSTOM:
            err(
                "jobFramework",
                _("AIHC runs PyTorch, MPI and TensorFlow jobs; custom roles cannot be sent."),
            )
        elif spec.framework == spec_module.TENSORFLOW and version == V1:
            err(
                "jobFramework",
                _(
                    "AIHC OpenAPI v1 runs only PyTorchJob and MPIJob; TensorFlow needs a pool on API v2."
                ),
            )
        elif spec.framework in (spec_module.PYTORCH, spec_module.MPI):
            self._check_uniform_roles(spec, err)
        if spec.cpu_exclusive:
            err("cpuExclusive", _("AIHC has no CPU exclusivity setting."))
        if spec.log_persistence:
            err("logPersistence", _("The AIHC OpenAPI has no log persistence setting."))
        if spec.retention_period and version == V1:
            err("retentionPeriod", _("Automatic deletion needs a pool on AIHC OpenAPI v2."))
        if spec.privileged and version == V2:
            # v1 takes jobSpec.privileged (AIHC's Go SDK, OpenAPIAIJobSpec); v2's JobSpec
            # documents no such field, and AIHC ignores a key it does not know: sent there,
            # the job would run unprivileged without a word.
            err(
                "jobSpec.privileged",
                _(
                    "Privileged containers need a pool on AIHC OpenAPI v1; API v2 has no such setting."
                ),
            )
        allowed = STORAGE_TYPES.get(version, STORAGE_TYPES[V1])
        for i, ds in enumerate(spec.datasources):
            if ds.type not in allowed:
                err(
                    f"datasources[{i}].type",
                    _("AIHC API %(version)s cannot mount “%(type)s”; it supports %(types)s.")
                    % {"version": version, "type": ds.type, "types": list_words(allowed)},
                )
            elif ds.type == "hostpath" and (
                not ds.source_path
                or ds.source_path == "/"
                or spec_module.normalised_mount_path(ds.source_path) is None
            ):
                # The node's disk has no "whole volume": say which folder of it.
                err(
                    f"datasources[{i}].sourcePath",
                    _("Enter the folder on the node's local disk to mount, e.g. /ssd1/data."),
                )
        if spec.alert.emails:
            err(
                "alert.emails",
                _("AIHC sends alerts through its notify policy, not to email addresses."),
            )
        if spec.alert.webhooks:
            err(
                "alert.webhooks", _("AIHC sends alerts through its notify policy, not to webhooks.")
            )
        if spec.framework == spec_module.TENSORFLOW and set(spec.alert.items) - TF_ALERT_ITEMS:
            err(
                "alertConfig.alertItems",
                _("AIHC alerts on a TensorFlow job only when it runs, fails or succeeds."),
            )
        if spec.alert.items and not spec.alert.instance_id:
            err(
                "alertConfig.instanceId",
                _("AIHC alerts need the ID of the monitoring instance the pool is connected to."),
            )
        if spec.alert.items and not spec.alert.notify_rule_id:
            err(
                "alertConfig.notifyRuleId",
                _("AIHC alerts need the ID of the notify policy that sends them."),
            )
        return errors

    def _check_pool_and_queue(self, spec: spec_module.JobSpec, err: Any) -> None:
        """Against the cached inventory; says nothing while AIHC cannot be read."""
        pools = self.pools()
        if not pools or pools[0].error:
            return
        pool = next((p for p in pools if p.id == spec.resource_pool_id), None)
        if pool is None:
            err(
                "resourcePoolId",
                _("AIHC has no resource pool %(pool)s.") % {"pool": spec.resource_pool_id},
            )
        elif spec.queue not in pool.queues:
            err(
                "queue",
                _("Pool %(pool)s has no queue %(queue)s; it has %(queues)s.")
                % {"pool": pool.name, "queue": spec.queue, "queues": list_words(pool.queues)},
            )

    @staticmethod
    def _check_uniform_roles(spec: spec_module.JobSpec, err: Any) -> None:
        """AIHC v1/v2 PyTorch and MPI jobs give every replica the same resources."""
        roles = [(i, r) for i, r in enumerate(spec.roles) if r.replicas]
        if not roles:
            return
        first = roles[0][1]
        for i, role in roles[1:]:
            if (
                role.accelerator_type != first.accelerator_type
                or role.accelerators != first.accelerators
            ):
                if spec.framework == spec_module.MPI and not (
                    first.accelerator_type and role.accelerator_type
                ):
                    message = _(
                        "AIHC gives every MPI replica the same resources, so a CPU-only master "
                        "cannot be combined with GPU workers."
                    )
                else:
                    message = _(
                        "AIHC gives every replica the same cards; use one card setting for all roles."
                    )
                err(f"roles[{i}].acceleratorType", message)
            if role.cpu != first.cpu:
                err(f"roles[{i}].cpu", _("AIHC gives every replica the same CPU cores."))
            if role.memory_gb != first.memory_gb:
                err(f"roles[{i}].memory", _("AIHC gives every replica the same memory."))

    # -- bodies --------------------------------------------------------------------

    @staticmethod
    def request_body(
        spec: spec_module.JobSpec, version: str, *, masked: bool = False, job_id: str = ""
    ) -> dict[str, Any]:
        """Exactly what is sent: the spec's v1 body, or its v2 mapping, plus the console job's
        id as a label (CONSOLE_JOB_LABEL) when `job_id` is given."""
        body = spec.to_v1_body(masked=masked)
        if version == V2:
            body = v2_from_v1(body, roles=spec.roles)
        if job_id:
            body["labels"] = [*body.get("labels", []), {"key": CONSOLE_JOB_LABEL, "value": job_id}]
        return body

    def environment_preview(
        self,
        spec: spec_module.JobSpec,
        ref: ReplicaRef,
        *,
        job_id: str,
        group_task: tuple[int, int] | None = None,
        training_api: str = "",
    ) -> dict[str, str]:
        """What AIHC documents injecting (通用环境变量列表) plus the user's envs: none of the
        local runner's extras, unless the user sets one (PYTHONUNBUFFERED) themselves."""
        env = replica_environment(
            spec, ref, job_id=job_id, group_task=shown_group_task(spec, group_task), masked=True
        )
        own = {e.name for e in spec.envs}
        for name in LOCAL_RUNNER_VARIABLES:
            if name not in own:
                env.pop(name, None)
        return env

    def request_preview(
        self,
        spec: spec_module.JobSpec,
        *,
        job_id: str = "",
        training_api: str = "",
        owner: str = "",
    ) -> RequestPreview:
        """What `AihcClient.create_job` sends for this pool's API version (unsigned); before
        the job exists its id label reads PREVIEW_JOB_ID."""
        try:
            config = Config.from_settings()
        except ValueError:
            version, endpoint = settings.AIHC_API_VERSION, ""
        else:
            version, endpoint = config.version(spec.resource_pool_id), config.endpoint
        body = self.request_body(spec, version, masked=True, job_id=job_id or PREVIEW_JOB_ID)
        headers = {"Content-Type": "application/json"}
        if version == V2:
            path = "/"
            params = [
                ("action", "CreateJob"),
                ("resourcePoolId", spec.resource_pool_id),
                ("queueID", body.get("queue") or "default"),
            ]
            headers["X-API-Version"] = V2
        else:
            path, params = "/api/v1/aijobs", [("resourcePoolId", spec.resource_pool_id)]
        return RequestPreview(
            method="POST",
            path=f"{path}?{canonical_query(params)}",
            headers=headers,
            body=body,
            **({"endpoint": endpoint} if endpoint else {}),
        )

    # -- submission ----------------------------------------------------------------

    def _submitting(self, job: Job) -> str:
        return recorded(gettext_noop("Submitting to AIHC pool %(pool)s."), pool=job.resource_pool)

    def _create(
        self,
        job: Job,
        *,
        spec: spec_module.JobSpec,
        secrets: list[str],
        config: Config,
        client: AihcClient,
    ) -> None:
        version = config.version(job.resource_pool)
        body = self.request_body(spec, version, job_id=job.public_id)
        pool = job.resource_pool
        unanswered = list(
            unanswered_creates(job, UNANSWERED_EVENTS).values_list("created_at", flat=True)
        )
        # A create that got no clear answer may still have happened: look before trying again.
        # So may one of the submission Submit failed ended, its looks refused for an hour.
        # RemoteBackend.submit brings the job here only once the last such create has had
        # AIHC_CREATE_SETTLE_SECONDS to land (create_wait).
        look_since = min(unanswered) if unanswered else given_up_submission_start(job)
        if look_since is not None:
            if self._settled_by_looking(
                job,
                client,
                config,
                spec,
                since=look_since,
                unanswered=len(unanswered),
                secrets=secrets,
            ):
                return
            if len(unanswered) >= MAX_UNANSWERED_CREATES:
                # The last create's look, made once it had time to land: no such job, none
                # sent again.
                self._requeue_unanswered(job, len(unanswered), secrets, None)
                return
        started = timezone.now()
        try:
            result = client.create_job(pool=pool, body=body, version=version)
        except AihcError as exc:
            if _never_reached_aihc(exc):
                self._defer(
                    job,
                    exc,
                    secrets,
                    config=config,
                    pause=(
                        settings.AIHC_SUBMIT_PAUSE_SECONDS,
                        settings.AIHC_SUBMIT_PAUSE_MAX_SECONDS,
                    ),
                    message=gettext_noop(
                        "AIHC could not take the job now (%(error)s). It stays queued and "
                        "is sent again in %(seconds)d s."
                    ),
                    stopped=recorded(gettext_noop("Stopped before AIHC created the job.")),
                )
                return
            if not _may_have_created(exc):
                self._fail(job, recorded_error(exc), secrets)
                return
            unanswered.append(started)
            timed_out = isinstance(exc, AihcTimeout)
            job_event(
                job=job,
                reason=TIMEOUT_EVENT if timed_out else SERVER_ERROR_EVENT,
                message=recorded(
                    gettext_noop(
                        "AIHC closed the connection without answering the create request; "
                        "checking whether it was created."
                    )
                    if exc.code == CONNECTION_CLOSED
                    else gettext_noop(
                        "AIHC did not answer the create request in time; checking "
                        "whether it was created."
                    )
                    if timed_out
                    else gettext_noop(
                        "AIHC answered the create request with a server error (%(error)s); "
                        "checking whether it was created."
                    ),
                    error=scrub(recorded_error(exc), secrets),
                ),
                warning=True,
            )
            self._watch_for_duplicates(job)
            logger.warning(
                "AIHC create for %s got no clear answer: %s",
                job.public_id,
                scrub(logged_error(exc), secrets),  # AIHC may quote the body, secrets and all
            )
            # A create AIHC made before failing (a gateway's 5xx after it) is found at once.
            # One still under way is not: nothing is sent again in this pass (until qa80 a
            # second create followed here, and the first landed after it: two AIHC jobs,
            # the console following one). The job waits, Queued, to be looked for again once
            # AIHC_CREATE_SETTLE_SECONDS have passed (create_wait), and is sent again only
            # if AIHC shows none then.
            if not self._settled_by_looking(
                job,
                client,
                config,
                spec,
                since=min(unanswered),
                unanswered=len(unanswered),
                secrets=secrets,
            ):
                self._requeue_unanswered(job, len(unanswered), secrets, None, settled=False)
            return
        self._resume_submits(config)
        self._accepted(job, result["jobId"], adopted=False)

    def _settled_by_looking(
        self,
        job: Job,
        client: AihcClient,
        config: Config,
        spec: spec_module.JobSpec,
        *,
        since: datetime | None,
        unanswered: int,
        secrets: list[str],
    ) -> bool:
        """Looks for the AIHC job a create that got no clear answer may have made, before
        creating again: True when the look settled the job (that AIHC job adopted; or, AIHC not
        answering the look either, the job queued again to look again, _requeue_unanswered); False
        when AIHC shows none. A look that got no answer at all (or was throttled) pauses
        submits, as a create that never reached AIHC does (_defer): until review 49 the job
        was looked for at every pass of the worker, a second apart, two events each. A look
        AIHC refused (403, a 5xx) waits for the job's own next look (_look_refused): until
        left46 it was made again at every pass too."""
        try:
            found = self._find_created(job, client, config, spec, since=since)
        except AihcError as exc:
            if not (got_no_answer(exc) or _never_reached_aihc(exc)):
                self._look_refused(
                    job,
                    exc,
                    secrets,
                    message=QUEUED_LOOK_REFUSED,
                    given_up=LOOKS_REFUSED_GIVEN_UP,
                    pool=job.resource_pool,
                    name=spec.name,
                    id=job.public_id,
                )
                return True
            delay = self._pause_submits(
                config,
                (settings.AIHC_SUBMIT_PAUSE_SECONDS, settings.AIHC_SUBMIT_PAUSE_MAX_SECONDS),
            )
            logger.warning(
                "AIHC did not answer the look for %s's create; submits pause for %ds",
                job.public_id,
                delay,
            )
            self._requeue_unanswered(job, unanswered, secrets, exc)
            return True
        if found:
            self._accepted(job, found, adopted=True)
            return True
        return False

    def _requeue_unanswered(
        self,
        job: Job,
        unanswered: int,
        secrets: list[str],
        why: AihcError | None,
        *,
        settled: bool = True,
    ) -> None:
        """Back to Queued so the worker tries later (looking first), or give up once a look
        answered and showed no such job (`why`: the look's own failure, when it got none).
        `settled`: the look was made once the last create had had AIHC_CREATE_SETTLE_SECONDS
        to land; a look right after it (False) gives nothing up, as that create may still be
        under way."""
        if why is None:
            reason = recorded(
                gettext_noop(
                    "AIHC gave no clear answer to the job's create requests (%(n)d so far) and "
                    "shows no such job."
                ),
                n=unanswered,
            )
        elif not unanswered:
            # Submit again's look for what the submission given up on refused looks made
            # (given_up_submission_start): this submission has sent no create yet.
            reason = recorded(
                gettext_noop(
                    "AIHC did not answer the look for the job the last submission may have "
                    "made: %(error)s."
                ),
                error=recorded_error(why),
            )
        else:
            # Until left41 this said "shows no such job" too, of a look AIHC had not
            # answered, and after the last create gave the job up: AIHC may have made it.
            reason = recorded(
                gettext_noop(
                    "AIHC gave no clear answer to the job's create requests (%(n)d so far) and "
                    "did not answer the look for it: %(error)s."
                ),
                n=unanswered,
                error=recorded_error(why),
            )
        if why is None and settled and unanswered >= MAX_UNANSWERED_CREATES:
            self._fail(job, reason, secrets)
            return
        if why is None and not settled:
            # When, in the console's zone, as everyone reads the reason (a user's page may
            # have another active: jobs.time_zones).
            look_again = self.create_wait(job) or timezone.now()
            message = recorded(
                CREATE_SETTLING_LAST if unanswered >= MAX_UNANSWERED_CREATES else CREATE_SETTLING,
                time=console_time(look_again),
            )
        elif unanswered >= MAX_UNANSWERED_CREATES:
            # No create is sent after the last (review 48: this said it would be).
            message = recorded(
                gettext_noop(
                    "It is looked for again, and not sent again: once AIHC answers that "
                    "it has no such job, the job is Submit failed."
                )
            )
        else:
            message = recorded(
                gettext_noop("The job will be submitted again after checking it was not created.")
            )
        self._move(
            job,
            JobStatus.QUEUED,
            "SubmitRetry",
            scrub(joined(reason, message), secrets),
            warning=True,
        )

    def create_wait(self, job: Job) -> datetime | None:
        """When the job's last create that got no clear answer has had
        AIHC_CREATE_SETTLE_SECONDS to land on AIHC (None: it has none in this submission):
        it is not looked for again, nor sent again, before then (RemoteBackend.submit).
        Asked at every worker pass for every queued AIHC job: one whose watch is not on
        (_watch_for_duplicates, set with every such create, for longer than any wait) has
        none, read from the row the worker holds, with no query."""
        watched = job.duplicate_watch_until
        if watched is None or watched <= timezone.now():
            return None
        last = (
            unanswered_creates(job, UNANSWERED_EVENTS)
            .order_by("-created_at")
            .values_list("created_at", flat=True)
            .first()
        )
        if last is None:
            return None
        return last + timedelta(seconds=settings.AIHC_CREATE_SETTLE_SECONDS)

    def _find_created(
        self,
        job: Job,
        client: AihcClient,
        config: Config,
        spec: spec_module.JobSpec,
        *,
        since: datetime | None,
    ) -> str:
        """The id of the AIHC job this console job's create made (its id label), or ""."""
        claimed = set(
            Job.objects.filter(backend=NAME, resource_pool=job.resource_pool)
            .exclude(pk=job.pk)
            .exclude(external_id="")
            .values_list("external_id", flat=True)
        )
        version = config.version(job.resource_pool)
        candidates = [
            j
            for j in client.list_jobs(
                pool=job.resource_pool, queue=spec.queue, name=spec.name, version=version
            )
            if j["jobId"] and j["jobId"] not in claimed
        ]
        if since is not None:
            # Allow for clock skew between AIHC and us.
            floor = (since - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
            candidates = [j for j in candidates if not j["createdAt"] or j["createdAt"] >= floor]
        candidates.sort(key=lambda j: j["createdAt"])
        for candidate in candidates:
            detail = client.get_job(
                pool=job.resource_pool, job_id=candidate["jobId"], queue=spec.queue, version=version
            )
            if detail["labels"].get(CONSOLE_JOB_LABEL) == job.public_id:
                return candidate["jobId"]
        return ""

    @staticmethod
    def _watch_for_duplicates(job: Job) -> None:
        """A create of the job may land on AIHC late: look for it (stop_duplicates) for
        DUPLICATE_WATCH from now."""
        until = timezone.now() + DUPLICATE_WATCH
        Job.objects.filter(pk=job.pk).update(duplicate_watch_until=until)
        job.duplicate_watch_until = until

    def stop_duplicates(self, *, go_on: Callable[[], bool] | None = None) -> None:
        """Stops every AIHC job carrying a watched job's id label (_watch_for_duplicates)
        that is not the one the console follows: what a create that got no clear answer
        made after the job was sent again, or after it ended here, or after it was deleted
        (DeletedJob.duplicate_watch_until). Not for a job still waiting on its own looks
        (STILL_LOOKING, with no AIHC job yet): those adopt what its creates made. The worker
        calls this once a minute; `go_on` is asked before each job. Raises BackendError when
        AIHC does not answer, or the settings cannot be used: the rest wait for the next
        minute."""
        now = timezone.now()
        watched = Job.objects.filter(backend=NAME, duplicate_watch_until__gt=now).order_by(
            "duplicate_watch_until", "pk"
        )
        for job in watched:
            if not job.external_id and job.status in STILL_LOOKING:
                continue
            if go_on is not None and not go_on():
                return
            self._look_for_duplicates(
                public_id=job.public_id,
                pool=job.resource_pool,
                queue=job.queue,
                name=job.name,
                job=job,
            )
        deleted = DeletedJob.objects.filter(duplicate_watch_until__gt=now).order_by(
            "duplicate_watch_until", "pk"
        )
        for gone in deleted:
            where = gone.duplicate_watch if isinstance(gone.duplicate_watch, dict) else {}
            if not where.get("pool"):
                continue
            if go_on is not None and not go_on():
                return
            self._look_for_duplicates(
                public_id=gone.public_id,
                pool=str(where["pool"]),
                queue=str(where.get("queue") or "default"),
                name=gone.name,
                job=None,
                deleted=gone,
            )

    def _look_for_duplicates(
        self,
        *,
        public_id: str,
        pool: str,
        queue: str,
        name: str,
        job: Job | None,
        deleted: DeletedJob | None = None,
    ) -> None:
        """Stops the AIHC jobs named `name` in `pool` that carry `public_id`'s label, are not
        ended, and are not the one `job` follows (`job` None: `deleted`, so none is followed;
        said on its record, DeletedJob.duplicates_found, and in the log). A refusal of the
        look is logged and looked again next minute."""
        config, client = self._setup()
        secrets = job.secret_values() if job is not None else []
        # A deleted job keeps no spec, so the secret values an AIHC message may quote (its
        # body's envs) are not known to mask: of AIHC's error only its code, HTTP status and
        # request id are logged and recorded for it, never its words (qa83).
        said = logged_error if job is not None else _error_without_words
        version = config.version(pool)
        followed = job.external_id if job is not None else ""
        try:
            for listed in client.list_jobs(pool=pool, queue=queue, name=name, version=version):
                other = listed["jobId"]
                if not other or other == followed:
                    continue
                if STATUS_MAP.get(listed["status"].lower()) in ENDED_ON_AIHC:
                    continue  # stopped already (by this, or by someone), or ended by itself
                detail = client.get_job(pool=pool, job_id=other, queue=queue, version=version)
                if detail["labels"].get(CONSOLE_JOB_LABEL) != public_id:
                    continue  # another's job of the same name: never touched
                try:
                    client.stop_job(pool=pool, job_id=other, queue=queue, version=version)
                except AihcError as exc:
                    if exc.code == "JobNotFound":
                        continue
                    self._duplicate_not_stopped(public_id, other, exc, job, secrets, deleted)
                    continue
                self._duplicate_stopped(public_id, other, job, deleted)
        except AihcError as exc:
            if got_no_answer(exc) or _never_reached_aihc(exc):
                raise _sync_error(exc, secrets) from None
            logger.warning(
                "looking on AIHC for duplicates of %s failed: %s; looked again in a minute",
                public_id,
                scrub(said(exc), secrets),
            )

    @staticmethod
    def _duplicate_stopped(
        public_id: str, other: str, job: Job | None, deleted: DeletedJob | None
    ) -> None:
        logger.warning(
            "stopped AIHC job %s: it carries %s's id label, and the console follows %s",
            other,
            public_id,
            (job.external_id if job is not None else "") or "none",
        )
        if job is None:
            if deleted is not None:
                deleted.duplicate_found(other)
            return
        if job.external_id:
            job_event(
                job=job,
                reason="DuplicateStopped",
                message=recorded(DUPLICATE_STOPPED, id=other),
                warning=True,
            )
            return
        # The job ended here with no AIHC job (Stopped after its look found none, or Submit
        # failed): AIHC made it after all. Its reason said otherwise (qa81: "Stopped before
        # AIHC created the job."), so the reason says it too; its status stays.
        said = recorded(LATE_CREATE_STOPPED, id=other)
        job_event(job=job, reason="DuplicateStopped", message=said, warning=True)
        Job.objects.filter(pk=job.pk, status=job.status).update(
            status_reason=said, status_reason_source=source_of(said)
        )
        job.status_reason, job.status_reason_source = said, source_of(said)

    @staticmethod
    def _duplicate_not_stopped(
        public_id: str,
        other: str,
        exc: AihcError,
        job: Job | None,
        secrets: list[str],
        deleted: DeletedJob | None,
    ) -> None:
        logger.warning(
            "AIHC job %s carries %s's id label; stopping it failed: %s",
            other,
            public_id,
            scrub(logged_error(exc), secrets) if job is not None else _error_without_words(exc),
        )
        if job is None:
            if deleted is not None:
                deleted.duplicate_found(other, refused=_error_without_words(exc))
            return
        # Said once on the job, not every minute.
        if job.events.filter(reason="DuplicateFound", message__contains=other).exists():
            return
        job_event(
            job=job,
            reason="DuplicateFound",
            message=scrub(
                recorded(
                    DUPLICATE_NOT_STOPPED,
                    id=other,
                    error=recorded_error(exc),
                    time=console_time(job.duplicate_watch_until, date=True),
                ),
                secrets,
            ),
            warning=True,
        )

    def _accepted(self, job: Job, external_id: str, *, adopted: bool) -> None:
        message = recorded(
            gettext_noop("AIHC had created job %(id)s; adopted it instead of creating another.")
            if adopted
            else gettext_noop("AIHC accepted the job as %(id)s."),
            id=external_id,
        )
        logger.info("AIHC job %s is %s", job.public_id, external_id)
        self._created(job, external_id, message=message)

    def _reconcile_stuck(self, job: Job) -> None:
        """A job left in Submitting (the worker died mid-create): adopt what its create made,
        or requeue it. A look AIHC does not answer (after its retries) raises, as the job
        read of a sync does: the worker's round leaves AIHC's other jobs for the next one
        (until session 33 it was swallowed, and the round went on to wait on the next job);
        a refusal (403, a 5xx) waits for the job's own next look, Submitting, and after an hour
        of them the job is Submit failed (_look_refused; until left48 it was looked for at
        every sync, for ever)."""
        # Not before the create the worker died sending has had the time one that got no
        # clear answer gets (AIHC_CREATE_SETTLE_SECONDS, if longer; qa83).
        waits = max(STUCK_SUBMITTING, timedelta(seconds=settings.AIHC_CREATE_SETTLE_SECONDS))
        if timezone.now() - job.updated_at < waits or not self._look_due(job):
            return
        try:
            config, client = self._setup()
            found = self._find_created(job, client, config, job.job_spec(), since=job.updated_at)
        except AihcError as exc:
            if got_no_answer(exc):
                raise _sync_error(exc, job.secret_values()) from None
            if not _never_reached_aihc(exc):
                self._look_refused(
                    job,
                    exc,
                    job.secret_values(),
                    stays=True,
                    message=SUBMITTING_LOOK_REFUSED,
                    given_up=LOOKS_REFUSED_GIVEN_UP,
                    pool=job.resource_pool,
                    name=job.name,
                    id=job.public_id,
                )
            return
        except (BackendError, spec_module.SpecError):
            return
        if found:
            self._accepted(job, found, adopted=True)
        else:
            # The create the worker died sending may still land, after the job is sent again.
            self._watch_for_duplicates(job)
            super()._reconcile_stuck(job)

    def submit_looked_for(self, job: Job) -> bool:
        # _look_refused says it on the job (its reason) as the job waits, Submitting.
        return (
            job.status == JobStatus.SUBMITTING
            and not job.external_id
            and (job.status_reason_source or {}).get("key") == SUBMITTING_LOOK_REFUSED
        )

    def _finish_stop_in_flight(self, job: Job) -> None:
        """A job stopped while a create got no clear answer, or while Submitting: whatever
        AIHC made of it is found and stopped there; when AIHC shows nothing, the job is
        Stopped. A look AIHC refuses (403, a 5xx) waits for the job's own next look, and after
        an hour of them the job is Stopped saying where to look (_look_refused; until left48 it
        was looked for at every sync, for ever)."""
        unanswered = list(
            job.events.filter(reason__in=UNANSWERED_EVENTS).values_list("created_at", flat=True)
        )
        # A slow create may still show up: give it AIHC_CREATE_SETTLE_SECONDS after the last
        # create that got no clear answer (as a job sent again waits: create_wait), or the time
        # a stuck submit gets after the stop of a job left Submitting. One that lands later
        # still is stopped by stop_duplicates.
        if unanswered:
            settles = max(unanswered) + timedelta(seconds=settings.AIHC_CREATE_SETTLE_SECONDS)
        else:
            settles = job.updated_at + STUCK_SUBMITTING
        if timezone.now() < settles or not self._look_due(job):
            return
        # Looked for also with no such create: a worker that died sending the job leaves none
        # (until lookfix that job was Stopped unlooked-for, AIHC's job left running untracked).
        # And from the start of the submission given up on refused looks this one submits
        # again (create_unsettled): what that one sent is older than this one (left49).
        given_up = given_up_submission_start(job)
        since = min([*unanswered, submission_start(job), *([given_up] if given_up else [])])
        try:
            config, client = self._setup()
            found = self._find_created(job, client, config, job.job_spec(), since=since)
        except AihcError as exc:
            if got_no_answer(exc):
                raise _sync_error(exc, job.secret_values()) from None
            if not _never_reached_aihc(exc):
                self._look_refused(
                    job,
                    exc,
                    job.secret_values(),
                    stays=True,
                    message=gettext_noop(
                        "AIHC refused the look for the job its creates may have made, to "
                        "stop it: %(error)s. The job stays stopping and is looked for again "
                        "at %(time)s."
                    ),
                    given_up=STOP_LOOKS_REFUSED_GIVEN_UP,
                    pool=job.resource_pool,
                    name=job.name,
                    id=job.public_id,
                )
            return  # throttled, or AIHC not reached: asked again at the next sync
        except BackendError:
            return  # the settings cannot be used now: asked again at the next sync
        except spec_module.SpecError:
            return
        if not found:
            self._move(
                job,
                JobStatus.STOPPED,
                "Stopped",
                recorded(gettext_noop("Stopped before AIHC created the job.")),
            )
            return
        self._adopt(
            job,
            found,
            message=recorded(
                gettext_noop("AIHC had created job %(id)s; adopted it to stop it."), id=found
            ),
        )
        self.stop(job)  # Stopping stays until AIHC reports the job stopped

    # -- following a job ---------------------------------------------------------------

    def _sync_remote(self, job: Job) -> None:
        config, client = self._setup()
        version = config.version(job.resource_pool)
        # None once the stored spec no longer reads: followed without it (job_spec_or_noted).
        spec = job_spec_or_noted(job=job)
        secrets = job.secret_values()
        try:
            remote = client.get_job(
                pool=job.resource_pool, job_id=job.external_id, queue=job.queue, version=version
            )
        except AihcError as exc:
            # Only AIHC's own word that the job is gone: any other 404 (a gateway, a missing
            # route or pool) is a sync error, retried later, never a verdict on the job.
            if exc.code == "JobNotFound":
                # Gone while being stopped is what the stop asked for; otherwise it was lost.
                stopping = job.status == JobStatus.STOPPING
                gone = recorded(gettext_noop("AIHC no longer has job %(id)s."), id=job.external_id)
                if spec is not None and spec.retention_period and not stopping:
                    # AIHC deletes such a job once it has ended and its retention has passed;
                    # the console, not following it meanwhile (its worker was down), cannot
                    # tell how it ended. Failed, so it is noticed, with the likely cause.
                    gone = recorded(
                        gettext_noop(
                            "AIHC no longer has job %(id)s. It was to be deleted %(period)s "
                            "after it ended: it probably ended and was deleted while the "
                            "console was not following it, so how it ended is unknown."
                        ),
                        id=job.external_id,
                        period=spec.retention_period,
                    )
                self._walk(
                    job,
                    JobStatus.STOPPED if stopping else JobStatus.FAILED,
                    gone,
                    reason="" if stopping else "Lost",
                )
                return
            raise _sync_error(exc, secrets) from None
        self._keep_answered(job, remote, secrets)
        # An events or usage read that gets no answer ends the sync there (raised, as the
        # job read's): AIHC stopped answering, and the worker's round leaves its other jobs
        # for the next one (review 36: the round went on to wait on the next job). Decided:
        # the events are read before the status is applied, as they were, so one that gets
        # no answer leaves the job as it was: a status that ends the job ends its following,
        # and the events saying why would never be copied. The usage read comes last, once
        # the status is saved. Unless it is the job's second such sync in a row
        # (`_unanswered_again`): the status is saved without the events, then the sync raises.
        unanswered: BackendError | None = None
        try:
            self._sync_events(
                job, client, version, spec.framework if spec else job.framework, secrets
            )
        except BackendError as exc:
            if not self._unanswered_again(job):
                raise
            unanswered = exc
        else:
            self._answered(job)
        self._sync_replicas(job, remote["pods"])
        status = remote["status"]
        target = STATUS_MAP.get(status.lower())
        if target is None:
            if (
                status
                and not job.events.filter(reason="UnknownStatus", message__contains=status).exists()
            ):
                job_event(
                    job=job,
                    reason="UnknownStatus",
                    message=recorded(
                        gettext_noop("AIHC reports status “%(status)s”."), status=status
                    ),
                    warning=True,
                )
            # A status the console cannot read changes nothing, but the timeout still holds.
        elif job.status == JobStatus.STOPPING and target in (JobStatus.QUEUED, JobStatus.RUNNING):
            self._stop_again(job, client, config, secrets, status)
        elif target != job.status:
            self._walk(
                job,
                target,
                recorded(gettext_noop("AIHC reports %(status)s."), status=status),
                started=self._began(job, remote),
                resumed=self._ran_again(job, remote),
            )
        if spec is not None:  # its time limit is in the spec it no longer reads
            self._enforce_timeout(job, client, config, spec)
        if unanswered is not None:
            logger.warning(
                "%s: status saved without its events, which got no answer in %d syncs in a row",
                job.public_id,
                UNANSWERED_SYNCS_BEFORE_STATUS,
            )
            raise unanswered
        if job.status == JobStatus.RUNNING:
            self._sample_usage(job, client, version, remote["pods"], secrets, config.key())

    @staticmethod
    def _keep_answered(job: Job, remote: dict[str, Any], secrets: list[str]) -> None:
        """Keeps what AIHC's GetJob says of the job that the console's GetJob answers again:
        its Kubernetes resource's uid and namespace (k8sUID, k8sNamespace; a v2 JobItem has
        neither, and one not answered leaves the one kept) and its BCCL check (enableBcclStatus, enableBcclErrorReason;
        the reason scrubbed of the job's secrets, as AIHC's other words are). Saved only when
        changed: a sync every few seconds writes nothing otherwise."""
        changed: dict[str, str] = {}
        uid = remote["k8sUID"][: Job._meta.get_field("k8s_uid").max_length]
        if uid and uid != job.k8s_uid:
            changed["k8s_uid"] = uid
        namespace = remote["k8sNamespace"][: Job._meta.get_field("k8s_namespace").max_length]
        if namespace and namespace != job.k8s_namespace:
            changed["k8s_namespace"] = namespace
        status = remote["enableBcclStatus"][: Job._meta.get_field("bccl_status").max_length]
        reason = scrub(remote["enableBcclErrorReason"], secrets) if status else ""
        if status and (status, reason) != (job.bccl_status, job.bccl_error_reason):
            changed |= {"bccl_status": status, "bccl_error_reason": reason}
        if changed:
            Job.objects.filter(pk=job.pk).update(**changed)
            for name, value in changed.items():
                setattr(job, name, value)

    def _began(self, job: Job, remote: dict[str, Any]) -> datetime | None:
        """When AIHC says the job began running (v1's runningAt, v2's jobTimeLine), the start
        the console gives it; None when AIHC does not say (then the sync that first sees it
        running, or ended, is its start, as before).

        Decided (qa80): AIHC's own time on the job, which its API documents, not its events,
        whose reasons it does not (the fake's "Running", a training operator's own): a job
        that ran and ended between two syncs gets its start, so its duration and card-hours.
        Never before the job was first sent (AIHC's clock may lag, as its events': they show
        no earlier either) nor after now; a zero time (Go's year 1, the Unix epoch, which an
        API may give for "never") is none."""
        when = aihc_time(remote.get("runningAt") or "")
        if when is None or when.year <= 1970:
            return None
        return min(max(when, self._first_sent(job)), timezone.now())

    @staticmethod
    def _ran_again(job: Job, remote: dict[str, Any]) -> datetime | None:
        """When AIHC says a job back in Queued after its first start (Pending again) ran again:
        the time v2's jobTimeLine gives its latest run, if after its wait began (JobWait), never
        in the future. Its wait ends then, not at the sync that sees it (a sync every few
        seconds, or after the worker was down for hours, which counted as waiting).

        The run is found by the timeline's order, not by its times: AIHC's clock is not ours,
        and one ahead of it stamped the job's first start after the wait began, which then
        ended the wait there, too early (review63). The latest run begins at the first Running
        entry after the timeline's last waiting one (Pending, Queuing...: STATUS_MAP's Queued),
        and only a waiting entry after a Running one is a wait to run again (not the job's
        Created or Pending before its first start). Runs between, of a job that went Pending
        and Running again more than once between two syncs, count as waiting: the console saw
        none of them, and a wait ended late counts too few card-hours, never more than ran.

        None when AIHC does not say, and the wait ends at this sync, as before: v1's runningAt
        is only the first start; and a time not after the wait began is AIHC's clock behind
        ours, which would end the wait before it began."""
        if job.status != JobStatus.QUEUED or job.started_at is None:
            return None
        said = [STATUS_MAP.get(condition.lower()) for condition, _time in remote["timeLine"]]
        waits = [
            index
            for index, status in enumerate(said)
            if status == JobStatus.QUEUED and JobStatus.RUNNING in said[:index]
        ]
        if not waits:
            return None
        ran = next(
            (i for i in range(waits[-1] + 1, len(said)) if said[i] == JobStatus.RUNNING), None
        )
        if ran is None:  # it ended from its wait, or still waits
            return None
        when = aihc_time(remote["timeLine"][ran][1])
        began = (
            JobWait.objects.filter(job_id=job.pk, ended_at=None)
            .values_list("began_at", flat=True)
            .first()
        )
        if when is None or began is None or when <= began:
            return None
        return min(when, timezone.now())

    def sync(self, job: Job) -> None:
        super().sync(job)
        if job.status != JobStatus.RUNNING:  # sampled no more
            self._metrics_read.pop(job.public_id, None)
            for key in [k for k in self._usage_logs if k[0] == job.public_id]:
                del self._usage_logs[key]

    # -- usage -------------------------------------------------------------------------

    def _sample_usage(
        self,
        job: Job,
        client: AihcClient,
        version: str,
        pods: list[dict[str, Any]],
        secrets: list[str],
        account: tuple[Any, ...],
    ) -> None:
        """Reads the GPU, CPU and memory utilisation of the job's running pods, at most once
        per AIHC_METRICS_SECONDS, and appends each point newer than its replica's last sample.
        A read AIHC answers with an error is not worth a failed sync: the page says usage is
        unavailable. One it does not answer says so too, then raises (`got_no_answer`); and
        no usage of the `account`'s jobs is read for AIHC_METRICS_SECONDS after it, each
        page saying why (review39: each round's first job waited on its own usage read and
        ended the round, so with 40 running jobs a job's status was looked at once every 40
        rounds, some 20 minutes, while AIHC answered every job read)."""
        running: dict[str, str] = {}  # pod name -> replica label
        for pod in pods:
            if (pod["phase"] or "").lower() != "running" or not pod["name"]:
                continue
            match = POD_INDEX_RE.search(pod["name"])
            running[pod["name"]] = (
                f"{pod['replicaType'] or 'worker'}-{int(match.group(1)) if match else 0}"
            )
        interval = float(settings.AIHC_METRICS_SECONDS)
        now = time.monotonic()
        last_read = self._metrics_read.get(job.public_id)
        if not running or (last_read is not None and now - last_read < interval):
            return
        with self._lock:
            unanswered_at, unanswered = self._metrics_unanswered.get(account, (-interval, ""))
        if now - unanswered_at < interval:
            self._write_unavailable(job.public_id, unanswered)
            return
        self._metrics_read[job.public_id] = now
        step = max(int(interval), 1)
        end = int(time.time())
        # Back to this process's last read too: a job's syncs may be further apart than
        # USAGE_WINDOW (a slow AIHC synced over several ticks, another platform not
        # answering for 90 s a round), whose points were lost (review 36).
        since_last = 0 if last_read is None else int(min(now - last_read, USAGE_CATCH_UP))
        start = end - max(USAGE_WINDOW, 4 * step, since_last + step)
        read = {}
        try:
            for metric in (GPU_METRIC, CPU_METRIC, MEMORY_METRIC):
                read[metric] = client.job_metrics(
                    pool=job.resource_pool,
                    job_id=job.external_id,
                    metric_type=metric,
                    start=start,
                    end=end,
                    step=step,
                    queue=job.queue,
                    version=version,
                )
        except AihcError as exc:
            error = scrub(str(exc), secrets)
            kind = exc.code or f"HTTP {exc.status}"
            if (job.public_id, kind) not in self._metrics_said:
                self._metrics_said.add((job.public_id, kind))
                logger.warning(
                    "AIHC: usage of job %s (%s) not read: %s; its page says so",
                    job.public_id,
                    job.external_id,
                    scrub(logged_error(exc), secrets),
                )
            self._write_unavailable(job.public_id, error)
            if got_no_answer(exc):
                # (A transport failure's words are the console's own: no job's secret in
                # them, so the other jobs' pages may say them too.)
                with self._lock:
                    self._metrics_unanswered[account] = (time.monotonic(), error)
                raise _sync_error(exc, secrets) from None
            return
        unavailable_file(job.public_id).unlink(missing_ok=True)
        for name, label in running.items():
            gpu = dict(read[GPU_METRIC].get(name, []))
            memory = dict(read[MEMORY_METRIC].get(name, []))
            # Percent as AIHC gives it: not clamped, not rescaled (see the docstring).
            samples = [
                {
                    "t": round(when, 1),
                    "s": step,
                    "gpu": None if when not in gpu else round(gpu[when], 3),
                    "cpu": round(cpu, 3),
                    "mem": round(memory[when], 3),
                }
                for when, cpu in read[CPU_METRIC].get(name, [])
                if when in memory
            ]
            if samples:
                self._append_samples(job.public_id, label, samples)

    def _append_samples(self, public_id: str, label: str, samples: list[dict[str, Any]]) -> None:
        key = (public_id, label)
        if key not in self._usage_logs:
            path = usage_file(public_id, label)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                logger.warning("usage of %s not kept: %s", public_id, exc)
                return
            last = read_utilisation(path, last=1)
            self._usage_logs[key] = (UtilisationLog(path), last[-1]["t"] if last else 0.0)
        log, last_time = self._usage_logs[key]
        for sample in samples:
            if sample["t"] <= last_time:
                continue  # read before: each read overlaps the last
            log.append(sample)
            last_time = sample["t"]
        self._usage_logs[key] = (log, last_time)

    @staticmethod
    def _write_unavailable(public_id: str, error: str) -> None:
        path = unavailable_file(public_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"error": error}))
        except OSError as exc:
            logger.warning("usage of %s not kept: %s", public_id, exc)

    def _stop_again(
        self, job: Job, client: AihcClient, config: Config, secrets: list[str], status: str
    ) -> None:
        """AIHC still runs a job the console is stopping: the stop may never have reached it
        (AIHC gave it no clear answer, or it failed right after a create in flight was
        adopted), so it is sent again, at most once per STOP_RESEND, and logged, not made an
        event each time. Stopping stays until AIHC reports the job ended: the console cannot
        know it stopped, and calling it ended would leave it running on AIHC unwatched. After
        STOP_UNCONFIRMED one warning event says so, for the owner to look on AIHC's side."""
        if (
            timezone.now() - job.updated_at >= STOP_UNCONFIRMED
            and not job.events.filter(
                reason="StopUnconfirmed", created_at__gte=job.updated_at
            ).exists()
        ):
            logger.warning("AIHC still reports %s %s after its stop", job.public_id, status)
            job_event(
                job=job,
                reason="StopUnconfirmed",
                message=recorded(
                    gettext_noop(
                        "AIHC still reports the job %(status)s %(minutes)d minutes after the stop "
                        "was requested. The console keeps sending the stop; look at job %(id)s "
                        "in AIHC: it may still run there."
                    ),
                    status=status,
                    minutes=int(STOP_UNCONFIRMED.total_seconds() // 60),
                    id=job.external_id,
                ),
                warning=True,
            )
        if not self._stop_due(job, since=job.updated_at):
            return
        if self._send_stop(job, client, config, secrets, "sent again") is None:
            logger.info("AIHC still ran %s while it was stopping: stop sent again", job.public_id)

    @staticmethod
    def _send_stop(
        job: Job, client: AihcClient, config: Config, secrets: list[str], why: str
    ) -> AihcError | None:
        """Sends a stop the worker decided; AIHC's error (logged, the stop retried by a later
        sync) if it did not take it, else None."""
        try:
            client.stop_job(
                pool=job.resource_pool,
                job_id=job.external_id,
                queue=job.queue,
                version=config.version(job.resource_pool),
            )
        except AihcError as exc:
            logger.warning(
                "AIHC stop (%s) of %s failed: %s",
                why,
                job.public_id,
                scrub(logged_error(exc), secrets),
            )
            return exc
        return None

    def _close_replicas(self, job: Job) -> None:
        """As every platform's (AIHC removed their pods, or the console stopped the job for
        its timeout), and for a job that ended Stopped by the console's stop: AIHC reports
        its pods Failed after a stop, so instances it reported failed only once the stop was
        requested were stopped; one that had failed before keeps Failed."""
        super()._close_replicas(job)
        if job.status != JobStatus.STOPPED:
            return
        asked = (
            job.events.filter(
                message_source__key__in=[
                    STOP_REQUESTED,
                    STOP_UNANSWERED,
                    STOP_ANSWERED_ERROR,
                    STOP_BEFORE_DELETING_UNANSWERED,
                    STOP_BEFORE_DELETING_ANSWERED_ERROR,
                ]
            )
            .order_by("created_at")
            .values_list("created_at", flat=True)
            .first()
        )
        if asked is not None:
            JobReplica.objects.filter(
                job=job, status=ReplicaStatus.FAILED, finished_at__gte=asked
            ).update(status=ReplicaStatus.STOPPED)

    def _enforce_timeout(
        self, job: Job, client: AihcClient, config: Config, spec: spec_module.JobSpec
    ) -> None:
        """AIHC has no run-time limit, so the console stops jobs that exceed theirs."""

        if job.status != JobStatus.RUNNING or job.started_at is None:
            return
        limit = timedelta(
            seconds=spec.timeout_minutes * getattr(settings, "JOB_MINUTE_SECONDS", 60)
        )
        if timezone.now() - job.started_at < limit or not self._stop_due(job):
            return
        secrets = spec.secret_values()
        error = self._send_stop(job, client, config, secrets, "timed out")
        if error is not None:
            # Said once on the job's page (the resends are logged): it runs past its limit
            # because AIHC did not take the stop, not because the console forgot it.
            if not job.events.filter(reason="TimeoutStopFailed").exists():
                job_event(
                    job=job,
                    reason="TimeoutStopFailed",
                    message=recorded(
                        gettext_noop(
                            "The job ran past its %(minutes)d-minute limit, and AIHC did not "
                            "take the stop (%(error)s). The console sends it again every minute."
                        ),
                        minutes=spec.timeout_minutes,
                        error=scrub(recorded_error(error), secrets),
                    ),
                    warning=True,
                )
            return
        self._move(
            job,
            JobStatus.TIMED_OUT,
            "TimedOut",
            recorded(
                gettext_noop(
                    "The job ran longer than its %(minutes)d-minute limit and was stopped."
                ),
                minutes=spec.timeout_minutes,
            ),
            warning=True,
        )

    def _sync_events(
        self,
        job: Job,
        client: AihcClient,
        version: str,
        framework: str,
        secrets: list[str],
    ) -> None:
        # Before the read: a request recorded after it is not one the events read answered.
        requests = []
        stopping = False
        for reason, at in (
            job.events.filter(reason__in=[*REQUEST_REASONS, "Submitted"])
            .order_by("created_at", "pk")
            .values_list("reason", "created_at")
        ):
            if reason in REQUEST_REASONS or stopping:
                requests.append(at)
            stopping = stopping or reason == "Stopping"
        try:
            events = client.job_events(
                pool=job.resource_pool,
                job_id=job.external_id,
                framework=framework,
                queue=job.queue,
                version=version,
            )
        except AihcError as exc:
            if got_no_answer(exc):
                raise _sync_error(exc, secrets) from None
            logger.info(
                "AIHC events of %s unavailable: %s",
                job.public_id,
                scrub(logged_error(exc), secrets),
            )
            return
        existing = list(
            JobEvent.objects.filter(job=job, reason__startswith="AIHC:").values_list(
                "reason", "message", "created_at"
            )
        )
        copied: dict[tuple[str, str], list[datetime]] = {}
        for reason, message, at in existing:
            copied.setdefault((reason, message), []).append(at)
        # Undated events (a stamp that cannot be read) are told apart by their words alone;
        # events copied before times were read carry their stamp in the message.
        said = {(reason, message) for reason, message, _at in existing}
        # AIHC stamps whole seconds, so an event of the second the job was sent would show
        # before the console's own "Submitting": none shows before the job was first sent.
        sent = self._first_sent(job)
        # Decided (qa80): nor before a request of the console's (sending the job, a stop)
        # recorded in its second before it was read (`requests`). Its time is known to the
        # second only, so listed at that second's start it showed before every console event
        # of the second, a stop AIHC's events answered among them. An event the console read
        # before its request stays before it (it was copied first); the console's own reports
        # of what AIHC did (Submitted, the status AIHC gives) come after a read, so after
        # AIHC's events of their second, as before.
        new: list[tuple[JobEvent, datetime]] = []
        for event in events:
            reason = f"AIHC:{event.get('reason') or 'Event'}"[:64]
            stamp = str(event.get("firstTimestamp") or event.get("lastTimestamp") or "")
            message = scrub(str(event.get("message") or "").strip(), secrets)
            stamped = aihc_time(stamp)
            if (reason, scrub(f"{message} [{stamp}]".strip(), secrets)) in said:
                continue
            if stamped is None:
                if (reason, message) in said:
                    continue
                when = timezone.now()
            else:
                earliest = max(stamped, sent)
                # A whole second's event is copied at a moment of [earliest, its second's end)
                # (at `earliest` when that is past it): the same there is already copied.
                second_end = stamped + timedelta(seconds=0 if stamped.microsecond else 1)
                if any(
                    at == earliest or earliest <= at < second_end
                    for at in copied.get((reason, message), [])
                ):
                    continue
                when = max([earliest, *(at for at in requests if at < second_end)])
            copied.setdefault((reason, message), []).append(when)
            said.add((reason, message))
            kind = EventType.WARNING if str(event.get("type")) == "Warning" else EventType.NORMAL
            new.append((JobEvent(job=job, reason=reason, message=message, type=kind), when))
        self._save_events(new)

    def _sync_replicas(self, job: Job, pods: list[dict[str, Any]]) -> None:
        now = timezone.now()
        for pod in pods:
            match = POD_INDEX_RE.search(pod["name"])
            self._update_replica(
                job,
                pod["replicaType"] or "worker",
                int(match.group(1)) if match else 0,
                status=(pod["phase"] or "pending").lower()[:16],  # AIHC's pod phase, as it is
                started=now,
                now=now,
                restarts=pod["restartCount"],
                node=pod["nodeName"][:128],
            )

    # -- actions -------------------------------------------------------------------

    def stop(self, job: Job, *, message: str = "") -> None:
        """Stops the job on AIHC (`message`: see Backend.stop). A clear refusal (a 4xx other than JobNotFound) raises
        BackendError and leaves the job as it was, with a StopFailed event; a stop AIHC gave
        no clear answer to (no answer, a 5xx, 429) is taken all the same: the job goes Stopping
        and sync sends the stop again (`_stop_again`) while AIHC still reports it running."""
        if job.status in FINAL_STATUSES:
            return
        unanswered: AihcError | None = None
        if job.external_id:
            # One short try: a person's Stop waits on it (review45: the worker's read timeout,
            # 30 s, each job of a Stop selected in turn); no answer is taken all the same, nor
            # one still trickling in when the try's time is up (review 46).
            config, client = self._setup(for_action=True)
            self._keep_stop_reason(job, message)
            try:
                client.stop_job(
                    pool=job.resource_pool,
                    job_id=job.external_id,
                    queue=job.queue,
                    version=config.version(job.resource_pool),
                )
            except AihcError as exc:
                secrets = job.secret_values()
                if exc.code == "JobNotFound":
                    pass  # nothing left to stop
                elif _refused(exc):
                    self._forget_stop_reason(job, message)
                    self._stop_refused(
                        job,
                        exc,
                        secrets,
                        message=gettext_noop("AIHC did not stop the job: %(error)s"),
                    )
                    raise _shown(
                        gettext_noop("AIHC did not stop the job: %(error)s"), exc, secrets
                    ) from None
                else:
                    unanswered = exc
                    logger.warning(
                        "AIHC stop of %s got no clear answer: %s; sync sends it again",
                        job.public_id,
                        scrub(logged_error(exc), secrets),
                    )
        if job.status == JobStatus.STOPPING:
            return  # sync moves it on once AIHC reports it stopped (sending the stop again)
        if unanswered is not None:
            # AIHC may still run (or start) the job: Stopping, until AIHC reports it ended.
            # The error masked, not the text: it keeps its source (_close_replicas).
            if (source_of(message) or {}).get("key") == STOPPED_BEFORE_DELETION:
                said = (STOP_BEFORE_DELETING_ANSWERED_ERROR, STOP_BEFORE_DELETING_UNANSWERED)
            else:
                said = (STOP_ANSWERED_ERROR, STOP_UNANSWERED)
            self._stopping(
                job,
                recorded(
                    said[0] if unanswered.status else said[1],
                    error=scrub(recorded_error(unanswered), job.secret_values()),
                ),
                warning=True,
            )
            return
        if not job.external_id:
            # Kept for the Stopped it ends with once what a create made is found and stopped.
            self._keep_stop_reason(job, message)
        said = recorded(STOP_REQUESTED)
        if not job.external_id and self.create_unsettled(job):
            # A create got no clear answer: what it made is looked for, and stopped there
            # (_finish_stop_in_flight). Until left42 such a Queued job was Stopped.
            target, said = JobStatus.STOPPING, self._stop_looking(job)
        elif job.status == JobStatus.QUEUED or (
            not job.external_id and job.status != JobStatus.SUBMITTING
        ):
            target, said = JobStatus.STOPPED, message or said  # nothing runs yet
        else:
            # Running on AIHC, or a create in flight (stopped when it lands): sync finishes it.
            target = JobStatus.STOPPING
        if not self._move(
            job,
            target,
            "Stopping" if target == JobStatus.STOPPING else "Stopped",
            said,
        ):
            # Lost to the worker (Queued to Running while the stop was out): the job showed
            # Running, stop sent, until the next sync. Stopping; sync ends it.
            self._stopping(job, recorded(STOP_REQUESTED))

    def delete_asks_platform(self, job: Job) -> bool:
        return bool(job.external_id)

    def delete(self, job: Job) -> None:
        """Deletes the job on AIHC, then the usage samples the console kept of it."""
        if job.external_id:
            self._delete_remote(job)
        self.delete_here(job)

    def delete_here(self, job: Job) -> None:
        shutil.rmtree(Path(settings.VAR_DIR) / USAGE_DIR / job.public_id, ignore_errors=True)

    def _delete_remote(self, job: Job) -> None:
        """One short try (AIHC_PAGE_READ_TIMEOUT, given up however its answer comes once
        AIHC_CONNECT_TIMEOUT more have passed: review 46): a person's Delete waits on it, each
        job of a Delete selected in turn (left39: the worker's AIHC_READ_TIMEOUT, 30 s, as a
        Stop's was until review45). A delete AIHC refuses, or does not answer, keeps the job, saying
        so; a Delete again finishes it (AIHC's JobNotFound then, if it had deleted it)."""
        config, client = self._setup(for_action=True)
        try:
            client.delete_job(
                pool=job.resource_pool,
                job_id=job.external_id,
                queue=job.queue,
                version=config.version(job.resource_pool),
            )
        except AihcError as exc:
            if exc.code == "JobNotFound" or exc.status == 404:
                return  # nothing left to delete there
            if _refused(exc):
                raise _shown(
                    gettext_noop("AIHC did not delete the job: %(error)s"), exc, job.secret_values()
                ) from None
            if job.status in (JobStatus.STOPPING, JobStatus.STOPPED):
                # Stopped first (a job not started: jobs.actions.job_delete), or before: said,
                # as the stop goes on (qa112: "The job is kept here" alone, while it was
                # Stopping, the stop unanswered too).
                said = gettext_noop(
                    "AIHC gave the delete no clear answer: %(error)s. The job was stopped before "
                    "deleting and is kept here: delete it again in a moment, which finishes it "
                    "whether AIHC deleted it meanwhile or not."
                )
            else:
                said = gettext_noop(
                    "AIHC gave the delete no clear answer: %(error)s. The job is kept here: "
                    "delete it again in a moment, which finishes it whether AIHC deleted it "
                    "meanwhile or not."
                )
            unclear = _shown(said, exc, job.secret_values())
            # A server error or throttling too, not only no answer: the API's 503 (review 47).
            unclear.try_again = True
            raise unclear from None

    def logs(
        self,
        job: Job,
        replica: str,
        *,
        tail: int | None = None,
        since: datetime | None = None,
        say_gone: bool = False,
    ) -> list[str]:
        """A replica's log lines ("worker-1"), fetched from AIHC on demand."""
        if not job.external_id:
            return []
        # A tail is what the job page and its log panel (polled every 2 s) wait on; the whole
        # log (tail None) is a download a person waits on, holding a web thread meanwhile.
        config, client = self._setup(for_page=tail is not None, for_download=tail is None)
        try:
            return self._pod_log(job, replica, config, client, tail=tail, since=since)
        except NoLog as no_log:
            if say_gone and no_log.gone:
                raise
            return []  # the page's "No output yet."
        finally:
            if tail is None:
                client.close()

    def download_lines(self, job: Job, replica: str) -> Iterable[str]:
        """The replica's whole log, read from AIHC a page (one answer) at a time, following
        its nextMarker (AihcClient.pod_log_pages), each page written to a temporary file as
        it comes (in memory up to DOWNLOAD_SPOOL_BYTES, on disk beyond), then given from it
        a line at a time, masked as logs() masks them: the download holds a page and a line,
        not the log (until left40 it was read as one answer and held whole, three times
        over). Every page is read before the first line is given, so a page AIHC does not
        answer is a BackendError here, not a download cut short. NoLog when AIHC lists no pod
        of it, or its pod is Pending with no lines yet (logs() gives both as no lines)."""
        if not job.external_id:
            raise NoLog
        log = tempfile.SpooledTemporaryFile(max_size=DOWNLOAD_SPOOL_BYTES)  # noqa: SIM115
        try:
            config, client = self._setup(for_download=True)
            try:
                pod = self._replica_pod(job, replica, config, client)
                written = False
                for page in client.pod_log_pages(
                    pool=job.resource_pool,
                    job_id=job.external_id,
                    pod=pod["name"],
                    queue=job.queue,
                    version=config.version(job.resource_pool),
                ):
                    for line in page:
                        log.write(line.encode("utf-8", "replace") + b"\n")
                        written = True
            except AihcError as exc:
                raise _shown(
                    gettext_noop("AIHC did not return the logs: %(error)s"),
                    exc,
                    job.secret_values(),
                ) from None
            finally:
                client.close()
            if not written and pod["phase"].lower() == "pending":
                raise NoLog
        except BaseException:
            log.close()
            raise
        return spooled_lines(log, job.secret_values())

    def check_log(self, job: Job, replica: str) -> None:
        """The replica's pod looked up as a download finds it, its log not read: NoLog when
        AIHC lists none, or lists it Pending (not started)."""
        if not job.external_id:
            raise NoLog
        config, client = self._setup(for_download=True)
        try:
            pod = self._replica_pod(job, replica, config, client)
        except AihcError as exc:
            raise _shown(
                gettext_noop("AIHC did not return the logs: %(error)s"), exc, job.secret_values()
            ) from None
        finally:
            client.close()
        if pod["phase"].lower() == "pending":
            raise NoLog

    def _replica_pod(
        self, job: Job, replica: str, config: Config, client: AihcClient
    ) -> dict[str, Any]:
        """The replica's pod ("worker-1") as AIHC lists it (client.normalise_job); NoLog when
        it lists none: not made yet or, the job stopping or ended, gone."""
        remote = client.get_job(
            pool=job.resource_pool,
            job_id=job.external_id,
            queue=job.queue,
            version=config.version(job.resource_pool),
        )
        role, _sep, index = replica.rpartition("-")
        for pod in remote["pods"]:
            number = POD_INDEX_RE.search(pod["name"])
            if pod["replicaType"] == role and number and number.group(1) == index:
                return pod
        raise NoLog.pod_missing(job)

    def _pod_log(
        self,
        job: Job,
        replica: str,
        config: Config,
        client: AihcClient,
        *,
        tail: int | None,
        since: datetime | None,
    ) -> list[str]:
        """Raises NoLog when AIHC lists no pod of the replica, or its pod is Pending with no
        lines yet."""
        secrets = job.secret_values()
        try:
            pod = self._replica_pod(job, replica, config, client)
            lines = client.pod_logs(
                pool=job.resource_pool,
                job_id=job.external_id,
                pod=pod["name"],
                max_lines=tail,
                start_time=int(since.astimezone(UTC).timestamp()) if since else None,
                queue=job.queue,
                version=config.version(job.resource_pool),
            )
        except AihcError as exc:
            raise _shown(
                gettext_noop("AIHC did not return the logs: %(error)s"), exc, secrets
            ) from None
        if not lines and pod["phase"].lower() == "pending":
            raise NoLog
        # Never read as the runner's own lines (jobs.logs.unmarked).
        return [unmarked(scrub(line, secrets)) for line in lines]


def backend() -> AihcBackend:
    return AihcBackend()
