"""What an AIHC job's pods use, read by the worker from AIHC's job metrics API, for the job
page and the console's own metrics API, against the strict fake AIHC."""

from __future__ import annotations

import logging
import time
import uuid

import httpx
import pytest
from django.urls import reverse

from jobs import spec as S
from jobs.actions import job_delete
from jobs.aihc.client import AihcClient, AihcError, Credentials
from jobs.api_keys import api_key_create
from jobs.backends import get_backend
from jobs.backends.aihc import USAGE_DIR, read_utilisation, usage_file
from jobs.models import Job, JobStatus
from jobs.services import jobs_submit
from jobs.worker import Worker
from tests.fake_aihc import FakeAihc, configure
from tests.test_aihc_backend import seed_spec
from tests.test_api import client_for, every_15_seconds, get, job_with_usage, refused, wsgi  # noqa: F401
from tests.test_api import metrics as api_metrics

A800 = "baidu.com/a800_80g_cgpu"
POOL = "cce-pool1"


@pytest.fixture
def fake(settings, tmp_path):
    fake = FakeAihc().start()
    fake.add_pool(POOL, "训练池", queues=("default",), gpus={A800: (16, 6)}, pfs="pfs-7xWeAt")
    configure(settings, fake, AIHC_METRICS_SECONDS=0)
    settings.VAR_DIR = tmp_path
    yield fake
    fake.stop()


def running_job(owner, fake: FakeAihc) -> tuple[Job, Worker, list[str]]:
    """The seed job (a master and a worker of 8 A800 each) created on AIHC by the worker and
    Running there with its two pods; (the job, the worker, the pods' names)."""
    spec = seed_spec(roles=[S.Role("master", 1, A800, 8), S.Role("worker", 1, A800, 8)])
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()), backend="aihc")
    worker = Worker()
    worker.dispatch_remote()
    job.refresh_from_db()
    fake.set_job_status(job.external_id, "Running")
    pods = [pod["objectMeta"]["name"] for pod in fake.jobs[job.external_id].pods]
    return job, worker, pods


def page_of(wsgi, client, job: Job) -> str:  # noqa: F811
    """The job's page as `client`'s user sees it, through the WSGI transport the API calls
    use (see tests/test_kubernetes_usage.py)."""
    with httpx.Client(
        transport=wsgi,
        base_url="http://testserver",
        cookies={"sessionid": client.cookies["sessionid"].value},
    ) as browser:
        return browser.get(reverse("job-detail", args=[job.public_id])).text


def metrics(api, job: Job, metric_type: str) -> dict[str, list[dict]]:
    found = get(
        api,
        f"/api/v1/aijobs/{job.public_id}/metrics",
        resourcePoolId=POOL,
        metricType=metric_type,
        timeStep=1,
    )
    return {pod["podName"]: pod["metrics"] for pod in found["podMetrics"]}


def test_a_running_aihc_jobs_gpu_cpu_and_memory_utilisation_shows_in_percent_on_its_page_and_api(
    fake,
    tmp_path,
    alice,
    alice_client,
    wsgi,  # noqa: F811
):
    job, worker, [master, worker_pod] = running_job(alice, fake)
    t1 = int(time.time()) - 30
    # AIHC's figures are utilisations in percent (tests/fake_aihc.py), not cores and bytes.
    fake.set_metrics(job.external_id, master, "GpuUsage", [(t1, 90.0)])
    fake.set_metrics(job.external_id, master, "CpuUsage", [(t1, 40.0)])
    fake.set_metrics(job.external_id, master, "MemoryUsage", [(t1, 20.0)])
    fake.set_metrics(job.external_id, worker_pod, "GpuUsage", [(t1, 10.0)])
    fake.set_metrics(job.external_id, worker_pod, "CpuUsage", [(t1, 5.0)])
    fake.set_metrics(job.external_id, worker_pod, "MemoryUsage", [(t1, 7.5)])
    worker.sync_remote()
    fake.set_metrics(job.external_id, master, "GpuUsage", [(t1, 90.0), (t1 + 15, 87.46)])
    fake.set_metrics(job.external_id, master, "CpuUsage", [(t1, 40.0), (t1 + 15, 12.34)])
    fake.set_metrics(job.external_id, master, "MemoryUsage", [(t1, 20.0), (t1 + 15, 33.3)])
    worker.sync_remote()  # reads t1 again: written once

    page = page_of(wsgi, alice_client, job)
    key, secret = api_key_create(owner=alice)
    api = client_for(wsgi, key.access_key_id, secret)
    gpu = metrics(api, job, "GpuUsage")
    cpu = metrics(api, job, "CpuUsage")
    memory = metrics(api, job, "MemoryUsage")
    tmp = refused(lambda: metrics(api, job, "TmpUsage"))

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    written = read_utilisation(usage_file(job.public_id, "master-0"))
    assert [(s["gpu"], s["cpu"], s["mem"]) for s in written] == [(90, 40, 20), (87.46, 12.34, 33.3)]
    table = page.split('id="usage"')[1].split("</table>")[0]
    assert [h.split("</th>")[0] for h in table.split("<th>")[1:]] == [
        "实例",
        "GPU 使用率",
        "CPU 使用率",
        "内存使用率",
    ]
    [master_row] = [row for row in table.split("</tr>") if "master-0" in row]
    assert '<td class="usage-gpu">87.5%<svg' in master_row
    assert '<td class="usage-cpu">12.3%<svg' in master_row
    assert '<td class="usage-memory">33.3%<svg' in master_row
    assert "核" not in table and "GB" not in table and "usage-tmp" not in table
    assert master_row.count('<svg class="sparkline') == 3
    assert "GPU 使用率" in master_row.split('class="usage-gpu"')[1].split("</td>")[0]
    assert 'id="usage-unavailable"' not in page
    # The console's API answers AIHC's own figures under AIHC's names: percent.
    assert gpu[master] == [{"time": t1, "value": 90.0}, {"time": t1 + 15, "value": 87.46}]
    assert cpu[master] == [{"time": t1, "value": 40.0}, {"time": t1 + 15, "value": 12.34}]
    assert memory[master] == [{"time": t1, "value": 20.0}, {"time": t1 + 15, "value": 33.3}]
    assert cpu[worker_pod] == [{"time": t1, "value": 5.0}]
    assert (tmp.status, tmp.code) == (400, "NotSupported")
    # Each read: signed (the fake verified it), every parameter sent, one call per metric.
    reads = fake.calls("DescribeJobMetrics")
    assert [(r.status, r.params["metricType"]) for r in reads] == [
        (200, "GpuUsage"),
        (200, "CpuUsage"),
        (200, "MemoryUsage"),
    ] * 2
    assert set(reads[0].params) == {
        "resourcePoolId",
        "metricType",
        "startTime",
        "endTime",
        "timeStep",
        "rateInterval",
    }
    assert reads[0].path == f"/api/v1/aijobs/{job.external_id}/metrics"

    assert job_delete(job=job)  # its samples go with it
    assert not (tmp_path / USAGE_DIR / job.public_id).exists()


def test_utilisations_of_at_most_one_are_shown_as_that_many_percent_not_rescaled(
    fake,
    alice,
    alice_client,
    wsgi,  # noqa: F811
):
    job, worker, [master, worker_pod] = running_job(alice, fake)
    when = int(time.time()) - 10
    fake.set_metrics(job.external_id, master, "GpuUsage", [(when, 0.5)])
    fake.set_metrics(job.external_id, master, "CpuUsage", [(when, 1.0)])
    fake.set_metrics(job.external_id, master, "MemoryUsage", [(when, 0.3)])
    # A pod AIHC gives no GPU figure for (no cards): said, not shown as 0%.
    fake.set_metrics(job.external_id, worker_pod, "CpuUsage", [(when, 3.0)])
    fake.set_metrics(job.external_id, worker_pod, "MemoryUsage", [(when, 4.0)])
    worker.sync_remote()

    page = page_of(wsgi, alice_client, job)
    key, secret = api_key_create(owner=alice)
    api = client_for(wsgi, key.access_key_id, secret)

    rows = page.split('id="usage"')[1].split("</tbody>")[0].split("</tr>")
    [master_row] = [row for row in rows if "master-0" in row]
    [worker_row] = [row for row in rows if "worker-0" in row]
    assert '<td class="usage-gpu">0.5%<svg' in master_row
    assert '<td class="usage-cpu">1.0%<svg' in master_row
    assert '<td class="usage-memory">0.3%<svg' in master_row
    assert "百舸 AIHC 未提供 GPU 数据" in worker_row.split('class="usage-gpu"')[1].split("</td>")[0]
    assert '<td class="usage-cpu">3.0%<svg' in worker_row
    assert metrics(api, job, "CpuUsage")[master] == [{"time": when, "value": 1.0}]
    assert metrics(api, job, "GpuUsage")[worker_pod] == []


def test_gpu_usage_is_a_metric_of_aihc_jobs_only(alice, wsgi):  # noqa: F811
    local = job_with_usage(alice, every_15_seconds(1))
    key, secret = api_key_create(owner=alice)
    api = client_for(wsgi, key.access_key_id, secret)

    error = refused(lambda: api_metrics(api, local.public_id, metricType="GpuUsage"))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert "CpuUsage, MemoryUsage, TmpUsage" in error.message and "GpuUsage" not in error.message


def test_the_worker_reads_a_jobs_metrics_at_most_once_per_interval(fake, alice, settings):
    settings.AIHC_METRICS_SECONDS = 3600
    job, worker, [master, _worker_pod] = running_job(alice, fake)

    for _ in range(3):
        worker.sync_remote()

    assert len(fake.calls("DescribeJob")) >= 3  # followed at every sync
    assert [r.params["metricType"] for r in fake.calls("DescribeJobMetrics")] == [
        "GpuUsage",
        "CpuUsage",
        "MemoryUsage",
    ]
    assert fake.calls("DescribeJobMetrics")[0].params["timeStep"] == "3600"


def test_a_metrics_read_reaches_back_to_the_last_one_when_the_jobs_syncs_were_far_apart(
    fake, alice
):
    """A read asks for the last USAGE_WINDOW (120 s). A job's syncs can be further apart (a
    slow AIHC synced a few jobs a tick, another platform not answering for 90 s a round):
    until review 36 the points in between were never read. The last read is made to look
    300 s old, as waiting that long here would take."""
    job, worker, _pods = running_job(alice, fake)
    worker.sync_remote()
    get_backend("aihc")._metrics_read[job.public_id] -= 300
    fake.requests.clear()

    worker.sync_remote()

    [read, *_others] = fake.calls("DescribeJobMetrics")
    assert int(read.params["endTime"]) - int(read.params["startTime"]) >= 300


@pytest.mark.parametrize(
    ("kind", "status", "code", "said"),
    [
        ("forbidden", 403, "AccessDenied", "Access denied (AccessDenied, HTTP 403"),
        ("not found", 404, "NotFound", "No such API (NotFound, HTTP 404"),
        ("server error", 500, "InternalError", "Internal error (InternalError, HTTP 500"),
        ("timeout", 0, "", "AIHC did not answer in time (RequestTimeout, ReadTimeout"),
    ],
)
def test_aihc_failing_to_give_metrics_leaves_the_job_running_and_the_page_says_why(
    kind,
    status,
    code,
    said,
    fake,
    alice,
    alice_client,
    settings,
    caplog,
    wsgi,  # noqa: F811
):
    settings.AIHC_READ_TIMEOUT = 0.5
    job, worker, [master, _worker_pod] = running_job(alice, fake)
    if kind == "timeout":
        fake.delay_next("DescribeJobMetrics", 1.5, times=3)
    else:
        fake.fail_next(
            "DescribeJobMetrics", status=status, code=code, message=said.split(" (")[0], times=3
        )
    fake.set_metrics(job.external_id, master, "CpuUsage", [(int(time.time()) - 5, 20.0)])
    fake.set_metrics(job.external_id, master, "MemoryUsage", [(int(time.time()) - 5, 10.0)])

    with caplog.at_level(logging.INFO, logger="jobs"):
        for _ in range(3):
            worker.sync_remote()
    failing = page_of(wsgi, alice_client, job)
    worker.sync_remote()  # AIHC answers again
    recovered = page_of(wsgi, alice_client, job)

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert not job.events.filter(type="Warning").exists()
    # One unretried call per sync (the GPU read; the rest are not asked after it failed).
    assert len(fake.calls("DescribeJobMetrics")) == 3 + 3
    logged = [r.getMessage() for r in caplog.records if "not read" in r.getMessage()]
    assert len(logged) == 1 and job.public_id in logged[0] and said.split(" (")[1] in logged[0]
    # In English, the console's Chinese aside (qa94: it read 百舸 AIHC 未及时响应).
    assert said in logged[0]
    if kind == "timeout":  # the sync ended on it: the worker's line says it in English too
        synced = [m for m in caplog.messages if m.startswith(f"syncing {job.public_id}")]
        assert synced and all(said in m for m in synced)
    assert fake.secret_key not in caplog.text and fake.access_key not in caplog.text
    assert 'id="usage-unavailable"' in failing and 'id="usage"' not in failing
    shown = failing.split('id="usage-unavailable">')[1].split("</p>")[0]
    assert "资源使用情况暂不可用" in shown and said.split(" (")[1].split(",")[0] in shown
    assert 'id="usage-unavailable"' not in recovered and 'id="usage"' in recovered


def test_metrics_already_shown_stay_and_the_page_says_they_are_not_up_to_date(
    fake,
    alice,
    alice_client,
    wsgi,  # noqa: F811
):
    job, worker, [master, _worker_pod] = running_job(alice, fake)
    fake.set_metrics(job.external_id, master, "CpuUsage", [(int(time.time()) - 5, 20.0)])
    fake.set_metrics(job.external_id, master, "MemoryUsage", [(int(time.time()) - 5, 10.0)])
    worker.sync_remote()
    fake.fail_next("DescribeJobMetrics", status=503, code="ServiceUnavailable", times=4)

    worker.sync_remote()
    page = page_of(wsgi, alice_client, job)

    assert 'id="usage"' in page
    shown = page.split('id="usage-unavailable">')[1].split("</p>")[0]
    assert "资源使用情况未及时更新" in shown and "ServiceUnavailable" in shown


# -- the client's metrics call, against the strict fake ------------------------------------


@pytest.fixture
def client(fake):
    client = AihcClient(
        endpoint=fake.url, credentials=Credentials(fake.access_key, fake.secret_key), retries=0
    )
    yield client
    client.close()


def aihc_job(fake: FakeAihc) -> tuple[str, str]:
    """A job created on AIHC directly, Running; (its id, its master pod's name)."""
    job = fake.create_external(
        POOL,
        {
            "name": "metered",
            "queue": "default",
            "jobFramework": "PyTorchJob",
            "jobSpec": {"image": "registry.example.com/x:1", "command": "true", "replicas": 1},
        },
    )
    fake.set_job_status(job.job_id, "Running")
    return job.job_id, job.pods[0]["objectMeta"]["name"]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_client_reads_one_metric_of_a_jobs_pods_in_either_api_version(fake, client, version):
    job_id, pod = aihc_job(fake)
    fake.set_metrics(job_id, pod, "GpuUsage", [(1000, 50.0), (1015, 87.25), (5000, 9.0)])

    found = client.job_metrics(
        pool=POOL,
        job_id=job_id,
        metric_type="GpuUsage",
        start=1000,
        end=2000,
        step=15,
        version=version,
    )

    assert found == {pod: [(1000.0, 50.0), (1015.0, 87.25)]}
    [call] = fake.calls("DescribeJobMetrics")
    assert call.status == 200 and call.version == version


def test_the_fake_refuses_an_unknown_metric_type_a_missing_parameter_and_a_bad_signature(
    fake, client
):
    job_id, _pod = aihc_job(fake)
    read = {"pool": POOL, "job_id": job_id, "start": 1000, "end": 2000, "step": 15}

    with pytest.raises(AihcError) as unknown:
        client.job_metrics(metric_type="GpuUtil", **read)
    with pytest.raises(AihcError) as missing:
        client.request(
            "GET",
            f"/api/v1/aijobs/{job_id}/metrics",
            params=[("resourcePoolId", POOL), ("metricType", "CpuUsage")],
            idempotent=False,
        )
    forged = AihcClient(endpoint=fake.url, credentials=Credentials(fake.access_key, "wrong"))
    with pytest.raises(AihcError) as unsigned:
        forged.job_metrics(metric_type="CpuUsage", **read)
    forged.close()
    documented = client.job_metrics(metric_type="GpuTemperature", **read)

    assert documented == {_pod: []}
    assert (unknown.value.status, unknown.value.code) == (400, "InvalidParameter")
    assert "metricType 'GpuUtil' is not supported" in unknown.value.message
    assert (missing.value.status, missing.value.code) == (400, "InvalidParameter")
    assert "startTime is required" in missing.value.message
    assert (unsigned.value.status, unsigned.value.code) == (403, "AccessDenied")
