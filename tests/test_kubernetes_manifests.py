"""A job spec as the Kubeflow training-operator manifests it becomes (pure functions)."""

from __future__ import annotations

from jobs import spec as S
from jobs.kubernetes import manifests as M

JOB_ID = "pytorchjob-3f2a9c1b-7d4e-4a5b-9c8d-0123456789ab"
A800 = "baidu.com/a800_80g_cgpu"
CLUSTER = M.Cluster(
    accelerators={
        A800: M.Accelerator(
            A800, "nvidia.com/gpu", (("nvidia.com/gpu.product", "NVIDIA-A800-SXM4-80GB"),)
        )
    },
    claims={"datasets": "pfs", "home": "nas"},
    host_paths={"scratch": "/data/scratch"},
    priority_classes={"high": "training-high"},
)


def pytorch_spec(**changes) -> S.JobSpec:
    spec = S.JobSpec(
        name="llm-train",
        resource_pool_id="k8s-default",
        framework=S.PYTORCH,
        image="registry.example.com/train:1.0",
        command="python train.py --epochs 3",
        roles=[
            S.Role("master", 1, A800, 8, cpu=32, memory_gb=256),
            S.Role("worker", 3, A800, 8, cpu=32, memory_gb=256),
        ],
        envs=[S.Env("LR", "0.001"), S.Env("HF_TOKEN", "hf_secret_value", secret=True)],
        datasources=[
            S.Datasource("pfs", "datasets", "/mnt/data", "/llama/train", read_only=True),
            S.Datasource("hostpath", "scratch", "/mnt/scratch", "/run1"),
        ],
        shared_memory_gi=64,
        timeout_minutes=120,
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


def manifest(spec: S.JobSpec, cluster: M.Cluster = CLUSTER) -> dict:
    return M.job_manifest(
        spec, cluster, name=M.object_name(spec, JOB_ID), namespace="team-a", job_id=JOB_ID
    )


def test_the_name_comes_from_the_job_name_and_the_console_job_id():
    spec = pytorch_spec(name="a-very-long-job-name-for-a-pytorch-run")

    assert M.object_name(pytorch_spec(), JOB_ID) == "llm-train-3f2a9c1b7d4e"
    assert M.object_name(spec, JOB_ID) == "a-very-long-job-name-3f2a9c1b7d4e"
    assert M.object_name(spec, JOB_ID) == M.object_name(spec, JOB_ID)


def test_a_pytorch_job_has_one_master_and_the_workers_with_the_operators_container_and_port():
    body = manifest(pytorch_spec())

    assert (body["apiVersion"], body["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    assert body["metadata"] == {
        "name": "llm-train-3f2a9c1b7d4e",
        "namespace": "team-a",
        "labels": {"ai-job-console/job-id": JOB_ID},
    }
    replicas = body["spec"]["pytorchReplicaSpecs"]
    assert {k: (v["replicas"], v["restartPolicy"]) for k, v in replicas.items()} == {
        "Master": (1, "Never"),
        "Worker": (3, "Never"),
    }
    [container] = replicas["Worker"]["template"]["spec"]["containers"]
    assert container["name"] == "pytorch"
    assert container["image"] == "registry.example.com/train:1.0"
    assert container["command"] == ["bash", "-c", "python train.py --epochs 3"]
    assert container["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    assert replicas["Worker"]["template"]["metadata"]["labels"] == {"ai-job-console/job-id": JOB_ID}


def test_cards_cpu_and_memory_are_equal_requests_and_limits_on_the_cards_nodes():
    pod = manifest(pytorch_spec())["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]

    amounts = {"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi"}
    assert pod["containers"][0]["resources"] == {"limits": amounts, "requests": amounts}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A800-SXM4-80GB"}


def test_secret_envs_are_references_to_the_jobs_secret_never_inline_values():
    spec = pytorch_spec()
    body = manifest(spec)
    secret = M.secret_manifest(
        spec, name=M.object_name(spec, JOB_ID), namespace="team-a", job_id=JOB_ID
    )

    env = body["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "LR", "value": "0.001"} in env
    assert {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "llm-train-3f2a9c1b7d4e-env", "key": "HF_TOKEN"}},
    } in env
    assert "hf_secret_value" not in str(body)
    assert secret == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "llm-train-3f2a9c1b7d4e-env",
            "namespace": "team-a",
            "labels": {"ai-job-console/job-id": JOB_ID},
        },
        "type": "Opaque",
        "stringData": {"HF_TOKEN": "hf_secret_value"},
    }
    assert M.secret_manifest(pytorch_spec(envs=[]), name="x", namespace="n", job_id="j") is None


def test_each_replica_knows_its_job_role_and_index_as_on_aihc():
    env = manifest(pytorch_spec())["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"][
        "containers"
    ][0]["env"]

    assert env[:4] == [
        {"name": "AIHC_JOB_NAME", "value": "llm-train"},
        {"name": "AIHC_JOB_ID", "value": JOB_ID},
        {"name": "AIHC_ROLE", "value": "worker"},
        {
            "name": "AIHC_ROLE_INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.labels['training.kubeflow.org/replica-index']"}
            },
        },
    ]
    assert {"name": "NPROC_PER_NODE", "value": "8"} in env


def test_shared_memory_and_mounts_with_sub_paths_and_read_only():
    pod = manifest(pytorch_spec())["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]

    assert pod["volumes"] == [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
        {"name": "data-0", "persistentVolumeClaim": {"claimName": "datasets", "readOnly": True}},
        {"name": "data-1", "hostPath": {"path": "/data/scratch", "type": "Directory"}},
    ]
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "data-0", "mountPath": "/mnt/data", "subPath": "llama/train", "readOnly": True},
        {"name": "data-1", "mountPath": "/mnt/scratch", "subPath": "run1"},
    ]


def test_the_run_policy_carries_retries_timeout_and_auto_delete():
    plain = manifest(pytorch_spec())
    tolerant = manifest(
        pytorch_spec(
            fault_tolerance=True,
            fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=5),
            retention_period="2d",
        )
    )

    assert plain["spec"]["runPolicy"] == {
        "cleanPodPolicy": "Running",
        "backoffLimit": 0,
        "activeDeadlineSeconds": 7200,
    }
    # Fault tolerance is the console's: it deletes the failed job and creates it again
    # (fix107), so the operator restarts nothing, in place or not.
    assert tolerant["spec"]["runPolicy"] == {
        "cleanPodPolicy": "Running",
        "backoffLimit": 0,
        "activeDeadlineSeconds": 7200,
        "ttlSecondsAfterFinished": 172800,
    }
    assert {r["restartPolicy"] for r in tolerant["spec"]["pytorchReplicaSpecs"].values()} == {
        "Never"
    }


def test_a_restarts_resource_is_labelled_with_it_and_given_the_time_the_job_has_left():
    sent = manifest(pytorch_spec(fault_tolerance=True))

    again = M.restarted(sent, restart=2, seconds_left=1800)

    assert M.restart_of(sent) == 0
    assert M.restart_of(again) == 2
    assert again["spec"]["runPolicy"]["activeDeadlineSeconds"] == 1800
    assert (
        M.restarted(sent, restart=1, seconds_left=0)["spec"]["runPolicy"]["activeDeadlineSeconds"]
        == 1
    )
    assert M.console_restarts(again)
    assert sent["spec"]["runPolicy"]["activeDeadlineSeconds"] == 7200  # not changed
    assert M.RESTART_LABEL not in sent["metadata"]["labels"]


def test_priority_queue_labels_and_host_network_are_carried():
    cluster = M.Cluster(
        accelerators=CLUSTER.accelerators, priority_classes={"high": "training-high"}, kueue=True
    )
    body = manifest(
        pytorch_spec(
            priority="high", queue="research", labels=[("team", "nlp")], host_network=True
        ),
        cluster,
    )
    low = manifest(pytorch_spec(priority="low"), cluster)

    pod = body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert body["metadata"]["labels"] == {
        "team": "nlp",
        "ai-job-console/job-id": JOB_ID,
        "kueue.x-k8s.io/queue-name": "research",
    }
    assert pod["priorityClassName"] == "training-high"
    assert (pod["hostNetwork"], pod["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    assert (
        "priorityClassName" not in low["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    )


def test_a_shell_entrypoint_runs_the_command_with_that_shell():
    sh = manifest(pytorch_spec(entrypoint="sh"))
    python = manifest(pytorch_spec(entrypoint="python", command="train.py --fast"))

    master = "Master"
    assert sh["spec"]["pytorchReplicaSpecs"][master]["template"]["spec"]["containers"][0][
        "command"
    ] == ["sh", "-c", "python train.py --epochs 3"]
    assert python["spec"]["pytorchReplicaSpecs"][master]["template"]["spec"]["containers"][0][
        "command"
    ] == ["bash", "-c", "python train.py --fast"]


def test_an_mpi_job_has_a_launcher_running_the_command_and_workers_with_slots_per_card():
    spec = pytorch_spec(
        framework=S.MPI,
        command="mpirun -np 16 python train.py",
        roles=[S.Role("master", 1, "", 0, cpu=4), S.Role("worker", 2, A800, 8)],
    )

    body = manifest(spec)

    assert (body["apiVersion"], body["kind"]) == ("kubeflow.org/v2beta1", "MPIJob")
    assert body["spec"]["slotsPerWorker"] == 8
    replicas = body["spec"]["mpiReplicaSpecs"]
    assert {k: v["replicas"] for k, v in replicas.items()} == {"Launcher": 1, "Worker": 2}
    launcher = replicas["Launcher"]["template"]["spec"]
    worker = replicas["Worker"]["template"]["spec"]
    assert launcher["containers"][0]["command"] == ["bash", "-c", "mpirun -np 16 python train.py"]
    assert launcher["containers"][0]["resources"]["limits"] == {"cpu": "4"}
    assert "nodeSelector" not in launcher
    assert "command" not in worker["containers"][0]  # the image's SSH server
    assert worker["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert "ports" not in worker["containers"][0]
    assert "runLauncherAsWorker" not in body["spec"]  # a CPU-only launcher only launches


def test_an_mpi_launcher_given_cards_runs_ranks_on_them_too():
    spec = pytorch_spec(
        framework=S.MPI, roles=[S.Role("master", 1, A800, 8), S.Role("worker", 1, A800, 8)]
    )

    body = manifest(spec)

    assert body["spec"]["runLauncherAsWorker"] is True


def test_a_tensorflow_job_maps_each_role_to_its_replica_type():
    spec = pytorch_spec(
        framework=S.TENSORFLOW,
        roles=[
            S.Role("chief", 1, A800, 1),
            S.Role("worker", 2, A800, 1),
            S.Role("ps", 2, "", 0, cpu=8),
            S.Role("evaluator", 0, "", 0),
        ],
    )

    body = manifest(spec)

    assert (body["apiVersion"], body["kind"]) == ("kubeflow.org/v1", "TFJob")
    replicas = body["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in replicas.items()} == {"Chief": 1, "Worker": 2, "PS": 2}
    container = replicas["PS"]["template"]["spec"]["containers"][0]
    assert container["name"] == "tensorflow"
    assert container["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    assert "NPROC_PER_NODE" not in str(container["env"])


def test_pods_are_read_back_to_console_roles():
    assert M.replica_role(S.PYTORCH, {"training.kubeflow.org/replica-type": "master"}) == "master"
    assert M.replica_role(S.TENSORFLOW, {"training.kubeflow.org/replica-type": "ps"}) == "ps"
    assert M.replica_role(S.MPI, {"training.kubeflow.org/job-role": "launcher"}) == "master"
    assert M.replica_role(S.MPI, {"training.kubeflow.org/job-role": "worker"}) == "worker"
    assert M.replica_role(S.PYTORCH, {}) == ""


def test_a_sub_path_leaving_its_volume_is_refused():
    assert M.sub_path("/a/b/") == "a/b"
    assert M.sub_path("") == M.sub_path("/") == ""
    assert M.sub_path("../etc") is None


def test_every_pod_tolerates_the_configured_taints_and_pulls_with_the_configured_secrets():
    cluster = M.Cluster(
        accelerators=CLUSTER.accelerators,
        tolerations=(
            {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Exists"},
        ),
        image_pull_secrets=("regcred",),
    )

    body = manifest(pytorch_spec(), cluster)

    for replica in body["spec"]["pytorchReplicaSpecs"].values():
        pod = replica["template"]["spec"]
        assert pod["tolerations"] == [
            {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Exists"},
        ]
        assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    plain = manifest(pytorch_spec())["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert "tolerations" not in plain and "imagePullSecrets" not in plain


# -- custom jobs: a JobSet ----------------------------------------------------------------

CUSTOM_ID = "customjob-3f2a9c1b-7d4e-4a5b-9c8d-0123456789ab"


def custom_spec(**changes) -> S.JobSpec:
    roles = [
        S.Role("trainer", 3, A800, 8, cpu=32, memory_gb=256),
        S.Role("param-server", 2, "", 0, cpu=8, memory_gb=64),
    ]
    return pytorch_spec(**{"framework": S.CUSTOM, "roles": roles, **changes})


def jobset(spec: S.JobSpec, cluster: M.Cluster = CLUSTER) -> dict:
    return M.job_manifest(
        spec, cluster, name=M.object_name(spec, CUSTOM_ID), namespace="team-a", job_id=CUSTOM_ID
    )


def test_a_custom_job_is_a_jobset_with_one_indexed_job_per_role_on_stable_hostnames():
    body = jobset(custom_spec())

    assert (body["apiVersion"], body["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert body["metadata"] == {
        "name": "llm-train-3f2a9c1b7d4e",
        "namespace": "team-a",
        "labels": {"ai-job-console/job-id": CUSTOM_ID},
    }
    assert body["spec"]["network"] == {
        "enableDNSHostnames": True,
        "subdomain": "llm-train-3f2a9c1b7d4e",
    }
    assert body["spec"]["successPolicy"] == {"operator": "All"}
    trainer, server = body["spec"]["replicatedJobs"]
    assert (trainer["name"], trainer["replicas"], server["name"], server["replicas"]) == (
        "trainer",
        1,
        "param-server",
        1,
    )
    job = trainer["template"]["spec"]
    assert {k: v for k, v in job.items() if k != "template"} == {
        "parallelism": 3,
        "completions": 3,
        "completionMode": "Indexed",
        "backoffLimit": 0,
        "activeDeadlineSeconds": 7200,
    }
    assert server["template"]["spec"]["completions"] == 2
    assert trainer["template"]["metadata"] == {"labels": {"ai-job-console/job-id": CUSTOM_ID}}


def test_a_custom_roles_pods_are_built_as_every_frameworks_are():
    body = jobset(custom_spec(priority="high"))
    trainer, server = body["spec"]["replicatedJobs"]

    pod = trainer["template"]["spec"]["template"]
    assert pod["metadata"] == {"labels": {"ai-job-console/job-id": CUSTOM_ID}}
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Never"
    [container] = spec["containers"]
    assert container["image"] == "registry.example.com/train:1.0"
    assert container["command"] == ["bash", "-c", "python train.py --epochs 3"]
    assert "ports" not in container
    amounts = {"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi"}
    assert container["resources"] == {"limits": amounts, "requests": amounts}
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A800-SXM4-80GB"}
    assert spec["priorityClassName"] == "training-high"
    assert spec["volumes"][0] == {
        "name": "dshm",
        "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"},
    }
    assert {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "llm-train-3f2a9c1b7d4e-env", "key": "HF_TOKEN"}},
    } in container["env"]
    assert "hf_secret_value" not in str(body)
    cpu_only = server["template"]["spec"]["template"]["spec"]
    assert cpu_only["containers"][0]["resources"]["limits"] == {"cpu": "8", "memory": "64Gi"}
    assert "nodeSelector" not in cpu_only


def test_each_custom_instance_gets_the_local_runners_variables_its_index_from_the_job():
    body = jobset(custom_spec(tensorboard=S.TensorboardConfig(enable=True, log_path="/mnt/tb")))
    trainer = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]

    env = trainer["containers"][0]["env"]
    assert [e["name"] for e in env] == [
        "AIHC_JOB_NAME",
        "AIHC_JOB_ID",
        "AIHC_ROLE",
        "AIHC_ROLE_INDEX",
        "AIHC_TRAINER_NUM",
        "AIHC_PARAM_SERVER_NUM",
        "AIHC_TENSORBOARD_LOG_PATH",
        "NCCL_DEBUG",
        "PYTHONUNBUFFERED",
        "LR",
        "HF_TOKEN",
    ]
    assert env[2] == {"name": "AIHC_ROLE", "value": "trainer"}
    assert env[3] == {
        "name": "AIHC_ROLE_INDEX",
        "valueFrom": {
            "fieldRef": {
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            }
        },
    }


def test_every_custom_instance_is_told_each_roles_count_and_a_users_env_of_the_name_wins():
    """Before left42 a custom job's roles learnt their own name and index but not how many
    instances each role has: a Ray or DeepSpeed command had to hard-code it."""
    body = jobset(custom_spec())
    own = jobset(custom_spec(envs=[S.Env("AIHC_TRAINER_NUM", "7")]))

    for replicated in body["spec"]["replicatedJobs"]:
        env = replicated["template"]["spec"]["template"]["spec"]["containers"][0]["env"]
        assert {"name": "AIHC_TRAINER_NUM", "value": "3"} in env
        assert {"name": "AIHC_PARAM_SERVER_NUM", "value": "2"} in env
    env = own["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    counts = [e for e in env["containers"][0]["env"] if e["name"].endswith("_NUM")]
    assert counts == [
        {"name": "AIHC_PARAM_SERVER_NUM", "value": "2"},
        {"name": "AIHC_TRAINER_NUM", "value": "7"},  # the job's own, once
    ]
    plain = manifest(pytorch_spec())["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    assert not [e for e in plain["spec"]["containers"][0]["env"] if e["name"].endswith("_NUM")]


def test_fault_tolerance_is_the_jobsets_restarts_and_a_timeout_fails_it_at_once():
    plain = jobset(custom_spec())
    tolerant = jobset(
        custom_spec(
            fault_tolerance=True,
            fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=5),
            retention_period="2d",
        )
    )
    deadline = {
        "name": "DeadlineExceeded",
        "action": "FailJobSet",
        "onJobFailureReasons": ["DeadlineExceeded"],
    }

    assert plain["spec"]["failurePolicy"] == {"maxRestarts": 0, "rules": [deadline]}
    assert "ttlSecondsAfterFinished" not in plain["spec"]
    assert tolerant["spec"]["failurePolicy"] == {"maxRestarts": 5, "rules": [deadline]}
    assert tolerant["spec"]["ttlSecondsAfterFinished"] == 172800
    # Pods are never restarted in place: the JobSet is recreated as a whole.
    job = tolerant["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (job["backoffLimit"], job["template"]["spec"]["restartPolicy"]) == (0, "Never")


def test_a_custom_job_in_a_kueue_queue_carries_the_queue_label():
    cluster = M.Cluster(accelerators=CLUSTER.accelerators, kueue=True)

    body = jobset(custom_spec(queue="research", labels=[("team", "nlp")]), cluster)

    assert body["metadata"]["labels"] == {
        "team": "nlp",
        "ai-job-console/job-id": CUSTOM_ID,
        "kueue.x-k8s.io/queue-name": "research",
    }


def test_a_jobset_is_named_short_enough_for_its_longest_pod_name():
    role = "a-role-name-of-thirty-two-chars0"
    spec = custom_spec(
        name="a-very-long-job-name-for-a-custom-run", roles=[S.Role(role, 1000, "", 0, cpu=1)]
    )

    name = M.object_name(spec, CUSTOM_ID)

    assert name == "a-ver-3f2a9c1b7d4e"
    assert len(f"{name}-{role}-0-999-abcde") == 63
    assert M.object_name(custom_spec(), CUSTOM_ID) == "llm-train-3f2a9c1b7d4e"


def test_jobset_pods_are_read_back_to_their_role_and_completion_index():
    spec = custom_spec()

    def pod(labels, annotations=None):
        return {"metadata": {"labels": labels, "annotations": annotations or {}}}

    role = "jobset.sigs.k8s.io/replicatedjob-name"
    index = "batch.kubernetes.io/job-completion-index"
    roles = {r.name for r in spec.roles}

    def replica(one):
        return M.pod_replica(spec.framework, one, roles=roles)

    assert replica(pod({role: "param-server", index: "1"})) == ("param-server", 1)
    # Before Kubernetes 1.28 the index is an annotation only.
    assert replica(pod({role: "trainer"}, {index: "2"})) == ("trainer", 2)
    assert replica(pod({role: "other", index: "0"})) is None
    assert replica(pod({role: "trainer"})) is None
