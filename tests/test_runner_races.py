"""Races between the worker and the web process (or the worker's own death) on one local job.

Each race is replayed deterministically on real processes: the other side's request (the
web process's Stop or Delete, the worker being killed) runs at the exact moment it hurts,
through a hook on the worker's registry of spawned shims or on the database connection.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from jobs import spec as S
from jobs.actions import job_stop
from jobs.models import Job, JobStatus
from jobs.runner import replica_state_dir
from jobs.worker import Worker

from .runner_helpers import (
    make_spec,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)

pytestmark = pytest.mark.usefixtures("runner_settings")


class WorkerKilled(BaseException):
    """Unwinds the worker the way SIGKILL stops it: nothing after the kill point runs
    (BaseException: the worker's own `except Exception` handlers do not catch it)."""


class AfterSpawn(dict):
    """The worker's registry of the shims it spawned (Worker.children). `then` runs right
    after spawn number `n` is registered, before the worker records that replica."""

    def __init__(self, n: int, then: Callable[[], object]) -> None:
        super().__init__()
        self.n, self.then, self.spawned = n, then, 0

    def __setitem__(self, pid, child) -> None:
        super().__setitem__(pid, child)
        self.spawned += 1
        if self.spawned == self.n:
            self.then()


def fresh(job: Job) -> Job:
    """The job as the web process reads it when a request comes in."""
    return Job.objects.get(pk=job.pk)


def kill_everything_of(job: Job) -> None:
    for pid in processes_with(job.public_id):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def leftovers() -> Iterator[list[Job]]:
    """Jobs whose processes the test kills at the end, whatever happened (a replica whose
    pid was never recorded escapes runner_settings' clean-up)."""
    jobs: list[Job] = []
    yield jobs
    for job in jobs:
        kill_everything_of(job)


def wait_for(check: Callable[[], bool], *, timeout: float = 10, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.02)


FOUR_SLEEPERS = [S.Role("master", 1), S.Role("worker", 3)]


# -- a worker killed right after spawning a replica --------------------------------------


def test_a_replica_spawned_just_before_the_worker_was_killed_is_adopted_and_stopped(
    alice, leftovers
):
    job = submit(alice, make_spec("sleep 300", roles=FOUR_SLEEPERS))
    leftovers.append(job)
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(2, then=kill_the_worker)  # worker-0 spawned, not recorded
    with pytest.raises(WorkerKilled):
        doomed.tick()
    assert job.replicas.get(role="worker", index=0).pid is None

    worker = Worker()
    run_until(worker, lambda: job.replicas.filter(pid=None).count() == 0, what="every pid")
    state = replica_state_dir(job.public_id, 1, "worker-0")
    wait_for(lambda: (state / "pid").exists(), what="the shim's pid file")
    adopted = job.replicas.get(role="worker", index=0)
    assert adopted.pid == int((state / "pid").read_text()) and adopted.status == "running"
    assert adopted.process_start and adopted.started_at is not None
    assert [r.status for r in job.replicas.all()] == ["running"] * 4

    job_stop(job=fresh(job))
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, timeout=10)

    assert processes_with(job.public_id) == []


def test_a_pid_file_naming_another_process_is_not_trusted_and_the_lock_holder_is_stopped(
    alice, leftovers
):
    job = submit(alice, make_spec("sleep 300"))
    leftovers.append(job)
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(1, then=kill_the_worker)
    with pytest.raises(WorkerKilled):
        doomed.tick()
    state = replica_state_dir(job.public_id, 1, "master-0")
    wait_for(lambda: (state / "pid").exists(), what="the shim's pid file")
    # The pid file now names a process that is not the shim, as a recycled pid would.
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        (state / "pid").write_text(str(bystander.pid))
        worker = Worker()
        worker.tick()
        job_stop(job=fresh(job))

        run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, timeout=10)

        assert processes_with(job.public_id) == []
        assert bystander.poll() is None  # never signalled
        assert job.replicas.get().pid != bystander.pid
    finally:
        bystander.kill()
        bystander.wait()
