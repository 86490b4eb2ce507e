"""Delete selected on the job list, in a browser, when the Kubernetes API server does not
answer about a job's Secret: the list says the jobs are deleted, and which Secret the worker
has still to remove (until left35 it said only "已删除 1 个任务。")."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import DeletedJob, Job

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
