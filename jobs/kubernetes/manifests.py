"""The Kubeflow training-operator manifests a job spec becomes: pure functions, no I/O.

A spec (exactly the AIHC CreateJob request, plus the console's roles) maps to one custom
resource and, when it has secret envs, one Secret created just before it:

- PyTorchJob (kubeflow.org/v1): pytorchReplicaSpecs Master / Worker, container "pytorch"
  with port 23456 named pytorchjob-port (the operator sets MASTER_ADDR, MASTER_PORT, RANK
  and WORLD_SIZE from it, as AIHC does: WORLD_SIZE counts instances, not processes);
- TFJob (kubeflow.org/v1): tfReplicaSpecs Chief / Worker / PS / Evaluator, container
  "tensorflow" with port 2222 named tfjob-port (the operator writes TF_CONFIG);
- MPIJob (kubeflow.org/v2beta1): mpiReplicaSpecs Launcher (the spec's "master") / Worker,
  slotsPerWorker = the workers' cards (1 for CPU-only workers). The launcher runs the spec's
  command (mpirun ...); workers run their image's own entrypoint, which for the MPI operator
  is the SSH server the launcher reaches them through (its images and docs do so).
- The console's custom framework has no training-operator kind: the backend refuses it
  (KubernetesBackend.check_spec) rather than guess at a plain Job or a JobSet.

Each replica: the spec's image; its command run as AIHC and the local runner run it
(`bash -c "<command>"`, or the shell the entrypoint names); its envs, secret ones by
secretKeyRef to the job's Secret (never inline); cards, CPU and memory as equal requests and
limits (extended resources need them equal); /dev/shm an emptyDir in memory of the spec's
size; mounts with subPath and readOnly; restartPolicy OnFailure with fault tolerance, else
Never. runPolicy: backoffLimit = fault tolerance retries (0 without), activeDeadlineSeconds
= the timeout, ttlSecondsAfterFinished = the auto-delete retention, cleanPodPolicy Running
(pods still running when the job ends are removed: a TensorFlow PS or an MPI worker never
ends by itself; ended pods stay, so their logs can be read).
"""

from __future__ import annotations

import posixpath
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from jobs import spec as S

CONSOLE_JOB_LABEL = "ai-job-console/job-id"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Set by the training operator on every pod it creates.
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
MPI_ROLE_LABEL = "training.kubeflow.org/job-role"  # the MPI operator v2: launcher / worker
PREVIEW_JOB_ID = "<job-id>"
SHM_VOLUME = "dshm"
MASKED = S.mask("x")

# Storage types mounted from a PersistentVolumeClaim (the claim names are configured), and
# the node's own folders (hostPath, under configured roots).
CLAIM_TYPES = ("pfs", "nas", "cfs")
HOST_PATH_TYPE = "hostpath"


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    plural: str
    replica_specs: str  # the spec key holding the replica specs
    container: str  # the container name the operator looks for
    roles: dict[str, str]  # console role -> replica type
    port: tuple[str, int] | None = None


KINDS: dict[str, Kind] = {
    S.PYTORCH: Kind(
        "kubeflow.org/v1",
        "PyTorchJob",
        "pytorchjobs",
        "pytorchReplicaSpecs",
        "pytorch",
        {"master": "Master", "worker": "Worker"},
        ("pytorchjob-port", 23456),
    ),
    S.TENSORFLOW: Kind(
        "kubeflow.org/v1",
        "TFJob",
        "tfjobs",
        "tfReplicaSpecs",
        "tensorflow",
        {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"},
        ("tfjob-port", 2222),
    ),
    S.MPI: Kind(
        "kubeflow.org/v2beta1",
        "MPIJob",
        "mpijobs",
        "mpiReplicaSpecs",
        "mpi",
        {"master": "Launcher", "worker": "Worker"},
    ),
}


@dataclass(frozen=True)
class Accelerator:
    """A card type the wizard offers (an AIHC resource name, e.g. baidu.com/a800_80g_cgpu)
    as the cluster knows it: the extended resource pods request, and the node labels that
    pick nodes with that card (several card types may share nvidia.com/gpu)."""

    card_type: str
    resource: str
    node_selector: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Cluster:
    """What the console knows of the cluster (KUBERNETES_* settings)."""

    accelerators: dict[str, Accelerator] = field(default_factory=dict)
    claims: dict[str, str] = field(default_factory=dict)  # claim name -> storage type
    host_paths: dict[str, str] = field(default_factory=dict)  # volume name -> node folder
    priority_classes: dict[str, str] = field(default_factory=dict)  # high/normal/low -> class
    kueue: bool = False  # queues are Kueue LocalQueues
    # Every pod of every job: taints it tolerates (a dedicated training node pool), and the
    # Secrets its images are pulled with (the console sends no registry password itself).
    tolerations: tuple[dict[str, str], ...] = ()
    image_pull_secrets: tuple[str, ...] = ()


def object_name(spec: S.JobSpec, job_id: str) -> str:
    """The custom resource's name: the job's name (cut to 20) and 12 hex digits of the console
    job id, so a retried create names the same object (409 AlreadyExists, never a second job)
    and `kubectl get pytorchjobs` shows which job it is. 33 characters at most, so pod and
    service names the operator derives (`<name>-evaluator-999`) stay within 63."""
    base = spec.name[:20].rstrip("-") or "job"
    match = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", job_id)
    suffix = uuid.UUID(match.group(0)).hex[:12] if match else "<id>"
    return f"{base}-{suffix}"


def secret_name(name: str) -> str:
    return f"{name}-env"


def resource_path(framework: str, namespace: str, name: str = "") -> str:
    kind = KINDS[framework]
    path = f"/apis/{kind.api_version}/namespaces/{namespace}/{kind.plural}"
    return f"{path}/{name}" if name else path


def secret_path(namespace: str, name: str = "") -> str:
    path = f"/api/v1/namespaces/{namespace}/secrets"
    return f"{path}/{name}" if name else path


def retention_seconds(period: str) -> int | None:
    match = S.RETENTION_RE.match(period or "")
    if not match:
        return None
    return int(match.group(1)) * {"m": 60, "h": 3600, "d": 86400}[match.group(2)]


def sub_path(source: str | None) -> str | None:
    """A mount's folder inside its volume as a relative subPath; "" for the whole volume,
    None when it leaves the volume ("..")."""
    text = (source or "").strip().strip("/")
    if not text:
        return ""
    if ".." in text.split("/") or "\x00" in text:
        return None
    return posixpath.normpath(text)


def container_command(spec: S.JobSpec) -> list[str]:
    """How AIHC and the local runner run the spec's command: by the entrypoint's shell when
    it names one (`sh`, `/usr/bin/env bash`), else `bash -c` around entrypoint + command."""
    if spec.entrypoint_is_shell():
        return [*spec.entrypoint.split(), "-c", spec.command]
    return ["bash", "-c", spec.v1_command()]


def secret_manifest(
    spec: S.JobSpec, *, name: str, namespace: str, job_id: str, masked: bool = False
) -> dict[str, Any] | None:
    """The Secret holding the job's secret envs (None without any), labelled with the job."""
    secrets = [env for env in spec.envs if env.secret]
    if not secrets:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(name),
            "namespace": namespace,
            "labels": {CONSOLE_JOB_LABEL: job_id},
        },
        "type": "Opaque",
        "stringData": {env.name: MASKED if masked else env.value for env in secrets},
    }


def _env(spec: S.JobSpec, role: S.Role, *, name: str, job_id: str) -> list[dict[str, Any]]:
    own = {env.name for env in spec.envs}
    platform: list[dict[str, Any]] = [
        {"name": "AIHC_JOB_NAME", "value": spec.name},
        {"name": "AIHC_JOB_ID", "value": job_id},
        {"name": "AIHC_ROLE", "value": role.name},
        {
            "name": "AIHC_ROLE_INDEX",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{REPLICA_INDEX_LABEL}']"}},
        },
    ]
    if spec.tensorboard.enable:
        platform.append({"name": "AIHC_TENSORBOARD_LOG_PATH", "value": spec.tensorboard.log_path})
    if spec.framework == S.PYTORCH:
        cards = role.accelerators if role.accelerator_type else 1
        platform.append({"name": "NPROC_PER_NODE", "value": str(cards)})
    for default, value in (("NCCL_DEBUG", "INFO"), ("PYTHONUNBUFFERED", "1")):
        if default not in own:
            platform.append({"name": default, "value": value})
    user = [
        {
            "name": env.name,
            "valueFrom": {"secretKeyRef": {"name": secret_name(name), "key": env.name}},
        }
        if env.secret
        else {"name": env.name, "value": env.value}
        for env in spec.envs
    ]
    return platform + user


def _resources(role: S.Role, cluster: Cluster) -> dict[str, Any]:
    amounts: dict[str, str] = {}
    if role.accelerator_type and role.accelerators:
        accelerator = cluster.accelerators.get(role.accelerator_type)
        resource = accelerator.resource if accelerator else role.accelerator_type
        amounts[resource] = str(role.accelerators)
    if role.cpu is not None:
        amounts["cpu"] = str(role.cpu)
    if role.memory_gb is not None:
        amounts["memory"] = f"{role.memory_gb}Gi"
    return {"limits": dict(amounts), "requests": dict(amounts)} if amounts else {}


def _volumes(spec: S.JobSpec, cluster: Cluster) -> tuple[list[dict], list[dict]]:
    volumes: list[dict[str, Any]] = [
        {
            "name": SHM_VOLUME,
            "emptyDir": {"medium": "Memory", "sizeLimit": f"{spec.shared_memory_gi}Gi"},
        }
    ]
    mounts: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    for i, ds in enumerate(spec.datasources):
        volume_name = f"data-{i}"
        sub = sub_path(ds.source_path)
        mount: dict[str, Any] = {"name": volume_name, "mountPath": ds.mount_path}
        if ds.type == HOST_PATH_TYPE:
            root = cluster.host_paths.get(ds.name, "")
            path = posixpath.join(root, sub) if sub else root
            volumes.append({"name": volume_name, "hostPath": {"path": path, "type": "Directory"}})
        else:
            claim: dict[str, Any] = {"claimName": ds.name}
            if ds.read_only:
                claim["readOnly"] = True
            volumes.append({"name": volume_name, "persistentVolumeClaim": claim})
            if sub:
                mount["subPath"] = sub
        if ds.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    return volumes, mounts


def _pod_template(
    spec: S.JobSpec, role: S.Role, cluster: Cluster, *, name: str, job_id: str
) -> dict[str, Any]:
    kind = KINDS[spec.framework]
    volumes, mounts = _volumes(spec, cluster)
    container: dict[str, Any] = {"name": kind.container, "image": spec.image}
    if not (spec.framework == S.MPI and role.name == "worker"):
        container["command"] = container_command(spec)
    container["env"] = _env(spec, role, name=name, job_id=job_id)
    if resources := _resources(role, cluster):
        container["resources"] = resources
    if kind.port:
        port_name, number = kind.port
        container["ports"] = [{"name": port_name, "containerPort": number}]
    container["volumeMounts"] = mounts
    pod: dict[str, Any] = {"containers": [container], "volumes": volumes}
    accelerator = cluster.accelerators.get(role.accelerator_type) if role.accelerators else None
    if accelerator and accelerator.node_selector:
        pod["nodeSelector"] = dict(accelerator.node_selector)
    if priority_class := cluster.priority_classes.get(spec.priority):
        pod["priorityClassName"] = priority_class
    if cluster.tolerations:
        pod["tolerations"] = [dict(t) for t in cluster.tolerations]
    if cluster.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": name} for name in cluster.image_pull_secrets]
    if spec.host_network:
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"
    labels = {**dict(spec.labels), CONSOLE_JOB_LABEL: job_id}
    return {"metadata": {"labels": labels}, "spec": pod}


def run_policy(spec: S.JobSpec) -> dict[str, Any]:
    policy: dict[str, Any] = {"cleanPodPolicy": "Running"}
    ftc = spec.fault_tolerance_config
    if spec.fault_tolerance:
        limit = ftc.fault_tolerance_limit if ftc and ftc.fault_tolerance_limit is not None else None
        policy["backoffLimit"] = limit if limit is not None else S.MAX_UNCONDITIONAL_RETRIES
    else:
        policy["backoffLimit"] = 0
    policy["activeDeadlineSeconds"] = spec.timeout_minutes * 60
    if (ttl := retention_seconds(spec.retention_period)) is not None:
        policy["ttlSecondsAfterFinished"] = ttl
    return policy


def job_manifest(
    spec: S.JobSpec, cluster: Cluster, *, name: str, namespace: str, job_id: str
) -> dict[str, Any]:
    """The training-operator custom resource for the spec, exactly as it is sent."""
    kind = KINDS[spec.framework]
    restart = "OnFailure" if spec.fault_tolerance else "Never"
    replicas: dict[str, Any] = {}
    for role in spec.roles:
        if role.replicas <= 0 or role.name not in kind.roles:
            continue
        replicas[kind.roles[role.name]] = {
            "replicas": role.replicas,
            "restartPolicy": restart,
            "template": _pod_template(spec, role, cluster, name=name, job_id=job_id),
        }
    labels = {**dict(spec.labels), CONSOLE_JOB_LABEL: job_id}
    if cluster.kueue:
        labels[KUEUE_QUEUE_LABEL] = spec.queue
    body: dict[str, Any] = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {},
    }
    if spec.framework == S.MPI:
        worker = next((r for r in spec.roles if r.name == "worker"), None)
        slots = worker.accelerators if worker and worker.accelerator_type else 1
        body["spec"]["slotsPerWorker"] = max(slots, 1)
        master = next((r for r in spec.roles if r.name == "master"), None)
        if master and master.accelerator_type and master.accelerators:
            # A launcher given cards runs ranks too, as on AIHC (training-operator v1 lists
            # such a launcher in the hostfile; jobs.runtime_env.mpi_hostfile does the same).
            body["spec"]["runLauncherAsWorker"] = True
    body["spec"]["runPolicy"] = run_policy(spec)
    body["spec"][kind.replica_specs] = replicas
    return body


def replica_role(framework: str, pod_labels: dict[str, str]) -> str:
    """The console role of an operator-made pod, from its labels ("" when unknown)."""
    kind = KINDS.get(framework)
    if kind is None:
        return ""
    if framework == S.MPI:
        value = pod_labels.get(MPI_ROLE_LABEL) or pod_labels.get(REPLICA_TYPE_LABEL, "")
    else:
        value = pod_labels.get(REPLICA_TYPE_LABEL, "")
    by_type = {replica_type.lower(): role for role, replica_type in kind.roles.items()}
    return by_type.get(value.lower(), "")
