"""A Delete of a local job a Stop is ending already (review63): its Stopping reason says the job
goes too once it has stopped, in the words of how it stops, and the list says when that comes.
Until then the Stop's reason stayed ("Stop requested. ... it stops once a worker runs where it
started again"), the page never said the job would be deleted, and the list said only "will be
deleted once it has stopped", not that the stop, and so the deletion, waits for a worker."""

from __future__ import annotations

import fcntl
import os
import socket

import pytest
from django.urls import reverse
from django.utils import translation

from jobs.actions import job_stop
from jobs.models import Job, JobStatus, LocalRun
from jobs.runner import TARGET_TIMED_OUT, runner_key

from .runner_helpers import runner_settings  # noqa: F401
from .test_lost_jobs import active_here, running_elsewhere

pytestmark = pytest.mark.usefixtures("runner_settings")


def _deleted(client, job: Job) -> str:
    answer = client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )
    assert answer.status_code == 200
    return answer.content.decode()


def _reason(job: Job) -> str:
    job.refresh_from_db()
    with translation.override("en"):
        return job.status_reason_shown


def test_a_delete_after_a_stop_of_a_job_the_active_worker_follows_says_the_job_then_goes(
    alice, alice_en, settings
):
    active_here()
    job = running_elsewhere(alice, runner=runner_key())
    assert job_stop(job=job, actor=alice) is True

    page = _deleted(alice_en, job)

    assert "Job local-test will be deleted once it has stopped." in page
    seconds = f"{settings.LOCAL_STOP_GRACE_SECONDS:g}"
    assert _reason(job) == (
        f"Stopping every replica (SIGTERM, SIGKILL after {seconds} s) to delete the job: it is "
        "deleted, with its logs, once it has stopped."
    )
    assert job.status == JobStatus.STOPPING
    assert LocalRun.objects.get(job=job).delete_when_stopped is True
    with translation.override("zh-hans"):
        assert "删除" in job.status_reason_shown


def test_a_delete_after_a_stop_while_no_worker_runs_says_both_wait_for_one(alice, alice_en):
    job = running_elsewhere(alice, runner=runner_key())  # no worker has ever run
    assert job_stop(job=job, actor=alice) is True

    page = _deleted(alice_en, job)

    assert (
        "Job local-test will be deleted once it has stopped. No worker (job scheduler) is "
        "running now, so nothing can stop it yet: it is stopped and deleted as soon as a worker "
        "runs again."
    ) in page
    assert _reason(job).startswith("Stop requested to delete the job. No worker (job scheduler)")
    assert job.status == JobStatus.STOPPING


def test_a_delete_after_a_stop_of_a_job_whose_run_directory_has_a_live_worker_says_it_waits(
    alice, alice_en, tmp_path
):
    run_dir = tmp_path / "old-var" / "runs"
    run_dir.mkdir(parents=True)
    (run_dir / "worker.lock").touch()
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{run_dir}")
    held = os.open(run_dir / "worker.lock", os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the worker there holds it
        assert job_stop(job=job, actor=alice) is True
        assert _reason(job).startswith("Stop requested. This job runs on another machine")

        page = _deleted(alice_en, job)
    finally:
        os.close(held)

    assert (
        "Job local-test will be deleted once it has stopped. It runs on another machine or run "
        "directory than the worker now active, which cannot reach its processes: it is stopped "
        "and deleted once a worker runs where it started again."
    ) in page
    assert _reason(job) == (
        "Stop requested to delete the job. This job runs on another machine or run directory "
        "than the worker now active, which cannot reach its processes: it is stopped, and "
        "deleted with its logs, once a worker runs where it started again. If that machine is "
        "gone for good, an administrator can mark the job as lost."
    )
    assert job.status == JobStatus.STOPPING


def test_a_delete_of_a_job_stopping_for_its_time_limit_keeps_that_reason(alice, alice_en):
    active_here()
    job = running_elsewhere(alice, runner=runner_key())
    Job.objects.filter(pk=job.pk).update(status=JobStatus.STOPPING, status_reason="Timed out.")
    LocalRun.objects.filter(job=job).update(stop_target=TARGET_TIMED_OUT)

    page = _deleted(alice_en, job)

    assert "Job local-test will be deleted once it has stopped." in page
    assert _reason(job) == "Timed out."
