"""Helpers shared by the local-runner and worker tests: real processes, short timings."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jobs import spec as S
from jobs.models import Job, JobReplica
from jobs.services import jobs_submit
from jobs.worker import Worker

# The machine's own interpreter: jobs see the host's system folders, but not the worker
# user's home (where pyenv keeps the one running the tests) nor the checkout with its venv.
# The job scripts need only the standard library.
PY = "/usr/bin/python3"
CARD = "baidu.com/a800_80g_cgpu"


# LOCAL_JOB_NETWORK's values, for a test parametrized over them: isolated-outbound needs
# slirp4netns, skipped where it is not installed.
EVERY_NETWORK = [
    "host",
    "isolated",
    pytest.param(
        "isolated-outbound",
        marks=pytest.mark.skipif(
            not os.access("/usr/bin/slirp4netns", os.X_OK),
            reason="slirp4netns is not installed (apt-get install slirp4netns)",
        ),
    ),
]


def remove_cgroups_of(job_ids: list[str], *, seconds: float = 5) -> None:
    """The cgroups the worker made for these jobs, once their processes are gone (a later
    worker would leave them, as another console's); retried while the last ones end."""
    from jobs import cgroups

    found = cgroups.current()
    if not found.active:
        return
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [i for i in job_ids if not cgroups.remove_job_cgroups(found, public_id=i)]
        if not left:
            return
        job_ids = left
        time.sleep(0.1)


@contextlib.contextmanager
def network_holders_killed_after() -> Iterator[None]:
    """Whatever happens in the block (a failed assertion skips a test's own ends), every
    network namespace holder (LOCAL_JOB_NETWORK isolated or isolated-outbound) still alive
    after it is killed, with its slirp4netns if it has one. The worker starts each holder in
    a session of its own, so it leads a process group that holds its slirp4netns too
    (jobs.network._spawn_holder, jobs/netns_holder.py): one killpg ends both, where a kill
    of the holder alone would leave slirp4netns until it saw its --exit-fd close."""
    from django.conf import settings

    from jobs.runner import live_shim

    try:
        yield
    finally:
        for lock in Path(settings.LOCAL_RUN_DIR).glob("*/attempt-*/network/lock"):
            found = live_shim(lock.parent)
            if found is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(found[0], signal.SIGKILL)


@contextlib.contextmanager
def worker_in_thread() -> Iterator[None]:
    """The worker's loop (jobs.worker.run_forever, without the task queue) in a thread, as a
    browser test's server sees it: stopped at the end, and every replica's process group the
    jobs left killed."""
    from jobs.worker import run_forever

    stop = threading.Event()
    thread = threading.Thread(target=run_forever, args=(stop,), kwargs={"tasks": False})
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=20)
        for job in Job.objects.all():
            for replica in job.replicas.exclude(pid=None):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(replica.pid, signal.SIGKILL)


@pytest.fixture
def runner_settings(settings, tmp_path, db):
    """A fast local runner: 0.1 s polls, 1 s stop grace, 2 cards, one volume."""
    volume = tmp_path / "volume"
    volume.mkdir()
    settings.WORKER_POLL_SECONDS = 0.1
    settings.LOCAL_STOP_GRACE_SECONDS = 1
    settings.LOCAL_ACCELERATORS = f"{CARD}=2"
    settings.LOCAL_VOLUMES = f"work={volume}"
    settings.LOCAL_MAX_RUNNING_JOBS = 8
    # The machine's own disk may be fuller than the defaults allow (10% and 5% free, at most 10 and 5 GB): disk
    # pressure is tested on a small disk of its own (test_runner_disk_pressure.py).
    settings.LOCAL_DISK_MIN_FREE_GB = 0
    settings.LOCAL_DISK_EVICT_FREE_GB = 0
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}
    yield settings
    # Every test stops its processes, whatever happened.
    replicas = list(JobReplica.objects.exclude(pid=None))
    for replica in replicas:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(replica.pid, signal.SIGKILL)
    # And removes its jobs' cgroups (every replica has one where the number of processes is
    # held): a worker would leave those of jobs it does not know, as another console's.
    from jobs import cgroups
    from jobs.runner import groups_still_alive

    if cgroups._current is not None and cgroups._current.active:
        groups_still_alive(replicas, wait=5)
        for public_id in Job.objects.values_list("public_id", flat=True):
            cgroups.remove_job_cgroups(cgroups._current, public_id=public_id)


def volume(settings) -> Path:
    return Path(settings.LOCAL_VOLUMES.split("=", 1)[1])


# A command that runs until the test opens the gate (open_gate), instead of for a fixed time
# a loaded machine may need before the test has looked, or a fast one may not need at all.
UNTIL_THE_GATE_OPENS = "until [ -e /workspace/gate-open ]; do sleep 0.05; done"


def open_gate(settings) -> None:
    (volume(settings) / "gate-open").touch()


def make_spec(command: str, **changes) -> S.JobSpec:
    spec = S.JobSpec(
        name="local-test",
        resource_pool_id="local",
        image="python:3.12",
        command=command,
        roles=[S.Role("master", 1)],
        datasources=[S.Datasource("hostpath", "work", mount_path="/workspace")],
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


def submit(owner, spec: S.JobSpec) -> Job:
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    return job


def ended_at(job: Job, finished) -> None:
    """Moves a finished job's end back to `finished`, as the days going by would, with its
    deletion time for its retention (Job.deletes_at) as the console stores it when a job ends."""
    from jobs.worker import deletes_at

    Job.objects.filter(pk=job.pk).update(finished_at=finished)
    job.refresh_from_db()
    Job.objects.filter(pk=job.pk).update(deletes_at=deletes_at(job=job))
    job.refresh_from_db()


def run_until(
    worker: Worker, done: Callable[[], bool], *, timeout: float = 30, what: str = ""
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        worker.tick()
        if done():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or done}")


def status_of(job: Job) -> str:
    job.refresh_from_db()
    return job.status


def log_text(job: Job, label: str) -> str:
    from jobs.logs import replica_log_path

    path = replica_log_path(job.public_id, label)
    return path.read_text() if path.exists() else ""


def processes_with(token: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token in cmdline and state != "Z" and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


# The worker's user in the setup README recommends: a dedicated one, not root (which reads
# and writes whatever the permissions say).
NOBODY = 65534


def as_nobody(work: Callable[[], object]) -> object:
    """What `work()` returns (anything JSON can carry), run in a child process as the
    unprivileged user NOBODY: file permissions then hold as they do for a worker run as
    README recommends, which they do not for these tests, run as root."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        # Threads other tests left (the worker's task threads) are not copied into the
        # child, which runs `work` alone and ends with os._exit: only a lock one of them
        # held at the fork and `work` needed could hang it, and the test would time out.
        warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write, json.dumps({"result": work()}).encode())
            code = 0
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            with contextlib.suppress(BaseException):
                os.write(write, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = json.loads(pipe.read() or b"{}")
    os.waitpid(pid, 0)
    assert "error" not in answer, answer["error"]
    return answer["result"]


def owned_by_nobody(path: Path) -> Path:
    """`path` and all it holds made NOBODY's, as a worker run as that user would have made it."""
    for folder, subfolders, files in os.walk(path):
        for name in [*subfolders, *files]:
            os.lchown(os.path.join(folder, name), NOBODY, NOBODY)
    os.lchown(path, NOBODY, NOBODY)
    return path


def reads_a_reaped_processs_exit_code() -> bool:
    """Whether this kernel tells an ended, reaped process's exit code through a pidfd opened
    while it ran (PIDFD_GET_INFO, Linux 6.15): without it the MPI agent sees a rank's code
    only in the moment before its launch daemon reaps it, so mostly not (README, "MPICH")."""
    from jobs.mpi_agent import _wait_status

    pid = os.fork()
    if pid == 0:
        os._exit(3)
    pidfd = os.pidfd_open(pid)
    try:
        os.waitpid(pid, 0)
        return _wait_status(pid, pidfd) == 3 << 8
    finally:
        os.close(pidfd)


needs_pidfd_exit_info = pytest.mark.skipif(
    not reads_a_reaped_processs_exit_code(),
    reason="needs a kernel that gives a reaped process's exit code by its pidfd (Linux 6.15)",
)


def printed_as_pid_1(*args: str, env: dict[str, str]) -> str:
    """What `python -c *args` prints, run as pid 1 of a pid namespace of its own (unshare
    --pid --fork --mount-proc, as root): the pid-1 guards' tests, where pid 1 is the test's
    own process, never the machine's. The test is skipped where no such namespace can be made."""
    looked = subprocess.run(
        [*("unshare", "--pid", "--fork", "--mount-proc"), sys.executable, "-c", *args],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if looked.returncode != 0 and "unshare" in looked.stderr.split(":", 1)[0]:
        pytest.skip(f"no pid namespace here: {looked.stderr.strip()}")
    assert looked.returncode == 0, looked.stderr
    return looked.stdout.strip()
