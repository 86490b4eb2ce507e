"""Kubeflow Trainer v2 (KUBERNETES_TRAINING_API=trainer): a PyTorch job is a TrainJob on the
torch-distributed runtime, created, followed, stopped and deleted against the strict fake API
server; what such a cluster cannot run is refused on its field."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from jobs import spec as S
from jobs.kubernetes import manifests as M
from jobs.models import JobStatus
from jobs.runtime_env import ReplicaRef
from tests import test_kubernetes_backend as backend_tests
from tests.test_kubernetes_backend import A800, reasons, spec, submitted

# The backend tests' fixtures: its fake cluster, its backend, its English messages.
fake = backend_tests.fake
k8s = backend_tests.k8s
english = backend_tests.english


@pytest.fixture
def trainer(fake, settings):
    settings.KUBERNETES_TRAINING_API = "trainer"
    return fake


def test_a_pytorch_job_on_a_trainer_cluster_is_created_as_the_trainjob_previewed(
    trainer, k8s, alice
):
    job = submitted(alice, k8s)

    [secret_call] = trainer.calls("create secrets")
    [job_call] = trainer.calls("create trainjobs")
    assert trainer.calls("create pytorchjobs") == []
    assert job_call.path == "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
    preview = k8s.request_preview(job.job_spec(), job_id=job.public_id, owner="alice")
    assert job_call.body == preview.body
    assert preview.path == f"{job_call.path}?fieldValidation=Strict"
    body = job_call.body
    assert body["kind"] == "TrainJob"
    assert body["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    trainer_spec = body["spec"]["trainer"]
    assert (trainer_spec["numNodes"], trainer_spec["numProcPerNode"]) == (2, 8)
    assert trainer_spec["image"] == "registry.example.com/train:1.0"
    assert trainer_spec["resourcesPerNode"]["limits"] == {"nvidia.com/gpu": "8"}
    assert trainer_spec["command"][:2] == ["bash", "-c"]
    assert trainer_spec["command"][2].endswith("python train.py")
    env = {e["name"]: e for e in trainer_spec["env"]}
    assert (
        env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == secret_call.body["metadata"]["name"]
    )
    assert "AIHC_ROLE" not in env and not any(name.startswith("PET_") for name in env)
    assert body["spec"]["activeDeadlineSeconds"] == job.job_spec().timeout_minutes * 60
    [patch] = body["spec"]["runtimePatches"]
    # A domain-prefixed path, as Kueue's "kueue.x-k8s.io/manager" (Trainer validated the
    # manager of v2.1's podTemplateOverrides so: jobset.go, IsDomainPrefixedPath).
    domain, _, path = patch["manager"].partition("/")
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", domain) and path
    [node] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node["template"]["spec"]["template"]
    assert pod["metadata"]["labels"][M.CONSOLE_JOB_LABEL] == job.public_id
    assert {"name": "data-0", "mountPath": "/mnt/data", "subPath": "llama"} in pod["spec"][
        "containers"
    ][0]["volumeMounts"]
    assert pod["spec"]["nodeSelector"] == {"gpu": "a800"}
    assert job.training_api == "trainer"
    [owner] = trainer.secret(f"{job.external_id}-env")["metadata"]["ownerReferences"]
    assert owner["kind"] == "TrainJob"
    assert reasons(job) == ["Created", "Submitting", "Submitted"]


def test_a_cpu_only_trainjob_with_every_cluster_setting_passes_the_fakes_strict_checks(
    trainer, k8s, alice, settings
):
    settings.KUBERNETES_TOLERATIONS = "dedicated=training:NoSchedule,nvidia.com/gpu"
    settings.KUBERNETES_IMAGE_PULL_SECRETS = "regcred"
    settings.KUBERNETES_QUEUES = "default"
    settings.KUBERNETES_PRIVILEGED_NAMESPACES = "default"
    job = submitted(
        alice,
        k8s,
        roles=[
            S.Role("master", 1, "", 0, cpu=4, memory_gb=16),
            S.Role("worker", 3, "", 0, cpu=4, memory_gb=16),
        ],
        datasources=[S.Datasource("hostpath", "scratch", "/mnt/scratch", "/run", read_only=True)],
        privileged=True,
    )

    assert job.status == JobStatus.QUEUED
    [call] = trainer.calls("create trainjobs")
    body = call.body
    assert body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert body["spec"]["trainer"]["numProcPerNode"] == 1
    assert body["spec"]["trainer"]["resourcesPerNode"]["requests"] == {"cpu": "4", "memory": "16Gi"}
    [patch] = body["spec"]["runtimePatches"]
    pod = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["containers"][0]["securityContext"] == {"privileged": True}
    assert {"name": "data-0", "hostPath": {"path": "/data/scratch", "type": "Directory"}} in pod[
        "volumes"
    ]
    assert "priorityClassName" not in pod


def test_a_trainjobs_nodes_are_its_master_and_workers_and_its_conditions_its_status(
    trainer, k8s, alice
):
    job = submitted(alice, k8s, roles=[S.Role("master", 1, A800, 8), S.Role("worker", 2, A800, 8)])
    name = job.external_id
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED  # no node has started

    pods = trainer.run_pods(name)
    trainer.add_event("TrainJob", name, "TrainJobResumed", "resumed")
    k8s.sync(job)
    job.refresh_from_db()

    assert job.status == JobStatus.RUNNING
    assert sorted(job.replicas.values_list("role", "index", "status")) == [
        ("master", 0, "running"),
        ("worker", 0, "running"),
        ("worker", 1, "running"),
    ]
    assert "K8s:TrainJobResumed" in reasons(job)
    # Each node is told its place by the torch plugin, and the console's role by the command.
    node_1 = next(p for p in pods if "-node-0-1-" in p)
    env = {
        e["name"]: e.get("value")
        for e in trainer.pods[("default", node_1)]["spec"]["containers"][0]["env"]
    }
    assert (env["PET_NNODES"], env["PET_NODE_RANK"]) == ("3", "1")

    trainer.set_conditions(name, ("Complete", "TrainJob completed.", "JobsCompleted"))
    for pod in pods:
        trainer.set_pod_phase(pod, "Succeeded")
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.events.get(reason="Succeeded").message == (
        "Kubernetes reports Complete: TrainJob completed."
    )


@pytest.mark.parametrize(
    ("condition", "reason", "status"),
    [
        ("Failed", "DeadlineExceeded", JobStatus.TIMED_OUT),
        ("Failed", "JobsFailed", JobStatus.FAILED),
        ("Suspended", "Suspended", JobStatus.QUEUED),
    ],
)
def test_a_trainjobs_failed_and_suspended_conditions_are_the_consoles_states(
    trainer, k8s, alice, condition, reason, status
):
    job = submitted(alice, k8s)
    trainer.run_pods(job.external_id)
    k8s.sync(job)

    trainer.set_conditions(job.external_id, (condition, "said so", reason))
    k8s.sync(job)
    job.refresh_from_db()

    assert job.status == status


def test_stopping_a_trainjob_deletes_it_and_it_is_stopped_once_gone(trainer, k8s, alice):
    trainer.hold_deletions = True
    job = submitted(alice, k8s)
    name = job.external_id
    trainer.run_pods(name)
    k8s.sync(job)

    trainer.set_conditions(name, ("Failed", "node-0 killed", "JobsFailed"))
    k8s.stop(job)
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    [delete] = trainer.calls("delete trainjobs")
    assert delete.param("propagationPolicy") == "Background"
    assert trainer.secret(f"{name}-env") is None

    trainer.finish_deletions()
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert [key for key in trainer.pods if key[0] == "default"] == []


def test_deleting_a_trainjob_removes_it_and_its_secret(trainer, k8s, alice):
    job = submitted(alice, k8s)

    k8s.delete(job)

    assert trainer.jobs() == []
    assert trainer.secret(f"{job.external_id}-env") is None
    assert len(trainer.calls("delete trainjobs")) == 1


def test_a_trainjob_nodes_log_is_read_from_its_node_container(trainer, k8s, alice):
    job = submitted(alice, k8s)
    [_master, worker] = trainer.run_pods(job.external_id)
    trainer.add_logs(worker, ["epoch 1 token hf_secret_value"])

    assert k8s.logs(job, "worker-0", tail=5) == ["epoch 1 token ******"]
    [call] = trainer.calls("log pods")
    assert call.path.endswith(f"/pods/{worker}/log")
    assert call.param("container") == "node"


def test_a_job_created_before_the_setting_changed_is_still_followed_as_a_pytorchjob(
    fake, k8s, alice, settings
):
    job = submitted(alice, k8s)
    settings.KUBERNETES_TRAINING_API = "trainer"
    fake.set_conditions(job.external_id, ("Running", "PyTorchJob is running."))
    fake.run_pods(job.external_id)

    k8s.sync(job)
    k8s.stop(job)
    job.refresh_from_db()

    assert job.training_api == "v1"
    assert job.status == JobStatus.STOPPING
    assert fake.calls("get pytorchjobs")
    assert len(fake.calls("delete pytorchjobs")) == 1
    assert fake.calls("get trainjobs") == []


def test_a_trainer_cluster_refuses_tensorflow_at_the_framework_field(trainer, k8s):
    tensorflow = spec(
        framework=S.TENSORFLOW, roles=[S.Role("chief", 1, A800, 8), S.Role("worker", 1, A800, 8)]
    )

    errors = k8s.check_spec(tensorflow)

    assert list(errors) == ["jobFramework"]
    assert "Kubeflow Trainer v2, which has no TensorFlow runtime" in errors["jobFramework"][0]


def test_a_pytorch_master_unlike_its_workers_and_what_a_trainjob_cannot_say_are_refused(
    trainer, k8s
):
    refused = spec(
        roles=[S.Role("master", 1, A800, 8, cpu=16), S.Role("worker", 1, A800, 8, cpu=32)],
        envs=[S.Env("PET_MASTER_PORT", "1234")],
        fault_tolerance=True,
        retention_period="7d",
        host_network=True,
    )

    errors = k8s.check_spec(refused)

    assert sorted(errors) == [
        "envs[0].name",
        "faultTolerance",
        "jobSpec.hostNetwork",
        "retentionPeriod",
        "roles[1].cpu",
    ]
    assert "give the workers the master's CPU and memory" in errors["roles[1].cpu"][0]
    assert errors["envs[0].name"] == [
        "Kubeflow Trainer sets PET_MASTER_PORT itself for torchrun; choose another name."
    ]


def test_the_same_specs_are_not_refused_on_a_training_operator_cluster(fake, k8s):
    tensorflow = spec(
        framework=S.TENSORFLOW, roles=[S.Role("chief", 1, A800, 8), S.Role("worker", 1, A800, 8)]
    )

    assert k8s.check_spec(tensorflow) == {}
    assert k8s.check_spec(spec(fault_tolerance=True, host_network=True)) == {}


def test_the_review_lists_what_the_torch_runtime_and_the_role_line_give_each_node(trainer, k8s):
    pytorch = spec(roles=[S.Role("master", 1, A800, 8), S.Role("worker", 2, A800, 8)])
    name = M.object_name(pytorch, "<job-id>")

    master = k8s.environment_preview(pytorch, ReplicaRef("master", 0, 0), job_id="<job-id>")
    worker = k8s.environment_preview(pytorch, ReplicaRef("worker", 1, 2), job_id="<job-id>")

    assert master["PET_MASTER_ADDR"] == worker["PET_MASTER_ADDR"] == f"{name}-node-0-0.{name}"
    # kubeflow/trainer pkg/constants/constants.go: ContainerTrainerPort int32 = 29500.
    assert master["PET_MASTER_PORT"] == "29500"
    assert (master["PET_NNODES"], master["PET_NPROC_PER_NODE"]) == ("3", "8")
    assert (master["PET_NODE_RANK"], worker["PET_NODE_RANK"]) == ("0", "2")
    assert (worker["AIHC_ROLE"], worker["AIHC_ROLE_INDEX"]) == ("worker", "1")
    # AIHC's names, per node, as the role line sets them from the PET_* ones (qa73).
    assert worker["MASTER_ADDR"] == f"{name}-node-0-0.{name}"
    assert (worker["MASTER_PORT"], worker["RANK"], worker["WORLD_SIZE"]) == ("29500", "2", "3")
    assert worker["JOB_COMPLETION_INDEX"] == "2"


def test_a_trainjob_nodes_command_reads_aihcs_master_and_rank_set_from_the_torch_runtimes(
    trainer, k8s
):
    """qa73: seed 001's command reads $MASTER_ADDR, $RANK, $WORLD_SIZE and $MASTER_PORT, which
    the torch plugin does not set; the TrainJob's command sets them from its PET_* ones."""
    pytorch = spec(
        roles=[S.Role("master", 1, A800, 8), S.Role("worker", 2, A800, 8)],
        command='echo "$MASTER_ADDR:$MASTER_PORT node $RANK of $WORLD_SIZE $AIHC_ROLE-$AIHC_ROLE_INDEX"',
    )
    command = k8s.request_preview(pytorch, job_id="<job-id>").body["spec"]["trainer"]["command"]
    node_env = {
        "PATH": os.environ["PATH"],
        "PET_MASTER_ADDR": "job-node-0-0.job",
        "PET_MASTER_PORT": "29500",
        "PET_NODE_RANK": "2",
        "PET_NNODES": "3",
    }

    done = subprocess.run(command, env=node_env, capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "job-node-0-0.job:29500 node 2 of 3 worker-1"


def node_pod_template(body: dict) -> dict:
    """The pod template of a TrainJob's runtime patch for the runtime's "node" replicatedJob."""
    [patch] = body["spec"]["runtimePatches"]
    [node] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    return node["template"]["spec"]["template"]


def test_a_trainjobs_node_patch_carries_the_consoles_labels_and_annotations_as_its_crd_allows(
    trainer, k8s, alice
):
    """review56 checked the TrainJob CRD: its pod template patch's metadata takes labels and
    annotations, so the strict create keeps both and Trainer merges them into the pods."""
    job = submitted(alice, k8s)

    metadata = node_pod_template(trainer.objects[("trainjobs", "default", job.external_id)])[
        "metadata"
    ]
    assert metadata["labels"]["ai-job-console/job-id"] == job.public_id
    assert metadata["annotations"]["ai-job-console/user"] == "alice"


def test_the_fake_refuses_a_trainjob_as_trainer_and_the_api_server_would(trainer, k8s):
    body = k8s.request_preview(
        spec(envs=[]), job_id="pytorchjob-" + "0" * 8 + "-0000-0000-0000-" + "0" * 12
    ).body
    client = k8s._setup()[1]
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"

    def refusal(change) -> str:
        sent = json.loads(json.dumps(body))
        change(sent)
        with pytest.raises(Exception) as refused:
            client.create(path, sent)
        return str(refused.value)

    assert "PET_NNODES" in refusal(
        lambda b: b["spec"]["trainer"]["env"].append({"name": "PET_NNODES", "value": "2"})
    )
    assert "specified clusterTrainingRuntime must be created" in refusal(
        lambda b: b["spec"]["runtimeRef"].update(name="jax-distributed")
    )
    assert "specified trainingRuntime must be created" in refusal(
        lambda b: b["spec"]["runtimeRef"].update(kind="TrainingRuntime")
    )
    assert "DNS-1035" in refusal(lambda b: b["metadata"].update(name="9-starts-with-a-digit"))
    assert "unknown field" in refusal(lambda b: b["spec"].update(podSpecOverrides=[]))
    # review56: the node patch's pod template metadata is the CRD's embedded ObjectMeta
    # (labels, annotations, finalizers, name, namespace): another key is refused under Strict.
    assert "unknown field" in refusal(lambda b: node_pod_template(b)["metadata"].update(uid="u"))
    # The CRD's limits (trainer.kubeflow.org_trainjobs.yaml): a command item of at most
    # 65536 characters, env a list keyed by name.
    assert "Too long: may not be longer than 65536" in refusal(
        lambda b: b["spec"]["trainer"]["command"].append("x" * 65_537)
    )
    assert "Too long: may not be longer than 500" in refusal(
        lambda b: b["spec"]["trainer"].update(image="registry.example.com/" + "t" * 480 + ":1.0")
    )
    assert "Duplicate value" in refusal(
        lambda b: b["spec"]["trainer"]["env"].append(dict(b["spec"]["trainer"]["env"][0]))
    )
    client.create(path, body)
    assert "AlreadyExists" in refusal(lambda b: None)


def test_a_trainjob_whose_runtime_restarted_follows_the_current_attempts_pods_only(
    trainer, k8s, alice
):
    job = submitted(alice, k8s)
    name = job.external_id
    trainer.run_pods(name, attempt=1)
    # The first attempt's pods, failed, still going away (listed after the new ones).
    trainer.run_pods(name, phase="Failed", exit_code=1)

    k8s.sync(job)
    job.refresh_from_db()

    assert job.status == JobStatus.RUNNING
    assert set(job.replicas.values_list("status", flat=True)) == {"running"}


def test_a_command_a_trainjob_cannot_carry_is_refused_at_the_command_field(trainer, k8s):
    # A TrainJob's command items are at most 65536 characters (its CRD); the console's own
    # limit, 131,071 bytes (Linux's on one argument), is every pool's.
    fits = spec(command="echo " + "x" * 65_000)
    too_long = spec(command="echo " + "x" * 65_500)

    errors = k8s.check_spec(too_long)

    assert k8s.check_spec(fits) == {}
    assert list(errors) == ["jobSpec.command"]
    assert "at most 65,536 characters" in errors["jobSpec.command"][0]


def test_a_long_command_is_not_refused_on_a_training_operator_cluster(fake, k8s):
    assert k8s.check_spec(spec(command="echo " + "x" * 65_500)) == {}


def image_of_length(length: int) -> str:
    return "registry.example.com/" + "t" * (length - len("registry.example.com/:1.0")) + ":1.0"


def test_an_image_address_a_trainjob_cannot_carry_is_refused_at_the_image_field(trainer, k8s):
    # The TrainJob CRD's trainer.image is at most 500 characters; the console's own limit is
    # 512, so 501 to 512 pass the form's rule and would fail at the API server.
    too_long = spec(image=image_of_length(501))
    assert S.validate(too_long) == {}

    errors = k8s.check_spec(too_long)

    assert k8s.check_spec(spec(image=image_of_length(500))) == {}
    assert list(errors) == ["jobSpec.image"]
    assert "at most 500 characters; this one has 501" in errors["jobSpec.image"][0]


def test_a_long_image_address_is_not_refused_on_a_training_operator_cluster(fake, k8s):
    assert k8s.check_spec(spec(image=image_of_length(512))) == {}


def test_a_trainjob_whose_node_pods_pod_security_refuses_says_why_until_they_are_made(
    trainer, k8s, alice
):
    """Trainer runs a TrainJob as a JobSet of its name, its nodes the pods of one Job,
    <name>-node-0: a node pod refused at admission is said only in that Job's FailedCreate
    event (the Job controller's, its Indexed pods' generateName). The Queued TrainJob says
    why, and says it no more once its pods are made."""
    job = backend_tests.refused_after_it_was_sent(
        trainer, k8s, alice, "baseline", datasources=[backend_tests.SCRATCH]
    )
    name = job.external_id

    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert job.status_reason == (
        f"Kubernetes cannot create the job's pods (Job {name}-node-0, FailedCreate): “Error "
        f'creating: pods "{name}-node-0-0-" is forbidden: violates PodSecurity '
        '"baseline:latest": hostPath volumes (volume "data-0")”. The job stays queued while '
        "Kubernetes tries again; stop it if the cause will not go away."
    )

    trainer.add_namespace("default", pod_security="privileged")
    assert len(trainer.run_pods(name, phase="Pending")) == 2
    k8s.sync(job)

    job.refresh_from_db()
    assert (job.status, job.status_reason) == (JobStatus.QUEUED, "")


def test_a_trainjob_whose_node_job_a_quota_refuses_says_the_jobset_controllers_words(
    trainer, k8s, alice
):
    """Trainer's JobSet (named after the TrainJob) cannot create its node Job: its
    controller's Warning JobCreationFailed on that JobSet is the Queued TrainJob's reason."""
    job = submitted(alice, k8s)
    name = job.external_id
    trainer.add_quota("default", "jobs", hard={"count/jobs.batch": "0"})

    assert trainer.run_pods(name) == []
    k8s.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert job.status_reason.startswith(
        f"Kubernetes cannot create the job's pods (JobSet {name}, JobCreationFailed): “job "
        f'"{name}-node-0" creation failed with error: jobs.batch "{name}-node-0" is '
        "forbidden: exceeded quota: jobs, requested: count/jobs.batch=1, used: "
        "count/jobs.batch=0, limited: count/jobs.batch=0”."
    )
