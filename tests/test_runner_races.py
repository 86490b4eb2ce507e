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
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.core import mail
from django.db import connection

from jobs import spec as S
from jobs.actions import job_delete, job_stop
from jobs.logs import replica_log_path
from jobs.models import Job, JobStatus, LocalRun
from jobs.runner import attempt_dir, read_state, replica_state_dir
from jobs.services import job_transition
from jobs.worker import Worker

from .runner_helpers import (
    make_spec,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
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


@contextlib.contextmanager
def right_after_the_worker_reads(table: str, request: Callable[[], object]) -> Iterator[None]:
    """Runs `request` (what the web process does) right after the first read of a row of
    `table`, before the next statement: the window in which a row read at the start of a
    tick goes stale."""
    state = {"read": False, "done": False}

    def hook(execute, sql, params, many, context):
        if state["read"] and not state["done"]:
            state["done"] = True
            request()
        result = execute(sql, params, many, context)
        if not state["done"] and sql.startswith("SELECT") and f'FROM "{table}"' in sql:
            state["read"] = True
        return result

    with connection.execute_wrapper(hook):
        yield
    assert state["done"], f"the worker never read {table}"


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


def test_a_job_whose_worker_was_killed_while_launching_it_still_sends_its_running_alert_once(
    alice, leftovers
):
    alert = S.AlertConfig(items=["jobRunning"], emails=["ops@example.com"])
    job = submit(alice, make_spec("sleep 300", roles=FOUR_SLEEPERS, alert=alert))
    leftovers.append(job)
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(2, then=kill_the_worker)  # worker-1 and worker-2 not spawned
    with pytest.raises(WorkerKilled):
        doomed.tick()
    assert mail.outbox == []

    worker = Worker()
    # It goes once every replica's sandbox has started (their shims' `pid` files; fix155),
    # a look or more after their launch.
    run_until(worker, lambda: mail.outbox != [], what="the running alert")
    worker.tick()

    assert [r.status for r in job.replicas.all()] == ["running"] * 4
    assert [m.subject for m in mail.outbox] == [f"[AI 训练任务控制台] {job.name} 正在运行"]
    job_stop(job=fresh(job))
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, timeout=10)


def test_a_replica_recorded_as_launched_whose_shim_never_started_is_launched_not_lost(
    alice, leftovers
):
    job = submit(alice, make_spec("sleep 300", roles=FOUR_SLEEPERS))
    leftovers.append(job)
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(1, then=kill_the_worker)  # master-0 spawned
    with pytest.raises(WorkerKilled):
        doomed.tick()
    # What the killed worker would have left had it died one step later, for worker-0:
    # its lock file made and its launch recorded, the spawn not reached.
    state = replica_state_dir(job.public_id, 1, "worker-0")
    state.mkdir(parents=True, exist_ok=True)
    os.close(os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600))
    (state / "launched").write_text("1")
    assert read_state(state).phase == "unlaunched"

    worker = Worker()
    run_until(
        worker,
        lambda: [r.status for r in job.replicas.all()] == ["running"] * 4,
        what="every replica running",
    )

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.restarts == 0  # not failed, not restarted
    wait_for(lambda: (state / "started").exists(), what="worker-0's shim starting")


def half_launched(alice, leftovers) -> Job:
    """A job of two one-card replicas whose worker was killed once master-0 had spawned and
    worker-0 was marked launched: the next worker relaunches the rest (launch_attempt)."""
    from .runner_helpers import CARD

    job = submit(
        alice,
        make_spec("sleep 300", roles=[S.Role("master", 1, CARD, 1), S.Role("worker", 1, CARD, 1)]),
    )
    leftovers.append(job)
    doomed = Worker()

    def kill_the_worker():
        raise WorkerKilled

    doomed.children = AfterSpawn(1, then=kill_the_worker)  # master-0 spawned
    with pytest.raises(WorkerKilled):
        doomed.tick()
    state = replica_state_dir(job.public_id, 1, "worker-0")
    state.mkdir(parents=True, exist_ok=True)
    os.close(os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600))
    (state / "launched").write_text("1")
    return job


def test_a_job_that_cannot_start_for_a_fault_of_the_consoles_says_internal_error_not_its_words(
    alice, leftovers, caplog
):
    # qa107: an exception the launch does not expect failed the job with its text for a
    # reason ("无法启动：'baidu.com/a800_80g_cgpu'", a KeyError). Here the attempt's record
    # of its replicas' ports cannot be read (a ValueError).
    from django.utils import translation

    from .runner_helpers import CARD

    job = half_launched(alice, leftovers)
    (attempt_dir(job.public_id, 1) / "ports.json").write_text("{not json")

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job failing")

    job.refresh_from_db()
    assert (
        job.status_reason_shown
        == "无法启动：启动时发生内部错误；工作进程的日志中有详情（管理员可查看）"
    )
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Could not start: an internal error while starting it; staff can read the "
            "worker's log for it"
        )
    assert CARD not in job.status_reason
    [logged] = [r for r in caplog.records if r.getMessage().endswith(": could not start")]
    assert issubclass(logged.exc_info[0], ValueError)


def test_a_relaunch_after_its_card_type_left_the_local_pool_fails_saying_so(
    alice, leftovers, settings
):
    # qa114: a worker started again without LOCAL_ACCELERATORS failed the job with an internal
    # error (a KeyError handing out the cards), where a queued job is told what the pool has.
    from django.utils import translation

    from .runner_helpers import CARD

    job = half_launched(alice, leftovers)
    settings.LOCAL_ACCELERATORS = ""

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job failing")

    job.refresh_from_db()
    assert (
        job.status_reason_shown
        == f"无法启动：需要 2 张 {S.card_shown(CARD)} 卡，本机资源池只有 0 张。"
    )
    with translation.override("en"):
        assert job.status_reason_shown == (
            f"Could not start: Needs 2 {S.card_shown(CARD)} cards; the local pool has 0."
        )


def test_a_relaunch_of_a_run_whose_record_lacks_its_cards_fails_saying_so(alice, leftovers):
    # qa114's seeded runs recorded no cards: an internal error (KeyError) until then.
    from django.utils import translation

    from .runner_helpers import CARD

    job = half_launched(alice, leftovers)
    LocalRun.objects.filter(job=job).update(devices={})

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job failing")

    job.refresh_from_db()
    with translation.override("en"):
        assert job.status_reason_shown == (
            f"Could not start: Needs 2 {S.card_shown(CARD)} cards; its run holds 0 of them (its record of "
            "the cards it was given is incomplete)."
        )


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


# -- Stop or Delete while the worker decides on a fault-tolerance restart -----------------


def failing_with_fault_tolerance() -> S.JobSpec:
    return make_spec(
        "exit 1",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=3),
    )


def started_and_failed(job: Job, worker: Worker) -> None:
    """Starts the job and waits (without a tick) until its replica has exited with 1."""
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    state = replica_state_dir(job.public_id, 1, "master-0")
    wait_for(lambda: read_state(state).phase == "exited", what="the replica to exit")


def test_a_delete_that_lands_while_the_worker_decides_a_restart_deletes_the_job(alice):
    job = submit(alice, failing_with_fault_tolerance())
    worker = Worker()
    started_and_failed(job, worker)

    with right_after_the_worker_reads("jobs_localrun", lambda: job_delete(job=fresh(job))):
        worker.tick()
    run_until(worker, lambda: not Job.objects.filter(pk=job.pk).exists(), timeout=10)

    assert processes_with(job.public_id) == []


def test_a_stop_that_lands_while_the_worker_decides_a_restart_is_never_followed_by_a_restart(
    alice,
):
    job = submit(alice, failing_with_fault_tolerance())
    worker = Worker()
    started_and_failed(job, worker)

    with right_after_the_worker_reads("jobs_localrun", lambda: job_stop(job=fresh(job))):
        worker.tick()
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, timeout=10)

    reasons = [e.reason for e in job.events.all()]
    assert reasons[reasons.index("Stopping") :] == ["Stopping", "Stopped"]
    assert job.restarts == 0
    assert LocalRun.objects.get(job=job).attempt == 1


def test_a_delete_is_not_undone_when_the_worker_restarts_the_job_as_the_delete_lands(alice):
    # Two replicas: the failure tears the other one down, so the restart is decided in one
    # tick and carried out in a later one, with the delete landing in between.
    spec = failing_with_fault_tolerance()
    spec.command = 'if [ "$RANK" = 1 ]; then exit 1; fi; sleep 300'
    spec.roles = [S.Role("master", 1), S.Role("worker", 1)]
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: LocalRun.objects.filter(job=job, stop_target="restart").exists())
    state = replica_state_dir(job.public_id, 1, "master-0")
    wait_for(lambda: read_state(state).phase != "alive", what="the master to be torn down")

    with right_after_the_worker_reads("jobs_localrun", lambda: job_delete(job=fresh(job))):
        worker.tick()
    run_until(worker, lambda: not Job.objects.filter(pk=job.pk).exists(), timeout=10)

    assert processes_with(job.public_id) == []


def test_a_pending_delete_is_carried_out_by_a_worker_started_after_the_old_one_died(alice):
    job = submit(alice, make_spec("sleep 300"))
    run_until(Worker(), lambda: job.replicas.exclude(pid=None).exists())
    assert job_delete(job=fresh(job)) is False  # it goes once it has stopped
    # The old worker stopped the processes and recorded Stopped, then was killed before it
    # could delete the job.
    kill_everything_of(job)
    assert job_transition(job=fresh(job), to=JobStatus.STOPPED, reason="Stopped")

    Worker().tick()

    assert not Job.objects.filter(pk=job.pk).exists()


def test_a_delete_sent_from_a_page_read_before_the_job_ended_deletes_it_at_once(alice):
    job = submit(alice, make_spec("sleep 0.5"))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    page = fresh(job)  # the job page the owner clicks Delete on
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert job_delete(job=page) is True

    assert not Job.objects.filter(pk=job.pk).exists()


# -- Stop while the worker is launching ---------------------------------------------------


def test_a_stop_during_the_launch_starts_no_more_replicas_and_sends_no_running_alert(
    alice, leftovers
):
    spec = make_spec(
        "sleep 300",
        roles=FOUR_SLEEPERS,
        alert=S.AlertConfig(items=["jobRunning"], emails=["ops@example.com"]),
    )
    job = submit(alice, spec)
    leftovers.append(job)
    worker = Worker()
    worker.children = AfterSpawn(1, then=lambda: job_stop(job=fresh(job)))

    worker.tick()

    launched = [
        r.index
        for r in job.replicas.all()
        if r.role == "worker" and r.status not in ("pending", "stopped")
    ]
    assert launched == []  # only master-0, spawned before the stop, ever started
    assert not any(
        (replica_state_dir(job.public_id, 1, f"worker-{i}") / "launched").exists() for i in range(3)
    )
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, timeout=10)
    assert processes_with(job.public_id) == []
    assert mail.outbox == []
    reasons = [e.reason for e in job.events.all()]
    assert reasons[reasons.index("Stopping") :] == ["Stopping", "Stopped"]
    # The workers the stop kept from starting read as stopped, not as still waiting.
    assert sorted(job.replicas.values_list("role", "status")) == [
        ("master", "stopped"),
        ("worker", "stopped"),
        ("worker", "stopped"),
        ("worker", "stopped"),
    ]


def catches_sigterm(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def test_a_stop_that_reaches_a_replica_before_its_command_starts_ends_it_at_once(
    alice, settings, leftovers
):
    # Long enough that a SIGKILL at its end cannot be what ended the replica.
    settings.LOCAL_STOP_GRACE_SECONDS = 60
    job = submit(alice, make_spec("sleep 300"))
    leftovers.append(job)
    # The replica's log as a named pipe: its shim blocks opening it, after it has set up its
    # own signal handling and before it starts the command, until the test reads it.
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    os.mkfifo(log)
    worker = Worker()
    worker.tick()
    replica = job.replicas.get()
    wait_for(lambda: catches_sigterm(replica.pid), what="the shim's SIGTERM handler")

    job_stop(job=fresh(job))
    worker.tick()  # the stop's SIGTERM, while the command has not started yet
    reader = threading.Thread(target=lambda: Path(log).read_bytes(), daemon=True)
    reader.start()

    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, timeout=30)
    replica.refresh_from_db()
    assert (replica.status, replica.exit_code) == ("stopped", 143)  # not SIGKILL's 137


def group_members(pgid: int) -> list[int]:
    """Pids of the live processes of process group `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                    members.append(int(entry.name))
    return members


def in_a_sandbox(pid: int) -> bool:
    """Whether process `pid` is in a pid namespace below this one (its NSpid names two)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return len(line.split()) > 2
    return False


def test_a_stop_that_reaches_a_replica_while_bubblewrap_sets_up_its_sandbox_ends_it_at_once(
    alice, settings, tmp_path, leftovers
):
    # Long enough that a SIGKILL at its end cannot be what ended the replica.
    settings.LOCAL_STOP_GRACE_SECONDS = 60
    # bubblewrap itself, held by its own --block-fd (a named pipe the test writes to) inside
    # its new sandbox, after the sandbox's init exists and before the command's process does.
    setup_gate = tmp_path / "bwrap-setup-gate"
    os.mkfifo(setup_gate)
    held_bwrap = tmp_path / "bwrap"
    held_bwrap.write_text(f'#!/bin/sh\nexec /usr/bin/bwrap --block-fd 9 "$@" 9<>"{setup_gate}"\n')
    held_bwrap.chmod(0o755)
    settings.LOCAL_BWRAP = str(held_bwrap)
    job = submit(alice, make_spec("touch /workspace/ran; sleep 300"))
    leftovers.append(job)
    worker = Worker()
    worker.tick()
    replica = job.replicas.get()
    # The shim, bubblewrap, and the init of the sandbox bubblewrap is setting up: waited for
    # as a process of a pid namespace of its own, not as any third member (fix155: with the
    # start's tick shorter, no running alert queued in it, this failed 3 of 9 runs on a loaded
    # machine, the stop finding the shim and bubblewrap alone and the job Stopping till its
    # grace; 6 of 6 passed waiting so. Which third process was counted was not caught.)
    wait_for(
        lambda: len(members := group_members(replica.pid)) == 3 and any(map(in_a_sandbox, members)),
        what="the sandbox's init",
    )

    job_stop(job=fresh(job))
    worker.tick()  # the stop's SIGTERM: the sandbox's init ignores it, and no command exists
    with open(setup_gate, "w") as gate:
        gate.write(".")  # bubblewrap finishes setting up

    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, timeout=20)
    replica.refresh_from_db()
    assert (replica.status, replica.exit_code) == ("stopped", 143)  # not SIGKILL's 137
    assert not (volume(settings) / "ran").exists()
