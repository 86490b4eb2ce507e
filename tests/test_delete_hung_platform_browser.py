"""Delete selected on the job list, in a browser, when the Kubernetes API server does not
answer about a job's Secret: the list says the jobs are deleted, and which Secret the worker
has still to remove (until left35 it said only "已删除 1 个任务。"). Stop selected when it sends
its answers a few bytes at a time: the jobs are Stopping within the page's short tries."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from jobs.models import DeletedJob, Job, JobStatus

from .test_delete_hung_platform import cluster, job_with_a_secret  # noqa: F401

pytestmark = pytest.mark.browser


def test_a_person_deleting_selected_jobs_is_told_the_secret_left_for_the_worker(
    logged_in_page,
    alice,
    cluster,  # noqa: F811
):
    job = job_with_a_secret(alice, cluster)
    cluster.delay_next("get secrets", 6.0, times=3)
    page = logged_in_page
    page.goto("/")
    page.check(f"#select-{job.public_id}")
    page.click("#bulk-delete")
    page.click("#confirm-bulk-delete")

    expect(page.locator(".alert-success")).to_contain_text("已删除 1 个任务。")
    expect(page.locator(".alert-warning")).to_have_text(
        "删除 train 的 Secret（任务的密文环境变量）时 Kubernetes 未响应：集群恢复响应后，"
        "任务调度进程（worker）会将其删除。"
    )
    assert not Job.objects.filter(pk=job.pk).exists()
    assert DeletedJob.objects.get(public_id=job.public_id).secret_left


def test_a_person_stopping_selected_jobs_whose_answers_trickle_in_sees_them_stopping_quickly(
    logged_in_page,
    alice,
    cluster,  # noqa: F811
    settings,
):
    """Review 46: the API server sending each delete's answer a few bytes at a time held the
    Stop (each piece within the 0.3 s read timeout, some 6 s for the whole answer, each job in
    turn). Each request is now given up at the connect and read timeouts together (0.8 s)."""
    settings.KUBERNETES_CONNECT_TIMEOUT = 0.5
    jobs = [job_with_a_secret(alice, cluster) for _ in range(2)]
    cluster.trickle_next("delete pytorchjobs", 0.2, pieces=30, times=2)
    page = logged_in_page
    page.goto("/")
    for job in jobs:
        page.check(f"#select-{job.public_id}")
    page.click("#bulk-stop")

    started = time.monotonic()
    page.click("#confirm-bulk-stop")
    expect(page.locator(".alert-success")).to_contain_text("已请求停止 2 个任务。")
    waited = time.monotonic() - started

    assert waited < 5  # two answers read whole: 11 s or more
    for job in jobs:
        expect(page.locator(f'tr[data-job="{job.public_id}"]')).to_contain_text("停止中")
        job.refresh_from_db()
        assert job.status == JobStatus.STOPPING
