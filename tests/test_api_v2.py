"""AIHC's v2 action API (`/?action=…`) at the console's root, driven by the console's own AIHC
client in its v2 mode (jobs.aihc.client), the code that talks to real AIHC v2: the same jobs,
owner rule, idempotency and pools as the v1 paths (tests/test_api.py)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import httpx
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from jobs import spec as spec_module
from jobs.aihc.client import AihcClient
from jobs.aihc.endpoints import V2
from jobs.aihc.mapping import v2_from_v1
from jobs.api_keys import api_key_create
from jobs.models import ApiKey, Job, JobStatus, LoginFailure
from jobs.services import jobs_submit
from jobs.wizard import available_pools
from jobs.worker import Worker

from . import test_api as v1
from .runner_helpers import (
    CARD,
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
)
from .signed_requests import signed_headers
from .test_api import A800, CONSOLE, body, card_body, client_for, refused

# The v1 tests' fixtures: the console as a WSGI transport, Alice's key and AIHC client, and a
# fake AIHC with one pool.
wsgi, alice_key, api, fake = v1.wsgi, v1.alice_key, v1.api, v1.fake

pytestmark = pytest.mark.usefixtures("runner_settings")


def v2_body(name: str = "from-v2", command: str = "echo hello from v2", **extra) -> dict:
    """A v2 CreateJob body, as Baidu's v2 SDKs send it."""
    return {
        "name": name,
        "queue": "default",
        "jobType": "PyTorchJob",
        "command": command,
        "jobSpec": {
            "image": "python:3.12",
            "replicas": 1,
            "resources": [{"name": "cpu", "quantity": 1}],
        },
        "datasources": [{"type": "hostpath", "name": "work", "mountPath": "/workspace"}],
        **extra,
    }


def action(api: AihcClient, name: str, *, method: str = "POST", body=None, **query) -> dict:
    """One signed v2 action, as the SDKs send it (X-API-Version: v2)."""
    params = [("action", name), *((k, str(v)) for k, v in query.items())]
    return api.request(method, "/", params=params, body=body, version=V2, idempotent=False)


# -- jobs ---------------------------------------------------------------------------------


def test_a_v2_script_creates_describes_stops_and_deletes_a_job_on_the_local_runner(
    api, alice, settings
):
    command = f"echo started; {UNTIL_THE_GATE_OPENS}"
    created = api.create_job(pool="local", body=v2_body(command=command), version=V2)

    job = Job.objects.get(public_id=created["jobId"])
    assert created == {"jobId": job.public_id, "jobName": "from-v2"}
    assert (job.owner, job.backend, job.resource_pool) == (alice, "local", "local")
    assert job.job_spec().command == command
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="the job to run")

    described = api.get_job(pool="local", job_id=job.public_id, version=V2)
    assert described["status"] == "Running"
    assert [p["name"] for p in described["pods"]] == ["from-v2-master-0"]
    listed = api.list_jobs(pool="local", version=V2)
    assert [j["jobId"] for j in listed] == [job.public_id]
    run_until(
        worker,
        lambda: any(
            "started" in line
            for line in api.pod_logs(
                pool="local", job_id=job.public_id, pod="from-v2-master-0", version=V2
            )
        ),
        what="the log line",
    )

    api.stop_job(pool="local", job_id=job.public_id, version=V2)

    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, what="the job to stop")
    assert api.get_job(pool="local", job_id=job.public_id, version=V2)["status"] == (
        "ManualTermination"
    )
    assert job.events.get(reason="StopRequested").actor == alice
    reasons = [
        e["reason"]
        for e in api.job_events(pool="local", job_id=job.public_id, framework="", version=V2)
    ]
    assert reasons[:2] == ["Created", "Started"] and "StopRequested" in reasons
    open_gate(settings)
    api.delete_job(pool="local", job_id=job.public_id, version=V2)
    assert not Job.objects.filter(pk=job.pk).exists()


def test_describe_job_answers_bccl_labels_and_mounts_of_a_job_that_set_none_as_off_and_empty(api):
    bare = body(name="bare-job")
    del bare["datasources"]
    created = api.create_job(pool="local", body=bare)

    described = action(api, "DescribeJob", resourcePoolId="local", body={"jobId": created["jobId"]})

    job = described["job"]
    assert (job["enableBccl"], job["enableFaultTolerance"]) == (False, False)
    assert (job["labels"], job["datasources"]) == ([], [])
    # JobItem's BCCL result and flag string, answered as AIHC's (qa105).
    assert (job["enableBcclStatus"], job["enableBcclErrorReason"]) == ("", "")
    assert job["faultToleranceArgs"] == ""


def test_an_aihc_jobs_get_job_answers_aihcs_own_k8s_uid_and_bccl_check_v1_and_v2(api, fake):
    # fix128: they were the console's placeholders ("" and "unknown") for a job run on AIHC.
    created = api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "cce-pool1")],
        body=v1.SEED_001,
        idempotent=False,
    )["result"]
    job = Job.objects.get(public_id=created["jobId"])
    worker = Worker()
    worker.dispatch_remote()
    job.refresh_from_db()
    reason = "BCCL 注入失败：节点 node-10-0-0-1 没有 RDMA 网卡"
    fake.set_job_status(job.external_id, "Running")
    fake.set_bccl_status(job.external_id, "failed", reason)
    worker.sync_remote()

    described = v1.get(api, f"/api/v1/aijobs/{job.public_id}", resourcePoolId="cce-pool1")
    item = action(api, "DescribeJob", resourcePoolId="cce-pool1", body={"jobId": job.public_id})

    assert described["k8sUID"] == fake.jobs[job.external_id].k8s_uid != ""
    assert (described["enableBcclStatus"], described["enableBcclErrorReason"]) == ("failed", reason)
    assert (item["job"]["enableBcclStatus"], item["job"]["enableBcclErrorReason"]) == (
        "failed",
        reason,
    )
    job.refresh_from_db()
    assert (job.k8s_uid, job.bccl_status, job.bccl_error_reason) == (
        fake.jobs[job.external_id].k8s_uid,
        "failed",
        reason,
    )


def test_an_aihc_jobs_get_job_and_page_give_the_namespace_aihc_answered(api, fake, alice):
    # fix141: the console's GetJob answered "" for an AIHC job's k8sNamespace, which AIHC's
    # own GetJob answers, and the console did not keep it.
    created = api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "cce-pool1")],
        body=v1.SEED_001,
        idempotent=False,
    )["result"]
    job = Job.objects.get(public_id=created["jobId"])
    worker = Worker()
    worker.dispatch_remote()
    job.refresh_from_db()
    fake.jobs[job.external_id].k8s_namespace = "aihc-team-a"
    fake.set_job_status(job.external_id, "Running")
    worker.sync_remote()

    described = v1.get(api, f"/api/v1/aijobs/{job.public_id}", resourcePoolId="cce-pool1")
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(alice)
    page = client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert (described["k8sNamespace"], described["k8sUID"]) == (
        "aihc-team-a",
        fake.jobs[job.external_id].k8s_uid,
    )
    assert '<span id="job-k8s-namespace">aihc-team-a</span>' in page
    job.refresh_from_db()
    assert job.k8s_namespace == "aihc-team-a"


def test_a_describe_job_answers_empty_fault_tolerance_args_sent_back_make_the_same_job(api):
    first = api.create_job(pool="local", body=v2_body(), version=V2)["jobId"]
    answered = action(api, "DescribeJob", resourcePoolId="local", body={"jobId": first})["job"]

    again = api.create_job(
        pool="local",
        body=v2_body(faultToleranceArgs=answered["faultToleranceArgs"]),
        version=V2,
    )["jobId"]

    specs = [Job.objects.get(public_id=job_id).spec for job_id in (first, again)]
    assert specs[0] == specs[1]


def test_a_v2_body_is_stored_as_the_same_spec_as_its_v1_form(api):
    v1 = body(
        name="same-job",
        priority="high",
        labels=[{"key": "team", "value": "nlp"}],
        faultTolerance=True,
        faultToleranceConfig={
            "enabledHangDetection": True,
            "hangDetectionTimeoutMinutes": 7,
            "hangDetectionStartupTolerationMinutes": 20,
            "faultToleranceLimit": 2,
        },
    )
    from_v1 = api.create_job(pool="local", body=v1)
    from_v2 = api.create_job(pool="local", body=v2_from_v1(v1), version=V2)

    first, second = (Job.objects.get(public_id=c["jobId"]) for c in (from_v1, from_v2))
    assert second.spec == first.spec
    assert second.priority == "high"
    item = action(api, "DescribeJob", resourcePoolId="local", body={"jobId": second.public_id})
    assert item["job"]["faultToleranceArgs"] == (
        "--enable-hang-detection=true --hang-detection-log-timeout-minutes=7 "
        "--hang-detection-startup-toleration-minutes=20 --max-num-of-unconditional-retry=2"
    )
    assert first.job_spec().fault_tolerance_config.hang_detection_startup_toleration_minutes == 20
    assert (
        item["job"]["jobType"] == "PyTorchJob"
        and item["job"]["command"] == v1["jobSpec"]["command"]
    )


@pytest.mark.parametrize("launcher", ["Launcher", "Master"])
def test_an_mpijob_role_map_keyed_as_kubeflow_keys_it_makes_a_cpu_launcher_and_gpu_workers(
    api, settings, launcher
):
    # qa68: Kubeflow's MPIJob keys its roles Launcher and Worker (the console's own Kubernetes
    # manifest writes its master as the Launcher), and such a body was refused: "MPI has no
    # role named “launcher”", and "MPI needs exactly 1 master" of the one launcher it gave.
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    mpi = v2_body(name="mpi-job", jobType="MPIJob", command="mpirun python3 train.py")
    shared = mpi.pop("jobSpec")
    mpi["jobSpec"] = {
        launcher: {**shared, "replicas": 1, "resources": [{"name": "cpu", "quantity": 1}]},
        "Worker": {**shared, "replicas": 2, "resources": [{"name": A800, "quantity": 2}]},
    }

    created = api.create_job(pool="local", body=mpi, version=V2)

    spec = Job.objects.get(public_id=created["jobId"]).job_spec()
    assert spec.framework == "MPIJob"
    assert [(r.name, r.replicas, r.accelerator_type, r.accelerators) for r in spec.roles] == [
        ("master", 1, "", 0),
        ("worker", 2, A800, 2),
    ]


def test_a_role_map_whose_roles_differ_in_more_than_instances_and_cards_is_refused(api):
    # Found in QA: the Worker's own envs (and image) were dropped without a word, as the
    # console keeps one image and one set of variables per job, the first role's.
    tf = v2_body(name="tf-job", jobType="TFJob")
    tf["jobSpec"] = {
        "Chief": {"image": "python:3.12", "replicas": 1, "resources": []},
        "Worker": {
            "image": "python:3.13",
            "replicas": 2,
            "resources": [],
            "envs": [{"name": "ROLE_ONLY", "value": "1"}],
        },
    }

    error = refused(lambda: api.create_job(pool="local", body=tf, version=V2))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert "jobSpec.Worker.image: Every role of a job runs with the image of its first" in (
        error.message
    )
    assert "jobSpec.Worker.envs: Every role of a job runs with the envs of its first" in (
        error.message
    )
    assert Job.objects.count() == 0


def test_a_role_maps_refusal_names_the_field_in_the_role_the_console_reads_it_from(api):
    # Found in QA: a bad env name in the Chief of a TFJob role map was answered as
    # "envs[0].name", a path the v2 body has nowhere.
    tf = v2_body(name="tf-job", jobType="TFJob")
    tf["jobSpec"] = {
        "Chief": {
            "image": "python:3.12",
            "replicas": 1,
            "resources": [],
            "envs": [{"name": "BAD NAME", "value": "1"}],
        },
        "Worker": {"image": "python:3.12", "replicas": 2, "resources": []},
    }
    plain = v2_body(name="pt-job")
    plain["jobSpec"]["envs"] = [{"name": "BAD NAME", "value": "1"}]

    in_role_map = refused(lambda: api.create_job(pool="local", body=tf, version=V2))
    in_plain_body = refused(lambda: api.create_job(pool="local", body=plain, version=V2))

    assert in_role_map.message.startswith("jobSpec.Chief.envs[0].name: Variable names use")
    assert in_plain_body.message.startswith("jobSpec.envs[0].name: Variable names use")
    assert Job.objects.count() == 0


def test_a_tensorflow_role_map_keeps_each_roles_instances_and_cards(api):
    tf = v2_body(name="tf-job", jobType="TFJob")
    tf["jobSpec"] = {
        "Chief": {
            "image": "python:3.12",
            "replicas": 1,
            "resources": [{"name": CARD, "quantity": 1}],
        },
        "Worker": {
            "image": "python:3.12",
            "replicas": 2,
            "resources": [{"name": "cpu", "quantity": 1}],
        },
    }
    tf["console"] = {"submission": {"mode": "queue", "total": 1, "concurrency": 1}}

    created = api.create_job(pool="local", body=tf, version=V2)

    spec = Job.objects.get(public_id=created["jobId"]).job_spec()
    assert [(r.name, r.replicas, r.accelerator_type, r.accelerators) for r in spec.roles] == [
        ("chief", 1, CARD, 1),
        ("worker", 2, "", 0),
    ]
    item = action(api, "DescribeJob", resourcePoolId="local", body={"jobId": created["jobId"]})
    assert set(item["job"]["jobSpec"]) == {"Chief", "Worker"}
    assert item["job"]["jobSpec"]["Worker"]["replicas"] == 2


def test_a_retried_v2_create_with_the_same_client_token_makes_one_job(api):
    def create(token: str, job_body: dict) -> str:
        return action(
            api,
            "CreateJob",
            resourcePoolId="local",
            queueID="default",
            clientToken=token,
            body=job_body,
        )["jobId"]

    first = create("retry-1", v2_body())
    again = create("retry-1", v2_body())
    # qa105: the token with another body (another queue too) is refused, not a second job.
    other = refused(lambda: create("retry-1", v2_body(name="another-job")))
    after = create("retry-1", v2_body())

    assert again == first and after == first
    assert (other.status, other.code) == (409, "IdempotentParameterMismatch")
    assert f"clientToken retry-1 already made job {first} " in other.message
    assert Job.objects.count() == 1


def test_a_v2_create_with_its_client_token_in_the_body_finds_the_job_its_query_token_made(api):
    query = {"resourcePoolId": "local", "queueID": "default"}
    first = action(api, "CreateJob", clientToken="v2-b", body=v2_body(), **query)["jobId"]
    again = action(api, "CreateJob", body={**v2_body(), "clientToken": "v2-b"}, **query)["jobId"]

    assert again == first
    assert Job.objects.count() == 1


def test_queue_id_names_the_queue_when_the_body_has_none_and_must_agree_when_it_has(api, settings):
    settings.LOCAL_QUEUES = ["default", "research"]
    no_queue = v2_body(name="by-queue-id")
    del no_queue["queue"]

    created = action(api, "CreateJob", resourcePoolId="local", queueID="research", body=no_queue)
    composite = action(
        api, "CreateJob", resourcePoolId="local", queueID="local:research", body=no_queue
    )
    clash = refused(
        lambda: action(api, "CreateJob", resourcePoolId="local", queueID="research", body=v2_body())
    )

    assert Job.objects.get(public_id=created["jobId"]).queue == "research"
    assert Job.objects.get(public_id=composite["jobId"]).queue == "research"
    assert (clash.status, clash.code) == (400, "InvalidParameter")
    assert Job.objects.count() == 2


def test_modify_job_raises_a_waiting_jobs_priority_and_refuses_a_started_ones(api, settings):
    settings.REVIEW_POLICY = "all"
    waiting = api.create_job(pool="local", body=v2_body(name="waiting"), version=V2)["jobId"]
    settings.REVIEW_POLICY = "none"
    running = api.create_job(
        pool="local", body=v2_body(name="running", command=UNTIL_THE_GATE_OPENS), version=V2
    )["jobId"]
    run_until(Worker(), lambda: Job.objects.get(public_id=running).status == JobStatus.RUNNING)

    answer = action(
        api, "ModifyJob", resourcePoolId="local", body={"jobId": waiting, "priority": "high"}
    )
    error = refused(
        lambda: action(
            api, "ModifyJob", resourcePoolId="local", body={"jobId": running, "priority": "high"}
        )
    )

    assert answer["jobId"] == waiting
    assert Job.objects.get(public_id=waiting).priority == "high"
    assert (error.status, error.code) == (409, "Conflict")
    assert Job.objects.get(public_id=running).priority == "normal"


def test_batch_stop_jobs_stops_each_listed_job_and_lists_the_ones_not_found_as_failed(
    api, wsgi, bob
):
    first, second, ended = (
        api.create_job(pool="local", body=v2_body(name=name), version=V2)["jobId"]
        for name in ("first", "second", "ended")
    )
    action(api, "StopJob", resourcePoolId="local", body={"jobId": ended})
    key, secret = api_key_create(owner=bob)
    bobs = client_for(wsgi, key.access_key_id, secret)
    theirs = bobs.create_job(pool="local", body=v2_body(name="bobs"), version=V2)["jobId"]
    listed = [first, theirs, second, ended, "pytorchjob-unknown", first]

    answer = action(
        api,
        "BatchStopJobs",
        resourcePoolId="local",
        queueID="default",
        body={"jobList": [{"jobId": job_id} for job_id in listed]},
    )
    again = action(
        api, "BatchStopJobs", resourcePoolId="local", body={"jobList": [{"jobId": first}]}
    )

    # The answer Baidu's v2 SDK reads (StopBatchResult of JobResult items).
    assert set(answer) == {"requestId", "result"}
    assert answer["result"] == {
        "successNum": 3,
        "failedNum": 2,
        "success": False,
        "successList": [
            {"jobId": job_id, "success": True, "errorMsg": ""} for job_id in (first, second, ended)
        ],
        "failedList": [
            {"jobId": theirs, "success": False, "errorMsg": f"Job {theirs} not found."},
            {
                "jobId": "pytorchjob-unknown",
                "success": False,
                "errorMsg": "Job pytorchjob-unknown not found.",
            },
        ],
    }
    assert again["result"]["success"] is True and again["result"]["successNum"] == 1
    assert [status_of(Job.objects.get(public_id=i)) for i in (first, second, theirs)] == [
        JobStatus.STOPPED,
        JobStatus.STOPPED,
        JobStatus.QUEUED,
    ]
    assert Job.objects.get(public_id=first).events.get(reason="Stopped").actor.username == "alice"


def test_batch_stop_jobs_refuses_a_malformed_or_too_long_job_list_and_stops_nothing(api):
    job_id = api.create_job(pool="local", body=v2_body(), version=V2)["jobId"]

    for job_list, message in (
        (None, "jobList is required"),
        ([], "jobList is required"),
        ({"jobId": job_id}, "jobList is required"),
        ([job_id], "Each item of jobList"),
        ([{"jobId": job_id}, {"id": job_id}], "Each item of jobList"),
        ([{"jobId": job_id}] + [{"jobId": f"j-{i}"} for i in range(100)], "at most 100 jobs"),
    ):
        error = refused(
            lambda j=job_list: action(
                api, "BatchStopJobs", resourcePoolId="local", body={"jobList": j}
            )
        )
        assert (error.status, error.code) == (400, "InvalidParameter"), job_list
        assert message in str(error), job_list
    error = refused(lambda: action(api, "BatchStopJobs", method="GET", resourcePoolId="local"))
    assert (error.status, error.code) == (405, "MethodNotAllowed")
    assert status_of(Job.objects.get(public_id=job_id)) == JobStatus.QUEUED


def test_describe_job_events_answers_the_newest_events_and_counts_them_all(api, alice):
    from jobs.api_views import EVENTS_ANSWERED

    from .test_scale import with_many_events

    [job] = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key=str(uuid.uuid4()))
    with_many_events(job, EVENTS_ANSWERED + 1)
    last = job.events.get(message=f"step-{EVENTS_ANSWERED:04d}")

    answer = action(api, "DescribeJobEvents", resourcePoolId="local", jobId=job.public_id)
    newest = action(
        api,
        "DescribeJobEvents",
        resourcePoolId="local",
        jobId=job.public_id,
        startTime=int(last.created_at.timestamp()),
    )

    assert answer["total"] == job.events.count() > EVENTS_ANSWERED == len(answer["events"])
    assert answer["events"][0]["message"] == "step-0001"
    assert answer["events"][-1]["message"] == f"step-{EVENTS_ANSWERED:04d}"
    assert [e["message"] for e in newest["events"]] == [last.message] and newest["total"] == 1


def test_pod_events_in_v2_are_the_pods_start_and_end(api):
    created = api.create_job(pool="local", body=v2_body(command="exit 4"), version=V2)
    job = Job.objects.get(public_id=created["jobId"])
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job to fail")

    answer = action(
        api,
        "DescribePodEvents",
        resourcePoolId="local",
        body={"jobId": job.public_id, "podName": "from-v2-master-0"},
    )

    assert [e["reason"] for e in answer["events"]] == ["Started", "Failed"]
    assert answer["events"][1]["message"] == "Exited with code 4."
    assert answer["total"] == 2


def test_v2_job_metrics_are_v1s_pod_metrics_with_parameters_from_the_query_or_the_body(api, alice):
    job = v1.job_with_usage(alice, v1.every_15_seconds(2))
    asked = {"jobId": job.public_id, "metricType": "MemoryUsage", "timeStep": "1m"}

    in_body = action(api, "DescribeJobMetrics", resourcePoolId="local", body=asked)
    in_query = action(api, "DescribeJobMetrics", method="GET", resourcePoolId="local", **asked)
    bad = refused(
        lambda: action(
            api,
            "DescribeJobMetrics",
            resourcePoolId="local",
            body={**asked, "metricType": "GpuUsage"},
        )
    )
    missing = refused(
        lambda: action(
            api, "DescribeJobMetrics", resourcePoolId="local", body={"jobId": job.public_id}
        )
    )

    v1_metrics = v1.metrics(api, job.public_id, metricType="MemoryUsage", timeStep=60)
    assert in_body["jobId"] == job.public_id
    assert in_body["metrics"] == in_query["metrics"] == v1_metrics
    assert in_body["metrics"][0]["metrics"] == [
        {"time": v1.START, "value": 1024**3},
        {"time": v1.START + 60, "value": 3 * 1024**3},
    ]
    assert (bad.status, bad.code) == (400, "InvalidParameter")
    assert "metricType is one of" in bad.message
    assert (missing.status, missing.code, missing.message) == (
        400,
        "InvalidParameter",
        "metricType is required.",
    )


def test_another_users_job_is_not_found_in_v2_either(api, wsgi, bob):
    job_id = api.create_job(pool="local", body=v2_body(), version=V2)["jobId"]
    key, secret = api_key_create(owner=bob)
    other = client_for(wsgi, key.access_key_id, secret)

    for name, extra in (
        ("DescribeJob", {}),
        ("StopJob", {}),
        ("DeleteJob", {}),
        ("ModifyJob", {"priority": "high"}),
        ("DescribeJobEvents", {}),
        ("DescribePodEvents", {"podName": "master-0"}),
        ("DescribeJobLogs", {"podName": "master-0"}),
        ("DescribeJobMetrics", {"metricType": "CpuUsage"}),
    ):
        error = refused(
            lambda n=name, e=extra: action(
                other, n, resourcePoolId="local", body={"jobId": job_id, **e}
            )
        )
        assert (error.status, error.code) == (404, "JobNotFound"), name
    assert other.list_jobs(pool="local", version=V2) == []
    job = Job.objects.get(public_id=job_id)
    assert (job.status, job.priority) == (JobStatus.QUEUED, "normal")
    assert list(job.events.values_list("reason", flat=True)) == ["Created"]


def test_describe_jobs_filters_by_an_aihc_status_and_refuses_one_it_does_not_know(api):
    queued = api.create_job(pool="local", body=v2_body(), version=V2)["jobId"]

    def found(status) -> list[str]:
        query = {"resourcePoolId": "local", "status": status}
        return [j["jobId"] for j in action(api, "DescribeJobs", body=query)["jobs"]]

    assert found("Pending") == found("pending") == found("") == [queued]
    assert found("Running") == found("ManualTermination") == []
    for unknown in ("Runing", "Unknown", "Deleted", "pending_review", "Pending,Running"):
        error = refused(lambda u=unknown: found(u))
        assert (error.status, error.code, error.message) == (
            400,
            "InvalidParameter",
            "status is one of: Pending, Created, Running, Terminating, Succeeded, Failed, "
            "ManualTermination.",
        ), unknown


def test_a_nul_in_a_job_id_pool_or_search_finds_no_job_instead_of_failing(api):
    # SQLite compares a NUL as any character; PostgreSQL refuses it in a query (make test-postgres).
    job_id = api.create_job(pool="local", body=v2_body(), version=V2)["jobId"]

    for pool, asked, code in (
        ("local", job_id + "\x00", "JobNotFound"),
        ("local\x00", job_id, "ResourcePoolNotFound"),  # no pool is named so
    ):
        error = refused(
            lambda p=pool, a=asked: action(api, "DescribeJob", resourcePoolId=p, body={"jobId": a})
        )
        assert (error.status, error.code) == (404, code)
    error = refused(lambda: action(api, "DescribeJobs", body={"resourcePoolId": "local\x00"}))
    assert (error.status, error.code) == (404, "ResourcePoolNotFound")
    for query in (
        {"resourcePoolId": "local", "queue": "\x00"},
        {"resourcePoolId": "local", "keyword": "from\x00"},
        {"resourcePoolId": "local", "keyword": "\x00", "keywordType": "queueName"},
    ):
        assert action(api, "DescribeJobs", body=query)["totalCount"] == 0
    assert action(api, "DescribeJobs", resourcePoolId="local")["totalCount"] == 1
    error = refused(
        lambda: action(
            api, "BatchStopJobs", resourcePoolId="local\x00", body={"jobList": [{"jobId": job_id}]}
        )
    )
    assert (error.status, error.code) == (404, "ResourcePoolNotFound")
    assert Job.objects.get(public_id=job_id).status == JobStatus.QUEUED


def test_describe_jobs_of_a_mistyped_pool_is_refused_in_the_requests_language_and_a_retired_pools_jobs_are_listed(
    api, fake, settings, wsgi, alice_key
):
    # QA: DescribeJobs of a mistyped pool answered totalCount 0, read by a script as "no jobs".
    on_aihc = api.create_job(pool="cce-pool1", body=v1.aihc_body())["jobId"]
    settings.CONSOLE_BACKENDS = ["local"]  # AIHC turned off: cce-pool1 is no longer offered
    query = [("action", "DescribeJobs"), ("resourcePoolId", "cce-pool2")]

    mistyped = refused(lambda: action(api, "DescribeJobs", body={"resourcePoolId": "cce-pool2"}))
    with httpx.Client(transport=wsgi, base_url=CONSOLE) as http:
        in_chinese = http.get(
            "/",
            params=query,
            headers=signed(
                alice_key,
                method="GET",
                query=query,
                **{"X-API-Version": "v2", "Accept-Language": "zh-CN"},
            ),
        )
    retired = action(api, "DescribeJobs", body={"resourcePoolId": "cce-pool1"})
    described = action(api, "DescribeJob", resourcePoolId="cce-pool1", body={"jobId": on_aihc})
    mistyped_describe = refused(
        lambda: action(api, "DescribeJob", resourcePoolId="cce-pool2", body={"jobId": on_aihc})
    )

    assert (mistyped.status, mistyped.code) == (404, "ResourcePoolNotFound")
    assert mistyped.message.startswith("Resource pool cce-pool2 not found: ")
    assert (in_chinese.status_code, in_chinese.json()["code"]) == (404, "ResourcePoolNotFound")
    assert in_chinese.json()["message"].startswith("资源池 cce-pool2 不存在：")
    assert (retired["totalCount"], [j["jobId"] for j in retired["jobs"]]) == (1, [on_aihc])
    assert described["job"]["jobId"] == on_aihc
    assert (mistyped_describe.status, mistyped_describe.code) == (404, "ResourcePoolNotFound")
    assert action(api, "DescribeJobs", body={"resourcePoolId": "local"})["totalCount"] == 0


def test_batch_stop_jobs_of_a_mistyped_pool_is_refused_while_a_retired_pools_jobs_still_stop(
    api, fake, settings, wsgi, bob
):
    # QA: BatchStopJobs of a mistyped pool listed each job "not found" in failedList, read by a
    # script as jobs deleted; StopJob and DescribeJobs refuse the pool itself.
    on_aihc = api.create_job(pool="cce-pool1", body=v1.aihc_body())["jobId"]
    bobs_key, bobs_secret = api_key_create(owner=bob)
    bobs_api = client_for(wsgi, bobs_key.access_key_id, bobs_secret)
    settings.CONSOLE_BACKENDS = ["local"]  # AIHC turned off: cce-pool1 is no longer offered
    listed = {"jobList": [{"jobId": on_aihc}]}

    mistyped = refused(
        lambda: action(api, "BatchStopJobs", resourcePoolId="cce-pool2", body=listed)
    )
    not_bobs = refused(
        lambda: action(bobs_api, "BatchStopJobs", resourcePoolId="cce-pool1", body=listed)
    )

    assert (mistyped.status, mistyped.code) == (404, "ResourcePoolNotFound")
    assert mistyped.message.startswith("Resource pool cce-pool2 not found: ")
    assert (not_bobs.status, not_bobs.code) == (404, "ResourcePoolNotFound")  # Alice's job only
    assert Job.objects.get(public_id=on_aihc).status == JobStatus.QUEUED
    # An offered pool still answers job by job; a retired pool holding her job stops it.
    offered = action(api, "BatchStopJobs", resourcePoolId="local", body=listed)["result"]
    assert offered["failedList"] == [
        {"jobId": on_aihc, "success": False, "errorMsg": f"Job {on_aihc} not found."}
    ]
    retired = action(api, "BatchStopJobs", resourcePoolId="cce-pool1", body=listed)["result"]
    assert (retired["successNum"], retired["failedNum"]) == (1, 0)
    assert Job.objects.get(public_id=on_aihc).status == JobStatus.STOPPED


@pytest.mark.parametrize("keyword_type", ["name", "queueName"])
def test_a_search_keyword_longer_than_the_job_lists_box_is_refused_not_a_server_error(
    api, keyword_type
):
    # SQLite refuses a LIKE pattern past 50,000 bytes: 60,000 letters answered 500.
    api.create_job(pool="local", body=v2_body(), version=V2)
    asked = {"resourcePoolId": "local", "keywordType": keyword_type}

    error = refused(lambda: action(api, "DescribeJobs", body={**asked, "keyword": "a" * 60_000}))
    longest = action(api, "DescribeJobs", body={**asked, "keyword": "a" * 200})

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert error.message.startswith("keyword is at most 200 characters.")
    assert longest["totalCount"] == 0


# -- pools and queues -------------------------------------------------------------------------


def test_a_v2_aihc_create_alerting_on_fault_tolerance_without_it_warns_beside_the_job_id(api, fake):
    job_body = v2_body(alertConfig={"alertItems": ["jobFT"], **v1.AIHC_ALERTS})
    job_body["jobSpec"]["resources"] = [{"name": A800, "quantity": 1}]
    del job_body["datasources"]  # a hostpath of the local pool's

    answer = action(api, "CreateJob", body=job_body, resourcePoolId="cce-pool1", queueID="default")

    assert answer["warnings"] == [
        {
            "code": "AlertNeverSent",
            "message": v1.FT_ALERT_NEVER_COMES,
            "fields": ["alertConfig.alertItems"],
        }
    ]
    assert Job.objects.get(public_id=answer["jobId"]).job_spec().alert.items == ["jobFT"]


def test_v2_pools_and_queues_read_as_the_consoles_own_aihc_client_reads_aihcs(api, fake):
    held = api.create_job(pool="local", body=card_body("holds-a-card", cards=1))
    run_until(
        Worker(), lambda: Job.objects.get(public_id=held["jobId"]).status == JobStatus.RUNNING
    )

    pools = api.resource_pools(version=V2)  # DescribeResourcePools + DescribeResourcePoolOverview

    offered = {p.id: p for p in available_pools()}
    assert sorted(pools, key=lambda p: p["id"]) == [
        {
            "id": "cce-pool1",
            "name": "百舸训练池",
            "phase": "running",
            "accelerators": {A800: (32, 26)},
            "pfs": ["pfs-7xWeAt"],
        },
        {
            "id": "local",
            "name": offered["local"].name,
            "phase": "running",
            "accelerators": {CARD: (2, 1)},
            "pfs": [],
        },
    ]
    assert api.queues(pool="cce-pool1", version=V2) == ["default", "research"]
    one = action(api, "DescribeResourcePool", method="GET", resourcePoolId="cce-pool1")
    assert (one["resourcePoolId"], one["type"], one["console"]["backend"]) == (
        "cce-pool1",
        "common",
        "aihc",
    )
    queues = action(api, "DescribeQueues", method="GET", resourcePoolId="cce-pool1", keyword="res")
    assert [q["queueId"] for q in queues["queues"]] == ["cce-pool1:research"]
    # Baidu's Go SDK capitalises DescribeQueues' paging parameters.
    paged = action(
        api, "DescribeQueues", method="GET", resourcePoolId="cce-pool1", PageNumber=2, PageSize=1
    )
    assert (paged["pageNumber"], paged["totalCount"]) == (2, 2)
    assert [q["queueName"] for q in paged["queues"]] == ["research"]
    by_id = action(api, "DescribeQueue", method="GET", queueId="cce-pool1:research")
    by_name = action(
        api, "DescribeQueue", method="GET", queueId="research", resourcePoolId="cce-pool1"
    )
    assert by_id == {**by_name, "requestId": by_id["requestId"]}
    assert (by_id["queueName"], by_id["opened"]) == ("research", True)


def test_v2_pool_lists_sort_page_and_take_only_the_consoles_pool_type(api, fake):
    def pools(**query) -> dict:
        return action(
            api, "DescribeResourcePools", method="GET", resourcePoolType="common", **query
        )

    by_name = pools()
    by_id_desc = pools(orderBy="resourcePoolId", order="DESC", pageSize=1)
    second = pools(orderBy="resourcePoolId", order="DESC", pageSize=1, pageNumber=2)
    managed = action(api, "DescribeResourcePools", method="GET", resourcePoolType="dedicatedV2")

    assert [p["name"] for p in by_name["resourcePools"]] == ["本机 Local", "百舸训练池"]
    assert (by_name["orderBy"], by_name["order"], by_name["totalCount"]) == (
        "resourcePoolName",
        "ASC",
        2,
    )
    assert [p["resourcePoolId"] for p in by_id_desc["resourcePools"]] == ["local"]
    assert [p["resourcePoolId"] for p in second["resourcePools"]] == ["cce-pool1"]
    assert (managed["totalCount"], managed["resourcePools"]) == (0, [])


# -- refused input ---------------------------------------------------------------------------


def test_bad_v2_input_is_a_clear_bce_error_and_creates_nothing(api):
    fault_flags = v2_body(faultTolerance=True, faultToleranceArgs="--enable-replace=true")
    no_command = v2_body(command="")
    cases = [
        (
            lambda: action(api, "RunEverything", resourcePoolId="local"),
            404,
            "NotFound",
            "action RunEverything is not served",
        ),
        (
            lambda: action(api, "CreateJob", method="GET", resourcePoolId="local"),
            405,
            "MethodNotAllowed",
            "CreateJob takes POST",
        ),
        (
            lambda: action(api, "CreateJob", resourcePoolId="local", body=["a"]),
            400,
            "InvalidParameter",
            "JSON object",
        ),
        (
            lambda: action(api, "CreateJob", resourcePoolId="local", body=v2_body(jobSpec="big")),
            400,
            "InvalidParameter",
            "jobSpec",
        ),
        (
            lambda: action(api, "CreateJob", resourcePoolId="local", body=fault_flags),
            400,
            "InvalidParameter",
            "faultToleranceArgs: --enable-replace",
        ),
        (
            lambda: action(api, "CreateJob", resourcePoolId="local", body=no_command),
            400,
            "InvalidParameter",
            "command: ",
        ),
        (
            lambda: action(api, "CreateJob", body=v2_body()),
            400,
            "InvalidParameter",
            "resourcePoolId is required",
        ),
        (
            lambda: action(api, "DescribeJobs", resourcePoolId="local", body={"pageSize": 0}),
            400,
            "InvalidParameter",
            "pageSize",
        ),
        (
            lambda: action(api, "DescribeJobs", resourcePoolId="local", body={"keyword": {"a": 1}}),
            400,
            "InvalidParameter",
            "keyword",
        ),
        (
            lambda: action(api, "DescribeJob", resourcePoolId="local", body={}),
            400,
            "InvalidParameter",
            "jobId is required",
        ),
        (
            lambda: action(
                api,
                "DescribeJob",
                resourcePoolId="local",
                body={"jobId": "x", "needDetail": "maybe"},
            ),
            400,
            "InvalidParameter",
            "needDetail",
        ),
        (
            lambda: action(api, "DescribeResourcePools", method="GET"),
            400,
            "InvalidParameter",
            "resourcePoolType is required",
        ),
        (
            lambda: action(api, "DescribeResourcePool", method="GET", resourcePoolId="cce-nowhere"),
            404,
            "ResourcePoolNotFound",
            "",
        ),
        (
            lambda: action(api, "DescribeQueue", method="GET", queueId="research"),
            400,
            "InvalidParameter",
            "queueId",
        ),
        (
            lambda: action(api, "DescribeQueue", method="GET", queueId="cce-nowhere:default"),
            404,
            "QueueNotFound",
            "",
        ),
        (
            lambda: action(api, "DescribeQueue", method="GET", queueId="local:nowhere"),
            404,
            "QueueNotFound",
            "",
        ),
    ]

    for call, status, code, words in cases:
        error = refused(call)
        assert (error.status, error.code) == (status, code), error.message
        assert words in error.message

    assert Job.objects.count() == 0


def test_a_body_nested_deeper_than_any_job_is_malformed_json_not_a_server_error(api):
    # Python's JSON reader takes this depth, but v2's mapping copies the body recursively:
    # a few hundred levels were a RecursionError, answered with a 500.
    deep = json.loads("[" * 700 + "]" * 700)
    calls = [
        lambda: action(api, "CreateJob", resourcePoolId="local", body=v2_body(labels=deep)),
        lambda: action(api, "DescribeJobs", resourcePoolId="local", body={"keyword": deep}),
        lambda: api.create_job(pool="local", body=body(labels=deep)),  # v1 reads it the same
    ]

    for call in calls:
        error = refused(call)
        assert (error.status, error.code) == (400, "MalformedJSON"), error.message
        assert "nested more than 32 levels deep" in error.message
    # What a job body really nests (console.roles[].resources[]) is far from the limit.
    created = action(api, "CreateJob", resourcePoolId="local", body=v2_body(name="roles-ok"))
    assert Job.objects.get().public_id == created["jobId"]


def signed(api_key, *, method: str, query: list[tuple[str, str]], content: bytes = b"", **headers):
    """A request signed as Baidu's pool/queue SDK calls sign (host only, no version header)."""
    return signed_headers(
        api_key, method=method, path="/", query=query, headers=headers, signed=["host"]
    )


def test_a_signed_request_without_a_version_header_is_the_api_and_without_action_says_so(
    wsgi, alice_key
):
    pools_query = [("action", "DescribeResourcePools"), ("resourcePoolType", "common")]
    with httpx.Client(transport=wsgi, base_url=CONSOLE) as http:
        pools = http.get(
            "/", params=pools_query, headers=signed(alice_key, method="GET", query=pools_query)
        )
        bare = http.get("/", headers=signed(alice_key, method="GET", query=[]))
        jobs_query = [("action", "DescribeJobs"), ("resourcePoolId", "local")]
        malformed, too_deep = (
            http.post(
                "/?action=DescribeJobs&resourcePoolId=local",
                content=content,
                headers=signed(alice_key, method="POST", query=jobs_query),
            )
            for content in (b"{not json", b"[" * 100_000)
        )

    assert pools.status_code == 200, pools.text
    assert [p["resourcePoolId"] for p in pools.json()["resourcePools"]] == ["local"]
    assert (bare.status_code, bare.json()["code"]) == (400, "InvalidParameter")
    assert "action is required" in bare.json()["message"]
    for refused_body in (malformed, too_deep):
        assert (refused_body.status_code, refused_body.json()["code"]) == (400, "MalformedJSON")
    assert json.loads(pools.content)["requestId"] == pools.headers["x-bce-request-id"]


def test_both_generations_count_every_users_jobs_in_a_queue_as_the_pools_page_does(api, alice, bob):
    def job_in(owner, status: str) -> None:
        spec = spec_module.JobSpec(
            name=f"{owner.username}-{status}".replace("_", "-"),
            resource_pool_id="local",
            queue="default",
            image="python:3.12",
            command="echo hi",
            roles=[spec_module.Role("master", 1)],
        )
        [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
        Job.objects.filter(pk=job.pk).update(status=status)

    for owner, status in [
        (alice, JobStatus.RUNNING),
        (bob, JobStatus.RUNNING),
        (bob, JobStatus.STOPPING),
        (bob, JobStatus.QUEUED),
        (bob, JobStatus.PENDING_REVIEW),
        (alice, JobStatus.SUCCEEDED),  # ended: holds nothing, waits for nothing
    ]:
        job_in(owner, status)

    [listed] = v1.get(api, "/api/v1/resourcepools/local/queue")["queues"]
    one = v1.get(api, "/api/v1/resourcepools/local/queue/default")["queue"]
    [described] = action(api, "DescribeQueues", method="GET", resourcePoolId="local")["queues"]
    by_id = action(api, "DescribeQueue", method="GET", queueId="local:default")

    for queue in (listed, one):
        assert (queue["running"], queue["inqueue"], queue["pending"]) == (3, 1, 1)
    for queue in (described, by_id):
        assert (queue["runningJobs"], queue["inqueueJobs"], queue["pendingJobs"]) == (3, 1, 1)
    # Numbers only: nothing of Bob's jobs but their count reaches Alice.
    assert "bob" not in json.dumps([listed, one, described, by_id])


def test_an_expired_key_is_refused_by_v2_with_its_own_code(api, alice_key):
    assert action(api, "DescribeJobs", resourcePoolId="local")["totalCount"] == 0
    ApiKey.objects.filter(pk=alice_key[0].pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    error = refused(lambda: action(api, "DescribeJobs", resourcePoolId="local"))

    assert (error.status, error.code) == (403, "AccessKeyExpired")
    assert "/account/keys/" in error.message
    assert not LoginFailure.objects.exists()
