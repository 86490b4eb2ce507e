"""A local job running when a backup was taken, restored into another CONSOLE_VAR_DIR on the
same machine, that finished meanwhile (qa102): the restored worker does not follow it (it
started in another run directory), and marking it as lost ends it as its replicas' exit
records, still in the folder it ran in, say: Succeeded, or Failed with the replica's exit
code, instead of Failed for being lost. The worker ends it so itself once no worker runs in
that folder (fix116: jobs.runner.end_jobs_ended_where_they_ran)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone, translation

from jobs import spec as S
from jobs.actions import job_stop
from jobs.health import worker_stopped
from jobs.models import DeletedJob, EventType, Job, JobReplica, JobStatus, LocalRun
from jobs.review import job_mark_lost
from jobs.runner import (
    OTHER_RUN_DIR_LOOK_SECONDS,
    TARGET_FAILED,
    TARGET_RESTART,
    TARGET_SUCCEEDED,
    read_state,
)
from jobs.worker import Worker

from .conftest import run_queued_tasks
from .runner_helpers import (
    CARD,
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    printed_as_pid_1,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    submit,
)
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


def a_minute_on(worker: Worker) -> None:
    """The worker's last look at each other run directory moved a minute back: it looks at
    one only once a minute (OTHER_RUN_DIR_LOOK_SECONDS), and its next tick looks again."""
    for run_dir in worker.other_run_dirs_looked_at:
        worker.other_run_dirs_looked_at[run_dir] -= OTHER_RUN_DIR_LOOK_SECONDS


def left_by_its_worker(run_dir) -> None:
    """The lock file a worker takes in its run directory before anything else
    (jobs.worker.take_worker_lock), as it leaves it when it stops."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "worker.lock").touch()


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
    # Its replica's row says so too (it showed Running, without an exit code, until fix116).
    assert [(r.status, r.exit_code) for r in job.replicas.all()] == [("failed", 3)]


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


# -- the worker ends it itself ------------------------------------------------------------


def test_the_worker_ends_a_job_that_succeeded_where_no_worker_runs_now_and_alerts_once(
    alice, old_run_dir, mailoutbox
):
    alert = S.AlertConfig(items=["jobSucceed"], emails=["alice@example.com"], webhooks=[])
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}", alert=alert)
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(hours=1))
    ended_where_it_ran(job, old_run_dir, code=0)
    left_by_its_worker(old_run_dir)
    worker = Worker()

    worker.tick()
    worker.tick()
    run_queued_tasks()

    [mail] = mailoutbox
    assert mail.subject == "[AI 训练任务控制台] local-test 运行成功"
    assert "那里现在没有任务调度进程（worker）运行" in mail.body
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.status_reason == (
        "已按其运行处（本机上的另一个运行目录，那里现在没有任务调度进程（worker）运行）的记录结束：所有实例均已"
        "退出（退出码 0）。"
    )
    # Its end is the one its replica recorded, a minute before the worker looked.
    assert job.finished_at < timezone.now() - timedelta(seconds=30)
    [event] = job.events.filter(reason="Succeeded")
    assert event.actor is None
    [replica] = job.replicas.all()
    assert (replica.status, replica.exit_code) == ("succeeded", 0)
    assert replica.finished_at < timezone.now() - timedelta(seconds=30)


def test_the_worker_ends_a_job_that_failed_where_no_worker_runs_now_with_its_exit_code(
    alice, old_run_dir
):
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=3)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Ended as it ended where it ran (another run directory on this machine, where no "
            "worker runs now): master-0 exited with code 3."
        )
    assert job.events.filter(reason="Failed", actor=None).exists()
    assert [(r.status, r.exit_code) for r in job.replicas.all()] == [("failed", 3)]


def test_the_worker_leaves_a_job_whose_run_directory_has_a_live_worker_until_it_is_gone(
    alice, old_run_dir
):
    """That worker (the old console's, or one of this console standing by there) follows
    the job and ends it itself; it might restart it as a fault-tolerance attempt."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=0)
    left_by_its_worker(old_run_dir)
    worker = Worker()
    held = os.open(old_run_dir / "worker.lock", os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the worker there holds it

        worker.tick()

        job.refresh_from_db()
        assert job.status == JobStatus.RUNNING
        assert not job.events.filter(reason="Succeeded").exists()
    finally:
        os.close(held)
    a_minute_on(worker)

    worker.tick()

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED


def test_the_worker_leaves_a_job_whose_run_directory_has_no_worker_lock_to_tell_by(
    alice, old_run_dir
):
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=0)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_the_worker_leaves_a_job_whose_replica_has_no_exit_record_where_it_ran(alice, old_run_dir):
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=None)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_the_worker_leaves_a_failed_job_its_fault_tolerance_would_restart_to_its_own_worker(
    alice, old_run_dir
):
    """Its worker may only be restarting (systemd), and would start it again as attempt 2."""
    job = running_elsewhere(
        alice, runner=f"{socket.gethostname()}:{old_run_dir}", fault_tolerance=True
    )
    ended_where_it_ran(job, old_run_dir, code=3)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert not job.events.filter(reason="Failed").exists()


def test_the_worker_ends_a_job_that_ended_after_its_time_limit_timed_out_at_the_limit(
    alice, old_run_dir
):
    """As its own worker would (left25), not Succeeded; until review 54 it was left to that
    worker, or to a reviewer's Mark as lost, which ended it Succeeded."""
    job = running_elsewhere(
        alice, runner=f"{socket.gethostname()}:{old_run_dir}", timeout_minutes=10
    )
    started = timezone.now() - timedelta(hours=1)
    Job.objects.filter(pk=job.pk).update(started_at=started)
    ended_where_it_ran(job, old_run_dir, code=0)  # a minute ago: 50 minutes after the limit
    left_by_its_worker(old_run_dir)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.TIMED_OUT
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Ended as it ended where it ran (another run directory on this machine, where no "
            "worker runs now): Timed out: ran past its 10-minute limit."
        )
    assert job.finished_at == started + timedelta(minutes=10)
    assert job.events.filter(reason="TimedOut", actor=None).exists()


# -- what its own worker had decided (review 54) --------------------------------------------


def decided_by_its_worker(job, target: str, message: str = "") -> None:
    """Its worker recorded a restart or a failure and signalled the replicas (kill_at, a
    grace period after the SIGTERM) two minutes ago, then stopped before it relaunched or
    ended the job."""
    LocalRun.objects.filter(job=job).update(
        stop_target=target,
        stop_message=message,
        kill_at=timezone.now()
        - timedelta(minutes=2)
        + timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS),
    )


def test_the_worker_leaves_a_job_whose_worker_had_decided_a_restart_though_its_replicas_exited_0(
    alice, old_run_dir
):
    """A fault keyword: its worker decided the restart and sent SIGTERM, which the replicas
    caught (a checkpoint) and exited 0. Ended Succeeded until review 54."""
    job = running_elsewhere(
        alice, runner=f"{socket.gethostname()}:{old_run_dir}", fault_tolerance=True
    )
    decided_by_its_worker(job, TARGET_RESTART, "master-0 logged the fault keyword “NCCL”.")
    ended_where_it_ran(job, old_run_dir, code=0)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert not job.events.filter(reason="Succeeded").exists()


def test_the_worker_ends_a_job_whose_worker_had_decided_its_failure_failed_with_that_reason(
    alice, old_run_dir
):
    """Its worker decided it fails (a fault keyword, restarts used up) and sent SIGTERM,
    which the replica caught and exited 0: not Succeeded (until review 54 it was)."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    decided_by_its_worker(job, TARGET_FAILED, "master-0 logged the fault keyword “NCCL”.")
    ended_where_it_ran(job, old_run_dir, code=0)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Ended as it ended where it ran (another run directory on this machine, where no "
            "worker runs now): its worker there had already decided that it fails: master-0 "
            "logged the fault keyword “NCCL”."
        )
    assert job.events.filter(reason="Failed", actor=None).exists()


def test_a_job_whose_worker_had_decided_a_restart_is_marked_lost_failed_as_lost(
    alice, reviewer, old_run_dir
):
    active_here()
    job = running_elsewhere(
        alice, runner=f"{socket.gethostname()}:{old_run_dir}", fault_tolerance=True
    )
    decided_by_its_worker(job, TARGET_RESTART, "master-0 logged the fault keyword “NCCL”.")
    ended_where_it_ran(job, old_run_dir, code=0)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.events.filter(reason="MarkedLost").exists()
    assert not job.events.filter(reason="Succeeded").exists()


def test_a_job_whose_worker_had_decided_its_failure_is_marked_lost_failed_with_that_reason(
    alice, reviewer, old_run_dir
):
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    decided_by_its_worker(job, TARGET_FAILED, "master-0 logged the fault keyword “NCCL”.")
    ended_where_it_ran(job, old_run_dir, code=0)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Marked as lost by carol, and ended as it ended where it ran (another run directory "
            "on this machine): its worker there had already decided that it fails: master-0 "
            "logged the fault keyword “NCCL”."
        )
    assert job.events.filter(reason="Failed", actor=reviewer).exists()


def test_a_job_that_ended_after_its_time_limit_is_marked_lost_timed_out_at_the_limit(
    alice, reviewer, old_run_dir
):
    """README: a reviewer can mark such a job as lost; until review 54 it ended Succeeded."""
    active_here()
    job = running_elsewhere(
        alice, runner=f"{socket.gethostname()}:{old_run_dir}", timeout_minutes=10
    )
    started = timezone.now() - timedelta(hours=1)
    Job.objects.filter(pk=job.pk).update(started_at=started)
    ended_where_it_ran(job, old_run_dir, code=0)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.TIMED_OUT
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Marked as lost by carol, and ended as it ended where it ran (another run directory "
            "on this machine): Timed out: ran past its 10-minute limit."
        )
    assert job.finished_at == started + timedelta(minutes=10)
    assert job.events.filter(reason="TimedOut", actor=reviewer).exists()


def test_a_job_that_failed_after_its_time_limit_is_marked_lost_timed_out_not_failed(
    alice, reviewer, old_run_dir
):
    """As supervise's left25 rule: its time limit came before the failure."""
    active_here()
    job = running_elsewhere(
        alice, runner=f"{socket.gethostname()}:{old_run_dir}", timeout_minutes=10
    )
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(hours=1))
    ended_where_it_ran(job, old_run_dir, code=3)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.TIMED_OUT


# -- reading the records --------------------------------------------------------------------


def test_a_reader_of_the_replica_lock_at_the_same_moment_does_not_make_mark_as_lost_see_it_alive(
    alice, reviewer, old_run_dir
):
    """Review 54: each reader took the replica's lock exclusively for a moment, and so saw
    the other as the replica, alive: Mark as lost took the plain path, Failed."""
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=0)
    lock = old_run_dir / job.public_id / "attempt-1" / "master-0" / "lock"
    other_reader = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(other_reader, fcntl.LOCK_SH | fcntl.LOCK_NB)  # as a reader holds it now

        assert job_mark_lost(job=job, reviewer=reviewer) is True
    finally:
        os.close(other_reader)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED


def test_a_replica_whose_shim_holds_its_lock_is_alive_and_the_job_is_marked_lost_as_lost(
    alice, reviewer, old_run_dir
):
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=0)
    lock = old_run_dir / job.public_id / "attempt-1" / "master-0" / "lock"
    shim = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(shim, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the shim holds it

        assert job_mark_lost(job=job, reviewer=reviewer) is True
    finally:
        os.close(shim)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.events.filter(reason="MarkedLost").exists()


def exited_where_it_ran(job, run_dir, label: str, *, code: int, seconds_ago: float) -> None:
    state = run_dir / job.public_id / "attempt-1" / label
    state.mkdir(parents=True)
    (state / "lock").touch()
    (state / "exit").write_text(json.dumps({"code": code, "time": time.time() - seconds_ago}))


def test_the_failure_named_is_the_earliest_not_the_first_replica_in_the_table(alice, old_run_dir):
    """As supervise names it (QA 44): worker-0 failed first, master-0 of it a minute later."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    JobReplica.objects.create(job=job, role="worker", index=0, status="running")
    exited_where_it_ran(job, old_run_dir, "master-0", code=1, seconds_ago=60)
    exited_where_it_ran(job, old_run_dir, "worker-0", code=3, seconds_ago=120)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.status_reason.endswith("worker-0 退出，退出码 3。"), job.status_reason


def test_a_failure_writing_to_a_read_only_mount_says_so_from_the_log_where_it_ran(
    alice, old_run_dir
):
    """As supervise says it (the log read where the job ran, not this run directory's)."""
    job = running_elsewhere(
        alice,
        runner=f"{socket.gethostname()}:{old_run_dir}",
        datasources=[S.Datasource("hostpath", "work", mount_path="/data", read_only=True)],
    )
    ended_where_it_ran(job, old_run_dir, code=1)
    (old_run_dir / job.public_id / "logs").mkdir()
    (old_run_dir / job.public_id / "logs" / "master-0.log").write_text(
        "2026-12-07T10:00:00+00:00 OSError: [Errno 30] Read-only file system: '/data/out'\n"
    )
    left_by_its_worker(old_run_dir)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert job.status_reason_shown.endswith(
            "master-0 exited with code 1: it could not write to /data, which the job mounts "
            "read-only."
        ), job.status_reason_shown


def test_the_parameter_server_its_worker_stopped_reads_stopped_on_a_succeeded_tensorflow_job(
    alice, old_run_dir
):
    """Its worker decided the success on the chief's exit 0 and stopped the parameter
    server (143), then stopped itself; the ps row read Failed with 143."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    Job.objects.filter(pk=job.pk).update(framework=S.TENSORFLOW)
    JobReplica.objects.filter(job=job).update(role="chief")
    JobReplica.objects.create(job=job, role="ps", index=0, status="running")
    decided_by_its_worker(job, TARGET_SUCCEEDED, "chief-0 exited with 0.")
    exited_where_it_ran(job, old_run_dir, "chief-0", code=0, seconds_ago=180)
    exited_where_it_ran(job, old_run_dir, "ps-0", code=143, seconds_ago=100)
    left_by_its_worker(old_run_dir)
    job.refresh_from_db()

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    rows = {(r.role, r.status, r.exit_code) for r in job.replicas.all()}
    assert rows == {("chief", "succeeded", 0), ("ps", "stopped", 143)}


# -- what the worker does besides --------------------------------------------------------------


def test_the_worker_removes_the_scratch_folders_of_a_job_it_ended_in_the_old_run_directory(
    alice, old_run_dir
):
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=0)
    attempt = old_run_dir / job.public_id / "attempt-1"
    (attempt / "master-0" / "tmp").mkdir()
    (attempt / "master-0" / "tmp" / "checkpoint.pt").write_bytes(b"x" * 1024)
    (old_run_dir / job.public_id / "logs").mkdir()
    (old_run_dir / job.public_id / "logs" / "master-0.log").write_text("done\n")
    left_by_its_worker(old_run_dir)

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert not (attempt / "master-0" / "tmp").exists()
    assert (old_run_dir / job.public_id / "logs" / "master-0.log").read_text() == "done\n"


def test_a_job_whose_records_the_database_cannot_hold_does_not_keep_the_worker_from_the_next(
    alice, old_run_dir, caplog
):
    """Review 54: one candidate's exception ended the whole pass, every tick. Here an exit
    code past what the database's integer holds (the newer job, looked at first)."""
    older = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(older, old_run_dir, code=0)
    newer = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(newer, old_run_dir, code=2**64)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    older.refresh_from_db()
    newer.refresh_from_db()
    assert (older.status, newer.status) == (JobStatus.SUCCEEDED, JobStatus.RUNNING)
    assert f"{newer.public_id}: ending it as it ended where it ran failed" in caplog.text


# -- replicas that wait for a worker to end them (fix127) -------------------------------------
# An MPI job's workers' agents end once a worker has seen the launcher end, a TensorFlow job's
# parameter servers once a worker stops them: with no worker where they run, they never exit,
# and the job stayed Running until a reviewer marked it as lost (Failed). Real replicas,
# started by a worker in the run directory that is then left (its worker gone), the worker
# now running in another.


def wait_for(condition, *, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def exited_there(run_dir, job, label: str) -> bool:
    return read_state(run_dir / job.public_id / "attempt-1" / label).phase == "exited"


def serving(run_dir, job, label: str) -> bool:
    """Whether the MPI agent of the worker `label` serves (jobs/mpi_agent.py)."""
    return (run_dir / job.public_id / "attempt-1" / label / "tmp" / ".mpi" / "agent.sock").exists()


def left_running(job, settings, tmp_path):
    """The job's replicas started by a worker in the run directory LOCAL_RUN_DIR names, that
    worker gone (its worker.lock left as it leaves it), and LOCAL_RUN_DIR another: as after a
    backup restored into another CONSOLE_VAR_DIR, or a worker restarted with another run
    directory. Returns the old run directory and the worker running in the new one."""
    first = Worker()
    run_until(
        first,
        lambda: job.replicas.filter(status="running").count() == job.replicas.count(),
        timeout=60,
        what="every replica running",
    )
    worker_stopped(worker=first.identity)
    old = Path(settings.LOCAL_RUN_DIR)
    left_by_its_worker(old)
    settings.LOCAL_RUN_DIR = tmp_path / "new-var" / "runs"
    return old, Worker()


MPI_ROLES = [S.Role("master", 1), S.Role("worker", 2, CARD, 1)]


@pytest.mark.skipif(
    shutil.which("mpiexec.hydra") is None, reason="needs MPICH (apt-get install mpich)"
)
def test_the_worker_ends_an_mpi_job_whose_launcher_exited_0_telling_its_agents_as_a_worker_would(
    alice, settings, tmp_path
):
    ranks = f"mpiexec.hydra sh -c '{UNTIL_THE_GATE_OPENS}; echo rank $PMI_RANK done'"
    job = submit(alice, make_spec(ranks, framework=S.MPI, roles=MPI_ROLES))
    old, worker = left_running(job, settings, tmp_path)

    worker.tick()  # the launcher still runs there: nothing is decided, nothing told

    done = old / job.public_id / "attempt-1" / "mpi" / "launcher" / "done"
    assert not done.exists()
    open_gate(settings)
    wait_for(lambda: exited_there(old, job, "master-0"), what="the launcher's exit")
    a_minute_on(worker)

    worker.tick()  # the agents are told, as a worker there tells them

    wait_for(
        lambda: exited_there(old, job, "worker-0") and exited_there(old, job, "worker-1"),
        what="the agents' exit",
    )
    a_minute_on(worker)

    worker.tick()

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        assert job.status_reason_shown.endswith("all replicas exited with code 0.")
    rows = {(r.role, r.index, r.status, r.exit_code) for r in job.replicas.all()}
    assert rows == {
        ("master", 0, "succeeded", 0),
        ("worker", 0, "succeeded", 0),
        ("worker", 1, "succeeded", 0),
    }
    # Its work ended with its launcher, not when the agents were told.
    assert job.finished_at == job.replicas.get(role="master").finished_at
    assert "rank 1 done" in (old / job.public_id / "logs" / "master-0.log").read_text()


def test_the_worker_ends_an_mpi_job_whose_launcher_failed_stopping_its_agents_as_a_worker_would(
    alice, settings, tmp_path
):
    launcher = f"{UNTIL_THE_GATE_OPENS}; exit 3"  # the workers run their agents, not this
    job = submit(alice, make_spec(launcher, framework=S.MPI, roles=MPI_ROLES))
    old, worker = left_running(job, settings, tmp_path)
    wait_for(
        lambda: serving(old, job, "worker-0") and serving(old, job, "worker-1"),
        what="the agents serving",
    )
    open_gate(settings)
    wait_for(lambda: exited_there(old, job, "master-0"), what="the launcher's exit")

    worker.tick()  # the agents are stopped (SIGTERM), as a worker there stops them

    wait_for(
        lambda: exited_there(old, job, "worker-0") and exited_there(old, job, "worker-1"),
        what="the agents' exit",
    )
    a_minute_on(worker)

    worker.tick()

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Ended as it ended where it ran (another run directory on this machine, where no "
            "worker runs now): master-0 exited with code 3."
        )
    rows = {(r.role, r.index, r.status) for r in job.replicas.all()}
    assert rows == {("master", 0, "failed"), ("worker", 0, "stopped"), ("worker", 1, "stopped")}
    assert job.replicas.get(role="master").exit_code == 3
    assert job.events.filter(reason="ReplicaFailed").count() == 1
    assert job.events.filter(reason="Failed", actor=None).count() == 1


def test_the_worker_ends_a_tensorflow_job_whose_chief_exited_0_stopping_its_parameter_server(
    alice, settings, tmp_path
):
    tag = uuid.uuid4().hex[:8]
    server = f"fix127-{tag}-ps 100000"  # in the parameter server's command line only
    command = (
        f'if [ "$AIHC_ROLE" = chief ]; then {UNTIL_THE_GATE_OPENS}; exit 0; fi; '
        f'exec -a "fix127-{tag}-$AIHC_ROLE" sleep 100000'
    )
    roles = [S.Role("chief", 1), S.Role("ps", 1)]
    job = submit(alice, make_spec(command, framework=S.TENSORFLOW, roles=roles))
    old, worker = left_running(job, settings, tmp_path)
    wait_for(lambda: processes_with(server), what="the parameter server serving")
    open_gate(settings)
    wait_for(lambda: exited_there(old, job, "chief-0"), what="the chief's exit")

    worker.tick()  # the parameter server is stopped (SIGTERM), as a worker there stops it

    wait_for(lambda: exited_there(old, job, "ps-0"), what="the parameter server's exit")
    a_minute_on(worker)

    worker.tick()

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Ended as it ended where it ran (another run directory on this machine, where no "
            "worker runs now): chief-0 exited with 0, which ends a TensorFlow job as "
            "Kubeflow's TFJob does; the replicas still running were stopped: ps-0."
        )
    rows = {(r.role, r.status) for r in job.replicas.all()}
    assert rows == {("chief", "succeeded"), ("ps", "stopped")}
    assert processes_with(server) == []
    # Its work ended with its chief, not when its parameter server was stopped.
    assert job.finished_at == job.replicas.get(role="chief").finished_at
    assert job.events.filter(reason="Succeeding").count() == 1


def test_a_parameter_server_that_ignores_sigterm_is_killed_at_a_look_past_the_grace_137(
    alice, settings, tmp_path
):
    tag = uuid.uuid4().hex[:8]
    server = f"fix127-{tag}-ps 100000"  # in the parameter server's command line only
    command = (
        f'if [ "$AIHC_ROLE" = chief ]; then {UNTIL_THE_GATE_OPENS}; exit 0; fi; '
        f"trap '' TERM; exec -a \"fix127-{tag}-$AIHC_ROLE\" sleep 100000"
    )
    roles = [S.Role("chief", 1), S.Role("ps", 1)]
    job = submit(alice, make_spec(command, framework=S.TENSORFLOW, roles=roles))
    old, worker = left_running(job, settings, tmp_path)
    wait_for(lambda: processes_with(server), what="the parameter server ignoring SIGTERM")
    open_gate(settings)
    wait_for(lambda: exited_there(old, job, "chief-0"), what="the chief's exit")
    worker.tick()  # SIGTERM, which it ignores
    run = LocalRun.objects.get(job=job)
    wait_for(lambda: timezone.now() >= run.kill_at, what="the grace to pass")
    a_minute_on(worker)

    worker.tick()  # SIGKILL

    assert exited_there(old, job, "ps-0")
    a_minute_on(worker)
    worker.tick()
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    rows = {(r.role, r.status, r.exit_code) for r in job.replicas.all()}
    assert rows == {("chief", "succeeded", 0), ("ps", "stopped", 137)}
    assert processes_with(server) == []


# -- the records alone ------------------------------------------------------------------------


def test_a_marked_lost_mpi_job_ended_when_its_launcher_did_not_when_its_agents_were_told(
    alice, reviewer, old_run_dir
):
    """As supervise's _work_ended (review 24): its agents end only once told."""
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(hours=1))
    JobReplica.objects.create(job=job, role="worker", index=0, status="running")
    exited_where_it_ran(job, old_run_dir, "master-0", code=0, seconds_ago=600)
    exited_where_it_ran(job, old_run_dir, "worker-0", code=0, seconds_ago=60)
    (old_run_dir / job.public_id / "attempt-1" / "mpi" / "launcher").mkdir(parents=True)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.finished_at < timezone.now() - timedelta(minutes=9)


def test_a_tensorflow_job_whose_worker_stopped_its_parameter_server_is_marked_lost_so_saying(
    alice, reviewer, old_run_dir
):
    """Not "all replicas exited with code 0": the parameter server exited 143, stopped."""
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    Job.objects.filter(pk=job.pk).update(framework=S.TENSORFLOW)
    JobReplica.objects.filter(job=job).update(role="chief")
    JobReplica.objects.create(job=job, role="ps", index=0, status="running")
    decided_by_its_worker(job, TARGET_SUCCEEDED, "chief-0 exited with 0.")
    exited_where_it_ran(job, old_run_dir, "chief-0", code=0, seconds_ago=180)
    exited_where_it_ran(job, old_run_dir, "ps-0", code=143, seconds_ago=100)
    job.refresh_from_db()

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Marked as lost by carol, and ended as it ended where it ran (another run directory "
            "on this machine): chief-0 exited with 0, which ends a TensorFlow job as Kubeflow's "
            "TFJob does; the replicas still running were stopped: ps-0."
        )


def test_a_tensorflow_worker_that_failed_before_its_chief_exited_0_fails_the_job(
    alice, old_run_dir
):
    """As supervise fails it: the failure came before the chief's exit decided the result."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    Job.objects.filter(pk=job.pk).update(framework=S.TENSORFLOW)
    JobReplica.objects.filter(job=job).update(role="chief")
    JobReplica.objects.create(job=job, role="worker", index=0, status="running")
    exited_where_it_ran(job, old_run_dir, "worker-0", code=3, seconds_ago=180)
    exited_where_it_ran(job, old_run_dir, "chief-0", code=0, seconds_ago=60)
    left_by_its_worker(old_run_dir)
    job.refresh_from_db()

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.status_reason.endswith("worker-0 退出，退出码 3。"), job.status_reason


def test_a_parameter_server_the_stop_found_still_starting_reads_stopped_not_lost(
    alice, old_run_dir
):
    """The SIGTERM came before its shim was set to record it: it ended without an exit
    record (lost), as a tear-down's stop ended it; the job ended for ever Running."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    Job.objects.filter(pk=job.pk).update(framework=S.TENSORFLOW)
    JobReplica.objects.filter(job=job).update(role="chief")
    JobReplica.objects.create(job=job, role="ps", index=0, status="running")
    exited_where_it_ran(job, old_run_dir, "chief-0", code=0, seconds_ago=180)
    ps = old_run_dir / job.public_id / "attempt-1" / "ps-0"
    ps.mkdir()
    for name in ("lock", "launched", "started"):
        (ps / name).touch()
    decided_by_its_worker(job, TARGET_SUCCEEDED, "chief-0 exited with 0.")
    left_by_its_worker(old_run_dir)
    job.refresh_from_db()

    Worker().tick()

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    rows = {(r.role, r.status) for r in job.replicas.all()}
    assert rows == {("chief", "succeeded"), ("ps", "stopped")}


def test_the_worker_looks_at_another_run_directory_once_a_minute_not_on_every_tick(
    alice, old_run_dir
):
    """One on a network file system that hangs holds up each tick that looks at it."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    ended_where_it_ran(job, old_run_dir, code=0)
    left_by_its_worker(old_run_dir)
    lock = old_run_dir / job.public_id / "attempt-1" / "master-0" / "lock"
    shim = os.open(lock, os.O_RDWR)
    worker = Worker()
    try:
        fcntl.flock(shim, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as its shim holds it: alive

        worker.tick()
    finally:
        os.close(shim)  # it ended, with its exit record

    worker.tick()

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    a_minute_on(worker)

    worker.tick()

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED


# -- review 60: a tear-down there finished, whatever comes meanwhile ---------------------------


def parameter_server_ignoring_sigterm(alice, settings, tmp_path):
    """A TensorFlow job whose chief exited 0 where it ran, its parameter server (which ignores
    SIGTERM) sent SIGTERM by the worker in the new run directory. Returns the job, the old run
    directory, that worker and the parameter server's command line."""
    tag = uuid.uuid4().hex[:8]
    server = f"fix138-{tag}-ps 100000"  # in the parameter server's command line only
    command = (
        f'if [ "$AIHC_ROLE" = chief ]; then {UNTIL_THE_GATE_OPENS}; exit 0; fi; '
        f"trap '' TERM; exec -a \"fix138-{tag}-$AIHC_ROLE\" sleep 100000"
    )
    roles = [S.Role("chief", 1), S.Role("ps", 1)]
    job = submit(alice, make_spec(command, framework=S.TENSORFLOW, roles=roles))
    old, worker = left_running(job, settings, tmp_path)
    wait_for(lambda: processes_with(server), what="the parameter server ignoring SIGTERM")
    open_gate(settings)
    wait_for(lambda: exited_there(old, job, "chief-0"), what="the chief's exit")
    worker.tick()  # SIGTERM, which it ignores
    assert LocalRun.objects.get(job=job).kill_at is not None
    return job, old, worker, server


def past_the_grace(job, worker) -> None:
    run = LocalRun.objects.get(job=job)
    wait_for(lambda: timezone.now() >= run.kill_at, what="the grace to pass")
    a_minute_on(worker)


def test_a_stop_during_the_tear_down_there_ends_the_job_and_its_parameter_server(
    alice, settings, tmp_path
):
    """A Stop in the minute after the parameter server's SIGTERM: it stayed Stopping for ever,
    saying the worker could not reach its processes. Its chief had exited 0 before the stop:
    Succeeded, as _finished_before_stop has it."""
    job, old, worker, server = parameter_server_ignoring_sigterm(alice, settings, tmp_path)

    assert job_stop(job=job, actor=alice) is True

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    with translation.override("en"):
        assert "cannot reach its processes" not in job.status_reason_shown
    past_the_grace(job, worker)
    worker.tick()  # SIGKILL
    wait_for(lambda: exited_there(old, job, "ps-0"), what="the parameter server's end")
    a_minute_on(worker)

    worker.tick()

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        assert job.status_reason_shown == "chief-0 exited with 0 before the stop reached it."
    assert processes_with(server) == []
    rows = {(r.role, r.status, r.exit_code) for r in job.replicas.all()}
    assert rows == {("chief", "succeeded", 0), ("ps", "stopped", 137)}


def test_a_stop_of_a_job_running_where_no_worker_runs_now_ends_it_stopped(
    alice, settings, tmp_path
):
    tag = uuid.uuid4().hex[:8]
    replica = f"fix138-{tag}-master 100000"  # in the replica's command line only
    job = submit(alice, make_spec(f'exec -a "fix138-{tag}-$AIHC_ROLE" sleep 100000'))
    old, worker = left_running(job, settings, tmp_path)
    wait_for(lambda: processes_with(replica), what="the replica running")
    worker.tick()  # the active worker, in the new run directory

    assert job_stop(job=job, actor=alice) is True

    with translation.override("en"):
        # Not "SIGKILL after 1 s" (fix144): the worker looks there once a minute.
        assert Job.objects.get(pk=job.pk).status_reason_shown == (
            "Stopping every replica where it ran (another run directory on this machine, where "
            "no worker runs now): the active worker sends SIGTERM at its next look there (it "
            "looks once a minute), and SIGKILL at a look 1 s or more after."
        )
    a_minute_on(worker)
    worker.tick()  # SIGTERM
    wait_for(lambda: exited_there(old, job, "master-0"), what="the replica's end")
    a_minute_on(worker)
    worker.tick()
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED, job.status_reason
    assert processes_with(replica) == []
    assert job.replicas.get().status == "stopped"


def test_a_parameter_server_marked_lost_during_its_tear_down_is_still_killed_past_the_grace(
    alice, reviewer, settings, tmp_path
):
    """Marked as lost within the grace: the job failed, its cards freed, and the parameter
    server ran for ever, no SIGKILL coming."""
    job, old, worker, server = parameter_server_ignoring_sigterm(alice, settings, tmp_path)
    assert job_mark_lost(job=job, reviewer=reviewer) is True
    past_the_grace(job, worker)

    worker.tick()

    assert processes_with(server) == []
    assert read_state(old / job.public_id / "attempt-1" / "ps-0").exit_code == 137
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED


def test_a_failure_its_worker_had_decided_with_a_replica_still_alive_is_torn_down_failed(
    alice, settings, tmp_path
):
    """Hung with its restarts used up (fix130): its worker decided the failure and sent SIGTERM,
    which the replica ignores, then was gone. It stayed Running, the hung replica on its cards."""
    tag = uuid.uuid4().hex[:8]
    replica = f"fix138-{tag}-master 100000"  # in the replica's command line only
    command = f"trap '' TERM; exec -a \"fix138-{tag}-$AIHC_ROLE\" sleep 100000"
    job = submit(alice, make_spec(command))
    old, worker = left_running(job, settings, tmp_path)
    wait_for(lambda: processes_with(replica), what="the replica ignoring SIGTERM")
    decided_by_its_worker(job, TARGET_FAILED, "master-0 hung.")

    worker.tick()  # past the grace its worker gave: SIGKILL

    wait_for(lambda: exited_there(old, job, "master-0"), what="the replica's end")
    assert processes_with(replica) == []
    a_minute_on(worker)
    worker.tick()
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Ended as it ended where it ran (another run directory on this machine, where no "
            "worker runs now): its worker there had already decided that it fails: master-0 "
            "hung."
        )


@pytest.fixture
def processes():
    """Processes a test starts, each in a session of its own (a replica's shim's, or a
    `tar` of the folder's), killed at its end."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


BLOCKS_SIGTERM = (
    "import signal, sys, time; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM]); "
    "f = len(sys.argv) > 1 and open(sys.argv[1]); print(1, flush=True); time.sleep(100000)"
)


def alive_where_it_ran(
    job, run_dir, label: str, processes, *, pid_file: bool = True
) -> subprocess.Popen:
    """A replica alive where the job ran: a process holding its lock as its shim holds it
    (blocking SIGTERM, terms_pending tells one sent), named by its `pid` file (none:
    `pid_file` False, a shim that has not written it yet)."""
    state = run_dir / job.public_id / "attempt-1" / label
    state.mkdir(parents=True, exist_ok=True)
    (state / "launched").touch()
    (state / "started").touch()
    lock = os.open(state / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    shim = subprocess.Popen(
        [sys.executable, "-c", BLOCKS_SIGTERM],
        pass_fds=[lock],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    os.close(lock)
    processes.append(shim)
    assert shim.stdout.readline()  # SIGTERM blocked
    if pid_file:
        (state / "pid").write_text(str(shim.pid))
    return shim


def terms_pending(process: subprocess.Popen) -> bool:
    """Whether a SIGTERM was sent to `process`'s group, which blocks it (so it stays pending,
    told without waiting for a death)."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    pending = int(re.search(r"^ShdPnd:\s*([0-9a-f]+)$", status, re.M).group(1), 16)
    return bool(pending & (1 << (signal.SIGTERM - 1)))


def a_tensorflow_job_whose_chief_exited_0(alice, old_run_dir, **changes):
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}", **changes)
    Job.objects.filter(pk=job.pk).update(framework=S.TENSORFLOW)
    JobReplica.objects.filter(job=job).update(role="chief")
    JobReplica.objects.create(job=job, role="ps", index=0, status="running")
    exited_where_it_ran(job, old_run_dir, "chief-0", code=0, seconds_ago=60)
    job.refresh_from_db()
    return job


def test_a_process_that_only_has_the_replica_lock_open_is_never_signalled(
    alice, old_run_dir, processes
):
    """A `tar` of the folder has the parameter server's lock file open, its shim's `pid` file
    not yet written: the search of /proc found the reader first and sent its group SIGTERM."""
    job = a_tensorflow_job_whose_chief_exited_0(alice, old_run_dir)
    ps_lock = old_run_dir / job.public_id / "attempt-1" / "ps-0" / "lock"
    ps_lock.parent.mkdir(parents=True)
    ps_lock.touch()
    reader = subprocess.Popen(
        [sys.executable, "-c", BLOCKS_SIGTERM, str(ps_lock)],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    processes.append(reader)
    assert reader.stdout.readline()  # it has the lock file open
    alive_where_it_ran(job, old_run_dir, "ps-0", processes, pid_file=False)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    assert not terms_pending(reader)
    assert LocalRun.objects.get(job=job).kill_at is not None  # the stop began


def test_a_tensorflow_job_its_time_limit_decided_says_timeout_as_it_stops_the_rest(
    alice, old_run_dir, processes
):
    """Its chief exited 0 past the limit, its parameter server still serving: the server was
    stopped with no event saying why."""
    job = a_tensorflow_job_whose_chief_exited_0(alice, old_run_dir, timeout_minutes=10)
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(hours=1))
    alive_where_it_ran(job, old_run_dir, "ps-0", processes)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    [event] = job.events.filter(reason="Timeout")
    with translation.override("en"):
        assert event.message_shown == "Timed out: ran past its 10-minute limit."
    assert event.type == EventType.WARNING
    assert LocalRun.objects.get(job=job).kill_at is not None


def test_mpi_agents_told_that_have_not_exited_past_the_grace_are_stopped(
    alice, old_run_dir, processes
):
    """Told by the launcher's `done` file that it exited 0, an agent hung: the job stayed
    Running for ever, nothing stopping it."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    JobReplica.objects.create(job=job, role="worker", index=0, status="running")
    exited_where_it_ran(job, old_run_dir, "master-0", code=0, seconds_ago=600)
    launcher = old_run_dir / job.public_id / "attempt-1" / "mpi" / "launcher"
    launcher.mkdir(parents=True)
    (launcher / "done").touch()
    told = time.time() - 300  # five minutes ago, by its worker there
    os.utime(launcher / "done", (told, told))
    agent = alive_where_it_ran(job, old_run_dir, "worker-0", processes)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    assert terms_pending(agent)
    assert LocalRun.objects.get(job=job).kill_at is not None
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING  # until the agent has an exit record there


def test_mpi_agents_just_told_are_left_the_grace_to_exit(alice, old_run_dir, processes):
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    JobReplica.objects.create(job=job, role="worker", index=0, status="running")
    exited_where_it_ran(job, old_run_dir, "master-0", code=0, seconds_ago=600)
    (old_run_dir / job.public_id / "attempt-1" / "mpi" / "launcher").mkdir(parents=True)
    agent = alive_where_it_ran(job, old_run_dir, "worker-0", processes)
    left_by_its_worker(old_run_dir)

    Worker().tick()

    assert (old_run_dir / job.public_id / "attempt-1" / "mpi" / "launcher" / "done").exists()
    assert not terms_pending(agent)
    assert LocalRun.objects.get(job=job).kill_at is None


def test_a_done_file_that_cannot_be_written_is_one_warning_line_not_a_traceback(
    alice, old_run_dir, processes, caplog
):
    """A read-only or foreign folder: logged with a full traceback at each look."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    JobReplica.objects.create(job=job, role="worker", index=0, status="running")
    exited_where_it_ran(job, old_run_dir, "master-0", code=0, seconds_ago=600)
    launcher = old_run_dir / job.public_id / "attempt-1" / "mpi" / "launcher"
    launcher.mkdir(parents=True)
    (launcher / "done").symlink_to(old_run_dir / "gone" / "done")  # cannot be made
    alive_where_it_ran(job, old_run_dir, "worker-0", processes)
    left_by_its_worker(old_run_dir)

    with caplog.at_level("WARNING", logger="jobs.runner"):
        Worker().tick()

    told = [r for r in caplog.records if job.public_id in r.getMessage()]
    assert len(told) == 1
    assert "could not tell its MPI agents" in told[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)


# -- fix144: a Delete of such a job, carried out as its Stop is -------------------------------


def test_a_delete_of_a_job_running_where_no_worker_runs_now_stops_it_then_deletes_it(
    alice, alice_en, settings, tmp_path
):
    """It stayed Stopping for ever, saying it would be deleted once stopped: nothing stopped it
    (the worker carried out a Stop there, not a Delete's)."""
    tag = uuid.uuid4().hex[:8]
    replica = f"fix144-{tag}-master 100000"  # in the replica's command line only
    job = submit(alice, make_spec(f'exec -a "fix144-{tag}-$AIHC_ROLE" sleep 100000'))
    old, worker = left_running(job, settings, tmp_path)
    wait_for(lambda: processes_with(replica), what="the replica running")
    worker.tick()  # the active worker, in the new run directory

    answer = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert "Job local-test will be deleted once it has stopped." in answer.content.decode()
    with translation.override("en"):
        assert Job.objects.get(pk=job.pk).status_reason_shown == (
            "Stopping every replica where it ran (another run directory on this machine, where "
            "no worker runs now) to delete the job: the active worker sends SIGTERM at its next "
            "look there (it looks once a minute), and SIGKILL at a look 1 s or more after; the "
            "job is deleted, with its logs, once it has stopped."
        )
    a_minute_on(worker)
    worker.tick()  # SIGTERM
    wait_for(lambda: exited_there(old, job, "master-0"), what="the replica's end")
    assert Job.objects.filter(pk=job.pk).exists()  # not before it has stopped
    a_minute_on(worker)
    worker.tick()
    assert processes_with(replica) == []
    assert not Job.objects.filter(pk=job.pk).exists()
    deleted = DeletedJob.objects.get(public_id=job.public_id)
    assert (deleted.owner, deleted.name) == (alice, job.name)
    assert not (old / job.public_id).exists()  # its logs and files, where it ran


def test_a_delete_of_a_job_whose_run_directory_has_a_live_worker_says_it_waits_for_that_worker(
    alice, alice_en, old_run_dir
):
    """It read "Stop requested. ... it stops once a worker runs where it started again", and
    the list only that the job would go once stopped."""
    active_here()
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    left_by_its_worker(old_run_dir)
    held = os.open(old_run_dir / "worker.lock", os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the worker there holds it

        answer = alice_en.post(
            reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
        )
    finally:
        os.close(held)

    assert (
        "Job local-test will be deleted once it has stopped. It runs on another machine or run "
        "directory than the worker now active, which cannot reach its processes: it is stopped "
        "and deleted once a worker runs where it started again."
    ) in answer.content.decode()
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Stop requested to delete the job. This job runs on another machine or run directory "
            "than the worker now active, which cannot reach its processes: it is stopped, and "
            "deleted with its logs, once a worker runs where it started again. If that machine "
            "is gone for good, an administrator can mark the job as lost."
        )


# -- fix142: a tear-down there survives its worker's death, and signals only its replicas -----

ROOT = Path(__file__).resolve().parent.parent

# One look of a worker of another run directory at the jobs that ran where no worker runs now
# (jobs.runner.end_jobs_ended_where_they_ran), as a process of its own the test can kill.
ONE_LOOK = """
import django
django.setup()
from jobs.runner import end_jobs_ended_where_they_ran
end_jobs_ended_where_they_ran(looked_at={})
"""


def look_environment(tmp_path) -> dict[str, str]:
    """A worker's settings, on the test's database, in a run directory of its own."""
    from django.db import connection

    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",
        "LOCAL_RUN_DIR": str(tmp_path / "the-look's" / "runs"),
        "LOCAL_STOP_GRACE_SECONDS": f"{settings.LOCAL_STOP_GRACE_SECONDS:g}",
    }


def a_look_in_a_process_of_its_own(tmp_path) -> subprocess.Popen:
    env = look_environment(tmp_path)
    return subprocess.Popen([sys.executable, "-c", ONE_LOOK], cwd=ROOT, env=env)


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_between_the_tear_downs_commit_and_its_sigterm_leaves_sigterm_first(
    alice, old_run_dir, processes, tmp_path
):
    """review 60 committed the tear-down's kill_at (and its event) before the SIGTERM, so a
    worker killed in between left no SIGKILL without its event; but the next look, past that
    kill_at, sent the parameter server SIGKILL alone, no SIGTERM ever coming to let it save."""
    job = a_tensorflow_job_whose_chief_exited_0(alice, old_run_dir)
    server = alive_where_it_ran(job, old_run_dir, "ps-0", processes, pid_file=False)
    pid_file = old_run_dir / job.public_id / "attempt-1" / "ps-0" / "pid"
    # The look reads it only after its commit, to find the shim to send SIGTERM to: a named
    # pipe with no writer holds it there, where it is killed.
    os.mkfifo(pid_file)
    left_by_its_worker(old_run_dir)
    look = a_look_in_a_process_of_its_own(tmp_path)
    try:
        wait_for(
            lambda: LocalRun.objects.get(job=job).kill_at is not None, what="the tear-down's commit"
        )
    finally:
        look.kill()
        look.wait()
    pid_file.unlink()
    pid_file.write_text(str(server.pid))
    assert not terms_pending(server)  # killed before its SIGTERM
    first_kill_at = LocalRun.objects.get(job=job).kill_at
    wait_for(lambda: timezone.now() > first_kill_at, what="the grace to pass")
    worker = Worker()

    worker.tick()

    assert terms_pending(server)
    assert server.poll() is None  # SIGTERM, not SIGKILL
    run = LocalRun.objects.get(job=job)
    assert run.kill_at > first_kill_at  # a grace of its own
    assert job.events.filter(reason="Succeeding").count() == 1
    past_the_grace(job, worker)

    worker.tick()

    assert server.wait(timeout=30) == -signal.SIGKILL
    assert read_state(old_run_dir / job.public_id / "attempt-1" / "ps-0").exit_code == 137
    a_minute_on(worker)
    worker.tick()
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert job.events.filter(reason="Succeeding").count() == 1


def test_the_tear_down_there_sends_sigterm_once_its_kill_at_and_event_are_recorded(
    alice, old_run_dir, processes
):
    job = a_tensorflow_job_whose_chief_exited_0(alice, old_run_dir)
    server = alive_where_it_ran(job, old_run_dir, "ps-0", processes)
    left_by_its_worker(old_run_dir)
    before = timezone.now()

    Worker().tick()

    assert terms_pending(server)
    assert server.poll() is None
    run = LocalRun.objects.get(job=job)
    assert run.kill_at >= before + timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS)
    assert not run.sigterm_due
    assert job.events.filter(reason="Succeeding").count() == 1


def test_a_pid_file_naming_a_process_that_is_not_the_shim_now_is_never_signalled(
    alice, old_run_dir, processes
):
    """The pid its shim wrote, recycled: another process has it now (it does not hold the
    replica's lock). Neither the tear-down's SIGTERM nor its SIGKILL reaches it."""
    job = a_tensorflow_job_whose_chief_exited_0(alice, old_run_dir)
    alive_where_it_ran(job, old_run_dir, "ps-0", processes, pid_file=False)
    stranger = subprocess.Popen(
        [sys.executable, "-c", BLOCKS_SIGTERM], stdout=subprocess.PIPE, start_new_session=True
    )
    processes.append(stranger)
    assert stranger.stdout.readline()
    (old_run_dir / job.public_id / "attempt-1" / "ps-0" / "pid").write_text(str(stranger.pid))
    left_by_its_worker(old_run_dir)
    worker = Worker()

    worker.tick()  # the tear-down begins: SIGTERM

    assert LocalRun.objects.get(job=job).kill_at is not None
    past_the_grace(job, worker)
    worker.tick()  # SIGKILL

    assert stranger.poll() is None
    assert not terms_pending(stranger)
    # Its replica is not recorded as killed either: what signalled nothing ended nothing.
    assert read_state(old_run_dir / job.public_id / "attempt-1" / "ps-0").phase == "alive"


# pid 1 of a pid namespace of the test's own, which holds the replica's lock file open (as its
# shim would: so the look takes it for the shim, and only the pid 1 guard spares it; review64:
# without it the lock check refused pid 1 first, and the test passed with the guard removed),
# runs a bystander (blocking SIGTERM, so one sent stays pending) and the look, each in a session
# of its own, then says what reached them: os.killpg(1, sig) is kill(-1, sig), every process
# the sender may signal, so it would reach the bystander (and, outside such a namespace, every
# process of the machine).
SENTINEL = """
import re, signal, subprocess, sys
from pathlib import Path
lock = open(sys.argv[3])
got = []
signal.signal(signal.SIGTERM, lambda *_: got.append("pid 1"))
bystander = subprocess.Popen(
    [sys.executable, "-c", sys.argv[2]], stdout=subprocess.PIPE, start_new_session=True
)
assert bystander.stdout.readline()
subprocess.run([sys.executable, "-c", sys.argv[1]], start_new_session=True, check=True)
status = Path(f"/proc/{bystander.pid}/status").read_text()
pending = int(re.search(r"^ShdPnd:\\s*([0-9a-f]+)$", status, re.M).group(1), 16)
if pending & (1 << (signal.SIGTERM - 1)) or bystander.poll() is not None:
    got.append("bystander")
bystander.kill()
print(",".join(got) or "none", flush=True)
"""


@pytest.mark.django_db(transaction=True)
def test_a_pid_file_naming_pid_1_never_signals_pid_1(alice, old_run_dir, processes, tmp_path):
    """A `pid` file that says 1 (written by hand, or a sandbox's init's pid read inside it):
    signalled as a replica's process group, that is kill(-1), every process of the machine
    (the console, every job) when the worker runs as root."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a pid namespace whose pid 1 is the test's")
    job = a_tensorflow_job_whose_chief_exited_0(alice, old_run_dir)
    alive_where_it_ran(job, old_run_dir, "ps-0", processes, pid_file=False)
    state = old_run_dir / job.public_id / "attempt-1" / "ps-0"
    (state / "pid").write_text("1")
    left_by_its_worker(old_run_dir)

    reached = printed_as_pid_1(
        SENTINEL, ONE_LOOK, BLOCKS_SIGTERM, str(state / "lock"), env=look_environment(tmp_path)
    )

    assert reached == "none"
    assert LocalRun.objects.get(job=job).kill_at is not None  # the tear-down began


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_between_a_stops_commit_and_its_sigterm_leaves_sigterm_first(
    alice, old_run_dir, processes, tmp_path
):
    """As for a tear-down the job's end began: the Stop there (review 60) committed its kill_at
    before the SIGTERM too."""
    job = running_elsewhere(alice, runner=f"{socket.gethostname()}:{old_run_dir}")
    replica = alive_where_it_ran(job, old_run_dir, "master-0", processes, pid_file=False)
    pid_file = old_run_dir / job.public_id / "attempt-1" / "master-0" / "pid"
    os.mkfifo(pid_file)  # holds the look after its commit, where it is killed
    left_by_its_worker(old_run_dir)
    assert job_stop(job=job, actor=alice) is True
    look = a_look_in_a_process_of_its_own(tmp_path)
    try:
        wait_for(
            lambda: LocalRun.objects.get(job=job).kill_at is not None, what="the stop's commit"
        )
    finally:
        look.kill()
        look.wait()
    pid_file.unlink()
    pid_file.write_text(str(replica.pid))
    first_kill_at = LocalRun.objects.get(job=job).kill_at
    wait_for(lambda: timezone.now() > first_kill_at, what="the grace to pass")
    worker = Worker()

    worker.tick()

    assert terms_pending(replica)
    assert replica.poll() is None  # SIGTERM, not SIGKILL
    past_the_grace(job, worker)

    worker.tick()

    assert replica.wait(timeout=30) == -signal.SIGKILL
    a_minute_on(worker)
    worker.tick()
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED, job.status_reason
