"""The MPI fail fast with Open MPI's mpirun (tests/test_runner_mpich.py has MPICH's): a rank
that exits non-zero in a worker is Open MPI's own to end the job for, and mpirun does, so the
launcher's code is the job's reason; one whose launcher goes on after mpirun ended is not
failed by the runner. Real mpirun runs (`apt-get install openmpi-bin`, as CI installs it;
skipped without it) of a Python rank program: orted starts it as it starts a compiled one,
and CI installs no Open MPI headers (libopenmpi-dev) to build one."""

from __future__ import annotations

import os
import random
import shutil
import threading

import pytest
from django.utils import translation

from jobs import spec as S
from jobs.models import JobStatus
from jobs.runner import read_state
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
from .test_runner import openmpi_is_mpirun

pytestmark = pytest.mark.usefixtures("runner_settings")
needs_openmpi = pytest.mark.skipif(
    not openmpi_is_mpirun(), reason="needs Open MPI's mpirun (apt-get install openmpi-bin)"
)

ROLES = [S.Role("master", 1), S.Role("worker", 2, CARD, 1)]
MPIRUN = "mpirun --allow-run-as-root --hostfile $OMPI_MCA_orte_default_hostfile -bind-to none"


def program(settings) -> tuple[str, str]:
    """Rank 1 (in worker-1) exits 3; rank 0 would wait long (its own sleep, by a name the
    test looks for): only mpirun ends it. The command, and the sleeper's name."""
    seconds = random.randint(10000, 99999)
    (volume(settings) / "rank.py").write_text(
        "import os, sys, time\n"
        "e = os.environ\n"
        "if e['OMPI_COMM_WORLD_RANK'] == '1':\n"
        "    os.write(1, f\"rank 1 exits in {e['AIHC_ROLE']}-{e['AIHC_ROLE_INDEX']}\\n\".encode())\n"
        "    sys.exit(3)\n"
        f"os.execvp('sleep', ['sleep', '{seconds}.5'])\n"
    )
    return "python3 /workspace/rank.py", f"sleep {seconds}.5"


def finished(job) -> bool:
    return status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED)


@needs_openmpi
def test_an_open_mpi_rank_that_exits_non_zero_fails_the_job_with_the_launchers_own_code(
    alice, settings
):
    command, sleeper = program(settings)
    spec = make_spec(f"{MPIRUN} {command}", framework=S.MPI)
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=90)

    master = log_text(job, "master-0")
    assert job.status == JobStatus.FAILED, master
    assert "rank 1 exits in worker-1" in master
    # mpirun ended the job itself (its code, 3 from the rank): the runner's grace did not.
    assert job.status_reason.startswith("master-0 退出，退出码 "), job.status_reason
    assert "MPI 启动器" not in job.status_reason
    assert processes_with(sleeper) == []


@needs_openmpi
@needs_pidfd_exit_info
def test_an_open_mpi_rank_that_exits_non_zero_is_named_with_its_worker_in_the_jobs_reason(
    alice, settings
):
    # qa68: the reason read "master-0 exited with code 3" alone, and mpirun's own words name
    # the rank by number ("Process name: [[27900,1],1]"): nothing said which instance failed.
    # Rank 1 runs a moment before it fails, as a training does (one that ends right at its
    # start may go unseen: README, "Fail fast"); rank 0 is then ended by mpirun's abort.
    (volume(settings) / "rank.py").write_text(
        "import os, sys, time\n"
        "if os.environ['OMPI_COMM_WORLD_RANK'] == '1':\n"
        "    time.sleep(1)\n"
        "    sys.exit(3)\n"
        "time.sleep(600)\n"
    )
    spec = make_spec(f"{MPIRUN} python3 /workspace/rank.py", framework=S.MPI)
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=90)

    assert job.status == JobStatus.FAILED, log_text(job, "master-0")
    expected = "master-0 退出，退出码 3。在此之前，worker-1 中的一个 rank 退出，退出码 3。"
    assert job.status_reason == expected
    assert job.events.get(reason="ReplicaFailed").message == expected
    with translation.override("en"):
        job.refresh_from_db()
        assert job.status_reason_shown == (
            "master-0 exited with code 3. Before it, a rank in worker-1 exited with code 3."
        )


@needs_openmpi
def test_a_launcher_that_goes_on_after_mpirun_failed_is_left_to_end_the_job(alice, settings):
    # Its ranks' failure was recorded (rank 1 exited 3), but mpirun ended what it started
    # (within the grace: its abort takes a second or two): no worker runs anything of the
    # launcher's then, so nothing hangs, and the script going on past the grace is no hang.
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 5
    command, _ = program(settings)
    spec = make_spec(
        f'{MPIRUN} {command}; echo "mpirun answered $?"; sleep 15',
        framework=S.MPI,
    )
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=90)

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert "rank 1 exits in worker-1" in master
    assert "mpirun answered 0" not in master and "mpirun answered " in master


@needs_openmpi
@needs_pidfd_exit_info
def test_a_later_mpirun_of_the_same_script_is_not_failed_for_an_earlier_ones_rank(alice, settings):
    # The first mpirun's rank 1 exited 3 (recorded in worker-1) and mpirun ended it; the
    # script goes on to a second, healthy mpirun that runs past the grace in the same
    # workers: the old record is no hang of the new launch. (A grace that leaves mpirun's
    # own abort its second or two.)
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 5
    command, _ = program(settings)
    spec = make_spec(
        f'{MPIRUN} {command}; echo "first answered $?"; {MPIRUN} sleep 12 && echo second done',
        framework=S.MPI,
    )
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=90)

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert "rank 1 exits in worker-1" in master
    assert "second done" in master


@needs_openmpi
@needs_pidfd_exit_info
def test_a_rank_failure_its_own_mpirun_ended_does_not_fail_another_mpirun_running_beside_it(
    alice, settings
):
    # Two mpiruns at once in the same workers: the first one's rank 1 exits 3 and that
    # mpirun ends its launch (within the grace); the second, healthy, keeps both workers busy
    # past the grace. Before (review34), a worker busy with any launch counted for the other:
    # the job failed "A rank in worker-1 exited with code 3" while its second mpirun ran on.
    # (The second keeps its session folder apart: Open MPI 4.1's daemons starting in the
    # same instant in one host race to make /tmp/ompi.<host>.<uid>, "File exists", README.)
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 5
    command, _ = program(settings)
    spec = make_spec(
        f'( {MPIRUN} {command}; echo "first answered $?" ) & '
        f"{MPIRUN} --mca orte_tmpdir_base /tmp/second sleep 15 && echo second done; wait",
        framework=S.MPI,
        roles=ROLES,
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=90)

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert "rank 1 exits in worker-1" in master
    assert "first answered 0" not in master and "first answered " in master
    assert "second done" in master


@needs_openmpi
@needs_pidfd_exit_info
def test_a_rank_that_fails_while_its_own_mpirun_waits_fails_the_job_beside_a_healthy_mpirun(
    alice, settings
):
    # Each launch is judged against itself: a handed command of the launch whose rank failed
    # still runs past the grace (here a daemon that waits, as MPICH's mpiexec does for a rank
    # that exits without MPI_Abort), so the job fails, the healthy mpirun beside it or not.
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 2
    shutil.copy2("/bin/sh", volume(settings) / "orted")
    seconds = random.randint(10000, 99999)
    sleeper = f"sleep {seconds}.5"
    waiting = (
        "/etc/mpi/rsh worker-1 "
        '\'/workspace/orted -c "sh -c \\"sleep 1; exit 3\\"; '
        f"t={str(seconds)[:2]}; exec sleep \\${{t}}{str(seconds)[2:]}.5\"'"
    )
    healthy = f"sleep {random.randint(100, 999)}.25"
    spec = make_spec(f"{waiting} & {MPIRUN} {healthy}; wait", framework=S.MPI, roles=ROLES)
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=40)

    assert job.status == JobStatus.FAILED, log_text(job, "master-0")
    assert job.status_reason == (
        "worker-1 中的一个 rank 退出，退出码 3，MPI 启动器在 2 秒内没有结束任务。"
    )
    assert processes_with(sleeper) == []
    assert processes_with(healthy) == []


@needs_pidfd_exit_info
def test_a_rank_killed_by_a_signal_while_the_launcher_waits_fails_the_job_naming_the_signal(
    alice, settings
):
    # A launch daemon that, as hydra's proxy now and then does after cleaning up, leaves the
    # launcher waiting once its rank was killed: a shell by the name of Open MPI's daemon
    # (the agent knows daemons by their program's name), whose rank kills itself with
    # SIGKILL a second after it starts, and which then waits as the launcher does.
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 1
    shutil.copy2("/bin/sh", volume(settings) / "orted")
    seconds = random.randint(10000, 99999)
    sleeper = f"sleep {seconds}.5"
    spec = make_spec(
        "/etc/mpi/rsh worker-1 "
        f'\'/workspace/orted -c "sh -c \\"sleep 1; kill -9 \\\\$\\\\$\\"; '
        f"t={str(seconds)[:2]}; exec sleep \\${{t}}{str(seconds)[2:]}.5\"'",
        framework=S.MPI,
        roles=ROLES,
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=30)

    assert job.status == JobStatus.FAILED, log_text(job, "master-0")
    assert job.status_reason == (
        "worker-1 中的一个 rank 被信号 9（SIGKILL）终止，MPI 启动器在 1 秒内没有结束任务。"
    )
    assert processes_with(sleeper) == []
    assert all(r.exit_code is not None for r in job.replicas.all())


@needs_pidfd_exit_info
def test_a_later_launch_whose_rank_fails_while_the_launcher_waits_fails_the_job_after_a_handled_one(
    alice, settings
):
    # A retry loop: the first launch's rank exits 3 (recorded in worker-1) and its daemon
    # ends the launch itself (as mpiexec after MPI_Abort), so the script tries again; the
    # second launch's rank exits 3 too and its daemon then waits, as MPICH's proxy does for
    # a rank that exits without MPI_Abort. The first record must not keep the second one
    # out: the job would run for ever.
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 1
    shutil.copy2("/bin/sh", volume(settings) / "orted")
    seconds = random.randint(10000, 99999)
    sleeper = f"sleep {seconds}.5"
    handled = '/etc/mpi/rsh worker-1 \'/workspace/orted -c "sh -c \\"sleep 1; exit 3\\"; exit 1"\''
    waiting = (
        "/etc/mpi/rsh worker-1 "
        '\'/workspace/orted -c "sh -c \\"sleep 1; exit 3\\"; '
        f"t={str(seconds)[:2]}; exec sleep \\${{t}}{str(seconds)[2:]}.5\"'"
    )
    spec = make_spec(
        f'{handled}; echo "first answered $?"; {waiting}', framework=S.MPI, roles=ROLES
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=40)

    master = log_text(job, "master-0")
    assert "first answered 1" in master
    assert job.status == JobStatus.FAILED, master
    assert job.status_reason == (
        "worker-1 中的一个 rank 退出，退出码 3，MPI 启动器在 1 秒内没有结束任务。"
    )
    assert processes_with(sleeper) == []


def test_a_fifo_a_job_put_as_its_rank_failed_record_does_not_stop_the_runner_reading_it(
    tmp_path,
):
    # The job owns its /tmp/.mpi: a named pipe there must not leave read_state (the worker
    # supervising every job) waiting for a writer for ever.
    folder = tmp_path / "tmp" / ".mpi"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "rank-failed")
    states = []
    reader = threading.Thread(target=lambda: states.append(read_state(tmp_path)), daemon=True)
    reader.start()
    reader.join(30)  # a hang guard, not a speed measure
    stuck = reader.is_alive()
    if stuck:
        # Unblock the stuck reader (a writer that hangs up at once) before failing.
        os.close(os.open(folder / "rank-failed", os.O_WRONLY))
        reader.join()
    assert not stuck
    assert states[0].rank_failed is None


def test_a_fifo_a_job_put_as_its_busy_mark_does_not_stop_the_runner_reading_it(tmp_path):
    # The runner now reads what `busy` holds (the launches a worker runs something of), not
    # only its time: a named pipe there must not hold read_state either.
    folder = tmp_path / "tmp" / ".mpi"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "busy")
    states = []
    reader = threading.Thread(target=lambda: states.append(read_state(tmp_path)), daemon=True)
    reader.start()
    reader.join(30)  # a hang guard, not a speed measure
    stuck = reader.is_alive()
    if stuck:
        os.close(os.open(folder / "busy", os.O_WRONLY))
        reader.join()
    assert not stuck
    assert states[0].busy_since is None


def test_an_agent_copied_before_launches_had_ids_is_read_as_one_launch(tmp_path):
    # A job started by an earlier version keeps the agent it was given: an empty `busy`
    # and one record, their times the files'. Read as the launch "", fail fast goes on for it.
    folder = tmp_path / "tmp" / ".mpi"
    folder.mkdir(parents=True)
    for name in ("lock", "launched", "started"):  # a replica that ran: its marks are read
        (tmp_path / name).touch()
    (folder / "busy").write_bytes(b"")
    (folder / "rank-failed").write_text('{"code": 3}')
    os.utime(folder / "busy", (1000.5, 1000.5))
    os.utime(folder / "rank-failed", (1002.25, 1002.25))

    state = read_state(tmp_path)

    assert state.busy_since == {"": 1000.5}
    assert state.rank_failed == {"": {"code": 3, "time": 1002.25}}


@pytest.mark.parametrize(
    "busy, rank_failed",
    [
        ("[1, 2]", "[3]"),
        ('{"1-2": "soon"}', '{"1-2": 3}'),
        ('{"../x": 5}', '{"1-2": {"code": 300, "time": 5}}'),
        ('{"1-2": -1}', '{"1-2": {"code": 3, "signal": 9, "time": 5}}'),
        ("not json", '{"1-2": {"code": 3, "time": "then"}}'),
    ],
)
def test_what_a_job_writes_in_its_agents_files_is_read_as_numbers_or_not_at_all(
    tmp_path, busy, rank_failed
):
    # The job owns its /tmp/.mpi: nothing it puts there may stop the worker reading it.
    folder = tmp_path / "tmp" / ".mpi"
    folder.mkdir(parents=True)
    for name in ("lock", "launched", "started"):  # a replica that ran: its marks are read
        (tmp_path / name).touch()
    (folder / "busy").write_text(busy)
    (folder / "rank-failed").write_text(rank_failed)

    state = read_state(tmp_path)

    assert state.busy_since is None
    assert state.rank_failed is None


@needs_openmpi
def test_a_script_that_goes_on_after_mpirun_ended_on_a_host_not_of_the_job_is_not_failed(
    alice, settings
):
    # rsh refused the host (recorded for the runner, qa95), but Open MPI's mpirun ended at
    # once with its own error: the record went with it, and the script carries on.
    settings.LOCAL_MPI_RANK_GRACE_SECONDS = 2
    spec = make_spec(
        "mpirun --allow-run-as-root -H gpu-node-7 -n 1 true; "
        'echo "mpirun answered $?"; sleep 6; echo carried on',
        framework=S.MPI,
    )
    spec.roles = ROLES
    job = submit(alice, spec)

    run_until(Worker(), lambda: finished(job), timeout=60)

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, master)
    assert "rsh: gpu-node-7: not a host of this job" in master
    assert "mpirun answered 0" not in master and "carried on" in master
