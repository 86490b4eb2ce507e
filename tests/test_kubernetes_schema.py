"""The Kubernetes backend's manifests held to the official schemas (tests/k8s_schema.py), and
the fake API server holding every create to them, as a real API server does."""

from __future__ import annotations

import copy
import json

import httpx
import pytest

from jobs import spec as S
from jobs.kubernetes import manifests as M
from tests import k8s_schema as K
from tests.fake_kubernetes import FakeKubernetes

JOB_ID = "pytorchjob-3f2a9c1b-7d4e-4a5b-9c8d-0123456789ab"
A800 = "baidu.com/a800_80g_cgpu"
# Every cluster-side setting a manifest carries: a card type's node labels, claims, node
# folders, priority classes, Kueue queues, tolerations (with and without a value) and pull
# secrets.
CLUSTER = M.Cluster(
    accelerators={
        A800: M.Accelerator(
            A800, "nvidia.com/gpu", (("nvidia.com/gpu.product", "NVIDIA-A800-SXM4-80GB"),)
        )
    },
    claims={"datasets": "pfs", "home": "nas"},
    host_paths={"scratch": "/data/scratch"},
    priority_classes={"high": "training-high"},
    kueue=True,
    tolerations=(
        {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists"},
    ),
    image_pull_secrets=("regcred",),
)


def full_spec(**changes) -> S.JobSpec:
    """A job using every feature the Kubernetes backend maps."""
    spec = S.JobSpec(
        name="llm-train",
        resource_pool_id="k8s-default",
        queue="research",
        framework=S.PYTORCH,
        priority="high",
        image="registry.example.com/train:1.0",
        command="python train.py --epochs 3",
        roles=[
            S.Role("master", 1, A800, 8, cpu=32, memory_gb=256),
            S.Role("worker", 3, A800, 8, cpu=32, memory_gb=256),
        ],
        envs=[S.Env("LR", "0.001"), S.Env("HF_TOKEN", "hf_secret_value", secret=True)],
        labels=[("team", "nlp")],
        datasources=[
            S.Datasource("pfs", "datasets", "/mnt/data", "/llama/train", read_only=True),
            S.Datasource("nas", "home", "/mnt/home", "", read_only=False),
            S.Datasource("hostpath", "scratch", "/mnt/scratch", "/run1", read_only=True),
        ],
        host_network=True,
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=5),
        tensorboard=S.TensorboardConfig(enable=True, log_path="/mnt/home/tb"),
        retention_period="2d",
        shared_memory_gi=64,
        timeout_minutes=120,
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


VARIANTS = {
    "pytorch, every feature": full_spec(),
    "pytorch, CPU only, no limits, no fault tolerance": full_spec(
        roles=[S.Role("master", 1, "", 0), S.Role("worker", 2, "", 0, cpu=4)],
        fault_tolerance=False,
        fault_tolerance_config=None,
        envs=[],
        datasources=[],
        host_network=False,
        retention_period="",
        priority="low",
        entrypoint="sh",
    ),
    "tensorflow, every role": full_spec(
        framework=S.TENSORFLOW,
        roles=[
            S.Role("chief", 1, A800, 1),
            S.Role("worker", 2, A800, 1, memory_gb=32),
            S.Role("ps", 2, "", 0, cpu=8),
            S.Role("evaluator", 1, "", 0, cpu=2),
        ],
    ),
    "mpi, CPU-only launcher": full_spec(
        framework=S.MPI,
        command="mpirun -np 16 python train.py",
        roles=[S.Role("master", 1, "", 0, cpu=4), S.Role("worker", 2, A800, 8)],
    ),
    "mpi, launcher with cards": full_spec(
        framework=S.MPI, roles=[S.Role("master", 1, A800, 8), S.Role("worker", 2, A800, 8)]
    ),
    "custom (JobSet)": full_spec(
        framework=S.CUSTOM,
        roles=[
            S.Role("trainer", 3, A800, 8, cpu=32, memory_gb=256),
            S.Role("param-server", 2, "", 0, cpu=8, memory_gb=64),
        ],
    ),
}


def manifest(spec: S.JobSpec) -> dict:
    return M.job_manifest(
        spec, CLUSTER, name=M.object_name(spec, JOB_ID), namespace="team-a", job_id=JOB_ID
    )


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_manifest_the_backend_makes_fits_the_official_schema_of_its_kind(variant):
    body = manifest(VARIANTS[variant])

    assert [str(p) for p in K.check_manifest(body)] == []


def test_the_jobs_secret_fits_the_core_v1_schema():
    spec = full_spec()
    secret = M.secret_manifest(spec, name="llm-train-3f2a9c1b7d4e", namespace="n", job_id=JOB_ID)

    assert [str(p) for p in K.check_manifest(secret)] == []


def test_the_variants_cover_every_feature_the_manifests_carry():
    """So the schema check above sees each field the backend can write at least once."""
    seen: set[str] = set()

    def walk(value, path=""):
        if isinstance(value, dict):
            for key, item in value.items():
                seen.add(key)
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for item in value:
                walk(item, path)

    for spec in VARIANTS.values():
        walk(manifest(spec))
    assert {
        "secretKeyRef",
        "fieldRef",
        "subPath",
        "readOnly",
        "persistentVolumeClaim",
        "hostPath",
        "emptyDir",
        "sizeLimit",
        "tolerations",
        "nodeSelector",
        "imagePullSecrets",
        "priorityClassName",
        "hostNetwork",
        "dnsPolicy",
        "backoffLimit",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
        "cleanPodPolicy",
        "slotsPerWorker",
        "runLauncherAsWorker",
        "limits",
        "requests",
        "ports",
        "kueue.x-k8s.io/queue-name",
        "failurePolicy",
        "successPolicy",
        "network",
        "completionMode",
    } <= seen


def _pytorch() -> dict:
    return manifest(full_spec())


def _worker(body: dict) -> dict:
    return body["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]


@pytest.mark.parametrize(
    ("kind", "path", "change"),
    [
        # core/v1, from the Kubernetes client's models: a field no container has.
        (
            "unknown",
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].gpus",
            lambda b: _worker(b)["containers"][0].update(gpus=8),
        ),
        # a field under one the hand-written lists never looked into
        (
            "unknown",
            "spec.runPolicy.schedulingPolicy.gang",
            lambda b: b["spec"]["runPolicy"].update(schedulingPolicy={"gang": True}),
        ),
        (
            "invalid",
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].workingDir",
            lambda b: _worker(b)["containers"][0].update(workingDir=5),
        ),
        (
            "invalid",
            "spec.runPolicy.backoffLimit",
            lambda b: b["spec"]["runPolicy"].update(backoffLimit="3"),
        ),
        (
            "invalid",
            "spec.pytorchReplicaSpecs.Worker.template.spec.volumes[1].persistentVolumeClaim.readOnly",
            lambda b: _worker(b)["volumes"][1]["persistentVolumeClaim"].update(readOnly="true"),
        ),
        (
            "required",
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].volumeMounts[1].mountPath",
            lambda b: _worker(b)["containers"][0]["volumeMounts"][1].pop("mountPath"),
        ),
        (
            "required",
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env[3].valueFrom.fieldRef.fieldPath",
            lambda b: _worker(b)["containers"][0]["env"][3]["valueFrom"]["fieldRef"].clear(),
        ),
        # kubeflow.org/v1, from the training operator SDK's models
        ("required", "spec.runPolicy", lambda b: b["spec"].pop("runPolicy")),
        (
            "unknown",
            "spec.pytorchReplicaSpecs.Worker.minReplicas",
            lambda b: b["spec"]["pytorchReplicaSpecs"]["Worker"].update(minReplicas=1),
        ),
    ],
)
def test_the_schema_check_finds_unknown_fields_wrong_types_and_missing_required_ones(
    kind, path, change
):
    body = _pytorch()
    change(body)

    assert [(p.kind, p.path) for p in K.check_manifest(body)] == [(kind, path)]


def test_a_templates_metadata_in_a_custom_resource_declares_only_what_the_crds_embed():
    body = _pytorch()
    template = body["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    template["metadata"]["generateName"] = "w-"
    jobset = manifest(VARIANTS["custom (JobSet)"])
    pod_template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod_template["metadata"]["ownerReferences"] = []

    assert [(p.kind, p.path) for p in K.check_manifest(body)] == [
        ("unknown", "spec.pytorchReplicaSpecs.Worker.template.metadata.generateName")
    ]
    assert [(p.kind, p.path) for p in K.check_manifest(jobset)] == [
        ("unknown", "spec.replicatedJobs[0].template.spec.template.metadata.ownerReferences")
    ]
    # The object's own metadata is a whole ObjectMeta.
    template["metadata"].pop("generateName")
    body["metadata"]["generateName"] = "w-"
    assert K.check_manifest(body) == []


def test_the_mpijob_and_jobset_schemas_are_the_operators_versions_not_newer_or_older_ones():
    mpi = manifest(VARIANTS["mpi, CPU-only launcher"])
    mpi["spec"]["waitForWorkers"] = True  # mpi-operator before v0.5; now launcherCreationPolicy
    mpi["spec"]["mpiReplicaSpecs"]["Worker"].pop("replicas")  # required by its validation
    jobset = manifest(VARIANTS["custom (JobSet)"])
    jobset["spec"]["replicatedJobs"][0]["dependsOn"] = [{"name": "x", "status": "Ready"}]
    jobset["spec"]["failurePolicy"]["rules"][0].pop("action")

    assert sorted((p.kind, p.path) for p in K.check_manifest(mpi)) == [
        ("required", "spec.mpiReplicaSpecs.Worker.replicas"),
        ("unknown", "spec.waitForWorkers"),
    ]
    assert sorted((p.kind, p.path) for p in K.check_manifest(jobset)) == [
        ("required", "spec.failurePolicy.rules[0].action"),
        ("unknown", "spec.replicatedJobs[0].dependsOn"),  # a later JobSet's field, not v0.6's
    ]


# -- the fake API server applies the same schemas to every create ------------------------


@pytest.fixture
def api():
    fake = FakeKubernetes().start()
    fake.add_namespace("team-a")
    yield fake
    fake.stop()


def _post(fake: FakeKubernetes, body: dict, *, validation: str | None = "Strict"):
    kind = M.KINDS[S.PYTORCH]
    params = {"fieldValidation": validation} if validation else {}
    return httpx.post(
        f"{fake.url}/apis/{kind.api_version}/namespaces/team-a/{kind.plural}",
        params=params,
        content=json.dumps(body),
        headers={
            "Authorization": f"Bearer {fake.token}",
            "Content-Type": "application/json",
        },
    )


def _secretless(body: dict) -> dict:
    for replica in body["spec"]["pytorchReplicaSpecs"].values():
        for container in replica["template"]["spec"]["containers"]:
            container["env"] = [e for e in container["env"] if "secretKeyRef" not in str(e)]
    return body


def test_the_fake_refuses_a_field_the_schema_does_not_declare_when_asked_to_be_strict(api):
    body = _secretless(_pytorch())
    body["spec"]["runPolicy"]["schedulingPolicy"] = {"gang": True}

    answer = _post(api, body)

    assert answer.status_code == 400
    assert answer.json()["message"].endswith(
        'strict decoding error: unknown field "spec.runPolicy.schedulingPolicy.gang"'
    )
    assert api.jobs() == []


def test_without_strict_validation_the_fake_prunes_unknown_fields_and_warns_as_a_real_server(
    api,
):
    body = _secretless(_pytorch())
    body["spec"]["runPolicy"]["schedulingPolicy"] = {"queue": "q", "gang": True}
    sent = copy.deepcopy(body)

    warned = _post(api, body, validation=None)
    body["metadata"]["name"] = "ignored-3f2a9c1b7d4e"
    ignored = _post(api, body, validation="Ignore")

    assert (warned.status_code, ignored.status_code) == (201, 201)
    assert warned.headers["warning"] == (
        '299 - "unknown field \\"spec.runPolicy.schedulingPolicy.gang\\""'
    )
    assert "warning" not in ignored.headers
    stored = api.job(sent["metadata"]["name"], "team-a")
    assert stored["spec"]["runPolicy"]["schedulingPolicy"] == {"queue": "q"}


def test_the_fake_takes_real_fields_it_has_no_rules_of_its_own_for(api):
    body = _secretless(_pytorch())
    _worker(body)["containers"][0]["stdin"] = False
    _worker(body)["terminationGracePeriodSeconds"] = 30
    _worker(body)["enableServiceLinks"] = False

    answer = _post(api, body)

    assert answer.status_code == 201, answer.text


def test_the_fake_refuses_a_wrong_type_as_the_crds_structural_schema_does(api):
    body = _secretless(_pytorch())
    _worker(body)["containers"][0]["workingDir"] = 5

    answer = _post(api, body)

    assert answer.status_code == 422
    [cause] = answer.json()["details"]["causes"]
    assert (
        cause["field"] == "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].workingDir"
    )
    assert "must be of type string" in cause["message"]


def test_the_fake_refuses_a_secret_it_cannot_decode(api):
    secret = M.secret_manifest(full_spec(), name="llm-train", namespace="team-a", job_id="j")
    secret["stringData"]["HF_TOKEN"] = 12345

    answer = httpx.post(
        f"{api.url}/api/v1/namespaces/team-a/secrets",
        params={"fieldValidation": "Strict"},
        content=json.dumps(secret),
        headers={"Authorization": f"Bearer {api.token}", "Content-Type": "application/json"},
    )

    assert answer.status_code == 400
    assert "cannot be handled as a Secret" in answer.json()["message"]
    assert api.secret("llm-train-env", "team-a") is None


def test_the_fake_applies_the_mpi_operators_own_validation(api):
    body = manifest(VARIANTS["mpi, CPU-only launcher"])
    body["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "Always"
    body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = []
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["env"] = []
    kind = M.KINDS[S.MPI]

    answer = httpx.post(
        f"{api.url}/apis/{kind.api_version}/namespaces/team-a/{kind.plural}",
        params={"fieldValidation": "Strict"},
        content=json.dumps(body),
        headers={"Authorization": f"Bearer {api.token}", "Content-Type": "application/json"},
    )

    assert answer.status_code == 422
    assert [c["field"] for c in answer.json()["details"]["causes"]] == [
        "spec.mpiReplicaSpecs.Worker.restartPolicy"
    ]


def test_the_fake_lets_a_tensorflow_job_have_several_evaluators_as_the_operators_webhook_does(
    api,
):
    body = manifest(VARIANTS["tensorflow, every role"])
    body["spec"]["tfReplicaSpecs"]["Evaluator"]["replicas"] = 2
    for replica in body["spec"]["tfReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["env"] = []
    two_chiefs = copy.deepcopy(body)
    two_chiefs["metadata"]["name"] = "two-chiefs-3f2a9c1b7d4e"
    two_chiefs["spec"]["tfReplicaSpecs"]["Master"] = two_chiefs["spec"]["tfReplicaSpecs"]["Chief"]
    kind = M.KINDS[S.TENSORFLOW]

    def post(b):
        return httpx.post(
            f"{api.url}/apis/{kind.api_version}/namespaces/team-a/{kind.plural}",
            params={"fieldValidation": "Strict"},
            content=json.dumps(b),
            headers={"Authorization": f"Bearer {api.token}", "Content-Type": "application/json"},
        )

    assert post(body).status_code == 201
    refused = post(two_chiefs)
    assert refused.status_code == 422
    assert "must not have more than 1 Chief or Master role" in refused.json()["message"]


def test_the_fake_holds_a_merge_patch_to_the_schema_too(api):
    secret = M.secret_manifest(full_spec(), name="llm-train", namespace="team-a", job_id="j")
    url = f"{api.url}/api/v1/namespaces/team-a/secrets"
    headers = {"Authorization": f"Bearer {api.token}", "Content-Type": "application/json"}
    httpx.post(
        url, params={"fieldValidation": "Strict"}, content=json.dumps(secret), headers=headers
    )
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "x", "uid": "u-1"}

    def patch(body):
        return httpx.patch(
            f"{url}/llm-train-env",
            params={"fieldValidation": "Strict"},
            content=json.dumps(body),
            headers={**headers, "Content-Type": "application/merge-patch+json"},
        )

    unknown = patch({"metadata": {"ownerReferences": [{**owner, "owner": True}]}})
    wrong = patch({"metadata": {"ownerReferences": [{**owner, "controller": "yes"}]}})
    fine = patch({"metadata": {"ownerReferences": [owner]}})

    assert unknown.status_code == 400
    assert 'unknown field "metadata.ownerReferences[0].owner"' in unknown.json()["message"]
    assert wrong.status_code == 422
    assert fine.status_code == 200
    assert api.secret("llm-train-env", "team-a")["metadata"]["ownerReferences"] == [owner]
