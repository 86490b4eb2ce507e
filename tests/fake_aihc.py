"""A strict fake of the Baidu AIHC OpenAPI (v1 REST and v2 actions) on 127.0.0.1.

It checks what the real service checks: every request's bce-auth-v1 signature (verified
with its own implementation, not the console's signer), its expiry and access key, the
`x-bce-date` and `X-API-Version` headers, the required fields of each call, and a CreateJob
body's field names, JSON types and enumerations per API version (`check_create_body`). Failures
answer like BCE: `{"requestId", "code", "message"}` with the matching HTTP status.

It records every request, and emulates pools (gpuDetail), queues, jobs with pods, job
events, pod logs and job metrics. Tests steer it: `add_pool`, `set_job_status`, `add_logs`,
`set_metrics`, and
scripted faults (`fail_next`, `delay_next`, `drop_next`) for the next calls of one operation.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, unquote

V1_FRAMEWORKS = {"PyTorchJob", "MPIJob"}
V2_JOB_TYPES = {"PyTorchJob", "MPIJob", "TFJob", "RayJob"}
V1_DATASOURCES = {"pfs", "pfsl1", "pfsl2", "hostpath", "dataset", "emptydir"}
V2_DATASOURCES = {"pfs", "hostpath", "bos", "cfs", "rapidfs", "dataset"}
TF_KEYS = {"Chief", "Worker", "PS", "Evaluator"}
# The job metrics API's metricType values, as AIHC's DescribeJobMetrics page lists them
# (https://cloud.baidu.com/doc/AIHC/s/4mayvot8u, updated 2025-05-30). The fake refuses any
# other as AIHC refuses a parameter it does not know (400 InvalidParameter), so a misspelt or
# invented type fails here as it would there. GpuUsage, CpuUsage, MemoryUsage, GpuMemoryUsage
# and GpuPipeTensorUsage are utilisations, which the fake gives in percent (0-100), the scale
# the console reads them in (an uncertain decision: see jobs.backends.aihc); set_metrics
# refuses a utilisation outside 0-100, so a test cannot feed it cores or bytes. The page also
# lists RDMA, PCIe and NVLink send/receive data rates and RDMA health, error and packet
# rates; our copy does not spell their names exactly, so the fake leaves them out (refused).
METRIC_TYPES = {
    "GpuUsage",
    "GpuMemoryUsage",
    "CpuUsage",
    "MemoryUsage",
    "DiskReadRate",
    "DiskWriteRate",
    "GpuTemperature",
    "GpuPowerUsage",
    "GpuPipeTensorUsage",
    "CpuTime",
    "MemoryAllocation",
}
# enableBcclStatus's values (reference: JobItem, "enableBcclStatus (success/failed/unknown)").
BCCL_STATUSES = {"success", "failed", "unknown"}
UTILISATIONS = {"GpuUsage", "GpuMemoryUsage", "CpuUsage", "MemoryUsage", "GpuPipeTensorUsage"}
DEFAULT_SIGNED = {"host", "content-length", "content-type", "content-md5"}
# Pod logs come a page at a time, as AIHC's log pages document (DescribeJobLogs,
# https://cloud.baidu.com/doc/AIHC/s/Hmayvkw26, updated 2026-01-27; v1's pod logs,
# https://cloud.baidu.com/doc/AIHC/s/Umb0c0oik): "第一次请求不写 marker 参数，获取返回值，如果
# nextMarker 字段不为空，则将 nextMarker 的值作为 marker 参数传入，获取更多的日志，直到
# nextMarker 为空". How many lines a page holds is not documented: the fake's is
# FakeAihc.log_page_lines, and a client that reads one answer only gets that many. A marker
# is opaque; the fake refuses one it did not give for that job and pod (400).
LOG_PAGE_LINES = 1000


class FakeError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# -- the CreateJob body schema ---------------------------------------------------------
#
# Field names, types and enumerations from the reference tables (docs/Go SDK structs,
# /work/shared/reference/aihc-openapi.md §2.1-2.3). AIHC's Go server rejects a value of the
# wrong type; an unknown field it would silently drop, which for the console means a setting
# the user chose is lost without a word, so the fake refuses unknown fields: the client must
# only send what the API version reads.

NAME_RE = re.compile(r"^[a-z](?:[-a-z0-9]{0,48}[a-z0-9])?$")  # 任务名称 rule (seed 000)
PRIORITIES = {"high", "normal", "low"}
ALERT_ITEMS = {"jobRunning", "jobFT", "nodeFT", "jobFailed", "jobSucceed", "jobHang"}
TF_ALERT_ITEMS = {"jobRunning", "jobFailed", "jobSucceed"}
RETENTION_RE = re.compile(r"^[1-9][0-9]*[mhd]$")

STR, BOOL, INT, NUM, LIST, OBJ = "string", "boolean", "integer", "number", "array", "object"


def _is(value: Any, kind: str) -> bool:
    if kind == STR:
        return isinstance(value, str)
    if kind == BOOL:
        return isinstance(value, bool)
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == NUM:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == LIST:
        return isinstance(value, list)
    return isinstance(value, dict)


_DATASOURCE_OPTIONS = {
    "sizeLimit": INT,
    "medium": STR,
    "hostPath": STR,
    "hostPathType": STR,
    "readOnly": BOOL,
    "pfsL1ClusterIp": STR,
    "pfsL1ClusterPort": STR,
    "pfsL1ParentDir": STR,
    "pfsPath": STR,
    "pfsL2MountTargetId": LIST,
    "pfsL2HostMountPath": STR,
}
_DATASOURCE = {"type": STR, "name": STR, "sourcePath": STR, "mountPath": STR, "options": OBJ}
_FT_CONFIG = {
    "enabledHangDetection": BOOL,
    "hangDetectionTimeoutMinutes": INT,
    "faultToleranceLimit": INT,
    "customFaultTolerancePattern": LIST,
}
_TENSORBOARD = {"enable": BOOL, "logPath": STR}
_ALERT = {
    "alertIds": LIST,
    "instanceId": STR,
    "alertName": STR,
    "alertItems": LIST,
    "for": STR,
    "description": STR,
    "notifyRuleId": STR,
    "severity": STR,
}
_JOB_SPEC = {
    "v1": {
        "command": STR,
        "image": STR,
        "imageConfig": OBJ,
        "replicas": INT,
        "resources": LIST,
        "envs": LIST,
        "enableRDMA": BOOL,
        "hostNetwork": BOOL,
        "privileged": BOOL,
    },
    "v2": {
        "image": STR,
        "imageConfig": OBJ,
        "replicas": INT,
        "resources": LIST,
        "envs": LIST,
        "enableRDMA": BOOL,
        "hostNetwork": BOOL,
    },
}
_TOP = {
    "v1": {
        "name": STR,
        "queue": STR,
        "jobFramework": STR,
        "jobSpec": OBJ,
        "faultTolerance": BOOL,
        "labels": LIST,
        "priority": STR,
        "datasources": LIST,
        "enableBccl": BOOL,
        "faultToleranceConfig": OBJ,
        "faultToleranceArgs": STR,
        "tensorboardConfig": OBJ,
        "codeSource": OBJ,
        "alertConfig": OBJ,
    },
    "v2": {
        "name": STR,
        "queue": STR,
        "jobType": STR,
        "jobSpec": OBJ,
        "command": STR,
        "labels": LIST,
        "priority": STR,
        "datasources": LIST,
        "enableBccl": BOOL,
        "faultTolerance": BOOL,
        "faultToleranceArgs": STR,
        "tensorboardConfig": OBJ,
        "alertConfig": OBJ,
        "retentionPeriod": STR,
        "advancedSettings": OBJ,
    },
}


def _invalid(message: str) -> FakeError:
    return FakeError(400, "InvalidParameter", message)


def _fields(value: Any, schema: dict[str, str], path: str) -> dict[str, Any]:
    """`value` is an object whose every field is known and of its type (null = absent)."""
    if not isinstance(value, dict):
        raise _invalid(f"{path} must be an object")
    for key, item in value.items():
        if key not in schema:
            raise _invalid(f"{path}.{key} is not a field of this API")
        if item is not None and not _is(item, schema[key]):
            raise _invalid(f"{path}.{key} must be a JSON {schema[key]}")
    return value


def _items(value: Any, schema: dict[str, str], path: str) -> list[dict[str, Any]]:
    return [_fields(item, schema, f"{path}[{i}]") for i, item in enumerate(value or [])]


def check_create_body(body: Any, version: str) -> None:
    """Raises FakeError(400, InvalidParameter) for what AIHC would not accept as sent."""
    top = _fields(body, _TOP[version], "body")
    if version == "v2" and top.get("jobType") == "TFJob" and isinstance(top.get("jobSpec"), dict):
        specs = [(f"jobSpec.{k}", v) for k, v in top["jobSpec"].items()]
    else:
        specs = [("jobSpec", top.get("jobSpec"))]
    for path, spec in specs:
        if spec is None:
            continue
        _fields(spec, _JOB_SPEC[version], path)
        for res in _items(
            spec.get("resources"), {"name": STR, "quantity": NUM}, f"{path}.resources"
        ):
            if not res.get("name") or res.get("quantity") is None:
                raise _invalid(f"{path}.resources need a name and a numeric quantity")
        for env in _items(spec.get("envs"), {"name": STR, "value": STR}, f"{path}.envs"):
            if not env.get("name"):
                raise _invalid(f"{path}.envs need a name")
        if spec.get("imageConfig") is not None:
            ic = _fields(
                spec["imageConfig"], {"username": STR, "password": STR}, f"{path}.imageConfig"
            )
            if not ic.get("username") or not ic.get("password"):
                raise _invalid("imageConfig needs username and password")
    name = top.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise _invalid(f"name {name!r} must be 1-50 lowercase letters, digits and '-'")
    if top.get("priority") is not None and top["priority"] not in PRIORITIES:
        raise _invalid(f"priority {top['priority']!r} is not high, normal or low")
    for label in _items(top.get("labels"), {"key": STR, "value": STR}, "labels"):
        if not label.get("key"):
            raise _invalid("labels need a key")
    for i, ds in enumerate(_items(top.get("datasources"), _DATASOURCE, "datasources")):
        if ds.get("type") == "hostpath" and not (ds.get("name") and ds.get("sourcePath")):
            raise _invalid(f"datasources[{i}]: hostpath needs a name and the node's sourcePath")
        if ds.get("type") == "bos" and not ds.get("sourcePath"):
            raise _invalid(f"datasources[{i}].sourcePath (the bucket) is required for bos")
        if ds.get("options") is not None:
            _fields(ds["options"], _DATASOURCE_OPTIONS, f"datasources[{i}].options")
    if top.get("faultToleranceConfig") is not None:
        ftc = _fields(top["faultToleranceConfig"], _FT_CONFIG, "faultToleranceConfig")
        patterns = ftc.get("customFaultTolerancePattern") or []
        if not all(isinstance(p, str) for p in patterns):
            raise _invalid("customFaultTolerancePattern is a list of strings")
    if top.get("tensorboardConfig") is not None:
        tb = _fields(top["tensorboardConfig"], _TENSORBOARD, "tensorboardConfig")
        if tb.get("enable") and not tb.get("logPath"):
            raise _invalid("tensorboardConfig.logPath is required when enabled")
    if top.get("alertConfig") is not None:
        alert = _fields(top["alertConfig"], _ALERT, "alertConfig")
        for key in ("instanceId", "alertItems", "notifyRuleId"):
            if not alert.get(key):
                raise _invalid(f"alertConfig.{key} is required")
        framework = top.get("jobType") or top.get("jobFramework") or "PyTorchJob"
        allowed = TF_ALERT_ITEMS if framework == "TFJob" else ALERT_ITEMS
        for item in alert["alertItems"]:
            if item not in allowed:
                raise _invalid(f"alertItems {item!r} is not supported for {framework}")
    retention = top.get("retentionPeriod")
    if retention is not None and not RETENTION_RE.match(retention):
        raise _invalid(f"retentionPeriod {retention!r} is like 1m, 1h or 1d")


@dataclass
class Recorded:
    method: str
    op: str
    path: str
    raw_query: str
    params: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw_body: bytes = b""
    status: int = 0
    error_code: str = ""
    version: str = "v1"
    route: dict[str, str] = field(default_factory=dict)
    request_id: str = ""


@dataclass
class FakeJob:
    job_id: str
    name: str
    pool: str
    queue: str
    framework: str
    body: dict[str, Any]
    version: str
    status: str = "Pending"
    created_at: str = ""
    # When it first went Running (set_job_status): v1's runningAt, v2's jobTimeLine entry.
    running_at: str = ""
    # Each status it went to after that, and when ([(status, time)]: Pending again, Running
    # again...): v2's jobTimeLine goes on with them, in order (v1 answers only runningAt).
    later_conditions: list[tuple[str, str]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    # The uid of the job's resource in the pool's Kubernetes cluster: v1 GetJob's k8sUID
    # (v2's JobItem has none, reference: Get job, JobItem).
    k8s_uid: str = field(default_factory=lambda: str(uuid.uuid4()))
    # The namespace of that resource: v1 GetJob's k8sNamespace (v2's JobItem has none either).
    k8s_namespace: str = "default"
    # Its BCCL check, which v1 GetJob and v2's JobItem answer as enableBcclStatus (one of
    # BCCL_STATUSES: "unknown" until set_bccl_status, as AIHC's own GetJob example has it for
    # a job with BCCL off too) and enableBcclErrorReason.
    bccl_status: str = "unknown"
    bccl_error_reason: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[str, list[str]] = field(default_factory=dict)
    # pod name -> the unix second each of its log lines was written (add_logs' `at`; None:
    # before any startTime)
    log_times: dict[str, list[int | None]] = field(default_factory=dict)
    # (pod name, metricType) -> [(unix seconds, value)]
    metrics: dict[tuple[str, str], list[tuple[int, float]]] = field(default_factory=dict)


@dataclass
class Fault:
    kind: str  # fail | fail_after | delay | drop | block | trickle
    times: int
    status: int = 500
    code: str = "InternalError"
    message: str = "Internal error"
    seconds: float = 0.0
    release: threading.Event | None = None
    pieces: int = 1  # trickle: the answer sent in this many pieces, `seconds` between them


def _encode(value: str, safe: str = "") -> str:
    return quote(value, safe=safe + "-._~")


class FakeAihc:
    def __init__(self, *, access_key: str = "fake-access-key", secret_key: str = "fake-secret-key"):
        self.access_key = access_key
        self.secret_key = secret_key
        self.pools: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, FakeJob] = {}
        self.requests: list[Recorded] = []
        self.faults: dict[str, list[Fault]] = {}
        self.log_page_lines = LOG_PAGE_LINES
        self.lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> FakeAihc:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._handle(self)

            do_POST = do_PUT = do_DELETE = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        assert self._server
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- steering ------------------------------------------------------------------

    def add_pool(
        self,
        pool_id: str,
        name: str,
        *,
        queues: tuple[str, ...] = ("default",),
        gpus: dict[str, tuple[int, int]] | None = None,
        pfs: str = "",
    ) -> None:
        """gpus: accelerator type -> (total, used)."""
        with self.lock:
            self.pools[pool_id] = {
                "name": name,
                "queues": list(queues),
                "gpus": dict(gpus or {}),
                "pfs": pfs,
            }

    def fail_next(
        self,
        op: str,
        *,
        status: int = 500,
        code: str = "InternalError",
        message: str = "Internal error",
        times: int = 1,
        seconds: float = 0.0,
        held: bool = False,
    ) -> threading.Event:
        """Refuses the next `op` calls with this error, after `seconds`; `held`: only once
        the returned event is set (at most 30 s), like block_next."""
        release = threading.Event()
        fault = Fault("fail", times, status, code, message, seconds=seconds)
        if held:
            fault.release = release
        self._fault(op, fault)
        return release

    def fail_after_next(
        self,
        op: str,
        *,
        status: int = 502,
        code: str = "BadGateway",
        message: str = "Bad gateway",
        times: int = 1,
    ) -> None:
        """Carries out the next `op` calls, then answers with an error: a gateway or server
        that fails after AIHC has acted (the job exists, the client is told it failed)."""
        self._fault(op, Fault("fail_after", times, status, code, message))

    def delay_next(self, op: str, seconds: float, *, times: int = 1) -> None:
        """Carries out the next `op` calls, then answers only after `seconds`."""
        self._fault(op, Fault("delay", times, seconds=seconds))

    def trickle_next(self, op: str, seconds: float, *, pieces: int, times: int = 1) -> None:
        """Answers the next `op` calls in `pieces` parts, `seconds` between them: an answer
        that keeps coming, slowly (a large log on a slow link)."""
        self._fault(op, Fault("trickle", times, seconds=seconds, pieces=pieces))

    def block_next(self, op: str) -> threading.Event:
        """Holds the next `op` call until the returned event is set (at most 30 s)."""
        release = threading.Event()
        self._fault(op, Fault("block", 1, release=release))
        return release

    def drop_next(self, op: str, *, times: int = 1) -> None:
        """Closes the connection without answering (the client sees a transport error)."""
        self._fault(op, Fault("drop", times))

    def _fault(self, op: str, fault: Fault) -> None:
        with self.lock:
            self.faults.setdefault(op, []).append(fault)

    def set_job_status(
        self,
        job_id: str,
        status: str,
        *,
        pod_phase: str | None = None,
        restarts: int = 0,
        at: datetime | None = None,
    ) -> None:
        """The job goes to `status`, `at` a time (now by default) that v2's jobTimeLine gives
        for it once the job has run."""
        phase = pod_phase or {
            "Pending": "Pending",
            "Running": "Running",
            "Succeeded": "Succeeded",
            "Failed": "Failed",
        }.get(status, "Failed" if status == "ManualTermination" else "Pending")
        with self.lock:
            job = self.jobs[job_id]
            stamp = (at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            if job.running_at and status != job.status:
                job.later_conditions.append((status, stamp))
            job.status = status
            if status == "Running" and not job.running_at:
                job.running_at = stamp
            for pod in job.pods:
                pod["podStatus"]["podPhase"] = phase
                pod["restartCount"] = restarts
                pod["nodeName"] = "node-10-0-0-1" if phase != "Pending" else ""
            job.events.append(self._event(status, f"Job {job.name} is {status}"))

    def set_bccl_status(self, job_id: str, status: str, reason: str = "") -> None:
        """The job's BCCL check as AIHC reports it (one of BCCL_STATUSES, and why it failed)."""
        if status not in BCCL_STATUSES:
            raise ValueError(f"enableBcclStatus is one of {sorted(BCCL_STATUSES)}, not {status!r}")
        with self.lock:
            job = self.jobs[job_id]
            job.bccl_status, job.bccl_error_reason = status, reason

    def create_external(self, pool: str, body: dict[str, Any]) -> FakeJob:
        """A job created on AIHC directly (or by a create whose answer never arrived)."""
        request = Recorded(
            method="POST",
            op="CreateJob",
            path="/api/v1/aijobs",
            raw_query="",
            params={"resourcePoolId": pool},
            headers={},
            body=body,
        )
        with self.lock:
            return self._create(request, "v1")

    def add_logs(self, job_id: str, pod: str, lines: list[str], *, at: int | None = None) -> None:
        """Lines of a pod's log, written at unix second `at` (DescribeJobLogs' startTime
        answers those from then on; None: before any)."""
        with self.lock:
            self.jobs[job_id].logs.setdefault(pod, []).extend(lines)
            self.jobs[job_id].log_times.setdefault(pod, []).extend([at] * len(lines))

    def set_metrics(
        self, job_id: str, pod: str, metric_type: str, points: list[tuple[int, float]]
    ) -> None:
        """What AIHC's monitoring holds of one metric of a pod: (unix seconds, value) points;
        a utilisation's in percent (0-100)."""
        assert metric_type in METRIC_TYPES, metric_type
        if metric_type in UTILISATIONS:
            assert all(0 <= value <= 100 for _when, value in points), (metric_type, points)
        with self.lock:
            self.jobs[job_id].metrics[(pod, metric_type)] = list(points)

    def calls(self, op: str) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.op == op]

    @staticmethod
    def _event(reason: str, message: str, kind: str = "Normal") -> dict[str, Any]:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "reason": reason,
            "message": message,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": kind,
        }

    # -- request handling ----------------------------------------------------------

    def _handle(self, http: BaseHTTPRequestHandler) -> None:
        raw_path, _, raw_query = http.path.partition("?")
        params = {}
        for item in filter(None, raw_query.split("&")):
            key, _, value = item.partition("=")
            params[unquote(key)] = unquote(value)
        headers = {k.lower(): v for k, v in http.headers.items()}
        length = int(headers.get("content-length") or 0)
        raw_body = http.rfile.read(length) if length else b""
        record = Recorded(
            method=http.command,
            op="",
            path=unquote(raw_path),
            raw_query=raw_query,
            params=params,
            headers=headers,
            body=None,
            raw_body=raw_body,
        )
        with self.lock:
            self.requests.append(record)
        fault = None
        try:
            record.op = self._route_name(record)
            self._verify_signature(record)
            if raw_body:
                if not headers.get("content-type", "").startswith("application/json"):
                    raise FakeError(
                        400, "InvalidHTTPRequest", "Content-Type must be application/json"
                    )
                try:
                    record.body = json.loads(raw_body)
                except ValueError:
                    raise FakeError(400, "MalformedJSON", "The body is not valid JSON") from None
            fault = self._take_fault(record.op)
            if fault and fault.kind == "drop":
                http.close_connection = True
                http.wfile.flush()
                http.connection.shutdown(2)
                return
            if fault and fault.release:  # block, or a held fail
                fault.release.wait(30)
            if fault and fault.kind == "fail":
                raise FakeError(fault.status, fault.code, fault.message)
            with self.lock:
                result = self._dispatch(record)
            if fault and fault.kind == "fail_after":
                raise FakeError(fault.status, fault.code, fault.message)
            status = 200
        except FakeError as exc:
            status = exc.status
            record.error_code = exc.code
            result = {"code": exc.code, "message": exc.message}
        record.status = status
        trickle = fault if fault and fault.kind == "trickle" else None
        if fault and fault.seconds and not trickle:
            time.sleep(fault.seconds)
        request_id = record.request_id = str(uuid.uuid4())
        payload = json.dumps({"requestId": request_id, **result}).encode()
        try:
            http.send_response(status)
            http.send_header("Content-Type", "application/json")
            http.send_header("Content-Length", str(len(payload)))
            http.send_header("x-bce-request-id", request_id)
            http.end_headers()
            step = -(-len(payload) // trickle.pieces) if trickle else len(payload)
            for start in range(0, len(payload), step or 1):
                if start and trickle:
                    http.wfile.flush()
                    time.sleep(trickle.seconds)
                http.wfile.write(payload[start : start + step])
        except OSError:
            pass  # the client gave up waiting (timeout tests)

    def _take_fault(self, op: str) -> Fault | None:
        with self.lock:
            queue = self.faults.get(op) or []
            if not queue:
                return None
            fault = queue[0]
            fault.times -= 1
            if fault.times <= 0:
                queue.pop(0)
            return fault

    def _verify_signature(self, r: Recorded) -> None:
        denied = FakeError(403, "AccessDenied", "Access denied.")
        auth = r.headers.get("authorization", "")
        parts = auth.split("/")
        if len(parts) != 6 or parts[0] != "bce-auth-v1":
            raise denied
        _, ak, timestamp, expiry, signed_names, signature = parts
        if ak != self.access_key:
            raise denied
        try:
            signed_at = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            expiry_seconds = int(expiry)
        except ValueError:
            raise denied from None
        age = time.time() - signed_at.timestamp()
        if age > expiry_seconds or age < -300:
            raise FakeError(403, "AccessDenied", "The request has expired.")
        if "x-bce-date" not in r.headers:
            raise denied
        if signed_names:
            names = signed_names.split(";")
        else:
            names = [
                n
                for n in r.headers
                if (n in DEFAULT_SIGNED or n.startswith("x-bce-")) and r.headers[n].strip()
            ]
        if "host" not in names or any(n not in r.headers for n in names):
            raise denied
        canonical_headers = "\n".join(
            sorted(f"{_encode(n)}:{_encode(r.headers[n].strip())}" for n in names)
        )
        canonical_query = "&".join(
            sorted(
                f"{_encode(k)}={_encode(v)}" for k, v in r.params.items() if k != "authorization"
            )
        )
        canonical = "\n".join([r.method, _encode(r.path, "/"), canonical_query, canonical_headers])
        prefix = f"bce-auth-v1/{ak}/{timestamp}/{expiry}"
        key = hmac.new(self.secret_key.encode(), prefix.encode(), hashlib.sha256).hexdigest()
        expected = hmac.new(key.encode(), canonical.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature):
            raise denied

    # -- routing -------------------------------------------------------------------

    V1_ROUTES = [
        ("GET", r"/api/v1/resourcepools", "DescribeResourcePools"),
        ("GET", r"/api/v1/resourcepools/(?P<pool>[^/]+)/queue", "DescribeQueues"),
        ("POST", r"/api/v1/aijobs", "CreateJob"),
        ("GET", r"/api/v1/aijobs", "DescribeJobs"),
        ("GET", r"/api/v1/aijobs/(?P<job>[^/]+)", "DescribeJob"),
        ("DELETE", r"/api/v1/aijobs/(?P<job>[^/]+)", "DeleteJob"),
        ("POST", r"/api/v1/aijobs/(?P<job>[^/]+)/stop", "StopJob"),
        ("GET", r"/api/v1/aijobs/(?P<job>[^/]+)/events", "DescribeJobEvents"),
        ("GET", r"/api/v1/aijobs/(?P<job>[^/]+)/pods/(?P<pod>[^/]+)/logs", "DescribeJobLogs"),
        ("GET", r"/api/v1/aijobs/(?P<job>[^/]+)/metrics", "DescribeJobMetrics"),
    ]
    V2_GET = {"DescribeResourcePools", "DescribeQueues", "DescribeResourcePoolOverview"}
    V2_POST = {
        "CreateJob",
        "DescribeJobs",
        "DescribeJob",
        "StopJob",
        "DeleteJob",
        "DescribeJobEvents",
        "DescribeJobLogs",
        "DescribeJobMetrics",
    }

    def _route_name(self, r: Recorded) -> str:
        if r.path == "/" and "action" in r.params:
            action = r.params["action"]
            allowed = "GET" if action in self.V2_GET else "POST" if action in self.V2_POST else ""
            if r.method != allowed:
                raise FakeError(404, "NotFound", f"No action {action} for {r.method}")
            r.version = "v2"
            return action
        for method, pattern, name in self.V1_ROUTES:
            match = re.fullmatch(pattern, r.path)
            if match and method == r.method:
                r.route = match.groupdict()
                return name
        raise FakeError(404, "NotFound", "No such API")

    def _dispatch(self, r: Recorded) -> dict[str, Any]:
        if r.version == "v2":
            if r.headers.get("x-api-version") != "v2":
                raise FakeError(400, "InvalidHTTPRequest", "X-API-Version: v2 is required")
            return getattr(self, f"_v2_{r.op}")(r)
        if "x-api-version" in r.headers:
            raise FakeError(400, "InvalidHTTPRequest", "v1 calls take no X-API-Version")
        return {"result": getattr(self, f"_v1_{r.op}")(r)}

    # -- shared behaviour ----------------------------------------------------------

    def _pool(self, pool_id: str | None) -> dict[str, Any]:
        if not pool_id:
            raise FakeError(400, "InvalidParameter", "resourcePoolId is required")
        if pool_id not in self.pools:
            raise FakeError(404, "ResourcePoolNotFound", f"Resource pool {pool_id} not found")
        return self.pools[pool_id]

    def _job(self, r: Recorded, job_id: str | None) -> FakeJob:
        self._pool(r.params.get("resourcePoolId"))
        job = self.jobs.get(job_id or "")
        if job is None or job.pool != r.params.get("resourcePoolId"):
            raise FakeError(404, "JobNotFound", f"Job {job_id} not found")
        return job

    @staticmethod
    def _require(condition: Any, message: str) -> None:
        if not condition:
            raise FakeError(400, "InvalidParameter", message)

    def _check_job_spec(self, spec: Any, path: str, with_command: bool) -> int:
        self._require(isinstance(spec, dict), f"{path} is required")
        self._require(
            isinstance(spec.get("image"), str) and spec["image"], f"{path}.image is required"
        )
        replicas = spec.get("replicas")
        self._require(isinstance(replicas, int) and replicas >= 1, f"{path}.replicas must be >= 1")
        if with_command:
            self._require(
                isinstance(spec.get("command"), str) and spec["command"].strip(),
                f"{path}.command is required",
            )
        for res in spec.get("resources") or []:
            self._require(
                isinstance(res, dict) and res.get("name") and "quantity" in res,
                f"{path}.resources need name and quantity",
            )
        ic = spec.get("imageConfig")
        if ic is not None:
            self._require(
                isinstance(ic, dict) and ic.get("username") and ic.get("password"),
                "imageConfig needs username and password",
            )
        return replicas

    def _create(self, r: Recorded, version: str) -> FakeJob:
        body = r.body
        self._require(isinstance(body, dict), "The body must be a JSON object")
        pool = self._pool(r.params.get("resourcePoolId"))
        check_create_body(body, version)
        self._require(isinstance(body.get("name"), str) and body["name"], "name is required")
        queue = body.get("queue") or "default"
        if version == "v1":
            framework = body.get("jobFramework") or "PyTorchJob"
            self._require(framework in V1_FRAMEWORKS, f"jobFramework {framework} is not supported")
            self._require("jobType" not in body and "command" not in body, "v2 fields in a v1 body")
            groups = {"": self._check_job_spec(body.get("jobSpec"), "jobSpec", True)}
            allowed = V1_DATASOURCES
        else:
            framework = body.get("jobType") or "PyTorchJob"
            self._require(framework in V2_JOB_TYPES, f"jobType {framework} is not supported")
            self._require("jobFramework" not in body, "jobFramework is not a v2 field")
            self._require(body.get("queue"), "queue is required")
            self._require(r.params.get("queueID") == body.get("queue"), "queueID must equal queue")
            self._require(
                isinstance(body.get("command"), str) and body["command"].strip(),
                "command is required",
            )
            spec = body.get("jobSpec")
            if framework == "TFJob":
                self._require(
                    isinstance(spec, dict) and spec and set(spec) <= TF_KEYS,
                    "a TFJob jobSpec is a map of Chief/Worker/PS/Evaluator",
                )
                groups = {
                    k: self._check_job_spec(v, f"jobSpec.{k}", False) for k, v in spec.items()
                }
            else:
                self._require(
                    isinstance(spec, dict) and "command" not in spec, "jobSpec.command is v1"
                )
                groups = {"": self._check_job_spec(spec, "jobSpec", False)}
            allowed = V2_DATASOURCES
        self._require(queue in pool["queues"], f"Queue {queue} does not exist")
        for ds in body.get("datasources") or []:
            self._require(
                isinstance(ds, dict) and ds.get("type") in allowed and ds.get("mountPath"),
                f"Unsupported datasource {ds!r}",
            )
        self._require(body.get("priority", "normal") in ("high", "normal", "low"), "bad priority")
        prefix = {"PyTorchJob": "pytorchjob", "MPIJob": "mpijob", "TFJob": "tfjob"}.get(
            framework, "job"
        )
        job = FakeJob(
            job_id=f"{prefix}-{uuid.uuid4()}",
            name=body["name"],
            pool=r.params["resourcePoolId"],
            queue=queue,
            framework=framework,
            body=body,
            version=version,
            created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        for key, replicas in groups.items():
            roles = [(key.lower(), replicas)] if key else [("master", 1), ("worker", replicas - 1)]
            for role, count in roles:
                for i in range(count):
                    job.pods.append(
                        {
                            "objectMeta": {"name": f"{job.name}-{role}-{i}"},
                            "podStatus": {"podPhase": "Pending", "status": ""},
                            "replicaType": role,
                            "restartCount": 0,
                            "nodeName": "",
                        }
                    )
        job.events.append(self._event("Created", f"Job {job.name} created"))
        self.jobs[job.job_id] = job
        return job

    def _job_view(self, job: FakeJob, *, v2: bool = False, detail: bool = True) -> dict[str, Any]:
        view: dict[str, Any] = {
            "jobid" if v2 else "jobId": job.job_id,
            "name": job.name,
            "status": job.status,
            "queue": job.queue,
            "resourcePoolId": job.pool,
            "createdAt": job.created_at,
            ("jobType" if v2 else "jobFramework"): job.framework,
            # The labels sent, plus those AIHC adds itself (reference: CreateJob labels).
            "labels": [
                *(job.body.get("labels") or []),
                {"key": "aijob.cce.baidubce.com/create-from-aihcp-api", "value": "true"},
            ],
            "enableBccl": bool(job.body.get("enableBccl")),
            "enableBcclStatus": job.bccl_status,
            "enableBcclErrorReason": job.bccl_error_reason,
        }
        if not v2:  # v1's keys of the job's Kubernetes resource (reference: Get job)
            view["k8sUID"] = job.k8s_uid
            view["k8sNamespace"] = job.k8s_namespace
        # When it began running: v1 gives runningAt (empty before), v2 a jobTimeLine of the
        # conditions it went through (reference: Get job, JobItem).
        if v2:
            view["jobTimeLine"] = [
                {"conditionType": "Created", "conditionMessage": "", "time": job.created_at},
                *(
                    [{"conditionType": "Running", "conditionMessage": "", "time": job.running_at}]
                    if job.running_at
                    else []
                ),
                *(
                    {"conditionType": condition, "conditionMessage": "", "time": stamp}
                    for condition, stamp in job.later_conditions
                ),
            ]
        else:
            view["runningAt"] = job.running_at
        if detail:
            if v2:
                view["pods"] = [
                    {
                        "name": p["objectMeta"]["name"],
                        "status": p["podStatus"]["podPhase"],
                        "replicaType": p["replicaType"],
                        "restartCount": p["restartCount"],
                        "nodeName": p["nodeName"],
                    }
                    for p in job.pods
                ]
            else:
                view["podList"] = {"listMeta": {"totalItems": len(job.pods)}, "pods": job.pods}
        return view

    def _jobs_in(self, pool: str, queue: str | None) -> list[FakeJob]:
        jobs = [
            j for j in self.jobs.values() if j.pool == pool and queue in (None, "", "all", j.queue)
        ]
        return sorted(jobs, key=lambda j: j.created_at, reverse=True)

    @staticmethod
    def _page(items: list[Any], number: Any, size: Any) -> list[Any]:
        number, size = int(number or 1), int(size or 10)
        return items[(number - 1) * size : number * size]

    def _logs(
        self,
        job: FakeJob,
        pod: str,
        max_lines: Any,
        start_time: Any = None,
        marker: Any = None,
    ) -> dict[str, Any]:
        """One page of the last `max_lines` of the pod's lines written from `start_time` on,
        a unix second (a whole number, as AIHC documents it), when given: `logs` and the
        `nextMarker` of the next page ("" after the last). `marker`: a nextMarker this fake
        gave for this job and pod (absent: the first page)."""
        if pod not in {p["objectMeta"]["name"] for p in job.pods}:
            raise FakeError(404, "PodNotFound", f"Pod {pod} not found")
        lines = job.logs.get(pod, [])
        if start_time is not None:
            self._require(re.fullmatch(r"[0-9]+", str(start_time)), "startTime is a whole number")
            times = job.log_times.get(pod, [])
            lines = [
                line
                for line, at in zip(lines, times, strict=True)
                if at is not None and at >= int(start_time)
            ]
        lines = lines[-int(max_lines) :] if max_lines else lines
        start = 0
        if marker not in (None, ""):
            self._require(isinstance(marker, str), "marker is a String")
            found = re.fullmatch(rf"page:{re.escape(job.job_id)}:{re.escape(pod)}:([0-9]+)", marker)
            self._require(found, f"marker {marker!r} was not given for this pod's log")
            start = int(found.group(1))
        end = start + self.log_page_lines
        following = f"page:{job.job_id}:{pod}:{end}" if end < len(lines) else ""
        return {"logs": lines[start:end], "nextMarker": following}

    def _metrics(self, job: FakeJob, query: dict[str, Any]) -> list[dict[str, Any]]:
        """The job's pods' points of `metricType` from `startTime` to `endTime`, as
        podMetrics (times in unix seconds, values as Prometheus gives them: text). Every
        parameter the console sends is required and checked: metricType known, startTime,
        endTime (unix seconds) and timeStep, rateInterval (seconds) whole numbers."""
        metric_type = query.get("metricType")
        self._require(metric_type, "metricType is required")
        self._require(metric_type in METRIC_TYPES, f"metricType {metric_type!r} is not supported")
        numbers = {}
        for name in ("startTime", "endTime", "timeStep", "rateInterval"):
            value = query.get(name)
            self._require(value is not None and value != "", f"{name} is required")
            self._require(re.fullmatch(r"[0-9]+", str(value)), f"{name} is a whole number")
            numbers[name] = int(value)
        self._require(numbers["timeStep"] >= 1, "timeStep is at least 1")
        self._require(numbers["startTime"] <= numbers["endTime"], "startTime is after endTime")
        return [
            {
                "podName": pod["objectMeta"]["name"],
                "metrics": [
                    {"time": when, "value": str(value)}
                    for when, value in job.metrics.get((pod["objectMeta"]["name"], metric_type), [])
                    if numbers["startTime"] <= when <= numbers["endTime"]
                ],
            }
            for pod in job.pods
        ]

    # -- v1 ------------------------------------------------------------------------

    def _v1_DescribeResourcePools(self, r: Recorded) -> dict[str, Any]:
        pools = [
            {
                "metadata": {"id": pool_id, "name": p["name"], "createdAt": "2025-01-01T00:00:00Z"},
                "spec": {"associatedPfsId": p["pfs"], "region": "bj", "k8sVersion": "1.26"},
                "status": {
                    "phase": "running",
                    "gpuCount": {
                        "total": sum(t for t, _ in p["gpus"].values()),
                        "used": sum(u for _, u in p["gpus"].values()),
                    },
                    "gpuDetail": [
                        {"gpuDescriptor": kind, "total": total, "used": used}
                        for kind, (total, used) in p["gpus"].items()
                    ],
                },
            }
            for pool_id, p in self.pools.items()
        ]
        page = self._page(pools, r.params.get("pageNo"), r.params.get("pageSize"))
        return {"resourcePools": page, "total": len(pools)}

    def _v1_DescribeQueues(self, r: Recorded) -> dict[str, Any]:
        pool = self._pool(r.route.get("pool"))
        root = {
            "name": "63a9f0ea7bb98050796b649e85481845",
            "children": [{"name": q, "state": "Open"} for q in pool["queues"]],
        }
        return {"queues": [root], "total": 1}

    def _v1_CreateJob(self, r: Recorded) -> dict[str, Any]:
        job = self._create(r, "v1")
        return {"jobId": job.job_id, "jobName": job.name}

    def _v1_DescribeJobs(self, r: Recorded) -> dict[str, Any]:
        self._pool(r.params.get("resourcePoolId"))
        jobs = self._jobs_in(r.params["resourcePoolId"], r.params.get("queue"))
        page = self._page(jobs, r.params.get("pageNo"), r.params.get("pageSize"))
        return {"jobs": [self._job_view(j, detail=False) for j in page], "total": len(jobs)}

    def _v1_DescribeJob(self, r: Recorded) -> dict[str, Any]:
        return self._job_view(self._job(r, r.route.get("job")))

    def _v1_StopJob(self, r: Recorded) -> dict[str, Any]:
        job = self._job(r, r.route.get("job"))
        self.set_job_status(job.job_id, "ManualTermination")
        return {"jobId": job.job_id}

    def _v1_DeleteJob(self, r: Recorded) -> dict[str, Any]:
        job = self._job(r, r.route.get("job"))
        del self.jobs[job.job_id]
        return {"jobId": job.job_id, "jobName": job.name}

    def _v1_DescribeJobEvents(self, r: Recorded) -> dict[str, Any]:
        job = self._job(r, r.route.get("job"))
        self._require(r.params.get("jobFramework"), "jobFramework is required")
        return {"events": job.events, "total": len(job.events)}

    def _v1_DescribeJobLogs(self, r: Recorded) -> dict[str, Any]:
        job = self._job(r, r.route.get("job"))
        pod = r.route["pod"]
        page = self._logs(
            job, pod, r.params.get("maxLines"), r.params.get("startTime"), r.params.get("marker")
        )
        return {"jobId": job.job_id, "podName": pod, **page}

    def _v1_DescribeJobMetrics(self, r: Recorded) -> dict[str, Any]:
        job = self._job(r, r.route.get("job"))
        return {"jobId": job.job_id, "podMetrics": self._metrics(job, r.params)}

    # -- v2 ------------------------------------------------------------------------

    def _v2_body(self, r: Recorded, *required: str) -> dict[str, Any]:
        self._require(isinstance(r.body, dict), "The body must be a JSON object")
        for name in required:
            self._require(r.body.get(name), f"{name} is required")
        self._require(r.params.get("queueID"), "queueID is required")
        return r.body

    def _v2_CreateJob(self, r: Recorded) -> dict[str, Any]:
        job = self._create(r, "v2")
        return {"jobId": job.job_id, "jobName": job.name}

    def _v2_DescribeJobs(self, r: Recorded) -> dict[str, Any]:
        body = self._v2_body(r)
        self._pool(r.params.get("resourcePoolId"))
        jobs = self._jobs_in(r.params["resourcePoolId"], r.params.get("queueID"))
        if body.get("keywordType") == "name" and body.get("keyword"):
            jobs = [j for j in jobs if body["keyword"] in j.name]
        page = self._page(jobs, body.get("pageNumber"), body.get("pageSize"))
        return {
            "totalCount": len(jobs),
            "jobs": [self._job_view(j, v2=True, detail=False) for j in page],
        }

    def _v2_DescribeJob(self, r: Recorded) -> dict[str, Any]:
        body = self._v2_body(r, "jobId")
        job = self._job(r, body["jobId"])
        return {"job": self._job_view(job, v2=True, detail=bool(body.get("needDetail")))}

    def _v2_StopJob(self, r: Recorded) -> dict[str, Any]:
        job = self._job(r, self._v2_body(r, "jobId")["jobId"])
        self.set_job_status(job.job_id, "ManualTermination")
        return {"jobId": job.job_id}

    def _v2_DeleteJob(self, r: Recorded) -> dict[str, Any]:
        job = self._job(r, self._v2_body(r, "jobId")["jobId"])
        del self.jobs[job.job_id]
        return {"jobId": job.job_id, "jobName": job.name}

    def _v2_DescribeJobEvents(self, r: Recorded) -> dict[str, Any]:
        job = self._job(r, self._v2_body(r, "jobId")["jobId"])
        return {"events": job.events, "total": len(job.events)}

    def _v2_DescribeJobLogs(self, r: Recorded) -> dict[str, Any]:
        body = self._v2_body(r, "jobId", "podName")
        job = self._job(r, body["jobId"])
        page = self._logs(
            job, body["podName"], body.get("maxLines"), body.get("startTime"), body.get("marker")
        )
        return {"jobId": job.job_id, "podName": body["podName"], **page}

    def _v2_DescribeJobMetrics(self, r: Recorded) -> dict[str, Any]:
        body = self._v2_body(r, "jobId", "metricType")
        job = self._job(r, body["jobId"])
        return {"jobId": job.job_id, "metrics": self._metrics(job, body)}

    def _v2_DescribeResourcePools(self, r: Recorded) -> dict[str, Any]:
        self._require(r.params.get("resourcePoolType"), "resourcePoolType is required")
        pools = [
            {
                "resourcePoolId": pool_id,
                "name": p["name"],
                "type": "common",
                "phase": "running",
                "bindingStorages": [{"type": "pfs", "id": p["pfs"]}] if p["pfs"] else [],
            }
            for pool_id, p in self.pools.items()
        ]
        page = self._page(pools, r.params.get("pageNumber"), r.params.get("pageSize"))
        return {"totalCount": len(pools), "resourcePools": page}

    def _v2_DescribeQueues(self, r: Recorded) -> dict[str, Any]:
        pool = self._pool(r.params.get("resourcePoolId"))
        queues = [{"queueId": q, "queueName": q, "opened": True} for q in pool["queues"]]
        page = self._page(queues, r.params.get("pageNumber"), r.params.get("pageSize"))
        return {"totalCount": len(queues), "queues": page}

    @staticmethod
    def _accelerators_statistic(gpus: dict[str, tuple[int, int]]) -> dict[str, Any]:
        """[go] v2/api/resourcepool.go AcceleratorsStatistic: totals + per-type rows (floats)."""
        total = sum(t for t, _ in gpus.values())
        used = sum(u for _, u in gpus.values())
        return {
            "resourceType": "accelerator",
            "capacity": float(total),
            "allocated": float(used),
            "idle": float(total - used),
            "acceleratorStatistics": [
                {
                    "acceleratorType": kind.rpartition("/")[2],
                    "resourceType": kind,
                    "capacity": float(t),
                    "allocated": float(u),
                    "idle": float(t - u),
                }
                for kind, (t, u) in gpus.items()
            ],
        }

    def _v2_DescribeResourcePoolOverview(self, r: Recorded) -> dict[str, Any]:
        # ResourcePoolStatistic: {resourcePoolId, type, name, nodesStatistic,
        # resourcesStatistic, acceleratorsStatistic{..., acceleratorStatistics[]}}.
        rows = [
            {
                "resourcePoolId": pool_id,
                "type": "common",
                "name": p["name"],
                "acceleratorsStatistic": self._accelerators_statistic(p["gpus"]),
            }
            for pool_id, p in self.pools.items()
        ]
        every: dict[str, tuple[int, int]] = {}
        for p in self.pools.values():
            for kind, (total, used) in p["gpus"].items():
                t, u = every.get(kind, (0, 0))
                every[kind] = (t + total, u + used)
        return {
            "resourcePoolsStatisticWithType": [
                {
                    "type": "common",
                    "acceleratorsStatistic": self._accelerators_statistic(every),
                    "resourcePoolStatistics": rows,
                }
            ]
        }


def configure(settings: Any, fake: FakeAihc, **overrides: Any) -> None:
    """Points the console's AIHC backend (pytest-django `settings`) at the fake."""
    settings.CONSOLE_BACKENDS = ["local", "aihc"]
    settings.AIHC_ENDPOINT = fake.url
    settings.AIHC_ACCESS_KEY = fake.access_key
    settings.AIHC_SECRET_KEY = fake.secret_key
    settings.AIHC_API_VERSION = "v1"
    settings.AIHC_POOL_API_VERSIONS = {}
    settings.AIHC_POOLS = []
    settings.AIHC_RETRY_BACKOFF = 0.01
    settings.AIHC_READ_TIMEOUT = 5
    settings.AIHC_INVENTORY_WAIT_SECONDS = 5
    settings.AIHC_REFRESH_WAIT_SECONDS = 0.5
    for name, value in overrides.items():
        setattr(settings, name, value)
