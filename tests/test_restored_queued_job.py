"""A job queued when a backup was taken, which the old console ran after it (qa110): restored,
it is Queued again and its folder in LOCAL_RUN_DIR holds that run's records (attempt-1's exit
record, its log). It runs again, as README promises: the worker moves those files into a
folder `earlier-run-<time>` of the job's folder as it starts it (before, it adopted the old
exit record, "Succeeded" a second after "Started" with nothing run, and appended to the old
log). And `migrate` says such jobs (jobs.W005) once it has migrated an older database, not
only a second `migrate` (it checked before migrating, on the old schema, and read nothing)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone, translation

from jobs import runner
from jobs.logs import job_dir
from jobs.models import FINAL_STATUSES, Job, JobEvent, JobStatus
from jobs.worker import Worker

from .runner_helpers import log_text, make_spec, run_until, runner_settings, status_of, submit  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")


def ran_by_the_old_console(public_id: str, *, code: int, log: str) -> None:
    """What the old console's run left in the job's folder, as the backup of runs.tar.gz
    restores it: attempt-1's exit record and lock, the replica's log."""
    folder = job_dir(public_id)
    state = folder / "attempt-1" / "master-0"
    state.mkdir(parents=True)
    (state / "lock").touch()
    (state / "exit").write_text(json.dumps({"code": code, "time": time.time() - 60}))
    (folder / "attempt-1" / "ports.json").write_text(json.dumps({"master-0": 1, "master": 1}))
    (folder / "logs").mkdir()
    (folder / "logs" / "master-0.log").write_text(log)


def test_a_queued_job_whose_folder_holds_an_earlier_runs_exit_runs_its_command_again(alice):
    job = submit(alice, make_spec("echo this run; exit 3"))
    ran_by_the_old_console(job.public_id, code=0, log="the earlier run\n")
    worker = Worker()

    run_until(worker, lambda: status_of(job) in FINAL_STATUSES)

    # Its command ran: its exit code, not the old record's 0; its log is this run's alone.
    assert job.status == JobStatus.FAILED and "3" in job.status_reason
    assert "this run" in log_text(job, "master-0")
    assert "the earlier run" not in log_text(job, "master-0")
    [aside] = job_dir(job.public_id).glob("earlier-run-*")
    assert (aside / "logs" / "master-0.log").read_text() == "the earlier run\n"
    assert json.loads((aside / "attempt-1" / "master-0" / "exit").read_text())["code"] == 0
    [event] = job.events.filter(reason="EarlierRunSetAside")
    assert aside.name in event.message and event.type == "Warning"
    assert list(job.events.values_list("reason", flat=True)) == [
        "Created",
        "EarlierRunSetAside",
        "Started",
        "ReplicaFailed",
        "Failed",
    ]


class WorkerDied(BaseException):
    """A worker killed (SIGKILL, a power cut): nothing of it runs after this point."""


def test_a_job_whose_worker_died_right_after_starting_it_runs_its_command_for_the_next_worker(
    alice, monkeypatch
):
    """review61: the earlier run's files were moved after the switch to Running was
    committed; a worker that died between the two left the old exit record (code 0), which
    the next worker read as this run's: Succeeded with nothing run."""
    job = submit(alice, make_spec("echo this run; exit 3"))
    ran_by_the_old_console(job.public_id, code=0, log="the earlier run\n")

    def die(*args, **kwargs):
        raise WorkerDied

    # The first thing start_job does once the job's start is committed.
    monkeypatch.setattr(runner, "_limits_not_enforced", die)
    with pytest.raises(WorkerDied):
        run_until(Worker(), lambda: False)
    monkeypatch.undo()
    run_until(Worker(), lambda: status_of(job) in FINAL_STATUSES)

    assert job.status == JobStatus.FAILED and "3" in job.status_reason
    assert "this run" in log_text(job, "master-0")
    assert "the earlier run" not in log_text(job, "master-0")
    [aside] = job_dir(job.public_id).glob("earlier-run-*")
    assert (aside / "logs" / "master-0.log").read_text() == "the earlier run\n"


def test_a_start_cut_short_before_its_commit_leaves_the_next_start_nothing_to_set_aside(
    alice, monkeypatch
):
    """fix155: a worker killed between making the job's folder (attempt-1's ports file, the
    logs folder) and committing the start left the job Queued with that folder, which the next
    start moved to earlier-run-… as a restored backup's run, with its Warning event."""
    job = submit(alice, make_spec("echo this run"))

    def die(*args, **kwargs):
        raise WorkerDied

    # The step after make_run_folder, before the start's commit.
    monkeypatch.setattr(runner, "_marked_running", die)
    with pytest.raises(WorkerDied):
        run_until(Worker(), lambda: False)
    monkeypatch.undo()
    assert status_of(job) == JobStatus.QUEUED
    assert (job_dir(job.public_id) / "attempt-1" / "ports.json").exists()  # what it left
    run_until(Worker(), lambda: status_of(job) in FINAL_STATUSES)

    assert job.status == JobStatus.SUCCEEDED
    assert "this run" in log_text(job, "master-0")
    assert list(job_dir(job.public_id).glob("earlier-run-*")) == []
    assert list(job.events.values_list("reason", flat=True)) == ["Created", "Started", "Succeeded"]


def test_a_queued_job_with_an_empty_folder_starts_with_nothing_set_aside(alice):
    job = submit(alice, make_spec("echo first run"))
    job_dir(job.public_id).mkdir(parents=True)
    worker = Worker()

    run_until(worker, lambda: status_of(job) in FINAL_STATUSES)

    assert job.status == JobStatus.SUCCEEDED
    assert "first run" in log_text(job, "master-0")
    assert list(job_dir(job.public_id).glob("earlier-run-*")) == []
    assert not job.events.filter(reason="EarlierRunSetAside").exists()


@contextlib.contextmanager
def immutable(path):
    """`path` made immutable (chattr +i) for the block: nothing in it can be added, removed or
    renamed, by root too, as a file system that refuses the move does (a read-only mount, a
    folder of another owner). Skipped where that cannot be done."""
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("needs root and chattr to make a folder refuse even root's rename")
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"this file system has no immutable flag: {made.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_queued_job_whose_earlier_run_cannot_be_set_aside_fails_unstarted_with_nothing_deleted(
    alice,
):
    """The move's failure was untested (root can always rename): the job fails from Queued,
    as never run, saying why; the earlier run's records and log stay as they were."""
    job = submit(alice, make_spec("echo this run"))
    ran_by_the_old_console(job.public_id, code=0, log="the earlier run\n")
    folder = job_dir(job.public_id)

    with immutable(folder):
        run_until(Worker(), lambda: status_of(job) in FINAL_STATUSES)

    assert job.status == JobStatus.FAILED
    assert job.started_at is None  # as never run: no start, no card time
    with translation.override("en"):
        assert job.status_reason_shown.startswith(
            "Could not start: its folder holds the records and logs of an earlier run of it, "
            "which could not be moved aside"
        ), job.status_reason_shown
    assert job.status_reason.startswith(
        "无法启动：其文件夹中有它之前一次运行的记录和日志，无法移开（"
    )
    assert list(job.events.values_list("reason", flat=True)) == ["Created", "StartFailed"]
    assert (folder / "logs" / "master-0.log").read_text() == "the earlier run\n"
    assert json.loads((folder / "attempt-1" / "master-0" / "exit").read_text())["code"] == 0
    assert list(folder.glob("earlier-run-*")) == []


def test_a_move_aside_cut_short_leaves_each_file_of_the_earlier_run_in_one_place_or_the_other(
    alice,
):
    """Its attempt's records moved, its logs refused (that folder immutable): the job fails
    unstarted, saying where what was moved is, and nothing is lost."""
    job = submit(alice, make_spec("echo this run"))
    ran_by_the_old_console(job.public_id, code=0, log="the earlier run\n")
    folder = job_dir(job.public_id)

    with immutable(folder / "logs"):
        run_until(Worker(), lambda: status_of(job) in FINAL_STATUSES)

    assert job.status == JobStatus.FAILED
    assert job.started_at is None
    [aside] = folder.glob("earlier-run-*")
    with translation.override("en"):
        assert "which could not be moved aside" in job.status_reason_shown
        assert aside.name in job.status_reason_shown, job.status_reason_shown
        assert "Nothing of them was deleted." in job.status_reason_shown
    assert json.loads((aside / "attempt-1" / "master-0" / "exit").read_text())["code"] == 0
    assert (folder / "logs" / "master-0.log").read_text() == "the earlier run\n"
    assert not (folder / "attempt-1").exists()


@pytest.mark.django_db(transaction=True)
def test_migrate_says_the_queued_jobs_that_already_ran_once_it_has_migrated_an_older_database(
    alice, capsys
):
    job = submit(alice, make_spec("true"))
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Job.objects.filter(pk=job.pk).update(created_at=an_hour_ago)
    JobEvent.objects.filter(job=job).update(created_at=an_hour_ago)
    ran_by_the_old_console(job.public_id, code=0, log="the earlier run\n")
    exit_record = job_dir(job.public_id) / "attempt-1" / "master-0" / "exit"
    ten_minutes_ago = time.time() - 600
    os.utime(exit_record, (ten_minutes_ago, ten_minutes_ago))
    executor = MigrationExecutor(connection)
    [latest] = executor.loader.graph.leaf_nodes("jobs")
    executor.migrate([("jobs", "0059_job_status_created_index")])  # a restored older backup
    capsys.readouterr()

    try:
        call_command("migrate", "jobs", verbosity=0)
    finally:
        MigrationExecutor(connection).migrate([latest])  # (a no-op once migrate has run)

    said = capsys.readouterr().err
    assert said.count("(jobs.W005) 1 queued local jobs have already run here") == 1
    assert job.public_id in said
    assert Job.objects.get(pk=job.pk).status == JobStatus.QUEUED


@pytest.mark.django_db(transaction=True)
def test_migrate_says_what_it_finds_once_migrated_to_the_stderr_it_was_given(alice, capsys):
    """review61: the checks said after migrating went to sys.stderr, not migrate's."""
    job = submit(alice, make_spec("true"))
    ran_by_the_old_console(job.public_id, code=0, log="the earlier run\n")
    executor = MigrationExecutor(connection)
    [latest] = executor.loader.graph.leaf_nodes("jobs")
    executor.migrate([("jobs", "0059_job_status_created_index")])
    capsys.readouterr()
    said = io.StringIO()

    try:
        call_command("migrate", "jobs", verbosity=0, stderr=said)
    finally:
        MigrationExecutor(connection).migrate([latest])

    assert "(jobs.W005) 1 queued local jobs have already run here" in said.getvalue()
    assert job.public_id in said.getvalue()
    assert "jobs.W005" not in capsys.readouterr().err
