"""The AIHC-compatible API: AIHC's v1 job OpenAPI, served by the console itself.

A script or SDK written for AIHC (bce-auth-v1 signing, `POST /api/v1/aijobs?resourcePoolId=…`)
pointed at the console's URL creates and manages jobs on the console's pools, the local runner
included, as the owner of the access key it signs with (jobs.api_keys). A job created here is
built and checked by the same code as the wizard's submit (jobs.spec parses the v1 body,
jobs.wizard.pool_refusals asks the pool, jobs.services.jobs_submit applies the review policy
and queues it), so it is the owner's job like any other: its page, alerts and review.

Decisions (README "Scripts and SDKs"):
- Served (v1 REST paths): CreateJob, DescribeJobs, DescribeJob, UpdateJob (priority),
  StopJob, DeleteJob, job and pod events, pod logs, job metrics (local jobs: see
  `pod_metrics`); the resource pool and queue reads, from the pools the wizard offers.
  Anything else answers NotFound. The v2 action API (jobs.api_v2) answers the same through
  the functions below.
- Every answer is JSON. Errors have BCE's shape `{"requestId", "code", "message"}` and the
  request id is also in the `x-bce-request-id` header.
- Messages are in English, or Chinese when the request's Accept-Language asks for it (SDKs
  send none; the web console's language cookie does not apply here).
- A job is found only by its owner's key: anyone else's job, staff included, is JobNotFound
  (404), as the web pages answer 404.
- A pool id neither offered now nor held by any of the owner's jobs is ResourcePoolNotFound
  (404) for the job list and every job action (pool_of_jobs_known), not an empty list; a pool
  no longer offered still lists and reads the owner's jobs in it.
- A job list's filter is applied or refused, never ignored: v1's takes queue (or the Go
  SDK's queueID), orderBy, order and paging, as AIHC's v1 does, and refuses v2's status and
  keyword filters; a queue the pool lacks and none of the owner's jobs is in is
  QueueNotFound (404), in v1 and v2 alike (qa97).
- A log line's stamp is UTC with its Z, as every time the API answers (qa97).
- clientToken (query, as [next] sends it, or body): a create with the same token and the same
  body without it (and pool) from the same user within CLIENT_TOKEN_HOURS answers the first
  job's id instead of making another; the same token with another body is refused, 409
  IdempotentParameterMismatch naming that job (qa105: until then it made a second job, so a
  retry that changed a timestamp label ran twice). After the window, or once that job is
  deleted, the token makes a new job.
- A job the idle cards cannot hold now is queued and waits, as AIHC queues it: a body that
  does not choose (AIHC's never do) makes a local job a queue task of one (or of the group
  size its console.submission.total gives, kept with its concurrency). A body that asks
  for a standalone local job (console.submission.mode "standalone", the console's own key)
  is admitted as the wizard admits one, under the cards lock, or refused with 409
  ResourceInsufficient and the wizard's numbers (sched26): a standalone job starts before
  every queue task, so one let in without its cards would wait, which it must never do.
- A CreateJob body's keys are judged by jobs.spec.unread_fields: one the console reads at
  another place is refused (InvalidParameter, saying where it belongs); one it reads nowhere
  is accepted, as AIHC's Go server accepts it, and named (a warning event on the job, and
  `warnings` beside the answer's result, which AIHC's SDKs ignore). Paths only, no values.
- Statuses are AIHC's names (AIHC_STATUS); `consoleStatus` and `statusReason` add the
  console's own (a job waiting for review is "Pending" with consoleStatus "pending_review").
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import re
import socket
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest, JsonResponse
from django.urls import Resolver404, resolve
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views.decorators.csrf import csrf_exempt

from . import spec as spec_module
from .actions import (
    DELETED_HERE_ONLY,
    ActionError,
    deleted_here_only,
    deletion_left_secret,
    job_delete,
    job_priority_change,
    job_stop,
    stop_looked_for,
)
from .aihc.mapping import fault_tolerance_args, v1_fault_tolerance_args
from .alerts import NO_RECIPIENT
from .api_keys import ApiAuthError, verify_request
from .backends import BackendError, Pool, get_backend
from .backends import local as local_backend
from .backends.base import got_no_answer
from .languages import accepted_language, saved_language
from .locks import user_row_locked
from .logs import LOG_START, LogMarker, job_secrets, log_read, shown_lines
from .models import (
    FINAL_STATUSES,
    DeletedJob,
    EventType,
    Job,
    JobEvent,
    JobReplica,
    JobStatus,
    ReplicaStatus,
)
from .monitoring import (
    UsagePoint,
    UtilisationPoint,
    replica_usage_history,
    replica_utilisation_history,
)
from .plain_secrets import secrets_in_plain_text
from .pools import QueueCounts, queue_counts
from .scheduler import queue_position, queues_held
from .services import FIELDS_NOT_READ, fields_not_read, jobs_submit, signed_with
from .texts import sentence_ended
from .volume_access import hostpath_row_hint

logger = logging.getLogger(__name__)

S = JobStatus
# Console status -> AIHC's job status. AIHC does not publish its full enumeration; these are
# the names its docs and CLIs show, chosen so that the console's own AIHC backend
# (jobs.backends.aihc.STATUS_MAP) reads each one back as the same or the nearest status.
AIHC_STATUS = {
    S.PENDING_REVIEW: "Pending",
    S.QUEUED: "Pending",
    S.SUBMITTING: "Created",
    S.RUNNING: "Running",
    S.STOPPING: "Terminating",
    S.SUCCEEDED: "Succeeded",
    S.FAILED: "Failed",
    S.STOPPED: "ManualTermination",
    S.TIMED_OUT: "Failed",
    S.SUBMIT_FAILED: "Failed",
    S.REJECTED: "Failed",
}
CLIENT_TOKEN_HOURS = 24
# The largest body left unread by a refusal that is read to its end so the client's
# connection stays usable (_drain_unread_body): four times Django's 2.5 MB limit.
UNREAD_BODY_DRAINED_MAX = 10 * 1024 * 1024
# The longest the API reads a body it refused unread (gunicorn's own drain waits as long).
UNREAD_BODY_DRAIN_SECONDS = 5.0
DEFAULT_PAGE_SIZE = 10  # AIHC's default
MAX_PAGE_SIZE = 1000
DEFAULT_LOG_LINES = 1000
MAX_LOG_LINES = 10000
# Job metrics: what the local runner samples of each replica (jobs.shim), by metricType.
# CpuUsage and MemoryUsage are AIHC's names (its DescribeJobMetrics page lists them with its
# GPU, disk and network types); AIHC calls them utilisation, but a replica of a role without
# limits has nothing to divide by, so these are the amounts the job page shows: cores, bytes.
METRIC_TYPES: dict[str, Callable[[UsagePoint], float | int]] = {
    "CpuUsage": lambda point: point.cpu,
    "MemoryUsage": lambda point: point.memory,
    "TmpUsage": lambda point: point.tmp,
}
# An AIHC job's metrics are AIHC's own, under AIHC's names and meaning: utilisations in
# percent (jobs.backends.aihc: the scale is a decision, uncertain), not cores and bytes.
AIHC_METRIC_TYPES: dict[str, Callable[[UtilisationPoint], float | None]] = {
    "GpuUsage": lambda point: point.gpu,
    "CpuUsage": lambda point: point.cpu,
    "MemoryUsage": lambda point: point.memory,
}
DEFAULT_TIME_STEP = 300  # AIHC's default: 5 minutes
MAX_TIME_STEP = 30 * 24 * 3600
DURATION = re.compile(r"(\d{1,8})([smhd]?)")
DURATION_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 24 * 3600}
LATEST_TIME = 10**11  # unix seconds: past any date a job runs on, before float trouble
# A CreateJob body nests six levels at most (the body, console, roles, a role, resources, one). Python's
# JSON reader takes up to ~1000, but the code after it walks a body recursively (v2's mapping
# copies it, masking rewrites it), and a few hundred levels there ran out of stack: a server
# error. So a body nested deeper than this is refused as it is read (API and import alike).
MAX_JSON_DEPTH = 32


class ApiError(ApiAuthError):
    pass


class MethodRefused(ApiError):
    """405 MethodNotAllowed, with the methods that are served (the answer's Allow header,
    which RFC 9110 asks of a 405)."""

    def __init__(self, method: str, allowed: Sequence[str], message: str = ""):
        joined = ", ".join(allowed)
        super().__init__(
            405, "MethodNotAllowed", message or f"{method} is not served here: {joined}."
        )
        self.allowed = joined


def api_language(request: HttpRequest, *, key_owner: Any = None) -> str:
    """The language the API answers in: the one Accept-Language asks for, as a page's
    (jobs.languages). When it asks for none (SDKs send none), the language the signing key's
    owner chose on the console (qa109: a Chinese team's scripts read English), once the key is
    known; English before that (a refused signature) and for an owner who chose none."""
    asked = accepted_language(request.headers.get("Accept-Language", ""))
    if asked is None and key_owner is not None:
        asked = saved_language(user=key_owner)
    return asked or "en"


def _answer(data: dict[str, Any], *, status: int = 200, request_id: str) -> JsonResponse:
    response = JsonResponse(
        {"requestId": request_id, **data}, status=status, json_dumps_params={"ensure_ascii": False}
    )
    response["x-bce-request-id"] = request_id
    response["Cache-Control"] = "no-store"
    return response


def api_view(*methods: str) -> Callable[..., Any]:
    """A signed API view: the method, then the signature, then the view; every refusal in
    BCE's error shape. Not CSRF-checked: no cookie authenticates these requests, only the
    signature, which a cross-site page cannot make. A path that answers GET answers HEAD the
    same way (a monitor's or a link checker's request; the server sends no body), signed as
    HEAD: the view reads it as a GET, so a HEAD never changes anything."""
    if "GET" in methods:
        methods = (*methods, "HEAD")

    def decorate(view: Callable[..., dict[str, Any]]) -> Callable[..., JsonResponse]:
        @csrf_exempt
        @wraps(view)
        def wrapped(request: HttpRequest, **kwargs: Any) -> JsonResponse:
            request_id = str(uuid.uuid4())
            with translation.override(api_language(request)):
                try:
                    if request.method not in methods:
                        raise MethodRefused(request.method or "", methods)
                    try:
                        key = verify_request(request)
                        # Ends with the override above, which restores the language before it.
                        language = api_language(request, key_owner=key.owner)
                        translation.activate(language)
                        # Kept for a 500 (server_error_answer), answered after this override
                        # has ended, when the key's owner is no longer known.
                        request.api_language = language  # type: ignore[attr-defined]
                        with signed_with(key.access_key_id):
                            result = view(request, key.owner, **kwargs)
                    except RequestDataTooBig:
                        raise ApiError(413, "EntityTooLarge", too_large_message()) from None
                except ApiAuthError as exc:
                    response = _answer(
                        {"code": exc.code, "message": exc.message, **exc.extensions},
                        status=exc.status,
                        request_id=request_id,
                    )
                    if isinstance(exc, MethodRefused):
                        response["Allow"] = exc.allowed
                else:
                    response = _answer(result, request_id=request_id)
            _drain_unread_body(request)
            return response

        return wrapped

    return decorate


def too_large_message() -> str:
    """EntityTooLarge's message, naming the limit (qa97: "too large" said not by how much)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return (
        f"The body is larger than the {limit:,} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE) the "
        "console reads; a CreateJob body is a few KB."
    )


def _drain_unread_body(request: HttpRequest) -> None:
    """Reads the rest of a body the API did not read (a refusal before it: a wrong key, 413
    EntityTooLarge), up to UNREAD_BODY_DRAINED_MAX, and drops it. Found in QA (round 33):
    gunicorn drains at most 64 KB of a body left unread and then closes the connection
    although its answer said keep-alive, so a client that reuses connections saw its next
    request fail with "Server disconnected". A larger body is left to gunicorn (reading it
    would only hold this thread for a client that sent far too much)."""
    if getattr(request, "_body", None) is not None:
        return  # read by the view (Django keeps it): nothing left on the connection
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return
    if not 0 < length <= UNREAD_BODY_DRAINED_MAX:
        return
    # Found in review 25: a client sending its body slowly (a byte a second: 10 MB in 116
    # days) held this server thread as long as it went on, and needed no valid key to. A
    # socket timeout bounds each wait for data, not the whole; past UNREAD_BODY_DRAIN_SECONDS
    # the socket's reading side is shut instead, which ends the read at once: the answer is
    # still sent, and the connection is closed after it (as after a body over the most).
    sock = request.META.get("gunicorn.socket")
    watchdog = (
        threading.Timer(UNREAD_BODY_DRAIN_SECONDS, _stop_reading, args=(sock,))
        if isinstance(sock, socket.socket)
        else None
    )
    if watchdog is not None:
        watchdog.daemon = True
        watchdog.start()
    try:
        while request.read(64 * 1024):  # an empty read: the body has been read to its end
            pass
    except Exception:  # the client went away, or the read was shut: nothing left to drop
        pass
    finally:
        if watchdog is not None:
            watchdog.cancel()


def _stop_reading(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # closed meanwhile
        sock.shutdown(socket.SHUT_RD)


def bad_request_answer(request: HttpRequest, exception: Exception | None) -> JsonResponse:
    """What a call of the API that Django refused before its view ran gets (jobs.http.
    bad_request, the 400 handler): BCE's error shape, as the API's own refusals. A host
    ALLOWED_HOSTS does not list is named, with the setting, as the 400_host page names them
    (the host as sent, cut at 255 characters; JSON escapes it); anything else Django refuses
    at that stage (too many query or form fields) is a malformed request. The language is
    the one the API answers in (Accept-Language)."""
    request_id = str(uuid.uuid4())
    with translation.override(api_language(request)):
        if isinstance(exception, DisallowedHost):
            host = request.META.get("HTTP_HOST", "")[:255]
            code = "InvalidHost"
            message = _(
                "The console does not answer requests sent to host “%(host)s”: it answers only "
                "the names and addresses its administrator listed in ALLOWED_HOSTS. Use the "
                "console's address (its SITE_URL), or ask the administrator to add this one to "
                "ALLOWED_HOSTS."
            ) % {"host": host}
        else:
            code = "InvalidHTTPRequest"
            message = _(
                "The request cannot be read: it has too many parameters or fields, or is malformed."
            )
    return _answer({"code": code, "message": message}, status=400, request_id=request_id)


def database_unreachable_answer(request: HttpRequest) -> JsonResponse:
    """What a call of the API gets while the database cannot be reached (jobs.http.
    DatabaseUnreachableMiddleware): 503 ServiceUnavailable in BCE's error shape, its message in
    the language the API answers in (Accept-Language), as its other errors."""
    with translation.override(api_language(request)):
        message = _("The console cannot reach its database right now; try again later.")
    return _answer(
        {"code": "ServiceUnavailable", "message": message},
        status=503,
        request_id=str(uuid.uuid4()),
    )


def database_write_refused_answer(
    request: HttpRequest, *, reason: str, seconds: int = 0
) -> JsonResponse:
    """What a call of the API gets when its database refused to write (jobs.http.
    database_busy_response, database_disk_full_response): 503 ServiceUnavailable, which a
    script retries; `reason` "busy" (SQLite held by another process past `seconds`) or "full"
    (the database's disk)."""
    with translation.override(api_language(request)):
        if reason == "busy":
            message = _(
                "The console's database was held by another process for over %(seconds)d s, "
                "so this request could not be finished; send it again in a moment. A create "
                "sent again with the same clientToken makes no second job."
            ) % {"seconds": seconds}
        else:
            message = _(
                "The disk of the console's database is full, so this request could not be "
                "saved; send it again once an administrator has freed space. A create sent "
                "again with the same clientToken makes no second job."
            )
    return _answer(
        {"code": "ServiceUnavailable", "message": message},
        status=503,
        request_id=str(uuid.uuid4()),
    )


def server_error_answer(request: HttpRequest) -> JsonResponse:
    """What a call of the API gets when the console failed in a way it did not expect (jobs.
    http.server_error, the 500 handler): BCE's error shape, 500 `InternalError`, which Baidu's
    SDK retries as it retries AIHC's. The request id is logged, beside the traceback Django
    logged, for whoever reports it."""
    request_id = str(uuid.uuid4())
    logger.error(
        "API request %s (%s %s) answered 500 InternalError",
        request_id,
        request.method,
        request.path,
    )
    # The language api_view chose once the key was known (its owner's), else the request's.
    language = getattr(request, "api_language", None) or api_language(request)
    with translation.override(language):
        message = _(
            "The console met an error it did not expect, recorded in its log with this "
            "request's requestId. A create sent again with the same clientToken makes no "
            "second job; try again later."
        )
    return _answer({"code": "InternalError", "message": message}, status=500, request_id=request_id)


# -- shapes ---------------------------------------------------------------------------


def _time(moment: datetime | None) -> str:
    if moment is None:
        return ""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_name(job: Job, label: str) -> str:
    """AIHC names pods `<job name>-<role>-<index>` (its MASTER_ADDR convention)."""
    return f"{job.name}-{label}"


def _pods(job: Job) -> list[dict[str, Any]]:
    pods = []
    for replica in job.replicas.all():
        label = f"{replica.role}-{replica.index}"
        known = replica.status in ReplicaStatus.values
        phase = ReplicaStatus(replica.status).name.capitalize() if known else "Unknown"
        pods.append(
            {
                "objectMeta": {
                    "name": pod_name(job, label),
                    "creationTimestamp": _time(replica.started_at),
                },
                "podStatus": {"podPhase": phase, "status": phase},
                "replicaType": replica.role,
                "restartCount": replica.restarts,
                "nodeName": replica.node,
                "finishedAt": _time(replica.finished_at),
                "reason": "",
                # The pod as Kubernetes names it, for its admin (objectMeta's is AIHC's).
                **({"console": {"podName": replica.pod_name}} if replica.pod_name else {}),
            }
        )
    return pods


def group_fields(job: Job) -> dict[str, Any]:
    """The console's own keys of a job's answer (v1 and v2) that say which task of a queue
    group of 2 or more it is, as a sweep script maps its job IDs to its tasks (qa91: every
    task answered the same name): the group's id (the job list's `?group=`), the task's
    place from 1 as the list's "3/8" and the alert webhook's groupTaskIndex say it (one key,
    one meaning in every JSON the console sends; its AIHC_GROUP_TASK_INDEX is one less), and
    the group's total. A sweep's task run again (Job.task_place) answers the task it runs
    as, with groupTaskAgain: true, as its alert webhook does (qa93), and its own group's id.
    None for any other job,
    whose answer stays AIHC's own (a body of AIHC's never asks for a group: a local job it
    makes is a queue task of one). Reads the group (select it with the job)."""
    place = job.task_place
    if place is None or place.total < 2:
        return {}
    fields: dict[str, Any] = {
        "groupId": job.group_id,
        "groupTaskIndex": place.index,
        "groupTaskTotal": place.total,
    }
    if place.again:
        fields["groupTaskAgain"] = True
    return fields


def created_fields(job: Job) -> dict[str, Any]:
    """What a create answers beside AIHC's jobId and jobName when it made a queue group of 2
    or more: every task's job ID, in the group's order (`jobIds[i]` runs with
    AIHC_GROUP_TASK_INDEX i; jobId is the first), and the group's id. Those deleted since (a
    create sent again with its clientToken) are left out."""
    if job.group_id is None or job.group.total < 2:
        return {}
    tasks = Job.objects.filter(group_id=job.group_id).order_by("group_index")
    return {"jobIds": list(tasks.values_list("public_id", flat=True)), "groupId": job.group_id}


def placement_fields(job: Job) -> dict[str, Any]:
    """AIHC's GetJob keys of where and when a job was placed (qa105: a script reading
    job["scheduledAt"] got a KeyError from this console only), with what the console knows:
    `scheduledAt` is when the job started on its pool, which the console records as one
    moment with its start (runningAt); `queueingSequence` its place in the local pool's line
    as its page shows it (queue_position), null when it is not waiting there (review56: AIHC's
    Go type is *int with omitempty, which its CLI shows null; 0 read as a place in a line);
    `k8sNamespace` the namespace of a Kubernetes pool's job and
    `k8sUID` its resource's uid as the API server last answered it ("" before its create),
    or an AIHC job's both as AIHC's GetJob last answered them (fix128, fix141; "" until
    then, and with v2, whose JobItem has neither); the namespace "" on the local runner."""
    return {
        "scheduledAt": _time(job.started_at),
        "queueingSequence": queue_position(job) or None,
        "k8sUID": job.k8s_uid,
        "k8sNamespace": job.resource_namespace,
    }


def bccl_fields(job: Job, body: Mapping[str, Any]) -> dict[str, str]:
    """AIHC's BCCL check result keys (v1 GetJob, v2 JobItem). An AIHC job's are AIHC's own,
    as its GetJob last answered them to the worker (Job.bccl_status: success, failed or
    unknown, and its error reason; fix128: they were the placeholders below). Any other job,
    or an AIHC job not read yet: `enableBcclStatus` "unknown" with BCCL on, "" with it off
    (decided, review56: the reference gives those three for a check that ran; a job with BCCL
    off has none, and a Go or Python client reading an absent string gets "" too); the
    console learns no result of BCCL's injection itself, so no error reason."""
    if job.bccl_status:
        return {"enableBcclStatus": job.bccl_status, "enableBcclErrorReason": job.bccl_error_reason}
    return {
        "enableBcclStatus": "unknown" if body.get("enableBccl") else "",
        "enableBcclErrorReason": "",
    }


def job_view(job: Job, *, detail: bool) -> dict[str, Any]:
    """A job as AIHC's v1 DescribeJob/DescribeJobs show it (secret values masked), with the
    console's own consoleStatus, statusReason and, for a queue group's task, group_fields."""
    view: dict[str, Any] = {
        "jobId": job.public_id,
        "name": job.name,
        "resourcePoolId": job.resource_pool,
        "queue": job.queue,
        "jobFramework": job.framework,
        "priority": job.priority,
        "status": AIHC_STATUS.get(job.status, "Unknown"),
        "consoleStatus": job.status,
        "statusReason": job.status_reason_shown,
        "createdAt": _time(job.created_at),
        "runningAt": _time(job.started_at),
        "finishedAt": _time(job.finished_at),
        **placement_fields(job),
        **group_fields(job),
    }
    try:
        spec = job.job_spec()
    except spec_module.SpecError:
        spec, body = None, {}
    else:
        body = spec.to_v1_body(masked=True)
    job_spec = body.get("jobSpec") or {}
    for key in ("command", "image", "replicas", "resources", "envs"):
        if key in job_spec:
            view[key] = job_spec[key]
    if spec is not None and spec_module.roles_lost_by_v1_body(spec) is not None:
        # AIHC's flat replicas and resources (the v1 request's, kept for the scripts that
        # read them) cannot say roles that differ: the roles are answered as v1 CreateJob
        # takes them, so the answer read back or re-sent makes the same job (qa78: a
        # CPU-only launcher with two 1-card workers read as 3 one-card instances).
        view["console"] = {"roles": spec.to_document(masked=True)["console"]["roles"]}
    if body:
        # AIHC's GetJob lists its yes/no flags and lists whether set or not (seed 001's
        # example, sent without labels or enableBccl, is described with them off and empty);
        # the stored body leaves out what is at its default, so they are answered here: a
        # script reading job["enableBccl"] got a KeyError from this console only.
        view["enableRDMA"] = bool(job_spec.get("enableRDMA"))
        # A local job's network is the pool's (LOCAL_JOB_NETWORK), whatever its request says,
        # as the job ran with it (a later change of the setting aside).
        view["hostNetwork"] = bool(job_spec.get("hostNetwork")) or (
            job.resource_pool == local_backend.POOL_ID and local_backend.job_on_host_network(job)
        )
        view["privileged"] = bool(job_spec.get("privileged"))
        view["labels"] = body.get("labels") or []
        view["datasources"] = body.get("datasources") or []
        view["enableFaultTolerance"] = bool(body.get("faultTolerance"))
        view["enableBccl"] = bool(body.get("enableBccl"))
        view.update(bccl_fields(job, body))
        # AIHC's GetJob answers the fault tolerance settings in both its forms: the log
        # patterns as a list and the flag string v2 and AIHC's Go SDK send (qa105).
        config = body.get("faultToleranceConfig") or {}
        view["customFaultTolerancePattern"] = list(config.get("customFaultTolerancePattern") or [])
        view["faultToleranceArgs"] = fault_tolerance_args(config) if config else ""
    if "faultToleranceConfig" in body:
        view["faultToleranceConfig"] = body["faultToleranceConfig"]
    if detail:
        pods = _pods(job)
        view["podList"] = {"listMeta": {"totalItems": len(pods)}, "pods": pods}
    return view


# -- parameters -------------------------------------------------------------------------

# Where a request's parameters are read from: the query string (a QueryDict), or a JSON body.
Params = Mapping[str, Any]


def param_refused(name: str, message: str) -> ApiError:
    """400 InvalidParameter of one request parameter (in the query, or a v2 action's body),
    with `errors` naming it as invalid_fields names a body's fields, so a script reads every
    InvalidParameter that names a field the same way; the item's message is the whole
    message, which starts with the parameter's name."""
    return ApiError(
        400,
        "InvalidParameter",
        message,
        extensions={"errors": [{"field": name, "message": message}]},
    )


def text_param(params: Params, name: str) -> str:
    """A parameter as text ("" when absent): a string, or a number as JSON sends one."""
    value = params.get(name)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value).strip()
    raise param_refused(name, f"{name} must be a string or a number.")


def required_param(params: Params, name: str) -> str:
    value = text_param(params, name)
    if not value:
        raise param_refused(name, f"{name} is required.")
    return value


def int_param(params: Params, name: str, default: int, high: int) -> int:
    raw = text_param(params, name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= high:
        raise param_refused(name, f"{name} is a whole number from 1 to {high}.")
    return value


def choice_param(params: Params, name: str, choices: Mapping[str, str], default: str) -> str:
    """The meaning (`choices` value) of a parameter given as one of `choices`' names."""
    raw = text_param(params, name) or default
    if raw not in choices:
        raise param_refused(name, f"{name} is one of: {', '.join(choices)}.")
    return choices[raw]


def order_param(params: Params, default: str) -> str:
    """asc or desc, in either case (AIHC's v1 writes them in lower case, v2 in upper)."""
    order = (text_param(params, "order") or default).lower()
    if order not in ("asc", "desc"):
        raise param_refused("order", "order is asc or desc.")
    return order


def time_param(params: Params, name: str) -> float | None:
    """A time in unix seconds (None when absent)."""
    raw = text_param(params, name)
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < LATEST_TIME:  # NaN fails this too
        raise param_refused(name, f"{name} is a time in unix seconds.")
    return value


def duration_param(params: Params, name: str, default: int) -> int:
    """Seconds, given as a whole number of seconds or with a unit (30s, 5m, 1h, 1d)."""
    raw = text_param(params, name)
    if not raw:
        return default
    match = DURATION.fullmatch(raw)
    seconds = int(match[1]) * DURATION_SECONDS[match[2]] if match else 0
    if not 1 <= seconds <= MAX_TIME_STEP:
        raise param_refused(
            name,
            f"{name} is a number of seconds from 1 to {MAX_TIME_STEP}, "
            "or a duration such as 30s, 5m or 1h.",
        )
    return seconds


def _pool_param(request: HttpRequest) -> str:
    return required_param(request.GET, "resourcePoolId")


def page_of[T](items: Sequence[T], page_no: int, page_size: int) -> list[T]:
    start = (page_no - 1) * page_size
    return list(items[start : start + page_size])


# -- what the views do, apart from shaping the answer (jobs.api_v2 shapes it for v2) -----


def owned_job(*, owner: Any, job_id: str, pool: str) -> Job:
    """The owner's job in the pool named; anyone else's is not found, as on the web. When the
    job is not found and the pool is unknown (pool_of_jobs_known), the pool is what is said
    not found: a mistyped pool read as "job not found" looks like a deleted job."""
    # A NUL is never in a job id or a pool name, and PostgreSQL refuses it in a query.
    job = None
    if "\x00" not in job_id and "\x00" not in pool:
        job = Job.objects.filter(public_id=job_id, owner=owner, resource_pool=pool).first()
    if job is None:
        pool_of_jobs_known(owner=owner, pool_id=pool)
        raise ApiError(404, "JobNotFound", job_not_found_message(owner=owner, job_id=job_id))
    return job


def job_not_found_message(*, owner: Any, job_id: str) -> str:
    """JobNotFound's message, saying when the owner's job was deleted and by which key when it
    was (QA 57: a DeleteJob sent again after its answer was lost, or a pipeline's second
    cleanup, read "not found" as a job id it got wrong). The code stays JobNotFound, which a
    script treats as gone."""
    deleted = None
    if "\x00" not in job_id:
        deleted = DeletedJob.objects.filter(public_id=job_id, owner=owner).first()
    if deleted is None:
        return _("Job %(job)s not found.") % {"job": job_id}
    when = _time(deleted.deleted_at)
    if deleted.api_key:
        return _("Job %(job)s not found: it was deleted at %(when)s with API key %(key)s.") % {
            "job": job_id,
            "when": when,
            "key": deleted.api_key,
        }
    return _("Job %(job)s not found: it was deleted at %(when)s.") % {"job": job_id, "when": when}


def pool_of_jobs_known(*, owner: Any, pool_id: str) -> None:
    """Refuses with ResourcePoolNotFound a pool id that is neither offered now nor held by any
    of the owner's jobs. A pool no longer offered (a backend disabled, an AIHC pool retired)
    still holding the owner's jobs is known: those jobs stay listable and readable. Whose jobs
    count is the owner's only, so a pool id is not confirmed by another user's job. AIHC's own
    code for an unknown pool is not published (its fake here and the console's pool reads use
    ResourcePoolNotFound, 404); an empty job list for a mistyped pool read as "no jobs"."""
    if "\x00" not in pool_id and Job.objects.filter(owner=owner, resource_pool=pool_id).exists():
        return
    from .wizard import find_pool, unreachable_pool

    if find_pool(pool_id) is None:
        if unreachable_pool(pool_id) is not None:
            raise pool_not_found(pool_id)
        raise ApiError(
            404,
            "ResourcePoolNotFound",
            _(
                "Resource pool %(pool)s not found: this console offers no pool of that id "
                "and none of your jobs is in one. DescribeResourcePools lists the pools offered."
            )
            % {"pool": pool_id},
        )


def queue_of_jobs_known(*, owner: Any, pool_id: str, queue: str) -> None:
    """Refuses with QueueNotFound a queue that the pool does not have and that holds none of
    the owner's jobs there (a queue since removed from the pool still lists them), as a
    mistyped pool is refused (pool_of_jobs_known): qa97's `queue=nope` and `queue=Default`
    (names are matched exactly, as the pool names them) answered an empty list, read by a
    script as "no jobs in that queue", while DescribeQueue of the same name was 404."""
    from .wizard import find_pool, unreachable_pool

    pool = find_pool(pool_id)
    if pool is not None and queue in pool.queues:
        return
    if Job.objects.filter(owner=owner, resource_pool=pool_id, queue=queue).exists():
        return
    if pool is None and unreachable_pool(pool_id) is not None:
        raise pool_not_found(pool_id)  # its queues cannot be read either
    raise ApiError(
        404,
        "QueueNotFound",
        _(
            "Queue %(queue)s not found in %(pool)s: the pool has no queue of that name and none "
            "of your jobs is in one. DescribeQueues lists the pool's queues; all, or no queue, "
            "lists every queue's jobs."
        )
        % {"queue": queue, "pool": pool_id},
    )


def _own_job(request: HttpRequest, owner: Any, job_id: str) -> Job:
    return owned_job(owner=owner, job_id=job_id, pool=_pool_param(request))


def _submit_key(owner: Any, token: str, pool: str, raw_body: bytes) -> str:
    """The key of a create with a token until qa105: one digest of the token and the body,
    matched still for a job made before the upgrade and retried within the window."""
    digest = hashlib.sha256()
    for part in (str(owner.pk).encode(), token.encode(), pool.encode(), raw_body):
        digest.update(len(part).to_bytes(8, "big") + part)
    return f"api-{digest.hexdigest()}"


def _token_key(owner: Any, token: str, pool: str) -> str:
    """The first part of a create's submit key: its token, owner and pool. A job whose key
    starts with it holds the token, whatever its body (qa105)."""
    digest = hashlib.sha256()
    for part in (str(owner.pk).encode(), token.encode(), pool.encode()):
        digest.update(len(part).to_bytes(8, "big") + part)
    return f"api-{digest.hexdigest()[:32]}-"


def token_submit_key(owner: Any, token: str, pool: str, fingerprint: bytes) -> str:
    """A create's submit key: _token_key, then a digest of its body (body_fingerprint), so a
    retry finds its job by both, and a job made with the token by the first alone."""
    return _token_key(owner, token, pool) + hashlib.sha256(fingerprint).hexdigest()[:32]


CLIENT_TOKEN_REUSED = "IdempotentParameterMismatch"


def client_token_reused(token: str, made: Job) -> ApiError:
    """409 for a create whose token made a job of another body within the window (qa105:
    a retry that changed a timestamp label silently made a second job)."""
    return ApiError(
        409,
        CLIENT_TOKEN_REUSED,
        _(
            "clientToken %(token)s already made job %(job)s within the last %(hours)d hours, "
            "from another body: nothing was created. Send that job's body again to be answered "
            "its id, or use a new clientToken for a new job."
        )
        % {"token": token, "job": made.public_id, "hours": CLIENT_TOKEN_HOURS},
        extensions={"jobId": made.public_id},
    )


def token_made(
    *, owner: Any, token: str, pool_id: str, fingerprint: bytes, sent_as: bytes
) -> Job | None:
    """The job `token` made from this body (`fingerprint`, or `sent_as`: see job_create)
    within CLIENT_TOKEN_HOURS, or None; ApiError 409 when it made one from another body."""
    same_create = Q(submit_key__startswith=token_submit_key(owner, token, pool_id, fingerprint))
    # A job made before qa105 holds the key of its token and body in one digest; before
    # qa97, of the body's bytes as sent.
    same_create |= Q(submit_key__startswith=_submit_key(owner, token, pool_id, fingerprint))
    if sent_as:
        same_create |= Q(submit_key__startswith=_submit_key(owner, token, pool_id, sent_as))
    recent = Job.objects.filter(
        created_at__gte=timezone.now() - timedelta(hours=CLIENT_TOKEN_HOURS)
    ).order_by("id")
    made = recent.filter(same_create).first()
    if made is not None:
        return made
    # The token with another body is refused, not a second job: AIHC documents no token
    # that makes a job per body, and a retry that changed anything (a timestamp label)
    # made a duplicate that ran beside the first (qa105).
    other = recent.filter(submit_key__startswith=_token_key(owner, token, pool_id)).first()
    if other is not None:
        raise client_token_reused(token, other)
    return None


def job_create(
    *,
    owner: Any,
    pool_id: str,
    document: Any,
    token: str,
    fingerprint: bytes,
    sent_as: bytes = b"",
    rename: Callable[[str], str] = str,
    unread: Sequence[str] = (),
    misplaced: Mapping[str, list[str]] | None = None,
) -> Job:
    """A job from a v1 body, checked as the wizard's submit is (jobs.spec, the wizard's own
    rules, the pool's refusals) and submitted by jobs_submit. With a `token`, the same token and
    `fingerprint` (body_fingerprint: the body without its token) from the same user within
    CLIENT_TOKEN_HOURS find the job the first create made; so does `sent_as` (the body's bytes,
    which the match was until qa97), so a create sent before an upgrade to this version and
    retried after it makes no second job. `rename` says a field path as the
    client's body names it;
    `unread`: the body's keys the console reads nowhere (`fields_read`), named on the job;
    `misplaced`: its refusal of keys at the wrong place, said with the body's other errors."""
    misplaced = misplaced or {}

    def refused(errors: dict[str, list[str]]) -> ApiError:
        return invalid_fields(errors, rename, misplaced=misplaced)

    from .wizard import (  # the wizard's own rules
        console_rules,
        find_pool,
        pool_refusals,
        standalone_claim_refusals,
        template_job_rules,
    )
    from .wizard_import import looks_secret, says_which_are_secret  # as the import guesses

    if token:
        # A create sent again answers the job the first one made before anything is checked
        # again (QA 57): what the console refuses may have changed in between (its pool turned
        # off, a volume withdrawn, an upgrade's stricter rule), and a retry refused although
        # its job exists and runs read to a script as a create that failed.
        made = token_made(
            owner=owner, token=token, pool_id=pool_id, fingerprint=fingerprint, sent_as=sent_as
        )
        if made is not None:
            return made
    unread_values: dict[str, list[str]] = {}
    try:
        spec = spec_module.parse_document(document, resource_pool_id=pool_id, json_types=True)
    except spec_module.SpecError as exc:
        if exc.partial is None:  # not an object: nothing read to check the rules on
            raise refused(exc.errors) from None
        # What was read is checked by the rules too, below (read_errors_with_rules).
        spec, unread_values = exc.partial, exc.errors
    # AIHC's body cannot say which envs are secret (console.secretEnvs is the console's own):
    # one named like a secret's is made one, as the import makes it, so a script's HF_TOKEN
    # is not shown back by DescribeJob nor on the job's pages.
    if not says_which_are_secret(document):
        for env in spec.envs:
            if env.value and looks_secret(env.name):
                env.secret = True
    pool = find_pool(pool_id)
    if pool is None and (unread_values or misplaced):  # the body's own errors first
        raise refused(unread_values)
    if pool is None:
        raise pool_not_found(pool_id)
    if pool.backend == "local" and not says_submission_mode(document):
        # AIHC's bodies have no standalone/queue choice: a job is queued, as AIHC queues it
        # (seed 001), so it is stored as a queue task of one. Stored as a standalone job (the
        # spec's default), it would start before every queue task without ever having been
        # admitted against the idle cards (jobs.scheduler's rules). A group's size and
        # concurrency the body gives without a mode are kept (1 and 1 when it gives none).
        spec.submission = dataclasses.replace(spec.submission, mode=spec_module.SUBMIT_QUEUE)
    errors = spec_module.validate(spec)
    if unread_values:
        raise refused(read_errors_with_rules(unread_values, errors, rename))
    # What the pool refuses whatever is idle now (a job asking more than the owner's quota
    # allows at all...); a standalone job's claim on the idle cards is read below, under the
    # cards lock.
    refusals = pool_refusals(spec, pool, owner=owner, idle_cards_now=False)
    rules = [*console_rules(spec).items(), *template_job_rules(spec).items()]
    for path, messages in [*rules, *refusals.items()]:
        errors.setdefault(path, []).extend(messages)
    alerts_said_where_sent(errors, document=document, owner=owner)
    if pool.backend == "local":
        # A row of cloud storage (seed 001's pfs): which volumes to write instead, and how, in
        # the body's JSON (the wizard's mount rows offer the pool's volumes themselves).
        for i, ds in enumerate(spec.datasources):
            if ds.type != "hostpath" and f"datasources[{i}].type" in errors:
                errors[f"datasources[{i}].type"].append(
                    hostpath_row_hint(owner=owner, mount_path=ds.mount_path)
                )
    if errors or misplaced:
        raise refused(errors)
    if token:
        submit_key = token_submit_key(owner, token, pool_id, fingerprint)
        # Past the window the token is free again: the old jobs keep no claim on it.
        Job.objects.filter(
            submit_key__startswith=_token_key(owner, token, pool_id),
            created_at__lt=timezone.now() - timedelta(hours=CLIENT_TOKEN_HOURS),
        ).update(submit_key=None)
    else:
        submit_key = f"api-{uuid.uuid4().hex}"
    with transaction.atomic():
        if token:
            # Looked at again with the owner's row locked (review56): two creates of the same
            # token and different bodies sent at once both found no job above, and both made
            # one. The second now waits for the first's commit, and finds its job here.
            user_row_locked(user_id=owner.pk)
            made = token_made(
                owner=owner, token=token, pool_id=pool_id, fingerprint=fingerprint, sent_as=sent_as
            )
            if made is not None:
                return made
        if pool.backend == "local":
            # A standalone job (console.submission.mode "standalone") must start now: it is
            # admitted as the wizard admits one, its cards read again under the local pool's
            # cards lock, so of two creates racing for the last cards exactly one is made.
            claim = standalone_claim_refusals(spec=spec, owner=owner, submit_key=submit_key)
            if claim:
                raise ApiError(
                    409,
                    STANDALONE_REFUSED,
                    _errors_message(
                        {"submission.mode": [*claim, _(STANDALONE_AS_QUEUE_TASK)]}, rename
                    ),
                )
        created = jobs_submit(
            owner=owner,
            spec=spec,
            submit_key=submit_key,
            backend=pool.backend,
            unread_fields=unread,
        )
    return created[0]


def alerts_said_where_sent(errors: dict[str, list[str]], *, document: Any, owner: Any) -> None:
    """An AIHC body's alertConfig.alertItems with no console.alertChannels is refused there,
    with the JSON that adds a channel, not on console.alertChannels.emails, which the script
    never sent (qa109). AIHC's alertConfig names a monitoring instance and a notify rule
    (instanceId, notifyRuleId), which say who is told there; this console sends its alerts by
    mail and webhook, to the channels its own key lists."""
    console = document.get("console") if isinstance(document, dict) else None
    if isinstance(console, dict) and "alertChannels" in console:
        return  # the body has the channels' key: the message is said on it
    said = _(NO_RECIPIENT)
    if said not in errors.get("alert.emails", []):
        return
    errors["alert.emails"].remove(said)
    if not errors["alert.emails"]:
        del errors["alert.emails"]
    example = {"console": {"alertChannels": {"emails": [owner.email or "name@example.com"]}}}
    errors.setdefault("alertConfig.alertItems", []).append(
        _(
            "These alerts would reach nobody: this console sends them to the email addresses "
            "and webhooks in console.alertChannels, which the body does not have. Add it at "
            'the top of the body, e.g. %(json)s (or "webhooks": [...]), or leave alertConfig out.'
        )
        % {"json": json.dumps(example, ensure_ascii=False)[1:-1]}
    )


# Said after a body's field errors when some values could not be read at all: the checks that
# need a job whose every field reads (pool_refusals, console_rules) are left for then.
POOL_CHECKS_FOLLOW = gettext_noop(
    "More may be said once these are corrected: the checks that need every field read (the "
    "pool's cards, quota and volumes, the alert channels) run then."
)


def overlaps(path: str, other: str) -> bool:
    """Whether two field paths name the same place, or one holds the other."""
    if path == other:
        return True
    inner, outer = (path, other) if len(path) > len(other) else (other, path)
    return outer == "" or inner.startswith((f"{outer}.", f"{outer}["))


def read_errors_with_rules(
    unread_values: dict[str, list[str]],
    rule_errors: dict[str, list[str]],
    rename: Callable[[str], str],
) -> dict[str, list[str]]:
    """A body's values of the wrong type or out of range (parse_document's errors) with the
    job's rules (validate, on what was read) beside them, so one answer names every field it
    can (qa97: a body with an empty name, image and command and replicas 0 was told of the
    replicas alone, then of the rest). A rule's message on a field that could not be read, or
    on a place holding one (said as the body names it), is left out: it would judge a default
    the body did not send. Then POOL_CHECKS_FOLLOW: the pool's checks are not run."""
    errors = {path: list(messages) for path, messages in unread_values.items()}
    places = [rename(path) for path in unread_values]
    for path, messages in rule_errors.items():
        if not any(overlaps(rename(path), place) for place in places):
            errors.setdefault(path, []).extend(messages)
    errors.setdefault("", []).append(_(POOL_CHECKS_FOLLOW))
    return errors


# CreateJob's answer to a standalone local job the pool cannot start now (409, as a state of
# the pool refuses it, not the body: the same body is made once the cards are idle).
STANDALONE_REFUSED = "ResourceInsufficient"
STANDALONE_AS_QUEUE_TASK = gettext_noop(
    'Leave out console.submission, or set its mode to "queue", to queue the job until the '
    "cards are idle."
)


def says_submission_mode(document: Any) -> bool:
    """Whether a CreateJob body chooses standalone or queue (console.submission.mode, the
    console's own key: AIHC's bodies never do)."""
    console = document.get("console") if isinstance(document, dict) else None
    submission = console.get("submission") if isinstance(console, dict) else None
    return isinstance(submission, dict) and submission.get("mode") not in (None, "")


def fields_read(
    document: Any, fields: spec_module.Fields
) -> tuple[list[str], dict[str, list[str]]]:
    """The paths of the body's keys the console reads nowhere (accepted, as AIHC accepts
    them), and a refusal (path -> message, as the body names it) of each key it reads at
    another place (jobs.spec.unread_fields: `jobSpec.datasources` runs no mount, so it is
    refused rather than dropped), said with the body's other errors (invalid_fields)."""
    unread = spec_module.unread_fields(document, fields)
    misplaced = spec_module.misplaced_named(unread.misplaced) if unread.misplaced else {}
    return unread.unknown, misplaced


def fields_warnings(unread: Sequence[str]) -> dict[str, Any]:
    """What a create answers beside its result about the keys it did not read: `warnings`, a
    key AIHC's answers do not have (Baidu's SDKs ignore keys they do not know); none when every
    key was read, so the answer is AIHC's own then. `fields` lists the first FIELDS_LISTED
    paths, and `moreFields` counts the rest (the message counts every one)."""
    if not unread:
        return {}
    message, params = fields_not_read(unread)
    warning = {
        "code": FIELDS_NOT_READ,
        "message": _(message) % params,
        "fields": list(unread[: spec_module.FIELDS_LISTED]),
    }
    if len(unread) > spec_module.FIELDS_LISTED:
        warning["moreFields"] = len(unread) - spec_module.FIELDS_LISTED
    return {"warnings": [warning]}


SECRET_IN_PLAIN_TEXT = "SecretInPlainText"
ALERT_NEVER_SENT = "AlertNeverSent"


def create_warnings(job: Job, unread: Sequence[str], rename: Callable[[str], str]) -> dict:
    """A create's `warnings`: the keys it did not read (fields_warnings), each secret the
    job's command or a plain env value holds as typed (jobs.plain_secrets), on its body's
    path, named, never quoted, and an AIHC job's alert that never comes (the wizard's
    fault_tolerance_alert_unsent: AIHC takes it, so it is said, not refused). None: the
    answer is AIHC's own."""
    from .wizard import fault_tolerance_alert_unsent

    spec = job.job_spec()
    warnings = fields_warnings(unread).get("warnings", [])
    for found in secrets_in_plain_text(spec):
        field = rename(found.field_path())
        warnings.append(
            {"code": SECRET_IN_PLAIN_TEXT, "message": found.api_message(field), "fields": [field]}
        )
    if message := fault_tolerance_alert_unsent(spec, backend=job.backend):
        field = rename("alertConfig.alertItems")
        warnings.append(
            {"code": ALERT_NEVER_SENT, "message": f"{field}: {message}", "fields": [field]}
        )
    return {"warnings": warnings} if warnings else {}


def fault_tolerance_args_read(
    document: Any, *, misplaced: Mapping[str, list[str]] | None = None
) -> Any:
    """A v1 body with `faultToleranceArgs` as the body with that faultToleranceConfig
    (jobs.aihc.mapping.v1_fault_tolerance_args); both at once, or a flag the console does not
    run, is refused, after the keys found at the wrong place (`misplaced`)."""
    if not isinstance(document, dict):
        return document
    try:
        return v1_fault_tolerance_args(document)
    except ValueError as exc:
        raise invalid_fields(
            {"faultToleranceArgs": [sentence_ended(str(exc))]}, misplaced=misplaced
        ) from None


def _fields_said(
    errors: Mapping[str, Sequence[str]], rename: Callable[[str], str] = str
) -> dict[str, list[str]]:
    """The messages per field path as the client's body names it. Several of the spec's paths
    can name one place in the body (a v1 body's jobSpec.resources holds the master's and the
    workers' CPU): their messages are said once, under that path, not once per role. The
    empty path holds what is said of no field."""
    said: dict[str, list[str]] = {}
    for path, messages in errors.items():
        place = said.setdefault(rename(path) if path else "", [])
        place.extend(m for m in map(str, messages) if m not in place)
    return said


# Messages end with a full stop of their own, after which "; " read badly ("…字符。;
# jobSpec.image: …", qa97; "…1001.; name: …", qa101): a Chinese sentence is followed by the
# next directly, an English one after a space. So are a field's own messages (qa109: "…或
# Custom。 “pytorch”…" had a space after the 。).
_SENTENCE_ENDS_CHINESE = ("。", "！", "？", "）")
_SENTENCE_ENDS = (".", "!", "?")


def _joined_parts(parts: Sequence[str]) -> str:
    joined = ""
    for part in parts:
        if joined.endswith(_SENTENCE_ENDS_CHINESE):
            pass
        elif joined:
            joined += " " if joined.endswith(_SENTENCE_ENDS) else "; "
        joined += part
    return joined


def _errors_message(errors: Mapping[str, Sequence[str]], rename: Callable[[str], str] = str) -> str:
    """One part per field path as the client's body names it (_fields_said)."""
    return _joined_parts(
        [
            f"{path}: {_joined_parts(messages)}" if path else _joined_parts(messages)
            for path, messages in _fields_said(errors, rename).items()
        ]
    )


def invalid_fields(
    errors: Mapping[str, Sequence[str]],
    rename: Callable[[str], str] = str,
    *,
    misplaced: Mapping[str, Sequence[str]] | None = None,
) -> ApiError:
    """400 InvalidParameter naming fields: `message` says them all in one text, as AIHC's
    answers do and scripts read, and `errors`, the console's own key (as `warnings`'
    `fields` is), lists each field path as the body names it with its message, so a script
    need not split the text (qa97). The keys found at the wrong place (`misplaced`, paths
    as the body names them) are said first; what is said of no field (the empty path: that
    more follows) only in `message`; a refusal naming no field (a body that is no JSON
    object) has no `errors`, as the README says (qa105: it answered an empty list)."""
    said = _fields_said(misplaced or {})
    for path, messages in _fields_said(errors, rename).items():
        place = said.setdefault(path, [])
        place.extend(m for m in messages if m not in place)
    message = _errors_message(said)
    listed = [
        {"field": path, "message": _joined_parts(messages)}
        for path, messages in said.items()
        if path
    ]
    return ApiError(
        400, "InvalidParameter", message, extensions={"errors": listed} if listed else {}
    )


def jobs_found(
    *,
    owner: Any,
    pool: str,
    queue: str = "",
    order_by: str = "createdAt",
    order: str = "desc",
    status: str = "",
    name_contains: str = "",
    queue_contains: str = "",
) -> QuerySet[Job]:
    """The owner's jobs in a pool, filtered (`status` by AIHC's name) and ordered. An unknown
    pool is refused (pool_of_jobs_known), not answered with no jobs."""
    pool_of_jobs_known(owner=owner, pool_id=pool)
    if any("\x00" in text for text in (pool, queue, name_contains, queue_contains)):
        return Job.objects.none()  # a NUL matches no job, and PostgreSQL refuses it in a query
    if queue and queue != "all":
        queue_of_jobs_known(owner=owner, pool_id=pool, queue=queue)
    # With the local run each job's answer reads (its network as it ran: job_view), the
    # queue group a task's answer names (group_fields), and the owner a waiting job's place
    # in line reads (placement_fields).
    found = Job.objects.filter(owner=owner, resource_pool=pool).select_related(
        "local_run", "group", "owner"
    )
    if queue and queue != "all":
        found = found.filter(queue=queue)
    if status:
        statuses = [c for c, aihc in AIHC_STATUS.items() if aihc.lower() == status.lower()]
        found = found.filter(status__in=statuses)
    if name_contains:
        found = found.filter(name__icontains=name_contains)
    if queue_contains:
        found = found.filter(queue__icontains=queue_contains)
    field = F("created_at" if order_by == "createdAt" else "finished_at")
    ordering = field.desc(nulls_last=True) if order == "desc" else field.asc(nulls_last=True)
    return found.order_by(ordering, "-id" if order == "desc" else "id")


# A stop's warning (beside its result, as a delete's SecretLeftForWorker) when the job's
# platform may still make it from a create that got no clear answer: when it is looked for.
STOP_LOOKED_FOR_LATER = "LookedForLater"


# A stop's warning when the job had ended before it (qa97: the 200 alone read as "stopped").
STOP_ALREADY_ENDED = "AlreadyEnded"


def job_stopped(*, job: Job, owner: Any) -> dict[str, Any]:
    """Stops the job; one that has already finished or is stopping is answered the same way
    (a retried stop is not an error). The answer's `warnings`, as the job page's Stop says
    it, when the job is looked for on its platform later (qa83), or had already ended, with
    its status (AlreadyEnded: nothing was stopped); none otherwise."""
    try:
        stopping = job_stop(job=job, actor=owner)
    except ActionError as exc:
        raise ApiError(409, "Conflict", str(exc)) from None
    if not stopping:
        job.refresh_from_db(fields=["status"])
        if job.status in FINAL_STATUSES:
            message = _(
                "Job %(name)s had already ended (%(status)s) before this stop: nothing was stopped."
            ) % {"name": job.name, "status": AIHC_STATUS.get(job.status, job.status)}
            return {"warnings": [{"code": STOP_ALREADY_ENDED, "message": message}]}
    said = stopping and stop_looked_for(job)
    return {"warnings": [{"code": STOP_LOOKED_FOR_LATER, "message": said}]} if said else {}


SECRET_LEFT_FOR_WORKER = "SecretLeftForWorker"
# A delete's warning when the job was deleted from this console only: its platform, not
# configured here, may still hold it (review68: the page said so, the API's answer nothing).
DELETED_HERE_ONLY_CODE = "DeletedHereOnly"


def job_deleted(*, job: Job, actor: Any = None) -> dict[str, Any]:
    """Deletes the job; the answer's `warnings` (beside its result, which AIHC's SDKs
    ignore) when its Kubernetes Secret was left for the worker to remove, as the job page's
    Delete says it, or when it was deleted here only (DELETED_HERE_ONLY_CODE); none
    otherwise, so the answer is AIHC's own."""
    here_only = deleted_here_only(job)  # read while the job is there to read
    try:
        gone = job_delete(job=job, actor=actor)
    except ActionError as exc:
        cause = exc.__cause__
        if isinstance(cause, BackendError) and (got_no_answer(cause) or cause.try_again):
            # The platform did not answer the delete, or answered with its own failure or
            # throttling (review 47: a 409 still): the job is kept, and the same delete sent
            # again finishes it (a 409 read as a refusal to a script: left39).
            raise ApiError(503, "ServiceUnavailable", str(exc)) from None
        raise ApiError(409, "Conflict", str(exc)) from None
    if gone and here_only:
        message = str(DELETED_HERE_ONLY % {"name": job.name, "platform": here_only})
        return {"warnings": [{"code": DELETED_HERE_ONLY_CODE, "message": message}]}
    if not (gone and deletion_left_secret(public_id=job.public_id)):
        return {}
    message = _(
        "Job %(name)s deleted. Kubernetes did not answer when its Secret (the job's secret env "
        "values) was to be removed: the worker removes it once the cluster answers."
    ) % {"name": job.name}
    return {"warnings": [{"code": SECRET_LEFT_FOR_WORKER, "message": message}]}


def priority_changed(*, job: Job, priority: str, owner: Any) -> None:
    """The job's new priority, while it can still take effect (jobs.actions)."""
    if priority not in spec_module.PRIORITIES:
        raise param_refused("priority", "priority is high, normal or low.")
    try:
        job_priority_change(job=job, priority=priority, actor=owner)
    except ActionError as exc:
        raise ApiError(409, "Conflict", str(exc)) from None


def _event(reason: str, message: str, kind: str, moment: datetime | None) -> dict[str, Any]:
    return {
        "reason": reason,
        "message": message,
        "type": kind,
        "count": 1,
        "firstTimestamp": _time(moment),
        "lastTimestamp": _time(moment),
    }


# (startTime, endTime) of an events request: unix seconds, None on an open side.
Window = tuple[float | None, float | None]
OPEN_WINDOW: Window = (None, None)


def event_window(params: Params) -> Window:
    """The `startTime` and `endTime` the event APIs take (AIHC's DescribeJobEvents and
    DescribePodEvents, the v1 events paths), in unix seconds; either may be left out (an
    endTime of 0 too, as log_filters_refused takes it)."""
    start = time_param(params, "startTime")
    end = time_param(params, "endTime") or None  # 0: an unset number of a Go client
    if start is not None and end is not None and end < start:
        raise param_refused("endTime", "endTime is before startTime.")
    return start, end


def _within(moment: datetime | None, window: Window) -> bool:
    """Whether an event at `moment` falls in the window, both ends included. Decision: by the
    whole second the answer shows (firstTimestamp), so an endTime copied from an event's
    time keeps that event."""
    start, end = window
    if moment is None:
        return start is None and end is None
    second = int(moment.timestamp())
    return (start is None or second >= start) and (end is None or second <= end)


# The most events one answer of the job events API carries (v1's events path,
# DescribeJobEvents). Decided (scale follow-up, session 18b): the newest of the time range, in
# the usual order (oldest first), with `total` still the number of every event in the range.
# A client reading a job's events wants what happened last (why it failed, that it restarted
# again), as the job page shows its newest 200; one that sees total > len(events) reads the
# earlier ones by setting endTime one second before the oldest answered event's
# firstTimestamp (an answer holds whole seconds: _whole_seconds, review 18c). A job restarted for months holds tens of thousands: 10,000 events were a
# 1.6 MB answer, built in memory on each call. AIHC's shape (events, total) has no page to ask
# for, so none is added.
EVENTS_ANSWERED = 1000


def _window_filter(window: Window) -> dict[str, datetime]:
    """The window as bounds on a time column, as `_within` counts a moment: by its whole
    second, both ends included (a second from ceil(startTime), before floor(endTime) + 1)."""
    start, end = window
    bounds = {}
    if start is not None:
        bounds["created_at__gte"] = datetime.fromtimestamp(math.ceil(start), UTC)
    if end is not None:
        bounds["created_at__lt"] = datetime.fromtimestamp(math.floor(end) + 1, UTC)
    return bounds


def _whole_seconds(newest: list[JobEvent]) -> list[JobEvent]:
    """Of the newest EVENTS_ANSWERED + 1 events (newest first), the newest EVENTS_ANSWERED
    without the oldest second's when the cut falls inside that second, so an answer holds
    whole seconds; the newest second's newest EVENTS_ANSWERED when it alone holds more.

    Decided (review 18c): a client reads the earlier events with endTime one second before
    the oldest answered, and gets each event once. With the cut inside a second it had to
    ask for that second again (an answer has no event ids: a repeated event and one that
    happened twice in a second could not be told apart), and a second holding more than
    EVENTS_ANSWERED answered the same events for ever."""
    answered = newest[:EVENTS_ANSWERED]
    if len(newest) <= EVENTS_ANSWERED:
        return answered
    cut = int(newest[EVENTS_ANSWERED].created_at.timestamp())
    whole = [event for event in answered if int(event.created_at.timestamp()) != cut]
    return whole or answered


def event_marker(params: Params) -> int | None:
    """The events APIs' `marker`: the `nextMarker` of an earlier answer (None when absent;
    empty and 0 too, as the other unset values of a Go client)."""
    raw = text_param(params, "marker")
    if raw in ("", "0"):
        return None
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise param_refused("marker", "marker is the nextMarker of an earlier answer.")
    return int(raw)


def job_events_answer(
    *, job: Job, window: Window = OPEN_WINDOW, marker: int | None = None
) -> dict[str, Any]:
    """`events`: the job's newest events in the window, at most EVENTS_ANSWERED, of whole
    seconds (_whole_seconds), oldest first; `total`: how many the window holds. One query,
    and a count only when there are more. With `marker` (QA 57), the first EVENTS_ANSWERED
    recorded after the event it names instead, so a script polling for new events gets each
    once: a time cannot say it (a second holds several events, and one asked for again is
    answered again). `nextMarker` names the last event answered (the marker given when none
    is new): the event's row id, which only grows."""
    found = job.events.filter(**_window_filter(window))
    if marker is not None:
        after = list(found.filter(id__gt=marker).order_by("id")[: EVENTS_ANSWERED + 1])
        answered = after[:EVENTS_ANSWERED]
        total = len(after) if len(after) <= EVENTS_ANSWERED else found.filter(id__gt=marker).count()
        following = str(answered[-1].id) if answered else str(marker)
    else:
        newest = list(found.order_by("-created_at", "-id")[: EVENTS_ANSWERED + 1])
        total = len(newest) if len(newest) <= EVENTS_ANSWERED else found.count()
        answered = list(reversed(_whole_seconds(newest)))
        latest = job.events.order_by("-id").values_list("id", flat=True).first()
        following = str(max((e.id for e in answered), default=latest or 0))
    events = [
        _event(event.reason, event.message_shown, event.type, event.created_at)
        for event in answered
    ]
    return {"events": events, "total": total, "nextMarker": following}


def job_replica(job: Job, pod: str) -> JobReplica:
    """One pod of the job, by AIHC's pod name or the console's `<role>-<index>`."""
    replicas = {f"{r.role}-{r.index}": r for r in job.replicas.all()}
    label = pod if pod in replicas else pod.removeprefix(f"{job.name}-")
    if label not in replicas:
        raise ApiError(404, "PodNotFound", _("Pod %(pod)s not found.") % {"pod": pod})
    return replicas[label]


def pod_event_views(replica: JobReplica, window: Window = OPEN_WINDOW) -> list[dict[str, Any]]:
    """A pod's events: what the console records of the pod itself, its start (and node) and
    its end (status, and the exit code or the reason it was ended). The job's events (stop
    requests, restarts, reviews) are the job events API's. At most two, from the pod's own
    row: no bound is needed (EVENTS_ANSWERED is the job events')."""
    events = []
    if replica.started_at is not None and _within(replica.started_at, window):
        started = (
            _("Started on node %(node)s.") % {"node": replica.node}
            if replica.node
            else _("Started.")
        )
        events.append(_event("Started", started, EventType.NORMAL, replica.started_at))
    if replica.finished_at is not None and _within(replica.finished_at, window):
        known = replica.status in ReplicaStatus.values
        reason = ReplicaStatus(replica.status).name.capitalize() if known else "Unknown"
        message = replica.reason_shown
        if not message and replica.exit_code is not None:
            message = _("Exited with code %(code)s.") % {"code": replica.exit_code}
        kind = EventType.NORMAL if replica.status == ReplicaStatus.SUCCEEDED else EventType.WARNING
        events.append(_event(reason, message, kind, replica.finished_at))
    return events


def job_node_names(job: Job) -> list[str]:
    """The nodes the job's pods run or ran on, each once, in the order of its pods (the local
    runner's is this machine's name); a pod not placed yet has none."""
    return list(dict.fromkeys(r.node for r in job.replicas.all() if r.node))


def log_filters_refused(params: Params, names: Sequence[str]) -> None:
    """A log request filtering by what the console cannot filter on is refused rather than
    answered unfiltered. Decision: the SDKs offer `keywords`, a time range and paging
    (`marker`, `chunkSize`), and an answer that ignored them would read to a script as the
    lines it asked for. `startTime` is served (pod_log_lines); `endTime` is not, as the
    backends read a log from a time on, not up to one. Absent, empty and 0 (an unset number of a Go client) are not filters;
    `chunkSize` 1 is what the console does anyway (one line per item)."""
    for name in names:
        raw = text_param(params, name)
        if raw in ("", "0") or (name == "chunkSize" and raw == "1"):
            continue
        raise param_refused(
            name,
            f"{name} is not served: this console answers a pod's last maxLines lines, from "
            "startTime on when given, without keywords, endTime or paging (search a log on "
            "the job's page).",
        )


def pod_log_lines(*, job: Job, pod: str, params: Params) -> tuple[list[str], str]:
    """One pod's log lines and the marker of where they end (`nextMarker`): the last
    `maxLines` lines, of those written from `startTime` on (unix seconds, as the backends'
    `since`) when it is given, or with `marker` (a local job's: jobs.logs.log_read) the first
    `maxLines` after it; secrets masked as on the job page, each stamp in UTC with its Z, as
    every time the API answers (decided, qa97: AIHC's log lines are its containers' output,
    with no stamp of AIHC's to follow; in TIME_ZONE without an offset they read as UTC). A
    job of another platform has no marker ("")."""
    max_lines = int_param(params, "maxLines", DEFAULT_LOG_LINES, MAX_LOG_LINES)
    start = time_param(params, "startTime")
    since = datetime.fromtimestamp(start, UTC) if start is not None else None
    marker_text = text_param(params, "marker")
    if marker_text == "0":
        marker_text = ""  # an unset value of a Go client, as log_filters_refused takes it
    marker = None
    if marker_text:
        marker = LogMarker.parse(marker_text)
        if marker is None:
            raise param_refused(
                "marker",
                f"marker is the nextMarker of an earlier answer, or {LOG_START} for the log's "
                "start.",
            )
        if since is not None:
            raise param_refused("marker", "Give marker or startTime, not both: marker says where.")
    replica = job_replica(job, pod)
    replica_name = f"{replica.role}-{replica.index}"
    if job.backend != "local":
        if marker_text:
            raise param_refused(
                "marker",
                "marker is served for jobs of the local runner: this job's log comes from its "
                "platform, read as its last maxLines lines, from startTime on when given.",
            )
        try:
            lines = get_backend(job.backend).logs(job, replica_name, tail=max_lines, since=since)
        except BackendError as exc:
            raise ApiError(503, "ServiceUnavailable", exc.message) from None
        return shown_lines(lines, secrets=job_secrets(job), utc=True), ""
    try:
        path = get_backend(job.backend).log_file(job, replica_name)
    except BackendError as exc:
        raise ApiError(503, "ServiceUnavailable", exc.message) from None
    if path is None:
        return [], marker_text or LOG_START
    lines, following = log_read(path, count=max_lines, marker=marker, since=since)
    return shown_lines(lines, secrets=job_secrets(job), utc=True), str(following)


def pod_metrics(*, job: Job, params: Params) -> list[dict[str, Any]]:
    """A job's metrics as AIHC's podMetrics: one entry per pod, named as its pods are, with
    `{time, value}` points of `metricType` from `startTime` to `endTime` (unix seconds; open
    when absent), one per `timeStep` that has samples. The local runner samples its replicas,
    and the worker a Kubernetes job's pods (from metrics-server: CPU cores and memory bytes)
    and an AIHC job's (from AIHC's job metrics API: GPU, CPU and memory utilisation in
    percent, under AIHC's names; GpuUsage is known for AIHC jobs only). /tmp of a Kubernetes
    or AIHC job is NotSupported, rather than an empty answer that would read as none used."""
    metric_type = required_param(params, "metricType")
    on_aihc = job.backend == "aihc"
    known = [*AIHC_METRIC_TYPES, "TmpUsage"] if on_aihc else list(METRIC_TYPES)
    if metric_type not in known:
        raise param_refused(
            "metricType",
            f"metricType is one of: {', '.join(known)}"
            + (
                " (AIHC's utilisations in percent; TmpUsage is not measured on AIHC)."
                if on_aihc
                else " (the local runner samples no GPU, disk or network use)."
            ),
        )
    start = time_param(params, "startTime")
    end = time_param(params, "endTime")
    if start is not None and end is not None and end < start:
        raise param_refused("endTime", "endTime is before startTime.")
    step = duration_param(params, "timeStep", DEFAULT_TIME_STEP)
    duration_param(params, "rateInterval", 1)  # checked, not used: CPU is a rate already
    if job.backend not in ("local", "kubernetes", "aihc"):
        raise ApiError(
            400,
            "NotSupported",
            _(
                "Job metrics are served for jobs on the local runner, Kubernetes and AIHC "
                "only; job %(job)s runs on %(backend)s."
            )
            % {"job": job.public_id, "backend": job.backend},
        )
    if job.backend in ("kubernetes", "aihc") and metric_type == "TmpUsage":
        raise ApiError(
            400,
            "NotSupported",
            _(
                "TmpUsage is measured on the local runner only: neither Kubernetes' Metrics "
                "API nor AIHC's job metrics have a /tmp figure."
            ),
        )
    if on_aihc:
        aihc_value = AIHC_METRIC_TYPES[metric_type]
        return [
            {
                "podName": pod_name(job, label),
                "metrics": [
                    {"time": point.time, "value": value}
                    for point in points
                    if (value := aihc_value(point)) is not None
                ],
            }
            for label, points in replica_utilisation_history(
                job=job, start=start, end=end, step=step
            )
        ]
    value_of = METRIC_TYPES[metric_type]
    return [
        {
            "podName": pod_name(job, label),
            "metrics": [{"time": point.time, "value": value_of(point)} for point in points],
        }
        for label, points in replica_usage_history(job=job, start=start, end=end, step=step)
    ]


# -- pools and queues: the wizard's inventory ------------------------------------------------

POOL_SORT_KEYS: dict[str, Callable[[Pool], str]] = {
    "name": lambda pool: pool.name.lower(),
    "id": lambda pool: pool.id,
}


def pools_found(
    *, keyword: str = "", keyword_on: str = "name", sort: str = "", descending: bool = False
) -> list[Pool]:
    """The pools the wizard offers, those whose name (or id) contains `keyword`, sorted by
    `sort` ("name", "id", or "" for the console's own order: the pools' creation times, which
    AIHC also sorts by, are not known)."""
    from .wizard import available_pools

    pools = available_pools()
    if keyword:
        needle = keyword.lower()
        pools = [p for p in pools if needle in (p.id if keyword_on == "id" else p.name).lower()]
    if sort:
        pools.sort(key=POOL_SORT_KEYS[sort], reverse=descending)
    return pools


def pool_found(pool_id: str) -> Pool:
    from .wizard import find_pool

    pool = find_pool(pool_id)
    if pool is None:
        raise pool_not_found(pool_id)
    return pool


def pool_not_found(pool_id: str) -> ApiError:
    """The refusal of a pool id not offered now: 404 ResourcePoolNotFound, unless its
    platform's pools cannot be read and the console knows the pool (jobs.wizard
    .unreachable_pool): then 503 ServiceUnavailable, which a script and the SDKs send again,
    a create with its clientToken (qa102: a 404 made a script drop the job)."""
    from .wizard import unreachable_pool

    reason = unreachable_pool(pool_id)
    if reason is not None:
        return ApiError(
            503,
            "ServiceUnavailable",
            _(
                "Resource pool %(pool)s cannot be checked now: %(reason)s. Send the request "
                "again later (a create with the same clientToken makes one job)."
            )
            % {"pool": pool_id, "reason": reason},
        )
    return ApiError(
        404, "ResourcePoolNotFound", _("Resource pool %(pool)s not found.") % {"pool": pool_id}
    )


def queue_found(pool: Pool, name: str) -> str:
    if name not in pool.queues:
        raise ApiError(
            404,
            "QueueNotFound",
            _("Queue %(queue)s not found in %(pool)s.") % {"queue": name, "pool": pool.id},
        )
    return name


def pool_phase(pool: Pool) -> str:
    """AIHC's pool phase: running while the backend answers, unknown while its figures are
    old or could not be read (the wizard says so too)."""
    return "unknown" if pool.stale or pool.error else "running"


def pool_console(pool: Pool) -> dict[str, Any]:
    """What the console adds to AIHC's pool shape: the backend and how fresh the figures are."""
    return {
        "backend": pool.backend,
        "storageTypes": list(pool.storage_types),
        "figuresAsOf": _time(pool.as_of) or None,
        "stale": pool.stale,
        "error": pool.error,
    }


def _pool_v1(pool: Pool) -> dict[str, Any]:
    """A pool as AIHC's v1 DescribeResourcePool shows it. The console knows its cards per type
    (as the wizard shows them: total and idle); what it does not know stays empty."""
    used = [(a.type, a.total, max(a.total - a.idle, 0)) for a in pool.accelerators]
    pfs = [v.name for v in pool.volumes_of("pfs")]
    return {
        "metadata": {"id": pool.id, "name": pool.name, "createdAt": None, "updatedAt": None},
        "spec": {
            "k8sVersion": "",
            "associatedCpromIds": [],
            "associatedPfsId": pfs[0] if pfs else "",
            "createdBy": "",
            "description": "",
            "forbidDelete": None,
            "region": "",
        },
        "status": {
            "gpuCount": {"total": sum(t for _, t, _ in used), "used": sum(u for *_, u in used)},
            "gpuDetail": [
                {"gpuDescriptor": kind, "total": total, "used": in_use}
                for kind, total, in_use in used
            ],
            "nodeCount": {"total": pool.nodes[0], "used": pool.nodes[1]},
            "phase": pool_phase(pool),
        },
        "console": pool_console(pool),
    }


def queues_held_fields(pool: Pool, owner: Any) -> dict[str, dict[str, Any]]:
    """Each of `pool`'s queues held by its first job, as v1's and v2's queue calls say it
    beside AIHC's keys ("console": {"held": ...}), from the plan the pools page, the wizard and
    the admission read (jobs.scheduler.queues_held), and said as they say it (qa93: an API
    user saw 2 idle cards and no reason a job waited): the holder's job ID and name for its
    owner only (null for anyone else's), the cards it lacks per type (none: it waits for CPU
    cores), the device nodes of those cards it waits for (none: other jobs hold them), the
    priority at or below which the queue's jobs wait behind it, and the note in
    the answer's language. No plan (a pool of another platform): none."""
    if pool.next_pass is None:
        return {}
    return {
        name: {
            "jobId": held.job[0] if held.job else None,
            "jobName": held.job[1] if held.job else None,
            "shortCards": held.short_cards,
            "missingDeviceNodes": list(held.missing_nodes),
            "priority": held.priority.value,
            "note": held.note(link=False),
        }
        for name, held in queues_held(pool.next_pass(), viewer_id=owner.pk).items()
    }


def _queue_v1(
    name: str, counts: QueueCounts, held: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A queue as AIHC's v1 queue APIs show it: every queue the console offers takes jobs;
    quotas are not known to it (see README). The job counts are the console's own jobs, every
    user's, as numbers only, as the Resource pools page shows them; `held`: queues_held_fields."""
    return {
        "name": name,
        "description": "",
        "parentQueue": "",
        "queueType": "",
        "state": "Open",
        "opened": True,
        "reclaimable": None,
        "preemptable": None,
        "queueingStrategy": "",
        "capability": {},
        "deserved": {},
        "guarantee": {},
        "allocated": {},
        "disableOversell": None,
        "running": counts.running,
        "inqueue": counts.waiting,
        "pending": counts.pending_review,
        "createdTime": None,
        "children": [],
        "console": {"held": (held or {}).get(name)},
    }


# -- v1 views ---------------------------------------------------------------------------------


@api_view("GET", "POST")
def jobs(request: HttpRequest, owner: Any) -> dict[str, Any]:
    if request.method == "POST":
        return _create(request, owner)
    return _list(request, owner)


class NotJsonConstant(ValueError):
    """NaN, Infinity or -Infinity in a body (refuse_constant)."""


def refuse_constant(name: str) -> Any:
    """`json.loads`' parse_constant: NaN, Infinity and -Infinity are not JSON (RFC 8259),
    though Python's reader takes them; `{"name": NaN}` made a job named "nan"."""
    raise NotJsonConstant(name)


class OutOfRangeNumber(float):
    """A number of a body too large for a float (1e400): Python's reader makes it infinity,
    kept with its text as sent to be named (read_float)."""

    text = ""


def read_float(text: str) -> float:
    """`json.loads`' parse_float: a number too large for a float is marked, not read as
    infinity, which a text field took as "inf" and a number field called not whole (qa78)."""
    value = float(text)
    if math.isfinite(value):
        return value
    number = OutOfRangeNumber(value)
    number.text = text
    return number


def out_of_range_numbers(document: Any, path: str = "") -> list[tuple[str, str]]:
    """The body's path and text of each number too large for a float, in the body's order.
    Walked after nested_too_deeply, so never deeper than MAX_JSON_DEPTH."""
    if isinstance(document, OutOfRangeNumber):
        return [(path, document.text)]
    if isinstance(document, dict):
        places = ((f"{path}.{key}" if path else str(key), v) for key, v in document.items())
    elif isinstance(document, list):
        places = ((f"{path}[{i}]", v) for i, v in enumerate(document))
    else:
        return []
    return [found for place, value in places for found in out_of_range_numbers(value, place)]


def out_of_range_errors(document: Any) -> dict[str, list[str]]:
    """A field message (path -> messages, "" for the body itself) for every number of the
    body too large for a float, in the language of the answer. Every one is named, so that
    one answer says all that is to change; the body's other rules are not checked with them,
    as they would read the number as infinity and say things of it that are not so (the API's
    answer says they follow: _body)."""
    errors: dict[str, list[str]] = {}
    for path, text in out_of_range_numbers(document):
        message = _("The number %(number)s is out of range: no field takes it.")
        errors.setdefault(path, []).append(message % {"number": text[:40]})
    return errors


def _body(request: HttpRequest) -> Any:
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        # QA 57: a gzip body was "not well-formed", which sent its sender looking for a
        # mistake in its JSON. Not read (decided then, when clientToken matched the body's
        # bytes, which a retry compressed again changes; kept: no SDK compresses a body).
        raise ApiError(
            400,
            "MalformedJSON",
            f"The body is sent with Content-Encoding {encoding[:40]}, which the console does "
            "not read: send the JSON uncompressed.",
        )
    if request.body.startswith(b"\xef\xbb\xbf"):
        raise ApiError(
            400,
            "MalformedJSON",
            "The body starts with a byte order mark (U+FEFF), which JSON does not have: send "
            "UTF-8 without it.",
        )
    try:
        document = json.loads(
            request.body.decode("utf-8"), parse_constant=refuse_constant, parse_float=read_float
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # or nested too deep to read
        raise ApiError(400, "MalformedJSON", malformed_json_message(request, exc)) from None
    if nested_too_deeply(document):
        # In English, as every message about the request itself (README "Scripts and SDKs":
        # the signature, the parameters, a body that does not read), whatever Accept-Language.
        raise ApiError(
            400,
            "MalformedJSON",
            f"The JSON you provided is nested more than {MAX_JSON_DEPTH} levels deep; a "
            "CreateJob body needs six.",
        )
    if has_lone_surrogate(document):
        raise ApiError(
            400,
            "MalformedJSON",
            "The JSON you provided holds an unpaired surrogate (a lone \\ud800-\\udfff), "
            "which is not a character.",
        )
    if errors := out_of_range_errors(document):
        # Well-formed JSON, so not MalformedJSON: the field is named, as any bad value's. The
        # rest is judged once these are gone, and said to follow, so that the answer does not
        # read as all there is to change (qa97).
        errors[""] = [_("The body's other fields are checked once these are corrected.")]
        raise invalid_fields(errors)
    return document


def malformed_json_message(request: HttpRequest, error: Exception) -> str:
    """MalformedJSON's message: where the reader stopped (line and column, and why, as
    Python's reader says it) and, when the request says its body is not JSON (a form's
    Content-Type, curl's -d default), that too (qa97: "not well-formed" alone sent a
    script's author looking through the whole body)."""
    message = "The JSON you provided was not well-formed"
    if isinstance(error, json.JSONDecodeError):
        message += f": {error.msg} at line {error.lineno}, column {error.colno}."
    elif isinstance(error, UnicodeDecodeError):
        message += f": the body is not UTF-8 (byte {error.start})."
    elif isinstance(error, NotJsonConstant):
        message += f": {error} is not JSON (RFC 8259 has no NaN or Infinity)."
    else:
        message += "."
    content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
    if content_type and "json" not in content_type.lower():
        message += (
            f" The request's Content-Type is {content_type[:80]}, not application/json: send "
            "the body as JSON."
        )
    return message


def nested_too_deeply(document: Any, *, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `document` holds objects and lists nested more than `limit` deep. Walked level
    by level, not recursively: a deep document is what it looks for."""
    level = [document] if isinstance(document, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            value
            for container in level
            for value in (container.values() if isinstance(container, dict) else container)
            if isinstance(value, dict | list)
        ]
    return False


def cut_to_depth(document: Any, *, limit: int = MAX_JSON_DEPTH) -> Any:
    """`document` with what is nested past `limit` levels replaced by None (no recursion past
    `limit`): what a body too deep to read still says at the depths a job's fields have."""
    if not isinstance(document, dict | list):
        return document
    if limit <= 0:
        return None
    if isinstance(document, dict):
        return {key: cut_to_depth(value, limit=limit - 1) for key, value in document.items()}
    return [cut_to_depth(value, limit=limit - 1) for value in document]


def has_lone_surrogate(document: Any) -> bool:
    """JSON can escape half of a UTF-16 pair alone ("\\ud800"), which is no character: a job
    (or draft) holding one would be stored, but its page and every answer naming it could
    never be encoded again (a 500 each time), and its process could not be started."""
    try:
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# Field paths of the console's spec (jobs.spec) that the v1 body writes elsewhere: the
# console's extensions under `console`, the envs under `jobSpec`.
V1_PATHS = {
    "sharedMemoryGi": "console.sharedMemoryGi",
    "cpuExclusive": "console.cpuExclusive",
    "timeoutMinutes": "console.timeoutMinutes",
    "logPersistence": "console.logPersistence",
    "creationMode": "console.creationMode",
    "alert.emails": "console.alertChannels.emails",
    "alert.webhooks": "console.alertChannels.webhooks",
}
V1_PREFIXES = {"submission": "console.submission", "aiak": "console.aiak", "envs": "jobSpec.envs"}
ROLE_PATH = re.compile(r"roles(?:\[(\d+)\](\.\w+)?(.*))?")


def v1_paths(document: Any) -> Callable[[str], str]:
    """Says a field path of the console's spec as the client's v1 body names it. A role's
    path (`roles[0].accelerators`) names the body's own place for it: `console.roles[0]`'s
    resources when the body has roles, else `jobSpec.replicas` (instances) or
    `jobSpec.resources` (cards, CPU, memory), which the roles were read from."""
    console = document.get("console") if isinstance(document, dict) else None
    has_roles = isinstance(console, dict) and "roles" in console

    def rename(path: str) -> str:
        if path in V1_PATHS:
            return V1_PATHS[path]
        head, dot, rest = path.partition(".")
        bracket = head.partition("[")
        if bracket[0] in V1_PREFIXES:
            return V1_PREFIXES[bracket[0]] + (bracket[1] + bracket[2]) + dot + rest
        role = ROLE_PATH.fullmatch(path)
        if role is None:
            return path
        index, field, within = role[1], role[2] or "", role[3] or ""
        if has_roles:
            if index is None:
                return "console.roles"
            if field == ".resources":
                # The reader's own paths into a role's resources (`.resources[0].quantity`),
                # kept whole: without the match they went out as `roles[0]…` (qa78).
                return f"console.roles[{index}].resources{within}"
            return f"console.roles[{index}]" + (
                field if field in ("", ".name", ".replicas") else ".resources"
            )
        return "jobSpec.replicas" if field in ("", ".replicas") else "jobSpec.resources"

    return rename


def client_token(query: Params, document: Any) -> tuple[str, Any]:
    """CreateJob's clientToken and the body without it. AIHC's clients send it in the query;
    a body may carry it too, as v2 takes any other action's parameters from the query or the
    body (the query's wins when both give it). Found in QA 57: a token in the body was named
    as a field "not known to this console" and not used, so each retry made one more job.
    A boolean is refused as a list is (text_param reads it as "true": qa111 found `true`
    taken, then matched by the string "true")."""
    token = text_param(query, "clientToken")
    if not isinstance(document, dict) or "clientToken" not in document:
        return token, document
    if isinstance(document["clientToken"], bool):
        raise param_refused("clientToken", "clientToken must be a string or a number.")
    given = text_param(document, "clientToken")
    rest = {key: value for key, value in document.items() if key != "clientToken"}
    return token or given, rest


def body_fingerprint(document: Any) -> bytes:
    """What a clientToken's retry must repeat of a create's body: the body as read, without
    clientToken, written out canonically (keys sorted, no spaces). Not the bytes as sent
    (until qa97): the token is a parameter of the request, not of the job, so the same job
    with the token moved from the query into the body, or sent again with its keys in
    another order, is the same create, and makes no second job."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _create(request: HttpRequest, owner: Any) -> dict[str, Any]:
    pool_id = _pool_param(request)
    token, document = client_token(request.GET, _body(request))
    fingerprint = body_fingerprint(document)
    unread, misplaced = fields_read(document, spec_module.V1_FIELDS)
    document = fault_tolerance_args_read(document, misplaced=misplaced)
    job = job_create(
        owner=owner,
        pool_id=pool_id,
        document=document,
        token=token,
        fingerprint=fingerprint,
        sent_as=request.body,
        rename=v1_paths(document),
        unread=unread,
        misplaced=misplaced,
    )
    result = {"jobId": job.public_id, "jobName": job.name, **created_fields(job)}
    return {"result": result, **create_warnings(job, unread, v1_paths(document))}


ORDER_BY = {"createdAt": "createdAt", "finishedAt": "finishedAt"}
# The job-list filters of v2's DescribeJobs that AIHC's v1 list (GET /api/v1/aijobs) does not
# take: its documented query is resourcePoolId, queue, orderBy, order, pageNo and pageSize
# (and queueID, which AIHC's Go SDK sends). Refused, not ignored (qa97): an answer that
# ignored `status=Running` listed every job, read by a script as the running ones.
V2_ONLY_LIST_FILTERS = ("status", "keyword", "keywordType")


def v1_list_filters_refused(params: Params) -> None:
    """InvalidParameter naming a v2-only filter given to v1's job list (empty: no filter)."""
    for name in V2_ONLY_LIST_FILTERS:
        if text_param(params, name):
            raise param_refused(
                name,
                _(
                    "%(name)s: AIHC's v1 job list (GET /api/v1/aijobs) has no %(name)s filter, "
                    "so the console does not take one there rather than list every job. It "
                    "takes queue, orderBy, order, pageNo and pageSize; filter by status or "
                    "keyword with the v2 action DescribeJobs (/?action=DescribeJobs)."
                )
                % {"name": name},
            )


def v1_list_queue(params: Params, pool: str) -> str:
    """The queue v1's job list is filtered by: `queue`, or AIHC's Go SDK's `queueID` (a queue
    name, or `<resourcePoolId>:<queueName>` as DescribeQueues gives it); both must agree."""
    queue = text_param(params, "queue")
    queue_id = text_param(params, "queueID")
    if not queue_id:
        return queue
    named_pool, separator, name = queue_id.partition(":")
    if separator and named_pool != pool:
        raise param_refused("queueID", f"queueID {queue_id} is not a queue of {pool}.")
    name = name if separator else queue_id
    if queue and queue != name:
        raise invalid_fields({"queue": [f"{queue} and queueID {queue_id} differ."]})
    return name


def _list(request: HttpRequest, owner: Any) -> dict[str, Any]:
    pool = _pool_param(request)
    params = request.GET
    v1_list_filters_refused(params)
    order_by = choice_param(params, "orderBy", ORDER_BY, "createdAt")
    order = order_param(params, "desc")
    page_no = int_param(params, "pageNo", 1, 1_000_000)
    page_size = int_param(params, "pageSize", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    found = jobs_found(
        owner=owner,
        pool=pool,
        queue=v1_list_queue(params, pool),
        order_by=order_by,
        order=order,
    )
    return {
        "result": {
            "total": found.count(),
            "jobs": [job_view(job, detail=False) for job in page_of(found, page_no, page_size)],
            "orderBy": order_by,
            "order": order,
            "pageNo": page_no,
            "pageSize": page_size,
        }
    }


@api_view("GET", "PUT", "DELETE")
def job(request: HttpRequest, owner: Any, job_id: str) -> dict[str, Any]:
    found = _own_job(request, owner, job_id)
    if request.method in ("GET", "HEAD"):  # never on to DELETE below
        return {"result": job_view(found, detail=True)}
    if request.method == "PUT":
        body = _body(request)
        if not isinstance(body, dict):
            raise ApiError(400, "InvalidParameter", 'The body is a JSON object: {"priority": …}.')
        priority_changed(job=found, priority=required_param(body, "priority"), owner=owner)
        return {"result": {"jobId": found.public_id}}
    warnings = job_deleted(job=found, actor=owner)
    return {"result": {"jobId": found.public_id, "jobName": found.name}, **warnings}


@api_view("POST")
def job_stop_api(request: HttpRequest, owner: Any, job_id: str) -> dict[str, Any]:
    found = _own_job(request, owner, job_id)
    warnings = job_stopped(job=found, owner=owner)
    return {"result": {"jobId": found.public_id, "jobName": found.name}, **warnings}


@api_view("GET")
def job_events(request: HttpRequest, owner: Any, job_id: str) -> dict[str, Any]:
    found = _own_job(request, owner, job_id)
    return {
        "result": job_events_answer(
            job=found, window=event_window(request.GET), marker=event_marker(request.GET)
        )
    }


@api_view("GET")
def pod_events(request: HttpRequest, owner: Any, job_id: str, pod: str) -> dict[str, Any]:
    found = _own_job(request, owner, job_id)
    events = pod_event_views(job_replica(found, pod), event_window(request.GET))
    return {"result": {"events": events, "total": len(events)}}


@api_view("GET")
def pod_logs(request: HttpRequest, owner: Any, job_id: str, pod: str) -> dict[str, Any]:
    found = _own_job(request, owner, job_id)
    log_filters_refused(request.GET, ("endTime",))
    logs, following = pod_log_lines(job=found, pod=pod, params=request.GET)
    return {
        "result": {"jobId": found.public_id, "podName": pod, "logs": logs, "nextMarker": following}
    }


def web_terminal_refused() -> ApiError:
    """Decision: the console has no web terminal (no shell into a job's replica from the
    API or the pages), so AIHC's web terminal, v1's path and v2's DescribeJobWebterminal, is
    answered with a refusal that says so and what to use instead, rather than the generic
    "not served" (review 18b: v1's path still had that 404)."""
    return ApiError(
        400,
        "NotSupported",
        _(
            "This console has no web terminal: a job's replicas cannot be entered with a "
            "shell. Read a pod's output with DescribeJobLogs and its events with "
            "DescribePodEvents."
        ),
    )


@api_view("GET")
def pod_web_terminal(request: HttpRequest, owner: Any, job_id: str, pod: str) -> dict[str, Any]:
    """AIHC's v1 web terminal (`GET …/pods/{podName}/webterminal`): refused, as v2's."""
    _own_job(request, owner, job_id)  # another's job: still JobNotFound
    raise web_terminal_refused()


@api_view("GET")
def job_nodes(request: HttpRequest, owner: Any, job_id: str) -> dict[str, Any]:
    """AIHC's v1 job nodes: `{jobID, nodeName[]}` (its spelling)."""
    found = _own_job(request, owner, job_id)
    return {"result": {"jobID": found.public_id, "nodeName": job_node_names(found)}}


@api_view("GET")
def job_metrics(request: HttpRequest, owner: Any, job_id: str) -> dict[str, Any]:
    found = _own_job(request, owner, job_id)
    metrics = pod_metrics(job=found, params=request.GET)
    return {"result": {"jobId": found.public_id, "podMetrics": metrics}}


# v1's pool sort fields (its doc names the cluster's), and the v2 names for them.
POOL_ORDER_BY = {
    "createdAt": "",
    "clusterName": "name",
    "clusterID": "id",
    "resourcePoolName": "name",
    "resourcePoolId": "id",
}
POOL_KEYWORD_TYPES = {
    "clusterName": "name",
    "clusterID": "id",
    "resourcePoolName": "name",
    "resourcePoolId": "id",
}


@api_view("GET")
def resource_pools(request: HttpRequest, owner: Any) -> dict[str, Any]:
    params = request.GET
    order_by = text_param(params, "orderBy") or "createdAt"
    sort = choice_param(params, "orderBy", POOL_ORDER_BY, "createdAt")
    order = order_param(params, "desc")
    page_no = int_param(params, "pageNo", 1, 1_000_000)
    page_size = int_param(params, "pageSize", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    pools = pools_found(
        keyword=text_param(params, "keyword"),
        keyword_on=choice_param(params, "keywordType", POOL_KEYWORD_TYPES, "clusterName"),
        sort=sort,
        descending=order == "desc",
    )
    return {
        "result": {
            "resourcePools": [_pool_v1(p) for p in page_of(pools, page_no, page_size)],
            "total": len(pools),
            "orderBy": order_by,
            "order": order,
            "pageNo": page_no,
            "pageSize": page_size,
        }
    }


@api_view("GET")
def resource_pool(request: HttpRequest, owner: Any, pool_id: str) -> dict[str, Any]:
    return {"result": {"resourcePool": _pool_v1(pool_found(pool_id))}}


@api_view("GET")
def queues(request: HttpRequest, owner: Any, pool_id: str) -> dict[str, Any]:
    """A pool's queues, in the console's order (AIHC sorts by creation time, which the
    console does not know)."""
    pool = pool_found(pool_id)
    params = request.GET
    choice_param(params, "orderBy", {"createdTime": ""}, "createdTime")
    order = order_param(params, "desc")
    choice_param(params, "keywordType", {"queueName": "name"}, "queueName")
    page_no = int_param(params, "pageNo", 1, 1_000_000)
    page_size = int_param(params, "pageSize", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    keyword = text_param(params, "keyword").lower()
    names = [name for name in pool.queues if keyword in name.lower()]
    counts = queue_counts(pool=pool)
    held = queues_held_fields(pool, owner)
    return {
        "result": {
            "total": len(names),
            "queues": [
                _queue_v1(name, counts.get(name, QueueCounts()), held)
                for name in page_of(names, page_no, page_size)
            ],
            "orderBy": "createdTime",
            "order": order,
            "pageNo": page_no,
            "pageSize": page_size,
        }
    }


@api_view("GET")
def queue(request: HttpRequest, owner: Any, pool_id: str, queue_name: str) -> dict[str, Any]:
    pool = pool_found(pool_id)
    name = queue_found(pool, queue_name)
    counts = queue_counts(pool=pool).get(name, QueueCounts())
    return {"result": {"queue": _queue_v1(name, counts, queues_held_fields(pool, owner))}}


@api_view("GET", "POST", "PUT", "DELETE")
def not_served(request: HttpRequest, owner: Any, rest: str) -> dict[str, Any]:
    path = f"/api/v1/{rest}"
    message = not_served_message(path)
    bare = path.rstrip("/")
    if bare != path and served_path(bare):
        # QA 57: a script joining paths with a trailing slash was told the job list is not
        # served at all. AIHC's paths have none, and the signature covers the path as sent.
        message = f"{path} is not served: AIHC's paths end without a slash, {bare}."
    raise ApiError(404, "NotFound", message)


def served_path(path: str) -> bool:
    """Whether a v1 path is one of the API's own (not the catch-all not_served)."""
    try:
        return resolve(path).func is not not_served
    except Resolver404:
        return False


def not_served_message(what: str) -> str:
    return (
        f"{what} is not served: this console serves AIHC's job, resource pool and queue "
        'reads and job actions (README "Scripts and SDKs" lists them).'
    )
