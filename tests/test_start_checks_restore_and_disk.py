"""Start-up warnings for an operator (qa102): queued local jobs that already ran here (a
restored backup, which will run them again; jobs.W005), and a LOCAL_RUN_DIR with less room
than one replica's log may take (jobs.W006)."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta

import pytest
from django.core import checks
from django.utils import timezone

from jobs import logs as job_logs
from jobs.models import Job, JobEvent, JobStatus
from jobs.review import job_resubmit

from .runner_helpers import make_spec, runner_settings, submit  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")


@pytest.fixture
def run_dir(settings, tmp_path):
    settings.LOCAL_RUN_DIR = str(tmp_path / "runs")
    return tmp_path / "runs"


def queued_an_hour_ago(owner) -> Job:
    """A local job queued an hour ago, as a backup taken then holds it."""
    job = submit(owner, make_spec("true"))
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Job.objects.filter(pk=job.pk).update(created_at=an_hour_ago)
    JobEvent.objects.filter(job=job).update(created_at=an_hour_ago)
    return job


def exit_recorded(job: Job, *, minutes_ago: float) -> None:
    """The exit record the runner leaves in the job's folder, written `minutes_ago`."""
    state = job_logs.job_dir(job.public_id) / "attempt-1" / "master-0"
    state.mkdir(parents=True, exist_ok=True)
    when = time.time() - minutes_ago * 60
    (state / "exit").write_text(json.dumps({"code": 0, "time": when}))
    os.utime(state / "exit", (when, when))


def warnings(check_id: str, **options) -> list[checks.CheckMessage]:
    return [m for m in checks.run_checks(**options) if m.id == check_id]


def test_queued_jobs_that_ran_after_the_database_last_changed_them_are_said_at_start(
    alice, run_dir
):
    ran_since = queued_an_hour_ago(alice)
    exit_recorded(ran_since, minutes_ago=10)
    never_ran = queued_an_hour_ago(alice)

    [warning] = warnings("jobs.W005", databases=["default"])

    assert warning.msg.startswith(
        "1 queued local jobs have already run here (restored from a backup?): "
    )
    assert ran_since.public_id in warning.msg and never_ran.public_id not in warning.msg
    assert "they will run again" in warning.msg
    assert "stop or delete" in warning.hint
    assert warnings("jobs.W005") == []  # `manage.py check` without --database reads nothing
    assert Job.objects.filter(status=JobStatus.QUEUED).count() == 2


def test_a_job_resubmitted_after_its_folder_was_written_is_not_said_to_have_run_again(
    alice, run_dir
):
    # A launch that failed (Submission failed) can leave its folder; resubmitted, the job's
    # Resubmitted event is newer than anything in it.
    job = submit(alice, make_spec("true"))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUBMIT_FAILED)
    exit_recorded(job, minutes_ago=10)
    job.refresh_from_db()

    assert job_resubmit(job=job, actor=alice)

    assert warnings("jobs.W005", databases=["default"]) == []
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED


def test_a_log_limit_larger_than_the_run_dirs_free_space_is_said_at_start(settings, run_dir):
    from jobs.checks import run_dir_smaller_than_a_log

    settings.LOCAL_LOG_MAX_MB = 1024**3  # a petabyte: more than any disk here has free
    [warning] = warnings("jobs.W006", include_deployment_checks=True)
    settings.LOCAL_LOG_MAX_MB = 1
    fits = warnings("jobs.W006", include_deployment_checks=True)

    assert warning.msg.startswith(f"The file system holding LOCAL_RUN_DIR ({run_dir}) has ")
    assert "LOCAL_LOG_MAX_MB=1073741824" in warning.msg
    assert "a file system of its own" in warning.hint
    assert fits == []
    assert run_dir_smaller_than_a_log() == []
