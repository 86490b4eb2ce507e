"""Bubblewrap removed between the worker's look (jobs.runner.bwrap_missing_message) and a
replica's start (its shim's exec): qa112 found such a job failed "master-0 exited with code
127: command or file not found", blaming its command, its log saying "Could not start: [Errno 2]
No such file or directory: '/usr/bin/bwrap'". It goes back to Queued instead, held as the
scheduler holds every job while bubblewrap is missing (SandboxUnavailable), and starts in its
place once bubblewrap is back.

Real jobs: the sandbox named by LOCAL_BWRAP is a file that is there when the worker looks but
that no exec can run (a script whose interpreter does not exist: ENOENT, as for a removed
bwrap), then removed, as bubblewrap is."""

from __future__ import annotations

import time

import pytest
from django.core import mail
from django.utils import translation

from jobs import spec as S
from jobs.logs import job_dir
from jobs.models import JobStatus, LocalRun
from jobs.runner import read_state, replica_state_dir
from jobs.scheduler import SANDBOX_UNAVAILABLE
from jobs.worker import Worker

from .runner_helpers import (
    log_text,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)

pytestmark = pytest.mark.usefixtures("runner_settings")


def test_a_job_whose_bubblewrap_vanished_as_it_started_waits_queued_and_runs_once_it_is_back(
    alice, settings, tmp_path
):
    settings.LANGUAGE_CODE = "en"
    installed = settings.LOCAL_BWRAP
    vanishing = tmp_path / "bwrap"
    vanishing.write_text("#!/no/such/interpreter\n")
    vanishing.chmod(0o755)
    settings.LOCAL_BWRAP = str(vanishing)
    job = submit(alice, make_spec("echo ran-at-last"))
    worker = Worker()

    worker.tick()  # starts it: the worker finds LOCAL_BWRAP, its shim cannot run it
    assert status_of(job) == JobStatus.RUNNING
    vanishing.unlink()  # and now it is gone for the worker too
    run_until(worker, lambda: status_of(job) == JobStatus.QUEUED, what="back to Queued")
    for _ in range(5):
        worker.tick()
        time.sleep(0.05)

    assert status_of(job) == JobStatus.QUEUED
    reasons = list(job.events.values_list("reason", flat=True))
    assert reasons.count(SANDBOX_UNAVAILABLE) == 1, reasons  # said once, not each pass
    assert not {"Failed", "ReplicaFailed", "StartFailed"} & set(reasons), reasons
    event = job.events.get(reason=SANDBOX_UNAVAILABLE)
    assert event.type == "Warning"
    assert event.message == (
        "Waiting for bubblewrap, which sandboxes every replica of a local job: bubblewrap is "
        f"not installed at {vanishing} (apt-get install bubblewrap). It starts by itself once "
        "it is installed again. Please contact an administrator."
    )
    assert not LocalRun.objects.filter(job=job).exists() and not job.replicas.exists()
    assert not any(job_dir(job.public_id).glob("*"))  # no attempt or log left for its next start

    settings.LOCAL_BWRAP = installed
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert "ran-at-last" in log_text(job, "master-0")
    assert "EarlierRunSetAside" not in set(job.events.values_list("reason", flat=True))


def a_bwrap_no_exec_can_run(tmp_path):
    """A file at LOCAL_BWRAP when the worker looks that no exec can run (ENOENT, as a removed
    bwrap's)."""
    vanishing = tmp_path / "bwrap"
    vanishing.write_text("#!/no/such/interpreter\n")
    vanishing.chmod(0o755)
    return vanishing


def test_a_job_sent_back_to_queued_by_a_vanished_bubblewrap_sends_no_running_alert_until_it_runs(
    alice, settings, tmp_path
):
    """fix155: the jobRunning alert was queued as the replicas were spawned, before a shim
    found bubblewrap gone: its owner was told the job ran as it went back to Queued."""
    installed = settings.LOCAL_BWRAP
    vanishing = a_bwrap_no_exec_can_run(tmp_path)
    settings.LOCAL_BWRAP = str(vanishing)
    alert = S.AlertConfig(items=["jobRunning"], emails=["ops@example.com"])
    job = submit(alice, make_spec("echo ran-at-last", alert=alert))
    worker = Worker()

    worker.tick()  # starts it: its shim cannot run LOCAL_BWRAP
    vanishing.unlink()
    run_until(worker, lambda: status_of(job) == JobStatus.QUEUED, what="back to Queued")

    assert mail.outbox == []
    assert not job.events.filter(reason="AlertSent").exists()
    settings.LOCAL_BWRAP = installed
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert [m.subject for m in mail.outbox] == [f"[AI 训练任务控制台] {job.name} 正在运行"]


def test_a_fault_tolerance_restart_that_finds_bubblewrap_gone_fails_keeping_the_first_attempts_log(
    alice, settings, tmp_path
):
    """Only a first attempt goes back to Queued (the test above): going back clears the job's
    folder, and a restart's would take its earlier attempts' logs with it (review66)."""
    job = submit(
        alice,
        make_spec(
            "echo first-attempt-ran; exit 1",
            fault_tolerance=True,
            fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
        ),
    )
    worker = Worker()
    worker.tick()  # attempt 1 spawned with the installed bubblewrap
    vanishing = a_bwrap_no_exec_can_run(tmp_path)
    settings.LOCAL_BWRAP = str(vanishing)  # the restart's shim cannot run it
    launched = replica_state_dir(job.public_id, 2, "master-0") / "launched"
    run_until(worker, launched.exists, what="the restart's launch")
    vanishing.unlink()  # and now it is gone for the worker too

    ended = (JobStatus.FAILED, JobStatus.QUEUED)
    run_until(worker, lambda: status_of(job) in ended, what="the job to fail or wait")

    assert status_of(job) == JobStatus.FAILED
    job.refresh_from_db()
    with translation.override("en"):
        # Not "exited with code 127: command or file not found", blaming its command.
        assert job.status_reason_shown.startswith(
            "master-0 could not start its sandbox: bubblewrap is not installed at "
            f"{vanishing} (apt-get install bubblewrap)."
        ), job.status_reason_shown
    reasons = list(job.events.values_list("reason", flat=True))
    assert SANDBOX_UNAVAILABLE not in reasons, reasons
    assert "Restarted" in reasons, reasons
    assert read_state(launched.parent).no_sandbox
    assert LocalRun.objects.get(job=job).attempt == 2
    assert "first-attempt-ran" in log_text(job, "master-0")
