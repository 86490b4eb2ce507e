"""AIHC's v2 action API (`/?action=…`), served by the console at its root.

AIHC's v2 OpenAPI puts every operation on the path `/`, named by the `action` query
parameter: job actions POST a JSON body (with the header X-API-Version: v2), pool and queue
actions GET with everything in the query. Everything a v2 action does goes through the same
functions as its v1 path (jobs.api_views): the same signature check, owner rule, BCE errors,
clientToken and submit. Only the shapes differ: v2 answers are flat, `{"requestId", …}`.

Decisions (README "Scripts and SDKs"):
- The console's root is also its job list page. A request there is the API's when it is signed
  with bce-auth-v1 (its Authorization header names that scheme) or names an API version
  (X-API-Version): every SDK sends the first, a browser neither, so the page, its filters and
  a pasted `/?action=…` address are unchanged. An Authorization header of another scheme (a
  proxy's Basic auth) is the page's. The page keeps its CSRF check.
- Parameters are read from the query and the JSON body together; a name in both takes the
  query's value, which the signature covers. CreateJob's body is the job (v2's shape, mapped
  by jobs.aihc.mapping.v1_from_v2 onto the v1 body the console stores).
- Job actions need `resourcePoolId`, and a job outside that pool is JobNotFound, as in v1.
  `queueID` names CreateJob's queue when the body has none (and must agree with it when it
  has one); other actions ignore it.
- BatchStopJobs stops each job of `jobList` as StopJob does (at most MAX_SELECTED); a job not
  found or refused is in `failedList` with its reason, and the others still stop. An unknown
  pool (api_views.pool_of_jobs_known) refuses the whole request, as StopJob's. Its answer is
  the `{"requestId", "result": {…}}` Baidu's v2 SDK reads. AIHC has no BatchDeleteJobs.
  With the console's `groupId` in place of `jobList`, it stops every unfinished task of that
  queue group of the caller's at once (jobs.actions.group_stop), however many.
- CreateJob, StopJob, BatchStopJobs, DeleteJob and ModifyJob take POST only; reads take GET or POST (the v2
  overview lists some as GET, every SDK POSTs).
- Queue names repeat across pools, so a queue's id is `<resourcePoolId>:<queueName>`;
  DescribeQueue also takes a queue name with resourcePoolId.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from . import spec as spec_module
from .actions import MAX_SELECTED, group_stop, jobs_stop, stop_looked_for
from .aihc.mapping import RoleMapError, is_role_map, role_map, v1_from_v2, v2_from_v1
from .api_views import (
    AIHC_STATUS,
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    ORDER_BY,
    STOP_LOOKED_FOR_LATER,
    ApiError,
    MethodRefused,
    Params,
    _body,
    _pods,
    _time,
    api_view,
    bccl_fields,
    body_fingerprint,
    choice_param,
    client_token,
    create_warnings,
    created_fields,
    event_marker,
    event_window,
    fields_read,
    group_fields,
    int_param,
    invalid_fields,
    job_create,
    job_deleted,
    job_events_answer,
    job_node_names,
    job_replica,
    job_stopped,
    jobs_found,
    log_filters_refused,
    not_served_message,
    order_param,
    owned_job,
    page_of,
    param_refused,
    pod_event_views,
    pod_log_lines,
    pod_metrics,
    pool_console,
    pool_found,
    pool_not_found,
    pool_of_jobs_known,
    pool_phase,
    pools_found,
    priority_changed,
    queue_found,
    queues_held_fields,
    required_param,
    text_param,
    v1_paths,
    web_terminal_refused,
)
from .backends import AcceleratorStock, Pool
from .models import Job, JobGroup
from .pools import QueueCounts, queue_counts
from .texts import sentence_ended
from .wizard import available_pools, find_pool, unreachable_pool

# AIHC's pool types; the console's pools are all self-managed ("common").
POOL_TYPES = ("common", "dedicatedV2", "bhcmp", "edge")
CONSOLE_POOL_TYPE = "common"
WRITES = frozenset({"CreateJob", "StopJob", "BatchStopJobs", "DeleteJob", "ModifyJob"})
# v1 field paths (jobs.spec's messages) as a v2 body names them.
V2_PATHS = {"jobFramework": "jobType", "jobSpec.command": "command", "console.command": "command"}
ROLE_PATH = re.compile(r"roles\[(\d+)\](.*)")


def is_api_request(request: HttpRequest) -> bool:
    """An SDK's request, not a browser's (see the module's decisions)."""
    authorization = request.headers.get("Authorization", "").strip().lower()
    return authorization.startswith("bce-auth-v1/") or "X-API-Version" in request.headers


def is_api_call(request: HttpRequest) -> bool:
    """Whether a request the console refuses before any view runs (Django's 400: a host
    ALLOWED_HOSTS does not list, too many fields) is a script's call of the API, to be
    answered in the API's JSON error shape (jobs.http.bad_request) rather than with a page.

    Decision: the same rule that routes the request when it is not refused, so the answer
    comes in the form the address would have answered in: any path under /api/v1/ (the v1
    API, whose every answer is JSON), and at the console's root a request `is_api_request`
    takes for an SDK's (signed bce-auth-v1, or naming X-API-Version). Neither `?action=`
    alone (a pasted `/?action=…` address in a browser is the job list page, as above) nor
    the Accept header (SDKs and curl send `*/*` or none) decides it. `path_info`, without the
    prefix the console may be served under."""
    path = request.path_info
    if path.startswith("/api/v1/"):
        return True
    return path == "/" and is_api_request(request)


def actions_or(page: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The console's root: the v2 action API for an SDK's request (`is_api_request`), `page`
    (the job list) for everything else. The root itself is CSRF-exempt, so that a signed POST
    reaches the API; the page keeps its check through csrf_protect."""
    protected = csrf_protect(page)

    @csrf_exempt
    @wraps(page)
    def root(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if is_api_request(request):
            return actions(request)
        return protected(request, *args, **kwargs)

    return root


@api_view("GET", "POST")
def actions(request: HttpRequest, owner: Any) -> dict[str, Any]:
    action = text_param(request.GET, "action")
    if not action:
        raise param_refused("action", "action is required (?action=DescribeJobs…).")
    handler = ACTIONS.get(action)
    if handler is None:
        raise ApiError(404, "NotFound", not_served_message(f"action {action}"))
    if action in WRITES and request.method != "POST":
        raise MethodRefused(request.method or "", ["POST"], f"{action} takes POST.")
    return handler(request, owner)


def _params(request: HttpRequest) -> dict[str, Any]:
    """The action's parameters: the JSON body's fields, then the query's (signed) over them."""
    body: Any = _body(request) if request.body.strip() else {}
    if not isinstance(body, dict):
        raise ApiError(400, "InvalidParameter", "The body is a JSON object of parameters.")
    params = {**body, **{name: request.GET.get(name) for name in request.GET}}
    # The Go SDK's DescribeQueues capitalises its paging parameters.
    for name in ("pageNumber", "pageSize"):
        capitalised = name[0].upper() + name[1:]
        if name not in params and capitalised in params:
            params[name] = params[capitalised]
    return params


def _paging(params: Params) -> tuple[int, int]:
    return (
        int_param(params, "pageNumber", 1, 1_000_000),
        int_param(params, "pageSize", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
    )


def _job(params: Params, owner: Any) -> Job:
    return owned_job(
        owner=owner,
        job_id=required_param(params, "jobId"),
        pool=required_param(params, "resourcePoolId"),
    )


# -- jobs ---------------------------------------------------------------------------------


def _queue_name(queue_id: str, pool_id: str) -> str:
    """The queue a queueID names: a queue name (AIHC's self-managed pools) or this API's
    `<resourcePoolId>:<queueName>`."""
    pool, separator, name = queue_id.partition(":")
    if not separator:
        return queue_id
    if pool != pool_id:
        raise param_refused("queueID", f"queueID {queue_id} is not a queue of {pool_id}.")
    return name


def v2_paths(document: dict[str, Any]) -> Callable[[str], str]:
    """Says a field path of the stored (v1) spec as the v2 body named it."""
    role_keys = list(document["jobSpec"]) if is_role_map(document.get("jobSpec")) else []
    v1_rename = v1_paths(document)  # what v2 keeps where v1 has it (envs, console, replicas)

    def rename(path: str) -> str:
        if path in V2_PATHS:
            return V2_PATHS[path]
        if path.startswith("faultToleranceConfig"):
            return "faultToleranceArgs"
        match = ROLE_PATH.fullmatch(path)
        if match and int(match[1]) < len(role_keys):
            return f"jobSpec.{role_keys[int(match[1])]}{match[2]}"
        renamed = v1_rename(path)
        if role_keys and renamed.startswith("jobSpec."):
            # A role map's image, envs...: the console keeps them once, from its first role.
            return f"jobSpec.{role_keys[0]}.{renamed.removeprefix('jobSpec.')}"
        return renamed

    return rename


def _create_job(request: HttpRequest, owner: Any) -> dict[str, Any]:
    query = request.GET
    pool_id = required_param(query, "resourcePoolId")
    queue_id = text_param(query, "queueID")
    document = _body(request)
    if not isinstance(document, dict):
        raise ApiError(400, "InvalidParameter", "The request body must be a JSON object.")
    token, document = client_token(query, document)
    fingerprint = body_fingerprint(document)
    if queue_id:
        queue = _queue_name(queue_id, pool_id)
        given = document.get("queue")
        if given is None or given == "":
            document = {**document, "queue": queue}
        elif str(given) != queue:
            raise invalid_fields({"queue": [f"{given} and queueID {queue_id} differ."]})
    unread, misplaced = fields_read(document, spec_module.V2_FIELDS)
    rename = v2_paths(document)
    try:
        v1 = v1_from_v2(document)
    except RoleMapError as exc:
        problems = {path: [message] for path, message in exc.problems}
        raise invalid_fields(problems, misplaced=misplaced) from None
    except ValueError as exc:
        faults = {"faultToleranceArgs": [sentence_ended(str(exc))]}
        raise invalid_fields(faults, misplaced=misplaced) from None
    job = job_create(
        owner=owner,
        pool_id=pool_id,
        document=v1,
        token=token,
        fingerprint=f"{queue_id}\n".encode() + fingerprint,
        sent_as=f"{queue_id}\n".encode() + request.body,
        rename=rename,
        unread=unread,
        misplaced=misplaced,
    )
    return {
        "jobId": job.public_id,
        "jobName": job.name,
        **created_fields(job),
        **create_warnings(job, unread, rename),
    }


def _pod_items(job: Job) -> list[dict[str, Any]]:
    """The job's pods as v2's JobItem lists them."""
    return [
        {
            "name": pod["objectMeta"]["name"],
            "creationAt": pod["objectMeta"]["creationTimestamp"],
            "status": pod["podStatus"]["podPhase"],
            "replicaType": pod["replicaType"],
            "restartCount": pod["restartCount"],
            "nodeName": pod["nodeName"],
            "finishedAt": pod["finishedAt"],
            "reason": pod["reason"],
            "PodIP": "",
            "uid": "",
            "envs": [],
            **({"console": pod["console"]} if "console" in pod else {}),
        }
        for pod in _pods(job)
    ]


def job_item(job: Job, *, detail: bool) -> dict[str, Any]:
    """A job as v2's JobItem (secret values masked). The id is given as `jobId` and as
    `jobid`, the spelling of Baidu's v2 Python SDK model."""
    item: dict[str, Any] = {
        "jobId": job.public_id,
        "jobid": job.public_id,
        "name": job.name,
        "status": AIHC_STATUS.get(job.status, "Unknown"),
        "consoleStatus": job.status,
        "statusReason": job.status_reason_shown,
        "jobType": job.framework,
        "resourcePoolId": job.resource_pool,
        "queue": job.queue,
        "priority": job.priority,
        "createdAt": _time(job.created_at),
        "runningAt": _time(job.started_at),
        "finishedAt": _time(job.finished_at),
        **group_fields(job),
    }
    try:
        spec = job.job_spec()
        body = v2_from_v1(spec.to_v1_body(masked=True), roles=spec.roles)
    except spec_module.SpecError:
        body = {}
    else:
        lost = spec_module.roles_lost_by_v1_body(spec) is not None
        if lost and not is_role_map(body["jobSpec"]):
            # One JobSpec cannot say roles that differ (a CPU-only launcher, workers of their
            # own resources, a custom job's named roles): answered as the role map v2 CreateJob
            # takes for every framework, so the answer re-sent makes the same job (qa78). The
            # AIHC backend's own request is not changed (AIHC takes a map for TFJob only).
            body["jobSpec"] = role_map(body["jobSpec"], spec.roles, spec.framework)
    for key in (
        "command",
        "jobSpec",
        "datasources",
        "labels",
        "faultToleranceArgs",
        "enableBccl",
        "tensorboardConfig",
        "alertConfig",
        "retentionPeriod",
    ):
        if key in body:
            item[key] = body[key]
    item["enableFaultTolerance"] = bool(body.get("faultTolerance"))
    if body:
        # Answered when unset too, as v1's DescribeJob does (jobs.api_views.job_view).
        item["enableBccl"] = bool(body.get("enableBccl"))
        item.update(bccl_fields(job, body))
        # JobItem's flag string, "" when the job has no fault tolerance settings (qa105).
        item.setdefault("faultToleranceArgs", "")
        item.setdefault("labels", [])
        item.setdefault("datasources", [])
    if detail:
        item["pods"] = _pod_items(job)
        item["historyPods"] = []
    return item


# As long as the job list's search box takes (jobs.views.MAX_FILTER_LENGTH).
MAX_KEYWORD_LENGTH = 200


def _describe_jobs(request: HttpRequest, owner: Any) -> dict[str, Any]:
    params = _params(request)
    pool = required_param(params, "resourcePoolId")
    keyword_on = choice_param(
        params, "keywordType", {"name": "name", "queueName": "queueName"}, "name"
    )
    keyword = text_param(params, "keyword")
    if len(keyword) > MAX_KEYWORD_LENGTH:
        # The job list's search box holds as much. SQLite refuses a LIKE pattern past
        # 50,000 bytes ("pattern too complex"): a body with a longer keyword answered 500.
        raise param_refused("keyword", f"keyword is at most {MAX_KEYWORD_LENGTH} characters.")
    order_by = choice_param(params, "orderBy", ORDER_BY, "createdAt")
    order = order_param(params, "desc")
    page_number, page_size = _paging(params)
    found = jobs_found(
        owner=owner,
        pool=pool,
        queue=text_param(params, "queue"),
        order_by=order_by,
        order=order,
        status=_status_param(params),
        name_contains=keyword if keyword_on == "name" else "",
        queue_contains=keyword if keyword_on == "queueName" else "",
    )
    return {
        "totalCount": found.count(),
        "jobs": [job_item(j, detail=False) for j in page_of(found, page_number, page_size)],
        "orderBy": order_by,
        "order": order,
        "pageNumber": page_number,
        "pageSize": page_size,
    }


def _status_param(params: Params) -> str:
    """DescribeJobs' `status`: one of the AIHC names the console gives its jobs (AIHC_STATUS),
    in any letter case, or "" for every status. Any other is refused, naming those, as an
    out-of-range `orderBy` or `keywordType` is: AIHC publishes no full enumeration (README
    "Scripts and SDKs"), and a misspelt status ("Runing") answered with no jobs reads as "none
    is running" to a script, where a refusal shows the mistake."""
    status = text_param(params, "status")
    if not status:
        return ""
    for known in dict.fromkeys(AIHC_STATUS.values()):
        if known.lower() == status.lower():
            return known
    allowed = ", ".join(dict.fromkeys(AIHC_STATUS.values()))
    raise param_refused("status", f"status is one of: {allowed}.")


def _describe_job(request: HttpRequest, owner: Any) -> dict[str, Any]:
    params = _params(request)
    detail = choice_param(params, "needDetail", {"true": "pods", "false": ""}, "false")
    return {"job": job_item(_job(params, owner), detail=bool(detail))}


def _stop_job(request: HttpRequest, owner: Any) -> dict[str, Any]:
    found = _job(_params(request), owner)
    warnings = job_stopped(job=found, owner=owner)
    return {"jobId": found.public_id, "jobName": found.name, **warnings}


def _batch_stop_jobs(request: HttpRequest, owner: Any) -> dict[str, Any]:
    """Each job of `jobList` stopped as StopJob stops it (one already finished or stopping
    succeeds, as a retried StopJob does). One not found, or refused, is listed in failedList
    with why; the others still stop. Results keep the order of jobList, each id once. A pool
    neither offered nor holding any of the owner's jobs is ResourcePoolNotFound, for all."""
    params = _params(request)
    pool = required_param(params, "resourcePoolId")
    if params.get("groupId") not in (None, ""):
        return _batch_stop_group(params, owner, pool)
    ids = _job_list(params)
    # An unknown pool is refused as StopJob and DescribeJobs refuse it: each job listed "not
    # found" read as jobs deleted, when the pool id was mistyped.
    pool_of_jobs_known(owner=owner, pool_id=pool)
    # A NUL is never in a job id or a pool name, and PostgreSQL refuses it in a query.
    searched = [i for i in ids if "\x00" not in i] if "\x00" not in pool else []
    found = Job.objects.filter(owner=owner, resource_pool=pool, public_id__in=searched).order_by(
        "-created_at", "-id"
    )
    outcomes = {o.job.public_id: o for o in jobs_stop(jobs=found, actor=owner)}
    results = []
    for job_id in ids:
        outcome = outcomes.get(job_id)
        why = outcome.error if outcome else _("Job %(job)s not found.") % {"job": job_id}
        result: dict[str, Any] = {"jobId": job_id, "success": not why, "errorMsg": why}
        # A job its platform may still make: its item carries StopJob's warning, in StopJob's
        # shape (`warnings`, only when there is one). Decided (qa84; AIHC's reference gives
        # the items only jobId, success, errorMsg): on the job's own item, where a script
        # reads that job's outcome, not in a list beside the result naming the jobs.
        said = stop_looked_for(outcome.job) if outcome and outcome.done else ""
        if said:
            result["warnings"] = [{"code": STOP_LOOKED_FOR_LATER, "message": said}]
        results.append(result)
    succeeded = [r for r in results if r["success"]]
    failed = [r for r in results if not r["success"]]
    return {
        "result": {
            "successNum": len(succeeded),
            "failedNum": len(failed),
            "success": not failed,
            "successList": succeeded,
            "failedList": failed,
        }
    }


def _batch_stop_group(params: Params, owner: Any, pool: str) -> dict[str, Any]:
    """BatchStopJobs of the console's `groupId` (a create's answer names it): every unfinished
    task of the caller's queue group stopped at once, as Stop the group on its pages does
    (qa93: a 1,000-task sweep was ten calls of 100 ids). The answer is BatchStopJobs' own:
    each task stopped or asked to stop now in successList, one refused in failedList; a task
    already ended or stopping is in neither (sent again, the call lists none). Another user's
    group, or one of another pool, is QueueGroupNotFound, as a group that does not exist."""
    pool_of_jobs_known(owner=owner, pool_id=pool)
    given = params.get("groupId")
    number = str(given) if isinstance(given, int | str) and not isinstance(given, bool) else ""
    group = None
    if re.fullmatch(r"[0-9]{1,18}", number):
        group = JobGroup.objects.filter(
            pk=int(number), owner=owner, jobs__resource_pool=pool
        ).first()
    if group is None:
        raise ApiError(
            404,
            "QueueGroupNotFound",
            _("Queue group %(group)s not found.") % {"group": str(given)[:40]},
        )
    stopped = group_stop(group=group, actor=owner)
    succeeded = [{"jobId": i, "success": True, "errorMsg": ""} for i in stopped.stopped]
    failed = []
    for outcome in stopped.outcomes:
        if outcome.error:
            failed.append(
                {"jobId": outcome.job.public_id, "success": False, "errorMsg": outcome.error}
            )
        elif outcome.done:
            result: dict[str, Any] = {
                "jobId": outcome.job.public_id,
                "success": True,
                "errorMsg": "",
            }
            if said := stop_looked_for(outcome.job):
                result["warnings"] = [{"code": STOP_LOOKED_FOR_LATER, "message": said}]
            succeeded.append(result)
    return {
        "result": {
            "successNum": len(succeeded),
            "failedNum": len(failed),
            "success": not failed,
            "successList": succeeded,
            "failedList": failed,
            "groupId": group.pk,
        }
    }


def _job_list(params: Params) -> list[str]:
    """BatchStopJobs' `jobList` (`[{"jobId": …}, …]`) as job ids, each once."""
    given = params.get("jobList")
    if not isinstance(given, list) or not given:
        raise param_refused("jobList", 'jobList is required: [{"jobId": …}, …].')
    if len(given) > MAX_SELECTED:
        raise param_refused("jobList", f"jobList holds at most {MAX_SELECTED} jobs.")
    ids = [text_param(item, "jobId") if isinstance(item, dict) else "" for item in given]
    if not all(ids):
        raise param_refused("jobList", 'Each item of jobList is {"jobId": …}.')
    return list(dict.fromkeys(ids))


def _delete_job(request: HttpRequest, owner: Any) -> dict[str, Any]:
    found = _job(_params(request), owner)
    return {"jobId": found.public_id, "jobName": found.name, **job_deleted(job=found, actor=owner)}


def _modify_job(request: HttpRequest, owner: Any) -> dict[str, Any]:
    params = _params(request)
    found = _job(params, owner)
    priority_changed(job=found, priority=required_param(params, "priority"), owner=owner)
    return {"jobId": found.public_id}


def _describe_job_events(request: HttpRequest, owner: Any) -> dict[str, Any]:
    params = _params(request)
    return job_events_answer(
        job=_job(params, owner), window=event_window(params), marker=event_marker(params)
    )


def _describe_pod_events(request: HttpRequest, owner: Any) -> dict[str, Any]:
    params = _params(request)
    replica = job_replica(_job(params, owner), required_param(params, "podName"))
    events = pod_event_views(replica, event_window(params))
    return {"events": events, "total": len(events)}


def _describe_job_logs(request: HttpRequest, owner: Any) -> dict[str, Any]:
    """The last `maxLines` lines of a pod's log, from `startTime` on when given, or the first
    `maxLines` after `marker` (a local job's nextMarker; no keywords, endTime or chunkSize:
    those are refused)."""
    params = _params(request)
    found = _job(params, owner)
    log_filters_refused(params, ("keywords", "endTime", "chunkSize"))
    pod = required_param(params, "podName")
    logs, following = pod_log_lines(job=found, pod=pod, params=params)
    return {"jobId": found.public_id, "podName": pod, "logs": logs, "nextMarker": following}


def _describe_job_nodes(request: HttpRequest, owner: Any) -> dict[str, Any]:
    found = _job(_params(request), owner)
    return {"jobId": found.public_id, "nodes": job_node_names(found)}


def _describe_job_webterminal(request: HttpRequest, owner: Any) -> dict[str, Any]:
    """Refused: the console has no web terminal (api_views.web_terminal_refused)."""
    _job(_params(request), owner)  # an unknown job is still JobNotFound
    raise web_terminal_refused()


def _describe_job_metrics(request: HttpRequest, owner: Any) -> dict[str, Any]:
    """v1's job metrics; `metrics` is v1's podMetrics (AIHC's v2 answer names the field,
    not its shape)."""
    params = _params(request)
    found = _job(params, owner)
    return {"jobId": found.public_id, "metrics": pod_metrics(job=found, params=params)}


# -- pools and queues -----------------------------------------------------------------------


def _pool_v2(pool: Pool) -> dict[str, Any]:
    """A pool as v2's ResourcePool; its cards are DescribeResourcePoolOverview's."""
    return {
        "resourcePoolId": pool.id,
        "name": pool.name,
        "type": CONSOLE_POOL_TYPE,
        "region": "",
        "description": "",
        "createdBy": "",
        "phase": pool_phase(pool),
        "k8sVersion": "",
        "createdAt": None,
        "updatedAt": None,
        "nodeNum": 0,
        "bindingStorages": [
            {"provider": "pfs", "type": "pfs", "id": volume.name}
            for volume in pool.volumes_of("pfs")
        ],
        "console": pool_console(pool),
    }


def _queue_v2(
    pool: Pool, name: str, counts: QueueCounts, held: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """A queue as v2's QueueSpec; as in v1, quotas are not known and the job counts are the
    console's own jobs, every user's, as numbers; `held`: queues_held_fields, as v1 says it."""
    return {
        "queueId": f"{pool.id}:{name}",
        "queueName": name,
        "queueType": "",
        "resourcePoolId": pool.id,
        "description": "",
        "createdAt": None,
        "updatedAt": None,
        "parentQueue": "",
        "children": [],
        "opened": True,
        "reclaimable": None,
        "preemptable": None,
        "disableOversell": None,
        "queueingStrategy": "",
        "enableVGPU": None,
        "capability": None,
        "deserved": None,
        "guarantee": None,
        "allocated": None,
        "runningJobs": counts.running,
        "inqueueJobs": counts.waiting,
        "pendingJobs": counts.pending_review,
        "bindingNodes": [],
        "console": {"held": held.get(name)},
    }


def _statistic(kind: str, capacity: int, idle: int) -> dict[str, Any]:
    allocated = max(capacity - idle, 0)
    return {
        "resourceType": kind,
        "capacity": capacity,
        "allocated": allocated,
        "idle": idle,
        "allocationRate": allocated / capacity if capacity else 0,
        "utilizationRate": 0,  # not measured by the console
    }


def _accelerators(stock: list[AcceleratorStock]) -> dict[str, Any]:
    """Cards per type as v2's AcceleratorsStatistic: both type fields carry the resource name
    (`resources[].name`), which is what the console knows a card by."""
    by_type: dict[str, list[int]] = {}
    for item in stock:
        totals = by_type.setdefault(item.type, [0, 0])
        totals[0] += item.total
        totals[1] += item.idle
    return {
        **_statistic(
            "Accelerator", sum(t for t, _ in by_type.values()), sum(i for _, i in by_type.values())
        ),
        "acceleratorStatistics": [
            {"acceleratorType": kind, **_statistic(kind, total, idle)}
            for kind, (total, idle) in by_type.items()
        ],
    }


def _describe_resource_pools(request: HttpRequest, owner: Any) -> dict[str, Any]:
    params = _params(request)
    pool_type = required_param(params, "resourcePoolType")
    if pool_type not in POOL_TYPES:
        raise param_refused(
            "resourcePoolType", f"resourcePoolType is one of: {', '.join(POOL_TYPES)}."
        )
    keyword_type = text_param(params, "keywordType") or "resourcePoolName"
    keyword_on = choice_param(
        params, "keywordType", {"resourcePoolName": "name", "resourcePoolId": "id"}, keyword_type
    )
    order_by = text_param(params, "orderBy") or "resourcePoolName"
    # createdAt as the doc spells it, CreatedAt as the Go SDK does.
    sort = choice_param(
        params,
        "orderBy",
        {"resourcePoolName": "name", "resourcePoolId": "id", "createdAt": "", "CreatedAt": ""},
        order_by,
    )
    order = order_param(params, "asc")
    page_number, page_size = _paging(params)
    keyword = text_param(params, "keyword")
    pools = (
        pools_found(keyword=keyword, keyword_on=keyword_on, sort=sort, descending=order == "desc")
        if pool_type == CONSOLE_POOL_TYPE
        else []
    )
    return {
        "keywordType": keyword_type,
        "keyword": keyword,
        "orderBy": order_by,
        "order": order.upper(),
        "pageNumber": page_number,
        "pageSize": page_size,
        "totalCount": len(pools),
        "resourcePools": [_pool_v2(p) for p in page_of(pools, page_number, page_size)],
    }


def _describe_resource_pool(request: HttpRequest, owner: Any) -> dict[str, Any]:
    return _pool_v2(pool_found(required_param(_params(request), "resourcePoolId")))


def _describe_resource_pool_overview(request: HttpRequest, owner: Any) -> dict[str, Any]:
    pools = available_pools()
    return {
        "resourcePoolsStatisticWithType": [
            {
                "type": CONSOLE_POOL_TYPE,
                "nodesStatistic": {"totalCount": 0},
                "acceleratorsStatistic": _accelerators([a for p in pools for a in p.accelerators]),
                "resourcesStatistic": [],
                "resourcePoolStatistics": [
                    {
                        "resourcePoolId": pool.id,
                        "type": CONSOLE_POOL_TYPE,
                        "name": pool.name,
                        "nodesStatistic": {"totalCount": 0},
                        "resourcesStatistic": [],
                        "acceleratorsStatistic": _accelerators(pool.accelerators),
                    }
                    for pool in pools
                ],
            }
        ]
    }


def _describe_queues(request: HttpRequest, owner: Any) -> dict[str, Any]:
    params = _params(request)
    pool = pool_found(required_param(params, "resourcePoolId"))
    keyword_type = text_param(params, "keywordType") or "queueName"
    keyword_on = choice_param(
        params, "keywordType", {"queueName": "name", "queueId": "id"}, keyword_type
    )
    keyword = text_param(params, "keyword")
    page_number, page_size = _paging(params)
    needle = keyword.lower()
    names = [
        name
        for name in pool.queues
        if needle in (f"{pool.id}:{name}" if keyword_on == "id" else name).lower()
    ]
    counts = queue_counts(pool=pool)
    held = queues_held_fields(pool, owner)
    return {
        "pageNumber": page_number,
        "pageSize": page_size,
        "keyword": keyword,
        "keywordType": keyword_type,
        "totalCount": len(names),
        "queues": [
            _queue_v2(pool, n, counts.get(n, QueueCounts()), held)
            for n in page_of(names, page_number, page_size)
        ],
    }


def _describe_queue(request: HttpRequest, owner: Any) -> dict[str, Any]:
    params = _params(request)
    queue_id = required_param(params, "queueId")
    pool_id, separator, name = queue_id.partition(":")
    if not separator:
        pool_id, name = text_param(params, "resourcePoolId"), queue_id
        if not pool_id:
            raise param_refused(
                "queueId",
                "queueId is <resourcePoolId>:<queueName>, as DescribeQueues gives it "
                "(or a queue name, with resourcePoolId).",
            )
    pool = find_pool(pool_id)
    if pool is None and unreachable_pool(pool_id) is not None:
        raise pool_not_found(pool_id)
    if pool is None:
        raise ApiError(404, "QueueNotFound", _("Queue %(queue)s not found.") % {"queue": queue_id})
    name = queue_found(pool, name)
    counts = queue_counts(pool=pool).get(name, QueueCounts())
    return _queue_v2(pool, name, counts, queues_held_fields(pool, owner))


ACTIONS: dict[str, Callable[[HttpRequest, Any], dict[str, Any]]] = {
    "CreateJob": _create_job,
    "DescribeJobs": _describe_jobs,
    "DescribeJob": _describe_job,
    "StopJob": _stop_job,
    "BatchStopJobs": _batch_stop_jobs,
    "DeleteJob": _delete_job,
    "ModifyJob": _modify_job,
    "DescribeJobEvents": _describe_job_events,
    "DescribePodEvents": _describe_pod_events,
    "DescribeJobLogs": _describe_job_logs,
    "DescribeJobMetrics": _describe_job_metrics,
    "DescribeJobNodes": _describe_job_nodes,
    "DescribeJobWebterminal": _describe_job_webterminal,
    "DescribeResourcePools": _describe_resource_pools,
    "DescribeResourcePool": _describe_resource_pool,
    "DescribeResourcePoolOverview": _describe_resource_pool_overview,
    "DescribeQueues": _describe_queues,
    "DescribeQueue": _describe_queue,
}
