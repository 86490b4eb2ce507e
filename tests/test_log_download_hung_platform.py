"""A remote job's whole-log download (the job page's 下载完整日志 / Download, the admin's) is
read from its platform while a person waits, holding one of the console's few web threads
(WEB_THREADS). Until the download's own client, it read with the worker's: three tries of
KUBERNETES_READ_TIMEOUT (91.5 s by default), four of AIHC_READ_TIMEOUT (123.5 s), each read
of the download in turn, and a platform sending a few bytes now and then held it for good.
Now each wait for the answer's next bytes is *_DOWNLOAD_READ_TIMEOUT, its reads still tried
again after a passing error, and the whole download ends within LOG_DOWNLOAD_TOTAL_SECONDS
with a page saying why. Against the strict fakes, with short timeouts."""

from __future__ import annotations

import re
import time

import pytest
from django.urls import reverse
from django.utils import translation

from jobs.worker import Worker
from tests.fake_aihc import FakeAihc
from tests.fake_aihc import configure as configure_aihc
from tests.fake_kubernetes import FakeKubernetes
from tests.fake_kubernetes import configure as configure_kubernetes
from tests.test_sync_unanswered_reads import A800, AIHC_POOL, aihc_jobs, kubernetes_jobs


@pytest.fixture(autouse=True)
def english(settings):
    settings.LANGUAGE_CODE = "en"
    with translation.override("en"):
        yield


@pytest.fixture
def cluster(settings, tmp_path):
    fake = FakeKubernetes().start()
    # The worker's read timeout is long: a download that waited on it would show.
    configure_kubernetes(
        settings,
        fake,
        KUBERNETES_READ_TIMEOUT=5,
        KUBERNETES_DOWNLOAD_READ_TIMEOUT=0.3,
        KUBERNETES_METRICS_SECONDS=0,
    )
    settings.VAR_DIR = tmp_path
    settings.WORKER_REMOTE_SYNC_SECONDS = 0
    yield fake
    fake.stop()


@pytest.fixture
def aihc(settings, tmp_path):
    fake = FakeAihc().start()
    fake.add_pool(AIHC_POOL, "训练池", queues=("default",), gpus={A800: (16, 6)}, pfs="pfs-7xWeAt")
    configure_aihc(
        settings,
        fake,
        AIHC_READ_TIMEOUT=5,
        AIHC_DOWNLOAD_READ_TIMEOUT=0.3,
        AIHC_METRICS_SECONDS=0,
    )
    settings.VAR_DIR = tmp_path
    settings.WORKER_REMOTE_SYNC_SECONDS = 0
    yield fake
    fake.stop()


def running_kubernetes_job(cluster: FakeKubernetes, owner):
    """A PyTorchJob the worker follows, Running, its master's log holding 40 lines."""
    [job] = kubernetes_jobs(owner, cluster, 1)
    Worker().sync_remote()  # its replicas
    cluster.add_logs(f"{job.external_id}-master-0", [f"step {i}" for i in range(40)])
    cluster.requests.clear()
    return job


def download(client, job, replica: str = "master-0"):
    started = time.monotonic()
    answer = client.get(reverse("job-log-download", args=[job.public_id, replica]))
    return answer, time.monotonic() - started


# -- Kubernetes ------------------------------------------------------------------------------


def test_a_download_from_a_hung_api_server_says_so_within_its_own_short_tries(
    cluster, alice, alice_en
):
    """The pod's log read gets no answer: three tries of KUBERNETES_DOWNLOAD_READ_TIMEOUT
    (0.3 s) and their 1.5 s of backoff, then a 503 page saying why and what to do; with the
    worker's client it waited three tries of KUBERNETES_READ_TIMEOUT (5 s here)."""
    job = running_kubernetes_job(cluster, alice)
    cluster.delay_next("log pods", 6.0, times=3)

    answer, waited = download(alice_en, job)

    assert answer.status_code == 503
    page = answer.content.decode()
    assert "Kubernetes did not return the logs" in page and "did not answer in time" in page
    assert "A download waits at most 60 seconds for the whole log" in page
    assert 'href="{}#logs"'.format(reverse("job-detail", args=[job.public_id])) in page
    assert len(cluster.calls("log pods")) == 3
    assert waited < 4


def test_a_download_still_tries_a_read_again_after_a_passing_error(cluster, alice, alice_en):
    job = running_kubernetes_job(cluster, alice)
    cluster.fail_next("log pods", status=500)

    answer, _waited = download(alice_en, job)

    assert answer.status_code == 200
    assert answer.getvalue().decode().splitlines()[-1].endswith("step 39")
    assert len(cluster.calls("log pods")) == 2


def test_a_download_tried_again_gives_none_of_the_lines_of_a_try_cut_off_mid_way(
    cluster, alice, alice_en
):
    """The first try stalls after a quarter of the log (its pod replaced under the same name,
    as the training operator does on a restart); the try again finds the new container
    waiting to start, with no lines yet. The download says so, as for a local replica
    waiting to start, with none of the first try's lines: until review 44 it gave the first
    try's quarter, written to the temporary file before the stall, as if it were the whole
    log (README: "never a file cut where the server stalled"), and until left37 an empty
    file."""
    job = running_kubernetes_job(cluster, alice)
    cluster.trickle_next("log pods", 1.0, pieces=4)
    cluster.fail_next(
        "log pods",
        status=400,
        reason="BadRequest",
        message=f'container "pytorch" in pod "{job.external_id}-master-0" is waiting to '
        "start: ContainerCreating",
    )

    answer, _waited = download(alice_en, job)

    assert len(cluster.calls("log pods")) == 2
    assert answer.status_code == 404
    page = answer.content.decode()
    assert "This replica has no log yet" in page
    assert "step " not in page


def test_a_download_whose_answer_stalls_mid_way_is_given_up_after_the_read_timeout(
    cluster, alice, alice_en
):
    """The headers and the first part of the log come, then 1 s without a byte (more than
    KUBERNETES_DOWNLOAD_READ_TIMEOUT, less than the worker's 5 s): each try is given up
    0.3 s into the stall, not read to its end."""
    job = running_kubernetes_job(cluster, alice)
    cluster.trickle_next("log pods", 1.0, pieces=4, times=3)

    answer, waited = download(alice_en, job)

    assert answer.status_code == 503
    assert "did not answer in time" in answer.content.decode()
    assert waited < 4  # read to the end, each try: 3 s


def test_a_download_still_coming_at_the_total_bound_is_given_up_and_says_the_log_is_too_large(
    cluster, alice, alice_en, settings
):
    """Each piece comes within the read timeout, but the whole would take 4 s (a large log on
    a slow but working link, or a trickle): the download ends at LOG_DOWNLOAD_TOTAL_SECONDS,
    whatever its tries had left. The page says the platform was still sending and the log is
    larger than comes in that time, with how much came: not that it "did not answer in time"
    with "Try again in a few minutes" (until review 42), which fails the same way every time."""
    settings.LOG_DOWNLOAD_TOTAL_SECONDS = 1
    job = running_kubernetes_job(cluster, alice)
    cluster.trickle_next("log pods", 0.2, pieces=20, times=3)

    answer, waited = download(alice_en, job)

    assert answer.status_code == 503
    page = answer.content.decode()
    assert "The Kubernetes API server was still sending it" in page
    assert re.search(r"still sending it, \d+(\.\d+)?\s\S+ in", page)
    assert "A download waits at most 1 seconds for the whole log, and this one is larger" in page
    assert "LOG_DOWNLOAD_TOTAL_SECONDS" in page
    assert "did not answer in time" not in page and "Try again in a few minutes" not in page
    assert waited < 2
    assert len(cluster.calls("log pods")) == 1  # no time left for another try


def test_the_page_of_a_log_too_large_to_download_in_time_says_so_in_chinese(
    cluster, alice, alice_client, settings
):
    settings.LANGUAGE_CODE = "zh-hans"
    settings.LOG_DOWNLOAD_TOTAL_SECONDS = 1
    job = running_kubernetes_job(cluster, alice)
    cluster.trickle_next("log pods", 0.2, pieces=20, times=3)

    with translation.override("zh-hans"):
        answer, _waited = download(alice_client, job)

    assert answer.status_code == 503
    page = answer.content.decode()
    assert "Kubernetes API server 仍在发送" in page
    assert "下载最多等待 1 秒取得完整日志，而此日志" in page


def test_the_admins_download_from_a_hung_api_server_says_so_as_quickly(
    cluster, alice, admin_client
):
    job = running_kubernetes_job(cluster, alice)
    cluster.delay_next("log pods", 6.0, times=3)

    started = time.monotonic()
    answer = admin_client.get(
        reverse("admin:jobs_job_log_download", args=[job.pk, "master-0"]),
        HTTP_ACCEPT_LANGUAGE="en",
    )

    assert answer.status_code == 503
    assert "A download waits at most 60 seconds" in answer.content.decode()
    assert time.monotonic() - started < 4


# -- AIHC ------------------------------------------------------------------------------------


def test_a_download_from_a_hung_aihc_says_so_within_its_own_short_tries(
    aihc, alice, alice_en, settings
):
    [job] = aihc_jobs(alice, aihc, 1)
    aihc.add_logs(job.external_id, "train-0-master-0", ["hello"])
    aihc.delay_next("DescribeJobLogs", 6.0, times=1 + settings.AIHC_RETRIES)

    answer, waited = download(alice_en, job)

    assert answer.status_code == 503
    page = answer.content.decode()
    assert "AIHC did not return the logs" in page and "did not answer in time" in page
    assert "A download waits at most 60 seconds" in page
    assert len(aihc.calls("DescribeJobLogs")) == 1 + settings.AIHC_RETRIES
    assert waited < 4  # with the worker's client: 4 tries of 5 s


def test_a_download_from_aihc_comes_whole_after_a_passing_error(aihc, alice, alice_en):
    [job] = aihc_jobs(alice, aihc, 1)
    aihc.add_logs(job.external_id, "train-0-master-0", ["hello", "world"])
    aihc.fail_next("DescribeJobLogs", status=503, code="ServiceUnavailable")

    answer, _waited = download(alice_en, job)

    assert answer.status_code == 200
    assert answer.getvalue().decode().splitlines()[-2:] == ["hello", "world"]
    assert len(aihc.calls("DescribeJobLogs")) == 2


def test_a_download_from_aihc_still_coming_at_the_total_bound_says_the_log_is_too_large(
    aihc, alice, alice_en, settings
):
    settings.LOG_DOWNLOAD_TOTAL_SECONDS = 1
    [job] = aihc_jobs(alice, aihc, 1)
    aihc.add_logs(job.external_id, "train-0-master-0", [f"step {i}" for i in range(40)])
    aihc.trickle_next("DescribeJobLogs", 0.2, pieces=20, times=1 + settings.AIHC_RETRIES)

    answer, waited = download(alice_en, job)

    assert answer.status_code == 503
    page = answer.content.decode()
    assert re.search(r"AIHC did not return the logs: AIHC was still sending it, \d+", page)
    assert "A download waits at most 1 seconds for the whole log, and this one is larger" in page
    assert "Try again in a few minutes" not in page
    assert waited < 2
    assert len(aihc.calls("DescribeJobLogs")) == 1


def test_the_download_page_says_in_chinese_how_long_a_download_waits(
    cluster, alice, alice_client, settings
):
    settings.LANGUAGE_CODE = "zh-hans"
    job = running_kubernetes_job(cluster, alice)
    cluster.delay_next("log pods", 6.0, times=3)

    with translation.override("zh-hans"):
        answer, _waited = download(alice_client, job)

    assert answer.status_code == 503
    assert "下载最多等待 60 秒取得完整日志" in answer.content.decode()
