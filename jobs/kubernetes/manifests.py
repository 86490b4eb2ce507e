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
- The console's custom framework (user-named roles) has no training-operator kind: it becomes
  a JobSet (jobset.x-k8s.io/v1alpha2, kubernetes-sigs/jobset), one replicatedJob per role.
  Each is one Job (replicas 1) running the role's instances as an Indexed Job (parallelism =
  completions = instances), rather than one single-pod Job per instance: the instance's index
  is the Job's completion index (JOB_COMPLETION_INDEX, and the pod annotation AIHC_ROLE_INDEX
  is read from), its pod has the stable hostname <jobset>-<role>-0-<index> under the
  JobSet's headless service (`<jobset>-<role>-0-<index>.<jobset>` in the namespace), and a
  role stays one Job, as Kubeflow Trainer builds its node groups. Pods never restart in place
  (restartPolicy Never, backoffLimit 0): a failed instance fails its Job, and the JobSet is
  recreated as a whole, peers included, at most failurePolicy.maxRestarts times (fault
  tolerance's retries, 0 without), as a distributed job restarts on AIHC. The timeout is each
  Job's activeDeadlineSeconds, and a Job failed by it fails the JobSet at once (a FailJobSet
  rule on DeadlineExceeded) instead of restarting it. It succeeds when every Job completes
  (successPolicy All).

Each replica: the spec's image; its command run as AIHC and the local runner run it
(`bash -c "<command>"`, or the shell the entrypoint names); its envs, secret ones by
secretKeyRef to the job's Secret (never inline); cards, CPU and memory as equal requests and
limits (extended resources need them equal); /dev/shm an emptyDir in memory of the spec's
size; mounts with subPath and readOnly; restartPolicy Never. runPolicy: backoffLimit 0,
activeDeadlineSeconds = the timeout, ttlSecondsAfterFinished = the auto-delete retention,
cleanPodPolicy Running (pods still running when the job ends are removed: a TensorFlow PS or
an MPI worker never ends by itself; ended pods stay, so their logs can be read).

Fault tolerance of a training-operator job is the console's, not the operator's (fix107):
the operator's policies restart a failed container in place (OnFailure) or re-create the
failed pod alone (ExitCode), and fail the job once its pods' restarts together pass
backoffLimit; none restarts the whole job, as AIHC and the local pool do. So the job is sent
with backoffLimit 0 and restartPolicy Never, fails at its first failed replica, and the
console deletes it and creates it again (`restarted`), up to fault tolerance's retries
(jobs.backends.kubernetes, README "runPolicy"). A JobSet restarts as a whole by itself
(failurePolicy.maxRestarts, above).
"""

from __future__ import annotations

import posixpath
import re
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from jobs import spec as S
from jobs.runtime_env import role_counts

CONSOLE_JOB_LABEL = "ai-job-console/job-id"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Set by the training operator on every pod it creates.
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
MPI_ROLE_LABEL = "training.kubeflow.org/job-role"  # the MPI operator v2: launcher / worker
# Set by the JobSet controller on its Jobs and their pods, and by the Job controller on the
# pods of an Indexed Job (the label since Kubernetes 1.28, the annotation always).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
# On a training-operator job the console created again for a fault-tolerance restart: which
# restart (restarted). The first create has none.
RESTART_LABEL = "ai-job-console/restart"
# On every object the console makes, and its pods, for a cluster admin reading them (qa103):
# the label Kubernetes recommends for the tool managing an object (app.kubernetes.io, which
# the spec's label rule refuses, so no job can give it), and whose job and which page.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "ai-job-console"
USER_ANNOTATION = "ai-job-console/user"
URL_ANNOTATION = "ai-job-console/url"
# The only FailJobSet rule sent: a Job past its activeDeadlineSeconds ends the JobSet.
DEADLINE_RULE = "DeadlineExceeded"
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
# The custom framework's kind: its roles are the user's, each a replicatedJob of that name.
JOBSET = Kind("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", "replicatedJobs", "main", {})

# KUBERNETES_TRAINING_API: "v1", the training operator's kinds above (the default), or
# "trainer", Kubeflow Trainer v2, where a PyTorch job is a TrainJob. Sources: kubeflow/trainer
# pkg/apis/trainer/v1alpha1/trainjob_types.go (v2.2: runtimePatches, which replaced v2.1's
# podTemplateOverrides, and activeDeadlineSeconds), pkg/runtime/framework/plugins/torch/
# torch.go (the PET_* variables) and manifests/base/runtimes/torch_distributed.yaml (the
# runtime's one replicatedJob and container, both "node").
TRAINING_APIS = ("v1", "trainer")
TRAINER_API = "trainer"
TRAINJOB = Kind("trainer.kubeflow.org/v1alpha1", "TrainJob", "trainjobs", "trainer", "node", {})
TRAINER_RUNTIME = "torch-distributed"  # the ClusterTrainingRuntime Trainer installs
TRAINER_NODE = "node"  # the runtime's replicatedJob and container the trainer runs in
# Who owns the console's runtimePatches entry (a patch is keyed by its manager). A
# domain-prefixed path, as Kueue's "kueue.x-k8s.io/manager" and the SDK's
# "trainer.kubeflow.org/kubeflow-sdk": Trainer validated v2.1's podTemplateOverrides manager
# with IsDomainPrefixedPath (plugins/jobset/jobset.go); v2.2's CRD asks 1 to 253 characters.
TRAINER_PATCH_MANAGER = "ai-job-console/manager"
# The TrainJob CRD's limit on each item of spec.trainer.command (trainer.kubeflow.org_trainjobs
# .yaml, v2.2: items maxLength 65536), a pod's command having none.
TRAINER_COMMAND_ITEM_MAX = 65536
# The same CRD's limit on spec.trainer.image (trainjob_types.go, v2.2: MaxLength=500); the
# console's own is 512 (jobs.spec), a pod's image having none.
TRAINER_IMAGE_MAX = 500
# torchrun's rendezvous port the torch plugin sets (pkg/constants/constants.go
# ContainerTrainerPort, 29500 in every release; feat-trainer had read 29400).
TRAINER_MASTER_PORT = 29500
# The variables the torch plugin sets in every node; its webhook refuses a TrainJob whose
# trainer.env names one (constants.TorchRunReservedEnvNames).
TORCH_RESERVED_ENVS = (
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
)


def is_trainjob(framework: str, training_api: str) -> bool:
    """Whether a job of the framework is a TrainJob under that training API. Only PyTorch:
    MPI jobs stay MPIJobs (kubeflow/mpi-operator, installed apart from the v1 training
    operator), custom jobs JobSets (which Trainer itself needs), and TensorFlow has no
    Trainer runtime (refused on such a pool)."""
    return training_api == TRAINER_API and framework == S.PYTORCH


def kind_of(framework: str, training_api: str = "") -> Kind:
    if is_trainjob(framework, training_api):
        return TRAINJOB
    return JOBSET if framework == S.CUSTOM else KINDS[framework]


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
    # Namespaces (pools) whose jobs may run privileged containers (KUBERNETES_PRIVILEGED_
    # NAMESPACES); none by default.
    privileged_namespaces: frozenset[str] = frozenset()
    training_api: str = "v1"  # KUBERNETES_TRAINING_API


def object_name(spec: S.JobSpec, job_id: str) -> str:
    """The custom resource's name: the job's name (cut to 20) and 12 hex digits of the console
    job id, so a retried create names the same object (409 AlreadyExists, never a second job)
    and `kubectl get pytorchjobs` shows which job it is. 33 characters at most, so pod and
    service names the operator derives (`<name>-evaluator-999`) stay within 63.

    A JobSet's pods are named `<name>-<role>-0-<index>-<5 random>` and must be DNS-1035
    labels of at most 63 (its webhook refuses the JobSet otherwise): the job's name is cut
    further for long role names (a role name of 32 and 1000 instances leave 5 characters)."""
    keep = 20
    if spec.framework == S.CUSTOM:
        longest = max(
            (len(f"-{role.name}-0-{max(role.replicas - 1, 0)}-abcde") for role in spec.roles),
            default=0,
        )
        keep = max(min(keep, 63 - longest - 13), 1)
    base = spec.name[:keep].rstrip("-") or "job"
    match = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", job_id)
    suffix = uuid.UUID(match.group(0)).hex[:12] if match else "<id>"
    return f"{base}-{suffix}"


def secret_name(name: str) -> str:
    return f"{name}-env"


def resource_path(framework: str, namespace: str, name: str = "", *, training_api: str = "") -> str:
    kind = kind_of(framework, training_api)
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
    # The instance's index within its role: the operator's replica-index label, or a JobSet
    # pod's completion index (what the Job controller also sets JOB_COMPLETION_INDEX from).
    index_field = (
        f"metadata.annotations['{COMPLETION_INDEX}']"
        if spec.framework == S.CUSTOM
        else f"metadata.labels['{REPLICA_INDEX_LABEL}']"
    )
    role_index: dict[str, Any] = {"valueFrom": {"fieldRef": {"fieldPath": index_field}}}
    if spec.framework == S.MPI and role.name == "master":
        # mpi-operator labels only its workers with a replica index (qa96): the one launcher
        # is 0.
        role_index = {"value": "0"}
    platform: list[dict[str, Any]] = [
        {"name": "AIHC_JOB_NAME", "value": spec.name},
        {"name": "AIHC_JOB_ID", "value": job_id},
        {"name": "AIHC_ROLE", "value": role.name},
        {"name": "AIHC_ROLE_INDEX", **role_index},
    ]
    platform.extend(
        {"name": variable, "value": count}
        for variable, count in role_counts(spec).items()
        if variable not in own  # the job's own env of the name wins, as on the other pools
    )
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
            # The configured root, and the folder inside it as a subPath, as for a claim:
            # the kubelet makes a missing subPath (safely, not following a link), while a
            # hostPath of type Directory naming the folder itself left the pod unable to
            # start ("hostPath type check failed") until someone made it on the node.
            root = cluster.host_paths.get(ds.name, "")
            volumes.append({"name": volume_name, "hostPath": {"path": root, "type": "Directory"}})
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
    kind = kind_of(spec.framework)
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
    if spec.privileged:
        # Only reached for a namespace the operator allows (check_spec, and again at submit).
        container["securityContext"] = {"privileged": True}
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
    # backoffLimit 0: the console restarts the whole job (see the module's docstring).
    policy: dict[str, Any] = {"cleanPodPolicy": "Running", "backoffLimit": 0}
    policy["activeDeadlineSeconds"] = spec.timeout_minutes * 60
    if (ttl := retention_seconds(spec.retention_period)) is not None:
        policy["ttlSecondsAfterFinished"] = ttl
    return policy


def _metadata(
    spec: S.JobSpec, cluster: Cluster, *, name: str, namespace: str, job_id: str
) -> dict[str, Any]:
    labels = {**dict(spec.labels), CONSOLE_JOB_LABEL: job_id}
    if cluster.kueue:
        labels[KUEUE_QUEUE_LABEL] = spec.queue
    return {"name": name, "namespace": namespace, "labels": labels}


def console_marked(body: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    """`body` (a manifest of the console's) with the managed-by label and `annotations` on
    each metadata that carries the job's id label: the object's and its pod templates' (a
    JobSet's Jobs', a TrainJob's patch), so its pods carry them too. In place; returned."""
    for value in body.values() if isinstance(body, dict) else body:
        if isinstance(value, dict | list):
            console_marked(value, annotations)
    labels = body.get("labels") if isinstance(body, dict) else None
    if isinstance(labels, dict) and CONSOLE_JOB_LABEL in labels:
        labels[MANAGED_BY_LABEL] = MANAGED_BY
        if annotations:
            body["annotations"] = {**(body.get("annotations") or {}), **annotations}
    return body


def console_restarts(body: dict[str, Any]) -> bool:
    """Whether the console restarts this training-operator job on failure (fix107): sent with
    backoffLimit 0. One sent before (backoffLimit N, restartPolicy OnFailure) had its N
    restarts from the operator already, and is not restarted again."""
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    policy = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), dict) else {}
    return policy.get("backoffLimit") == 0


def restart_of(body: dict[str, Any]) -> int:
    """Which of the console's restarts made this resource (its RESTART_LABEL; 0 for the
    first create)."""
    labels = (body.get("metadata") or {}).get("labels") or {}
    value = str(labels.get(RESTART_LABEL, ""))
    return int(value) if value.isdigit() else 0


def restarted(body: dict[str, Any], *, restart: int, seconds_left: int) -> dict[str, Any]:
    """A training-operator job's resource as the console creates it again for its `restart`
    (1, 2, ...): labelled with it, so a sync tells the failed resource from the new one, and
    with the time the job has left as its activeDeadlineSeconds, so the limit counts from the
    job's first start, as on the local pool, not again from each restart."""
    labels = {**body["metadata"]["labels"], RESTART_LABEL: str(restart)}
    run = {**body["spec"]["runPolicy"], "activeDeadlineSeconds": max(1, seconds_left)}
    spec = {**body["spec"], "runPolicy": run}
    # Its pods carry the label too: a log read tells the run a pod is of (the failed one's,
    # still terminating, already kept: review55 M3) from the pod's own labels.
    for key, replicas in body["spec"].items():
        if key.endswith("ReplicaSpecs") and isinstance(replicas, dict):
            spec[key] = {
                kind: _with_pod_label(replica, RESTART_LABEL, str(restart))
                for kind, replica in replicas.items()
            }
    return {**body, "metadata": {**body["metadata"], "labels": labels}, "spec": spec}


def _with_pod_label(replica: dict[str, Any], name: str, value: str) -> dict[str, Any]:
    template = replica.get("template") or {}
    metadata = template.get("metadata") or {}
    labels = {**(metadata.get("labels") or {}), name: value}
    return {**replica, "template": {**template, "metadata": {**metadata, "labels": labels}}}


def retries(spec: S.JobSpec) -> int:
    """How often a failed job is started again: fault tolerance's limit, else the platform's
    default; never without fault tolerance."""
    if not spec.fault_tolerance:
        return 0
    ftc = spec.fault_tolerance_config
    limit = ftc.fault_tolerance_limit if ftc and ftc.fault_tolerance_limit is not None else None
    return limit if limit is not None else S.MAX_UNCONDITIONAL_RETRIES


def jobset_manifest(
    spec: S.JobSpec, cluster: Cluster, *, name: str, namespace: str, job_id: str
) -> dict[str, Any]:
    """The JobSet for a custom job, exactly as it is sent (see the module's docstring)."""
    replicated: list[dict[str, Any]] = []
    for role in spec.roles:
        if role.replicas <= 0:
            continue
        template = _pod_template(spec, role, cluster, name=name, job_id=job_id)
        template["spec"]["restartPolicy"] = "Never"
        replicated.append(
            {
                "name": role.name,
                "replicas": 1,
                "template": {
                    "metadata": {"labels": {**dict(spec.labels), CONSOLE_JOB_LABEL: job_id}},
                    "spec": {
                        "parallelism": role.replicas,
                        "completions": role.replicas,
                        "completionMode": "Indexed",
                        "backoffLimit": 0,
                        "activeDeadlineSeconds": spec.timeout_minutes * 60,
                        "template": template,
                    },
                },
            }
        )
    body: dict[str, Any] = {
        "apiVersion": JOBSET.api_version,
        "kind": JOBSET.kind,
        "metadata": _metadata(spec, cluster, name=name, namespace=namespace, job_id=job_id),
        "spec": {
            "replicatedJobs": replicated,
            "network": {"enableDNSHostnames": True, "subdomain": name},
            "successPolicy": {"operator": "All"},
            "failurePolicy": {
                "maxRestarts": retries(spec),
                "rules": [
                    {
                        "name": DEADLINE_RULE,
                        "action": "FailJobSet",
                        "onJobFailureReasons": ["DeadlineExceeded"],
                    }
                ],
            },
        },
    }
    if (ttl := retention_seconds(spec.retention_period)) is not None:
        body["spec"]["ttlSecondsAfterFinished"] = ttl
    return body


def mpi_slots_per_worker(spec: S.JobSpec) -> int:
    """An MPIJob's slotsPerWorker: a worker's cards (1 without)."""
    worker = next((r for r in spec.roles if r.name == "worker"), None)
    slots = worker.accelerators if worker and worker.accelerator_type else 1
    return max(slots, 1)


def mpi_launcher_runs_ranks(spec: S.JobSpec) -> bool:
    """Whether an MPIJob's launcher gets runLauncherAsWorker: a master given cards runs ranks
    too, as on AIHC (training-operator v1 lists such a launcher in the hostfile;
    jobs.runtime_env.mpi_hostfile does the same)."""
    master = next((r for r in spec.roles if r.name == "master"), None)
    return bool(master and master.accelerator_type and master.accelerators)


def trainer_command(spec: S.JobSpec) -> list[str]:
    """A TrainJob node's command: the job's, run as container_command runs it, once the node's
    console role and index are set from the torch plugin's PET_NODE_RANK (the Job's
    completion index): node 0 is the master, node i worker i-1. The trainer's env is one for
    every node, so it cannot carry them. It also sets what a command written for AIHC (or a
    training operator v1 cluster) reads, which the torch plugin does not set (it sets only
    PET_*): MASTER_ADDR and MASTER_PORT (node 0's), and RANK and WORLD_SIZE in AIHC's per-node
    meaning, the node's rank and the node count (qa73). torchrun takes its settings from the
    PET_* ones and sets these four afresh in each process it starts."""
    *shell, script = container_command(spec)
    prelude = (
        'if [ "$PET_NODE_RANK" = 0 ]; then export AIHC_ROLE=master AIHC_ROLE_INDEX=0; '
        "else export AIHC_ROLE=worker AIHC_ROLE_INDEX=$((PET_NODE_RANK - 1)); fi; "
        "export MASTER_ADDR=$PET_MASTER_ADDR MASTER_PORT=$PET_MASTER_PORT "
        "RANK=$PET_NODE_RANK WORLD_SIZE=$PET_NNODES; "
    )
    return [*shell, prelude + script]


def trainer_nodes(spec: S.JobSpec) -> int:
    """A TrainJob's numNodes: the master and every worker, one node each."""
    return sum(role.replicas for role in spec.roles if role.replicas > 0)


def trainer_processes(spec: S.JobSpec) -> int:
    """numProcPerNode: a node's cards (the master's: a worker's must match), 1 without."""
    master = next(role for role in spec.roles if role.name == "master")
    return master.accelerators if master.accelerator_type and master.accelerators else 1


def trainjob_manifest(
    spec: S.JobSpec, cluster: Cluster, *, name: str, namespace: str, job_id: str
) -> dict[str, Any]:
    """A PyTorch job as a Kubeflow Trainer TrainJob (KUBERNETES_TRAINING_API=trainer) on the
    torch-distributed ClusterTrainingRuntime: the master and its workers are numNodes
    identical nodes of the runtime's "node" replicatedJob (so they must ask for the same
    resources: check_spec), torchrun's settings come from the runtime as PET_* variables.
    The image, command, env and resources are the trainer's own fields; what the trainer
    cannot say (volumes and their mounts, privileged, node selector, tolerations, pull
    secrets, the console's pod labels) is the console's runtimePatches entry for "node"
    (Trainer v2.2+). The timeout is spec.activeDeadlineSeconds (v2.2+). Not sent, as
    TrainJob has no field for them: restarts (the runtime's JobSet failurePolicy decides),
    a retention (ttlSecondsAfterFinished), a priority class and host network (check_spec
    refuses what a user asked for)."""
    master = next(role for role in spec.roles if role.name == "master")
    # Set by the command (trainer_command); user envs of these names are refused (spec).
    per_node = {"AIHC_ROLE", "AIHC_ROLE_INDEX", "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"}
    trainer: dict[str, Any] = {
        "image": spec.image,
        "command": trainer_command(spec),
        "env": [
            env
            for env in _env(spec, master, name=name, job_id=job_id)
            if env["name"] not in per_node
        ],
        "numNodes": trainer_nodes(spec),
        "numProcPerNode": trainer_processes(spec),
    }
    if resources := _resources(master, cluster):
        trainer["resourcesPerNode"] = resources
    volumes, mounts = _volumes(spec, cluster)
    container: dict[str, Any] = {"name": TRAINER_NODE, "volumeMounts": mounts}
    if spec.privileged:
        # Only reached for a namespace the operator allows (check_spec, and again at submit).
        container["securityContext"] = {"privileged": True}
    pod: dict[str, Any] = {"volumes": volumes, "containers": [container]}
    accelerator = cluster.accelerators.get(master.accelerator_type) if master.accelerators else None
    if accelerator and accelerator.node_selector:
        pod["nodeSelector"] = dict(accelerator.node_selector)
    if cluster.tolerations:
        pod["tolerations"] = [dict(t) for t in cluster.tolerations]
    if cluster.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": name} for name in cluster.image_pull_secrets]
    # The console finds the nodes' pods by this label. Trainer strategic-merges each patched
    # replicatedJob's template, its pod template's metadata included, into the runtime's
    # JobSet template (pkg/runtime/core/trainingruntime.go mergeRuntimePatches, the
    # runtimePatches source), and the JobSet plugin's Build sends that spec as it is
    # (plugins/jobset/jobset.go WithSpec), so JobSet and Job put the label on the pods.
    labels = {**dict(spec.labels), CONSOLE_JOB_LABEL: job_id}
    node_patch = {
        "name": TRAINER_NODE,
        "template": {"spec": {"template": {"metadata": {"labels": labels}, "spec": pod}}},
    }
    body: dict[str, Any] = {
        "apiVersion": TRAINJOB.api_version,
        "kind": TRAINJOB.kind,
        "metadata": _metadata(spec, cluster, name=name, namespace=namespace, job_id=job_id),
        "spec": {
            "runtimeRef": {
                "name": TRAINER_RUNTIME,
                "apiGroup": TRAINJOB.api_version.split("/")[0],
                "kind": "ClusterTrainingRuntime",
            },
            "trainer": trainer,
            "runtimePatches": [
                {
                    "manager": TRAINER_PATCH_MANAGER,
                    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [node_patch]}}},
                }
            ],
        },
    }
    if spec.timeout_minutes > 0:
        body["spec"]["activeDeadlineSeconds"] = spec.timeout_minutes * 60
    return body


def job_manifest(
    spec: S.JobSpec, cluster: Cluster, *, name: str, namespace: str, job_id: str
) -> dict[str, Any]:
    """The custom resource for the spec (a training-operator job, a PyTorch job's TrainJob
    under KUBERNETES_TRAINING_API=trainer, or a custom job's JobSet), exactly as it is sent."""
    if is_trainjob(spec.framework, cluster.training_api):
        return trainjob_manifest(spec, cluster, name=name, namespace=namespace, job_id=job_id)
    if spec.framework == S.CUSTOM:
        return jobset_manifest(spec, cluster, name=name, namespace=namespace, job_id=job_id)
    kind = KINDS[spec.framework]
    # Never restarted in place, with or without fault tolerance: the console restarts the
    # whole job (see the module's docstring).
    restart = "Never"
    replicas: dict[str, Any] = {}
    for role in spec.roles:
        if role.replicas <= 0 or role.name not in kind.roles:
            continue
        replicas[kind.roles[role.name]] = {
            "replicas": role.replicas,
            "restartPolicy": restart,
            "template": _pod_template(spec, role, cluster, name=name, job_id=job_id),
        }
    body: dict[str, Any] = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": _metadata(spec, cluster, name=name, namespace=namespace, job_id=job_id),
        "spec": {},
    }
    if spec.framework == S.MPI:
        body["spec"]["slotsPerWorker"] = mpi_slots_per_worker(spec)
        if mpi_launcher_runs_ranks(spec):
            body["spec"]["runLauncherAsWorker"] = True
    body["spec"]["runPolicy"] = run_policy(spec)
    body["spec"][kind.replica_specs] = replicas
    return body


def pod_replica(
    framework: str,
    pod: dict[str, Any],
    *,
    roles: Collection[str] | None = None,
    training_api: str = "",
) -> tuple[str, int] | None:
    """(console role, index) of a pod the operator or the JobSet made, from its labels (and
    a JobSet pod's completion-index annotation on clusters before 1.28); None when unknown.
    A JobSet pod's role is its replicatedJob's name, one of `roles` (the spec's, or the
    JobSet's own replicatedJobs when the spec no longer reads; None: any). A TrainJob's
    node i (its JobSet's "node" pod of completion index i) is the master for 0, else
    worker i-1 (a PyTorch job has exactly one master)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if is_trainjob(framework, training_api):
        index = labels.get(COMPLETION_INDEX) or (meta.get("annotations") or {}).get(
            COMPLETION_INDEX, ""
        )
        if labels.get(REPLICATED_JOB_LABEL) != TRAINER_NODE or not str(index).isdigit():
            return None
        node = int(index)
        return ("master", 0) if node == 0 else ("worker", node - 1)
    if framework == S.CUSTOM:
        role = str(labels.get(REPLICATED_JOB_LABEL) or "")
        if roles is not None and role not in roles:
            role = ""
        index = labels.get(COMPLETION_INDEX) or (meta.get("annotations") or {}).get(
            COMPLETION_INDEX, ""
        )
    else:
        role = replica_role(framework, labels)
        index = labels.get(REPLICA_INDEX_LABEL, "")
        if framework == S.MPI and role == "master":
            # mpi-operator v2 runs the launcher as the batch Job <job>-launcher, its pod named
            # <job>-launcher-<random> with no replica-index label (newLauncherPodTemplate
            # gives it defaultLabels alone): the one launcher is master 0 (qa96).
            index = "0"
    if not role or not str(index).isdigit():
        return None
    return role, int(index)


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
