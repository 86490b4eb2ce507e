"""A local job running when a backup was taken, restored into another CONSOLE_VAR_DIR on the
same machine, that finished meanwhile (qa102): the restored worker does not follow it (it
started in another run directory), and marking it as lost ends it as its replicas' exit
records, still in the folder it ran in, say: Succeeded, or Failed with the replica's exit
code, instead of Failed for being lost."""

from __future__ import annotations

import json
import socket
import time
from datetime import timedelta

import pytest
from django.utils import timezone, translation

from jobs.models import Job, JobStatus, LocalRun
from jobs.review import job_mark_lost

from .runner_helpers import runner_settings  # noqa: F401
from .test_lost_jobs import active_here, running_elsewhere

pytestmark = pytest.mark.usefixtures("runner_settings")


def ended_where_it_ran(job, run_dir, *, code: int | None) -> None:
    """The replica's files as the runner leaves them in `run_dir`: its lock, free once the
    replica ended, and its exit record (none: `code` None, a replica lost)."""
    attempt = LocalRun.objects.get(job=job).attempt
    state = run_dir / job.public_id / f"attempt-{attempt}" / "master-0"
    state.mkdir(parents=True)
    (state / "lock").touch()
    if code is not None:
        (state / "exit").write_text(json.dumps({"code": code, "time": time.time() - 60}))


@pytest.fixture
def old_run_dir(tmp_path):
    return tmp_path / "old-var" / "runs"


def test_a_job_that_succeeded_in_the_old_run_directory_is_marked_lost_succeeded(
    alice, reviewer, old_run_dir
):
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(hours=1))
    ended_where_it_ran(job, old_run_dir, code=0)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert "carol" in job.status_reason and "退出码 0" in job.status_reason
    # Its end is the one its replica recorded, a minute before it was marked.
    assert job.finished_at < timezone.now() - timedelta(seconds=30)
    assert not job.events.filter(reason="MarkedLost").exists()
    assert job.events.filter(reason="Succeeded", actor=reviewer).exists()


def test_a_job_that_failed_in_the_old_run_directory_is_marked_lost_failed_with_its_exit_code(
    alice, reviewer, old_run_dir
):
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=3)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Marked as lost by carol, and ended as it ended where it ran (another run directory "
            "on this machine): master-0 exited with code 3."
        )
    assert job.events.filter(reason="Failed", actor=reviewer).exists()


def test_a_job_without_an_exit_record_where_it_ran_is_still_marked_lost_failed(
    alice, reviewer, old_run_dir
):
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=None)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.events.filter(reason="MarkedLost").exists()


def test_a_job_restarted_where_it_ran_after_the_backup_is_marked_lost_not_ended_as_attempt_1(
    alice, reviewer, old_run_dir
):
    """Review 53: fault tolerance restarted it there as attempt 2 after the backup; attempt
    1's failure is not how the job ended."""
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=3)
    (old_run_dir / job.public_id / "attempt-2" / "master-0").mkdir(parents=True)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.events.filter(reason="MarkedLost").exists()


def test_a_run_folder_that_cannot_be_read_leaves_the_job_marked_lost_not_a_500(
    alice, reviewer, old_run_dir
):
    """Review 53: an OSError there (another owner after the restore, a read-only mount, which
    a test run as root cannot make; here a folder where the replica's lock file was: EISDIR
    as its open for writing) raised out of the admin's action."""
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    attempt = LocalRun.objects.get(job=job).attempt
    (old_run_dir / job.public_id / f"attempt-{attempt}" / "master-0" / "lock").mkdir(parents=True)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.events.filter(reason="MarkedLost").exists()
