"""A strict fake Kubernetes API server with the Kubeflow training-operator CRDs and JobSet's
(jobset.x-k8s.io/v1alpha2), on 127.0.0.1.

No API server can run here, so this stands in for one, checking what a real one (with the
training operator's CRDs and validating webhook) checks before it stores an object:

- a bearer token on every request (401 Unauthorized Status otherwise);
- paths, verbs and content types: POST to collections with application/json, PATCH with a
  patch content type, GET/DELETE on objects; a PyTorchJob under kubeflow.org/v2beta1 or an
  MPIJob under v1 is no resource this server has (404);
- bodies: JSON objects whose kind and apiVersion are the path's, metadata.namespace the path's,
  the namespace existing, metadata.name a DNS-1123 subdomain (Secrets) or a DNS-1035 label of
  at most 63 (the training jobs: the operator names services after them), label keys and
  values within their syntax and 63-character limits;
- every field against the official schema of the kind (tests/k8s_schema.py: the Kubernetes
  client's core/v1 and batch/v1 models, the training operator v1.9 SDK's PyTorchJob and
  TFJob, MPIJob v2beta1's and JobSet v1alpha2's Go types): a field the schema does not
  declare is refused with fieldValidation=Strict (400 BadRequest "strict decoding error:
  unknown field ..."), and otherwise pruned from what is stored, with a `Warning: 299`
  header unless fieldValidation=Ignore, as a real API server does; a wrong type or a missing
  required field is 422 Invalid (400 for a Secret, which fails to decode); a merge patch is
  held to the same schema (unknown fields with Strict, wrong types), less the required ones;
- then values (422 Invalid, with causes): replica counts (a PyTorchJob's one Master, an
  MPIJob's one Launcher and at least one Worker, a TFJob's one Chief-or-Master type), MPIJob
  restart policies (Never or OnFailure) and worker hostnames, the container the operator
  looks for ("pytorch", "tensorflow"), quantities' syntax, extended resources whole and
  with requests equal to limits, env var names, value and valueFrom not both, a
  volumeMount naming no volume of the pod, subPath inside the volume, and secretKeyRef
  naming a Secret and key that exist (a real server would store the job and its pods would
  never start: CreateContainerConfigError; refusing is how the fake makes that visible), and
  a container's securityContext.privileged a boolean;
- Pod Security Admission at a namespace's level (`add_namespace(pod_security=...)`) as a real
  API server applies it: to pods, never to the job that makes them. The job is stored; the
  pods `run_pods` makes as its operator would are refused where the level forbids them
  (pod_security_violations: baseline's host network, hostPath volumes and privileged
  containers, restricted's also what every console pod lacks), with the real message shape
  (`pods "x" is forbidden: violates PodSecurity "restricted:latest": ...`) in the Warning
  event the operator records instead (FailedCreatePod, MPIJobFailed, or a batch Job's
  FailedCreate). A namespace's GET answers that level as its
  pod-security.kubernetes.io/enforce label (none when privileged);
- 409 AlreadyExists, 404 NotFound, answered as Status objects; each write gives its object
  the next resourceVersion, and a patch carrying an older one is 409 Conflict;
- JobSets as the CRD's schema and JobSet's webhook check them: spec, replicatedJobs (a
  non-empty list of unique names), their batch/v1 Job templates (completionMode, counts,
  restartPolicy OnFailure or Never as the Job API requires, Indexed with completions),
  network (subdomain a DNS-1035 label), successPolicy (operator All or Any, targets that
  exist), failurePolicy (maxRestarts, rules with a valid name and action); the Jobs and pods
  it would name (`<jobset>-<replicatedJob>-<i>`, `<...>-<i>-<index>-xxxxx`) DNS-1035 labels of
  at most 63; `jobset=False` is a cluster without JobSet installed (404, as for any path the
  API server serves nothing at);
- TrainJobs (trainer.kubeflow.org/v1alpha1, Kubeflow Trainer v2.2) as the CRD's schema and
  Trainer's webhooks check them: metadata.name a DNS-1035 label of at most 63 (the CRD's
  rule), runtimeRef naming a ClusterTrainingRuntime the cluster has (`runtimes`: Trainer's
  torch-distributed by default), numNodes and numProcPerNode 1 or more,
  activeDeadlineSeconds 1 or more, no trainer env the torch plugin reserves (PET_*), each
  runtimePatches manager once, patching the runtime's "node" replicatedJob and container
  only; then the node pod Trainer would make from it (the runtime's "node" container with
  the trainer's image, command, env and resourcesPerNode, and the patch's volumes, mounts,
  securityContext, nodeSelector, tolerations and pull secrets) is checked as any pod
  template is; `trainer=False` is a cluster without Trainer (404);
- RBAC: a verb on a resource the identity may not use (`forbid`) is 403 Forbidden, worded as
  the API server words it, before the namespace is even looked up.

The Metrics API (metrics.k8s.io/v1beta1, as metrics-server serves it) answers list and get
of PodMetrics in a namespace for its Running pods: their labels, a timestamp, a window and
each container's usage (cpu and memory quantities, zero until `set_usage` says otherwise);
`metrics_server=False` is a cluster without it (404, as for any path nothing is served at).
RBAC on it is `forbid("list", "pods.metrics.k8s.io")`.

ResourceQuotas are served read-only (list and get, in a namespace or cluster-wide), with
spec.hard and status.hard/status.used as the quota controller writes them; `add_quota`
refuses what the API server's validation refuses (an extended resource limited other than
as `requests.<name>`). One is enforced: `count/jobs.batch`, on the Jobs the JobSet
controller makes for a JobSet or a TrainJob (`run_pods`): a Job over it is not made, and the
JobSet says so as its controller does (a Warning JobCreationFailed event, `_jobs_refused`).

It records every request. Tests steer it: `set_conditions`, `set_jobset_status`
(replicatedJobsStatus and restarts, as the JobSet controller writes them), `run_pods` (pods
as the operator, or the JobSet and Job controllers, make them, with their labels; a JobSet's
replicatedJobsStatus follows its pods, as its controllers count them), `add_event`, `add_logs`
(`add_generated_log`: a large log made as it is sent, never held), `add_node` / `add_pod` / `add_quota`
for inventory, `forbid(verb, plural)` for RBAC, `fail_next(op)` / `drop_next(op)` /
`delay_next(op)` / `block_next(op)` / `trickle_next(op)` for the next call of one operation ("create pytorchjobs",
"get secrets", "list pods", "list resourcequotas", "log pods", ...), and `hold_deletions`
(a job's delete marks its pods terminating, and a Foreground one the job deleting too,
until `finish_deletions`).
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests import k8s_schema

DNS_LABEL = re.compile(r"^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$")
DNS_1035 = re.compile(r"^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(
    r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$"
)
LABEL_NAME = re.compile(r"^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
QUANTITY = re.compile(
    r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
PORT_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9](?:-?[a-z0-9])*$")
SERVICE_ACCOUNT = "system:serviceaccount:ai-console:ai-job-console"
METRICS = "pods.metrics.k8s.io"  # the Metrics API's PodMetrics, as the route names them

# kind -> (apiVersion, plural, replica specs key, replica types, the operator's container)
CRDS = {
    "PyTorchJob": (
        "kubeflow.org/v1",
        "pytorchjobs",
        "pytorchReplicaSpecs",
        {"Master", "Worker"},
        "pytorch",
    ),
    "TFJob": (
        "kubeflow.org/v1",
        "tfjobs",
        "tfReplicaSpecs",
        {"Chief", "Master", "Worker", "PS", "Evaluator"},
        "tensorflow",
    ),
    "MPIJob": ("kubeflow.org/v2beta1", "mpijobs", "mpiReplicaSpecs", {"Launcher", "Worker"}, ""),
}
PLURALS = {plural: kind for kind, (_v, plural, *_rest) in CRDS.items()}
JOBSET_VERSION = "jobset.x-k8s.io/v1alpha2"
TRAINJOB_VERSION = "trainer.kubeflow.org/v1alpha1"
# Every job kind served: plural -> kind, and its apiVersion.
JOB_PLURALS = {**PLURALS, "jobsets": "JobSet", "trainjobs": "TrainJob"}
VERSIONS = {
    **{plural: CRDS[kind][0] for plural, kind in PLURALS.items()},
    "jobsets": JOBSET_VERSION,
    "trainjobs": TRAINJOB_VERSION,
}
# Kubeflow Trainer's torch plugin (pkg/runtime/framework/plugins/torch/torch.go): the
# variables it sets in the trainer container (and refuses in trainer.env), and its port.
TORCH_RESERVED_ENVS = (
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
)
TRAINER_PORT = 29500  # pkg/constants/constants.go ContainerTrainerPort
JOBSET_SPEC_KEYS = {
    "replicatedJobs",
    "network",
    "successPolicy",
    "failurePolicy",
    "startupPolicy",
    "suspend",
    "coordinator",
    "managedBy",
    "ttlSecondsAfterFinished",
}
REPLICATED_JOB_KEYS = {"name", "groupName", "template", "replicas", "dependsOn"}
JOB_SPEC_KEYS = {
    "parallelism",
    "completions",
    "completionMode",
    "activeDeadlineSeconds",
    "backoffLimit",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    "podFailurePolicy",
    "successPolicy",
    "selector",
    "manualSelector",
    "template",
    "ttlSecondsAfterFinished",
    "suspend",
    "podReplacementPolicy",
}
FAILURE_ACTIONS = {
    "FailJobSet",
    "RestartJobSet",
    "RestartJobSetAndIgnoreMaxRestarts",
}
RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
SPEC_KEYS = {
    "PyTorchJob": {"runPolicy", "pytorchReplicaSpecs", "elasticPolicy", "nprocPerNode"},
    "TFJob": {"runPolicy", "tfReplicaSpecs", "successPolicy", "enableDynamicWorker"},
    "MPIJob": {
        "slotsPerWorker",
        "runPolicy",
        "mpiReplicaSpecs",
        "sshAuthMountPath",
        "mpiImplementation",
        "launcherCreationPolicy",
        "runLauncherAsWorker",
    },
}
RUN_POLICY_KEYS = {
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
    "suspend",
    "managedBy",
}
REPLICA_KEYS = {"replicas", "template", "restartPolicy"}
POD_KEYS = {
    "containers",
    "initContainers",
    "volumes",
    "restartPolicy",
    "nodeSelector",
    "priorityClassName",
    "hostNetwork",
    "dnsPolicy",
    "tolerations",
    "affinity",
    "serviceAccountName",
    "imagePullSecrets",
    "securityContext",
    "schedulerName",
    "terminationGracePeriodSeconds",
}
# Pod Security Admission's levels (pod-security.kubernetes.io/enforce); only "privileged"
# admits a privileged container.
POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")


def _named(what: str, names: list[str]) -> str:
    """Pod Security's way of naming the containers or volumes a check found: `container "a"`,
    `containers "a", "b"`."""
    quoted = ", ".join(f'"{n}"' for n in names)
    return f"{what}{'s' if len(names) > 1 else ''} {quoted}"


def pod_security_violations(spec: dict, level: str) -> list[str]:
    """What Pod Security Admission's `level` (latest) finds wrong in a pod spec, in its own
    words and order (k8s.io/pod-security-admission/policy, its checks sorted by ID), of the
    fields a console pod can carry: baseline's host namespaces, hostPath volumes and
    privileged; restricted's also allowPrivilegeEscalation, capabilities, volume types,
    runAsNonRoot and seccompProfile. Empty when it admits the pod."""
    if level == "privileged":
        return []
    containers = spec.get("containers") or []
    names = [str(c.get("name")) for c in containers]

    def security(container: dict) -> dict:
        return container.get("securityContext") or {}

    pod_security = spec.get("securityContext") or {}
    host_paths = [str(v.get("name")) for v in spec.get("volumes") or [] if "hostPath" in v]
    privileged = [str(c.get("name")) for c in containers if security(c).get("privileged")]
    restricted = level == "restricted"
    found = []
    escalating = [
        str(c.get("name"))
        for c in containers
        if security(c).get("allowPrivilegeEscalation") is not False
    ]
    if restricted and escalating:
        found.append(
            f"allowPrivilegeEscalation != false ({_named('container', escalating)} must set "
            "securityContext.allowPrivilegeEscalation=false)"
        )
    dropping_all = [
        str(c.get("name"))
        for c in containers
        if "ALL" not in ((security(c).get("capabilities") or {}).get("drop") or [])
    ]
    if restricted and dropping_all:
        found.append(
            f"unrestricted capabilities ({_named('container', dropping_all)} must set "
            'securityContext.capabilities.drop=["ALL"])'
        )
    if spec.get("hostNetwork"):
        found.append("host namespaces (hostNetwork=true)")
    if host_paths:
        found.append(f"hostPath volumes ({_named('volume', host_paths)})")
    if privileged:
        found.append(
            f"privileged ({_named('container', privileged)} must not set "
            "securityContext.privileged=true)"
        )
    if restricted and host_paths:
        found.append(
            "restricted volume types "
            f"({_named('volume', host_paths)} use{'' if len(host_paths) > 1 else 's'} "
            'restricted volume type "hostPath")'
        )
    if restricted and not pod_security.get("runAsNonRoot"):
        unset = [
            n for c, n in zip(containers, names, strict=True) if not security(c).get("runAsNonRoot")
        ]
        if unset:
            found.append(
                f"runAsNonRoot != true (pod or {_named('container', unset)} must set "
                "securityContext.runAsNonRoot=true)"
            )
    if restricted and not (pod_security.get("seccompProfile") or {}).get("type"):
        unset = [
            n
            for c, n in zip(containers, names, strict=True)
            if not (security(c).get("seccompProfile") or {}).get("type")
        ]
        if unset:
            found.append(
                f"seccompProfile (pod or {_named('container', unset)} must set "
                'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
            )
    return found


CONTAINER_KEYS = {
    "name",
    "image",
    "command",
    "args",
    "env",
    "resources",
    "ports",
    "volumeMounts",
    "workingDir",
    "imagePullPolicy",
    "securityContext",
}
OBJECT_META_KEYS = {
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
}
VOLUME_SOURCES = {"emptyDir", "persistentVolumeClaim", "hostPath", "secret", "configMap"}
VOLUME_SOURCE_KEYS = {
    "emptyDir": {"medium", "sizeLimit"},
    "persistentVolumeClaim": {"claimName", "readOnly"},
    "hostPath": {"path", "type"},
    "secret": {"secretName", "items", "defaultMode", "optional"},
    "configMap": {"name", "items", "defaultMode", "optional"},
}
HOST_PATH_TYPES = {
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
}


class Refusal(Exception):
    def __init__(self, code: int, reason: str, message: str, causes: list[dict] | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.causes = code, reason, message, causes or []


def status(code: int, reason: str, message: str, causes: list[dict] | None = None) -> dict:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure" if code >= 400 else "Success",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if causes:
        body["details"] = {"causes": causes}
    return body


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    op: str = ""
    warnings: list[str] = field(default_factory=list)  # sent back as `Warning: 299` headers

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


@dataclass
class Fault:
    status: int = 0
    reason: str = ""
    message: str = ""
    delay: float = 0.0
    drop: bool = False
    release: threading.Event | None = None  # held until set (block_next)
    after: bool = False  # carry out the request, then fail the answer
    trickle: float = 0.0  # the answer sent in `pieces`, this many seconds between them
    pieces: int = 1


@dataclass(frozen=True)
class GeneratedLog:
    """A pod's log of `count` lines made as it is sent (add_generated_log): line i is
    `line_of(i)`, every line as long as the first (its Content-Length is known without
    making them all), never held whole, so a test can measure what the console holds."""

    line_of: Callable[[int], str]
    count: int
    # What ends each line: "\r" for a progress bar's redraws, "" for a log that is all one
    # line (a tool that never ends its line).
    end: str = "\n"

    def line(self, i: int) -> bytes:
        return (self.line_of(i) + self.end).encode()

    @property
    def size(self) -> int:
        return len(self.line(0)) * self.count

    def chunks(self, lines_per_chunk: int = 512) -> Iterator[bytes]:
        width = len(self.line(0))
        for start in range(0, self.count, lines_per_chunk):
            chunk = b"".join(
                self.line(i) for i in range(start, min(start + lines_per_chunk, self.count))
            )
            assert len(chunk) == width * (min(start + lines_per_chunk, self.count) - start)
            yield chunk


def _mpi_operator_pod(
    name: str, replica_type: str, index: int, replica: dict
) -> tuple[str, dict[str, str]]:
    """An MPIJob pod's name and labels as mpi-operator v2 makes them (kubeflow/mpi-operator
    pkg/controller/mpi_job_controller.go): defaultLabels gives every pod operator-name,
    job-name and job-role only (no replica-type); newWorker adds ReplicaIndexLabel to a
    worker, named <job>-worker-<i>; newLauncherJob runs the launcher as the batch Job
    <job>-launcher, whose controller names its pod <job>-launcher-<5 random> and adds its
    own job-name and controller-uid labels, and no replica index."""
    labels = {
        **((replica["template"].get("metadata") or {}).get("labels") or {}),
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/job-role": replica_type.lower(),
    }
    if replica_type == "Worker":
        labels["training.kubeflow.org/replica-index"] = str(index)
        return f"{name}-worker-{index}", labels
    launcher_job, uid = f"{name}-launcher", str(uuid.uuid4())
    labels.update(
        {
            "batch.kubernetes.io/job-name": launcher_job,
            "job-name": launcher_job,
            "batch.kubernetes.io/controller-uid": uid,
            "controller-uid": uid,
        }
    )
    return f"{launcher_job}-{uuid.uuid4().hex[:5]}", labels


def _container_state(phase: str, exit_code: int | None) -> dict[str, Any]:
    """A container's state in a pod of that phase: a Pending pod's has not started."""
    if exit_code is not None:
        return {"terminated": {"exitCode": exit_code}}
    if phase == "Pending":
        return {"waiting": {"reason": "ContainerCreating"}}
    return {"running": {"startedAt": now_stamp()}}


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Invalid:
    """Collects field errors of one object: unknown fields (400) and bad values (422)."""

    def __init__(self, kind: str, name: str, *, schema_checked: bool = False):
        """`schema_checked`: the object's field names were already held to the official
        schema (tests/k8s_schema.py); the hand-written field lists then only shape the
        value checks that follow, and report nothing of their own."""
        self.kind, self.name = kind, name
        self.schema_checked = schema_checked
        self.unknown: list[str] = []
        self.causes: list[dict[str, str]] = []
        self.undecodable: list[str] = []  # a core object's wrong types: 400, as decoding fails

    def fields(self, value: Any, allowed: set[str], path: str) -> dict:
        if not isinstance(value, dict):
            self.bad(path, f"must be an object, not {type(value).__name__}")
            return {}
        if not self.schema_checked:
            for key in value:
                if key not in allowed:
                    self.unknown.append(f"{path}.{key}")
        return value

    def bad(self, path: str, message: str) -> None:
        self.causes.append({"reason": "FieldValueInvalid", "message": message, "field": path})

    def raise_if_any(self) -> None:
        if self.undecodable:
            raise Refusal(
                400,
                "BadRequest",
                f'{self.kind} in version "v1" cannot be handled as a {self.kind}: '
                + "; ".join(self.undecodable),
            )
        if self.unknown:
            raise Refusal(
                400,
                "BadRequest",
                f'{self.kind} in version "v1" cannot be handled as a {self.kind}: strict '
                "decoding error: "
                + ", ".join(f'unknown field "{f.lstrip(".")}"' for f in self.unknown),
            )
        if self.causes:
            raise Refusal(
                422,
                "Invalid",
                f'{self.kind} "{self.name}" is invalid: '
                + "; ".join(f"{c['field']}: {c['message']}" for c in self.causes),
                self.causes,
            )


def quantity(text: Any) -> float | None:
    if isinstance(text, int) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str) or not QUANTITY.match(text):
        return None
    units = {
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
        "Pi": 2**50,
        "Ei": 2**60,
        "n": 1e-9,
        "u": 1e-6,
        "m": 1e-3,
        "k": 1e3,
        "M": 1e6,
        "G": 1e9,
        "T": 1e12,
        "P": 1e15,
        "E": 1e18,
    }
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * units[suffix]
    return float(text)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class FakeKubernetes:
    def __init__(
        self,
        *,
        token: str = "fake-bearer-token",
        tls: tuple[str, str] | None = None,
        jobset: bool = True,
        metrics_server: bool = True,
        trainer: bool = True,
    ):
        """`tls`: (certificate file, key file) to serve HTTPS, as a real API server does;
        `jobset`: JobSet's CRD is installed; `metrics_server`: the Metrics API is served."""
        self.token = token
        # Tokens rotated away (rotate_token): still accepted, as until they expire.
        self.previous_tokens: set[str] = set()
        self.jobset = jobset
        self.metrics_server = metrics_server
        self.trainer = trainer
        # Kubeflow Trainer's ClusterTrainingRuntimes, by name: the image of its "node"
        # container (manifests/base/runtimes/torch_distributed.yaml).
        self.runtimes = {"torch-distributed": "pytorch/pytorch:2.7.1-cuda12.6-cudnn9-runtime"}
        # (namespace, pod) -> (timestamp, {container: {"cpu": ..., "memory": ...}})
        self.usage: dict[tuple[str, str], tuple[str, dict[str, dict[str, str]]]] = {}
        self.tls = tls
        self.namespaces = {"default"}
        self.pod_security: dict[str, str] = {}  # namespace -> enforce level (add_namespace)
        self.objects: dict[tuple[str, str, str], dict] = {}  # (plural, namespace, name)
        # The store's revision, as etcd's: each write gives its object the next
        # metadata.resourceVersion, which a patch or update may carry as a precondition.
        self.revision = 1
        self.nodes: list[dict] = []
        self.pods: dict[tuple[str, str], dict] = {}
        # The batch Jobs the JobSet controller made (a JobSet's, Trainer's), as
        # (namespace, name, restart attempt): made once each, held to `count/jobs.batch`.
        self.batch_jobs: set[tuple[str, str, str]] = set()
        self.events: list[dict] = []
        self.log_lines: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.generated_logs: dict[tuple[str, str], GeneratedLog] = {}
        self.requests: list[Recorded] = []
        self.faults: dict[str, list[Fault]] = {}
        # (verb, plural, namespace or "" for the cluster scope) the identity may not use.
        self.forbidden: set[tuple[str, str, str]] = set()
        self.hold_deletions = False
        # Object name -> seconds every request naming it waits before its answer (stall).
        self.stalled: dict[str, float] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- life --------------------------------------------------------------------------

    def start(self) -> FakeKubernetes:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._handle(self)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    # -- steering ------------------------------------------------------------------------

    def add_namespace(self, name: str, *, pod_security: str = "privileged") -> None:
        """`pod_security`: the namespace's Pod Security Admission level (its
        pod-security.kubernetes.io/enforce label); unlabelled, a namespace is "privileged"."""
        if pod_security not in POD_SECURITY_LEVELS:
            raise ValueError(f"pod_security is one of {POD_SECURITY_LEVELS}")
        self.namespaces.add(name)
        self.pod_security[name] = pod_security

    def add_node(
        self,
        name: str,
        allocatable: dict[str, str],
        *,
        labels: dict | None = None,
        unschedulable: bool = False,
        taints: list[dict] | None = None,
        ready: bool = True,
    ) -> None:
        """A node; one not Ready also gets the taints the node controller gives it."""
        taints = list(taints or [])
        if not ready:
            taints += [
                {"key": "node.kubernetes.io/not-ready", "effect": effect}
                for effect in ("NoSchedule", "NoExecute")
            ]
        spec: dict[str, Any] = {"unschedulable": True} if unschedulable else {}
        if taints:
            spec["taints"] = taints
        self.nodes.append(
            {
                "metadata": {"name": name, "labels": labels or {}},
                "spec": spec,
                "status": {
                    "allocatable": {"cpu": "64", "memory": "512Gi", **allocatable},
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                },
            }
        )

    def add_pod(
        self,
        namespace: str,
        name: str,
        *,
        node: str,
        requests: dict[str, str],
        phase: str = "Running",
        labels: dict | None = None,
    ) -> dict:
        pod = {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels or {},
                "uid": str(uuid.uuid4()),
            },
            "spec": {
                "nodeName": node,
                "containers": [
                    {
                        "name": "main",
                        "image": "x",
                        "resources": {"requests": requests, "limits": requests},
                    }
                ],
            },
            "status": {"phase": phase},
        }
        self.pods[(namespace, name)] = pod
        return pod

    def add_quota(
        self,
        namespace: str,
        name: str,
        *,
        hard: dict[str, str],
        used: dict[str, str] | None = None,
        scopes: tuple[str, ...] = (),
    ) -> dict:
        """A ResourceQuota as the quota controller leaves it: status.hard = spec.hard,
        status.used what the namespace's pods request (`used`, 0 for the rest)."""
        for key in hard:
            # An extended resource (a name with a domain) only as requests.<name>.
            extended = "/" in key and not key.startswith("count/")
            if extended and not key.startswith("requests."):
                raise ValueError(f"{key}: an extended resource is limited as requests.<name>")
        quota = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": str(uuid.uuid4()),
                "resourceVersion": "1",
            },
            "spec": {"hard": dict(hard), **({"scopes": list(scopes)} if scopes else {})},
            "status": {
                "hard": dict(hard),
                "used": {key: (used or {}).get(key, "0") for key in hard},
            },
        }
        with self._lock:
            self.objects[("resourcequotas", namespace, name)] = quota
        return quota

    def rotate_token(self, token: str) -> None:
        """The identity's token becomes `token`, as the kubelet rotates a pod's projected
        service account token (at 80% of its lifetime): the one before is still accepted,
        as it is until it expires."""
        self.previous_tokens.add(self.token)
        self.token = token

    def forbid(self, verb: str, plural: str, *, namespace: str = "") -> None:
        """The identity's Roles do not grant `verb` on `plural` in `namespace` (cluster-wide
        with none): such requests are 403 Forbidden."""
        self.forbidden.add((verb, plural, namespace))

    def fail_next(
        self,
        op: str,
        *,
        status: int = 500,
        reason: str = "InternalError",
        message: str = "Internal error occurred",
        after: bool = False,
        times: int = 1,
    ) -> None:
        for _ in range(times):
            self.faults.setdefault(op, []).append(
                Fault(status=status, reason=reason, message=message, after=after)
            )

    def drop_next(self, op: str, *, after: bool = False, times: int = 1) -> None:
        """Closes the connection without an answer (after carrying the request out, `after`)."""
        for _ in range(times):
            self.faults.setdefault(op, []).append(Fault(drop=True, after=after))

    def delay_next(self, op: str, seconds: float, *, times: int = 1) -> None:
        """Holds the answer to the next `times` calls of `op` for `seconds` (past the client's
        read timeout: a server that takes the request and does not answer it)."""
        for _ in range(times):
            self.faults.setdefault(op, []).append(Fault(delay=seconds))

    def trickle_next(self, op: str, seconds: float, *, pieces: int = 10, times: int = 1) -> None:
        """Sends the answer to the next `times` calls of `op` in `pieces`, `seconds` between
        them, once its headers are out: a server that stalls (or crawls) mid-answer."""
        for _ in range(times):
            self.faults.setdefault(op, []).append(Fault(trickle=seconds, pieces=pieces))

    def stall(self, name: str, seconds: float) -> None:
        """Every request naming the object `name` waits `seconds` before it is answered,
        until `stalled` is cleared: one object the server is slow on, the others answered."""
        self.stalled[name] = seconds

    def block_next(self, op: str, *, after: bool = False) -> threading.Event:
        """Holds the next `op` call until the returned event is set (at most 30 s); with
        `after`, it is carried out first and only its answer held (a delete the server has
        done while the client still waits to hear so)."""
        release = threading.Event()
        self.faults.setdefault(op, []).append(Fault(release=release, after=after))
        return release

    def job(self, name: str, namespace: str = "default") -> dict:
        found = [
            o
            for (p, ns, n), o in self.objects.items()
            if p in JOB_PLURALS and ns == namespace and n == name
        ]
        assert found, f"no training job {namespace}/{name}"
        return found[0]

    def jobs(self) -> list[dict]:
        return [o for (p, _ns, _n), o in self.objects.items() if p in JOB_PLURALS]

    def secret(self, name: str, namespace: str = "default") -> dict | None:
        return self.objects.get(("secrets", namespace, name))

    def set_conditions(
        self,
        name: str,
        *conditions: tuple[str, str] | tuple[str, str, str],
        namespace: str = "default",
    ) -> None:
        """Conditions as the operator writes them: (type, message[, reason]), each True. The
        reason by default is the operators' <Kind><type> (training-operator's
        commonutil.NewReason(jobKind, ...), mpi-operator's mpiJob*Reason: PyTorchJobFailed)."""
        job = self.job(name, namespace)
        job.setdefault("status", {})["conditions"] = [
            {
                "type": c[0],
                "status": "True",
                "message": c[1],
                "reason": c[2] if len(c) > 2 else f"{job['kind']}{c[0]}",
                "lastTransitionTime": now_stamp(),
            }
            for c in conditions
        ]

    def fail_past_deadline(self, name: str, *, namespace: str = "default") -> None:
        """The Failed condition the operator writes once the job is past its
        runPolicy.activeDeadlineSeconds. training-operator (pkg/controller.v1/common/job.go,
        ReconcileJobs): reason <Kind>Failed, "Job <name> has failed because it was active
        longer than specified deadline". mpi-operator v2 (updateMPIJobFailedStatus) copies
        its launcher Job's, which the Job controller failed with DeadlineExceeded, "Job was
        active longer than specified deadline"."""
        kind = self.job(name, namespace)["kind"]
        if kind == "MPIJob":
            reason, message = "DeadlineExceeded", "Job was active longer than specified deadline"
        else:
            reason = f"{kind}Failed"
            message = f"Job {name} has failed because it was active longer than specified deadline"
        self.set_conditions(name, ("Failed", message, reason), namespace=namespace)

    def set_jobset_status(
        self,
        name: str,
        replicated: dict[str, dict[str, int]],
        *,
        restarts: int = 0,
        namespace: str = "default",
    ) -> None:
        """A JobSet's status.replicatedJobsStatus ({replicatedJob: {"active": 1, ...}}, the
        other counts 0) and status.restarts, as the JobSet controller writes them."""
        job = self.job(name, namespace)
        job.setdefault("status", {}).update(
            restarts=restarts,
            replicatedJobsStatus=[
                {
                    "name": rjob,
                    **{k: counts.get(k, 0) for k in ("ready", "succeeded", "failed", "active")},
                    "suspended": counts.get("suspended", 0),
                }
                for rjob, counts in replicated.items()
            ],
        )

    def run_pods(
        self,
        name: str,
        *,
        phase: str = "Running",
        namespace: str = "default",
        node: str = "node-1",
        restarts: int = 0,
        exit_code: int | None = None,
        attempt: int = 0,
    ) -> list[str]:
        """The job's pods as the training operator creates them: named <job>-<type>-<i>,
        with the template's labels and the operator's own (an MPIJob's as mpi-operator
        names and labels them: _mpi_operator_pod); those the namespace's Pod Security level
        refuses are not made, the operator's event saying so (_refused_by_admission,
        _job_refused), and are left out of the names returned. `node` "": not scheduled yet
        (unscheduled). `attempt`: a TrainJob's, the restart of Trainer's JobSet they are of
        (a custom job's JobSet says its own: set_jobset_status)."""
        job = self.job(name, namespace)
        kind = job["kind"]
        if kind == "JobSet":
            return self._run_jobset_pods(
                job, phase=phase, node=node, restarts=restarts, exit_code=exit_code
            )
        if kind == "TrainJob":
            return self._run_trainjob_pods(
                job, phase=phase, node=node, restarts=restarts, exit_code=exit_code, attempt=attempt
            )
        key = CRDS[kind][2]
        refused = self._refused_by_admission(job, key)
        made = []
        for replica_type, replica in job["spec"][key].items():
            if replica_type in refused:
                continue
            for index in range(replica.get("replicas", 1)):
                pod_name = f"{name}-{replica_type.lower()}-{index}"
                labels = {
                    **((replica["template"].get("metadata") or {}).get("labels") or {}),
                    "training.kubeflow.org/job-name": name,
                    "training.kubeflow.org/replica-type": replica_type.lower(),
                    "training.kubeflow.org/replica-index": str(index),
                }
                if kind == "MPIJob":
                    pod_name, labels = _mpi_operator_pod(name, replica_type, index, replica)
                state = _container_state(phase, exit_code)
                containers = replica["template"]["spec"]["containers"]
                self.pods[(namespace, pod_name)] = {
                    "metadata": {
                        "name": pod_name,
                        "namespace": namespace,
                        "labels": labels,
                        "uid": str(uuid.uuid4()),
                    },
                    "spec": {**replica["template"]["spec"], "nodeName": node},
                    "status": {
                        "phase": phase,
                        "startTime": now_stamp(),
                        "containerStatuses": [
                            {"name": c["name"], "restartCount": restarts, "state": state}
                            for c in containers
                        ],
                    },
                }
                made.append(pod_name)
        if not node:
            self.unscheduled(made, namespace=namespace)
        return made

    def _admission_refusal(self, namespace: str, pod_name: str, spec: dict) -> str | None:
        """The API server's refusal of a pod's create in `namespace`, as the operator's
        error quotes it: Pod Security Admission at the namespace's level refuses a pod, never
        the job that makes it (`pods "<name>" is forbidden: violates PodSecurity
        "<level>:latest": ...`). None when the pod is admitted."""
        level = self.pod_security.get(namespace, "privileged")
        found = pod_security_violations(spec, level)
        if not found:
            return None
        return (
            f'pods "{pod_name}" is forbidden: violates PodSecurity "{level}:latest": '
            + ", ".join(found)
        )

    def _refused_by_admission(self, job: dict, key: str) -> set[str]:
        """The replica types of a training-operator or MPI job whose pods are not made, each
        refusal said as its operator says it (a Warning event on the job, or on the launcher's
        batch Job), in the order it creates them:
        - training-operator (pkg/controller.v1/control/pod_control.go, createPods):
          FailedCreatePod, "Error creating: <error>"; its reconcile stops at the first pod
          refused (common/job.go: ReconcilePods' error is returned) and is tried again, its
          replica types in Go's map order, a new one each time, so the types admitted are
          made in the end and the refused ones never;
        - mpi-operator v2 (pkg/controller/mpi_job_controller.go): the workers first
          (getOrCreateWorker: MPIJobFailed, "worker pod created failed: <error>", and the
          sync returns, so no launcher Job either), then the launcher Job, whose pod the Job
          controller creates with generateName <job>-launcher- (FailedCreate on that Job,
          "Error creating: <error>": kubernetes pkg/controller/controller_utils.go)."""
        name, namespace, kind = job["metadata"]["name"], job["metadata"]["namespace"], job["kind"]
        replicas = job["spec"][key]
        order = (
            sorted(replicas, key=lambda t: t != "Worker") if kind == "MPIJob" else list(replicas)
        )
        refused: set[str] = set()
        for replica_type in order:
            spec = replicas[replica_type]["template"]["spec"]
            if kind == "MPIJob" and replica_type == "Launcher":
                refusal = self._admission_refusal(namespace, f"{name}-launcher-", spec)
                if refusal:
                    self.add_event(
                        "Job",
                        f"{name}-launcher",
                        "FailedCreate",
                        f"Error creating: {refusal}",
                        type="Warning",
                        namespace=namespace,
                    )
                    return {replica_type}
                continue
            pod_name = f"{name}-{replica_type.lower()}-0"
            refusal = self._admission_refusal(namespace, pod_name, spec)
            if refusal is None:
                continue
            if kind == "MPIJob":
                message = f"worker pod created failed: {refusal}"
                self.add_event(
                    kind, name, "MPIJobFailed", message, type="Warning", namespace=namespace
                )
                return set(order)
            message = f"Error creating: {refusal}"
            self.add_event(
                kind, name, "FailedCreatePod", message, type="Warning", namespace=namespace
            )
            refused.add(replica_type)
        return refused

    def unscheduled(self, pods: list[str], *, namespace: str = "default") -> None:
        """The pods as the API server has them before the scheduler places them: no
        spec.nodeName, Pending, no container statuses (no kubelet has seen them), its
        PodScheduled condition False."""
        for name in pods:
            pod = self.pods[(namespace, name)]
            pod["spec"].pop("nodeName", None)
            pod["status"] = {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
                    }
                ],
            }

    def _job_refused(self, namespace: str, job_name: str, spec: dict) -> bool:
        """Whether admission refuses the pods of a batch Job (a JobSet's, Trainer's), said as
        the Job controller says it: FailedCreate on the Job, "Error creating: <error>", its
        Indexed pods' generateName <job>-<index>- (kubernetes pkg/controller/job)."""
        refusal = self._admission_refusal(namespace, f"{job_name}-0-", spec)
        if refusal:
            self.add_event(
                "Job",
                job_name,
                "FailedCreate",
                f"Error creating: {refusal}",
                type="Warning",
                namespace=namespace,
            )
        return refusal is not None

    def _jobs_refused(self, jobset: str, namespace: str, jobs: list[tuple[str, str]]) -> set[str]:
        """The JobSet controller's creates of `jobs` ((name, restart attempt)) not made yet:
        the names the API server refuses, over a ResourceQuota's `count/jobs.batch`, whose
        status.used quota admission charges for each one admitted (in this order here; the
        controller creates them in parallel). The refusals said as the controller says
        them (kubernetes-sigs/jobset pkg/controllers/jobset_controller.go createJobs): one
        Warning JobCreationFailed event on the JobSet, each Job's error a line of it, `job
        "<name>" creation failed with error: jobs.batch "<name>" is forbidden: exceeded
        quota: ...` (the quota admission plugin's words)."""
        quotas = [
            quota
            for (plural, where, _name), quota in self.objects.items()
            if plural == "resourcequotas"
            and where == namespace
            and "count/jobs.batch" in quota["spec"]["hard"]
        ]
        refused: list[str] = []
        for job_name, attempt in jobs:
            if (namespace, job_name, attempt) in self.batch_jobs:
                continue
            over = next(
                (
                    q
                    for q in quotas
                    if int(q["status"]["used"]["count/jobs.batch"]) + 1
                    > int(q["spec"]["hard"]["count/jobs.batch"])
                ),
                None,
            )
            if over is not None:
                used, hard = (
                    over["status"]["used"]["count/jobs.batch"],
                    over["spec"]["hard"]["count/jobs.batch"],
                )
                refused.append(
                    f'job "{job_name}" creation failed with error: jobs.batch "{job_name}" is '
                    f"forbidden: exceeded quota: {over['metadata']['name']}, requested: "
                    f"count/jobs.batch=1, used: count/jobs.batch={used}, limited: "
                    f"count/jobs.batch={hard}"
                )
                continue
            for quota in quotas:
                used = quota["status"]["used"]
                used["count/jobs.batch"] = str(int(used["count/jobs.batch"]) + 1)
            self.batch_jobs.add((namespace, job_name, attempt))
        if refused:
            self.add_event(
                "JobSet",
                jobset,
                "JobCreationFailed",
                "\n".join(refused),
                type="Warning",
                namespace=namespace,
            )
        return {line.split('"')[1] for line in refused}

    def _has_pods(self, namespace: str, job_name: str, attempt: str) -> bool:
        """Whether a batch Job of a JobSet's `attempt` has its pods (its controller makes
        them once; a JobSet makes a Job once, shouldCreateJob)."""
        return any(
            where == namespace
            and pod["metadata"]["labels"].get("batch.kubernetes.io/job-name") == job_name
            and pod["metadata"]["labels"].get("jobset.sigs.k8s.io/restart-attempt") == attempt
            for (where, _pod), pod in self.pods.items()
        )

    def _run_jobset_pods(
        self, jobset: dict, *, phase: str, node: str, restarts: int, exit_code: int | None
    ) -> list[str]:
        """A JobSet's pods as its Jobs make them: Job <jobset>-<replicatedJob>-<j>, pods
        <job>-<completion index>-<5 random> with hostname <job>-<index> in the JobSet's
        subdomain, the JobSet's and the Job controller's labels, the completion index as a
        label and annotation, and JOB_COMPLETION_INDEX added to each container."""
        name, namespace = jobset["metadata"]["name"], jobset["metadata"]["namespace"]
        attempt = str((jobset.get("status") or {}).get("restarts") or 0)
        subdomain = (jobset["spec"].get("network") or {}).get("subdomain") or name
        refused = self._jobs_refused(
            name,
            namespace,
            [
                (f"{name}-{rjob['name']}-{j}", attempt)
                for rjob in jobset["spec"]["replicatedJobs"]
                for j in range(rjob.get("replicas", 1))
            ],
        )
        made = []
        for rjob in jobset["spec"]["replicatedJobs"]:
            job_spec = rjob["template"]["spec"]
            template = job_spec["template"]
            for j in range(rjob.get("replicas", 1)):
                job_name = f"{name}-{rjob['name']}-{j}"
                if job_name in refused or self._has_pods(namespace, job_name, attempt):
                    continue
                if self._job_refused(namespace, job_name, template["spec"]):
                    continue
                for index in range(job_spec.get("completions", 1)):
                    pod_name = f"{job_name}-{index}-{uuid.uuid4().hex[:5]}"
                    labels = {
                        **((template.get("metadata") or {}).get("labels") or {}),
                        "jobset.sigs.k8s.io/jobset-name": name,
                        "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                        "jobset.sigs.k8s.io/job-index": str(j),
                        "jobset.sigs.k8s.io/restart-attempt": attempt,
                        "batch.kubernetes.io/job-name": job_name,
                        "batch.kubernetes.io/job-completion-index": str(index),
                    }
                    state = _container_state(phase, exit_code)
                    index_env = {
                        "name": "JOB_COMPLETION_INDEX",
                        "valueFrom": {
                            "fieldRef": {
                                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                            }
                        },
                    }
                    spec = json.loads(json.dumps(template["spec"]))
                    for container in spec["containers"]:
                        container["env"] = [*(container.get("env") or []), index_env]
                    self.pods[(namespace, pod_name)] = {
                        "metadata": {
                            "name": pod_name,
                            "namespace": namespace,
                            "labels": labels,
                            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
                            "uid": str(uuid.uuid4()),
                        },
                        "spec": {
                            **spec,
                            "hostname": f"{job_name}-{index}",
                            "subdomain": subdomain,
                            "nodeName": node,
                        },
                        "status": {
                            "phase": phase,
                            "startTime": now_stamp(),
                            "containerStatuses": [
                                {"name": c["name"], "restartCount": restarts, "state": state}
                                for c in spec["containers"]
                            ],
                        },
                    }
                    made.append(pod_name)
        if not node:
            self.unscheduled(made, namespace=namespace)
        self._jobset_status_from_pods(jobset)
        return made

    def _run_trainjob_pods(
        self,
        trainjob: dict,
        *,
        phase: str,
        node: str,
        restarts: int,
        exit_code: int | None,
        attempt: int,
    ) -> list[str]:
        """A TrainJob's pods as Trainer's JobSet (named after it) makes them: its "node"
        replicatedJob's one Job <name>-node-0 of numNodes indexed pods, with hostnames
        <name>-node-0-<index> in the JobSet's subdomain (its name), the patch's pod labels
        and the JobSet's and Job controller's, and the torch plugin's PET_* variables."""
        name, namespace = trainjob["metadata"]["name"], trainjob["metadata"]["namespace"]
        nodes = (trainjob["spec"].get("trainer") or {}).get("numNodes", 1)
        job_name = f"{name}-node-0"
        made: list[str] = []
        if self._jobs_refused(name, namespace, [(job_name, str(attempt))]):
            return made
        if self._job_refused(namespace, job_name, self._trainjob_node_pod(trainjob, 0)[1]):
            return made
        for index in range(nodes):
            labels, spec = self._trainjob_node_pod(trainjob, index)
            pod_name = f"{job_name}-{index}-{uuid.uuid4().hex[:5]}"
            self.pods[(namespace, pod_name)] = {
                "metadata": {
                    "name": pod_name,
                    "namespace": namespace,
                    "labels": {
                        **labels,
                        "jobset.sigs.k8s.io/jobset-name": name,
                        "jobset.sigs.k8s.io/replicatedjob-name": "node",
                        "jobset.sigs.k8s.io/job-index": "0",
                        "jobset.sigs.k8s.io/restart-attempt": str(attempt),
                        "batch.kubernetes.io/job-name": job_name,
                        "batch.kubernetes.io/job-completion-index": str(index),
                    },
                    "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
                    "uid": str(uuid.uuid4()),
                },
                "spec": {
                    **spec,
                    "hostname": f"{job_name}-{index}",
                    "subdomain": name,
                    "nodeName": node,
                },
                "status": {
                    "phase": phase,
                    "startTime": now_stamp(),
                    "containerStatuses": [
                        {
                            "name": "node",
                            "restartCount": restarts,
                            "state": _container_state(phase, exit_code),
                        }
                    ],
                },
            }
            made.append(pod_name)
        if not node:
            self.unscheduled(made, namespace=namespace)
        return made

    def _trainjob_node_pod(self, trainjob: dict, index: int) -> tuple[dict, dict]:
        """(pod labels, pod spec) of a TrainJob's node `index` as Trainer builds it: the
        runtime's "node" container given the trainer's fields and the torch plugin's env,
        then the "node" runtimePatches applied."""
        name = trainjob["metadata"]["name"]
        spec = trainjob.get("spec") or {}
        trainer = spec.get("trainer") or {}
        runtime_image = self.runtimes.get((spec.get("runtimeRef") or {}).get("name"), "")
        container: dict[str, Any] = {
            "name": "node",
            "image": trainer.get("image") or runtime_image,
            "env": [
                *(trainer.get("env") or []),
                {"name": "PET_NNODES", "value": str(trainer.get("numNodes", 1))},
                {"name": "PET_NPROC_PER_NODE", "value": str(trainer.get("numProcPerNode", "auto"))},
                {"name": "PET_NODE_RANK", "value": str(index)},
                {"name": "PET_MASTER_ADDR", "value": f"{name}-node-0-0.{name}"},
                {"name": "PET_MASTER_PORT", "value": str(TRAINER_PORT)},
            ],
            "ports": [{"containerPort": TRAINER_PORT}],
        }
        if trainer.get("command"):
            container["command"] = trainer["command"]
        if trainer.get("args"):
            container["args"] = trainer["args"]
        if trainer.get("resourcesPerNode"):
            container["resources"] = trainer["resourcesPerNode"]
        pod: dict[str, Any] = {"restartPolicy": "Never"}
        labels: dict[str, str] = {}
        for patch in spec.get("runtimePatches") or []:
            template = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get(
                "spec"
            ) or {}
            for rjob in template.get("replicatedJobs") or []:
                if rjob.get("name") != "node":
                    continue
                pod_template = ((rjob.get("template") or {}).get("spec") or {}).get(
                    "template"
                ) or {}
                labels.update((pod_template.get("metadata") or {}).get("labels") or {})
                pod_patch = dict(pod_template.get("spec") or {})
                for one in pod_patch.pop("containers", None) or []:
                    if one.get("name") == "node":
                        container.update({k: v for k, v in one.items() if k != "name"})
                pod.update(pod_patch)
        pod["containers"] = [container]
        return labels, pod

    def _check_trainjob(self, check: Invalid, body: dict, namespace: str) -> None:
        """Trainer's webhooks (trainjob_webhook.go, the torch plugin's Validate), then the
        node pod it would make."""
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        ref = spec.get("runtimeRef") or {}
        kind = ref.get("kind", "ClusterTrainingRuntime")
        group = ref.get("apiGroup", "trainer.kubeflow.org")
        if kind not in ("ClusterTrainingRuntime", "TrainingRuntime") or group != (
            "trainer.kubeflow.org"
        ):
            check.bad("spec.runtimeRef", f"unsupported runtime: {kind}.{group}")
        elif kind == "TrainingRuntime" or ref.get("name") not in self.runtimes:
            # The runtime's ValidateObjects (pkg/runtime/core/[cluster]trainingruntime.go),
            # worded so; this cluster has no namespaced TrainingRuntime.
            lower = kind[0].lower() + kind[1:]
            check.bad(
                "spec.RuntimeRef" if kind == "ClusterTrainingRuntime" else "spec.runtimeRef",
                f'Invalid value: {kind}.{group} "{ref.get("name")}" not found: specified '
                f"{lower} must be created before the TrainJob is created",
            )
        trainer = spec.get("trainer") or {}
        for key in ("numNodes", "numProcPerNode"):
            if key in trainer and (not _whole(trainer[key]) or trainer[key] < 1):
                check.bad(f"spec.trainer.{key}", "must be 1 or more")
        # The CRD's limits (manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml):
        # image at most 500 characters, command and args at most 128 items of at most 65536
        # characters, env at most 128 variables and a list keyed by name, runtimePatches at
        # most 16.
        if len(trainer.get("image") or "") > 500:
            check.bad("spec.trainer.image", "Too long: may not be longer than 500")
        for key, most in (("command", 128), ("args", 128), ("env", 128)):
            items = trainer.get(key) or []
            if len(items) > most:
                check.bad(
                    f"spec.trainer.{key}", f"Too many: {len(items)}: must have at most {most} items"
                )
            for i, item in enumerate(items if key != "env" else []):
                if isinstance(item, str) and len(item) > 65536:
                    check.bad(f"spec.trainer.{key}[{i}]", "Too long: may not be longer than 65536")
        env_names = [e.get("name") for e in trainer.get("env") or [] if isinstance(e, dict)]
        for i, env_name in enumerate(env_names):
            if env_name in env_names[:i]:
                check.bad(
                    f"spec.trainer.env[{i}]",
                    f'Duplicate value: map[string]interface {{}}{{"name":"{env_name}"}}',
                )
        if len(spec.get("runtimePatches") or []) > 16:
            check.bad("spec.runtimePatches", "Too many: must have at most 16 items")
        if "activeDeadlineSeconds" in spec and (
            not _whole(spec["activeDeadlineSeconds"]) or spec["activeDeadlineSeconds"] < 1
        ):
            check.bad("spec.activeDeadlineSeconds", "should be greater than or equal to 1")
        reserved = [
            e.get("name") for e in trainer.get("env") or [] if e.get("name") in TORCH_RESERVED_ENVS
        ]
        if reserved:
            check.bad(
                "spec.trainer.env",
                f"must not have reserved envs, invalid envs configured: {reserved}",
            )
        managers = [p.get("manager") for p in spec.get("runtimePatches") or []]
        if len(set(managers)) != len(managers):
            check.bad("spec.runtimePatches", "Duplicate value: manager")
        for i, patch in enumerate(spec.get("runtimePatches") or []):
            template = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get(
                "spec"
            ) or {}
            for j, rjob in enumerate(template.get("replicatedJobs") or []):
                path = f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}]"
                if rjob.get("name") != "node":
                    check.bad(f"{path}.name", "Not found: the runtime has no such replicatedJob")
                pod_spec = (
                    ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
                ).get("spec") or {}
                for k, container in enumerate(pod_spec.get("containers") or []):
                    if container.get("name") != "node":
                        check.bad(
                            f"{path}.template.spec.template.spec.containers[{k}].name",
                            "Not found: the runtime has no such container",
                        )
                    elif container.get("env"):
                        check.bad(
                            f"{path}.template.spec.template.spec.containers[{k}].env",
                            "Forbidden: the node container's env is set by spec.trainer.env",
                        )
        check.raise_if_any()
        _labels, pod = self._trainjob_node_pod(body, 0)
        self._check_pod(check, pod, "node pod", namespace, "node")

    def set_usage(
        self,
        pod: str,
        *,
        cpu: str,
        memory: str,
        namespace: str = "default",
        stamp: str | None = None,
    ) -> None:
        """What metrics-server last scraped of the pod's first container (`stamp`: when; now
        by default), its other containers using nothing."""
        containers = self.pods[(namespace, pod)]["spec"]["containers"]
        self.usage[(namespace, pod)] = (
            stamp or now_stamp(),
            {containers[0]["name"]: {"cpu": cpu, "memory": memory}},
        )

    def set_pod_phase(self, pod: str, phase: str, *, namespace: str = "default") -> None:
        status = self.pods[(namespace, pod)]["status"]
        status["phase"] = phase
        for container in status.get("containerStatuses") or []:
            if "waiting" in container["state"] and phase != "Pending":
                container["state"] = _container_state(phase, 0 if phase != "Running" else None)
        jobset = self.pods[(namespace, pod)]["metadata"]["labels"].get(
            "jobset.sigs.k8s.io/jobset-name"
        )
        if ("jobsets", namespace, jobset) in self.objects:
            self._jobset_status_from_pods(self.objects[("jobsets", namespace, jobset)])

    def _jobset_status_from_pods(self, jobset: dict) -> None:
        """status.replicatedJobsStatus as the JobSet controller writes it from its Jobs, each
        Job's counts as the Job controller keeps them from its pods (of the current attempt):
        a Job is active while any of its pods is Pending or Running (a Job's status.active
        counts both: a pod that cannot be scheduled, or whose image cannot be pulled, is
        active), ready when its Running and Succeeded pods reach its parallelism, succeeded
        when all its completions succeeded, failed once a pod failed (backoffLimit 0).
        `set_jobset_status` overrides it."""
        name, namespace = jobset["metadata"]["name"], jobset["metadata"]["namespace"]
        attempt = str((jobset.get("status") or {}).get("restarts") or 0)
        counts = {
            rjob["name"]: dict.fromkeys(("ready", "succeeded", "failed", "active", "suspended"), 0)
            for rjob in jobset["spec"]["replicatedJobs"]
        }
        specs = {
            rjob["name"]: rjob["template"]["spec"] for rjob in jobset["spec"]["replicatedJobs"]
        }
        phases: dict[tuple[str, str], list[str]] = {}
        for (pod_namespace, _pod), pod in self.pods.items():
            labels = pod["metadata"]["labels"]
            if (
                pod_namespace != namespace
                or labels.get("jobset.sigs.k8s.io/jobset-name") != name
                or labels.get("jobset.sigs.k8s.io/restart-attempt") != attempt
            ):
                continue
            key = (
                labels["jobset.sigs.k8s.io/replicatedjob-name"],
                labels["batch.kubernetes.io/job-name"],
            )
            phases.setdefault(key, []).append(pod["status"]["phase"])
        for (rjob, _job), found in phases.items():
            job_spec, count = specs[rjob], counts[rjob]
            if "Failed" in found:
                count["failed"] += 1
            elif found.count("Succeeded") >= job_spec.get("completions", 1):
                count["succeeded"] += 1
            else:
                if {"Pending", "Running"} & set(found):
                    count["active"] += 1
                started = found.count("Running") + found.count("Succeeded")
                if started >= job_spec.get("parallelism", 1):
                    count["ready"] += 1
        jobset.setdefault("status", {})["replicatedJobsStatus"] = [
            {"name": rjob, **count} for rjob, count in counts.items()
        ]

    def add_event(
        self,
        kind: str,
        name: str,
        reason: str,
        message: str,
        *,
        type: str = "Normal",
        stamp: str | None = None,
        namespace: str = "default",
    ) -> None:
        self.events.append(
            {
                "metadata": {"name": f"{name}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
                "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
                "reason": reason,
                "message": message,
                "type": type,
                "lastTimestamp": stamp or now_stamp(),
            }
        )

    def add_logs(
        self, pod: str, lines: list[str], *, namespace: str = "default", stamp: str | None = None
    ) -> None:
        self.log_lines.setdefault((namespace, pod), []).extend(
            (stamp or now_stamp(), line) for line in lines
        )

    def add_generated_log(
        self,
        pod: str,
        line_of: Callable[[int], str],
        count: int,
        *,
        namespace: str = "default",
        end: str = "\n",
    ) -> None:
        """The pod's whole log is `count` lines made as they are sent (GeneratedLog), all as
        long as the first, each ended by `end`; a read with sinceTime is refused (no test
        needs one), and so is one with tailLines of a log with line ends."""
        self.generated_logs[(namespace, pod)] = GeneratedLog(line_of, count, end)

    def finish_deletions(self) -> None:
        """The held deletions done: pods being deleted gone, and with them the jobs a
        Foreground delete kept."""
        with self._lock:
            for pod_key, pod in list(self.pods.items()):
                if pod["metadata"].get("deletionTimestamp"):
                    self._remove_pod(pod_key)
            for key, obj in list(self.objects.items()):
                if obj["metadata"].get("deletionTimestamp"):
                    self._remove(key)

    def calls(self, op: str) -> list[Recorded]:
        return [r for r in self.requests if r.op == op]

    # -- serving -----------------------------------------------------------------------

    def _handle(self, http: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(http.path)
        length = int(http.headers.get("Content-Length") or 0)
        raw = http.rfile.read(length) if length else b""
        r = Recorded(
            method=http.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in http.headers.items()},
            body=None,
        )
        content_type = "application/json"
        trickle = Fault()
        try:
            if r.headers.get("authorization") not in {
                f"Bearer {token}" for token in (self.token, *self.previous_tokens)
            }:
                raise Refusal(401, "Unauthorized", "Unauthorized")
            route = self._route(r)
            r.op = f"{route[0]} {route[1]}"
            with self._lock:
                self.requests.append(r)
            self._authorize(route)
            if route[3] in self.stalled:
                time.sleep(self.stalled[route[3]])
            fault = self.faults.get(r.op, []).pop(0) if self.faults.get(r.op) else None
            if fault and fault.trickle:
                trickle, fault = fault, None
            if fault and (fault.delay or fault.release) and not fault.after:
                if fault.release:
                    fault.release.wait(30)
                time.sleep(fault.delay)
                fault = None
            if fault and not fault.after:
                if fault.drop:
                    http.close_connection = True
                    http.connection.close()
                    return
                raise Refusal(fault.status, fault.reason, fault.message)
            if raw:
                try:
                    r.body = json.loads(raw)
                except ValueError:
                    raise Refusal(400, "BadRequest", "the body is not JSON") from None
            with self._lock:
                code, answer = self._dispatch(r, route)
            if fault and fault.release:
                fault.release.wait(30)
                fault = None
            if fault:
                if fault.drop:
                    http.close_connection = True
                    http.connection.close()
                    return
                raise Refusal(fault.status, fault.reason, fault.message)
        except Refusal as e:
            code, answer = e.code, status(e.code, e.reason, e.message, e.causes)
        if isinstance(answer, GeneratedLog):
            http.send_response(code)
            http.send_header("Content-Type", "text/plain")
            http.send_header("Content-Length", str(answer.size))
            http.end_headers()
            try:
                for chunk in answer.chunks():
                    http.wfile.write(chunk)
            except OSError:
                pass  # the client gave up on the answer
            return
        if isinstance(answer, str):
            payload, content_type = answer.encode(), "text/plain"
        else:
            payload = json.dumps(answer).encode()
        http.send_response(code)
        for warning in r.warnings:
            escaped = warning.replace("\\", "\\\\").replace('"', '\\"')
            http.send_header("Warning", f'299 - "{escaped}"')
        http.send_header("Content-Type", content_type)
        http.send_header("Content-Length", str(len(payload)))
        http.end_headers()
        step = -(-len(payload) // trickle.pieces)
        for start in range(0, len(payload), step or 1):
            if start:
                http.wfile.flush()
                time.sleep(trickle.trickle)
            try:
                http.wfile.write(payload[start : start + step])
            except OSError:
                return  # the client gave up on the answer

    def _route(self, r: Recorded) -> tuple[str, str, str, str, str]:
        """(verb, plural, namespace, name, subresource)."""
        p = r.path.rstrip("/").split("/")[1:]
        verb_for = {"GET": "get", "POST": "create", "PATCH": "patch", "DELETE": "delete"}
        if r.method not in verb_for:
            raise Refusal(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        if (
            p[:2] == ["api", "v1"]
            and len(p) == 3
            and p[2] in ("nodes", "pods", "resourcequotas")
            and r.method == "GET"
        ):
            return ("list", p[2], "", "", "")
        if p[:3] == ["api", "v1", "namespaces"] and len(p) == 4:
            if r.method != "GET":
                raise Refusal(405, "MethodNotAllowed", "not served by this fake")
            # A namespace is authorized as in itself: a RoleBinding there may grant its get.
            return ("get", "namespaces", p[3], p[3], "")
        if (
            self.metrics_server
            and p[:4] == ["apis", "metrics.k8s.io", "v1beta1", "namespaces"]
            and len(p) in (6, 7)
            and p[5] == "pods"
        ):
            if r.method != "GET":
                raise Refusal(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            return (
                "list" if len(p) == 6 else "get",
                METRICS,
                p[4],
                p[6] if len(p) == 7 else "",
                "",
            )
        if (
            p[:3] == ["api", "v1", "namespaces"]
            and len(p) >= 5
            and p[4] in ("secrets", "pods", "events", "resourcequotas")
        ):
            plural, group_ok = p[4], True
            rest = p[5:]
        elif (
            p[:1] == ["apis"]
            and len(p) >= 6
            and p[3] == "namespaces"
            and p[5] in JOB_PLURALS
            and (p[5] != "jobsets" or self.jobset)
            and (p[5] != "trainjobs" or self.trainer)
        ):
            plural = p[5]
            group_ok = f"{p[1]}/{p[2]}" == VERSIONS[plural]
            rest = p[6:]
        else:
            group_ok, plural, rest = False, "", []
        if not group_ok:
            raise Refusal(404, "NotFound", "the server could not find the requested resource")
        namespace = p[3] if p[0] == "api" else p[4]
        name = rest[0] if rest else ""
        sub = rest[1] if len(rest) > 1 else ""
        if sub and not (plural == "pods" and sub == "log" and r.method == "GET"):
            raise Refusal(404, "NotFound", "the server could not find the requested resource")
        verb = verb_for[r.method]
        if not name:
            if r.method == "GET":
                verb = "list"
            elif r.method != "POST":
                raise Refusal(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
        elif r.method == "POST":
            raise Refusal(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        if sub == "log":
            verb = "log"
        return (verb, plural, namespace, name, sub)

    def _authorize(self, route: tuple[str, str, str, str, str]) -> None:
        """RBAC, as the API server answers a verb the identity's Roles do not grant."""
        verb, plural, namespace, _name, sub = route
        resource = f"{plural}/{sub}" if sub else plural
        verb = "get" if verb == "log" else verb
        if (verb, resource, namespace) in self.forbidden or (verb, resource, "") in self.forbidden:
            group = VERSIONS[plural].split("/")[0] if plural in VERSIONS else ""
            if plural == METRICS:  # the resource "pods" in the API group metrics.k8s.io
                resource, group = "pods", "metrics.k8s.io"
            where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
            raise Refusal(
                403,
                "Forbidden",
                f"{plural if plural == METRICS else resource} is forbidden: User "
                f'"{SERVICE_ACCOUNT}" cannot {verb} resource '
                f'"{resource}" in API group "{group}" {where}',
            )

    def _dispatch(self, r: Recorded, route: tuple[str, str, str, str, str]) -> tuple[int, Any]:
        verb, plural, namespace, name, _sub = route
        if namespace and namespace not in self.namespaces:
            raise Refusal(404, "NotFound", f'namespaces "{namespace}" not found')
        if plural == METRICS:
            return 200, self._pod_metrics(r, namespace, name)
        if plural == "namespaces":
            level = self.pod_security.get(namespace, "privileged")
            # Unlabelled when privileged, the admission's default level.
            labels = {"kubernetes.io/metadata.name": namespace}
            if level != "privileged":
                labels["pod-security.kubernetes.io/enforce"] = level
            return 200, {
                "kind": "Namespace",
                "apiVersion": "v1",
                "metadata": {"name": namespace, "labels": labels},
                "status": {"phase": "Active"},
            }
        if verb == "list":
            return 200, self._list(r, plural, namespace)
        if verb == "log":
            return 200, self._log(r, namespace, name)
        if verb == "create":
            return 201, self._create(r, plural, namespace)
        if plural in ("pods", "events", "resourcequotas") and verb != "get":
            raise Refusal(405, "MethodNotAllowed", "not served by this fake")
        key = (plural, namespace, name)
        store = self.pods if plural == "pods" else self.objects
        found = store.get((namespace, name)) if plural == "pods" else store.get(key)
        if found is None:
            core = ("secrets", "pods", "resourcequotas")
            what = plural if plural in core else f"{plural}.{VERSIONS[plural].split('/')[0]}"
            raise Refusal(404, "NotFound", f'{what} "{name}" not found')
        if verb == "get":
            return 200, found
        if verb == "patch":
            return 200, self._patch(r, key, found)
        return 200, self._delete(r, key, found)

    # -- reads ---------------------------------------------------------------------------

    @staticmethod
    def _selector(text: str | None) -> list[tuple[str, str, str]]:
        out = []
        for part in (text or "").split(","):
            if not part:
                continue
            if re.match(r"^!?[A-Za-z0-9][-A-Za-z0-9_./]*$", part):  # (!)key: has (not) the key
                out.append((part.lstrip("!"), "!" if part.startswith("!") else "exists", ""))
                continue
            m = re.match(r"^([^!=]+)(!=|==|=)(.*)$", part)
            if not m:
                raise Refusal(400, "BadRequest", f"unable to parse requirement: {part!r}")
            out.append((m.group(1), m.group(2), m.group(3)))
        return out

    @staticmethod
    def _get_field(obj: dict, path: str) -> str:
        value: Any = obj
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return "" if value is None else str(value)

    def _list(self, r: Recorded, plural: str, namespace: str) -> dict:
        if plural == "pods":
            items = [p for (ns, _n), p in self.pods.items() if not namespace or ns == namespace]
            fields_ok = {"status.phase", "spec.nodeName", "metadata.name"}
        elif plural == "nodes":
            items, fields_ok = list(self.nodes), {"metadata.name", "spec.unschedulable"}
        elif plural == "events":
            items = [e for e in self.events if e["metadata"]["namespace"] == namespace]
            fields_ok = {
                "involvedObject.kind",
                "involvedObject.name",
                "involvedObject.uid",
                "reason",
                "type",
            }
        else:
            items = [
                o
                for (p, ns, _n), o in self.objects.items()
                if p == plural and (not namespace or ns == namespace)
            ]
            fields_ok = {"metadata.name", "metadata.namespace"}
        for key, op, value in self._selector(r.param("fieldSelector")):
            if op in ("exists", "!"):
                raise Refusal(400, "BadRequest", f"invalid field selector: {key!r}")
            if key not in fields_ok:
                raise Refusal(
                    400,
                    "BadRequest",
                    f'"{key}" is not a known field selector: only "{", ".join(sorted(fields_ok))}"',
                )
            items = [i for i in items if (self._get_field(i, key) == value) == (op != "!=")]
        items = self._labelled(items, r.param("labelSelector"))
        kind = {
            "pods": "PodList",
            "nodes": "NodeList",
            "events": "EventList",
            "secrets": "SecretList",
            "resourcequotas": "ResourceQuotaList",
        }.get(plural, "List")
        return {
            "kind": kind,
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "1"},
            "items": items,
        }

    def _labelled(self, items: list[dict], selector: str | None) -> list[dict]:
        for key, op, value in self._selector(selector):
            if op in ("exists", "!"):
                items = [
                    i for i in items if (key in (i["metadata"].get("labels") or {})) == (op != "!")
                ]
                continue
            items = [
                i
                for i in items
                if ((i["metadata"].get("labels") or {}).get(key) == value) == (op != "!=")
            ]
        return items

    def _pod_metrics(self, r: Recorded, namespace: str, name: str) -> dict:
        """PodMetrics of the namespace's Running pods (one, by name, for a get)."""
        items = []
        for (ns, pod_name), pod in self.pods.items():
            if ns != namespace or pod["status"].get("phase") != "Running":
                continue
            stamp, usage = self.usage.get((ns, pod_name), (now_stamp(), {}))
            items.append(
                {
                    "metadata": {
                        "name": pod_name,
                        "namespace": ns,
                        "labels": dict(pod["metadata"].get("labels") or {}),
                        "creationTimestamp": now_stamp(),
                    },
                    "timestamp": stamp,
                    "window": "15.012s",
                    "containers": [
                        {
                            "name": c["name"],
                            "usage": usage.get(c["name"], {"cpu": "0", "memory": "0"}),
                        }
                        for c in pod["spec"].get("containers", [])
                    ],
                }
            )
        if name:
            found = next((i for i in items if i["metadata"]["name"] == name), None)
            if found is None:
                raise Refusal(404, "NotFound", f'podmetrics.metrics.k8s.io "{name}" not found')
            return {"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1", **found}
        for key, op, value in self._selector(r.param("fieldSelector")):
            if key != "metadata.name" or op in ("exists", "!"):
                raise Refusal(400, "BadRequest", f'"{key}" is not a known field selector')
            items = [i for i in items if (i["metadata"]["name"] == value) == (op != "!=")]
        return {
            "kind": "PodMetricsList",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {},
            "items": self._labelled(items, r.param("labelSelector")),
        }

    def _log(self, r: Recorded, namespace: str, name: str) -> str | GeneratedLog:
        pod = self.pods.get((namespace, name))
        if pod is None:
            raise Refusal(404, "NotFound", f'pods "{name}" not found')
        names = [c["name"] for c in pod["spec"].get("containers", [])]
        container = r.param("container")
        if container is None and len(names) > 1:
            raise Refusal(
                400,
                "BadRequest",
                f"a container name must be specified for pod {name}, choose one of: {names}",
            )
        if container is not None and container not in names:
            raise Refusal(400, "BadRequest", f"container {container} is not valid for pod {name}")
        # A pod the scheduler has not placed yet has no kubelet to ask: the API server
        # refuses its log read (LogLocation, as for exec), whatever its containers.
        if not pod["spec"].get("nodeName"):
            raise Refusal(400, "BadRequest", f"pod {name} does not have a host assigned")
        # A container that has not run yet has no log: the API server says it is waiting.
        for status in pod["status"].get("containerStatuses") or []:
            waiting = (status.get("state") or {}).get("waiting")
            if (
                status["name"] == (container or names[0])
                and waiting
                and not status.get("restartCount")
            ):
                raise Refusal(
                    400,
                    "BadRequest",
                    f'container "{status["name"]}" in pod "{name}" is waiting to start: '
                    f"{waiting.get('reason') or 'ContainerCreating'}",
                )
        if (namespace, name) in self.generated_logs:
            generated = self.generated_logs[(namespace, name)]
            # The kubelet counts lines by "\n" alone: a log without one (a progress bar's
            # redraws after "\r") is one line, its last line, given whole for any tail.
            tail = r.param("tailLines")
            if r.param("sinceTime") is not None or (tail is not None and "\n" in generated.end):
                raise Refusal(400, "BadRequest", "not served by this fake for a generated log")
            return generated
        lines = self.log_lines.get((namespace, name), [])
        since = r.param("sinceTime")
        if since is not None:
            try:
                floor = datetime.fromisoformat(since)
            except ValueError:
                raise Refusal(400, "BadRequest", f"sinceTime {since!r} is not RFC 3339") from None
            lines = [(t, line) for t, line in lines if datetime.fromisoformat(t) >= floor]
        tail = r.param("tailLines")
        if tail is not None:
            if not tail.isdigit():
                raise Refusal(400, "BadRequest", "tailLines must be a whole number")
            lines = lines[-int(tail) :] if int(tail) else []
        return "".join(f"{line}\n" for _t, line in lines)

    # -- writes ---------------------------------------------------------------------------

    def _create(self, r: Recorded, plural: str, namespace: str) -> dict:
        if plural in ("pods", "events", "resourcequotas"):
            raise Refusal(405, "MethodNotAllowed", "not served by this fake")
        if r.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise Refusal(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: application/json",
            )
        body = r.body
        if not isinstance(body, dict):
            raise Refusal(400, "BadRequest", "the body of the request is not a JSON object")
        kind_expected = "Secret" if plural == "secrets" else JOB_PLURALS[plural]
        version_expected = "v1" if plural == "secrets" else VERSIONS[plural]
        if body.get("kind") != kind_expected:
            raise Refusal(
                400,
                "BadRequest",
                f"the kind in the data ({body.get('kind')}) does not match the expected kind ({kind_expected})",
            )
        if body.get("apiVersion") != version_expected:
            raise Refusal(
                400,
                "BadRequest",
                f"the API version in the data ({body.get('apiVersion')}) does not match the expected API version ({version_expected})",
            )
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            raise Refusal(422, "Invalid", f"{kind_expected}: metadata is required")
        if meta.get("namespace", namespace) != namespace:
            raise Refusal(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
            )
        name = meta.get("name", "")
        body = self._check_schema(r, body, kind_expected, name)
        check = Invalid(kind_expected, name, schema_checked=True)
        check.fields(
            body,
            {"apiVersion", "kind", "metadata", "spec", "type", "data", "stringData", "immutable"}
            if plural == "secrets"
            else {"apiVersion", "kind", "metadata", "spec"},
            "",
        )
        self._check_meta(
            check, meta, "metadata", name_rule="subdomain" if plural == "secrets" else "dns1035"
        )
        if plural == "secrets":
            self._check_secret(check, body)
        elif plural == "jobsets":
            self._check_jobset(check, body, namespace)
        elif plural == "trainjobs":
            self._check_trainjob(check, body, namespace)
        else:
            self._check_training_job(check, body, namespace)
        check.raise_if_any()
        if (plural, namespace, name) in self.objects:
            what = (
                "secrets" if plural == "secrets" else f"{plural}.{VERSIONS[plural].split('/')[0]}"
            )
            raise Refusal(409, "AlreadyExists", f'{what} "{name}" already exists')
        stored = json.loads(json.dumps(body))
        stored["metadata"].update(
            namespace=namespace,
            uid=str(uuid.uuid4()),
            creationTimestamp=now_stamp(),
            resourceVersion=self._next_revision(),
        )
        if plural == "secrets":
            data = stored.pop("stringData", {}) or {}
            stored["data"] = {**(stored.get("data") or {}), **data}  # kept readable here
        elif plural == "jobsets":
            stored["status"] = {"restarts": 0}  # no conditions until it ends or is suspended
        elif plural == "trainjobs":
            stored.pop("status", None)  # Trainer writes none until its JobSet says something
        else:
            stored["status"] = {
                "conditions": [
                    {
                        "type": "Created",
                        "status": "True",
                        "reason": f"{kind_expected}Created",
                        "message": f"{kind_expected} {name} is created.",
                    }
                ]
            }
        self.objects[(plural, namespace, name)] = stored
        return stored

    def _check_schema(self, r: Recorded, body: dict, kind: str, name: str) -> dict:
        """The body against the official schema of its kind (tests/k8s_schema.py: the
        `kubernetes` and `kubeflow-training` clients' models, MPIJob's and JobSet's Go types),
        as the API server decodes it and applies the CRD's structural schema.

        Unknown fields: with `fieldValidation=Strict` (what the console sends) a 400
        "strict decoding error", as the API server answers; without it, as a real server
        does, they are pruned from what is stored, each with a `Warning: 299` header
        (fieldValidation=Warn, the server's default) or silently (Ignore). Pruning silently
        would hide a field the console means to set and the cluster drops, so the console
        never relies on it; the fake keeps the real behaviour so a test can see it.
        Wrong types and missing required fields are 422 Invalid for the custom resources
        (the structural schema's type check), 400 for a Secret (decoding fails). Returns
        the body to store (pruned, or as sent)."""
        problems = k8s_schema.check_manifest(body)
        check = Invalid(kind, name)
        unknown = [p.path for p in problems if p.kind == "unknown"]
        mode = r.param("fieldValidation") or "Warn"
        if mode not in ("Strict", "Warn", "Ignore"):
            raise Refusal(
                400,
                "BadRequest",
                f'fieldValidation "{mode}" is not one of Strict, Warn or Ignore',
            )
        if unknown and mode == "Strict":
            check.unknown.extend(unknown)
        elif unknown:
            root = k8s_schema.ROOTS[(body["apiVersion"], body["kind"])]
            body = k8s_schema.prune(body, root, crd=kind != "Secret")
            if mode == "Warn":
                r.warnings.extend(f'unknown field "{path}"' for path in unknown)
        for p in problems:
            if p.kind == "unknown":
                continue
            if kind == "Secret":
                check.undecodable.append(f"{p.path}: {p.message}")
            else:
                check.bad(p.path, p.message)
        check.raise_if_any()
        return body

    def _check_meta(self, check: Invalid, meta: dict, path: str, *, name_rule: str) -> None:
        check.fields(meta, OBJECT_META_KEYS, path)
        name = meta.get("name")
        if name_rule:
            if not isinstance(name, str) or not name:
                check.bad(f"{path}.name", "Required value: name or generateName is required")
            elif name_rule == "dns1035" and (not DNS_1035.match(name) or len(name) > 63):
                check.bad(
                    f"{path}.name",
                    f"Invalid value: {name!r}: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, end with an alphanumeric character, and be at most 63 characters",
                )
            elif name_rule == "subdomain" and (not DNS_SUBDOMAIN.match(name) or len(name) > 253):
                check.bad(
                    f"{path}.name", f"Invalid value: {name!r}: a lowercase RFC 1123 subdomain"
                )
        labels = meta.get("labels") or {}
        if not isinstance(labels, dict):
            check.bad(f"{path}.labels", "must be a map")
            return
        for key, value in labels.items():
            prefix, _slash, last = key.rpartition("/")
            if (
                prefix and (not DNS_SUBDOMAIN.match(prefix) or len(prefix) > 253)
            ) or not LABEL_NAME.match(last):
                check.bad(
                    f"{path}.labels",
                    f"Invalid value: {key!r}: name part must be 63 characters or less, alphanumeric, '-', '_' or '.'",
                )
            if not isinstance(value, str) or not LABEL_VALUE.match(value):
                check.bad(
                    f"{path}.labels",
                    f"Invalid value: {value!r}: a valid label must be an empty string or 63 characters or less, alphanumeric, '-', '_' or '.'",
                )

    @staticmethod
    def _check_secret(check: Invalid, body: dict) -> None:
        if not isinstance(body.get("type", "Opaque"), str):
            check.bad("type", "must be a string")
        for key in ("data", "stringData"):
            values = body.get(key) or {}
            if not isinstance(values, dict):
                check.bad(key, "must be a map")
                continue
            for k, v in values.items():
                if not CONFIG_KEY.match(k):
                    check.bad(
                        f"{key}[{k}]",
                        "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                    )
                if not isinstance(v, str):
                    check.bad(f"{key}[{k}]", "must be a string")

    def _check_training_job(self, check: Invalid, body: dict, namespace: str) -> None:
        kind = body["kind"]
        _version, _plural, key, types, container_name = CRDS[kind]
        spec = check.fields(body.get("spec"), SPEC_KEYS[kind], "spec")
        if "runPolicy" in spec:
            policy = check.fields(spec["runPolicy"], RUN_POLICY_KEYS, "spec.runPolicy")
            if policy.get("cleanPodPolicy", "None") not in ("None", "Running", "All"):
                check.bad("spec.runPolicy.cleanPodPolicy", "Unsupported value")
            for field_name in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
                if field_name in policy and (
                    not isinstance(policy[field_name], int)
                    or isinstance(policy[field_name], bool)
                    or policy[field_name] < 0
                ):
                    check.bad(f"spec.runPolicy.{field_name}", "must be a whole number, 0 or more")
        if (
            kind == "MPIJob"
            and "slotsPerWorker" in spec
            and (not isinstance(spec["slotsPerWorker"], int) or spec["slotsPerWorker"] < 1)
        ):
            check.bad("spec.slotsPerWorker", "must be a whole number, 1 or more")
        if kind == "MPIJob" and not isinstance(spec.get("runLauncherAsWorker", False), bool):
            check.bad("spec.runLauncherAsWorker", "must be a boolean")
        replicas = check.fields(spec.get(key), types, f"spec.{key}")
        if not replicas:
            check.bad(f"spec.{key}", "Required value: at least one replica type")
        # The training operator v1.9's webhooks (pkg/webhooks/{pytorch,tensorflow}) and the
        # MPI operator's validation (pkg/apis/kubeflow/validation/validation.go): a
        # PyTorchJob's Master and an MPIJob's Launcher have 1 replica; a TFJob has at most one
        # Chief-or-Master replica type (the webhook counts types, not replicas, and says
        # nothing of Evaluators).
        for one in ("Master", "Launcher") if kind != "TFJob" else ():
            if (
                one in replicas
                and isinstance(replicas[one], dict)
                and replicas[one].get("replicas", 1) != 1
            ):
                check.bad(f"spec.{key}.{one}.replicas", "must be 1")
        if kind == "TFJob" and len({"Chief", "Master"} & set(replicas)) > 1:
            check.bad(f"spec.{key}", "Forbidden: must not have more than 1 Chief or Master role")
        if kind == "MPIJob" and "Launcher" not in replicas:
            check.bad(f"spec.{key}.Launcher", "Required value: must have Launcher replica spec")
        if kind == "MPIJob":
            worker = replicas.get("Worker") if isinstance(replicas.get("Worker"), dict) else {}
            count = worker.get("replicas", 1) if worker else 1
            if worker and (not isinstance(count, int) or count < 1):
                check.bad(f"spec.{key}.Worker.replicas", "must be greater than or equal to 1")
            # The MPI operator names the workers' pods (and their hostnames) after the job.
            name = str(body["metadata"].get("name") or "")
            hostname = f"{name}-worker-{max(count - 1, 0) if isinstance(count, int) else 0}"
            if len(hostname) > 63 or not DNS_LABEL.match(hostname):
                check.bad(
                    "metadata.name",
                    f"will not able to create pod with invalid DNS label {hostname!r}",
                )
        for replica_type, replica in replicas.items():
            path = f"spec.{key}.{replica_type}"
            replica = check.fields(replica, REPLICA_KEYS, path)
            count = replica.get("replicas", 1)
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                check.bad(f"{path}.replicas", "must be a whole number, 0 or more")
            # The MPI operator v2 runs the launcher as a batch/v1 Job and accepts only what
            # a Job's pods may have; the training operator also knows Always and ExitCode.
            policies = (
                ("Never", "OnFailure")
                if kind == "MPIJob"
                else ("Always", "OnFailure", "Never", "ExitCode")
            )
            if replica.get("restartPolicy", "Never") not in policies:
                check.bad(
                    f"{path}.restartPolicy",
                    "Unsupported value: supported values: " + ", ".join(f'"{p}"' for p in policies),
                )
            template = check.fields(
                replica.get("template"), {"metadata", "spec"}, f"{path}.template"
            )
            if "metadata" in template:
                self._check_meta(
                    check, template["metadata"], f"{path}.template.metadata", name_rule=""
                )
            self._check_pod(
                check, template.get("spec"), f"{path}.template.spec", namespace, container_name
            )

    def _check_jobset(self, check: Invalid, body: dict, namespace: str) -> None:
        """The JobSet CRD's schema, then its validating webhook (generated names)."""
        name = str(body["metadata"].get("name") or "")
        spec = check.fields(body.get("spec"), JOBSET_SPEC_KEYS, "spec")
        network = check.fields(
            spec.get("network", {}),
            {"enableDNSHostnames", "subdomain", "publishNotReadyAddresses"},
            "spec.network",
        )
        for flag in ("enableDNSHostnames", "publishNotReadyAddresses"):
            if flag in network and not isinstance(network[flag], bool):
                check.bad(f"spec.network.{flag}", "must be a boolean")
        if "subdomain" in network and (
            not isinstance(network["subdomain"], str)
            or not DNS_1035.match(network["subdomain"])
            or len(network["subdomain"]) > 63
        ):
            check.bad(
                "spec.network.subdomain",
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-'",
            )
        for field_name in ("ttlSecondsAfterFinished",):
            if field_name in spec and not _whole(spec[field_name]):
                check.bad(f"spec.{field_name}", "should be greater than or equal to 0")
        rjobs = spec.get("replicatedJobs")
        if not isinstance(rjobs, list) or not rjobs:
            check.bad("spec.replicatedJobs", "Required value")
            rjobs = []
        names: list[str] = []
        for i, rjob in enumerate(rjobs):
            path = f"spec.replicatedJobs[{i}]"
            rjob = check.fields(rjob, REPLICATED_JOB_KEYS, path)
            rname = rjob.get("name")
            if not isinstance(rname, str) or not rname:
                check.bad(f"{path}.name", "Required value")
                continue
            if rname in names:
                check.bad(
                    f"{path}.name",
                    f'Duplicate value: map[string]interface {{}}{{"name":"{rname}"}}',
                )
            names.append(rname)
            replicas = rjob.get("replicas", 1)
            if not _whole(replicas):
                check.bad(f"{path}.replicas", "must be a whole number, 0 or more")
                replicas = 1
            template = check.fields(rjob.get("template"), {"metadata", "spec"}, f"{path}.template")
            if "metadata" in template:
                self._check_meta(
                    check, template["metadata"], f"{path}.template.metadata", name_rule=""
                )
            job = check.fields(template.get("spec"), JOB_SPEC_KEYS, f"{path}.template.spec")
            jpath = f"{path}.template.spec"
            for field_name in (
                "parallelism",
                "completions",
                "backoffLimit",
                "activeDeadlineSeconds",
                "ttlSecondsAfterFinished",
            ):
                if field_name in job and not _whole(job[field_name]):
                    check.bad(f"{jpath}.{field_name}", "must be greater than or equal to 0")
            if job.get("activeDeadlineSeconds") == 0:
                check.bad(f"{jpath}.activeDeadlineSeconds", "must be greater than 0")
            mode = job.get("completionMode", "NonIndexed")
            if mode not in ("NonIndexed", "Indexed"):
                check.bad(f"{jpath}.completionMode", "Unsupported value")
            if mode == "Indexed" and "completions" not in job:
                check.bad(
                    f"{jpath}.completions",
                    "Required value: when completion mode is Indexed",
                )
            pod_template = check.fields(
                job.get("template"), {"metadata", "spec"}, f"{jpath}.template"
            )
            if "metadata" in pod_template:
                self._check_meta(
                    check, pod_template["metadata"], f"{jpath}.template.metadata", name_rule=""
                )
            self._check_pod(
                check, pod_template.get("spec"), f"{jpath}.template.spec", namespace, ""
            )
            pod = pod_template.get("spec") if isinstance(pod_template.get("spec"), dict) else {}
            # The Job API refuses Always; JobSet's webhook defaults an empty one to OnFailure.
            if pod.get("restartPolicy", "OnFailure") not in ("OnFailure", "Never"):
                check.bad(
                    f"{jpath}.template.spec.restartPolicy",
                    'Unsupported value: "Always": supported values: "OnFailure", "Never"',
                )
            # JobSet's webhook: the Jobs' and the pods' generated names are DNS-1035 labels.
            job_name = f"{name}-{rname}-{max(replicas - 1, 0)}"
            if not DNS_1035.match(job_name) or len(job_name) > 63:
                check.bad(path, f"a DNS-1035 label must be at most 63 characters: {job_name!r}")
            completions = job.get("completions")
            if mode == "Indexed" and _whole(completions):
                pod_name = f"{job_name}-{max(completions - 1, 0)}-abcde"
                if len(pod_name) > 63:
                    check.bad(
                        path,
                        "JobSet name must be shorter; pod names generated for this JobSet will "
                        "exceed 63 characters.",
                    )
                elif not DNS_1035.match(pod_name):
                    check.bad(path, f"a DNS-1035 label: {pod_name!r}")
        success = check.fields(
            spec.get("successPolicy", {"operator": "All"}),
            {"operator", "targetReplicatedJobs"},
            "spec.successPolicy",
        )
        if success.get("operator") not in ("All", "Any"):
            check.bad(
                "spec.successPolicy.operator", 'Unsupported value: supported values: "All", "Any"'
            )
        for target in success.get("targetReplicatedJobs") or []:
            if target not in names:
                check.bad(
                    "spec.successPolicy.targetReplicatedJobs",
                    f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs",
                )
        failure = check.fields(
            spec.get("failurePolicy", {}),
            {"maxRestarts", "restartStrategy", "rules"},
            "spec.failurePolicy",
        )
        if "maxRestarts" in failure and not _whole(failure["maxRestarts"]):
            check.bad("spec.failurePolicy.maxRestarts", "must be a whole number, 0 or more")
        if failure.get("restartStrategy", "Recreate") not in ("Recreate", "BlockingRecreate"):
            check.bad("spec.failurePolicy.restartStrategy", "Unsupported value")
        for i, rule in enumerate(failure.get("rules") or []):
            rpath = f"spec.failurePolicy.rules[{i}]"
            rule = check.fields(
                rule,
                {
                    "name",
                    "action",
                    "onJobFailureReasons",
                    "onJobFailureMessagePatterns",
                    "targetReplicatedJobs",
                },
                rpath,
            )
            if not RULE_NAME.match(str(rule.get("name", ""))):
                check.bad(
                    f"{rpath}.name",
                    "Required value: must match ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                )
            if rule.get("action") not in FAILURE_ACTIONS:
                check.bad(f"{rpath}.action", "Unsupported value")
            for key in (
                "onJobFailureReasons",
                "onJobFailureMessagePatterns",
                "targetReplicatedJobs",
            ):
                values = rule.get(key, [])
                if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                    check.bad(f"{rpath}.{key}", "must be a list of strings")

    def _check_pod(
        self, check: Invalid, pod: Any, path: str, namespace: str, container_name: str
    ) -> None:
        pod = check.fields(pod, POD_KEYS, path)
        volumes = pod.get("volumes") or []
        volume_names = set()
        for i, volume in enumerate(volumes):
            vpath = f"{path}.volumes[{i}]"
            volume = check.fields(volume, {"name", *VOLUME_SOURCES}, vpath)
            name = volume.get("name", "")
            if not DNS_LABEL.match(str(name)):
                check.bad(f"{vpath}.name", "must be a DNS-1123 label")
            if name in volume_names:
                check.bad(f"{vpath}.name", f"Duplicate value: {name!r}")
            volume_names.add(name)
            sources = [s for s in VOLUME_SOURCES if s in volume]
            if len(sources) != 1:
                check.bad(vpath, "must specify exactly 1 volume type")
                continue
            source = check.fields(
                volume[sources[0]], VOLUME_SOURCE_KEYS[sources[0]], f"{vpath}.{sources[0]}"
            )
            if sources[0] == "emptyDir":
                if source.get("medium", "") not in ("", "Memory", "HugePages"):
                    check.bad(f"{vpath}.emptyDir.medium", "Unsupported value")
                if "sizeLimit" in source and quantity(source["sizeLimit"]) is None:
                    check.bad(
                        f"{vpath}.emptyDir.sizeLimit",
                        "quantities must match the regular expression",
                    )
            if sources[0] == "persistentVolumeClaim" and not DNS_SUBDOMAIN.match(
                str(source.get("claimName", ""))
            ):
                check.bad(f"{vpath}.persistentVolumeClaim.claimName", "Required value")
            if sources[0] == "hostPath":
                if not str(source.get("path", "")).startswith("/"):
                    check.bad(f"{vpath}.hostPath.path", "must be an absolute path")
                if source.get("type", "") not in HOST_PATH_TYPES:
                    check.bad(f"{vpath}.hostPath.type", "Unsupported value")
        containers = pod.get("containers")
        if not isinstance(containers, list) or not containers:
            check.bad(f"{path}.containers", "Required value")
            containers = []
        if container_name and container_name not in [
            c.get("name") for c in containers if isinstance(c, dict)
        ]:
            check.bad(f"{path}.containers", f"There is no container named {container_name}")
        for i, container in enumerate(containers):
            self._check_container(
                check, container, f"{path}.containers[{i}]", volume_names, namespace
            )
        selector = pod.get("nodeSelector") or {}
        for key, value in selector.items() if isinstance(selector, dict) else []:
            if not LABEL_NAME.match(key.rpartition("/")[2]) or not LABEL_VALUE.match(str(value)):
                check.bad(f"{path}.nodeSelector", f"Invalid value: {key}={value}")
        for i, toleration in enumerate(pod.get("tolerations") or []):
            tpath = f"{path}.tolerations[{i}]"
            toleration = check.fields(
                toleration, {"key", "operator", "value", "effect", "tolerationSeconds"}, tpath
            )
            operator = toleration.get("operator", "Equal")
            if operator not in ("Equal", "Exists"):
                check.bad(f"{tpath}.operator", "Unsupported value")
            if operator == "Exists" and toleration.get("value"):
                check.bad(f"{tpath}.operator", "value must be empty when `operator` is 'Exists'")
            if toleration.get("effect", "") not in (
                "",
                "NoSchedule",
                "PreferNoSchedule",
                "NoExecute",
            ):
                check.bad(f"{tpath}.effect", "Unsupported value")
        for i, ref in enumerate(pod.get("imagePullSecrets") or []):
            ref = check.fields(ref, {"name"}, f"{path}.imagePullSecrets[{i}]")
            if not DNS_SUBDOMAIN.match(str(ref.get("name", ""))):
                check.bad(f"{path}.imagePullSecrets[{i}].name", "Required value")
        if "hostNetwork" in pod and not isinstance(pod["hostNetwork"], bool):
            check.bad(f"{path}.hostNetwork", "must be a boolean")
        if pod.get("dnsPolicy", "ClusterFirst") not in (
            "ClusterFirst",
            "ClusterFirstWithHostNet",
            "Default",
            "None",
        ):
            check.bad(f"{path}.dnsPolicy", "Unsupported value")
        if "priorityClassName" in pod and not DNS_SUBDOMAIN.match(str(pod["priorityClassName"])):
            check.bad(f"{path}.priorityClassName", "must be a DNS-1123 subdomain")

    def _check_container(
        self, check: Invalid, container: Any, path: str, volume_names: set, namespace: str
    ) -> None:
        container = check.fields(container, CONTAINER_KEYS, path)
        if not DNS_LABEL.match(str(container.get("name", ""))):
            check.bad(f"{path}.name", "must be a DNS-1123 label")
        if "securityContext" in container:
            security = check.fields(
                container["securityContext"],
                {"privileged", "capabilities", "runAsUser", "runAsGroup", "runAsNonRoot"},
                f"{path}.securityContext",
            )
            if "privileged" in security and not isinstance(security["privileged"], bool):
                check.bad(f"{path}.securityContext.privileged", "must be a boolean")
        if not isinstance(container.get("image"), str) or not container.get("image"):
            check.bad(f"{path}.image", "Required value")
        for key in ("command", "args"):
            if key in container and (
                not isinstance(container[key], list)
                or not all(isinstance(a, str) for a in container[key])
            ):
                check.bad(f"{path}.{key}", "must be a list of strings")
        for i, env in enumerate(container.get("env") or []):
            epath = f"{path}.env[{i}]"
            env = check.fields(env, {"name", "value", "valueFrom"}, epath)
            if not ENV_NAME.match(str(env.get("name", ""))):
                check.bad(
                    f"{epath}.name",
                    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
                )
            if "value" in env and "valueFrom" in env:
                check.bad(f"{epath}.valueFrom", "may not be specified when `value` is not empty")
            if "value" in env and not isinstance(env["value"], str):
                check.bad(f"{epath}.value", "must be a string")
            if "valueFrom" in env:
                source = check.fields(
                    env["valueFrom"],
                    {"secretKeyRef", "fieldRef", "configMapKeyRef", "resourceFieldRef"},
                    f"{epath}.valueFrom",
                )
                if len(source) != 1:
                    check.bad(
                        f"{epath}.valueFrom", "may not have more than one field specified at a time"
                    )
                if "secretKeyRef" in source:
                    ref = check.fields(
                        source["secretKeyRef"],
                        {"name", "key", "optional"},
                        f"{epath}.valueFrom.secretKeyRef",
                    )
                    secret = self.objects.get(("secrets", namespace, str(ref.get("name"))))
                    if secret is None:
                        check.bad(
                            f"{epath}.valueFrom.secretKeyRef.name",
                            f'secret "{ref.get("name")}" not found (the pod would never start: CreateContainerConfigError)',
                        )
                    elif ref.get("key") not in (secret.get("data") or {}):
                        check.bad(
                            f"{epath}.valueFrom.secretKeyRef.key",
                            f"couldn't find key {ref.get('key')} in Secret {namespace}/{ref.get('name')}",
                        )
                if "fieldRef" in source:
                    ref = check.fields(
                        source["fieldRef"],
                        {"fieldPath", "apiVersion"},
                        f"{epath}.valueFrom.fieldRef",
                    )
                    if not re.match(
                        r"^metadata\.(name|namespace|uid|labels\['[^']+'\]|annotations\['[^']+'\])$|^spec\.(nodeName|serviceAccountName)$|^status\.(hostIP|podIP|podIPs)$",
                        str(ref.get("fieldPath", "")),
                    ):
                        check.bad(f"{epath}.valueFrom.fieldRef.fieldPath", "Unsupported value")
        resources = check.fields(
            container.get("resources", {}), {"limits", "requests", "claims"}, f"{path}.resources"
        )
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        for which, amounts in (("limits", limits), ("requests", requests)):
            for resource, amount in amounts.items():
                if quantity(amount) is None:
                    check.bad(
                        f"{path}.resources.{which}[{resource}]",
                        f"Invalid value: {amount!r}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                    )
        for resource in set(limits) | set(requests):
            if "/" in resource and not resource.startswith("kubernetes.io/"):
                if requests.get(resource) != limits.get(resource):
                    check.bad(
                        f"{path}.resources.requests[{resource}]",
                        "must be equal to limits for extended resources",
                    )
                if (q := quantity(limits.get(resource, "0"))) is not None and q != int(q):
                    check.bad(f"{path}.resources.limits[{resource}]", "must be a whole number")
            elif resource in requests and resource in limits:
                a, b = quantity(requests[resource]), quantity(limits[resource])
                if a is not None and b is not None and a > b:
                    check.bad(
                        f"{path}.resources.requests[{resource}]",
                        "must be less than or equal to limit",
                    )
        for i, port in enumerate(container.get("ports") or []):
            ppath = f"{path}.ports[{i}]"
            port = check.fields(port, {"name", "containerPort", "protocol", "hostPort"}, ppath)
            if "name" in port and (len(port["name"]) > 15 or not PORT_NAME.match(port["name"])):
                check.bad(
                    f"{ppath}.name", "must be no more than 15 characters (an IANA service name)"
                )
            if (
                not isinstance(port.get("containerPort"), int)
                or not 0 < port["containerPort"] < 65536
            ):
                check.bad(f"{ppath}.containerPort", "must be between 1 and 65535")
        paths = set()
        for i, mount in enumerate(container.get("volumeMounts") or []):
            mpath = f"{path}.volumeMounts[{i}]"
            mount = check.fields(
                mount, {"name", "mountPath", "subPath", "readOnly", "mountPropagation"}, mpath
            )
            if mount.get("name") not in volume_names:
                check.bad(f"{mpath}.name", f"Not found: {mount.get('name')!r}")
            mount_path = str(mount.get("mountPath", ""))
            if not mount_path.startswith("/"):
                check.bad(f"{mpath}.mountPath", "must be an absolute path")
            if mount_path in paths:
                check.bad(f"{mpath}.mountPath", "must be unique")
            paths.add(mount_path)
            sub = mount.get("subPath")
            if sub is not None and (
                not isinstance(sub, str) or sub.startswith("/") or ".." in sub.split("/")
            ):
                check.bad(f"{mpath}.subPath", "must be a relative path not containing '..'")
            if "readOnly" in mount and not isinstance(mount["readOnly"], bool):
                check.bad(f"{mpath}.readOnly", "must be a boolean")

    def _patch(self, r: Recorded, key: tuple[str, str, str], found: dict) -> dict:
        content_type = r.headers.get("content-type", "").split(";")[0].strip()
        if content_type not in (
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/json-patch+json",
        ):
            raise Refusal(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            )
        if content_type == "application/json-patch+json" or not isinstance(r.body, dict):
            raise Refusal(400, "BadRequest", "this fake applies merge patches only")
        # The patch against the object's schema too: a merge patch is partial, so missing
        # required fields are no problem, but unknown fields and wrong types are.
        root = k8s_schema.ROOTS[(found["apiVersion"], found["kind"])]
        problems = [
            p
            for p in k8s_schema.check(r.body, root, crd=found["apiVersion"] != "v1")
            if p.kind != "required"
        ]
        check = Invalid(found["kind"], key[2], schema_checked=True)
        if r.param("fieldValidation") == "Strict":
            check.unknown.extend(p.path for p in problems if p.kind == "unknown")
        for p in problems:
            if p.kind == "invalid":
                check.bad(p.path, p.message)
        check.raise_if_any()
        check.fields(r.body, {"metadata", "data", "stringData", "type", "spec"}, "")
        meta = check.fields(r.body.get("metadata", {}), OBJECT_META_KEYS, "metadata")
        for i, owner in enumerate(meta.get("ownerReferences") or []):
            owner = check.fields(
                owner,
                {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"},
                f"metadata.ownerReferences[{i}]",
            )
            for required in ("apiVersion", "kind", "name", "uid"):
                if not owner.get(required):
                    check.bad(f"metadata.ownerReferences[{i}].{required}", "Required value")
        check.raise_if_any()
        # A resourceVersion in the patch is a precondition (optimistic concurrency): another
        # write since it was read is 409 Conflict, as the API server answers.
        if "resourceVersion" in meta and meta["resourceVersion"] != found["metadata"].get(
            "resourceVersion"
        ):
            what = found["kind"].lower() + "s"
            if found["apiVersion"] != "v1":
                what = f"{what}.{found['apiVersion'].split('/')[0]}"
            raise Refusal(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {what} "{key[2]}": the object has been '
                "modified; please apply your changes to the latest version and try again",
            )
        for k, v in meta.items():
            if k not in ("resourceVersion", "uid", "creationTimestamp"):  # the server's own
                found["metadata"][k] = v
        found["metadata"]["resourceVersion"] = self._next_revision()
        return found

    def _next_revision(self) -> str:
        self.revision += 1
        return str(self.revision)

    def _delete(self, r: Recorded, key: tuple[str, str, str], found: dict) -> dict:
        policy = r.param("propagationPolicy") or "Background"
        if policy not in ("Foreground", "Background", "Orphan"):
            raise Refusal(
                400,
                "BadRequest",
                f"propagationPolicy {policy!r} is not Foreground, Background or Orphan",
            )
        if set(found["metadata"].get("finalizers") or ()) - {"foregroundDeletion"}:
            # Marked deleted and kept until its finalizers' controllers remove them (never,
            # for a controller that is gone), as the API server does. (The garbage
            # collector's own, foregroundDeletion, is hold_deletions'.)
            found["metadata"].setdefault("deletionTimestamp", now_stamp())
            return found
        if self.hold_deletions and key[0] in JOB_PLURALS:
            # The garbage collector deletes the job's pods, which terminate as their kubelet
            # lets them (until finish_deletions; never, on a node that is not ready). The
            # operators make them with blockOwnerDeletion (training-operator's and
            # mpi-operator's metav1.NewControllerRef), so a Foreground delete keeps the job,
            # deletionTimestamp and foregroundDeletion finalizer set, until they are gone;
            # a Background one removes it at once (kubernetes garbage collection docs,
            # "Foreground cascading deletion").
            for pod in self._owned_pods(key).values():
                pod["metadata"].setdefault("deletionTimestamp", now_stamp())
            if policy == "Foreground":
                found["metadata"].setdefault("deletionTimestamp", now_stamp())
                found["metadata"]["finalizers"] = ["foregroundDeletion"]
                return found
            self.objects.pop(key, None)
            return status(200, "", "")
        self._remove(key)
        return status(200, "", "")

    def _owned_pods(self, key: tuple[str, str, str]) -> dict[tuple[str, str], dict]:
        plural, namespace, name = key
        if plural not in JOB_PLURALS:
            return {}
        owner = (
            "jobset.sigs.k8s.io/jobset-name"  # a TrainJob's JobSet is named after it
            if plural in ("jobsets", "trainjobs")
            else "training.kubeflow.org/job-name"
        )
        return {
            pod_key: pod
            for pod_key, pod in self.pods.items()
            if pod["metadata"]["labels"].get(owner) == name and pod_key[0] == namespace
        }

    def _remove(self, key: tuple[str, str, str]) -> None:
        self.objects.pop(key, None)
        for pod_key in self._owned_pods(key):
            self._remove_pod(pod_key)

    def _remove_pod(self, pod_key: tuple[str, str]) -> None:
        """A pod gone, and its container's log with it: a pod made again under its name
        starts a new log, as the kubelet's does."""
        del self.pods[pod_key]
        self.log_lines.pop(pod_key, None)
        self.generated_logs.pop(pod_key, None)


def configure(settings: Any, fake: FakeKubernetes, **overrides: Any) -> None:
    """Points the console's Kubernetes backend (pytest-django `settings`) at the fake."""
    settings.CONSOLE_BACKENDS = ["local", "kubernetes"]
    settings.KUBERNETES_API_URL = fake.url
    settings.KUBERNETES_TOKEN = fake.token
    settings.KUBERNETES_TOKEN_FILE = ""
    settings.KUBERNETES_CA_FILE = ""
    settings.KUBERNETES_NAMESPACES = "default"
    settings.KUBERNETES_CLUSTER_NAME = "Kubernetes"
    settings.KUBERNETES_QUEUES = ""
    settings.KUBERNETES_ACCELERATORS = "nvidia.com/gpu"
    settings.KUBERNETES_VOLUMES = ""
    settings.KUBERNETES_HOST_PATHS = ""
    settings.KUBERNETES_PRIORITY_CLASSES = ""
    settings.KUBERNETES_TOLERATIONS = ""
    settings.KUBERNETES_IMAGE_PULL_SECRETS = ""
    settings.KUBERNETES_PRIVILEGED_NAMESPACES = ""
    settings.KUBERNETES_TRAINING_API = "v1"
    settings.KUBERNETES_CACHE_SECONDS = 10
    settings.KUBERNETES_READ_TIMEOUT = 5
    settings.KUBERNETES_PAGE_READ_TIMEOUT = 2
    for name, value in overrides.items():
        setattr(settings, name, value)
