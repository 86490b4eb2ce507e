"""A Kubernetes pool's own rules seen in the wizard, clicked through as a person would."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from jobs import spec as S
from jobs.backends import get_backend
from jobs.services import jobs_submit
from tests.fake_kubernetes import FakeKubernetes, configure
from tests.test_wizard_browser import next_step, settled, start

pytestmark = pytest.mark.browser

A800 = "baidu.com/a800_80g_cgpu"
POOL = "k8s-ml"


@pytest.fixture
def cluster(settings):
    fake = FakeKubernetes().start()
    fake.add_namespace("ml")
    fake.add_node("gpu-1", {"nvidia.com/gpu": "8"})
    fake.add_node("gpu-2", {"nvidia.com/gpu": "8"})
    configure(
        settings,
        fake,
        KUBERNETES_NAMESPACES="ml",
        KUBERNETES_ACCELERATORS=f"{A800}=nvidia.com/gpu",
    )
    yield fake
    fake.stop()


def test_an_mpi_master_with_cards_over_cpu_only_workers_is_refused_on_its_cards_until_fixed(
    logged_in_page, cluster
):
    page = logged_in_page
    start(page)
    page.select_option("select[name=resource_pool]", POOL)
    page.fill("#id_name", "mpi-allreduce")
    page.check("input[name=framework][value=MPIJob]")
    next_step(page, "image")
    page.fill("#id_image", "registry.example.com/train/mpi:1.0")
    page.fill("#id_command", "mpirun -np 8 python train.py")
    next_step(page, "resources")
    # The master (the launcher) gets 4 cards; the workers none.
    page.check("#id_roles-0-use_accelerator")
    page.select_option("select[name=roles-0-accelerator_type]", A800)
    page.fill("#id_roles-0-accelerators", "4")
    page.uncheck("#id_roles-1-use_accelerator")
    settled(page)

    page.click("#wizard-next")

    cards = page.locator("#id_roles-0-accelerators")
    expect(cards).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#id_roles-0-accelerators_error")).to_have_text(
        "在 Kubernetes 上，MPI operator 给 master 的 slot 数与每台 worker 相同"
        "（slotsPerWorker）：请让 worker 使用与 master 相同的卡，或不给 master 分配卡。"
    )
    assert re.search(r"/resources/$", page.url)
    expect(cards).to_have_value("4")  # nothing typed is lost

    # Giving the workers the master's cards is what the message asks for: the step passes.
    page.check("#id_roles-1-use_accelerator")
    page.select_option("select[name=roles-1-accelerator_type]", A800)
    page.fill("#id_roles-1-accelerators", "4")
    next_step(page, "data")


def test_a_kubernetes_job_printing_the_runners_mark_gets_no_console_badge_on_its_page(
    logged_in_page, cluster, alice
):
    # No shim stamps a pod's lines: a job printing a stamp and the local runner's mark is
    # still the job's output, badged as nothing.
    [job] = jobs_submit(
        owner=alice,
        spec=S.JobSpec(
            name="forger",
            resource_pool_id=POOL,
            framework=S.PYTORCH,
            image="registry.example.com/train:1.0",
            command="python train.py",
            roles=[S.Role("master", 1, A800, 8)],
        ),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )
    k8s = get_backend("kubernetes")
    k8s.submit(job)
    job.refresh_from_db()
    [pod] = cluster.run_pods(job.external_id, namespace="ml")
    cluster.add_logs(
        pod,
        ["2026-11-30T09:00:00.000000Z \x1f[console] exited with code 0", "done"],
        namespace="ml",
    )
    k8s.sync(job)
    page = logged_in_page

    page.goto("/")  # the job list
    page.click(f'a[href="/jobs/{job.public_id}/"]')

    lines = page.locator("#log-lines .log-line")
    expect(lines).to_have_count(2, timeout=20_000)
    expect(lines.first).to_contain_text("[console] exited with code 0")
    expect(page.locator("#log-lines .log-console")).to_have_count(0)
    expect(page.locator("#log-lines .log-source")).to_have_count(0)


def test_downloading_a_log_from_a_hung_api_server_says_within_seconds_to_try_again_later(
    logged_in_page, cluster, alice, settings
):
    """The person clicks 下载日志 while the API server holds the pod's log: a page saying
    the download's bound and what to do comes in a few seconds (a download's own short reads,
    KUBERNETES_DOWNLOAD_READ_TIMEOUT), not after the worker's tries of KUBERNETES_READ_TIMEOUT."""
    settings.KUBERNETES_READ_TIMEOUT = 5
    settings.KUBERNETES_DOWNLOAD_READ_TIMEOUT = 0.3
    [job] = jobs_submit(
        owner=alice,
        spec=S.JobSpec(
            name="hung-log",
            resource_pool_id=POOL,
            framework=S.PYTORCH,
            image="registry.example.com/train:1.0",
            command="python train.py",
            roles=[S.Role("master", 1, A800, 8)],
        ),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )
    k8s = get_backend("kubernetes")
    k8s.submit(job)
    job.refresh_from_db()
    [pod] = cluster.run_pods(job.external_id, namespace="ml")
    cluster.add_logs(pod, ["epoch 1"], namespace="ml")
    k8s.sync(job)
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#log-lines .log-line")).to_have_count(1, timeout=20_000)
    cluster.stall(pod, 6.0)  # every read of the pod (its log) held past the timeouts

    page.click("#log-download")

    expect(page.locator("#log-unavailable-why")).to_contain_text(
        "下载最多等待 60 秒取得完整日志", timeout=5_000
    )
    cluster.stalled.clear()
    page.click("#back-to-job")
    expect(page.locator("#log-download")).to_be_visible()
