"""The AIHC-compatible API: AIHC's v1 job OpenAPI, served by the console itself.

A script or SDK written for AIHC (bce-auth-v1 signing, `POST /api/v1/aijobs?resourcePoolId=…`)
pointed at the console's URL creates and manages jobs on the console's pools, the local runner
included, as the owner of the access key it signs with (jobs.api_keys). A job created here is
built and checked by the same code as the wizard's submit (jobs.spec parses the v1 body,
jobs.wizard.pool_refusals asks the pool, jobs.services.jobs_submit applies the review policy
and queues it), so it is the owner's job like any other: its page, alerts and review.

Decisions (README "Scripts and SDKs"):
- Served: CreateJob, DescribeJobs, DescribeJob, StopJob, DeleteJob, job events and pod logs
  (v1 REST paths). Pool and queue reads and the v2 action API are not served.
- Every answer is JSON. Errors have BCE's shape `{"requestId", "code", "message"}` and the
  request id is also in the `x-bce-request-id` header.
- Messages are in English, or Chinese when the request's Accept-Language asks for it (SDKs
  send none; the web console's language cookie does not apply here).
- A job is found only by its owner's key: anyone else's job, staff included, is JobNotFound
  (404), as the web pages answer 404.
- clientToken (query, as [next] sends it): a create with the same token and the same body
  (and pool) from the same user within CLIENT_TOKEN_HOURS answers the first job's id instead
  of making another. The body is part of the key because one client ([aihcx]) uses the current
  second as its token: two different jobs sent in one second must both be made. After the
  window, or once that job is deleted, the token makes a new job.
- A job the idle cards cannot hold now is queued and waits, as AIHC queues it: the wizard's
  refusal of a standalone job that does not fit now has no counterpart in the v1 body.
- Statuses are AIHC's names (AIHC_STATUS); `consoleStatus` and `statusReason` add the
  console's own (a job waiting for review is "Pending" with consoleStatus "pending_review").
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import wraps
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db.models import F
from django.http import HttpRequest, JsonResponse
from django.utils import timezone, translation
from django.utils.translation.trans_real import parse_accept_lang_header
from django.views.decorators.csrf import csrf_exempt

from . import spec as spec_module
from .actions import ActionError, job_delete, job_stop
from .api_keys import ApiAuthError, verify_request
from .backends import BackendError, get_backend
from .logs import job_secrets, shown_lines
from .models import Job, JobStatus, ReplicaStatus
from .services import jobs_submit

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
DEFAULT_PAGE_SIZE = 10  # AIHC's default
MAX_PAGE_SIZE = 1000
DEFAULT_LOG_LINES = 1000
MAX_LOG_LINES = 10000


class ApiError(ApiAuthError):
    pass


def _language(request: HttpRequest) -> str:
    """English, unless Accept-Language prefers Chinese."""
    for code, _q in parse_accept_lang_header(request.headers.get("Accept-Language", "")):
        if code.startswith("zh"):
            return "zh-hans"
        if code.startswith("en"):
            return "en"
    return "en"


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
    signature, which a cross-site page cannot make."""

    def decorate(view: Callable[..., dict[str, Any]]) -> Callable[..., JsonResponse]:
        @csrf_exempt
        @wraps(view)
        def wrapped(request: HttpRequest, **kwargs: Any) -> JsonResponse:
            request_id = str(uuid.uuid4())
            with translation.override(_language(request)):
                try:
                    if request.method not in methods:
                        raise ApiError(405, "MethodNotAllowed", f"{request.method} is not served.")
                    try:
                        key = verify_request(request)
                        result = view(request, key.owner, **kwargs)
                    except RequestDataTooBig:
                        raise ApiError(413, "EntityTooLarge", "The body is too large.") from None
                except ApiAuthError as exc:
                    return _answer(
                        {"code": exc.code, "message": exc.message},
                        status=exc.status,
                        request_id=request_id,
                    )
            return _answer(result, request_id=request_id)

        return wrapped

    return decorate


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
            }
        )
    return pods


def job_view(job: Job, *, detail: bool) -> dict[str, Any]:
    """A job as AIHC's v1 DescribeJob/DescribeJobs show it (secret values masked)."""
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
    }
    try:
        body = job.job_spec().to_v1_body(masked=True)
    except spec_module.SpecError:
        body = {}
    job_spec = body.get("jobSpec") or {}
    for key in ("command", "image", "replicas", "resources", "envs", "enableRDMA", "hostNetwork"):
        if key in job_spec:
            view[key] = job_spec[key]
    for key in ("labels", "datasources", "faultTolerance", "faultToleranceConfig", "enableBccl"):
        if key in body:
            view["enableFaultTolerance" if key == "faultTolerance" else key] = body[key]
    if detail:
        pods = _pods(job)
        view["podList"] = {"listMeta": {"totalItems": len(pods)}, "pods": pods}
    return view


def _pool_param(request: HttpRequest) -> str:
    pool = request.GET.get("resourcePoolId", "").strip()
    if not pool:
        raise ApiError(400, "InvalidParameter", "resourcePoolId is required.")
    return pool


def _own_job(request: HttpRequest, owner: Any, job_id: str) -> Job:
    """The owner's job in the pool named; anyone else's is not found, as on the web."""
    pool = _pool_param(request)
    job = Job.objects.filter(public_id=job_id, owner=owner, resource_pool=pool).first()
    if job is None:
        raise ApiError(404, "JobNotFound", f"Job {job_id} not found.")
    return job


def _int_param(request: HttpRequest, name: str, default: int, high: int) -> int:
    raw = request.GET.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= high:
        raise ApiError(400, "InvalidParameter", f"{name} is a whole number from 1 to {high}.")
    return value


# -- jobs -----------------------------------------------------------------------------


@api_view("GET", "POST")
def jobs(request: HttpRequest, owner: Any) -> dict[str, Any]:
    if request.method == "POST":
        return _create(request, owner)
    return _list(request, owner)


def _body(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ApiError(400, "MalformedJSON", "The JSON you provided was not well-formed.") from None


def _submit_key(owner: Any, token: str, pool: str, raw_body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (str(owner.pk).encode(), token.encode(), pool.encode(), raw_body):
        digest.update(len(part).to_bytes(8, "big") + part)
    return f"api-{digest.hexdigest()}"


def _create(request: HttpRequest, owner: Any) -> dict[str, Any]:
    from .wizard import console_rules, find_pool, pool_refusals  # the wizard's own rules

    pool_id = _pool_param(request)
    document = _body(request)
    try:
        spec = spec_module.parse_document(document, resource_pool_id=pool_id)
    except spec_module.SpecError as exc:
        raise ApiError(400, "InvalidParameter", _errors_message(exc.errors)) from None
    pool = find_pool(pool_id)
    if pool is None:
        raise ApiError(404, "ResourcePoolNotFound", f"Resource pool {pool_id} not found.")
    errors = spec_module.validate(spec)
    # A job that does not fit the idle cards now is queued and waits for them, as AIHC
    # queues it: v1 has no standalone/queue choice to refuse it by.
    refusals = pool_refusals(spec, pool, idle_cards_now=False)
    for path, messages in [*console_rules(spec).items(), *refusals.items()]:
        errors.setdefault(path, []).extend(messages)
    if errors:
        raise ApiError(400, "InvalidParameter", _errors_message(errors))
    token = request.GET.get("clientToken", "").strip()
    if token:
        submit_key = _submit_key(owner, token, pool_id, request.body)
        # Past the window the token is free again: the old job keeps no claim on it.
        Job.objects.filter(
            submit_key__startswith=submit_key,
            created_at__lt=timezone.now() - timedelta(hours=CLIENT_TOKEN_HOURS),
        ).update(submit_key=None)
    else:
        submit_key = f"api-{uuid.uuid4().hex}"
    created = jobs_submit(owner=owner, spec=spec, submit_key=submit_key, backend=pool.backend)
    return {"result": {"jobId": created[0].public_id, "jobName": created[0].name}}


def _errors_message(errors: dict[str, list[str]]) -> str:
    return "; ".join(
        f"{path}: {' '.join(str(m) for m in messages)}" if path else " ".join(messages)
        for path, messages in errors.items()
    )


def _list(request: HttpRequest, owner: Any) -> dict[str, Any]:
    pool = _pool_param(request)
    queue = request.GET.get("queue", "").strip()
    order_by = request.GET.get("orderBy", "createdAt") or "createdAt"
    order = (request.GET.get("order", "desc") or "desc").lower()
    if order_by not in ("createdAt", "finishedAt") or order not in ("asc", "desc"):
        raise ApiError(
            400, "InvalidParameter", "orderBy is createdAt or finishedAt; order is asc or desc."
        )
    page_no = _int_param(request, "pageNo", 1, 1_000_000)
    page_size = _int_param(request, "pageSize", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    found = Job.objects.filter(owner=owner, resource_pool=pool)
    if queue and queue != "all":
        found = found.filter(queue=queue)
    field = F("created_at" if order_by == "createdAt" else "finished_at")
    ordering = field.desc(nulls_last=True) if order == "desc" else field.asc(nulls_last=True)
    found = found.order_by(ordering, "-id" if order == "desc" else "id")
    start = (page_no - 1) * page_size
    page = list(found[start : start + page_size])
    return {
        "result": {
            "total": found.count(),
            "jobs": [job_view(job, detail=False) for job in page],
            "orderBy": order_by,
            "order": order,
            "pageNo": page_no,
            "pageSize": page_size,
        }
    }


@api_view("GET", "DELETE")
def job(request: HttpRequest, owner: Any, job_id: str) -> dict[str, Any]:
    found = _own_job(request, owner, job_id)
    if request.method == "GET":
        return {"result": job_view(found, detail=True)}
    try:
        job_delete(job=found)
    except ActionError as exc:
        raise ApiError(409, "Conflict", str(exc)) from None
    return {"result": {"jobId": found.public_id, "jobName": found.name}}


@api_view("POST")
def job_stop_api(request: HttpRequest, owner: Any, job_id: str) -> dict[str, Any]:
    """Stops the job; one that has already finished or is stopping is answered the same way
    (a retried stop is not an error)."""
    found = _own_job(request, owner, job_id)
    try:
        job_stop(job=found, actor=owner)
    except ActionError as exc:
        raise ApiError(409, "Conflict", str(exc)) from None
    return {"result": {"jobId": found.public_id, "jobName": found.name}}


@api_view("GET")
def job_events(request: HttpRequest, owner: Any, job_id: str) -> dict[str, Any]:
    found = _own_job(request, owner, job_id)
    events = [
        {
            "reason": event.reason,
            "message": event.message_shown,
            "type": event.type,
            "count": 1,
            "firstTimestamp": _time(event.created_at),
            "lastTimestamp": _time(event.created_at),
        }
        for event in found.events.all()
    ]
    return {"result": {"events": events, "total": len(events)}}


@api_view("GET")
def pod_logs(request: HttpRequest, owner: Any, job_id: str, pod: str) -> dict[str, Any]:
    """The last `maxLines` lines of one pod's log, secrets masked as on the job page."""
    found = _own_job(request, owner, job_id)
    labels = {f"{r.role}-{r.index}" for r in found.replicas.all()}
    label = pod.removeprefix(f"{found.name}-") if pod not in labels else pod
    if label not in labels:
        raise ApiError(404, "PodNotFound", f"Pod {pod} not found.")
    max_lines = _int_param(request, "maxLines", DEFAULT_LOG_LINES, MAX_LOG_LINES)
    try:
        lines = get_backend(found.backend).logs(found, label, tail=max_lines)
    except BackendError as exc:
        raise ApiError(503, "ServiceUnavailable", exc.message) from None
    logs = shown_lines(lines, secrets=job_secrets(found))
    return {"result": {"jobId": found.public_id, "podName": pod, "logs": logs}}


@api_view("GET", "POST", "PUT", "DELETE")
def not_served(request: HttpRequest, owner: Any, rest: str) -> dict[str, Any]:
    raise ApiError(
        404,
        "NotFound",
        f"/api/v1/{rest} is not served: this console serves AIHC's v1 job APIs only "
        "(/api/v1/aijobs, its stop, events and pod logs).",
    )
