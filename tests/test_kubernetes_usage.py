"""What a Kubernetes job's pods use, sampled by the worker from the Metrics API (metrics-server)
for the job page and the API's job metrics, against the strict fake API server."""

from __future__ import annotations

import logging
import uuid

import httpx
import pytest
from django.urls import reverse

from jobs import spec as S
from jobs.actions import job_delete, job_stop
from jobs.api_keys import api_key_create
from jobs.backends.kubernetes import USAGE_DIR, usage_file, usage_sample
from jobs.models import Job, JobStatus
from jobs.services import jobs_submit
from jobs.shim import read_usage
from jobs.worker import Worker
from tests.fake_kubernetes import FakeKubernetes, configure
from tests.test_api import client_for, get, refused, wsgi  # noqa: F401

POOL = "k8s-ml"
GIB = 1024**3
T1, T2 = "2031-01-01T10:00:00Z", "2031-01-01T10:00:15Z"
T1_UNIX = 1925028000  # T1 in unix seconds


def cluster(settings, tmp_path, **options) -> FakeKubernetes:
    fake = FakeKubernetes(**options).start()
    fake.add_namespace("ml")
    configure(settings, fake, KUBERNETES_NAMESPACES="ml", KUBERNETES_METRICS_SECONDS=0)
    settings.VAR_DIR = tmp_path
    return fake


@pytest.fixture
def fake(settings, tmp_path):
    fake = cluster(settings, tmp_path)
    yield fake
    fake.stop()


def running_job(owner, fake: FakeKubernetes) -> tuple[Job, Worker, list[str]]:
    """A PyTorchJob of a master (4 cores, 8 GB) and a worker, created by the worker, Running
    with its two pods; (the job, the worker, the pods' names)."""
    spec = S.JobSpec(
        name="llm-train",
        resource_pool_id=POOL,
        framework=S.PYTORCH,
        image="registry.example.com/train:1.0",
        command="python train.py",
        roles=[S.Role("master", 1, cpu=4, memory_gb=8), S.Role("worker", 1)],
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()), backend="kubernetes")
    worker = Worker()
    worker.dispatch_remote()
    job.refresh_from_db()
    fake.set_conditions(job.external_id, ("Running", "PyTorchJob is running."), namespace="ml")
    pods = fake.run_pods(job.external_id, namespace="ml")
    return job, worker, pods


def page_of(wsgi, client, job: Job) -> str:  # noqa: F811
    """The job's page as `client`'s user sees it, through the same WSGI transport as the API
    calls (Django's test client would connect again the signals that close the test's
    database connection, which the `wsgi` fixture disconnected)."""
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


def test_a_kubernetes_job_followed_by_the_worker_shows_its_pods_usage_on_its_page_and_api(
    fake,
    tmp_path,
    alice,
    alice_client,
    wsgi,  # noqa: F811
):
    job, worker, [master, worker_pod] = running_job(alice, fake)
    fake.set_usage(master, cpu="1500m", memory="2Gi", namespace="ml", stamp=T1)
    fake.set_usage(worker_pod, cpu="0", memory="512Ki", namespace="ml", stamp=T1)
    worker.sync_remote()
    fake.set_usage(master, cpu="250000000n", memory="3Gi", namespace="ml", stamp=T2)
    worker.sync_remote()
    worker.sync_remote()  # metrics-server has not scraped again: nothing new to write

    page = page_of(wsgi, alice_client, job)
    key, secret = api_key_create(owner=alice)
    api = client_for(wsgi, key.access_key_id, secret)
    cpu = metrics(api, job, "CpuUsage")
    memory = metrics(api, job, "MemoryUsage")
    tmp = refused(lambda: metrics(api, job, "TmpUsage"))

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert [s["cpu"] for s in read_usage(usage_file(job.public_id, "master-0"))] == [1.5, 0.25]
    rows = page.split('id="usage"')[1].split("</tbody>")[0].split("</tr>")
    [master_row] = [row for row in rows if "master-0" in row]
    assert '<td class="usage-cpu">0.25 / 4 核<svg' in master_row  # of the role's cores
    assert '<td class="usage-memory">3.0\xa0GiB / 8.0\xa0GiB<svg' in master_row
    assert master_row.count('<svg class="sparkline') == 2  # CPU and memory, no /tmp
    assert '<span aria-hidden="true">—</span>' in master_row.split('class="usage-tmp"')[1]
    assert cpu["llm-train-master-0"] == [
        {"time": T1_UNIX, "value": 1.5},
        {"time": T1_UNIX + 15, "value": 0.25},
    ]
    assert memory["llm-train-master-0"] == [
        {"time": T1_UNIX, "value": 2 * GIB},
        {"time": T1_UNIX + 15, "value": 3 * GIB},
    ]
    assert cpu["llm-train-worker-0"] == [{"time": T1_UNIX, "value": 0.0}]
    assert memory["llm-train-worker-0"] == [{"time": T1_UNIX, "value": 512 * 1024}]
    assert (tmp.status, tmp.code) == (400, "NotSupported")
    [listed] = fake.calls("list pods.metrics.k8s.io")[:1]
    assert listed.path == "/apis/metrics.k8s.io/v1beta1/namespaces/ml/pods"
    assert listed.param("labelSelector") == "ai-job-console/job-id"

    # Stopped, its history stays; deleted, it goes.
    job_stop(job=job)
    worker.sync_remote()
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert len(metrics(api, job, "CpuUsage")["llm-train-master-0"]) == 2
    assert job_delete(job=job)
    assert not (tmp_path / USAGE_DIR / job.public_id).exists()


@pytest.mark.parametrize("cluster_has", ["no metrics-server", "no RBAC for it"])
def test_a_cluster_whose_metrics_cannot_be_read_shows_no_usage_and_the_worker_says_so_once(
    cluster_has,
    settings,
    tmp_path,
    alice,
    alice_client,
    caplog,
    wsgi,  # noqa: F811
):
    fake = cluster(settings, tmp_path, metrics_server=cluster_has != "no metrics-server")
    if cluster_has == "no RBAC for it":
        fake.forbid("list", "pods.metrics.k8s.io")
    try:
        job, worker, [master, _worker_pod] = running_job(alice, fake)
        fake.set_usage(master, cpu="1", memory="1Gi", namespace="ml")
        with caplog.at_level(logging.WARNING, logger="jobs.kubernetes"):
            for _ in range(3):
                worker.sync_remote()
    finally:
        fake.stop()

    page = page_of(wsgi, alice_client, job)
    key, secret = api_key_create(owner=alice)
    cpu = metrics(client_for(wsgi, key.access_key_id, secret), job, "CpuUsage")

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    if cluster_has == "no RBAC for it":  # asked at each sync (it may be granted), said once
        assert len(fake.calls("list pods.metrics.k8s.io")) == 3
    said = [r.getMessage() for r in caplog.records if "show no resource usage" in r.getMessage()]
    assert len(said) == 1
    if cluster_has == "no RBAC for it":
        assert "may not list pods.metrics.k8s.io in ml" in said[0]
        assert 'cannot list resource "pods" in API group "metrics.k8s.io"' in said[0]
    else:
        assert "Metrics API (metrics-server) is not served in ml" in said[0]
    assert 'id="usage"' not in page
    assert cpu == {"llm-train-master-0": [], "llm-train-worker-0": []}
    assert not (tmp_path / USAGE_DIR).exists()


def test_a_pod_metrics_reads_as_one_sample_of_its_containers_cpu_and_memory_together():
    pod = {
        "timestamp": T1,
        "window": "1m0.5s",
        "containers": [
            {"name": "pytorch", "usage": {"cpu": "250m", "memory": "123Ki"}},
            {"name": "sidecar", "usage": {"cpu": "12345n", "memory": "1Gi"}},
            {"name": "idle", "usage": {"cpu": "1", "memory": "0"}},
        ],
    }

    assert usage_sample(pod, window=15) == {
        "t": T1_UNIX,
        "s": 60.5,
        "cpu": 1.25,
        "mem": 123 * 1024 + GIB,
        "tmp": 0,
    }
    assert usage_sample({**pod, "window": "soon"}, window=15)["s"] == 15
    assert usage_sample({**pod, "timestamp": "yesterday"}, window=15) is None
    bad = {**pod, "containers": [{"name": "x", "usage": {"cpu": "lots", "memory": "1Gi"}}]}
    assert usage_sample(bad, window=15) is None
