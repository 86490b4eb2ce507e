"""A remote replica with no log to give: its container waiting to start (being created, or
re-created by the training operator under the same pod name), or its pod not there. Its
download (the owner's 下载日志, the admin's) says so on the page a local replica waiting to
start gets, a 404 with the way back to the job's logs; until left37 it was an empty file,
200, as if the replica had run and printed nothing. And a HEAD of a download (a link
checker's, a download manager's) answers a GET's status and headers without reading the log
from the platform: it had the whole log read, then dropped. Against the strict fakes."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from jobs.actions import job_stop
from jobs.models import JobStatus
from jobs.worker import Worker
from tests import test_log_download_hung_platform as hung_platform
from tests.fake_aihc import FakeAihc
from tests.fake_kubernetes import FakeKubernetes
from tests.test_log_download_hung_platform import running_kubernetes_job
from tests.test_sync_unanswered_reads import aihc_jobs

# The fakes with short download timeouts, English pages (fixtures).
cluster, aihc, english = hung_platform.cluster, hung_platform.aihc, hung_platform.english

NO_LOG_YET = "This replica has no log yet: it has not started writing one"
NO_LOG_YET_ZH = "该实例还没有日志"
GONE = "This replica&#x27;s pod is no longer on its platform, and its log went with it"
GONE_ZH = "该实例的 Pod 已不在平台上，其日志也随之而去"


def owners_download(client: Client, job, replica: str = "master-0"):
    return client.get(reverse("job-log-download", args=[job.public_id, replica]))


def admin_download(client: Client, job, replica: str = "master-0", *, method: str = "get"):
    return getattr(client, method)(reverse("admin:jobs_job_log_download", args=[job.pk, replica]))


@pytest.fixture
def reviewer_en(reviewer) -> Client:
    client = Client()
    client.force_login(reviewer)
    client.cookies["django_language"] = "en"
    return client


def recreated_waiting(cluster: FakeKubernetes, job) -> None:
    """The job's pods made again under the same names (the training operator's restart),
    their containers waiting to start: the API server answers a log read with its 400."""
    cluster.run_pods(job.external_id, phase="Pending")
    cluster.requests.clear()


# -- Kubernetes: a container waiting to start ----------------------------------------------


def test_a_kubernetes_replica_waiting_to_start_downloads_as_the_no_log_yet_page(
    cluster, alice, alice_en, alice_client
):
    job = running_kubernetes_job(cluster, alice)
    recreated_waiting(cluster, job)

    answer = owners_download(alice_en, job)
    alice_client.cookies["django_language"] = "zh-hans"
    in_chinese = owners_download(alice_client, job)

    assert answer.status_code == in_chinese.status_code == 404
    page = answer.content.decode()
    assert NO_LOG_YET in page
    assert 'href="{}#logs"'.format(reverse("job-detail", args=[job.public_id])) in page
    assert NO_LOG_YET_ZH in in_chinese.content.decode()
    assert len(cluster.calls("log pods")) == 2  # asked, and answered "waiting to start"


def test_a_kubernetes_replica_waiting_to_start_downloads_as_the_no_log_yet_page_in_the_admin(
    cluster, alice, reviewer_en
):
    job = running_kubernetes_job(cluster, alice)
    recreated_waiting(cluster, job)

    answer = admin_download(reviewer_en, job)

    assert answer.status_code == 404
    page = answer.content.decode()
    assert NO_LOG_YET in page
    assert f'href="{reverse("admin:jobs_job_logs", args=[job.pk])}?replica=master-0"' in page


def test_a_kubernetes_replica_without_its_pod_yet_downloads_as_the_no_log_yet_page(
    cluster, alice, alice_en, reviewer_en
):
    """The pods gone while the job runs on (being made again): no log yet, not an empty file."""
    job = running_kubernetes_job(cluster, alice)
    cluster.pods.clear()

    owners, admins = owners_download(alice_en, job), admin_download(reviewer_en, job)

    assert owners.status_code == admins.status_code == 404
    assert NO_LOG_YET in owners.content.decode() and NO_LOG_YET in admins.content.decode()
    assert cluster.calls("log pods") == []


def test_a_stopped_kubernetes_jobs_download_says_its_log_went_with_its_pods(
    cluster, alice, alice_en, reviewer_en
):
    """Stop deletes the job's resource, and its pods with it: the log is not "not yet"."""
    job = running_kubernetes_job(cluster, alice)
    job.refresh_from_db()  # Running, as the worker's sync left it
    job_stop(job=job, actor=alice)
    Worker().sync_remote()
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED

    owners, admins = owners_download(alice_en, job), admin_download(reviewer_en, job)

    assert owners.status_code == admins.status_code == 404
    assert GONE in owners.content.decode() and GONE in admins.content.decode()
    assert NO_LOG_YET not in owners.content.decode()


def test_a_stopping_kubernetes_jobs_download_says_its_log_went_with_its_pods_in_both_languages(
    cluster, alice, alice_en, alice_client, reviewer_en
):
    """Just after Stop, before the worker's sync has seen the resource gone: its pods are
    deleted and none is made again. Review45: the download said the replica was waiting to
    start, its output to show on the job's page once it began."""
    job = running_kubernetes_job(cluster, alice)
    job.refresh_from_db()
    job_stop(job=job, actor=alice)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert cluster.pods == {}

    owners, admins = owners_download(alice_en, job), admin_download(reviewer_en, job)
    alice_client.cookies["django_language"] = "zh-hans"
    in_chinese = owners_download(alice_client, job)

    assert owners.status_code == admins.status_code == in_chinese.status_code == 404
    assert GONE in owners.content.decode() and GONE in admins.content.decode()
    assert GONE_ZH in in_chinese.content.decode()
    assert NO_LOG_YET not in owners.content.decode()
    assert NO_LOG_YET_ZH not in in_chinese.content.decode()


def test_a_kubernetes_container_restarted_and_waiting_still_downloads_its_last_log(
    cluster, alice, alice_en
):
    """A container that ran and waits to restart (CrashLoopBackOff) keeps its last log: the
    API server gives it, and so does the download."""
    job = running_kubernetes_job(cluster, alice)
    cluster.run_pods(job.external_id, phase="Pending", restarts=1)

    answer = owners_download(alice_en, job)

    assert answer.status_code == 200
    assert answer.getvalue().decode().splitlines()[-1].endswith("step 39")


# -- AIHC ----------------------------------------------------------------------------------


def pending_aihc_job(aihc: FakeAihc, owner):
    """A job AIHC made, its pods listed Pending: no log yet."""
    [job] = aihc_jobs(owner, aihc, 1)
    Worker().sync_remote()  # its replicas
    aihc.set_job_status(job.external_id, "Pending")
    aihc.requests.clear()
    return job


def test_an_aihc_replica_whose_pod_is_pending_downloads_as_the_no_log_yet_page(
    aihc, alice, alice_en, reviewer_en
):
    job = pending_aihc_job(aihc, alice)

    owners, admins = owners_download(alice_en, job), admin_download(reviewer_en, job)

    assert owners.status_code == admins.status_code == 404
    assert NO_LOG_YET in owners.content.decode() and NO_LOG_YET in admins.content.decode()


def test_an_aihc_replica_aihc_lists_no_pod_of_downloads_as_the_no_log_yet_page(
    aihc, alice, alice_en, reviewer_en
):
    job = pending_aihc_job(aihc, alice)
    with aihc.lock:
        aihc.jobs[job.external_id].pods.clear()

    owners, admins = owners_download(alice_en, job), admin_download(reviewer_en, job)

    assert owners.status_code == admins.status_code == 404
    assert NO_LOG_YET in owners.content.decode() and NO_LOG_YET in admins.content.decode()
    assert aihc.calls("DescribeJobLogs") == []


def test_a_stopping_aihc_jobs_replica_aihc_lists_no_pod_of_says_its_log_went_with_it(
    aihc, alice, alice_en
):
    """Stopping until AIHC reports the job stopped; its pods gone meanwhile do not start."""
    [job] = aihc_jobs(alice, aihc, 1)
    Worker().sync_remote()  # its replicas, Running
    job.refresh_from_db()
    job_stop(job=job, actor=alice)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    with aihc.lock:
        aihc.jobs[job.external_id].pods.clear()

    answer = owners_download(alice_en, job)

    assert answer.status_code == 404
    assert GONE in answer.content.decode()
    assert NO_LOG_YET not in answer.content.decode()


def test_an_aihc_replica_running_with_lines_still_downloads_them(aihc, alice, alice_en):
    [job] = aihc_jobs(alice, aihc, 1)
    Worker().sync_remote()
    pod = f"{job.name}-master-0"
    aihc.add_logs(job.external_id, pod, ["epoch 1", "epoch 2"])

    answer = owners_download(alice_en, job)

    assert answer.status_code == 200
    assert answer.getvalue().decode().splitlines() == ["epoch 1", "epoch 2"]


# -- HEAD ----------------------------------------------------------------------------------


def test_a_head_of_a_kubernetes_download_answers_as_a_get_without_reading_the_log(
    cluster, alice, alice_en, reviewer_en
):
    """A link checker's HEAD had the API server send the whole log, read into a temporary
    file, masked a line at a time, and dropped."""
    job = running_kubernetes_job(cluster, alice)
    url = reverse("job-log-download", args=[job.public_id, "master-0"])

    head, admins_head = alice_en.head(url), admin_download(reviewer_en, job, method="head")
    assert cluster.calls("log pods") == []
    get, admins_get = alice_en.get(url), admin_download(reviewer_en, job)

    assert head.status_code == get.status_code == 200
    assert admins_head.status_code == admins_get.status_code == 200
    for asked, given in ((head, get), (admins_head, admins_get)):
        assert asked["Content-Type"] == given["Content-Type"] == "text/plain; charset=utf-8"
        assert asked["Content-Disposition"] == given["Content-Disposition"]
    assert len(cluster.calls("log pods")) == 2  # the GETs'


def test_a_head_of_a_kubernetes_download_waiting_to_start_is_the_same_404_unread(
    cluster, alice, alice_en, reviewer_en
):
    job = running_kubernetes_job(cluster, alice)
    recreated_waiting(cluster, job)

    head = alice_en.head(reverse("job-log-download", args=[job.public_id, "master-0"]))
    admins_head = admin_download(reviewer_en, job, method="head")

    assert head.status_code == admins_head.status_code == 404
    assert cluster.calls("log pods") == []


def test_a_head_of_a_download_the_api_server_does_not_answer_is_the_same_503(
    cluster, alice, alice_en
):
    job = running_kubernetes_job(cluster, alice)
    cluster.fail_next("list pods", status=500, times=9)

    head = alice_en.head(reverse("job-log-download", args=[job.public_id, "master-0"]))

    assert head.status_code == 503
    assert cluster.calls("log pods") == []


def test_a_head_of_an_aihc_download_reads_no_log(aihc, alice, alice_en):
    [job] = aihc_jobs(alice, aihc, 1)
    Worker().sync_remote()
    aihc.requests.clear()

    head = alice_en.head(reverse("job-log-download", args=[job.public_id, "master-0"]))

    assert head.status_code == 200
    assert head["Content-Disposition"] == f'attachment; filename="{job.name}-master-0.log"'
    assert aihc.calls("DescribeJobLogs") == []


# -- Kubernetes: a pod the scheduler has not placed yet --------------------------------------


def unscheduled(cluster: FakeKubernetes, job) -> None:
    """The job's pods made again and waiting for a node (the cluster's cards all taken): no
    spec.nodeName, no container statuses; the API server refuses a log read with its 400
    "pod x does not have a host assigned"."""
    cluster.run_pods(job.external_id, node="")
    cluster.requests.clear()


def test_a_kubernetes_replica_not_yet_scheduled_downloads_as_the_no_log_yet_page(
    cluster, alice, alice_en, reviewer_en
):
    """Until left38 its GET was a 503 "The logs cannot be read right now: ... does not have a
    host assigned", a try-again-later for a pod that had never run, while a HEAD said 404."""
    job = running_kubernetes_job(cluster, alice)
    unscheduled(cluster, job)
    url = reverse("job-log-download", args=[job.public_id, "master-0"])

    owners, admins = alice_en.get(url), admin_download(reviewer_en, job)
    assert len(cluster.calls("log pods")) == 2  # asked, and refused: no host
    owners_head, admins_head = alice_en.head(url), admin_download(reviewer_en, job, method="head")

    assert owners.status_code == admins.status_code == 404
    assert owners_head.status_code == admins_head.status_code == 404
    for page in (owners.content.decode(), admins.content.decode()):
        assert NO_LOG_YET in page
        assert "host assigned" not in page
    assert len(cluster.calls("log pods")) == 2  # the HEADs read none


def test_a_kubernetes_replica_not_yet_scheduled_shows_no_output_yet_on_its_log_tab(
    cluster, alice, alice_en
):
    job = running_kubernetes_job(cluster, alice)
    unscheduled(cluster, job)

    tab = alice_en.get(
        reverse("job-logs", args=[job.public_id]),
        {"replica": "master-0"},
        headers={"HX-Request": "true", "HX-Target": "log-tail"},
    )

    assert tab.status_code == 200
    assert "No output yet" in tab.content.decode()
    assert "did not return the logs" not in tab.content.decode()
    assert len(cluster.calls("log pods")) == 1


def test_the_fake_api_server_refuses_an_unscheduled_pods_log_as_kubernetes_does(cluster, alice):
    """The strict fake answers as a real API server does for a pod with no node (its
    LogLocation: no kubelet to ask), so the console is tested against that answer."""
    from jobs.kubernetes.client import KubeClient, KubeError

    job = running_kubernetes_job(cluster, alice)
    [pod, *_workers] = cluster.run_pods(job.external_id, node="")
    client = KubeClient(server=cluster.url, token=cluster.token)

    with pytest.raises(KubeError) as refused:
        client.pod_log("default", pod, container="pytorch")

    assert (refused.value.status, refused.value.reason) == (400, "BadRequest")
    assert refused.value.message == f"pod {pod} does not have a host assigned"
