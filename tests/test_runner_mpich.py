"""MPI jobs on the local runner with MPICH's launcher (hydra: mpiexec.hydra), as a cluster
whose images carry MPICH or Intel MPI (MPICH-based) runs them, not OpenMPI. They run a
real MPI program built with MPICH's mpicc (`apt-get install mpich`; skipped without it,
installed by CI), through the explicit mpiexec.hydra: Debian's `mpirun` stays OpenMPI's
where both are installed."""

from __future__ import annotations

import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from jobs import spec as S
from jobs.actions import job_stop
from jobs.models import JobStatus
from jobs.wizard import example_commands
from jobs.worker import Worker

from .runner_helpers import (
    CARD,
    log_text,
    make_spec,
    needs_pidfd_exit_info,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)

pytestmark = [
    pytest.mark.usefixtures("runner_settings"),
    pytest.mark.skipif(
        shutil.which("mpiexec.hydra") is None or shutil.which("mpicc.mpich") is None,
        reason="needs MPICH (apt-get install mpich)",
    ),
]

SOURCE = Path(__file__).parent / "data" / "mpi_allreduce.c"
# A CPU-only launcher and two workers of one card each: two ranks, one in each worker.
ROLES = [S.Role("master", 1), S.Role("worker", 2, CARD, 1)]
# Doubles in the second sum: 32 MB, past the size where MPI sends large messages its own way.
LARGE = "4000000"


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    built = tmp_path_factory.mktemp("mpich") / "allreduce"
    subprocess.run(["mpicc.mpich", "-o", str(built), str(SOURCE)], check=True)
    return built


def in_volume(program: Path, settings) -> str:
    shutil.copy2(program, volume(settings) / "allreduce")
    return "/workspace/allreduce"


def instance_of(pid: int) -> str:
    """The replica a process runs in, by the environment it was started with."""
    env = dict(
        item.split("=", 1)
        for item in Path(f"/proc/{pid}/environ").read_text().split("\0")
        if "=" in item
    )
    return f"{env.get('AIHC_ROLE')}-{env.get('AIHC_ROLE_INDEX')}"


def finished(job) -> bool:
    return status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED)


def test_a_plain_mpiexec_hydra_runs_one_rank_per_worker_each_with_its_own_card(
    alice, settings, program
):
    # Nothing but the program: the hostfile (HYDRA_HOST_FILE, host:slots), the way to the
    # workers (HYDRA_LAUNCHER_EXEC) and the ranks' environment come from what the runner sets.
    # Before: hydra found no hostfile and ran every rank in the launcher (a CPU-only
    # master-0); given /etc/mpi/hostfile it refused its "slots=" ("token slots not supported
    # at this time"), and given hydra's form it tried ssh, found no worker-0, and hung.
    spec = make_spec(f"mpiexec.hydra {in_volume(program, settings)} {LARGE}", framework=S.MPI)
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=60)

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, master
    # The ranks reached each other (both sums over both), each in its worker's sandbox with
    # its own card, numbered 0 there: hydra's default would have handed them the launcher's
    # environment (AIHC_ROLE=master, no card) over their own.
    assert " rank 0 of 2 in worker-0 cards 0 sums 1 3\n" in master
    assert " rank 1 of 2 in worker-1 cards 0 sums 1 3\n" in master


def test_the_mpich_example_command_runs_unchanged_on_an_isolated_network(alice, settings, program):
    settings.LOCAL_JOB_NETWORK = "isolated"
    example = next(e["command"] for e in example_commands() if e["id"] == "MPIJob-hydra")
    assert "python3 /workspace/train.py" in example
    command = example.replace("python3 /workspace/train.py", in_volume(program, settings))
    spec = make_spec(command, framework=S.MPI)
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=60)

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, master
    assert " rank 0 of 2 in worker-0 cards 0 sums 1 3\n" in master
    assert " rank 1 of 2 in worker-1 cards 0 sums 1 3\n" in master


def test_an_mpich_rank_that_aborts_fails_the_job_with_the_launchers_exit_code(
    alice, settings, program
):
    spec = make_spec(f"mpiexec.hydra {in_volume(program, settings)} 1 abort", framework=S.MPI)
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=60)

    assert job.status == JobStatus.FAILED
    # The abort's code (rank 1 aborts where it runs in a worker). What it and hydra print
    # just before may be cut short by the abort itself, and is not asserted.
    assert "master-0 退出，退出码 5" in job.status_reason
    for label in ("worker-0", "worker-1"):
        assert job.replicas.get(role="worker", index=int(label[-1])).exit_code is not None


def test_stopping_an_mpich_job_ends_the_ranks_in_every_worker(alice, settings):
    # The sleeper's name is assembled by the shell: the command's text (the launcher's
    # command line) must not match it.
    seconds = random.randint(10000, 99999)
    sleeper = f"sleep {seconds}.5"
    spec = make_spec(
        f"mpiexec.hydra sh -c 't={str(seconds)[:2]}; exec sleep ${{t}}{str(seconds)[2:]}.5'",
        framework=S.MPI,
    )
    spec.roles = ROLES
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: len(processes_with(sleeper)) == 2, what="a rank in each worker")
    assert sorted(instance_of(pid) for pid in processes_with(sleeper)) == ["worker-0", "worker-1"]

    job.refresh_from_db()
    job_stop(job=job)

    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)
    assert processes_with(sleeper) == []


# Rank 1 exits 3 and rank 0 runs on, as a rank failing without MPI_Abort leaves MPICH 4.0's
# mpiexec waiting for ever for a peer blocked in MPI_Allreduce (the job ran until its time
# limit). Plain processes, not the MPI program: on a loaded machine rank 0 of the real program
# now and then met the closed connection and aborted, and hydra ended the job itself (255),
# so what the console does past the grace went untested. hydra waits for rank 0's sleep
# (its name assembled by the shell, so that only the sleep itself has it on its command line).
# Rank 1 lives a second first: the runner's agent looks for ranks every 0.05 s.
HELD_RANKS = (
    'mpiexec.hydra sh -c \'if [ "$PMI_RANK" = 1 ]; then sleep 1; '
    'echo "rank 1 exits in $AIHC_ROLE-$AIHC_ROLE_INDEX"; exit 3; fi; t=86; exec sleep $t.25\''
)


@needs_pidfd_exit_info
def test_an_mpich_rank_that_exits_non_zero_without_abort_fails_the_job_naming_its_worker(
    alice, settings
):
    # Its agent saw the rank's code; past the grace the job fails, though mpiexec waits on.
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 2
    job = submit(alice, make_spec(HELD_RANKS, framework=S.MPI, roles=ROLES))

    run_until(Worker(), lambda: finished(job), timeout=60)

    assert job.status == JobStatus.FAILED, log_text(job, "master-0")
    assert job.status_reason == (
        "worker-1 中的一个 rank 退出，退出码 3，MPI 启动器在 2 秒内没有结束任务。"
    )
    assert "rank 1 exits in worker-1" in log_text(job, "master-0")
    # Every rank stopped, every replica's end recorded, the failure an event.
    assert processes_with("sleep 86.25") == []
    assert all(r.exit_code is not None for r in job.replicas.all())
    assert job.events.filter(reason="ReplicaFailed").count() == 1


@needs_pidfd_exit_info
def test_a_rank_failure_its_own_mpiexec_ended_does_not_fail_another_mpiexec_running_beside_it(
    alice, settings
):
    # Two launches at once in the same workers: the first's rank 1 exits 3 and its rank 0
    # ends a second later, so that mpiexec ends its launch itself (exit 3), well within the
    # grace; the second, healthy, keeps both workers busy past the grace. Before (review34),
    # a worker busy with any launch counted for the other, and the job failed "A rank in
    # worker-1 exited with code 3" while the second mpiexec ran on.
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 5
    rank = "sh -c 'if [ \"$PMI_RANK\" = 1 ]; then sleep 1; exit 3; fi; sleep 2'"
    spec = make_spec(
        f'( mpiexec.hydra {rank}; echo "first answered $?" ) & '
        "mpiexec.hydra sleep 15 && echo second done; wait",
        framework=S.MPI,
        roles=ROLES,
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=90)

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert "first answered 3" in master
    assert "second done" in master


@needs_pidfd_exit_info
def test_a_job_that_turns_fail_fast_off_is_left_running_after_a_rank_exits_non_zero(
    alice, settings
):
    # Fault-tolerant MPI lets a rank fail while the others go on: such a job says
    # CONSOLE_MPI_FAIL_FAST=0 and is left to its launcher (here one that waits on rank 0).
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 0.5
    spec = make_spec(
        HELD_RANKS, framework=S.MPI, roles=ROLES, envs=[S.Env("CONSOLE_MPI_FAIL_FAST", "off")]
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "rank 1 exits in worker-1" in log_text(job, "master-0"), timeout=60)
    # Well past the grace, the worker's agent having had time to record the rank's code.
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        worker.tick()
        time.sleep(0.1)

    assert status_of(job) == JobStatus.RUNNING, job.status_reason
    assert len(processes_with("sleep 86.25")) == 1

    job_stop(job=job)
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, timeout=60)
    assert processes_with("sleep 86.25") == []


def test_an_mpich_rank_that_fails_with_fault_tolerance_restarts_the_job(alice, settings, program):
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 2
    spec = make_spec(
        f"mpiexec.hydra {in_volume(program, settings)} 1 exit",
        framework=S.MPI,
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
    )
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=90)

    assert job.status == JobStatus.FAILED
    assert job.restarts == 1
    assert "worker-1 中的一个 rank 退出，退出码 3" in job.status_reason
    assert "容错重启次数已用完：共 1 次" in job.status_reason
    assert log_text(job, "master-0").count("rank 1 exits in worker-1") == 2


@needs_pidfd_exit_info
def test_a_command_handed_to_a_worker_that_exits_non_zero_outside_mpi_ranks_fails_nothing(
    alice, settings
):
    # A probe's code is the launcher's to act on (it got it, as from ssh): only what an MPI
    # launch daemon started counts. The second command's own children end with 4 and by
    # SIGKILL (each living a second: the agent looks every 0.1 s), and it keeps worker-0 busy
    # past the grace.
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 0.5
    spec = make_spec(
        '/etc/mpi/rsh worker-0 \'sh -c "exit 4"\'; echo "probe answered $?"; '
        '/etc/mpi/rsh worker-0 \'sh -c "sleep 1; exit 4"; sh -c "sleep 1; kill -9 \\$\\$"; '
        "sleep 3'",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=30)

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert "probe answered 4" in log_text(job, "master-0")


def test_a_named_pipe_a_job_puts_as_its_busy_mark_does_not_hold_the_next_handed_command(
    alice, settings
):
    # /tmp/.mpi is the job's: a pipe left there (by something outliving the first handed
    # command) must not leave the agent waiting for a reader when it marks the next one.
    spec = make_spec(
        "/etc/mpi/rsh worker-0 'setsid sh -c \"sleep 1; mkfifo /tmp/.mpi/busy\" &'; sleep 3; "
        "/etc/mpi/rsh worker-0 'echo second ran'",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=30)

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert "second ran" in log_text(job, "master-0")


def test_mpiexec_hydra_given_the_replicas_hostnames_runs_a_rank_in_each_worker(
    alice, settings, program
):
    # qa95: each replica's hostname is <job>-worker-0 (its pod's name on AIHC, what Kubeflow's
    # hostfile lists); given those, rsh said "not a host of this job" (exit 255).
    command = (
        f"mpiexec.hydra -hosts local-test-worker-0,local-test-worker-1 -n 2 "
        f"{in_volume(program, settings)} {LARGE}"
    )
    spec = make_spec(command, framework=S.MPI)
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=60)

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, master
    assert " rank 0 of 2 in worker-0 cards 0 sums 1 3\n" in master
    assert " rank 1 of 2 in worker-1 cards 0 sums 1 3\n" in master


def test_mpiexec_hydra_given_a_host_not_of_the_job_fails_the_job_naming_it(
    alice, settings, program
):
    # qa95: rsh refused the host and mpiexec waited for ever for its proxy: the job stayed
    # Running until stopped. Past the grace the job fails, naming the host.
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 2
    command = f"mpiexec.hydra -hosts gpu-node-7 -n 1 {in_volume(program, settings)} 1"
    spec = make_spec(command, framework=S.MPI)
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=60)

    assert job.status == JobStatus.FAILED, log_text(job, "master-0")
    assert job.status_reason == (
        "master-0 中的 MPI 启动器请求了主机 gpu-node-7，它不是本任务的主机，且启动器在 2 秒内"
        "没有结束任务。本任务的主机为 master-0、worker-0、worker-1，或各实例的主机名（任务名称、"
        "连字符，再加上实例名）。"
    )
    assert "rsh: gpu-node-7: not a host of this job" in log_text(job, "master-0")
    assert all(r.exit_code is not None for r in job.replicas.all())
