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

from jobs.logs import job_dir
from jobs.models import JobStatus, LocalRun
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
