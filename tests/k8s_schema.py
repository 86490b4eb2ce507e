"""Strict checks of a manifest against the official schemas of what it creates.

The console's Kubernetes backend has never run against a real cluster; this is how its
manifests are held to the real APIs' field names and types. Sources, all dev dependencies
only (pyproject.toml's `dev` extra), never imported by the console:

- core/v1 and batch/v1 (pods, containers, volumes, env, Secrets, Jobs): the official
  `kubernetes` Python client's models (35.x: Kubernetes 1.35);
- PyTorchJob and TFJob (kubeflow.org/v1): the `kubeflow-training` SDK's models (1.9.x, the
  training operator v1.9 that serves kubeflow.org/v1);
- MPIJob (kubeflow.org/v2beta1, kubeflow/mpi-operator v0.6) and JobSet
  (jobset.x-k8s.io/v1alpha2, kubernetes-sigs/jobset v0.6): no Python client on PyPI carries
  them (the training SDK's MPIJob is the older kubeflow.org/v1 one), so their fields are
  written down below from the operators' Go types, in the same shape as the generated
  models (openapi_types / attribute_map / required), with the file each comes from.

A client's own `deserialize` ignores keys it does not know, so this walks the manifest
itself, against each model's `attribute_map` (JSON name -> attribute) and `openapi_types`:
a key the model does not declare is *unknown* (a real API server with fieldValidation=Strict
refuses it; without, it prunes it silently), a value of the wrong JSON type is *invalid*,
and a field the model requires (its setter refuses None) missing is *required*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kubeflow.training import models as kubeflow_models
from kubernetes.client import Configuration
from kubernetes.client import models as k8s_models

_CONFIGURATION = Configuration()


@dataclass(frozen=True)
class Problem:
    kind: str  # "unknown", "invalid", "required"
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind} {self.path}: {self.message}"


class _Model:
    """A model written down from Go types: the shape the generated clients' models have."""

    openapi_types: dict[str, str] = {}
    attribute_map: dict[str, str] = {}
    required: tuple[str, ...] = ()


def _model(name: str, fields: dict[str, tuple[str, str]], required: tuple[str, ...] = ()):
    """fields: JSON name -> (attribute, type string as the generated clients write it)."""
    return type(
        name,
        (_Model,),
        {
            "openapi_types": dict(fields.values()),
            "attribute_map": {attr: json_name for json_name, (attr, _t) in fields.items()},
            "required": required,
        },
    )


# MPIJob, kubeflow.org/v2beta1: kubeflow/mpi-operator pkg/apis/kubeflow/v2beta1/types.go
# (v0.6: runLauncherAsWorker, launcherCreationPolicy and runPolicy.managedBy are there; the
# older waitForWorkers is gone). Its ReplicaSpec and RunPolicy are its own copies of the
# training operator's common types. `required`: the json tags without omitempty, plus what
# pkg/apis/kubeflow/validation/validation.go requires after defaulting (replicas).
V2BETA1_SCHEDULING_POLICY = _model(
    "V2beta1SchedulingPolicy",
    {
        "minAvailable": ("min_available", "int"),
        "queue": ("queue", "str"),
        "minResources": ("min_resources", "dict(str, Quantity)"),
        "priorityClass": ("priority_class", "str"),
        "scheduleTimeoutSeconds": ("schedule_timeout_seconds", "int"),
    },
)
V2BETA1_RUN_POLICY = _model(
    "V2beta1RunPolicy",
    {
        "cleanPodPolicy": ("clean_pod_policy", "str"),
        "ttlSecondsAfterFinished": ("ttl_seconds_after_finished", "int"),
        "activeDeadlineSeconds": ("active_deadline_seconds", "int"),
        "backoffLimit": ("backoff_limit", "int"),
        "schedulingPolicy": ("scheduling_policy", "V2beta1SchedulingPolicy"),
        "suspend": ("suspend", "bool"),
        "managedBy": ("managed_by", "str"),
    },
)
V2BETA1_REPLICA_SPEC = _model(
    "V2beta1ReplicaSpec",
    {
        "replicas": ("replicas", "int"),
        "template": ("template", "V1PodTemplateSpec"),
        "restartPolicy": ("restart_policy", "str"),
    },
    required=("replicas",),
)
V2BETA1_MPI_JOB_SPEC = _model(
    "V2beta1MPIJobSpec",
    {
        "slotsPerWorker": ("slots_per_worker", "int"),
        "runLauncherAsWorker": ("run_launcher_as_worker", "bool"),
        "runPolicy": ("run_policy", "V2beta1RunPolicy"),
        "mpiReplicaSpecs": ("mpi_replica_specs", "dict(str, V2beta1ReplicaSpec)"),
        "sshAuthMountPath": ("ssh_auth_mount_path", "str"),
        "launcherCreationPolicy": ("launcher_creation_policy", "str"),
        "mpiImplementation": ("mpi_implementation", "str"),
    },
    required=("mpi_replica_specs",),
)
V2BETA1_MPI_JOB = _model(
    "V2beta1MPIJob",
    {
        "apiVersion": ("api_version", "str"),
        "kind": ("kind", "str"),
        "metadata": ("metadata", "V1ObjectMeta"),
        "spec": ("spec", "V2beta1MPIJobSpec"),
        "status": ("status", "object"),  # the controller's; a create's is reset
    },
)

# JobSet, jobset.x-k8s.io/v1alpha2: kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go
# of the v0.6 line, the oldest the README supports (failure-policy rules with
# onJobFailureReasons, restartStrategy, coordinator, managedBy, ttlSecondsAfterFinished).
# Later versions add fields such as replicatedJobs[].groupName/dependsOn and
# rules[].onJobFailureMessagePatterns, which a v0.6 cluster would prune or refuse, so they
# are left out here: the console must not send them.
JOBSET_NETWORK = _model(
    "JobsetV1alpha2Network",
    {
        "enableDNSHostnames": ("enable_dns_hostnames", "bool"),
        "subdomain": ("subdomain", "str"),
        "publishNotReadyAddresses": ("publish_not_ready_addresses", "bool"),
    },
)
JOBSET_SUCCESS_POLICY = _model(
    "JobsetV1alpha2SuccessPolicy",
    {
        "operator": ("operator", "str"),
        "targetReplicatedJobs": ("target_replicated_jobs", "list[str]"),
    },
    required=("operator",),
)
JOBSET_FAILURE_POLICY_RULE = _model(
    "JobsetV1alpha2FailurePolicyRule",
    {
        "name": ("name", "str"),
        "action": ("action", "str"),
        "onJobFailureReasons": ("on_job_failure_reasons", "list[str]"),
        "targetReplicatedJobs": ("target_replicated_jobs", "list[str]"),
    },
    required=("name", "action"),
)
JOBSET_FAILURE_POLICY = _model(
    "JobsetV1alpha2FailurePolicy",
    {
        "maxRestarts": ("max_restarts", "int"),
        "restartStrategy": ("restart_strategy", "str"),
        "rules": ("rules", "list[JobsetV1alpha2FailurePolicyRule]"),
    },
)
JOBSET_STARTUP_POLICY = _model(
    "JobsetV1alpha2StartupPolicy",
    {"startupPolicyOrder": ("startup_policy_order", "str")},
    required=("startup_policy_order",),
)
JOBSET_COORDINATOR = _model(
    "JobsetV1alpha2Coordinator",
    {
        "replicatedJob": ("replicated_job", "str"),
        "jobIndex": ("job_index", "int"),
        "podIndex": ("pod_index", "int"),
    },
    required=("replicated_job",),
)
JOBSET_REPLICATED_JOB = _model(
    "JobsetV1alpha2ReplicatedJob",
    {
        "name": ("name", "str"),
        "template": ("template", "V1JobTemplateSpec"),
        "replicas": ("replicas", "int"),
    },
    required=("name", "template"),
)
JOBSET_SPEC = _model(
    "JobsetV1alpha2JobSetSpec",
    {
        "replicatedJobs": ("replicated_jobs", "list[JobsetV1alpha2ReplicatedJob]"),
        "network": ("network", "JobsetV1alpha2Network"),
        "successPolicy": ("success_policy", "JobsetV1alpha2SuccessPolicy"),
        "failurePolicy": ("failure_policy", "JobsetV1alpha2FailurePolicy"),
        "startupPolicy": ("startup_policy", "JobsetV1alpha2StartupPolicy"),
        "suspend": ("suspend", "bool"),
        "coordinator": ("coordinator", "JobsetV1alpha2Coordinator"),
        "managedBy": ("managed_by", "str"),
        "ttlSecondsAfterFinished": ("ttl_seconds_after_finished", "int"),
    },
)
JOBSET = _model(
    "JobsetV1alpha2JobSet",
    {
        "apiVersion": ("api_version", "str"),
        "kind": ("kind", "str"),
        "metadata": ("metadata", "V1ObjectMeta"),
        "spec": ("spec", "JobsetV1alpha2JobSetSpec"),
        "status": ("status", "object"),  # the controller's; a create's is reset
    },
)

# TrainJob, trainer.kubeflow.org/v1alpha1: kubeflow/trainer pkg/apis/trainer/v1alpha1/
# trainjob_types.go of the v2.2 line (runtimePatches, which replaced v2.1's
# podTemplateOverrides, and activeDeadlineSeconds). `required`: the +required markers.
# initializer is written down as an object: the console sends none.
TRAINER_RUNTIME_REF = _model(
    "TrainerV1alpha1RuntimeRef",
    {
        "name": ("name", "str"),
        "apiGroup": ("api_group", "str"),
        "kind": ("kind", "str"),
    },
    required=("name",),
)
TRAINER_TRAINER = _model(
    "TrainerV1alpha1Trainer",
    {
        "image": ("image", "str"),
        "command": ("command", "list[str]"),
        "args": ("args", "list[str]"),
        "env": ("env", "list[V1EnvVar]"),
        "numNodes": ("num_nodes", "int"),
        "resourcesPerNode": ("resources_per_node", "V1ResourceRequirements"),
        "numProcPerNode": ("num_proc_per_node", "int"),
    },
)
TRAINER_CONTAINER_PATCH = _model(
    "TrainerV1alpha1ContainerPatch",
    {
        "name": ("name", "str"),
        "env": ("env", "list[V1EnvVar]"),
        "volumeMounts": ("volume_mounts", "list[V1VolumeMount]"),
        "securityContext": ("security_context", "V1SecurityContext"),
    },
    required=("name",),
)
TRAINER_POD_SPEC_PATCH = _model(
    "TrainerV1alpha1PodSpecPatch",
    {
        "serviceAccountName": ("service_account_name", "str"),
        "volumes": ("volumes", "list[V1Volume]"),
        "initContainers": ("init_containers", "list[TrainerV1alpha1ContainerPatch]"),
        "containers": ("containers", "list[TrainerV1alpha1ContainerPatch]"),
        "imagePullSecrets": ("image_pull_secrets", "list[V1LocalObjectReference]"),
        "securityContext": ("security_context", "V1PodSecurityContext"),
        "nodeSelector": ("node_selector", "dict(str, str)"),
        "affinity": ("affinity", "V1Affinity"),
        "tolerations": ("tolerations", "list[V1Toleration]"),
        "schedulingGates": ("scheduling_gates", "list[V1PodSchedulingGate]"),
    },
)
TRAINER_POD_TEMPLATE_PATCH = _model(
    "TrainerV1alpha1PodTemplatePatch",
    {
        "metadata": ("metadata", "EmbeddedObjectMeta"),
        "spec": ("spec", "TrainerV1alpha1PodSpecPatch"),
    },
)
TRAINER_JOB_SPEC_PATCH = _model(
    "TrainerV1alpha1JobSpecPatch",
    {"template": ("template", "TrainerV1alpha1PodTemplatePatch")},
)
TRAINER_JOB_TEMPLATE_PATCH = _model(
    "TrainerV1alpha1JobTemplatePatch",
    {
        "metadata": ("metadata", "EmbeddedObjectMeta"),
        "spec": ("spec", "TrainerV1alpha1JobSpecPatch"),
    },
)
TRAINER_REPLICATED_JOB_PATCH = _model(
    "TrainerV1alpha1ReplicatedJobPatch",
    {
        "name": ("name", "str"),
        "template": ("template", "TrainerV1alpha1JobTemplatePatch"),
    },
    required=("name",),
)
TRAINER_JOBSET_SPEC_PATCH = _model(
    "TrainerV1alpha1JobSetSpecPatch",
    {"replicatedJobs": ("replicated_jobs", "list[TrainerV1alpha1ReplicatedJobPatch]")},
)
TRAINER_JOBSET_TEMPLATE_PATCH = _model(
    "TrainerV1alpha1JobSetTemplatePatch",
    {
        "metadata": ("metadata", "EmbeddedObjectMeta"),
        "spec": ("spec", "TrainerV1alpha1JobSetSpecPatch"),
    },
)
TRAINER_RUNTIME_SPEC_PATCH = _model(
    "TrainerV1alpha1TrainingRuntimeSpecPatch",
    {"template": ("template", "TrainerV1alpha1JobSetTemplatePatch")},
)
TRAINER_RUNTIME_PATCH = _model(
    "TrainerV1alpha1RuntimePatch",
    {
        "manager": ("manager", "str"),
        "time": ("time", "str"),
        "trainingRuntimeSpec": ("training_runtime_spec", "TrainerV1alpha1TrainingRuntimeSpecPatch"),
    },
    required=("manager",),
)
TRAINJOB_SPEC = _model(
    "TrainerV1alpha1TrainJobSpec",
    {
        "runtimeRef": ("runtime_ref", "TrainerV1alpha1RuntimeRef"),
        "initializer": ("initializer", "object"),
        "trainer": ("trainer", "TrainerV1alpha1Trainer"),
        "runtimePatches": ("runtime_patches", "list[TrainerV1alpha1RuntimePatch]"),
        "suspend": ("suspend", "bool"),
        "activeDeadlineSeconds": ("active_deadline_seconds", "int"),
        "managedBy": ("managed_by", "str"),
    },
    required=("runtime_ref",),
)
TRAINJOB = _model(
    "TrainerV1alpha1TrainJob",
    {
        "apiVersion": ("api_version", "str"),
        "kind": ("kind", "str"),
        "metadata": ("metadata", "V1ObjectMeta"),
        "spec": ("spec", "TrainerV1alpha1TrainJobSpec"),
        "status": ("status", "object"),  # the controller's; a create's is reset
    },
)

# The object metadata of a pod or Job template inside a custom resource. The CRDs are
# generated with controller-gen's generateEmbeddedObjectMeta, which declares these five
# fields only (read in the training operator's manifests/base/crds/kubeflow.org_pytorchjobs.yaml,
# the MPI operator's manifests/base/kubeflow.org_mpijobs.yaml and JobSet's
# config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml): any other ObjectMeta field there
# is pruned, and the console finds its pods by the template's labels.
EMBEDDED_OBJECT_META = _model(
    "EmbeddedObjectMeta",
    {
        "annotations": ("annotations", "dict(str, str)"),
        "finalizers": ("finalizers", "list[str]"),
        "labels": ("labels", "dict(str, str)"),
        "name": ("name", "str"),
        "namespace": ("namespace", "str"),
    },
)

_WRITTEN_DOWN = {
    cls.__name__: cls
    for cls in (
        EMBEDDED_OBJECT_META,
        V2BETA1_SCHEDULING_POLICY,
        V2BETA1_RUN_POLICY,
        V2BETA1_REPLICA_SPEC,
        V2BETA1_MPI_JOB_SPEC,
        V2BETA1_MPI_JOB,
        JOBSET_NETWORK,
        JOBSET_SUCCESS_POLICY,
        JOBSET_FAILURE_POLICY_RULE,
        JOBSET_FAILURE_POLICY,
        JOBSET_STARTUP_POLICY,
        JOBSET_COORDINATOR,
        JOBSET_REPLICATED_JOB,
        JOBSET_SPEC,
        JOBSET,
        TRAINER_RUNTIME_REF,
        TRAINER_TRAINER,
        TRAINER_CONTAINER_PATCH,
        TRAINER_POD_SPEC_PATCH,
        TRAINER_POD_TEMPLATE_PATCH,
        TRAINER_JOB_SPEC_PATCH,
        TRAINER_JOB_TEMPLATE_PATCH,
        TRAINER_REPLICATED_JOB_PATCH,
        TRAINER_JOBSET_SPEC_PATCH,
        TRAINER_JOBSET_TEMPLATE_PATCH,
        TRAINER_RUNTIME_SPEC_PATCH,
        TRAINER_RUNTIME_PATCH,
        TRAINJOB_SPEC,
        TRAINJOB,
    )
}

# The top-level model of each (apiVersion, kind) the console creates.
ROOTS = {
    ("v1", "Secret"): "V1Secret",
    ("kubeflow.org/v1", "PyTorchJob"): "KubeflowOrgV1PyTorchJob",
    ("kubeflow.org/v1", "TFJob"): "KubeflowOrgV1TFJob",
    ("kubeflow.org/v2beta1", "MPIJob"): "V2beta1MPIJob",
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "JobsetV1alpha2JobSet",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "TrainerV1alpha1TrainJob",
}

_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$")


def _resolve(name: str) -> Any:
    for source in (_WRITTEN_DOWN, vars(kubeflow_models), vars(k8s_models)):
        found = source.get(name)
        if found is not None:
            return found
    raise LookupError(f"no model named {name}")


def _required(cls: Any) -> tuple[str, ...]:
    """The attributes a generated model's setters refuse None for (or a written-down model's
    own list)."""
    if issubclass(cls, _Model):
        return cls.required
    out = []
    for attr in cls.openapi_types:
        bare = cls.__new__(cls)
        bare.local_vars_configuration = _CONFIGURATION
        try:
            setattr(bare, attr, None)
        except ValueError:
            out.append(attr)
    return tuple(out)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def check(value: Any, type_name: str, path: str = "", *, crd: bool = False) -> list[Problem]:
    """Every problem of `value` read as `type_name` (a model name or a generated type string);
    `crd`: inside a custom resource, whose templates' metadata is EMBEDDED_OBJECT_META."""
    problems: list[Problem] = []
    _walk(value, type_name, path, problems, crd)
    return problems


def check_manifest(body: dict[str, Any]) -> list[Problem]:
    """A create's body, against the model of its apiVersion and kind."""
    root = ROOTS.get((body.get("apiVersion"), body.get("kind")))
    if root is None:
        return [
            Problem("unknown", "", f"no schema for {body.get('apiVersion')} {body.get('kind')}")
        ]
    return check(body, root, crd=body.get("apiVersion") != "v1")


def _wrong(problems: list[Problem], path: str, expected: str, value: Any) -> None:
    problems.append(
        Problem(
            "invalid",
            path,
            f'Invalid value: "{_json_type(value)}": {path or "body"} in body must be of type {expected}',
        )
    )


def _walk(value: Any, type_name: str, path: str, problems: list[Problem], crd: bool) -> None:
    if crd and type_name == "V1ObjectMeta" and path != "metadata":
        type_name = EMBEDDED_OBJECT_META.__name__
    if value is None:
        return  # a null is what omitting the field means
    if type_name == "object":
        return  # IntOrString and free-form fields
    if type_name == "str":
        if not isinstance(value, str):
            _wrong(problems, path, "string", value)
        return
    if type_name == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            _wrong(problems, path, "integer", value)
        return
    if type_name == "float":
        if not isinstance(value, int | float) or isinstance(value, bool):
            _wrong(problems, path, "number", value)
        return
    if type_name == "bool":
        if not isinstance(value, bool):
            _wrong(problems, path, "boolean", value)
        return
    if type_name in ("datetime", "date"):
        if not isinstance(value, str):
            _wrong(problems, path, "string", value)
        return
    if type_name == "Quantity":
        if isinstance(value, bool) or not isinstance(value, int | str):
            _wrong(problems, path, "string", value)
        return
    if match := _LIST.match(type_name):
        if not isinstance(value, list):
            _wrong(problems, path, "array", value)
            return
        for i, item in enumerate(value):
            _walk(item, match.group(1), f"{path}[{i}]", problems, crd)
        return
    if match := _DICT.match(type_name):
        if not isinstance(value, dict):
            _wrong(problems, path, "object", value)
            return
        for key, item in value.items():
            # A map's keys are written as fields are, as the API server's pruning writes them
            # (`spec.pytorchReplicaSpecs.Master.template`).
            _walk(item, match.group(1), f"{path}.{key}", problems, crd)
        return
    cls = _resolve(type_name)
    if not isinstance(value, dict):
        _wrong(problems, path, "object", value)
        return
    by_json = {json_name: attr for attr, json_name in cls.attribute_map.items()}
    for key, item in value.items():
        attr = by_json.get(key)
        child = f"{path}.{key}" if path else key
        if attr is None:
            problems.append(Problem("unknown", child, f'unknown field "{child}"'))
            continue
        _walk(item, cls.openapi_types[attr], child, problems, crd)
    for attr in _required(cls):
        json_name = cls.attribute_map[attr]
        if value.get(json_name) is None:
            child = f"{path}.{json_name}" if path else json_name
            problems.append(Problem("required", child, "Required value"))


def prune(value: Any, type_name: str, path: str = "", *, crd: bool = False) -> Any:
    """A copy of `value` without the fields `type_name` does not declare: what an API server
    stores of an object it was sent without fieldValidation=Strict (`crd` as for check)."""
    if crd and type_name == "V1ObjectMeta" and path != "metadata":
        type_name = EMBEDDED_OBJECT_META.__name__
    if value is None or type_name in ("object", "str", "int", "float", "bool", "Quantity"):
        return value
    if match := _LIST.match(type_name):
        if not isinstance(value, list):
            return value
        return [prune(v, match.group(1), f"{path}[{i}]", crd=crd) for i, v in enumerate(value)]
    if match := _DICT.match(type_name):
        if not isinstance(value, dict):
            return value
        return {k: prune(v, match.group(1), f"{path}.{k}", crd=crd) for k, v in value.items()}
    if type_name in ("datetime", "date") or not isinstance(value, dict):
        return value
    cls = _resolve(type_name)
    by_json = {json_name: attr for attr, json_name in cls.attribute_map.items()}
    return {
        key: prune(item, cls.openapi_types[by_json[key]], f"{path}.{key}" if path else key, crd=crd)
        for key, item in value.items()
        if key in by_json
    }
