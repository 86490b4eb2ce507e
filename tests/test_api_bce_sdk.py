"""The console's AIHC-compatible API driven by Baidu's own client: bce-python-sdk's AihcClient
(baidubce.services.aihc, the v2 actions signed with bce-auth-v1), pointed at a live console on
127.0.0.1 with a console access key. What the SDK sends must be accepted as it sends it
(signature, headers, query, JSON body), and what the console answers must be read by the SDK's
own response parsing, with the values right. The jobs run on the local runner for real."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from baidubce.auth.bce_credentials import BceCredentials
from baidubce.bce_client_configuration import BceClientConfiguration
from baidubce.exception import BceHttpClientError
from baidubce.retry.retry_policy import NoRetryPolicy
from baidubce.services.aihc import AihcClient
from baidubce.services.aihc.modules.job import job_model as M
from django.utils import timezone

from jobs.api_keys import api_key_create
from jobs.models import Job, JobStatus
from jobs.worker import Worker

from .runner_helpers import (
    UNTIL_THE_GATE_OPENS,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
)
from .test_api_example import readme_example

pytestmark = [
    pytest.mark.usefixtures("runner_settings"),
    # The SDK's own clock (baidubce.utils.get_canonical_time), not ours.
    pytest.mark.filterwarnings("ignore:datetime.datetime.utcnow:DeprecationWarning"),
]

POOL, QUEUE = "local", "default"
FAULT_TOLERANCE_ARGS = (
    "--enable-hang-detection=true --hang-detection-log-timeout-minutes=7 "
    "--max-num-of-unconditional-retry=2"
)


def sdk_client(live_server, access_key_id: str, secret: str) -> AihcClient:
    """AihcClient as README shows it, on the live console. Never retried: Baidu's default
    policy retries a 500 or 503, which would hide a first answer that failed."""
    port = urlsplit(live_server.url).port
    config = BceClientConfiguration(
        credentials=BceCredentials(access_key_id, secret),
        endpoint=f"http://127.0.0.1:{port}",
        retry_policy=NoRetryPolicy(),
    )
    return AihcClient(config)


@pytest.fixture
def sdk(live_server, alice) -> AihcClient:
    key, secret = api_key_create(owner=alice, description="bce-python-sdk")
    return sdk_client(live_server, key.access_key_id, secret)


def plain(value: Any) -> Any:
    """The SDK's answer (Expando objects, made by its own JSON parsing) as plain data."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: plain(v) for k, v in vars(value).items()}
    return value


def sdk_error(call) -> BceHttpClientError:
    """The exception the SDK raises for a refusal, as a script sees it."""
    with pytest.raises(BceHttpClientError) as caught:
        call()
    return caught.value


def create(sdk: AihcClient, name: str = "sdk-job", command: str = "echo hello", **extra):
    """CreateJob with a body built by the SDK's own models: a PyTorch master and worker."""
    spec = M.JobSpec(
        image="python:3.12",
        replicas=2,
        resources=[M.Resource("cpu", "1")],  # the SDK's Resource takes the quantity as text
        envs=[M.Env("GREETING", "hi")],
    )
    for key, value in extra.pop("jobSpec_extra", {}).items():
        spec[key] = value
    return sdk.CreateJob(
        resourcePoolId=POOL,
        queueID=QUEUE,
        name=name,
        command=command,
        jobSpec=spec,
        **extra,
    )


def where(job_id: str) -> dict[str, str]:
    return {"resourcePoolId": POOL, "queueID": QUEUE, "jobId": job_id}


# -- a job's whole life ----------------------------------------------------------------


def test_a_pytorch_job_made_with_the_sdks_models_runs_and_every_read_returns_its_values(sdk, alice):
    created = create(
        sdk,
        command="echo hello $GREETING; sleep 1",
        jobType="PyTorchJob",
        labels=[M.Label("team", "nlp")],
        priority="high",
        dataSources=[
            M.Datasource(
                type="hostpath", name="work", mountPath="/workspace", options=M.Option("true")
            )
        ],
        faultTolerance=True,
        faultToleranceArgs=FAULT_TOLERANCE_ARGS,
        tensorboardConfig=M.TensorboardConfig(enable=True, logPqth="/workspace/tb"),
    )

    job = Job.objects.get(public_id=created.jobId)
    assert (created.jobName, job.name, job.owner, job.resource_pool) == (
        "sdk-job",
        "sdk-job",
        alice,
        POOL,
    )
    assert "warnings" not in vars(created)  # nothing of the SDK's body goes unread
    spec = job.job_spec()
    assert [(r.name, r.replicas) for r in spec.roles] == [("master", 1), ("worker", 1)]
    assert [(e.name, e.value) for e in spec.envs] == [("GREETING", "hi")]
    assert [(d.name, d.mount_path, d.read_only) for d in spec.datasources] == [
        ("work", "/workspace", True)
    ]
    assert spec.labels == [("team", "nlp")]
    assert job.priority == "high"
    assert (spec.tensorboard.enable, spec.tensorboard.log_path) == (True, "/workspace/tb")

    described = plain(sdk.DescribeJob(**where(job.public_id), needDetail=True).job)
    assert (described["jobId"], described["jobid"], described["status"]) == (
        job.public_id,
        job.public_id,
        "Pending",
    )
    assert described["command"] == "echo hello $GREETING; sleep 1"
    assert described["jobSpec"]["envs"] == [{"name": "GREETING", "value": "hi"}]
    assert described["jobSpec"]["replicas"] == 2
    assert described["datasources"] == [
        {
            "type": "hostpath",
            "name": "work",
            "mountPath": "/workspace",
            "options": {"readOnly": True},
        }
    ]
    assert described["labels"] == [{"key": "team", "value": "nlp"}]
    assert described["faultToleranceArgs"] == FAULT_TOLERANCE_ARGS
    assert described["enableFaultTolerance"] is True
    assert described["tensorboardConfig"] == {"enable": True, "logPath": "/workspace/tb"}
    assert described["pods"] == []
    assert plain(sdk.DescribeJobNodes(**where(job.public_id)))["nodes"] == []

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to succeed")

    described = plain(sdk.DescribeJob(**where(job.public_id), needDetail=True).job)
    assert described["status"] == "Succeeded"
    assert [(p["name"], p["replicaType"], p["status"]) for p in described["pods"]] == [
        ("sdk-job-master-0", "master", "Succeeded"),
        ("sdk-job-worker-0", "worker", "Succeeded"),
    ]
    node = job.replicas.get(role="master").node
    nodes = sdk.DescribeJobNodes(**where(job.public_id))
    assert node and (nodes.jobId, nodes.nodes) == (job.public_id, [node])

    events = plain(sdk.DescribeJobEvents(**where(job.public_id)))
    assert [e["reason"] for e in events["events"]] == ["Created", "Started", "Succeeded"]
    assert events["total"] == 3
    assert events["events"][-1]["message"] == "All replicas exited with code 0."

    logs = plain(sdk.DescribeJobLogs(**where(job.public_id), podName="sdk-job-master-0"))
    assert (logs["jobId"], logs["podName"]) == (job.public_id, "sdk-job-master-0")
    assert any(line.endswith(" hello hi") for line in logs["logs"]), logs
    # Where the lines answered end (QA 57; "" before): read on from it, nothing is new.
    after = sdk.DescribeJobLogs(
        **where(job.public_id), podName="sdk-job-master-0", marker=logs["nextMarker"]
    )
    assert (after.logs, after.nextMarker) == ([], logs["nextMarker"])
    started = int(job.replicas.get(role="master").started_at.timestamp())
    from_start = sdk.DescribeJobLogs(
        **where(job.public_id), podName="sdk-job-master-0", startTime=started - 1
    )
    assert from_start.logs == logs["logs"]
    later = sdk.DescribeJobLogs(
        **where(job.public_id), podName="sdk-job-master-0", startTime=started + 3600
    )
    assert later.logs == []  # nothing written from an hour after its start on
    worker_logs = sdk.DescribeJobLogs(
        **where(job.public_id), podName="sdk-job-worker-0", maxLines=1
    )
    assert len(worker_logs.logs) == 1 and "exited with code 0" in worker_logs.logs[0]

    pod_events = plain(sdk.DescribeJobPodEvents(**where(job.public_id), podName="sdk-job-worker-0"))
    assert [(e["reason"], e["message"]) for e in pod_events["events"]] == [
        ("Started", f"Started on node {node}."),
        ("Succeeded", "Exited with code 0."),
    ]

    metrics = plain(sdk.DescribeJobMetrics(**where(job.public_id), metricType="CpuUsage"))
    assert metrics["jobId"] == job.public_id
    assert [m["podName"] for m in metrics["metrics"]] == ["sdk-job-master-0", "sdk-job-worker-0"]

    deleted = sdk.DeleteJob(**where(job.public_id))
    assert (deleted.jobId, deleted.jobName) == (job.public_id, "sdk-job")
    assert not Job.objects.filter(pk=job.pk).exists()
    gone = sdk_error(lambda: sdk.DescribeJob(**where(job.public_id)))
    assert (gone.status_code, gone.code) == (404, "JobNotFound")
    assert gone.last_error.request_id  # the SDK read BCE's error shape


def test_a_running_job_is_stopped_and_deleted_through_the_sdk(sdk, alice, settings):
    created = create(sdk, name="sdk-stop", command=f"echo up; {UNTIL_THE_GATE_OPENS}")
    job = Job.objects.get(public_id=created.jobId)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="the job to run")
    assert sdk.DescribeJob(**where(job.public_id)).job.status == "Running"

    stopped = sdk.StopJob(**where(job.public_id))

    assert (stopped.jobId, stopped.jobName) == (job.public_id, "sdk-stop")
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, what="the job to stop")
    assert sdk.DescribeJob(**where(job.public_id)).job.status == "ManualTermination"
    reasons = [e.reason for e in sdk.DescribeJobEvents(**where(job.public_id)).events]
    assert reasons[:2] == ["Created", "Started"] and "StopRequested" in reasons
    assert job.events.get(reason="StopRequested").actor == alice
    open_gate(settings)
    sdk.DeleteJob(**where(job.public_id))
    assert not Job.objects.filter(pk=job.pk).exists()


def test_modify_job_changes_a_queued_jobs_priority_and_records_who(sdk, alice):
    job_id = create(sdk, priority="high").jobId

    modified = sdk.ModifyJob(resourcePoolId=POOL, queueID=QUEUE, jobId=job_id, priority="low")

    assert modified.jobId == job_id
    assert sdk.DescribeJob(**where(job_id)).job.priority == "low"
    assert Job.objects.get(public_id=job_id).priority == "low"
    [changed] = [e for e in sdk.DescribeJobEvents(**where(job_id)).events if e.reason != "Created"]
    assert (changed.reason, changed.message) == (
        "PriorityChanged",
        "Priority changed from High to Low by alice.",
    )
    refused = sdk_error(
        lambda: sdk.ModifyJob(resourcePoolId=POOL, queueID=QUEUE, jobId=job_id, priority="urgent")
    )
    assert (refused.status_code, refused.code) == (400, "InvalidParameter")


def test_describe_jobs_pages_filters_and_orders_as_the_sdk_asks(sdk):
    ids = [create(sdk, name=name).jobId for name in ("alpha-1", "alpha-2", "beta-1")]
    Job.objects.filter(public_id=ids[2]).update(status=JobStatus.SUCCEEDED)

    first = sdk.DescribeJobs(resourcePoolId=POOL, pageNumber=1, pageSize=2)
    second = sdk.DescribeJobs(resourcePoolId=POOL, pageNumber=2, pageSize=2)
    oldest_first = sdk.DescribeJobs(resourcePoolId=POOL, orderBy="createdAt", order="asc")
    named = sdk.DescribeJobs(resourcePoolId=POOL, keywordType="name", keyword="alpha")
    pending = sdk.DescribeJobs(resourcePoolId=POOL, queue=QUEUE, status="Pending")
    succeeded = sdk.DescribeJobs(resourcePoolId=POOL, status="Succeeded")
    in_queue = sdk.DescribeJobs(resourcePoolId=POOL, keywordType="queueName", keyword="def")

    assert (first.totalCount, first.pageNumber, first.pageSize) == (3, 1, 2)
    assert [j.jobId for j in first.jobs + second.jobs] == ids[::-1]
    assert [j.name for j in oldest_first.jobs] == ["alpha-1", "alpha-2", "beta-1"]
    assert (oldest_first.orderBy, oldest_first.order) == ("createdAt", "asc")
    assert sorted(j.name for j in named.jobs) == ["alpha-1", "alpha-2"]
    assert sorted(j.name for j in pending.jobs) == ["alpha-1", "alpha-2"]
    assert [(j.name, j.status) for j in succeeded.jobs] == [("beta-1", "Succeeded")]
    assert in_queue.totalCount == 3
    misspelt = sdk_error(lambda: sdk.DescribeJobs(resourcePoolId=POOL, status="Runing"))
    assert (misspelt.status_code, misspelt.code) == (400, "InvalidParameter")


# -- what the console does not serve, said as the SDK reads it -------------------------


def test_the_web_terminal_is_refused_with_an_error_saying_the_console_has_none(sdk):
    job_id = create(sdk).jobId

    error = sdk_error(
        lambda: sdk.DescribeJobWebterminal(**where(job_id), podName="sdk-job-master-0")
    )

    assert (error.status_code, error.code) == (400, "NotSupported")
    assert str(error.last_error).startswith("This console has no web terminal")
    assert "DescribeJobLogs" in str(error.last_error)
    unknown = sdk_error(
        lambda: sdk.DescribeJobWebterminal(**where("pytorchjob-nope"), podName="x-master-0")
    )
    assert (unknown.status_code, unknown.code) == (404, "JobNotFound")


def test_log_filters_the_console_cannot_apply_are_refused_not_ignored(sdk):
    job_id = create(sdk).jobId
    pod = {**where(job_id), "podName": "sdk-job-master-0"}

    for given in ({"keywords": "error"}, {"endTime": 1}, {"chunkSize": 5}):
        error = sdk_error(lambda given=given: sdk.DescribeJobLogs(**pod, **given))
        assert (error.status_code, error.code) == (400, "InvalidParameter"), given
        assert str(error.last_error).startswith(f"{next(iter(given))} is not served")
    # A marker is served since QA 57 (tests/test_api_automation.py); one the console did
    # not give is refused.
    error = sdk_error(lambda: sdk.DescribeJobLogs(**pod, marker="m1"))
    assert (error.status_code, error.code) == (400, "InvalidParameter")
    assert str(error.last_error).startswith("marker is the nextMarker of an earlier answer")

    # chunkSize 1 (one line an item) is what the console does: not refused, and the job
    # still queued has no pod yet.
    not_yet = sdk_error(lambda: sdk.DescribeJobLogs(**pod, chunkSize=1))
    assert (not_yet.status_code, not_yet.code) == (404, "PodNotFound")


def test_job_and_pod_events_are_kept_to_the_time_range_the_sdk_gives(sdk):
    job_id = create(sdk, command="echo quick").jobId
    job = Job.objects.get(public_id=job_id)
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to end")
    created = job.events.get(reason="Created")
    # Move the job's creation an hour back, so the range can leave it out.
    an_hour_ago = timezone.now() - timedelta(hours=1)
    job.events.filter(pk=created.pk).update(created_at=an_hour_ago)
    since = int(an_hour_ago.timestamp()) + 60

    recent = sdk.DescribeJobEvents(**where(job_id), startTime=since)
    early = sdk.DescribeJobEvents(**where(job_id), endTime=since)
    pod_recent = sdk.DescribeJobPodEvents(
        **where(job_id), podName="sdk-job-master-0", startTime=since
    )
    pod_early = sdk.DescribeJobPodEvents(**where(job_id), podName="sdk-job-master-0", endTime=since)

    assert [e.reason for e in recent.events] == ["Started", "Succeeded"]
    assert [e.reason for e in early.events] == ["Created"] and early.total == 1
    assert [e.reason for e in pod_recent.events] == ["Started", "Succeeded"]
    assert pod_early.events == [] and pod_early.total == 0
    unset = sdk.DescribeJobEvents(**where(job_id), endTime=0)  # a Go client's unset number
    assert [e.reason for e in unset.events] == ["Created", "Started", "Succeeded"]
    backwards = sdk_error(
        lambda: sdk.DescribeJobEvents(**where(job_id), startTime=since, endTime=since - 1)
    )
    assert (backwards.status_code, backwards.code) == (400, "InvalidParameter")


# -- pools and queues ---------------------------------------------------------------------


def test_the_sdks_pool_and_queue_calls_read_the_consoles_pools(sdk):
    pools = sdk.DescribeResourcePools(resourcePoolType="common")
    pool = sdk.DescribeResourcePool(resourcePoolId=POOL)
    overview = sdk.DescribeResourcePoolOverview()
    queues = sdk.DescribeQueues(resourcePoolId=POOL)
    queue = sdk.DescribeQueue(queueId=f"{POOL}:{QUEUE}")

    assert [(p.resourcePoolId, p.type) for p in pools.resourcePools] == [(POOL, "common")]
    assert pools.totalCount == 1
    assert (pool.resourcePoolId, pool.phase) == (POOL, "running")
    [statistic] = overview.resourcePoolsStatisticWithType
    assert (statistic.acceleratorsStatistic.capacity, statistic.acceleratorsStatistic.idle) == (
        2,
        2,
    )  # runner_settings gives the local runner two cards
    assert [(q.queueId, q.queueName) for q in queues.queues] == [(f"{POOL}:{QUEUE}", QUEUE)]
    assert (queue.queueName, queue.opened, queue.runningJobs) == (QUEUE, True, 0)
    # Pool and queue calls put everything in the query, signed as the SDK encodes it:
    # UTF-8 and a space included.
    by_name = sdk.DescribeResourcePools(
        resourcePoolType="common", keywordType="resourcePoolName", keyword="本机 Lo"
    )
    assert [p.resourcePoolId for p in by_name.resourcePools] == [POOL]
    no_queue = sdk.DescribeQueues(resourcePoolId=POOL, keywordType="queueName", keyword="队列")
    assert (no_queue.totalCount, no_queue.queues) == (0, [])
    not_served = sdk_error(lambda: sdk.DescribeResourcePoolConfiguration(resourcePoolId=POOL))
    assert (not_served.status_code, not_served.code) == (404, "NotFound")


# -- keys, and fields the console does not read --------------------------------------------


def test_a_wrong_secret_key_is_refused_with_aihcs_code_on_job_and_pool_calls(live_server, alice):
    key, _secret = api_key_create(owner=alice)
    wrong = sdk_client(live_server, key.access_key_id, "0" * 32)

    # Job actions sign the SDK's default headers, pool actions `host` only: both are checked.
    on_create = sdk_error(lambda: create(wrong))
    on_pools = sdk_error(lambda: wrong.DescribeQueues(resourcePoolId=POOL))

    for error in (on_create, on_pools):
        assert (error.status_code, error.code) == (403, "SignatureDoesNotMatch")
    assert Job.objects.count() == 0
    unknown = sdk_client(live_server, "no-such-key", "0" * 32)
    refused = sdk_error(lambda: unknown.DescribeJobs(resourcePoolId=POOL))
    assert (refused.status_code, refused.code) == (403, "InvalidAccessKeyId")


def test_a_field_the_console_does_not_read_comes_back_in_warnings_the_sdk_reads(sdk):
    created = create(sdk, jobSpec_extra={"runtimeClassName": "kata"}, retentionPeriod="1d")

    job = Job.objects.get(public_id=created.jobId)
    [warning] = created.warnings
    assert (warning.code, warning.fields) == ("FieldsNotRead", ["jobSpec.runtimeClassName"])
    assert "jobSpec.runtimeClassName" in warning.message
    assert job.events.filter(reason="FieldsNotRead").exists()


def test_the_sdks_alert_config_is_refused_with_what_to_change_on_the_local_pool(sdk):
    # README: AlertConfig types alertItems as text where AIHC reads a list, and a local job's
    # alerts need the console's channels, which the SDK's CreateJob cannot send.
    as_text = M.AlertConfig(instanceId="cprom-1", alertItems="jobFailed", notifyRuleId="notify-1")
    as_list = M.AlertConfig(instanceId="cprom-1", alertItems=["jobFailed"], notifyRuleId="notify-1")

    text_refused = sdk_error(lambda: create(sdk, alertConfig=as_text))
    list_refused = sdk_error(lambda: create(sdk, alertConfig=as_list))

    assert (text_refused.status_code, text_refused.code) == (400, "InvalidParameter")
    assert str(text_refused.last_error) == (  # the channels' rule follows once it reads (qa97)
        "alertConfig.alertItems: Must be a list. More may be said once these are corrected: "
        "the checks that need every field read (the pool's cards, quota and volumes, the "
        "alert channels) run then."
    )
    assert (list_refused.status_code, list_refused.code) == (400, "InvalidParameter")
    assert "These alerts would reach nobody" in str(list_refused.last_error)
    assert Job.objects.count() == 0


# -- the README's example ----------------------------------------------------------------


def test_the_readme_sdk_example_runs_as_written_against_the_console(live_server, alice, tmp_path):
    key, secret = api_key_create(owner=alice)
    script = tmp_path / "sdk_job.py"
    script.write_text(readme_example("api-example-bce-sdk"))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "CONSOLE_URL": f"http://127.0.0.1:{urlsplit(live_server.url).port}",
        "CONSOLE_AK": key.access_key_id,
        "CONSOLE_SK": secret,
        "PYTHONWARNINGS": "ignore::DeprecationWarning",
    }

    run = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )

    assert run.returncode == 0, run.stderr
    [job] = Job.objects.filter(owner=alice)
    assert (job.name, job.status) == ("hello-from-the-sdk", JobStatus.STOPPED)
    assert [(r.name, r.replicas) for r in job.job_spec().roles] == [("master", 1), ("worker", 1)]
    assert run.stdout == (
        f"created {job.public_id}\nstatus Pending\nweb terminal 400 NotSupported\n"
        "stopped ManualTermination\n"
    )
