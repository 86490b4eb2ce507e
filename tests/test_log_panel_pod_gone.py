"""A Kubernetes or AIHC job stopping or ended whose replica's pod is gone: its log went with
the pod (a stop deletes its pods, and none is made again). Its download says so (review45);
the job page's log panel, its refresh and the admin's log view now say the same, where until
left39 they said "No output yet." as for a replica that had not started. The API's log read
keeps its answer, no lines (a 503 would tell a script to try again). Against the strict
fakes."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from jobs.actions import job_stop
from jobs.models import JobStatus
from jobs.worker import Worker
from tests import test_api as api_tests
from tests import test_log_download_hung_platform as hung_platform
from tests import test_log_download_no_log as no_log
from tests.test_api import get
from tests.test_log_download_hung_platform import running_kubernetes_job
from tests.test_sync_unanswered_reads import aihc_jobs

# The fakes, English pages, an admin's client and a signed API client (fixtures).
cluster, aihc, english = hung_platform.cluster, hung_platform.aihc, hung_platform.english
reviewer_en = no_log.reviewer_en
wsgi, alice_key, api = api_tests.wsgi, api_tests.alice_key, api_tests.api

GONE = "This replica&#x27;s pod is no longer on its platform, and its log went with it"
GONE_ZH = "该实例的 Pod 已不在平台上，其日志也随之而去"
NO_OUTPUT = "No output yet."
NO_OUTPUT_ZH = "暂无输出。"


def job_page(client: Client, job) -> str:
    answer = client.get(reverse("job-detail", args=[job.public_id]), {"replica": "master-0"})
    assert answer.status_code == 200
    return answer.content.decode()


def log_refresh(client: Client, job) -> str:
    """The log tail's htmx refresh (and a tab clicked), as the page asks it; an ended job's
    is its last answer, 286 (htmx's stop polling)."""
    answer = client.get(
        reverse("job-logs", args=[job.public_id]),
        {"replica": "master-0"},
        headers={"HX-Request": "true"},
    )
    assert answer.status_code in (200, 286)
    return answer.content.decode()


def stopped_kubernetes_job(cluster, owner):
    """Stopped, the worker's sync having seen its resource, and its pods, deleted."""
    job = running_kubernetes_job(cluster, owner)
    job.refresh_from_db()
    job_stop(job=job, actor=owner)
    Worker().sync_remote()
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert cluster.pods == {}
    return job


def test_a_stopped_kubernetes_jobs_log_panel_says_its_log_went_with_its_pods_in_both_languages(
    cluster, alice, alice_en, alice_client
):
    job = stopped_kubernetes_job(cluster, alice)

    page, refresh = job_page(alice_en, job), log_refresh(alice_en, job)
    alice_client.cookies["django_language"] = "zh-hans"
    in_chinese = log_refresh(alice_client, job)

    for shown in (page, refresh):
        assert GONE in shown
        assert NO_OUTPUT not in shown
    assert GONE_ZH in in_chinese and NO_OUTPUT_ZH not in in_chinese


def test_a_search_of_a_stopped_kubernetes_jobs_log_says_its_log_went_with_its_pods(
    cluster, alice, alice_en
):
    """Not "No output yet." under the search box either."""
    job = stopped_kubernetes_job(cluster, alice)

    answer = alice_en.get(
        reverse("job-log-search", args=[job.public_id]),
        {"replica": "master-0", "q": "step"},
        headers={"HX-Request": "true"},
    )

    assert answer.status_code == 200
    assert GONE in answer.content.decode()
    assert NO_OUTPUT not in answer.content.decode()


def test_a_stopped_kubernetes_jobs_admin_log_view_says_its_log_went_with_its_pods(
    cluster, alice, reviewer_en
):
    job = stopped_kubernetes_job(cluster, alice)

    answer = reviewer_en.get(reverse("admin:jobs_job_logs", args=[job.pk]))

    assert answer.status_code == 200
    assert GONE in answer.content.decode()


def test_a_stopping_aihc_jobs_log_panel_says_its_log_went_with_its_pod(aihc, alice, alice_en):
    [job] = aihc_jobs(alice, aihc, 1)
    Worker().sync_remote()  # its replicas, Running
    job.refresh_from_db()
    job_stop(job=job, actor=alice)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    with aihc.lock:
        aihc.jobs[job.external_id].pods.clear()

    refresh = log_refresh(alice_en, job)

    assert GONE in refresh
    assert NO_OUTPUT not in refresh


def test_a_running_kubernetes_replica_without_its_pod_yet_still_shows_no_output_yet(
    cluster, alice, alice_en
):
    """Being made again while the job runs on: it has not started, nothing went."""
    job = running_kubernetes_job(cluster, alice)
    cluster.pods.clear()

    refresh = log_refresh(alice_en, job)

    assert NO_OUTPUT in refresh
    assert GONE not in refresh


def test_the_apis_log_read_of_a_stopped_kubernetes_job_whose_pods_are_gone_answers_no_lines(
    cluster, alice, api
):
    job = stopped_kubernetes_job(cluster, alice)

    answer = get(
        api,
        f"/api/v1/aijobs/{job.public_id}/pods/master-0/logs",
        resourcePoolId=job.resource_pool,
    )

    assert answer["logs"] == []
    assert answer["podName"] == "master-0"
