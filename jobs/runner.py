"""The local runner: starts, supervises, restarts and stops the replicas of local jobs.

Every replica runs as its own process group: a shim (jobs/shim.py) in a new session, which
runs the replica's command under bubblewrap (jobs/sandbox.py). State that must survive a
worker restart lives in files under LOCAL_RUN_DIR/<job>/attempt-<n>/<role>-<index>/:

- `lock`: held by the shim for its whole life (the worker locks it before the spawn and
  hands the open descriptor over). Lock held = replica alive. Lock free and `exit` present
  = finished with that code. Lock free, no `exit`, but `launched` and `started` present =
  lost (killed with its shim, or the machine rebooted). `launched` without `started` = the
  worker died between recording the launch and spawning the shim: it never ran, and is
  launched now. Nothing there = never launched.
- `started`: written by the shim first of all, before its command can start.
- `exit`, `keyword`, `tmp-over`, `tmp-used` (what its /tmp holds), `usage` (its CPU,
  memory and /tmp sampled every LOCAL_METRICS_SECONDS): written by the shim.
- `evicted`: written by the worker when the disk runs low (evict_for_disk_pressure).
- `tmp/`: the replica's /tmp (also its HOME and working folder), measured by the shim
  against LOCAL_TMP_MAX_GB; removed when the job ends, and when a restart begins.
- `pid`: written by the shim once its command has started. A worker killed between a spawn
  and recording it leaves a live replica without a pid; the next worker adopts it from this
  file (or, before it exists, from /proc), trusting a pid only if that process holds `lock`.

With LOCAL_JOB_NETWORK=isolated, `attempt-<n>/network/` holds the same `lock` and `pid` of
the process keeping the attempt's network namespace (jobs.network), found the same way.

So a restarted worker re-adopts live replicas just by looking, nothing is launched twice
(a launch is recorded before the spawn), and nothing stays Running forever (a lost replica
counts as a failed one). Pids are only used to signal, and only after checking the process
start time recorded next to them, so a recycled pid is never signalled.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import logging
import math
import os
import pwd
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections, router, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from . import cgroups, job_users, network
from . import logs as job_logs
from .alerts import job_alert, named_for_alert
from .backends.local import (
    FILE_IN_THE_WAY,
    NVIDIA_RESOURCE,
    accelerator_devices,
    cards_without_node,
    detected_accelerators,
    host_file_in_the_way_of,
    host_volumes,
    missing_card_nodes,
    nvidia_driver_cards,
    runner_path_problem,
    tensorflow_without_end,
    too_many_replicas,
    visible_devices,
)
from .health import WorkerIdentity, active_runner, holds_lease
from .locks import local_cards_locked
from .models import Job, JobEvent, JobReplica, JobStatus, LocalRun
from .runtime_env import (
    HYDRA_HOSTFILE_PATH,
    LOCAL_MPI_RSH_AGENT,
    ReplicaRef,
    group_task_of,
    mpi_hostfile,
    replica_environment,
    replica_refs,
)
from .sandbox import (
    PRIVATE_SCAN,
    Mount,
    SandboxError,
    bwrap_options,
    check_within_reach,
    is_within,
    make_in_root,
    no_setuid_filter_fd,
    open_in_root,
    options_memfd,
    private_entries,
    read_only_missing_message,
    read_only_parent_lacking,
    read_only_parent_message,
)
from .services import job_event, job_spec_or_noted, job_transition, recorded, signing_key
from .shim import CONSOLE_MARK, START_GATE, TmpMeter, open_own_folder, remove_tree
from .spec import (
    CORES_PER_CARD,
    DEFAULT_HANG_STARTUP_TOLERATION_MINUTES,
    MPI,
    TENSORFLOW,
    FaultToleranceConfig,
    JobSpec,
    Role,
    SpecError,
    card_shown,
)
from .texts import (
    RecordedText,
    Words,
    in_english,
    joined,
    ngettext_noop,
    recorded_plural,
    restored,
    said_here,
    source_of,
)
from .volume_access import volume_refusals

logger = logging.getLogger(__name__)

S = JobStatus
# Shims this worker process spawned (pid -> process), polled so they do not linger as zombies.
Children = dict[int, "subprocess.Popen[bytes]"]
SHIM = Path(__file__).resolve().parent / "shim.py"
HOSTFILE_DEST = "/etc/mpi/hostfile"
HYDRA_HOSTFILE_DEST = HYDRA_HOSTFILE_PATH  # the same hosts in MPICH's and Intel MPI's form
# A local MPI job's launcher reaches its workers through this agent, as a Kubeflow launcher
# reaches them through SSH (jobs/mpi_agent.py): the hostfile names each replica by its label.
MPI_AGENT = Path(__file__).resolve().parent / "mpi_agent.py"
MPI_AGENT_DEST = LOCAL_MPI_RSH_AGENT
MPI_AGENTS_DEST = "/etc/mpi/agents"
MPI_WORKER_COMMAND = f"exec python3 {MPI_AGENT_DEST} --serve"
# Hidden from every job whoever runs the worker: root's home, and the folder of sockets and
# pid files (gunicorn's, a database server's, D-Bus's), which a job could otherwise talk to.
ALWAYS_HIDDEN = ("/root", "/run", "/var/run")
# Restarts when fault tolerance is on and no limit was given (AIHC's form offers 0-3).
DEFAULT_RESTART_LIMIT = 3

# How long one worker tick waits for killed processes to die before looking again later.
STRAGGLER_WAIT_SECONDS = 1.0
# How long a SIGKILL waits for a sandbox's pid 1 that left its replica's group to die (it
# dies only once every process of its pid namespace has) before its group is killed too,
# and how long after the stop's SIGKILL such a pid 1 may hold its group (and the job) so.
# Hundreds of processes on a busy machine take seconds; one alive after a minute is stuck in
# the kernel (a hung network file system), and the job ends without it.
ESCAPED_WAIT_SECONDS = 0.5
ESCAPED_HOLD_SECONDS = 60

TARGET_RESTART = "restart"
# Bubblewrap vanished as the job started (its shim found no LOCAL_BWRAP to run): the attempt is
# torn down and the job goes back to Queued, held as the scheduler holds it (qa112).
TARGET_REQUEUE = "requeue"
TARGET_STOPPED = S.STOPPED.value
TARGET_FAILED = S.FAILED.value
TARGET_TIMED_OUT = S.TIMED_OUT.value
# A TensorFlow job whose chief (worker 0 without one) exited 0: what still runs is stopped
# and the job succeeds (tensorflow_result_replica).
TARGET_SUCCEEDED = S.SUCCEEDED.value


def minutes(value: float) -> timedelta:
    return timedelta(seconds=value * settings.JOB_MINUTE_SECONDS)


# -- processes -----------------------------------------------------------------------


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def process_start(pid: int) -> str | None:
    """ "<boot id>:<start time in ticks>" of a live process, None if there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return f"{_boot_id()}:{fields[19]}"


def signal_group(replica: JobReplica, sig: int, *, hold_escaped: bool = False) -> None:
    """Signals the replica's process group, unless its leader pid now names another process,
    and every child of the group's processes that has left it (see _processes).

    With `hold_escaped`, a SIGKILL spares the group while such a child still lives after
    ESCAPED_WAIT_SECONDS: the caller signals again on a later tick (see _escaped_children)."""
    if not replica.pid or replica.pid == 1:
        # Never a shim's: os.killpg(1, sig) is kill(-1, sig), every process the worker may
        # signal (as root, the machine's). A `pid` file of an old run folder that says 1 is
        # read by _shim_where_it_ran, which takes pid 1 for the shim when it holds the lock
        # (a sandbox's init read inside it): this is what spares it (fix142, review64).
        return
    current = process_start(replica.pid)
    if current is not None and current != replica.process_start:
        return  # the pid was recycled; our group is gone
    # The children first: once the group is dead they are orphans, no longer told by
    # their parent. Only for SIGKILL: the one such child is a pid namespace's init, which
    # takes no other signal from outside it anyway.
    if sig == signal.SIGKILL:
        escaped = _escaped_children(_processes(), replica.pid)
        for pid in escaped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if hold_escaped and escaped and not _ended(escaped, wait=ESCAPED_WAIT_SECONDS):
            return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(replica.pid, sig)


def _ended(pids: list[int], *, wait: float) -> bool:
    """Whether the processes `pids` (children of a live process: not reaped, so none of the
    pids can have been recycled yet) are all dead (zombies or gone) within `wait` seconds."""
    deadline = time.monotonic() + wait
    while True:
        alive = {p.pid for p in _processes() if p.alive}
        if not alive.intersection(pids):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def groups_still_alive(replicas: list[JobReplica], *, wait: float) -> list[JobReplica]:
    """The replicas whose process group still has a live (not zombie) process, or a live
    child of one that has left the group, after up to `wait` seconds. A group whose leader
    pid now names another process is gone."""
    ours = {r.pid: r for r in replicas if r.pid and process_start(r.pid) in (None, r.process_start)}
    deadline = time.monotonic() + wait
    while True:
        alive = [ours[pgid] for pgid in live_process_groups() & ours.keys()]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.01)


@dataclass(frozen=True)
class _Process:
    pid: int
    ppid: int
    pgid: int
    alive: bool  # not a zombie: only its parent's wait is missing


def _processes() -> list[_Process]:
    """Every process of this machine, from its /proc/<pid>/stat (read raw: this runs on
    each SIGKILL of a replica and each wait for one, over all the machine's processes)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{entry.name}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fields = os.read(fd, 4096).rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        finally:
            os.close(fd)
        found.append(
            _Process(int(entry.name), int(fields[1]), int(fields[2]), fields[0] not in (b"Z", b"X"))
        )
    return found


# A replica's process group (its shim's session) holds the shim, the outer bwrap and the
# first process of the sandbox's pid namespace (bwrap's pid 1, forked by the outer one), and
# killing that pid 1 kills every process of the namespace, whatever session they made. But
# the job can move pid 1 out of the group: pid 1 runs as the job's user, so (where Yama's
# ptrace_scope is 0 or absent) the job can ptrace it and make it call setsid() (security
# round 16: tried with a real job, which then ran on after its Stop, its cards given to the
# next job). Its parent stays in the group (the outer bwrap, or once that has ended the
# shim, a subreaper), so the children of the group's processes that are outside it are
# signalled and waited for too. Only pid 1 is such a child: the sandbox's other processes
# are pid 1's descendants, and die with it. Its death takes a while: a pid namespace's init
# dies only once it has killed and reaped every other process of the namespace (the kernel's
# zap_pid_ns_processes), which takes longer the more processes there are and the busier the
# machine. Its group is killed only after that (signal_group's `hold_escaped`): killed
# before, its parent (the shim) dies first, it goes to init, out of the worker's sight, and
# the job read Stopped while processes of it still ran (seen once in a full CI run, and every
# time with 400 processes in the sandbox: tests/test_runner_job_users.py).
def _escaped_children(processes: list[_Process], pgid: int) -> list[int]:
    members = {p.pid for p in processes if p.pgid == pgid}
    return [p.pid for p in processes if p.ppid in members and p.pgid != pgid and p.alive]


def live_process_groups() -> set[int]:
    """Process group ids that have at least one process not yet dead (zombies are dead:
    only their parent's wait is missing, and it may never come inside a container), or a
    live child (outside the group) of one of its processes."""
    processes = _processes()
    group_of = {p.pid: p.pgid for p in processes}
    groups = set()
    for process in processes:
        if process.alive:
            groups.add(process.pgid)
            if process.ppid in group_of:
                groups.add(group_of[process.ppid])
    return groups


def _start_if_holding(pid: int, lock: os.stat_result) -> str | None:
    """The start time of process `pid` if it has the file `lock` open, else None.

    Only our shim holds a replica's lock file open (the worker closes its copy after the
    spawn, and the shim's command does not inherit it), so this tells our shim from a
    process that got a recycled pid. The start time is read before and after the look at
    its descriptors: a pid that changed hands in between is not trusted."""
    start = process_start(pid)
    if start is None:
        return None
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:  # gone, or not ours
        return None
    for fd in descriptors:
        try:
            target = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (target.st_dev, target.st_ino) == (lock.st_dev, lock.st_ino):
            return start if process_start(pid) == start else None
    return None


def live_shim(state: Path) -> tuple[int, str] | None:
    """(pid, start time) of the live shim of the replica whose files are in `state`.

    For a replica the worker spawned but never recorded (it was killed right after the
    spawn). The shim writes `pid` once its command has started; before that (or if the file
    names a process that does not hold the lock) the lock holder is looked for in /proc."""
    try:
        lock = os.stat(state / "lock")
    except OSError:
        return None
    # Never pid 1 (review64), whatever holds the lock: its process group signalled is every
    # process (signal_group refuses it too).
    with contextlib.suppress(OSError, ValueError):
        pid = int((state / "pid").read_text().strip())
        start = _start_if_holding(pid, lock) if pid > 1 else None
        if start is not None:
            return pid, start
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) not in (1, os.getpid()):
            start = _start_if_holding(int(entry.name), lock)
            if start is not None:
                return int(entry.name), start
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ports_of_active_jobs() -> set[int]:
    """The ports handed to local jobs still running or stopping: each one's MASTER_PORT and
    its current attempt's replica ports. They may not be bound yet (a job binds its ports
    when its program gets that far), so the kernel would call them free."""
    from .models import ACTIVE_STATUSES

    used: set[int] = set()
    runs = LocalRun.objects.filter(job__backend="local", job__status__in=ACTIVE_STATUSES)
    for public_id, attempt, master_port in runs.values_list(
        "job__public_id", "attempt", "master_port"
    ):
        if master_port:
            used.add(master_port)
        with contextlib.suppress(OSError, ValueError, AttributeError):
            ports = json.loads((attempt_dir(public_id, attempt) / "ports.json").read_text())
            used.update(int(port) for port in ports.values())
    return used


def job_ports(count: int, *, taken: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """`count` ports for a job, from LOCAL_PORTS: none that another active job was handed
    (only the worker hands them out), nor one something on this machine has bound or left
    in TIME_WAIT. Another program may still bind one before the job does: outside the
    kernel's ephemeral range, only one that binds that very port itself."""
    low, high = settings.LOCAL_PORTS
    taken = set(taken) | _ports_of_active_jobs()
    size = high - low + 1
    start = random.randrange(size)  # spread: a port just freed is not the next one given
    found: list[int] = []
    for offset in range(size):
        port = low + (start + offset) % size
        if port in taken:
            continue
        with socket.socket() as s, contextlib.suppress(OSError):
            s.bind(("0.0.0.0", port))  # a trial bind, closed at once
            found.append(port)
            if len(found) == count:
                return found
    logger.warning("LOCAL_PORTS %s-%s has no %s free ports; using any free port", low, high, count)
    while len(found) < count:
        port = free_port()
        if port not in taken and port not in found:
            found.append(port)
    return found


# -- files of one attempt ------------------------------------------------------------


def runner_key() -> str:
    """Where this worker runs replicas: its host and LOCAL_RUN_DIR, recorded on each run it
    starts (LocalRun.runner). A replica's files (its `lock` above all) are the only way to
    tell whether it lives, and they are on that host, in that folder."""
    return f"{socket.gethostname()}:{Path(settings.LOCAL_RUN_DIR).resolve()}"[:1024]


def followed_here() -> Q:
    """The local jobs this worker follows (supervises, evicts, starts again when a replica
    was never launched): the runs it started, and runs started before runners were recorded.

    A run another worker started on another host or in another run directory is left alone,
    decided so a takeover by a worker elsewhere (jobs.health) is safe: its files are not
    here, so to this worker every replica would look never launched, and supervising it
    would launch a second copy of replicas that may well still run there. It is followed
    again once a worker with that host and run directory holds the lease."""
    return Q(local_run__runner__in=["", runner_key()]) | Q(local_run__isnull=True)


@dataclass(frozen=True)
class RecordedEnd:
    """How a job that ran where no worker follows it ended, read from its replicas' exit
    records (recorded_end_where_it_ran): Succeeded, Failed or Timed out, why (None when it
    succeeded with every replica's 0), when (its time limit, when Timed out), each replica's
    record (by its row's id), the replicas a tear-down ended (their rows say Stopped, as
    supervise records them), and whether it is a failure its fault tolerance restarts
    (restarts left). `running`: the replicas still running there once the job's end is
    decided by those that decide it (an MPI job's launcher, a TensorFlow job's chief), which
    a worker there would now end (fix127): an MPI job's workers' agents, told by the `done`
    file once its launcher exited 0 (`launcher_done`), a TensorFlow job's parameter servers,
    stopped."""

    status: JobStatus
    why: str | None
    ended_at: datetime | None
    states: dict[int, ReplicaState]
    stopped: frozenset[int] = frozenset()
    restartable: bool = False
    running: frozenset[int] = frozenset()
    launcher_done: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status == S.SUCCEEDED


def exits_recorded_where_it_ran(job: Job, run: LocalRun) -> RecordedEnd | None:
    """The job's end as its replicas recorded it where it ran, when every replica of its
    attempt has an exit record there (recorded_end_where_it_ran, none still running); None
    otherwise. What a reviewer's Mark as lost ends a job with: it sends nothing to the
    replicas still running there (the worker does, holding that folder's lock)."""
    end = recorded_end_where_it_ran(job, run)
    return end if end is not None and not end.running else None


def recorded_end_where_it_ran(job: Job, run: LocalRun) -> RecordedEnd | None:
    """The job's end as its replicas recorded it in the run directory its worker started it
    in, when that is on this host and the replicas that decide it have an exit record there
    (every replica; an MPI job's launcher, a TensorFlow job's chief or worker 0: those others
    left running then are its `running`); None otherwise (another host, the folder gone, a
    replica that decides it still running, one lost, a restart its worker had decided).
    Found in QA (qa102): a job running when a backup was taken and restored into another
    CONSOLE_VAR_DIR on the same host, which finished meanwhile, could only be marked as
    lost, ending a succeeded job Failed. Only the recorded folder is read: a restored copy
    of it (jobs.logs.job_dir's fallback) was copied while the job ran.

    It ends as its own worker would have ended it, had it looked then (supervise): a failure
    or restart that worker had already decided (its stop target) stands over the exit codes,
    since the replicas it stopped may well have caught the SIGTERM and exited 0 (review 54);
    an end after the job's time limit is Timed out at the limit (left25); the earliest exit
    other than 0 is its failure, except from a replica a tear-down ended and, in a
    TensorFlow job, one that ended after its chief's exit with 0 decided it (review 37); an
    MPI job's work ended with its launcher (review 24)."""
    host, sep, run_dir = run.runner.partition(":")
    if not (sep and run_dir) or host != socket.gethostname():
        return None
    if run.stop_target not in ("", TARGET_FAILED, TARGET_SUCCEEDED):
        # A restart its worker decided (fault tolerance) is that worker's to make: the
        # attempt's end is not the job's. (A stop's target makes the job Stopping.)
        return None
    replicas = list(job.replicas.all())
    if not replicas:
        return None
    job_folder = Path(run_dir) / job.public_id
    attempt = job_folder / f"attempt-{run.attempt}"
    try:
        if any(
            (number := later.name.removeprefix("attempt-")).isdigit() and int(number) > run.attempt
            for later in job_folder.glob("attempt-*")
        ):
            # Restarted there after the backup (fault tolerance): this attempt's end is not
            # the job's, and the later one's replicas are not the database's (review 53).
            return None
        states = {r.pk: read_state(attempt / f"{r.role}-{r.index}") for r in replicas}
        # As _result_replicas tells it: its run folder says it is MPI, without the spec too.
        launchers = [r for r in replicas if r.role == "master"]
        mpi = bool(launchers) and (attempt / "mpi" / "launcher").is_dir()
    except OSError:
        # The old folder unreadable from here (another owner after the restore, a read-only
        # mount): the job is marked lost as before, never a 500 (review 53).
        return None
    result = tensorflow_result_replica(job, replicas)
    deciding = launchers if mpi else [result] if result is not None else replicas
    # A failure its worker had decided (a hang with its restarts used up, fix130) is the
    # job's end whatever the replicas it was stopping do: those still alive (hung, on the
    # cards) are its `running`, ended as that worker would have (review 60).
    decided_failure = run.stop_target == TARGET_FAILED
    if not decided_failure and any(states[r.pk].phase != "exited" for r in deciding):
        return None
    # Those that ended once a tear-down had signalled them (a grace period before kill_at):
    # a TensorFlow job's parameter servers, the peers of a failed replica; by its own worker
    # or, once it was gone, by this one (_end_the_rest_where_it_ran).
    grace = timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS)
    signalled = run.kill_at - grace if run.kill_at is not None else None
    stopped = frozenset(
        pk
        for pk, state in states.items()
        if signalled is not None and (state.exited_at is None or state.exited_at >= signalled)
    )
    if any(s.phase not in ("exited", "alive") and pk not in stopped for pk, s in states.items()):
        # Lost: a worker there would fail it, or restart it. (One a tear-down's SIGTERM found
        # still starting, its shim not yet set to record the stop, ended lost: stopped.)
        return None
    running = frozenset(pk for pk, state in states.items() if state.phase == "alive")
    launcher_done = mpi and all(states[r.pk].exit_code == 0 for r in launchers)
    try:
        spec: JobSpec | None = job.job_spec()
    except SpecError:
        spec = None  # followed without it, as supervise does: no time limit, no restart
    deadline = _deadline(job, run, spec, timezone.now())
    last_exit = last_exit_time([s for s in states.values() if s.phase == "exited"])

    def ended(
        status: JobStatus, why: str | None, at: datetime | None, *, restartable: bool = False
    ) -> RecordedEnd:
        return RecordedEnd(status, why, at, states, stopped, restartable, running, launcher_done)

    if decided_failure:
        why = recorded(
            gettext_noop("its worker there had already decided that it fails: %(failure)s"),
            failure=restored(run.stop_message, run.stop_message_source),
        )
        return ended(S.FAILED, why, last_exit)
    after_result = _after_result(job, replicas, states)
    for replica in _in_order_of_failure(replicas, states):
        state = states[replica.pk]
        if state.phase != "exited" or state.exit_code == 0:
            continue
        if replica.pk in stopped or replica.pk in after_result:
            continue  # the stop's doing, or after the job's result was decided
        if spec and deadline and state.exited_at is not None and state.exited_at > deadline:
            # Its time limit came first: a worker watching would have timed it out there.
            return ended(S.TIMED_OUT, _timed_out_message(spec), deadline)
        label = f"{replica.role}-{replica.index}"
        code = state.exit_code or 0
        # Not _oom_failure: it reads this process's cgroups (a web server's, for Mark as
        # lost), not those of the worker that ran it, and writes the replica's row.
        failure = (
            spec and _read_only_failure(job, spec, label, code, runner=run.runner)
        ) or exit_message(label, code)
        restartable = spec is not None and job.restarts < restart_limit(spec)
        return ended(S.FAILED, failure, last_exit, restartable=restartable)
    # Its work ended with its launcher (an MPI job: its workers' agents end once told), or
    # when the last replica that was not stopped did (a TensorFlow job's parameter servers
    # are stopped after its chief's exit decided it).
    worked = [states[r.pk] for r in deciding] if mpi else []
    worked = worked or [s for pk, s in states.items() if pk not in stopped | running]
    ended_at = last_exit_time(worked) or last_exit
    if spec and deadline and ended_at is not None and ended_at > deadline:
        return ended(S.TIMED_OUT, _timed_out_message(spec), deadline)
    why = None
    if result is not None and (stopped or running):
        why = _tensorflow_ended_message(result, [r for r in replicas if r.pk in stopped | running])
    return ended(S.SUCCEEDED, why, ended_at)


def _tensorflow_ended_message(result: JobReplica, stopped: list[JobReplica]) -> RecordedText:
    return recorded(
        gettext_noop(
            "%(replica)s exited with 0, which ends a TensorFlow job as Kubeflow's TFJob "
            "does; the replicas still running were stopped: %(others)s."
        ),
        replica=f"{result.role}-{result.index}",
        others=Words(tuple(sorted(f"{r.role}-{r.index}" for r in stopped))),
    )


def job_end_as_recorded(*, job: Job, end: RecordedEnd, message: str, actor: Any = None) -> bool:
    """Ends a running job as its replicas recorded where it ran (`end`,
    exits_recorded_where_it_ran): Succeeded, Failed or Timed out, and its alert, sent only by
    the transition that ended it (a reviewer's Mark as lost and the worker racing on it send
    one). Its replicas' rows say how each ended, as a worker following it records them: they
    showed Running, without an exit code, on a job that had ended. Returns whether this call
    ended it."""
    reason = {S.SUCCEEDED: "Succeeded", S.TIMED_OUT: "TimedOut"}.get(end.status, "Failed")
    done = job_transition(
        job=job,
        to=end.status,
        reason=reason,
        message=message,
        warning=not end.succeeded,
        actor=actor,
        ended_at=end.ended_at,
    )
    if done:
        now = timezone.now()
        for replica in job.replicas.filter(pk__in=end.states):
            stopping = replica.pk in end.stopped
            _record_replica(replica, end.states[replica.pk], now, stopping=stopping)
        item = "jobSucceed" if end.succeeded else "jobFailed"
        job_alert(job=job, item=item, message=named_for_alert(job=job, message=message))
    return done


@contextlib.contextmanager
def no_worker_runs_in(run_dir: str) -> Iterator[bool]:
    """Whether no worker, of this console or of any other, runs in `run_dir` on this host:
    none holds its worker.lock (jobs.worker.take_worker_lock, taken before anything else,
    by an active worker and one standing by alike). Held until the block ends, so none
    starts there meanwhile. False when that cannot be told (no lock file there)."""
    try:
        fd = os.open(Path(run_dir) / "worker.lock", os.O_RDONLY)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # and with it the lock


# How often the worker looks at another run directory of this machine for the jobs it does
# not follow that ended there (end_jobs_ended_where_they_ran): at most once a minute each,
# not on every tick, since one on a network file system that hangs holds the tick up (every
# job's start, stop and timeout) until it answers.
OTHER_RUN_DIR_LOOK_SECONDS = 60.0


def end_jobs_ended_where_they_ran(*, looked_at: dict[str, float]) -> int:
    """Ends each Running local job this worker does not follow that ended where it ran: in
    another run directory of this host (a backup restored into another CONSOLE_VAR_DIR, a
    changed LOCAL_RUN_DIR) where no worker runs now, as its replicas' exit records there say
    (recorded_end_where_it_ran). As Mark as lost ends such a job (qa102), without waiting for
    a reviewer: until then it held its cards and showed Running for ever. Those of its
    replicas that wait for a worker there to end them once the job's end is decided (an MPI
    job's workers' agents, a TensorFlow job's parameter servers) are ended first, as that
    worker would (_end_the_rest_where_it_ran), and the job at a later look (fix127).
    A job whose folder has a worker (the old console's, or one standing by for this one) is
    that worker's to follow and end, and so is a restart its fault tolerance makes or would
    make. Each run directory is looked at once per OTHER_RUN_DIR_LOOK_SECONDS (`looked_at`:
    the worker's, when it last looked at each, time.monotonic()). Returns how many it ended."""
    host = socket.gethostname()
    now = time.monotonic()
    for run_dir, at in list(looked_at.items()):
        if now - at >= OTHER_RUN_DIR_LOOK_SECONDS:
            del looked_at[run_dir]
    recent = set(looked_at)
    # A Stop of a job being ended there (a Stop in the minute after its parameter servers'
    # SIGTERM) is carried out too: until review 60 it stayed Stopping for ever. So is a
    # Delete's stop (fix144: it stayed Stopping for ever); the job is deleted once stopped.
    stopped = Q(status=JobStatus.STOPPING, local_run__stop_target=TARGET_STOPPED)
    candidates = (
        Job.objects.filter(Q(status=JobStatus.RUNNING) | stopped, backend="local")
        .exclude(followed_here())
        .filter(local_run__runner__startswith=f"{host}:")
        .exclude(local_run__stop_target=TARGET_RESTART)
        .select_related("local_run")
    )
    ended = 0
    for job in candidates:
        run_dir = job.local_run.runner.partition(":")[2]
        if run_dir in recent:
            continue
        looked_at.setdefault(run_dir, now)  # its other jobs are looked at in this tick too
        try:
            ended += _end_as_ended_where_it_ran(job)
        except DatabaseError:
            raise  # the database's trouble, not this job's: the worker's tick says it once
        except Exception:
            # One job's trouble (its folder unreadable in a way not foreseen) is logged; the
            # others are still looked at in this tick (review 54).
            logger.exception("%s: ending it as it ended where it ran failed", job.public_id)
    _kill_the_rest_of_ended_jobs(host=host, recent=recent, looked_at=looked_at, now=now)
    return ended


# How long after a tear-down's kill_at the worker still sends SIGKILL to the replicas left
# alive in another run directory of a job that ended meanwhile (_kill_the_rest_of_ended_jobs):
# the first look past it kills them; an escaped pid 1 is waited for ESCAPED_HOLD_SECONDS.
ENDED_TEAR_DOWN_KILL_SECONDS = 3600


def _kill_the_rest_of_ended_jobs(
    *, host: str, recent: set[str], looked_at: dict[str, float], now: float
) -> None:
    """SIGKILL, past its kill_at, to the replicas still alive in another run directory of this
    host, where no worker runs, of a job that ended during the tear-down that kill_at records
    (_end_the_rest_where_it_ran's, or its old worker's): a reviewer's Mark as lost within the
    grace (a parameter server ignoring SIGTERM) ended it, and nothing sent the SIGKILL, so it
    ran for ever (review 60). The reviewer keeps that power; the tear-down is finished."""
    from .models import ACTIVE_STATUSES

    at = timezone.now()
    ended_jobs = (
        Job.objects.filter(backend="local", local_run__runner__startswith=f"{host}:")
        .exclude(status__in=ACTIVE_STATUSES)
        .exclude(followed_here())
        .filter(
            local_run__kill_at__lte=at,
            local_run__kill_at__gte=at - timedelta(seconds=ENDED_TEAR_DOWN_KILL_SECONDS),
        )
        .select_related("local_run")
    )
    for job in ended_jobs:
        run = job.local_run
        run_dir = run.runner.partition(":")[2]
        if run_dir in recent:
            continue
        looked_at.setdefault(run_dir, now)
        attempt = Path(run_dir) / job.public_id / f"attempt-{run.attempt}"
        with no_worker_runs_in(run_dir) as free:
            # A worker there ends them itself (end_leftover_replicas).
            if free and run.sigterm_due:
                _sigterm_again_where_it_ran(run, attempt, list(job.replicas.all()), at)
            elif free:
                _kill_where_it_ran(job, run, attempt, list(job.replicas.all()), at)


def _end_as_ended_where_it_ran(job: Job) -> bool:
    run = job.local_run
    run_dir = run.runner.partition(":")[2]
    if job.status == JobStatus.STOPPING:
        return _stop_where_it_ran(job, run)
    with no_worker_runs_in(run_dir) as free:
        # Its files read outside the transaction (on SQLite that holds the database's write
        # lock): with no worker there, nothing but exit records is written in them, and the
        # job's row is checked again inside.
        end = recorded_end_where_it_ran(job, run) if free else None
        if end is None or end.restartable:
            # A failure its fault tolerance would restart: its worker may only be restarting
            # (systemd), and would start it again as the next attempt; or a reviewer's Mark
            # as lost ends it.
            return False
        if end.running:
            # Still holding the folder's lock, so no worker starts there meanwhile.
            _end_the_rest_where_it_ran(job, run, end)
            return False
        with transaction.atomic():
            # As job_mark_lost holds it: a reviewer marking it at once waits, then finds it
            # ended.
            as_read = _still_as_read(job, run, status=JobStatus.RUNNING)
            if as_read is None:
                return False
            current = as_read[1]
            done = job_end_as_recorded(
                job=current, end=end, message=_ended_where_it_ran_message(end)
            )
        if done:
            # Its /tmp folders there go, as a job's do when it ends (_finished), while no
            # worker can start there; its logs stay.
            _remove_scratch(Path(run_dir) / job.public_id / f"attempt-{run.attempt}")
            logger.warning(
                "%s ended %s from its exit records in %s", job.public_id, end.status, run_dir
            )
    return done


def _still_as_read(job: Job, run: LocalRun, *, status: str) -> tuple[LocalRun, Job] | None:
    """The job's run, locked, and the job, when both are still as they were read before an end
    is decided from an old run folder (same run, attempt, stop target and kill time, the job
    still in `status`): else None, someone (a Stop, a Mark as lost, a worker) acted
    meanwhile. Called inside the transaction that ends the job."""
    locked = LocalRun.objects.select_for_update().filter(job=job).first()
    current = Job.objects.filter(pk=job.pk).first()
    if (
        locked is None
        or current is None
        or (locked.runner, locked.attempt, locked.stop_target, locked.kill_at)
        != (run.runner, run.attempt, run.stop_target, run.kill_at)
        or current.status != status
    ):
        return None
    return locked, current


def _stop_where_it_ran(job: Job, run: LocalRun) -> bool:
    """Carries out a Stop of a job whose run folder is another run directory of this host
    where no worker runs (review 60), as a worker there would (_tear_down): SIGTERM to the
    replicas alive there, kill_at a grace period ahead (kept if a tear-down there had set
    it), SIGKILL at a look past it; once none is alive, the job ends Stopped, or Succeeded
    when its work had ended with 0 before the stop's first signal (_finished_before_stop). A
    Delete's stop ends it so too, and the worker's sweep of stopped jobs awaiting deletion
    (jobs.worker's delete_requested, later in the same tick) deletes it then (fix144).
    Returns whether this call ended it."""
    run_dir = run.runner.partition(":")[2]
    attempt = Path(run_dir) / job.public_id / f"attempt-{run.attempt}"
    with no_worker_runs_in(run_dir) as free:
        if not free:
            return False
        replicas = list(job.replicas.all())
        try:
            states = {r.pk: read_state(attempt / f"{r.role}-{r.index}") for r in replicas}
        except OSError:
            return False  # unreadable from here: a reviewer can mark it as lost
        alive = [r for r in replicas if states[r.pk].phase == "alive"]
        now = timezone.now()
        if alive and run.kill_at is None:
            kill_at = now + timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS)
            if LocalRun.objects.filter(
                pk=run.pk, kill_at=None, job__status=JobStatus.STOPPING
            ).update(kill_at=kill_at, sigterm_due=True):
                _sigterm_where_it_ran(run, attempt, alive, kill_at=kill_at)
            return False
        if alive:
            if run.sigterm_due:
                _sigterm_again_where_it_ran(run, attempt, alive, now)
            elif now >= run.kill_at:
                _kill_where_it_ran(job, run, attempt, alive, now)
            return False
        with transaction.atomic():
            as_read = _still_as_read(job, run, status=JobStatus.STOPPING)
            if as_read is None:
                return False
            locked, current = as_read
            finished = _finished_before_stop(current, locked, replicas, states)
            if finished is not None:
                final, reason = S.SUCCEEDED, "Succeeded"
                ended_at, text = finished
            else:
                final, reason = S.STOPPED, "Stopped"
                ended_at = last_exit_time(list(states.values()))
                message = restored(run.stop_message, run.stop_message_source)
                text = message or recorded(gettext_noop("Stopped."))
            done = job_transition(
                job=current, to=final, reason=reason, message=text, ended_at=ended_at
            )
            if done:
                for replica in replicas:
                    _record_replica(replica, states[replica.pk], now, stopping=True)
            if done and final == S.SUCCEEDED:
                job_alert(
                    job=current,
                    item="jobSucceed",
                    message=recorded(gettext_noop("%(name)s succeeded."), name=job.task_name),
                )
        if done:
            _remove_scratch(attempt)
            logger.warning("%s ended %s from its exit records in %s", job.public_id, final, run_dir)
    return done


def _end_the_rest_where_it_ran(job: Job, run: LocalRun, end: RecordedEnd) -> None:
    """Ends the replicas still running where the job ran once its end is decided (`end`), as
    a worker there would (supervise), while no worker runs there: an MPI job's workers'
    agents, waiting for a worker to see their launcher end, are told as _mpi_launcher_done
    tells them (the `done` file; they exit 0), and stopped besides if the job did not
    succeed (a failure, its time limit); any other (a TensorFlow job's parameter servers,
    which serve until stopped) is stopped as _tear_down stops them: SIGTERM, recorded as the
    run's kill_at a grace period ahead, and SIGKILL at a look after it, recorded as 137. The
    job ends once every one has an exit record (a later look)."""
    attempt = Path(run.runner.partition(":")[2]) / job.public_id / f"attempt-{run.attempt}"
    if end.launcher_done:
        done = attempt / "mpi" / "launcher" / "done"
        try:
            if not done.exists():
                done.touch()
            told_at = done.stat().st_mtime
        except OSError as exc:
            # A read-only or foreign folder: said once a look, in one line (review 60).
            logger.warning("%s: could not tell its MPI agents: %s", job.public_id, exc)
            return
        # Agents told that do not exit (hung) are stopped as a failure's are, once a grace
        # period has passed since they were told (review 60): until then the job ran for ever.
        if end.succeeded and time.time() < told_at + settings.LOCAL_STOP_GRACE_SECONDS:
            return
    every = list(job.replicas.all())
    replicas = [r for r in every if r.pk in end.running]
    now = timezone.now()
    if run.kill_at is None:
        result = tensorflow_result_replica(job, every)
        if end.succeeded and result is not None:
            try:
                spec: JobSpec | None = job.job_spec()
            except SpecError:
                spec = None
            deadline = _deadline(job, run, spec, now)
            decided_at = end.states[result.pk].exited_at
            if _workers_given_time(every, end.states, decided_at, deadline, now):
                return  # left to end by themselves first, as supervise leaves them
        kill_at = now + timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS)
        # The kill_at and its event are committed together, with the SIGTERM still due, and
        # only then is SIGTERM sent: a worker killed in between never leaves a SIGKILL that no
        # event came before (review 60), and the SIGTERM it did not send is sent by the next
        # look (sigterm_due), never a SIGKILL alone (fix142).
        with transaction.atomic():
            # Only while nothing changed it (a reviewer's Mark as lost ended it meanwhile).
            if not LocalRun.objects.filter(
                pk=run.pk, kill_at=None, stop_target=run.stop_target, job__status=JobStatus.RUNNING
            ).update(kill_at=kill_at, sigterm_due=True):
                return
            if not run.stop_target:  # else its worker said it as it decided
                _said_where_it_ran(job, end, result, replicas)
        _sigterm_where_it_ran(run, attempt, replicas, kill_at=kill_at)
    elif run.sigterm_due:
        _sigterm_again_where_it_ran(run, attempt, replicas, now)
    elif now >= run.kill_at:
        _kill_where_it_ran(job, run, attempt, replicas, now)


def _sigterm_where_it_ran(
    run: LocalRun, attempt: Path, replicas: list[JobReplica], *, kill_at: datetime
) -> None:
    """The SIGTERM of a tear-down where the job ran, its `kill_at` committed with sigterm_due
    set: sent to the replicas alive there, then sigterm_due cleared (while that kill_at still
    stands)."""
    for replica in replicas:
        _signal_where_it_ran(attempt / f"{replica.role}-{replica.index}", signal.SIGTERM)
    LocalRun.objects.filter(pk=run.pk, kill_at=kill_at).update(sigterm_due=False)


def _sigterm_again_where_it_ran(
    run: LocalRun, attempt: Path, replicas: list[JobReplica], now: datetime
) -> None:
    """The SIGTERM a worker killed after committing its tear-down's kill_at did not send
    (sigterm_due still set): sent now, the SIGKILL a grace period after it, as any tear-down
    gives. A replica that had the first SIGTERM after all gets a second one, which ends it
    as the first would: better than a SIGKILL that no SIGTERM came before, which gives the
    job no chance to save its work."""
    kill_at = now + timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS)
    if LocalRun.objects.filter(pk=run.pk, kill_at=run.kill_at, sigterm_due=True).update(
        kill_at=kill_at
    ):
        _sigterm_where_it_ran(run, attempt, replicas, kill_at=kill_at)


def _kill_where_it_ran(
    job: Job, run: LocalRun, attempt: Path, replicas: list[JobReplica], now: datetime
) -> None:
    """SIGKILL to the replicas still alive where the job ran, past its tear-down's kill_at,
    as _tear_down sends it: an escaped pid 1 that will not die holds its group for
    ESCAPED_HOLD_SECONDS (signal_group's `hold_escaped`), and each is recorded as killed
    (137). A group that outlives it is said in the log; it is sent again at the next look
    while its shim lives."""
    assert run.kill_at is not None
    patient = now < run.kill_at + timedelta(seconds=ESCAPED_HOLD_SECONDS)
    killed: list[JobReplica] = []
    for replica in replicas:
        state = attempt / f"{replica.role}-{replica.index}"
        group = _shim_where_it_ran(state)
        if group is None:
            continue
        signal_group(group, signal.SIGKILL, hold_escaped=patient)
        _record_killed_in(state, job.public_id)
        killed.append(group)
    if stragglers := groups_still_alive(killed, wait=STRAGGLER_WAIT_SECONDS):
        logger.warning(
            "%s: %s process group(s) in %s outlived SIGKILL; sent again at the next look",
            job.public_id,
            len(stragglers),
            attempt,
        )


def _said_where_it_ran(
    job: Job, end: RecordedEnd, result: JobReplica | None, replicas: list[JobReplica]
) -> None:
    """The event supervise says as it stops the replicas still running: a TensorFlow job's
    success decided by its chief (`result`: "Succeeding"), a failure ("ReplicaFailed")."""
    if end.succeeded:
        if result is None:
            return
        job_event(
            job=job,
            reason="Succeeding",
            message=recorded(
                gettext_noop(
                    "%(replica)s exited with 0, which ends a TensorFlow job: stopping the "
                    "replicas still running (%(others)s) with SIGTERM, SIGKILL after "
                    "%(seconds)s s."
                ),
                replica=f"{result.role}-{result.index}",
                others=Words(tuple(sorted(f"{r.role}-{r.index}" for r in replicas))),
                seconds=f"{settings.LOCAL_STOP_GRACE_SECONDS:g}",
            ),
        )
    elif end.status == S.FAILED and end.why:
        job_event(job=job, reason="ReplicaFailed", message=end.why, warning=True)
    elif end.status == S.TIMED_OUT and end.why:
        # Its time limit decided it: said as a watching worker's timeout says it (review 60).
        job_event(job=job, reason="Timeout", message=end.why, warning=True)


def _signal_where_it_ran(state: Path, sig: int) -> bool:
    """Signals the process group of the replica whose files are in `state`, found by its
    shim's `pid` file (_shim_where_it_ran): the pid its row has may be another console's,
    recorded before a backup. Whether it was found alive."""
    group = _shim_where_it_ran(state)
    if group is None:
        return False
    signal_group(group, sig)
    return True


def _shim_where_it_ran(state: Path) -> JobReplica | None:
    """The live shim of the replica whose files are in `state`, as a row to signal: the
    process its `pid` file names, if that one holds the replica's lock and kept its start
    time meanwhile (_start_if_holding). Not live_shim's search of /proc: any process with
    the lock open would do there (a `tar` of the folder, a web process's read_state), and
    its process group would be signalled (review 60). A shim that has not yet written its
    `pid` file is found at a later look."""
    try:
        lock = os.stat(state / "lock")
        pid = int((state / "pid").read_text().strip())
    except (OSError, ValueError):
        return None
    start = _start_if_holding(pid, lock)
    return None if start is None else JobReplica(pid=pid, process_start=start)


def _ended_where_it_ran_message(end: RecordedEnd) -> RecordedText:
    if end.succeeded and not end.why:
        return recorded(
            gettext_noop(
                "Ended as it ended where it ran (another run directory on this machine, "
                "where no worker runs now): all replicas exited with code 0."
            )
        )
    return recorded(
        gettext_noop(
            "Ended as it ended where it ran (another run directory on this machine, "
            "where no worker runs now): %(why)s"
        ),
        why=end.why or "",
    )


def waits_for_its_worker(run: LocalRun) -> bool:
    """Whether the run was started where the active worker is not (another host or run
    directory): that worker cannot reach its processes, so a stop waits for a worker to run
    there again. False while no worker runs at all (the worker's banner says that)."""
    if not run.runner:
        return False  # started before runners were recorded: followed by any worker
    active = active_runner()
    if active is None or active == run.runner:
        return False
    host, _, run_dir = run.runner.partition(":")
    if host == active.partition(":")[0] == socket.gethostname():
        # Its folder is on the active worker's machine, where no worker runs: that worker
        # stops it there (end_jobs_ended_where_they_ran, review 60).
        with no_worker_runs_in(run_dir) as free:
            return not free
    return True


def stopped_at_looks_there(run: LocalRun) -> bool:
    """Whether the run was started in another run directory of the active worker's machine,
    where no worker runs: that worker stops its replicas there (end_jobs_ended_where_they_ran),
    not at once but at its looks there, once a minute (OTHER_RUN_DIR_LOOK_SECONDS)."""
    active = active_runner()
    if not run.runner or active is None or active == run.runner:
        return False
    host, _, run_dir = run.runner.partition(":")
    if not host == active.partition(":")[0] == socket.gethostname():
        return False
    with no_worker_runs_in(run_dir) as free:
        return free


def attempt_dir(public_id: str, attempt: int, runner: str = "") -> Path:
    """`runner`: where the job started, for a reader other than the worker following it
    (job_logs.job_dir); the worker's own jobs are in its LOCAL_RUN_DIR."""
    return job_logs.job_dir(public_id, runner) / f"attempt-{attempt}"


def replica_state_dir(public_id: str, attempt: int, label: str, runner: str = "") -> Path:
    return attempt_dir(public_id, attempt, runner) / label


# Why start_job failed a job whose folder's earlier run could not be set aside.
EARLIER_RUN_NOT_SET_ASIDE = gettext_noop(
    "its folder holds the records and logs of an earlier run of it, which could not be moved "
    "aside (%(error)s). Nothing of them was deleted. Once the job's folder can be written, run "
    "the job again."
)
# Where start_job moves what a job's folder held from an earlier run of it, inside the job's
# folder (so its Delete and its retention remove it too), named by the UTC time of the move.
EARLIER_RUN = "earlier-run-"


def earlier_run_set_aside(public_id: str) -> str:
    """Moves what the job's folder in this LOCAL_RUN_DIR holds (its attempts' records, its
    logs) into a folder `earlier-run-<UTC time>` of it, and says that folder's name ("": the
    folder held nothing to move). Called as a Queued job starts, which always begins at
    attempt 1 with an empty folder, unless the database is a restored backup and the old
    console ran the job after the backup (qa110): attempt-1's records were then read as this
    run's, its old exit record adopted ("Succeeded" a second after "Started", nothing run),
    and its log was appended to the old one. Decided: moved, not deleted, for the operator
    who wants the old run's log; not in the job's log, which is this run's alone. Its /tmp
    folders go as a finished job's do. Raises OSError if it cannot move them (the start fails
    from Queued, as a refused one does,
    saying why)."""
    folder = job_logs.job_dir(public_id)
    try:
        held = sorted(e.name for e in folder.iterdir() if not e.name.startswith(EARLIER_RUN))
    except FileNotFoundError:
        return ""
    if held and _start_cut_short(folder, held):
        unmake_run_folder(public_id)
        return ""
    if not held:
        return ""
    aside = folder / f"{EARLIER_RUN}{timezone.now():%Y%m%dT%H%M%S.%fZ}"
    aside.mkdir()
    for name in held:
        if name.startswith("attempt-"):
            _remove_scratch(folder / name)
        os.rename(folder / name, aside / name)
    return aside.name


def _start_cut_short(folder: Path, held: list[str]) -> bool:
    """Whether what the job's folder holds is only what make_run_folder makes as a start
    begins (attempt-1 with its ports file, an empty logs folder): a start cut short before
    it was committed (its worker killed, the database refusing the commit) left it, the job
    still Queued and nothing of it run. It is no earlier run to set aside (fix155: the next
    start moved it to earlier-run-… saying a restored backup's run was there), and its ports
    file is not this start's (make_run_folder keeps one it finds)."""
    if not set(held) <= {"attempt-1", "logs"}:
        return False
    try:
        attempt = [e.name for e in (folder / "attempt-1").iterdir()] if "attempt-1" in held else []
        logs = list((folder / "logs").iterdir()) if "logs" in held else []
    except OSError:
        return False
    return set(attempt) <= {"ports.json"} and not logs


@dataclass
class ReplicaState:
    phase: str  # "unlaunched", "alive", "exited", "lost"
    exit_code: int | None = None
    # Its shim found no sandbox to run (LOCAL_BWRAP gone since the worker looked): exit 127.
    no_sandbox: bool = False
    keyword: dict[str, Any] | None = None  # "keyword", "line"; "time", when found
    tmp_over: dict[str, int] | None = None  # its /tmp went over the cap: bytes used, limit
    # The worker evicted it for disk pressure (evict_for_disk_pressure): its /tmp's bytes,
    # the disk's free bytes and the threshold then (or, short of inodes, its /tmp's entries,
    # the disk's free and total inodes and the share).
    evicted: dict[str, int] | None = None
    # When its command ended, as its shim (or the worker's SIGKILL) recorded it: a worker that
    # was not running then learns of the end later, and the job's run time, its card-hours
    # and its replicas' end go by this, not by when the worker looked (QA 31).
    exited_at: datetime | None = None
    # An MPI worker's agent saw a rank end other than with 0 (jobs/mpi_agent.py), by launch
    # (a launcher's id: a job may run two at once): {"code": N} or {"signal": N}, and
    # "time", when (the record's own time); `busy_since`, the launches the agent runs
    # something of, each since when (seconds since the epoch). None: no such record.
    rank_failed: dict[str, dict[str, Any]] | None = None
    busy_since: dict[str, float] | None = None
    # An MPI launcher in it asked rsh for a host that is not the job's and still runs
    # (jobs/mpi_agent.py's UNKNOWN_HOST): {"host": name, "time": when}. None: no such record.
    unknown_host: dict[str, Any] | None = None
    # Lost, and it had started before this machine last booted: the machine went down (a
    # power cut, a crash, a reboot) while it ran, taking it and its shim along (QA 69).
    lost_in_restart: bool = False


# What an agent's files may hold: a launch's id (jobs/mpi_agent.py's LAUNCH, or "", from an
# agent copied before launches had ids) and how much of a file is read.
_AGENT_LAUNCH = re.compile(r"(?:[0-9]{1,10}-[0-9]{1,20})?")
_AGENT_FILE_BYTES = 16384


def _agent_file(folder: int, name: str) -> tuple[bytes, float] | None:
    """A regular file's first bytes and its time, or None. O_NONBLOCK: a named pipe put
    there would block the open (and the worker supervising every job) until a writer came."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(name, flags, dir_fd=folder)
    except OSError:
        return None
    try:
        facts = os.fstat(fd)
        if not stat.S_ISREG(facts.st_mode):
            return None
        return os.read(fd, _AGENT_FILE_BYTES), facts.st_mtime
    except OSError:
        return None
    finally:
        os.close(fd)


def _time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _agent_marks(state: Path) -> dict[str, Any]:
    """What an MPI worker's agent recorded in its /tmp/.mpi, by launch. The job owns that
    folder: it is opened without following a link at each step, and what it holds is read
    as numbers or not at all. An agent copied before launches had ids (a job started by an
    earlier version, still running) wrote an empty `busy` and one record, its time the
    file's: read as the launch ""."""
    marks: dict[str, Any] = {"rank_failed": None, "busy_since": None, "unknown_host": None}
    try:
        folder = os.open(
            state / "tmp" / ".mpi", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_DIRECTORY
        )
    except OSError:
        return marks
    try:
        if found := _agent_file(folder, "busy"):
            text, when = found
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                launches = json.loads(text) if text.strip() else {"": when}
                busy = {
                    launch: since
                    for launch, since in launches.items()
                    if _AGENT_LAUNCH.fullmatch(launch) and _time(since)
                }
                marks["busy_since"] = busy or None
        if found := _agent_file(folder, "rank-failed"):
            text, when = found
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                records = json.loads(text)
                if "code" in records or "signal" in records:
                    records = {"": {**records, "time": when}}
                failed = {}
                for launch, record in records.items():
                    kinds = [k for k in ("code", "signal") if k in record]
                    if not _AGENT_LAUNCH.fullmatch(launch) or len(kinds) != 1:
                        continue
                    value = record[kinds[0]]
                    if isinstance(value, int) and 0 < value < 256 and _time(record.get("time")):
                        failed[launch] = {kinds[0]: value, "time": record["time"]}
                marks["rank_failed"] = failed or None
        if found := _agent_file(folder, "unknown-host"):
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                record = json.loads(found[0])
                host, when = record["host"], record["time"]
                if isinstance(host, str) and _time(when):
                    # Said in the job's reason: printable, and as long as a hostname at most.
                    shown = "".join(c if c.isprintable() else "?" for c in host[:253])
                    marks["unknown_host"] = {"host": shown, "time": when}
    finally:
        os.close(folder)
    return marks


def _mark(path: Path, unreadable: dict) -> dict | None:
    """The JSON record at `path` (None if there is none; `unreadable` if it is cut short)."""
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return unreadable


def _keyword_mark(path: Path) -> dict | None:
    """The shim's record of the fault keyword it found, with "time", when it wrote it (the
    file's time): a TensorFlow job's replica that logged one after the job's result was
    decided failed no more than one exiting then does (_after_result)."""
    record = _mark(path, {"keyword": "?", "line": ""})
    if isinstance(record, dict):
        with contextlib.suppress(OSError):
            record["time"] = path.stat().st_mtime
    return record


def _lock_held(lock: Path) -> bool:
    """Whether a live process holds the lock file (a replica's shim): read_state's test of
    "alive" alone, without reading its other files."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared, as read_state's
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _exit_time(record: dict) -> datetime | None:
    """The time an exit record holds (seconds since the epoch), if it holds one that reads."""
    try:
        return datetime.fromtimestamp(float(record["time"]), tz=UTC)
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        return None


def last_exit_time(states: list[ReplicaState]) -> datetime | None:
    """When the last of these replicas ended, if every one has recorded when it did (a lost
    one has not: the worker's own time stands then)."""
    times = [state.exited_at for state in states if state.exited_at is not None]
    return max(times) if times and len(times) == len(states) else None


def machine_boot_time() -> float | None:
    """When this machine last booted (seconds since the epoch, /proc/stat's btime), or None
    where it cannot be read."""
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def read_state(state: Path) -> ReplicaState:
    marks = {
        "keyword": _keyword_mark(state / "keyword"),
        "tmp_over": _mark(state / "tmp-over", {"used": 0, "limit": 0}),
        "evicted": _mark(state / "evicted", {"used": 0, "free": 0, "threshold": 0}),
        **_agent_marks(state),
    }
    lock_path = state / "lock"
    if not lock_path.exists():
        return ReplicaState("unlaunched")
    fd = os.open(lock_path, os.O_RDWR)
    try:
        try:
            # Shared: the shim holds it exclusively (the worker takes LOCK_EX before the
            # spawn and hands it on), which refuses this; two readers at once (the worker
            # and a reviewer's Mark as lost) took it exclusively and each saw the other as
            # the replica, alive (review 54).
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return ReplicaState("alive", **marks)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    try:
        record = json.loads((state / "exit").read_text())
        code = int(record["code"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    else:
        return ReplicaState(
            "exited",
            exit_code=code,
            exited_at=_exit_time(record),
            no_sandbox=record.get("no_sandbox") is True,
            **marks,
        )
    if (state / "launched").exists() and (started := state / "started").exists():
        boot = machine_boot_time()
        with contextlib.suppress(OSError):
            if boot is not None and started.stat().st_mtime < boot:
                return ReplicaState("lost", lost_in_restart=True, **marks)
        return ReplicaState("lost", **marks)
    # Never launched, or recorded as launched by a worker that died before its shim began
    # (the shim writes `started` before anything else): nothing of it ever ran.
    return ReplicaState("unlaunched")


# -- disk pressure -------------------------------------------------------------------
# The kubelet's node-level disk pressure, for the disk LOCAL_RUN_DIR is on: no job starts
# below LOCAL_DISK_MIN_FREE_GB free (jobs.scheduler), and below LOCAL_DISK_EVICT_FREE_GB
# the replica holding the most in /tmp is evicted, one at a time.


@dataclass
class Disk:
    free: int  # bytes an unprivileged process may still write (df's "Available")
    total: int
    # Inodes (files and folders) it may still make, of how many (df -i; 0 where the file
    # system has no fixed number, as btrfs).
    free_inodes: int = 0
    total_inodes: int = 0


# A disk runs out of inodes as it runs out of bytes: a job making millions of empty files
# in its /tmp took none of its LOCAL_TMP_MAX_GB (they hold no blocks) and none of the disk's
# free bytes, yet left the disk no file to make, the database's and the logs' included
# (security round 16). So, as the kubelet watches nodefs.inodesFree beside
# nodefs.available, no job starts while fewer than this share of the disk's inodes are
# free, and below EVICT_FREE_INODES the replica whose /tmp holds the most entries is
# evicted. Fixed shares (decision): the same as the byte thresholds' defaults (the kubelet
# evicts at 5%); each is off when its byte threshold is 0.
MIN_FREE_INODES = 0.10
EVICT_FREE_INODES = 0.05
# Made with the replica's folder (see _start_replicas), filled and renamed to `evicted`.
EVICTED_DRAFT = "evicted.tmp"


def run_dir_disk() -> Disk:
    """The file system LOCAL_RUN_DIR is on (or will be: its nearest existing folder), where
    every replica's /tmp and log are written. Free is statvfs's f_bavail, as df shows it and
    the kubelet counts nodefs.available: the blocks reserved for root are not room a job
    (or a worker run as README recommends) can use."""
    path = Path(settings.LOCAL_RUN_DIR)
    for folder in (path, *path.parents):
        try:
            info = os.statvfs(folder)
        except OSError:
            continue
        return Disk(
            free=info.f_bavail * info.f_frsize,
            total=info.f_blocks * info.f_frsize,
            free_inodes=info.f_favail,
            total_inodes=info.f_files,
        )
    raise FileNotFoundError(path)


def short_of_inodes(disk: Disk, share: float) -> bool:
    return disk.total_inodes > 0 and disk.free_inodes < disk.total_inodes * share


def gb(amount: float) -> str:
    """Bytes as GB (GiB) with three significant digits, so a few MB still reads as more
    than nothing ("0.00476"), and no exponent ("1234")."""
    value = amount / 1024**3
    if value <= 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(value)))
    return f"{value:.{decimals}f}"


def disk_shortage(disk: Disk) -> tuple[str, dict[str, Any]] | None:
    """What keeps a local job from starting on `disk` (LOCAL_DISK_MIN_FREE_GB, and the share
    of inodes with it; and, whatever that setting, HEALTH_DISK_FREE_MB): ("inodes", "bytes"
    or "full", the numbers to say), or None when one may.

    "full": less than HEALTH_DISK_FREE_MB free, where /healthz says the disk is full
    (jobs.health.disk_full). Decision (qa112): that floor holds also when
    LOCAL_DISK_MIN_FREE_GB is lower, or 0, as its default is on a disk of under 0.5 GB (10%
    rounded to a tenth of a GB): every new job then failed "Could not start: [Errno 28] No
    space left on device", a queue group's tasks in turn. HEALTH_DISK_FREE_MB rather than
    LOCAL_LOG_MAX_MB (a replica's log cap, 1 GB by default, far more than making a job's
    folder takes): what /healthz and the staff banner call full is what holds jobs back."""
    threshold = settings.LOCAL_DISK_MIN_FREE_GB * 1024**3
    if threshold and short_of_inodes(disk, MIN_FREE_INODES):
        return "inodes", {
            "free": disk.free_inodes,
            "total": disk.total_inodes,
            "share": round(MIN_FREE_INODES * 100),
        }
    if disk.free < threshold:
        return "bytes", {"free": gb(disk.free), "threshold": gb(threshold)}
    floor = settings.HEALTH_DISK_FREE_MB * 1024**2
    if disk.free < floor:
        return "full", {"free": gb(disk.free), "threshold": gb(floor)}
    return None


def disk_pressure_message(disk: Disk) -> str | None:
    """Why no local job may start now (the disk has less than LOCAL_DISK_MIN_FREE_GB free),
    or None when one may."""
    short = disk_shortage(disk)
    if short is None:
        return None
    kind, numbers = short
    if kind == "full":
        return recorded(
            gettext_noop(
                "Waiting for disk space: the file system of the run folder (LOCAL_RUN_DIR) has "
                "%(free)s GB free, under the %(threshold)s GB below which the console counts it "
                "as full (HEALTH_DISK_FREE_MB), too little to make a job's folder. It starts by "
                "itself once there is room."
            ),
            **numbers,
        )
    if kind == "inodes":
        return recorded(
            gettext_noop(
                "Waiting for disk space: the disk of the run folder can hold %(free)s more "
                "files and folders (inodes) of its %(total)s, under the %(share)s%% a job needs "
                "to start. It starts by itself once there is room."
            ),
            **numbers,
        )
    return recorded(
        gettext_noop(
            "Waiting for disk space: the disk of the run folder has %(free)s GB free, under "
            "the %(threshold)s GB a job needs to start (LOCAL_DISK_MIN_FREE_GB). It starts "
            "by itself once there is room."
        ),
        **numbers,
    )


class NoRoomForRunFolder(Exception):
    """start_job found no room to make the starting job's folder in LOCAL_RUN_DIR (ENOSPC,
    EDQUOT): the job stays Queued, the half-made folder removed; args[0] says why it waits
    (no_room_message)."""


# What a write refused for want of room raises: no space left, or the user's disk quota.
NO_ROOM_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


NO_ROOM_MESSAGE = gettext_noop(
    "Waiting for disk space: the file system of the run folder (LOCAL_RUN_DIR) had no room "
    "left to make a job's folder as this one started (%(free)s GB free now). It starts by "
    "itself once there is room."
)


# The same refusal (ENOSPC) when the disk has bytes free but no inode left: every file and
# folder takes one (a job's /tmp of millions of empty files), and "no room" with gigabytes
# free read as a console's mistake (fix155).
NO_INODES_MESSAGE = gettext_noop(
    "Waiting for disk space: the file system of the run folder (LOCAL_RUN_DIR) had no free "
    "inodes (files) left to make a job's folder as this one started (%(free)s GB free, but no "
    "file or folder can be made). It starts by itself once files are removed there."
)


def out_of_inodes(disk: Disk) -> bool:
    """Whether the disk can make no more files or folders (statvfs's f_favail is 0) though it
    has a fixed number of them (btrfs has none, and says 0 of 0)."""
    return disk.total_inodes > 0 and disk.free_inodes == 0


def no_room_message() -> str:
    """Why a job waits after its folder could not be made for want of room (the free space
    of now is said: a few bytes may be free, and yet not the block a file needs), or of
    inodes."""
    try:
        disk = run_dir_disk()
    except OSError:
        return recorded(NO_ROOM_MESSAGE, free="0")
    if out_of_inodes(disk):
        return recorded(NO_INODES_MESSAGE, free=gb(disk.free))
    return recorded(NO_ROOM_MESSAGE, free=gb(disk.free))


def make_run_folder(job: Job, spec: JobSpec, *, master_port: int) -> None:
    """Makes the starting job's folder for its first attempt (the attempt's folder, its
    ports file, the logs' folder) before it is marked Running, so a disk without room for it
    holds the job Queued (NoRoomForRunFolder) rather than failing it after "Started" (qa112:
    "Started", then "StartFailed", then Failed "Could not start: [Errno 28] No space left on
    device", card time counted for a job that never ran). What is made of it on such a
    refusal is removed again: left, the next start would move it aside as an earlier run's
    files (earlier_run_set_aside). Any other OSError is raised."""
    folder = job_logs.job_dir(job.public_id)
    base = attempt_dir(job.public_id, 1)
    try:
        base.mkdir(parents=True, exist_ok=True)
        (folder / "logs").mkdir(parents=True, exist_ok=True)
        _attempt_ports(base, replica_refs(spec), master_port=master_port)
    except OSError as exc:
        if exc.errno not in NO_ROOM_ERRNOS:
            raise
        unmake_run_folder(job.public_id)
        raise NoRoomForRunFolder(no_room_message()) from exc


def unmake_run_folder(public_id: str) -> None:
    """Removes what make_run_folder made of the job's folder, and the folder when that leaves
    it empty (an earlier run's files set aside there stay)."""
    folder = job_logs.job_dir(public_id)
    for name in ("attempt-1", "logs"):
        shutil.rmtree(folder / name, ignore_errors=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


def _attempt_ports(base: Path, refs: list[ReplicaRef], *, master_port: int | None) -> dict:
    """The attempt's ports (each replica's and the master's), from its ports file: written
    the first time, so a relaunch after a worker restart keeps the same addresses."""
    ports_file = base / "ports.json"
    if ports_file.exists():
        return json.loads(ports_file.read_text())
    taken = {master_port} if master_port else set()
    labels = [ref.label for ref in refs]
    ports = dict(zip(labels, job_ports(len(refs), taken=taken), strict=True))
    ports["master"] = master_port or job_ports(1, taken=set(ports.values()))[0]
    ports_file.write_text(json.dumps(ports))
    return ports


def tmp_use(state: Path) -> int:
    """The bytes the replica's /tmp holds: measured now, since its shim's last measure
    (file `tmp-used`) may be LOCAL_TMP_CHECK_SECONDS old, and a replica filling the disk
    fast is then the one it undercounts most. One pass of the meter looks at
    TMP_WALK_MAX_ENTRIES entries at most: a /tmp of more files than that is counted as its
    shim last counted it whole, if that is more."""
    try:
        reported = int(json.loads((state / "tmp-used").read_text())["used"])
    except (OSError, ValueError, KeyError, TypeError):
        reported = 0
    try:
        empty = os.lstat(state / "tmp").st_blocks * 512  # the folder itself
        measured = TmpMeter(state / "tmp").measure()
    except OSError:  # gone: it is being cleaned up
        return 0
    used = max(reported, measured)
    return used if used > empty else 0


def tmp_entries(state: Path) -> int:
    """The inodes (files, folders, links; a file's several names once) the replica's /tmp
    holds, counted now up to TMP_WALK_MAX_ENTRIES."""
    meter = TmpMeter(state / "tmp")
    try:
        meter.measure()
    except OSError:  # gone: it is being cleaned up
        return 0
    return meter.entries


# The disk when an eviction last waited for what ended jobs left to be removed (DISCARDED),
# to see whether that removal frees it. Waiting for it whatever it freed let a job that keeps
# DISCARDED full (ending jobs of many files, or files it cannot be rid of) hold every
# eviction off while another replica filled the disk (review 16). Decided: an eviction waits
# one tick for it, then as long as each tick's removal frees what is short (bytes, or inodes),
# and no longer: a tick that freed nothing evicts as if nothing were being removed.
_waited_for_removal: Disk | None = None


def _removal_frees(disk: Disk, *, by_inodes: bool) -> bool:
    """Whether an eviction is to wait for the removal of what ended jobs left: the first
    time, and then while the disk has more free (of what is short) than the last time."""
    global _waited_for_removal
    before, _waited_for_removal = _waited_for_removal, disk
    if before is None:
        return True
    if by_inodes:
        return disk.free_inodes > before.free_inodes
    return disk.free > before.free


def evict_for_disk_pressure() -> JobReplica | None:
    """Below LOCAL_DISK_EVICT_FREE_GB free, marks the running replica that holds the most in
    its /tmp as evicted (file `evicted`); supervise then ends it as a failure, restarting
    the job or failing it by its fault tolerance, as for a replica over LOCAL_TMP_MAX_GB.

    One at a time, as the kubelet evicts: while an evicted replica's job is still being torn
    down (its /tmp not yet freed) no other is chosen, and the disk is measured again after.
    Only replicas whose /tmp holds something are chosen: when the disk fills up with other
    files, ending jobs would free nothing. Returns the replica evicted, if any."""
    global _waited_for_removal
    threshold = int(settings.LOCAL_DISK_EVICT_FREE_GB * 1024**3)
    if not threshold:
        return None
    disk = run_dir_disk()
    # Short of bytes first, as before; short of inodes (EVICT_FREE_INODES) alone, the
    # replica holding the most entries goes, as the kubelet ranks pods by inodes then.
    by_inodes = disk.free >= threshold
    if by_inodes and not short_of_inodes(disk, EVICT_FREE_INODES):
        _waited_for_removal = None
        return None
    if remove_discarded(0) and _removal_frees(disk, by_inodes=by_inodes):
        return None  # what ended jobs left is being removed, and that frees the disk
    _waited_for_removal = None
    measure = tmp_entries if by_inodes else tmp_use
    runs = LocalRun.objects.filter(
        job__backend="local", job__status__in=[S.RUNNING, S.STOPPING], runner__in=["", runner_key()]
    ).select_related("job")
    candidates: list[tuple[int, Path, JobReplica]] = []
    for run in runs:
        for replica in run.job.replicas.all():
            label = f"{replica.role}-{replica.index}"
            state = replica_state_dir(run.job.public_id, run.attempt, label)
            if (state / "evicted").exists():
                done = read_state(state)
                if not (done.phase == "exited" and done.exit_code == 0):
                    return None  # the last eviction is still being carried out
            if run.stop_target or run.job.status != S.RUNNING:
                continue  # already ending
            if read_state(state).phase == "alive" and (used := measure(state)):
                candidates.append((used, state, replica))
    if not candidates:
        return None
    used, state, replica = max(candidates, key=lambda found: found[0])
    if by_inodes:
        record = {
            "entries": used,
            "free_inodes": disk.free_inodes,
            "total_inodes": disk.total_inodes,
            "share": round(EVICT_FREE_INODES * 100),
        }
    else:
        record = {"used": used, "free": disk.free, "threshold": threshold}
    try:
        (state / EVICTED_DRAFT).write_text(json.dumps({**record, "time": time.time()}))
        os.replace(state / EVICTED_DRAFT, state / "evicted")
    except OSError as exc:  # the disk is full indeed: tried again on the next tick
        logger.warning("could not evict %s of job %s: %s", replica, replica.job_id, exc)
        return None
    if by_inodes:
        logger.warning(
            "disk pressure: %s of %s inodes free; evicting %s (%s entries in /tmp)",
            disk.free_inodes,
            disk.total_inodes,
            replica,
            used,
        )
    else:
        logger.warning(
            "disk pressure: %s GB free under %s GB; evicting %s (%s GB in /tmp)",
            gb(disk.free),
            gb(threshold),
            replica,
            gb(used),
        )
    return replica


def evicted_message(label: str, evicted: dict[str, int]) -> str:
    """The reason an evicted replica is ended, as the kubelet words its own: the disk's free
    space, the threshold, and what the replica held."""
    if "entries" in evicted:
        return recorded(
            gettext_noop(
                "Evicted: the disk of the run folder could hold %(free)s more files and "
                "folders (inodes) of its %(total)s, under the %(share)s%% limit; %(replica)s "
                "held %(entries)s in /tmp, the most of any running replica."
            ),
            free=evicted.get("free_inodes", 0),
            total=evicted.get("total_inodes", 0),
            share=evicted.get("share", 0),
            replica=label,
            entries=evicted.get("entries", 0),
        )
    return recorded(
        gettext_noop(
            "Evicted: the disk of the run folder had %(free)s GB free, under the "
            "%(threshold)s GB limit (LOCAL_DISK_EVICT_FREE_GB); %(replica)s held %(used)s GB "
            "in /tmp, the most of any running replica."
        ),
        free=gb(evicted.get("free", 0)),
        threshold=gb(evicted.get("threshold", 0)),
        replica=label,
        used=gb(evicted.get("used", 0)),
    )


# -- capacity and allocation ---------------------------------------------------------


@dataclass
class Requirement:
    cards: dict[str, int]
    exclusive_cpus: int  # cores to pin exclusively (0: not CPU-exclusive)
    cores_by_cards: bool = False  # some of them a core per card (a role without CPU cores)


TWO_SENTENCES = gettext_noop("%(message)s %(hint)s")


def requirement(spec: JobSpec) -> Requirement:
    if not spec.cpu_exclusive:
        return Requirement(cards=spec.accelerators_by_type(), exclusive_cpus=0)
    return Requirement(
        cards=spec.accelerators_by_type(),
        exclusive_cpus=sum(r.exclusive_cpus * r.replicas for r in spec.roles),
        cores_by_cards=any(r.cores_by_cards for r in spec.roles),
    )


def machine_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


@dataclass
class Allocation:
    devices: dict[str, list[int]] = field(default_factory=dict)
    cpus: list[int] = field(default_factory=list)


@dataclass
class Capacity:
    """What the local pool has free right now, as the scheduler sees it."""

    free_devices: dict[str, list[int]]
    free_cpus: list[int]  # cores no running local job may use
    shared_cpus: list[int]  # cores not pinned exclusively
    running: int

    def impossible(self, need: Requirement) -> str | None:
        totals = detected_accelerators()
        for card, count in need.cards.items():
            if count > totals.get(card, 0):
                return recorded_plural(
                    ngettext_noop(
                        "Needs %(count)s %(card)s card; the local pool has %(total)s.",
                        "Needs %(count)s %(card)s cards; the local pool has %(total)s.",
                    ),
                    "count",
                    count=count,
                    card=card_shown(card),
                    total=totals.get(card, 0),
                )
        if need.exclusive_cpus > len(machine_cpus()):
            short = recorded_plural(
                ngettext_noop(
                    "Needs %(count)s exclusive CPU core; this machine has %(total)s.",
                    "Needs %(count)s exclusive CPU cores; this machine has %(total)s.",
                ),
                "count",
                count=need.exclusive_cpus,
                total=len(machine_cpus()),
            )
            if not need.cores_by_cards:
                return short
            # Two sentences: a space between them in English, none in Chinese.
            return recorded(TWO_SENTENCES, message=short, hint=recorded(CORES_PER_CARD))
        return None

    def shortfall(self, need: Requirement) -> str:
        """Which rule keeps `need` from starting now, in allocate's order: "running"
        (LOCAL_MAX_RUNNING_JOBS local jobs run), "cards" or "cores"; "" when it fits. One
        place for the rules, which the refusals and waiting messages name (jobs.wizard,
        jobs.scheduler)."""
        if self.running >= settings.LOCAL_MAX_RUNNING_JOBS:
            return "running"
        if any(len(self.free_devices.get(c, [])) < n for c, n in need.cards.items()):
            return "cards"
        if need.exclusive_cpus:
            if len(self.free_cpus) < need.exclusive_cpus:
                return "cores"
        elif not self.shared_cpus:
            return "cores"
        return ""

    def allocate(self, need: Requirement) -> Allocation | None:
        if self.shortfall(need):
            return None
        alloc = Allocation()
        for card, count in need.cards.items():
            alloc.devices[card] = self.free_devices[card][:count]
            self.free_devices[card] = self.free_devices[card][count:]
        if need.exclusive_cpus:
            alloc.cpus = self.free_cpus[: need.exclusive_cpus]
            self.free_cpus = self.free_cpus[need.exclusive_cpus :]
            self.shared_cpus = [c for c in self.shared_cpus if c not in alloc.cpus]
        else:
            # A shared job may run on every core not pinned exclusively: those cores are
            # no longer free for a CPU-exclusive job until it ends.
            self.free_cpus = []
        self.running += 1
        return alloc


def held_by_active_runs() -> list[tuple[Any, Any]]:
    """(devices, cpus) of every local run whose job is active (submitting, running,
    stopping): what they hold.

    One plain SELECT on the connection's cursor, the two JSON columns decoded as the ORM's
    JSONField does: the idle-count poll reads it every few seconds, and through the ORM
    building and compiling the same join cost ~0.15 ms of a ~1.2 ms partial."""
    from .models import ACTIVE_STATUSES

    alias = router.db_for_read(LocalRun)
    connection = connections[alias]
    quote = connection.ops.quote_name
    run, job = LocalRun._meta, Job._meta
    columns = [run.get_field(name).column for name in ("devices", "cpus")]
    statuses = sorted(ACTIVE_STATUSES)
    sql = (
        f"SELECT {', '.join(f'r.{quote(c)}' for c in columns)} "
        f"FROM {quote(run.db_table)} r INNER JOIN {quote(job.db_table)} j "
        f"ON r.{quote(run.get_field('job').column)} = j.{quote(job.pk.column)} "
        f"WHERE j.{quote(job.get_field('backend').column)} = %s "
        f"AND j.{quote(job.get_field('status').column)} IN ({', '.join(['%s'] * len(statuses))})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, ["local", *statuses])
        rows = cursor.fetchall()
    return [
        (
            None if devices is None else json.loads(devices),
            None if cpus is None else json.loads(cpus),
        )
        for devices, cpus in rows
    ]


def current_capacity() -> Capacity:
    runs = held_by_active_runs()
    used: dict[str, set[int]] = {}
    exclusive: set[int] = set()
    shared_running = False
    count = 0
    for devices, cpus in runs:
        count += 1
        for card, indices in (devices or {}).items():
            used.setdefault(card, set()).update(indices)
        if cpus:
            exclusive.update(cpus)
        else:
            shared_running = True
    # A card whose device node is missing is not offered (missing_card_nodes): a job given
    # it could not start, and one whose cards are all there would wait for another card whose
    # node is (a job needing more cards than have nodes is held: cards_short_of_nodes).
    free_devices = {}
    for card, total in detected_accelerators().items():
        unusable = used.get(card, set()) | set(cards_without_node(card, range(total)))
        free_devices[card] = [i for i in range(total) if i not in unusable]
    cores = machine_cpus()
    shared = [c for c in cores if c not in exclusive]
    return Capacity(
        free_devices=free_devices,
        free_cpus=[] if shared_running else shared,
        shared_cpus=shared,
        running=count,
    )


# -- launching -----------------------------------------------------------------------


def console_state_paths() -> list[Path]:
    """Where the console keeps its own state and secrets on this machine."""
    base = Path(settings.BASE_DIR)
    paths = [
        Path(settings.VAR_DIR),
        base / "var",
        Path(settings.LOCAL_RUN_DIR),
        *(Path(path) for path in settings.SECRET_FILES),
    ]
    if (base / "manage.py").exists():
        # The checkout itself: var/ lives there by default, and a deployment may keep an
        # .env file or local settings next to the code. Jobs have no use for it. (Installed
        # as a package, BASE_DIR is site-packages, which is not ours to hide.)
        paths.append(base)
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3" and os.path.isabs(database["NAME"]):
        # The folder, not the file: SQLite keeps -wal and -journal files next to it that
        # come and go, and the newest writes sit in the -wal file.
        paths.append(Path(database["NAME"]).parent)
    return paths


def hidden_host_paths() -> list[str]:
    """Host paths no job may see (jobs.sandbox covers them; README "What a job gets")."""
    paths = [str(path) for path in console_state_paths()]
    # The worker's user's home: its keys, shell history, ~/.gunicorn control socket...
    paths.append(os.path.expanduser("~"))
    with contextlib.suppress(KeyError):
        paths.append(pwd.getpwuid(os.getuid()).pw_dir)
    paths += ALWAYS_HIDDEN
    # What others may not read in /etc (shadow, SSH host keys, the service's env file).
    for folder in PRIVATE_SCAN:
        paths += private_entries(folder)
    # Every volume's folder: a job sees only the volumes it mounts, at their mount paths.
    paths += [str(volume.root) for volume in host_volumes()]
    return paths


def volume_mounts(
    spec: JobSpec, *, owner: Any = None, as_user: tuple[int, int] | None = None
) -> list[Mount]:
    """The spec's volumes, each opened once and checked (see sandbox.open_in_root).

    A read-write mount's source folder that does not exist is made (sandbox.make_in_root),
    owned by `as_user` (the user the job runs as; None: the worker's own). With `as_user`,
    each must be one that user could reach by itself (sandbox.check_within_reach): the worker
    opens it as root and bwrap binds the descriptor, so the folders' modes on the way would
    otherwise keep nobody out.

    With an `owner`, each must be one they may mount now, as LOCAL_VOLUMES says at this start
    (jobs.volume_access): a job queued before its owner left a volume's group, or before the
    volume became read-only, fails with the reason instead of being mounted.
    The caller closes them with close_mounts once every replica has been started.
    """
    if owner is not None:
        refused = volume_refusals(spec=spec, owner=owner, at_start=True)
        if refused:
            raise SandboxError(joined(*(m for messages in refused.values() for m in messages)))
    roots = {v.name: v.root for v in host_volumes()}
    state = [os.path.realpath(path) for path in console_state_paths()]
    # Before any folder is made for it (start_refusal asked before the job started; this is
    # a relaunch, or a fault-tolerance restart).
    if problem := mount_over_host_file(spec):
        raise SandboxError(problem)
    mounts: list[Mount] = []
    try:
        for ds in spec.datasources:
            # Checked at submit too (LocalBackend.check_spec): a job queued before that rule
            # would otherwise run for ever (an MPI job with a volume at /tmp).
            if problem := runner_path_problem(ds.mount_path, framework=spec.framework):
                raise SandboxError(problem)
            if ds.type != "hostpath" or ds.name not in roots:
                raise SandboxError(
                    recorded(
                        gettext_noop(
                            "Volume %(volume)s (%(type)s) is not available on this machine."
                        ),
                        volume=ds.name,
                        type=ds.type,
                    )
                )
            roots[ds.name].mkdir(parents=True, exist_ok=True)
            try:
                fd, source = _opened_or_made(roots[ds.name], ds, as_user=as_user)
                mounts.append(Mount(fd, source, ds.mount_path, ds.read_only))
                if as_user is not None:
                    check_within_reach(
                        fd,
                        source,
                        root=roots[ds.name],
                        volume=ds.name,
                        read_only=ds.read_only,
                        as_user=as_user,
                    )
            except SandboxError as error:
                raise SandboxError(
                    recorded(
                        gettext_noop("The mount %(mount)s (volume %(volume)s): %(reason)s"),
                        mount=ds.mount_path,
                        volume=ds.name,
                        reason=error.args[0],
                    )
                ) from None
            # A folder that holds the console's state, or lies inside it, would show that
            # state again at the mount path, under the cover the sandbox puts over it (a
            # volume root set too wide).
            if any(is_within(path, source) for path in state) or _inside_console_state(
                source, state=state, roots=[os.path.realpath(r) for r in roots.values()]
            ):
                raise SandboxError(
                    recorded(
                        gettext_noop("%(path)s in volume %(volume)s holds the console's own files"),
                        path=ds.source_path or "/",
                        volume=ds.name,
                    )
                )
        # Checked at submit too (LocalBackend.check_spec); the folder may have gone since.
        layout = [(m.dest, m.source, m.read_only) for m in mounts]
        for mount in mounts:
            if parent := read_only_parent_lacking(mount.dest, layout):
                raise SandboxError(read_only_parent_message(mount.dest, parent))
    except BaseException:
        close_mounts(mounts)
        raise
    return mounts


def mount_over_host_file(spec: JobSpec) -> str | None:
    """Why a mount of `spec` cannot be made: a file of this machine (not a folder) is where
    it would go. Checked at submit too (LocalBackend.check_spec) on the web server's files: a
    job queued before that check, or whose machine changed since, failed with bwrap's
    "Can't mkdir /etc/passwd: Not a directory"."""
    dests = [ds.mount_path for ds in spec.datasources]
    for ds in spec.datasources:
        if in_the_way := host_file_in_the_way_of(ds.mount_path, dests):
            return recorded(
                gettext_noop("The mount %(mount)s (volume %(volume)s): %(reason)s"),
                mount=ds.mount_path,
                volume=ds.name,
                reason=recorded(FILE_IN_THE_WAY, path=in_the_way),
            )
    return None


def bwrap_missing_message() -> str | None:
    """Why no replica can start on this machine now: bubblewrap is not at LOCAL_BWRAP (the
    worker refuses to start without it, jobs.checks.bwrap_problems; this is one removed since)."""
    if os.access(settings.LOCAL_BWRAP, os.X_OK):
        return None
    return recorded(
        gettext_noop("bubblewrap is not installed at %(path)s (apt-get install bubblewrap)"),
        path=settings.LOCAL_BWRAP,
    )


def card_nodes_refusal(devices: dict[str, list[int]]) -> str | None:
    """Why a job given `devices` cannot start: the device node of one of its cards does not
    exist. Before any replica starts: bwrap would fail each one binding a node that is not
    there, the job's reason only "worker-0 exited with code 1" (qa95)."""
    missing = [path for card, cards in devices.items() for path in missing_card_nodes(card, cards)]
    return _no_device_node_message(missing) if missing else None


def cards_short_of_nodes(cards: dict[str, int]) -> tuple[str, int, int, list[str]] | None:
    """(card type, cards wanted, cards of the type whose device node is there, the missing
    nodes) for the first type of `cards` the local pool has enough of but too few with their
    node, busy or not: the others are not offered (current_capacity), so a job asking these
    cannot be given them until the nodes are back. None when every type fits among the cards
    whose nodes are there, or not even among all the pool has (Capacity.impossible fails
    that job: no node coming back makes it fit).

    Decision (review58): such a job is held Queued (jobs.scheduler, CARD_NODES_MISSING), not
    failed. Nodes go missing for a while (the driver reloaded, the nodes made again) and it is
    a fact of the machine, not of the job: fix126 failed it, and with every node gone one pass
    failed every queued job asking a card, in turn, each to be submitted again."""
    totals = detected_accelerators()
    for card, wanted in cards.items():
        total = totals.get(card, 0)
        missing = missing_card_nodes(card, range(total))
        if missing and total - len(missing) < wanted <= total:
            return card, wanted, total - len(missing), missing
    return None


def cards_not_held(*, spec: JobSpec, devices: dict[str, list[int]]) -> str | None:
    """Why a run holding `devices` cannot start the replicas of `spec` on them: the local pool
    no longer has as many cards of a type as the job needs (a worker started again without that
    type in LOCAL_ACCELERATORS), said as the scheduler says it of a queued job it fails for it
    (Capacity.impossible); or the run's record holds fewer than the job needs. Until qa114 a
    relaunch failed such a job with an internal error (a KeyError handing out its cards).

    Decision: failed, not held Queued: the job is Running, its cards given at its start, and
    the scheduler fails a queued job that can never fit (cards whose device nodes are
    missing for a while hold it Queued instead: cards_short_of_nodes)."""
    totals = detected_accelerators()
    for card, count in spec.accelerators_by_type().items():
        if count > totals.get(card, 0):
            return recorded_plural(
                ngettext_noop(
                    "Needs %(count)s %(card)s card; the local pool has %(total)s.",
                    "Needs %(count)s %(card)s cards; the local pool has %(total)s.",
                ),
                "count",
                count=count,
                card=card_shown(card),
                total=totals.get(card, 0),
            )
        if count > len(devices.get(card, [])):
            return recorded(
                gettext_noop(
                    "Needs %(count)s %(card)s cards; its run holds %(held)s of them (its record "
                    "of the cards it was given is incomplete)."
                ),
                count=count,
                card=card_shown(card),
                held=len(devices.get(card, [])),
            )
    return None


def _no_device_node_message(missing: list[str]) -> str:
    return recorded(
        gettext_noop(
            "this machine has no device node %(nodes)s for its %(card)s cards "
            "(LOCAL_ACCELERATORS offers them, but no NVIDIA driver made their nodes "
            "here). Ask the administrator to install the driver, or to name demo cards "
            "by another card type"
        ),
        nodes=Words(tuple(missing)),
        card=card_shown(NVIDIA_RESOURCE),
    )


def _opened_or_made(root: Path, ds: Any, *, as_user: tuple[int, int] | None) -> tuple[int, str]:
    """The mount's source folder opened and checked (open_in_root); a read-write mount's
    missing one made first, as the kubelet makes a missing subPath (make_in_root)."""
    try:
        return open_in_root(root, ds.source_path)
    except FileNotFoundError:
        if ds.read_only:  # refused at submit too (LocalBackend.check_spec)
            raise SandboxError(read_only_missing_message(ds.source_path or "/", ds.name)) from None
    except OSError:
        raise SandboxError(
            recorded(
                gettext_noop("%(path)s is not a folder in volume %(volume)s"),
                path=ds.source_path or "/",
                volume=ds.name,
            )
        ) from None
    try:
        return make_in_root(root, ds.source_path, as_user=as_user)
    except OSError as error:  # a full disk, a folder the worker may not write
        raise SandboxError(
            recorded(
                gettext_noop("%(path)s cannot be made in volume %(volume)s: %(reason)s"),
                path=ds.source_path,
                volume=ds.name,
                reason=error.strerror,
            )
        ) from None


def _inside_console_state(source: str, *, state: list[str], roots: list[str]) -> bool:
    """Whether `source` lies inside the console's state. A volume the operator put inside
    it on purpose (the default one lives in var/volumes/) is fine, as long as that volume's
    root holds none of the state itself (not the run directory, say)."""
    for path in state:
        if not is_within(source, path):
            continue
        deliberate = any(
            is_within(source, root)
            and is_within(root, path)
            and root != path
            and not any(is_within(other, root) for other in state)
            for root in roots
        )
        if not deliberate:
            return True
    return False


def close_mounts(mounts: list[Mount]) -> None:
    for mount in mounts:
        os.close(mount.fd)


def launch_attempt(
    job: Job, run: LocalRun, spec: JobSpec, *, children: Children | None = None
) -> None:
    """Starts every replica of the run's current attempt that is not started yet.

    Raises SandboxError or OSError when the job cannot start at all.
    """
    # The scheduling pass asked both before the job started (jobs.scheduler.dispatch_local);
    # asked again for a relaunch or a fault-tolerance restart, and for what changed meanwhile.
    if problem := (
        bwrap_missing_message()
        or card_nodes_refusal(run.devices)
        or cards_not_held(spec=spec, devices=run.devices)
    ):
        raise SandboxError(problem)
    launched = any(
        read_state(replica_state_dir(job.public_id, run.attempt, ref.label)).phase != "unlaunched"
        for ref in replica_refs(spec)
    )
    if not launched:
        # Checked at submit too (LocalBackend.check_spec): a job queued before the setting was
        # lowered would otherwise start every one of its replicas.
        if problem := too_many_replicas(spec):
            raise SandboxError(problem)
        # So is a TensorFlow job of ps and evaluator alone: one queued before that rule
        # (left34) would run until its time limit, 30 days by default.
        if problem := tensorflow_without_end(spec):
            raise SandboxError(problem)
        # Before anything is set up for it: a job that cannot run as its owner's user fails
        # (JobUserError says why), never runs as another.
        as_user = job_users.user_for(owner_id=job.owner_id)
        # Recorded before any replica of the attempt starts, as what they run as, the
        # worker's own user included: the job page shows this, not today's setting, and the
        # attempt's remaining replicas, launched by a worker started again, run as it.
        run.run_uid, run.run_gid = as_user if as_user is not None else job_users.own_user()
        # So is its network (the job's pages say it, not today's LOCAL_JOB_NETWORK).
        run.host_network = not network.isolated()
        LocalRun.objects.filter(pk=run.pk).update(
            run_uid=run.run_uid, run_gid=run.run_gid, host_network=run.host_network
        )
    else:
        # A relaunch after a worker restart (some replicas already started) runs the rest
        # exactly as the attempt's first launch recorded, as its network is kept: a worker
        # restarted with LOCAL_JOB_UID_BASE or LOCAL_JOB_GID changed, set or unset ran them
        # as today's setting said, beside peers of another uid (chaos round 18; and, until
        # session 19 recorded the worker's own user too, as the job's uid beside peers of
        # the worker's). What cannot be had now (a worker no longer root, a uid now a user
        # of this machine) fails the job; an attempt with no record (before 0025) runs them
        # as today's setting says (job_users.relaunch_user).
        as_user = job_users.relaunch_user(owner_id=job.owner_id, uid=run.run_uid, gid=run.run_gid)
    job_network = None
    if network.attempt_isolated(job.public_id, run.attempt, launched=launched):
        job_network = network.job_network(
            public_id=job.public_id, attempt=run.attempt, launched=launched, children=children
        )
    try:
        mounts = volume_mounts(spec, owner=job.owner, as_user=as_user)
        try:
            _start_replicas(
                job,
                run,
                spec,
                mounts=mounts,
                job_network=job_network,
                children=children,
                as_user=as_user,
            )
        finally:
            # Every shim started holds its own copies, which its bwrap binds and then closes.
            close_mounts(mounts)
    finally:
        if job_network is not None:  # (as the namespaces' descriptors: the shims have theirs)
            job_network.close()


def cores_per_instance(spec: JobSpec, *, allocated: int) -> dict[str, int]:
    """How many of an attempt's `allocated` exclusive cores each instance of each role is
    pinned to: Role.exclusive_cpus, as `requirement` counted them. An allocation made before
    qa60 (a core an instance whose role has no CPU cores, not a core per card) is handed out
    as it was counted, when a fault-tolerance restart or a relaunch after a worker restart
    starts the job's replicas again on it (review 41: the first instances took every core,
    and the rest, given none, ran unpinned on all of them, other jobs' exclusive ones too)."""
    now = {r.name: r.exclusive_cpus for r in spec.roles}
    before = {r.name: r.cpu or 1 for r in spec.roles}
    counted = sum(before[r.name] * r.replicas for r in spec.roles)
    if allocated == counted and allocated != sum(now[r.name] * r.replicas for r in spec.roles):
        return before
    return now


def _start_replicas(
    job: Job,
    run: LocalRun,
    spec: JobSpec,
    *,
    mounts: list[Mount],
    job_network: network.JobNetwork | None,
    children: Children | None,
    as_user: tuple[int, int] | None = None,
) -> None:
    refs = replica_refs(spec)
    base = attempt_dir(job.public_id, run.attempt)
    base.mkdir(parents=True, exist_ok=True)
    (job_logs.job_dir(job.public_id) / "logs").mkdir(parents=True, exist_ok=True)
    ports = _attempt_ports(base, refs, master_port=run.master_port)
    hostfile = base / "hostfile"
    mpi_files: list[tuple[Path, str]] = []
    if spec.framework == MPI:
        hostfile.write_text(mpi_hostfile(spec, lambda role, index: f"{role}-{index}"))
        (base / "hostfile.hydra").write_text(
            mpi_hostfile(spec, lambda role, index: f"{role}-{index}", hydra=True)
        )
        mpi_files = _mpi_files(job, run, spec, base, mounts=mounts, as_user=as_user)
    # A volume's folder that does not exist yet cannot be covered, and would show up in this
    # job's view of the host as soon as another job's mount creates it.
    for host_volume in host_volumes():
        with contextlib.suppress(OSError):
            host_volume.root.mkdir(parents=True, exist_ok=True)
    hidden = hidden_host_paths()
    if as_user is not None:
        hidden = out_of_reach_dropped(hidden, *as_user)
    ftc = spec.fault_tolerance_config
    keywords = list(ftc.custom_fault_tolerance_pattern) if ftc else []

    # Cards are handed to replicas in order: master's first, then workers'.
    device_pool = {card: list(indices) for card, indices in run.devices.items()}
    cpu_pool = list(run.cpus)
    cores_each = cores_per_instance(spec, allocated=len(cpu_pool))
    shared = [c for c in machine_cpus() if c not in _exclusive_cpus_in_use()]
    roles = {r.name: r for r in spec.roles}
    replicas = {(r.role, r.index): r for r in job.replicas.all()}
    group_task = group_task_of(job)
    for ref in refs:
        role = roles[ref.role]
        cards: list[int] = []
        if role.accelerator_type and role.accelerators:
            cards = device_pool[role.accelerator_type][: role.accelerators]
            device_pool[role.accelerator_type] = device_pool[role.accelerator_type][
                role.accelerators :
            ]
        if spec.cpu_exclusive:
            take = cores_each[role.name]
            cpus, cpu_pool = cpu_pool[:take], cpu_pool[take:]
        else:
            cpus = shared
        replica = replicas[(ref.role, ref.index)]
        state = replica_state_dir(job.public_id, run.attempt, ref.label)
        if read_state(state).phase != "unlaunched":
            continue
        if not launch_wanted(run):
            return  # stopped while launching: supervise tears down what did start
        # Made before the launch is recorded: a job whose limits cannot be set up fails to
        # start (CgroupError) rather than run without the limits it asked for.
        devices = accelerator_devices(role.accelerator_type, cards)
        joined_cgroups = _replica_cgroup(
            job, run, role, ref.label, devices=[source for source, _ in devices]
        )
        # Recorded before the spawn, so a replica adopted after a worker restart shows it.
        # The host's card numbers: the replica's own CUDA numbers them from 0 (visible_devices).
        replica.devices = ",".join(map(str, cards))
        replica.cpus = ",".join(map(str, cpus))
        replica.node = socket.gethostname()
        replica.save(update_fields=["devices", "cpus", "node"])
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
        }
        env.update(
            replica_environment(
                spec,
                ref,
                job_id=job.public_id,
                master_addr="127.0.0.1",
                master_port=ports["master"],
                tf_address=lambda r, i: f"127.0.0.1:{ports[f'{r}-{i}']}",
                training_sees_evaluator=False,
                hostfile_path=HOSTFILE_DEST,
                hydra_hostfile_path=HYDRA_HOSTFILE_DEST,
                mpi_rsh_agent=MPI_AGENT_DEST,
                # The job's own network namespace (isolated, isolated-outbound), shared by its
                # replicas: loopback is their way to each other. The host network keeps Open
                # MPI's default (its other interfaces), and a job's --mca btl_tcp_if_exclude.
                mpi_tcp_interface="lo" if job_network is not None else None,
                visible_devices=visible_devices(cards),
                group_task=group_task,
                hostname=replica_hostname(spec, ref),
            )
        )
        tmp = state / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        # The job's /tmp is its HOME too, where tools save their tokens (huggingface-cli
        # login's ~/.cache/huggingface/token, 0644 under the usual umask): its owner's alone,
        # or any account of the machine that can reach LOCAL_RUN_DIR read them (QA 53).
        tmp.chmod(0o700)
        if as_user is not None:
            # The job's user writes its /tmp; it reads the hostfile and resolv.conf (0644),
            # which bubblewrap, run as that user, finds by their paths: each folder from the
            # run folder down to /tmp's is made enterable by others (not listable: 0711 at
            # least), /tmp itself staying the user's alone.
            os.chown(tmp, *as_user)
            _enterable(tmp.parent, *files_under_run(base, job_network))
        # The inode of an eviction's mark, made now: a disk evicted for want of inodes may
        # have none left to make it then (evict_for_disk_pressure fills it and renames it).
        (state / EVICTED_DRAFT).touch()
        files = [*mpi_files, (_hosts_file(state, spec, refs, own=ref), "/etc/hosts")]
        if job_network is not None and job_network.resolv_conf is not None:
            # LOCAL_JOB_NETWORK=isolated-outbound: names resolve through slirp4netns's DNS
            # forwarder (10.0.2.3), not the host's resolver (which may be on its loopback).
            files.append((job_network.resolv_conf, "/etc/resolv.conf"))
        options = bwrap_options(
            tmp_dir=tmp,
            shm_bytes=spec.shared_memory_gi * 1024**3,
            mounts=mounts,
            files=files,
            hidden=hidden,
            seccomp_fd=(seccomp_fd := no_setuid_filter_fd()),
            devices=devices,
            driver_cards=nvidia_driver_cards(role.accelerator_type, cards),
            as_user=job_network.user if job_network is not None else None,
            hostname=replica_hostname(spec, ref),
            # Set by bwrap for the command alone: nothing of the job's environment reaches a
            # process on the host (sandbox.environment_options).
            env=env,
        )
        # bwrap reads its options from a descriptor: on its command line they would show
        # the run folder's and the volumes' host paths to the job (/proc/1/cmdline), and
        # the job's secret values to every account's `ps`.
        options_fd = options_memfd(options)
        sandboxed = [
            settings.LOCAL_BWRAP,
            "--args",
            str(options_fd),
            "--",
            "bash",
            "-c",
            START_GATE,
            "bash",
            MPI_WORKER_COMMAND if mpi_worker(spec, ref.role) else spec.v1_command(),
        ]
        log_path = job_logs.replica_log_path(job.public_id, ref.label)
        lock_fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        # The environment (secret values included) goes to the shim, which masks the secret
        # ones in the log, in an anonymous in-memory file, never a file on disk: one written
        # there stayed behind, secrets and all, whenever a stop or a dying worker kept the
        # shim from reading it.
        env_fd = env_memfd(env)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            (state / "launched").write_text(str(run.attempt))
            banner = {"replica": ref.label, "attempt": run.attempt}
            argv = [
                sys.executable,
                str(SHIM),
                "--state",
                str(state),
                "--log",
                str(log_path),
                "--lock-fd",
                str(lock_fd),
                "--env-fd",
                str(env_fd),
                "--cpus",
                ",".join(map(str, cpus)),
                # The shim's own log lines, in the console's language like every other
                # recorded text; it fills in {code} and {error} itself.
                "--banner",
                recorded(job_logs.CONSOLE_MPI_WORKER_BANNER, launcher="master-0", **banner)
                if mpi_worker(spec, ref.role)
                else recorded(job_logs.CONSOLE_BANNER, **banner),
                "--exit-line",
                recorded(job_logs.CONSOLE_EXIT, replica=ref.label),
                "--start-failed-line",
                recorded(job_logs.CONSOLE_START_FAILED),
                # The log's size cap, and the line marking what a cut dropped (the shim
                # fills in {limit} and {dropped}).
                "--log-limit-mb",
                str(settings.LOCAL_LOG_MAX_MB),
                "--log-cut-line",
                recorded(job_logs.CONSOLE_LOG_CUT),
                "--log-cut-record",
                str(job_logs.log_cut_path(log_path)),
                # The line marking output a full disk kept out of the log ({dropped}, {error}).
                "--log-unwritten-line",
                recorded(job_logs.CONSOLE_LOG_UNWRITTEN),
                # The shim measures /tmp against its cap; the worker ends a replica over it.
                "--tmp-dir",
                str(tmp),
                "--tmp-limit-bytes",
                str(int(settings.LOCAL_TMP_MAX_GB * 1024**3)),
                "--tmp-check-seconds",
                str(settings.LOCAL_TMP_CHECK_SECONDS),
                # What the job page shows of the replica's CPU, memory and /tmp use.
                "--usage-seconds",
                str(settings.LOCAL_METRICS_SECONDS),
            ]
            # Names only: the shim reads the values from the environment it is handed and writes
            # `******` wherever one appears in the replica's output.
            for user_env in spec.envs:
                if user_env.secret:
                    argv += ["--secret-env", user_env.name]
            for keyword in keywords:
                argv += ["--keyword", keyword]
            if as_user is not None:
                argv += ["--as-user", f"{as_user[0]}:{as_user[1]}"]
            for folder in joined_cgroups:
                argv += ["--cgroup", str(folder)]
            # The opened volume folders bwrap binds (--bind-fd): the shim hands them on.
            for mount in mounts:
                argv += ["--mount-fd", str(mount.fd)]
            # bwrap's options and its seccomp program (no setuid files), handed on by the shim
            # as the volumes.
            extra_fds = [options_fd] + ([] if seccomp_fd is None else [seccomp_fd])
            for fd in extra_fds:
                argv += ["--mount-fd", str(fd)]
            # LOCAL_JOB_NETWORK=isolated: the namespaces the command enters before bwrap starts.
            network_fds = list(job_network.fds) if job_network is not None else []
            for fd in network_fds:
                argv += ["--netns-fd", str(fd)]
            with open(state / "shim.err", "ab") as err:
                child = subprocess.Popen(
                    [*argv, "--", *sandboxed],
                    start_new_session=True,
                    pass_fds=(
                        lock_fd,
                        env_fd,
                        *(mount.fd for mount in mounts),
                        *extra_fds,
                        *network_fds,
                    ),
                    stdin=subprocess.DEVNULL,
                    stdout=err,
                    stderr=err,
                    # The worker's own PATH, never the job's (its envs may set PATH).
                    env=shim_environment(),
                )
        finally:
            os.close(lock_fd)
            os.close(env_fd)
            os.close(options_fd)
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        if children is not None:
            children[child.pid] = child
        replica.pid = child.pid
        replica.process_start = process_start(child.pid) or ""
        replica.status = "running"
        replica.exit_code = None
        replica.started_at = timezone.now()
        replica.finished_at = None
        replica.reason, replica.reason_source = "", None
        replica.save(
            update_fields=[
                "pid",
                "process_start",
                "status",
                "exit_code",
                "started_at",
                "finished_at",
                "reason",
                "reason_source",
            ]
        )


def mpi_worker(spec: JobSpec, role: str) -> bool:
    """An MPI worker runs the agent the launcher starts its ranks through, not the command
    (a Kubeflow MPI worker runs its SSH server): every replica running mpirun would start
    the training once per replica."""
    return spec.framework == MPI and role != "master"


def _mpi_files(
    job: Job,
    run: LocalRun,
    spec: JobSpec,
    base: Path,
    *,
    mounts: list[Mount],
    as_user: tuple[int, int] | None,
) -> list[tuple[Path, str]]:
    """The files every replica of an MPI job binds (host path, path in the sandbox), and,
    added to `mounts`, each worker's agent folder (its /tmp/.mpi), read-only at
    /etc/mpi/agents/<label>: made now, before any replica starts, and bound by descriptor,
    opened without following a link, since the worker owns it (a link put in its place
    would show the launcher whatever it points to)."""
    mpi = base / "mpi"
    (mpi / "launcher").mkdir(parents=True, exist_ok=True)
    agent = mpi / "rsh"
    if not agent.exists():  # a relaunch's replicas running already have this one bound
        shutil.copyfile(MPI_AGENT, agent)
        agent.chmod(0o755)
    for ref in replica_refs(spec):
        if not mpi_worker(spec, ref.role):
            continue
        folder = replica_state_dir(job.public_id, run.attempt, ref.label) / "tmp" / ".mpi"
        if not folder.parent.exists():
            folder.parent.mkdir(parents=True)
            if as_user is not None:
                os.chown(folder.parent, *as_user)
        with contextlib.suppress(FileExistsError):
            folder.mkdir()
            if as_user is not None:
                os.chown(folder, *as_user)
        try:
            fd = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:  # replaced by the running worker (a relaunch): not bound, unreachable
            continue
        mounts.append(Mount(fd, str(folder), f"{MPI_AGENTS_DEST}/{ref.label}", read_only=True))
    return [
        (base / "hostfile", HOSTFILE_DEST),
        (base / "hostfile.hydra", HYDRA_HOSTFILE_DEST),
        (agent, MPI_AGENT_DEST),
        (mpi / "launcher", "/etc/mpi/launcher"),
    ]


def _mpi_launcher_done(
    job: Job, run: LocalRun, replicas: list[JobReplica], states: dict[int, ReplicaState]
) -> None:
    """Once an MPI job's launcher has exited 0, its workers' agents end (exit 0) too: an
    MPI job's attempt has the folder their agents watch (_mpi_files), no other job has."""
    for replica in replicas:
        state = states[replica.pk]
        if replica.role == "master" and state.phase == "exited" and state.exit_code == 0:
            done = attempt_dir(job.public_id, run.attempt) / "mpi" / "launcher" / "done"
            if done.parent.is_dir() and not done.exists():
                done.touch()


# A job's own opt-out of MPI fail fast: fault-tolerant MPI (ULFM, MPICH's
# -disable-auto-cleanup, Open MPI's orte_abort_on_non_zero_status 0) lets a rank fail on
# purpose while the others go on, which fail fast would end after the grace (review33).
# An env of the job, not a setting: one job's choice, read by the console, sent nowhere else.
MPI_FAIL_FAST_ENV = "CONSOLE_MPI_FAIL_FAST"
MPI_FAIL_FAST_OFF = frozenset({"0", "false", "no", "off"})


def mpi_fail_fast_wanted(spec: JobSpec | None) -> bool:
    """Unless the job's envs say CONSOLE_MPI_FAIL_FAST=0 (false/no/off). A spec that no
    longer reads keeps fail fast, the default."""
    if spec is None:
        return True
    for env in spec.envs:
        if env.name == MPI_FAIL_FAST_ENV:
            return env.value.strip().lower() not in MPI_FAIL_FAST_OFF
    return True


def _mpi_rank_failure_due(
    replicas: list[JobReplica], states: dict[int, ReplicaState], now: datetime
) -> dict[int, dict[str, Any]]:
    """The MPI workers (their pks, each with its record) where a rank ended other than with
    0 (its agent recorded it) LOCAL_MPI_RANK_GRACE_SECONDS ago or more while the launcher
    still runs and a worker still runs what that rank's launch handed it: MPICH's mpiexec
    waits for ever for a rank that exited without MPI_Abort (its proxy exits 0), and a rank
    killed by a signal now and then leaves it waiting too. A launcher that ends the job
    itself in the grace (Open MPI's mpirun does, hydra after MPI_Abort) has its own exit as
    the reason; one that ended what it started and goes on (its script carries on after
    mpirun failed) leaves no worker busy with that launch, and a later launch of that script,
    or another running beside it (`mpirun ... & mpirun ...`), is no hang of that rank's: only
    a record made while a worker busy now with the same launch already was counts."""
    if not any(r.role == "master" and states[r.pk].phase == "alive" for r in replicas):
        return {}
    busy: dict[str, float] = {}  # launch: since when the workers busy with it are
    for replica in replicas:
        for launch, since in (states[replica.pk].busy_since or {}).items():
            busy[launch] = min(since, busy.get(launch, since))
    grace = settings.LOCAL_MPI_RANK_GRACE_SECONDS
    due: dict[int, dict[str, Any]] = {}
    for replica in replicas:
        records = (states[replica.pk].rank_failed or {}).items()
        hung = [
            record
            for launch, record in records
            if launch in busy
            and busy[launch] <= record["time"]
            and now.timestamp() - record["time"] >= grace
        ]
        if hung:
            due[replica.pk] = min(hung, key=lambda record: record["time"])
    return due


def _with_failed_rank(
    failure: RecordedText,
    replica: JobReplica,
    replicas: list[JobReplica],
    states: dict[int, ReplicaState],
) -> RecordedText:
    """An MPI launcher's failure, saying where a rank exited other than with 0 first when a
    worker's agent saw it before the launcher exited: Open MPI's mpirun ends the job itself
    with the rank's code, and its own words name the rank by number alone ("Process name:
    [[27900,1],1]"), so the reason read "master-0 exited with code 3" and nothing said which
    instance to look at (qa68). A rank killed by a signal is left out: the launcher's own
    abort ends the other ranks so (SIGTERM, then SIGKILL), and one of those named would point
    at a bystander when the failed rank itself went unseen (one ending right after its start,
    or in the launcher's own replica, which has no agent)."""
    if replica.role != "master" or states[replica.pk].exited_at is None:
        return failure
    ended = states[replica.pk].exited_at.timestamp()
    seen = [
        (record["time"], f"{other.role}-{other.index}", record["code"])
        for other in replicas
        if other.role != "master"
        for record in (states[other.pk].rank_failed or {}).values()
        if "code" in record and record["time"] <= ended
    ]
    if not seen:
        return failure
    _time, label, code = min(seen)
    return recorded(
        gettext_noop("%(failure)s Before it, a rank in %(replica)s exited with code %(code)s."),
        failure=failure,
        replica=label,
        code=code,
    )


def _mpi_unknown_host_due(
    replicas: list[JobReplica], states: dict[int, ReplicaState], now: datetime
) -> dict[int, dict[str, Any]]:
    """The replicas (their pks, each with its record) where an MPI launcher asked rsh for a
    host that is not the job's LOCAL_MPI_RANK_GRACE_SECONDS ago or more and still runs
    (qa95: `mpiexec.hydra -hosts` of names rsh refused waited for ever, the job Running until
    stopped): the agent removes the record once that launcher ends."""
    if not any(r.role == "master" and states[r.pk].phase == "alive" for r in replicas):
        return {}
    grace = settings.LOCAL_MPI_RANK_GRACE_SECONDS
    return {
        replica.pk: record
        for replica in replicas
        if (record := states[replica.pk].unknown_host) is not None
        and states[replica.pk].phase == "alive"
        and now.timestamp() - record["time"] >= grace
    }


def unknown_host_message(label: str, spec: JobSpec | None, record: dict[str, Any]) -> RecordedText:
    labels = [ref.label for ref in replica_refs(spec)] if spec is not None else []
    return recorded(
        gettext_noop(
            "The MPI launcher in %(replica)s asked for host %(host)s, which is not a host of "
            "this job, and did not end the job within %(seconds)s seconds. Its hosts are "
            "%(hosts)s, or each replica's hostname (the job's name, a hyphen, then the label)."
        ),
        replica=label,
        host=record["host"],
        seconds=f"{settings.LOCAL_MPI_RANK_GRACE_SECONDS:g}",
        hosts=Words(tuple(labels)),
    )


def rank_failed_message(label: str, record: dict[str, Any]) -> RecordedText:
    seconds = f"{settings.LOCAL_MPI_RANK_GRACE_SECONDS:g}"
    if "signal" in record:
        try:
            name = signal.Signals(record["signal"]).name
        except ValueError:
            name = "?"
        return recorded(
            gettext_noop(
                "A rank in %(replica)s was killed by signal %(signal)s (%(name)s), and the MPI "
                "launcher did not end the job within %(seconds)s seconds."
            ),
            replica=label,
            signal=record["signal"],
            name=name,
            seconds=seconds,
        )
    return recorded(
        gettext_noop(
            "A rank in %(replica)s exited with code %(code)s, and the MPI launcher did not "
            "end the job within %(seconds)s seconds."
        ),
        replica=label,
        code=record["code"],
        seconds=seconds,
    )


def _work_ended(
    job: Job, run: LocalRun, replicas: list[JobReplica], states: dict[int, ReplicaState]
) -> datetime | None:
    """When a job whose every replica exited 0 ended (last_exit_time): an MPI job when its
    launcher did, since its workers' agents end only once a worker has seen that and told
    them (_mpi_launcher_done): a launcher that finished while no worker ran ended the job
    when the worker came back, its run time and card-hours counting the absence (review 24).
    A TensorFlow job when the last of its replicas that ended by themselves did (its chief,
    or a worker that ended after it: _workers_given_time), not those a stop ended (qa87: it
    was the chief's exit, its run time short of a worker's)."""
    ended = [states[r.pk] for r in _result_replicas(job, run, replicas)]
    if tensorflow_result_replica(job, replicas) is not None:
        grace = timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS)
        signalled = run.kill_at - grace if run.kill_at is not None else None
        ended += [
            state
            for state in (states[r.pk] for r in replicas)
            if state.phase == "exited"
            and state.exited_at is not None
            and (signalled is None or state.exited_at < signalled)
        ]
    return last_exit_time(ended)


def _result_replicas(job: Job, run: LocalRun, replicas: list[JobReplica]) -> list[JobReplica]:
    """The replicas whose exits are the job's result: an MPI job's launcher (its run folder
    says it is MPI, without the spec too), a TensorFlow job's chief or worker 0
    (tensorflow_result_replica), else every replica."""
    launchers = [r for r in replicas if r.role == "master"]
    folder = attempt_dir(job.public_id, run.attempt, run.runner)  # where it ran (review 60)
    if launchers and (folder / "mpi" / "launcher").is_dir():
        return launchers
    if (result := tensorflow_result_replica(job, replicas)) is not None:
        return [result]
    return replicas


def out_of_reach_dropped(hidden: list[str], uid: int, gid: int) -> list[str]:
    """`hidden` less the paths the job's user cannot reach: a folder above one it may not
    enter. Bubblewrap, run as that user, covers each hidden path by its path, and failed on
    such a one (review 17b: a secret file, NAME_FILE, in a 0700 folder made every job fail to
    start, "Can't create file at ... Permission denied"); the job, that same user on the host
    in a user namespace where no other id is mapped, cannot reach it either, so it stays
    hidden uncovered. Checked at each start, as the folders' modes are then."""
    kept = []
    for path in hidden:
        real = Path(os.path.realpath(path))
        if job_users.unreachable_folder(real.parent, uid=uid, gid=gid) is None:
            kept.append(path)
    return kept


# Kubernetes' longest hostname: a longer pod name is cut there.
HOSTNAME_MAX = 63


def replica_hostname(spec: JobSpec, ref: ReplicaRef) -> str:
    """A local replica's hostname: its pod's name on AIHC and PyTorchJob, `<job>-<role>-<index>`
    (MASTER_ADDR's form there). Where one of the job's would be longer than a hostname may be,
    every replica's is its label alone (`worker-0`, the MPI hostfile's name for it): names cut
    short could be two replicas', and labels are the job's own, one each. An MPI job's never
    pass it (a job name of 50 characters at most, `-worker-127`): its hostfile's names must
    not resolve to 127.0.0.1, or Open MPI takes that worker for its own node and runs its
    ranks in the launcher."""
    longest = max(len(f"{spec.name}-{other.label}") for other in replica_refs(spec))
    return f"{spec.name}-{ref.label}" if longest <= HOSTNAME_MAX else ref.label


def hosts_file_text(spec: JobSpec, refs: list[ReplicaRef], *, own: ReplicaRef) -> str:
    """A replica's /etc/hosts: every replica's hostname at 127.0.0.1, where each is reached
    on this machine's network and in an isolated job's namespace alike, then the host's own
    lines. Its own name comes first: the name of 127.0.0.1 is then its own, which
    socket.getfqdn() returns (torchrun's c10d names its node so), not `localhost`."""
    names = [replica_hostname(spec, own)]
    names += [replica_hostname(spec, ref) for ref in refs if ref != own]
    try:
        host_lines = Path("/etc/hosts").read_text(errors="replace")
    except OSError:
        host_lines = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
    return "".join(f"127.0.0.1\t{name}\n" for name in names) + host_lines


def _hosts_file(state: Path, spec: JobSpec, refs: list[ReplicaRef], *, own: ReplicaRef) -> Path:
    """Writes the replica's /etc/hosts in its state folder (only the runner writes there; the
    job's user, if another, reads it: 0644 in a folder made enterable)."""
    path = state / "hosts"
    path.write_text(hosts_file_text(spec, refs, own=own))
    path.chmod(0o644)
    return path


def files_under_run(base: Path, job_network: network.JobNetwork | None) -> list[Path]:
    """Files of the run folder a replica's sandbox binds besides its /tmp."""
    found = [base / "hostfile"]
    if (base / "mpi").is_dir():  # an MPI job's agent, its launcher's folder, hydra's hostfile
        found += [base / "mpi" / "rsh", base / "mpi" / "launcher", base / "hostfile.hydra"]
    if job_network is not None and job_network.resolv_conf is not None:
        found.append(job_network.resolv_conf)
    return found


def _enterable(*paths: Path) -> None:
    """Gives each folder from LOCAL_RUN_DIR down to each of `paths` (folders up to their own,
    files up to their parent) the x bit for others, and each file the r bit for others, which
    a worker run with a umask of 077 would have left out (review 17b: the hostfile and
    resolv.conf were then written 0600, root's, and the job's user could not read them; they
    hold nothing of anyone's: addresses). The run folder's own parents are checked at the
    worker's start (jobs.job_users.problems)."""
    top = Path(settings.LOCAL_RUN_DIR).resolve()
    for path in paths:
        path = path.resolve()
        if path.is_file():
            mode = stat.S_IMODE(path.stat().st_mode)
            if not mode & stat.S_IROTH:
                os.chmod(path, mode | stat.S_IRGRP | stat.S_IROTH)
        folder = path if path.is_dir() else path.parent
        chain = [folder, *folder.parents]
        for each in chain:
            if each != top and top not in each.parents:
                break
            mode = stat.S_IMODE(each.stat().st_mode)
            if not mode & stat.S_IXOTH:
                os.chmod(each, mode | stat.S_IXOTH)


def shim_environment() -> dict[str, str]:
    """The whole environment a replica's shim runs with: fixed, with none of the job's
    variables, which no process on the host may run with (sandbox.environment_options; the
    shim starts bwrap with a fixed one of its own, shim.BWRAP_ENVIRONMENT)."""
    return {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "LANG": "C.UTF-8"}


def env_memfd(env: dict[str, str]) -> int:
    """A descriptor of an anonymous in-memory file holding `env` as JSON, read from its start."""
    fd = os.memfd_create("replica-env", os.MFD_CLOEXEC)
    data = json.dumps(env).encode()
    written = 0
    while written < len(data):
        written += os.write(fd, data[written:])
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def role_limits(role: Role) -> tuple[int | None, int | None]:
    """(memory in bytes, CPU cores) a replica of `role` is held to; None: no limit. Memory
    is the role's GB as GiB, as AIHC's and the wizard's "Gi" read."""
    return (role.memory_gb * 1024**3 if role.memory_gb else None), role.cpu


def _replica_cgroup(
    job: Job, run: LocalRun, role: Role, label: str, *, devices: list[str]
) -> list[Path]:
    """The cgroups the replica's command joins (none without enforcement).

    Every replica gets them, whatever its role sets: its memory and cpu cgroups lie under the
    jobs' parent, which holds all jobs together to what the console keeps for itself
    (LOCAL_RESERVED_MEMORY_GB, cgroups.hold_jobs), and the number of its processes is held
    (LOCAL_MAX_PROCESSES, where there is a pids controller): a fork bomb is no less one in a
    job without a CPU or memory value. Likewise one holding it to the device nodes its sandbox binds,
    `devices` (host paths), where a v1 devices hierarchy is writable (cgroups.device_rules;
    a CPU-only replica's allows only the standard nodes)."""
    memory, cpu = role_limits(role)
    enforcement = cgroups.current()
    processes = settings.LOCAL_MAX_PROCESSES if enforcement.pids_root else 0
    rules = (
        cgroups.device_rules(cgroups.device_nodes(devices)) if enforcement.devices_root else None
    )
    if not enforcement.active:
        return []
    try:
        return cgroups.create_replica_cgroup(
            enforcement,
            public_id=job.public_id,
            attempt=run.attempt,
            label=label,
            memory_bytes=memory,
            cpu_cores=cpu,
            max_processes=processes or None,
            devices=rules,
        )
    except cgroups.CgroupError as exc:
        raise SandboxError(exc.args[0]) from None


def _limits_not_enforced(job: Job, spec: JobSpec) -> None:
    """Said once, as the job starts, when it sets a CPU or memory value this worker cannot
    hold it to."""
    enforcement = cgroups.current()
    if enforcement.active or not any(r.cpu or r.memory_gb for r in spec.roles):
        return
    job_event(
        job=job,
        reason="LimitsNotEnforced",
        message=recorded(
            gettext_noop("CPU and memory are not enforced on this machine: %(why)s."),
            why=enforcement.why,
        ),
        warning=True,
    )


def launch_wanted(run: LocalRun) -> bool:
    """Whether the run's replicas should still be started: no stop, timeout or failure has
    been recorded since the launch began (the web process may record a Stop at any time)."""
    return LocalRun.objects.filter(pk=run.pk, stop_target="", job__status=S.RUNNING).exists()


def _exclusive_cpus_in_use() -> set[int]:
    from .models import ACTIVE_STATUSES

    used: set[int] = set()
    for cpus in LocalRun.objects.filter(
        job__backend="local", job__status__in=ACTIVE_STATUSES
    ).values_list("cpus", flat=True):
        used.update(cpus or [])
    return used


def start_refusal(*, job: Job, spec: JobSpec) -> str | None:
    """Why a queued job cannot start, of what can be known before it takes its cards and is
    marked Running: a volume its owner may no longer mount (or made read-only since), a
    mount path or replica count refused since it was queued, a mount over a file of this
    machine, a TensorFlow job that would never end. launch_attempt asks again (a relaunch, a
    fault-tolerance restart). Bubblewrap missing holds every job Queued instead, and so do
    cards whose device nodes are missing (jobs.scheduler; cards_short_of_nodes); what only
    starting tells (the
    owner's uid, a folder the job cannot reach) fails it in launch_attempt."""
    refused = volume_refusals(spec=spec, owner=job.owner, at_start=True)
    if refused:
        return joined(*(m for messages in refused.values() for m in messages))
    for ds in spec.datasources:
        if problem := runner_path_problem(ds.mount_path, framework=spec.framework):
            return problem
    return (
        mount_over_host_file(spec)
        or too_many_replicas(spec)
        or tensorflow_without_end(spec)
        or None
    )


def refuse_start(*, job: Job, spec: JobSpec, worker: WorkerIdentity | None = None) -> bool:
    """Fails `job` straight from Queued when start_refusal says it cannot start, and says
    whether it did. The scheduling pass asks before it gives the job any cards (review57:
    asked within start_job, after the allocation, the refused job held its cards and a slot
    of LOCAL_MAX_RUNNING_JOBS for the rest of the pass, so a later job of another queue
    jumped the queue behind it and a standalone job behind it said no card was idle).

    Failed as it never ran: no Started event, no start time, so usage counts it as no job
    (qa106: "Started … then StartFailed" read as a job run, "任务数 2" at 0 card-hours). The
    failure and its alert are committed together, under the same lock and lease check as a
    start (start_job)."""
    refusal = start_refusal(job=job, spec=spec)
    if not refusal:
        return False
    with transaction.atomic():
        local_cards_locked()
        if worker is not None and not holds_lease(worker=worker):
            logger.warning("%s not started: this worker no longer holds the lease", job.public_id)
            return True
        _fail_queued_start(job=job, error=refusal)
    return True


def _fail_queued_start(*, job: Job, error: Any) -> None:
    """Fails `job` straight from Queued, as never run (refuse_start), with its alert, in the
    caller's transaction."""
    message = recorded(gettext_noop("Could not start: %(error)s"), error=error)
    logger.warning("%s: %s", job.public_id, in_english(message))  # the log is English
    if job_transition(job=job, to=S.FAILED, reason="StartFailed", message=message, warning=True):
        job_alert(job=job, item="jobFailed", message=named_for_alert(job=job, message=message))


def start_job(
    job: Job,
    alloc: Allocation,
    *,
    children: Children | None = None,
    worker: WorkerIdentity | None = None,
) -> bool:
    """Queued -> Running with the allocation recorded, then starts the processes.

    `worker`: the worker whose scheduling pass this is. The start is made only if it still
    holds the lease, checked in the same transaction as the switch to Running (the fence,
    jobs.health.holds_lease). Without it, a worker whose pass blocked past a takeover (a slow
    disk, a paused machine) would start a job on the allocation it worked out before the
    takeover: the status switch is conditional on Queued, so never the same job twice, but
    the new holder may have given those cards (or the last of LOCAL_MAX_RUNNING_JOBS) to
    another job meanwhile, and two jobs would run on one card. None: not checked (a
    scheduling pass run by hand, in tests and benchmarks). The pass has asked refuse_start
    before it allocated the cards.

    Everything a worker does after a job started is fenced otherwise: only the worker that
    holds `worker.lock` of the run directory the job started in follows it
    (jobs.runner.followed_here, jobs.worker.take_worker_lock), so a worker that took over
    elsewhere never launches, restarts or ends its replicas, and a stale holder that carries
    on a step past a takeover is the only process following its own jobs; each change to the
    job is conditional on what it read (jobs.services.job_transition).

    Raises NoRoomForRunFolder, the job left Queued and nothing of its folder left, when the
    disk of LOCAL_RUN_DIR has no room to make its folder (make_run_folder)."""
    spec = job.job_spec()
    now = timezone.now()
    no_room: NoRoomForRunFolder | None = None
    with transaction.atomic():
        # First, so that no admission of a standalone job reads the pool between this start's
        # two changes (jobs.locks.local_cards_locked): on PostgreSQL each of its reads sees what
        # was committed when it ran, and a start committed between its read of the cards held
        # and its read of the Queued jobs hid this job from both, its cards read as idle.
        local_cards_locked()
        if worker is not None and not holds_lease(worker=worker):
            logger.warning("%s not started: this worker no longer holds the lease", job.public_id)
            return False
        # While still Queued (review61): moved after the switch to Running, a worker that died
        # between the two left the earlier run's exit record for the next worker, which read it
        # as this run's ("Succeeded" with nothing run, the qa110 bug). Moved here, a death
        # before the commit leaves the job Queued with its folder already cleared.
        try:
            aside = earlier_run_set_aside(job.public_id)
        except OSError as exc:
            if exc.errno in NO_ROOM_ERRNOS:  # a fact of the disk: it waits (make_run_folder)
                raise NoRoomForRunFolder(no_room_message()) from exc
            # Never deleted instead: the operator may want them (qa110). The OSError names the
            # file refused and, for a move cut short, the folder what was moved is in.
            _fail_queued_start(job=job, error=recorded(EARLIER_RUN_NOT_SET_ASIDE, error=str(exc)))
            return True
        if aside:
            logger.warning("%s: moved its earlier run's files to %s", job.public_id, aside)
            job_event(
                job=job,
                reason="EarlierRunSetAside",
                message=recorded(
                    gettext_noop(
                        "This job's folder held the records and logs of an earlier run of it (a "
                        "database restored from a backup taken before that run?): they were "
                        "moved to %(folder)s in its folder, and this run starts afresh."
                    ),
                    folder=aside,
                ),
                warning=True,
            )
        # Made while still Queued, the set-aside's event committed either way: a disk without
        # room holds the job in its place (the caller says so, jobs.scheduler).
        master_port = job_ports(1)[0]
        try:
            make_run_folder(job, spec, master_port=master_port)
        except NoRoomForRunFolder as exc:
            no_room = exc
        except OSError as exc:
            _fail_queued_start(job=job, error=str(exc))
            return True
        run = None if no_room else _marked_running(job, alloc, spec, now=now, port=master_port)
        if run is None and no_room is None:
            unmake_run_folder(job.public_id)  # no longer Queued (stopped meanwhile)
            return False
    if no_room is not None:
        raise no_room
    assert run is not None
    _limits_not_enforced(job, spec)
    try:
        launch_attempt(job, run, spec, children=children)
    except Exception as exc:  # a job that cannot start fails; the worker carries on
        _fail_launch(job, run, exc)
        return True
    if not launch_wanted(run):
        # Stopped while launching: what did start gets its SIGTERM now rather than a tick
        # later.
        job.refresh_from_db()
        supervise(job, children=children)
    # Its "running" alert goes from supervise, once every replica's sandbox has started
    # (_sandboxes_started): a shim may yet find bubblewrap gone, and the job go back to Queued.
    return True


def _marked_running(
    job: Job, alloc: Allocation, spec: JobSpec, *, now: datetime, port: int
) -> LocalRun | None:
    """Queued -> Running with the allocation recorded, in start_job's transaction: the run,
    or None when the job was no longer Queued."""
    # "A800 (cards 0, 1)", as the Replicas table lists a replica's card numbers (qa92: it
    # read "A800 [0, 1]", a Python list).
    cards = [
        recorded(
            gettext_noop("%(card)s (cards %(ids)s)"),
            card=card_shown(card),
            ids=Words(tuple(str(i) for i in indices)),
        )
        for card, indices in alloc.devices.items()
        if indices
    ]
    if not job_transition(
        job=job,
        to=S.RUNNING,
        reason="Started",
        message=recorded(
            gettext_noop("Started on this machine with %(cards)s."),
            cards=joined(*cards, sep="; "),
        )
        if cards
        else recorded(gettext_noop("Started on this machine.")),
    ):
        return None
    run, _ = LocalRun.objects.update_or_create(
        job=job,
        defaults={
            "attempt": 1,
            "devices": alloc.devices,
            "cpus": alloc.cpus,
            "master_port": port,
            "stop_target": "",
            "stop_message": "",
            "stop_message_source": None,
            "kill_at": None,
            "sigterm_due": False,
            "hang_warned_at": None,
            "attempt_started_at": now,
            "running_alert_due": True,
            "runner": runner_key(),
            "run_uid": None,  # recorded by launch_attempt as its replicas start
            "run_gid": None,
        },
    )
    job.replicas.all().delete()
    JobReplica.objects.bulk_create(
        JobReplica(job=job, role=ref.role, index=ref.index) for ref in replica_refs(spec)
    )
    return run


def _sandboxes_started(
    job: Job, run: LocalRun, replicas: list[JobReplica], states: dict[int, ReplicaState]
) -> bool:
    """Whether every replica of the run's attempt got its sandbox started: its shim wrote
    `pid` once bubblewrap was running (jobs.shim), or it ended otherwise than for want of it.
    Until then a shim may still find bubblewrap gone (no_sandbox), and the job go back to
    Queued (supervise) rather than run."""
    for replica in replicas:
        state = states[replica.pk]
        if state.no_sandbox or state.phase == "unlaunched":
            return False
        folder = replica_state_dir(job.public_id, run.attempt, f"{replica.role}-{replica.index}")
        if state.phase == "alive" and not (folder / "pid").exists():
            return False
    return True


def _running_alert(job: Job, run: LocalRun) -> None:
    """Queues the job's jobRunning alert unless it was queued already or a stop has been
    recorded. The flag is cleared in the same transaction, so a worker killed before the
    commit leaves the alert due for the next one, and no worker sends it twice."""
    with transaction.atomic():
        if LocalRun.objects.filter(pk=run.pk, running_alert_due=True, stop_target="").update(
            running_alert_due=False
        ):
            job_alert(
                job=job,
                item="jobRunning",
                message=recorded(gettext_noop("%(name)s is running."), name=job.task_name),
            )


# What launch_attempt raises when a job cannot start, in words meant for its owner: the
# sandbox's refusals, the system's own errors (a full disk, a missing file), the spec's, the
# job users' and cgroups'. Anything else is the console's own fault.
LAUNCH_ERRORS = (SandboxError, OSError, SpecError, cgroups.CgroupError, job_users.JobUserError)


def _fail_launch(job: Job, run: LocalRun, exc: Exception) -> None:
    # A reason recorded with its message (jobs.sandbox's) is kept so, to be said again in
    # each reader's language; an exception's own words (an OSError's) as they are. Any other
    # exception is a bug, whose words mean nothing to the job's owner (qa107: a KeyError read
    # "无法启动：'baidu.com/a800…'"): an internal error is said, its traceback in the worker's log.
    if len(exc.args) == 1 and source_of(exc.args[0]):
        reason: Any = exc.args[0]
    elif isinstance(exc, LAUNCH_ERRORS):
        reason = exc
    else:
        logger.error("%s: could not start", job.public_id, exc_info=exc)
        reason = recorded(
            gettext_noop(
                "an internal error while starting it; staff can read the worker's log for it"
            )
        )
    message = recorded(gettext_noop("Could not start: %(error)s"), error=reason)
    logger.warning("%s: %s", job.public_id, in_english(message))  # the log is English
    for replica in job.replicas.all():
        signal_group(replica, signal.SIGKILL)
    # A stop recorded meanwhile (Stop, Delete, a timeout) keeps its target: the job ends as
    # asked, not Failed.
    LocalRun.objects.filter(pk=run.pk, stop_target__in=("", TARGET_RESTART)).update(
        stop_target=TARGET_FAILED, stop_message=message, stop_message_source=source_of(message)
    )
    run.refresh_from_db()
    job_event(job=job, reason="StartFailed", message=message, warning=True)


# -- supervision ---------------------------------------------------------------------


def restart_limit(spec: JobSpec) -> int:
    if not spec.fault_tolerance:
        return 0
    ftc = spec.fault_tolerance_config
    if ftc is None or ftc.fault_tolerance_limit is None:
        return DEFAULT_RESTART_LIMIT
    return ftc.fault_tolerance_limit


def request_stop(job: Job, *, target: str, message: str, delete: bool = False) -> None:
    """Asks the worker to end a running local job's processes and land on `target`."""
    with transaction.atomic():
        run = LocalRun.objects.select_for_update().filter(job=job).first()
        if run is None:
            return
        # A stop replaces a restart or failure the worker decided (the stop wins); the first
        # stop recorded (a Stop, or a timeout) keeps its target and message.
        if run.stop_target not in (TARGET_STOPPED, TARGET_TIMED_OUT):
            run.stop_target = target
            run.stop_message = message
            run.stop_message_source = source_of(message)
        if delete and not run.delete_when_stopped:
            # The first Delete is the one carried out: its key, if a script asked, is named
            # in the DeletedJob row the worker writes (jobs.actions.job_delete).
            run.delete_api_key = signing_key()
        run.delete_when_stopped = run.delete_when_stopped or delete
        run.save(
            update_fields=[
                "stop_target",
                "stop_message",
                "stop_message_source",
                "delete_when_stopped",
                "delete_api_key",
            ]
        )
        if job.status == S.RUNNING and target in (TARGET_STOPPED, TARGET_TIMED_OUT):
            if target == TARGET_STOPPED and active_runner() is None:
                # No worker runs (the worker banner's rule, which says so only once the lease
                # has lapsed): nothing sends SIGTERM until one does. Said at once, not
                # "Stopping every replica" while nothing stops.
                reason = "Stopping"
                now = recorded(NO_WORKER_DELETE_MESSAGE if delete else NO_WORKER_STOP_MESSAGE)
            elif target == TARGET_STOPPED and waits_for_its_worker(run):
                # Not "SIGTERM, SIGKILL after 10 s": nothing here can send them.
                reason = "Stopping"
                now = recorded(DELETE_WAITS_MESSAGE if delete else STOP_WAITS_MESSAGE)
            elif target == TARGET_STOPPED and stopped_at_looks_there(run):
                # Sent at the worker's looks there, a minute apart: not "SIGKILL after 10 s"
                # (fix144; the Delete's job, until then, was never deleted either).
                reason = "Stopping"
                now = recorded(
                    DELETE_AT_LOOKS_MESSAGE if delete else STOP_AT_LOOKS_MESSAGE,
                    seconds=f"{settings.LOCAL_STOP_GRACE_SECONDS:g}",
                )
            elif target == TARGET_STOPPED:
                # `message` is what the job ends with; while stopping, say what happens: that
                # the job then goes too, when a Delete asked (in another tab, by a script), or
                # a page left open said Stopping and then lost the job without a word.
                reason = "Stopping"
                now = recorded(
                    DELETE_SIGNALS_MESSAGE if delete else STOP_SIGNALS_MESSAGE,
                    seconds=f"{settings.LOCAL_STOP_GRACE_SECONDS:g}",
                )
            else:
                reason, now = "Timeout", message
            job_transition(job=job, to=S.STOPPING, reason=reason, message=now)
        elif job.status == S.STOPPING and delete:
            _say_stopping_to_delete(job)


def _say_stopping_to_delete(job: Job) -> None:
    """A Delete of a job a Stop is ending already: its reason says the job goes too once it has
    stopped, with the same words of how and when it stops (review63: the Stop's reason stayed,
    and neither the page nor the list said the job would be deleted). A Timeout's, or any other
    reason, is left as it is."""
    source = job.status_reason_source or {}
    deleting = STOP_TO_DELETE.get(source.get("key", ""))
    if deleting is None:
        return
    now = recorded(deleting, **(source.get("params") or {}))
    Job.objects.filter(pk=job.pk, status=S.STOPPING).update(
        status_reason=str(now), status_reason_source=source_of(now), updated_at=timezone.now()
    )
    job.status_reason, job.status_reason_source = str(now), source_of(now)


# A stop (or a Delete's) recorded while no worker runs at all (jobs.health.active_runner).
NO_WORKER_STOP_MESSAGE = gettext_noop(
    "Stop requested. No worker (job scheduler) is running now, so nothing can end the "
    "replicas yet: the stop is recorded, and they are stopped as soon as a worker runs again."
)
NO_WORKER_DELETE_MESSAGE = gettext_noop(
    "Stop requested to delete the job. No worker (job scheduler) is running now, so nothing "
    "can end the replicas yet: the stop is recorded, and once a worker runs again they are "
    "stopped and the job is deleted, with its logs."
)
# A stop of a job whose processes the active worker cannot reach (waits_for_its_worker).
STOP_WAITS_MESSAGE = gettext_noop(
    "Stop requested. This job runs on another machine or run directory than the worker now "
    "active, which cannot reach its processes: it stops once a worker runs where it started "
    "again. If that machine is gone for good, an administrator can mark the job as lost."
)
DELETE_WAITS_MESSAGE = gettext_noop(
    "Stop requested to delete the job. This job runs on another machine or run directory than "
    "the worker now active, which cannot reach its processes: it is stopped, and deleted with "
    "its logs, once a worker runs where it started again. If that machine is gone for good, an "
    "administrator can mark the job as lost."
)
# A stop of a job the active worker ends in another run directory of its machine
# (stopped_at_looks_there).
STOP_AT_LOOKS_MESSAGE = gettext_noop(
    "Stopping every replica where it ran (another run directory on this machine, where no "
    "worker runs now): the active worker sends SIGTERM at its next look there (it looks once a "
    "minute), and SIGKILL at a look %(seconds)s s or more after."
)
DELETE_AT_LOOKS_MESSAGE = gettext_noop(
    "Stopping every replica where it ran (another run directory on this machine, where no "
    "worker runs now) to delete the job: the active worker sends SIGTERM at its next look there "
    "(it looks once a minute), and SIGKILL at a look %(seconds)s s or more after; the job is "
    "deleted, with its logs, once it has stopped."
)


# A stop the active worker carries out itself, by signals.
STOP_SIGNALS_MESSAGE = gettext_noop(
    "Stopping every replica (SIGTERM, SIGKILL after %(seconds)s s)."
)
DELETE_SIGNALS_MESSAGE = gettext_noop(
    "Stopping every replica (SIGTERM, SIGKILL after %(seconds)s s) to delete the job: it is "
    "deleted, with its logs, once it has stopped."
)
# Each Stopping reason of a Stop, and the same for a Delete's (_say_stopping_to_delete).
STOP_TO_DELETE = {
    NO_WORKER_STOP_MESSAGE: NO_WORKER_DELETE_MESSAGE,
    STOP_WAITS_MESSAGE: DELETE_WAITS_MESSAGE,
    STOP_AT_LOOKS_MESSAGE: DELETE_AT_LOOKS_MESSAGE,
    STOP_SIGNALS_MESSAGE: DELETE_SIGNALS_MESSAGE,
}


def end_leftover_replicas() -> list[str]:
    """Ends the replicas still running in this run directory of local jobs that are no
    longer Running or Stopping (ended, or deleted): those an administrator marked as lost
    while this worker was away (README "What a takeover means for local jobs"), as the
    worker does on a stop: SIGTERM to each replica's process group, SIGKILL to what is left
    after LOCAL_STOP_GRACE_SECONDS. Their cgroups and network namespace holders then go
    (jobs.worker's sweeps), their /tmp folders too, and each job still in the database gets
    a Warning event `LeftoverEnded`. Returns the public ids of the jobs whose replicas it ended.

    Called by a worker as it starts and as it takes the lease, before it starts anything: of
    this run directory's jobs, only one Running or Stopping in the database may have live
    replicas. A live replica is told by its lock (held by its shim), not by a search of
    /proc, so looking costs one lock attempt per replica folder."""
    run_dir = Path(settings.LOCAL_RUN_DIR)
    live: dict[str, list[Path]] = {}
    for lock in run_dir.glob("*/attempt-*/*/lock"):
        state = lock.parent
        if state.name == "network":  # a namespace holder: ended with the job's cgroups
            continue
        if _lock_held(lock):
            live.setdefault(state.parts[-3], []).append(state)
    if not live:
        return []
    following = set(
        Job.objects.filter(
            public_id__in=live, backend="local", status__in=[S.RUNNING, S.STOPPING]
        ).values_list("public_id", flat=True)
    )
    leftovers = {
        public_id: states for public_id, states in live.items() if public_id not in following
    }
    groups: dict[str, list[JobReplica]] = {}
    for public_id, states in leftovers.items():
        for state in states:
            found = live_shim(state)
            if found is not None:  # (the shim is its group's leader: a session of its own)
                groups.setdefault(public_id, []).append(
                    JobReplica(pid=found[0], process_start=found[1])
                )
    every = [replica for replicas in groups.values() for replica in replicas]
    for replica in every:
        signal_group(replica, signal.SIGTERM)
    left = groups_still_alive(every, wait=settings.LOCAL_STOP_GRACE_SECONDS)
    for replica in left:
        signal_group(replica, signal.SIGKILL)
    if stuck := groups_still_alive(left, wait=STRAGGLER_WAIT_SECONDS):
        logger.warning("processes %s outlived SIGKILL", ", ".join(str(r.pid) for r in stuck))
    for public_id, replicas in groups.items():
        logger.warning(
            "ended %d replica(s) of %s, still running here after the job had ended",
            len(replicas),
            public_id,
        )
        network.end_networks(public_id=public_id)
        cgroups.remove_job_cgroups(cgroups.current(), public_id=public_id)
        job = Job.objects.filter(public_id=public_id).first()
        if job is None:  # deleted meanwhile: nothing of it is kept
            for path in job_logs.job_dir(public_id).glob("attempt-*"):
                _remove_scratch(path)
            remove_tree(job_logs.job_dir(public_id))
            continue
        for path in job_logs.job_dir(public_id).glob("attempt-*"):
            _remove_scratch(path)
        job_event(
            job=job,
            reason="LeftoverEnded",
            message=recorded_plural(
                ngettext_noop(
                    "The worker where this job ran is back and found %(count)s of its replicas "
                    "still running after the job had ended: it ended it.",
                    "The worker where this job ran is back and found %(count)s of its replicas "
                    "still running after the job had ended: it ended them.",
                ),
                "count",
                count=len(replicas),
            ),
            warning=True,
        )
    return sorted(groups)


def supervise(job: Job, *, children: Children | None = None) -> None:
    """One supervision step for a Running or Stopping local job."""
    run = LocalRun.objects.filter(job=job).first()
    if run is None:  # Running without a run record cannot happen through start_job
        job_transition(
            job=job,
            to=S.FAILED,
            reason="Lost",
            message=recorded(gettext_noop("No local run record.")),
        )
        return
    # None once the stored spec no longer reads: followed without it (job_spec_or_noted).
    spec = job_spec_or_noted(job=job)
    now = timezone.now()
    replicas = list(job.replicas.all())
    states = {
        r.pk: read_state(replica_state_dir(job.public_id, run.attempt, f"{r.role}-{r.index}"))
        for r in replicas
    }
    for replica in replicas:
        _record_replica(replica, states[replica.pk], now, stopping=bool(run.stop_target))
    adopted = _adopt_unrecorded(job, run, replicas, states)

    if job.status == S.STOPPING and run.stop_target not in (TARGET_STOPPED, TARGET_TIMED_OUT):
        # Stopping without a stop target: stopped by someone else. Only if the target is
        # still what this tick read, so a stop recorded meanwhile keeps its own.
        LocalRun.objects.filter(pk=run.pk, stop_target=run.stop_target).update(
            stop_target=TARGET_STOPPED
        )
        run.refresh_from_db()

    if run.stop_target:
        _tear_down(job, run, spec, replicas, states, now, children, adopted=adopted)
        return

    unlaunched = [r for r in replicas if states[r.pk].phase == "unlaunched"]
    if unlaunched:  # the worker died between recording the start and spawning
        try:
            if spec is None:
                raise RuntimeError(said_here(gettext_noop("its stored spec can no longer be read")))
            launch_attempt(job, run, spec, children=children)
        except Exception as exc:  # a job that cannot start fails; the worker carries on
            _fail_launch(job, run, exc)
            return
        return  # its "running" alert, if due, once their sandboxes have started (below)

    if (
        run.attempt == 1
        and any(states[r.pk].no_sandbox for r in replicas)
        and (missing := bwrap_missing_message())
    ):
        # Bubblewrap went between the worker's look and a shim's exec (qa112: the job failed
        # "master-0 exited with code 127: command or file not found", blaming its command).
        # Held as the scheduler holds every job without it, not failed: the attempt is torn
        # down and the job goes back to Queued (_requeued). Unless a stop came first. A first
        # attempt only: going back to Queued clears the job's folder, and a fault-tolerance
        # restart's would take the earlier attempts' logs with it (review66); it fails, as
        # README says of a restart without bubblewrap.
        from .scheduler import SANDBOX_UNAVAILABLE_MESSAGE

        held = recorded(SANDBOX_UNAVAILABLE_MESSAGE, reason=missing)
        LocalRun.objects.filter(pk=run.pk, stop_target="").update(
            stop_target=TARGET_REQUEUE, stop_message=held, stop_message_source=source_of(held)
        )
        run.refresh_from_db()
        _tear_down(job, run, spec, replicas, states, now, children, adopted=adopted)
        return
    if run.running_alert_due and _sandboxes_started(job, run, replicas, states):
        # Not as the replicas were spawned (fix155): a shim that then found bubblewrap gone
        # sent the job back to Queued above, after its owner had been told it ran.
        _running_alert(job, run)

    # Without the spec too (one that no longer reads): its run folder says it is MPI.
    _mpi_launcher_done(job, run, replicas, states)
    rank_failed_due = (
        _mpi_rank_failure_due(replicas, states, now) if mpi_fail_fast_wanted(spec) else {}
    )
    unknown_host_due = (
        _mpi_unknown_host_due(replicas, states, now) if mpi_fail_fast_wanted(spec) else {}
    )
    failure = None
    after_result = _after_result(job, replicas, states)
    for replica in _in_order_of_failure(replicas, states):
        if replica.pk in after_result:
            continue  # the job's result was decided before it failed (_tensorflow_done)
        state = states[replica.pk]
        label = f"{replica.role}-{replica.index}"
        finished = state.phase == "exited" and state.exit_code == 0
        # A fault keyword stands for a run gone wrong that may not end on its own; one whose
        # replica then exited 0 before the worker acted on it had finished its work (QA 44:
        # an eval's "Loss nan ..., ignoring" restarted a finished job, every attempt again).
        if state.keyword and not finished:
            failure = recorded(
                gettext_noop("%(replica)s logged the fault keyword “%(keyword)s”."),
                replica=label,
                keyword=state.keyword.get("keyword"),
            )
            break
        if state.tmp_over:
            failure = tmp_over_message(label, state.tmp_over)
            break
        # (One that exited 0 before its eviction was carried out had finished its work.)
        if state.evicted and not finished:
            failure = evicted_message(label, state.evicted)
            break
        if state.phase == "lost" and state.lost_in_restart:
            failure = recorded(
                gettext_noop(
                    "%(replica)s was lost: this machine restarted while it ran (a power cut, "
                    "a crash or a reboot), ending its process without an exit code."
                ),
                replica=label,
            )
            break
        if state.phase == "lost":
            failure = recorded(
                gettext_noop("%(replica)s was lost (its process ended without an exit code)."),
                replica=label,
            )
            break
        if state.no_sandbox and (missing := bwrap_missing_message()):
            # A restart that found bubblewrap gone (a first attempt goes back to Queued,
            # above): said so, not "exited with code 127: command or file not found", which
            # blamed the job's command (fix155).
            failure = recorded(
                gettext_noop("%(replica)s could not start its sandbox: %(reason)s."),
                replica=label,
                reason=missing,
            )
            break
        if state.phase == "exited" and state.exit_code != 0:
            failure = (
                (spec and _oom_failure(job, run, spec, replica))
                or (spec and _read_only_failure(job, spec, label, state.exit_code))
                or exit_message(label, state.exit_code)
            )
            failure = _with_failed_rank(failure, replica, replicas, states)
            break
        if replica.pk in rank_failed_due:
            failure = rank_failed_message(label, rank_failed_due[replica.pk])
            break
        if replica.pk in unknown_host_due:
            failure = unknown_host_message(label, spec, unknown_host_due[replica.pk])
            break
    if failure:
        _hang_cleared_at_end(job, run, replicas)
        deadline = _deadline(job, run, spec, now)
        failed_at = _failed_at(replicas, states)
        if spec and deadline and failed_at and failed_at > deadline:
            # Its time limit came first (left25): a worker watching would have timed it out
            # there, before the replica failed, so one that was not running then ends it as
            # Timed out at the limit, not Failed (nor restarts it), as for an exit with 0.
            # What failed is still said (review26): the exit code is the user's clue.
            said = _replica_failed_message(spec, run, failure)
            job_event(job=job, reason="ReplicaFailed", message=said, warning=True)
            if all(states[r.pk].phase in ("exited", "lost") for r in replicas):
                network.end_networks(public_id=job.public_id, children=children)
                cgroups.remove_job_cgroups(cgroups.current(), public_id=job.public_id)
                _timed_out_unwatched(job, run, spec, deadline, now)
            else:  # the others still run past the limit: stopped as a watched timeout is
                request_stop(job, target=TARGET_TIMED_OUT, message=_timed_out_message(spec))
            return
        can_restart = spec is not None and job.restarts < restart_limit(spec)
        # A failure to restart from, seen past the time limit (its own time unknown: a fault
        # keyword, a lost replica), ends the job Timed out instead (review26): a restart now
        # would only be stopped at the next tick, the limit counting from the first start.
        # One not to restart stays the job's failure (left25's rule above).
        timed_out = can_restart and deadline is not None and now > deadline
        if timed_out and spec is not None:
            target, message = TARGET_TIMED_OUT, _timed_out_message(spec)
        elif can_restart:
            target, message = TARGET_RESTART, failure
        else:
            target, message = TARGET_FAILED, _restarts_used_up(spec, failure)
        # Only if no stop was recorded since this tick read the run: a Stop or Delete from
        # the web process wins over the restart (or failure) decided here.
        decided = LocalRun.objects.filter(pk=run.pk, stop_target="").update(
            stop_target=target, stop_message=message, stop_message_source=source_of(message)
        )
        if decided:
            said = _replica_failed_message(spec, run, failure)
            job_event(job=job, reason="ReplicaFailed", message=said, warning=True)
            if target == TARGET_RESTART:  # one that ends here says it as it ends
                # As its end was stamped (_record_replica: never before its start).
                _exited_unwatched(job, label, replica.finished_at, now)
        run.refresh_from_db()
        _tear_down(job, run, spec, replicas, states, now, children, adopted=adopted)
        return

    if _tensorflow_done(job, run, spec, replicas, states, now):
        run.refresh_from_db()
        _tear_down(job, run, spec, replicas, states, now, children, adopted=adopted)
        return

    if all(states[r.pk].phase == "exited" for r in replicas):
        _hang_cleared_at_end(job, run, replicas)
        # The network first: its holder and slirp4netns are in the job's cgroups too.
        network.end_networks(public_id=job.public_id, children=children)
        cgroups.remove_job_cgroups(cgroups.current(), public_id=job.public_id)
        work_ended = _work_ended(job, run, replicas, states)
        deadline = _deadline(job, run, spec, now)
        if spec and deadline and work_ended and work_ended > deadline:
            _timed_out_unwatched(job, run, spec, deadline, now)
            return
        with transaction.atomic():  # the end and its alert are queued together, or neither
            succeeded = job_transition(
                job=job,
                to=S.SUCCEEDED,
                reason="Succeeded",
                message=recorded(gettext_noop("All replicas exited with code 0.")),
                ended_at=work_ended,
            )
            if succeeded:
                job_alert(
                    job=job,
                    item="jobSucceed",
                    message=recorded(gettext_noop("%(name)s succeeded."), name=job.task_name),
                )
        if succeeded:
            _ended_unwatched(job, now)
            _finished(job, run)
        return

    if network.outbound_lost(public_id=job.public_id, attempt=run.attempt):
        _outbound_lost(job, run, spec)

    if spec is None:
        return  # its time limit and hang threshold are in the spec it no longer reads
    deadline = _deadline(job, run, spec, now)
    if deadline is not None and now > deadline:
        request_stop(job, target=TARGET_TIMED_OUT, message=_timed_out_message(spec))
        return

    # The replicas still running: one that ended writes no more, and the runner's own "exited
    # with code 0" line in its log is not the job writing again (review28: it cleared a hang
    # warning while the others still hung).
    alive = [r for r in replicas if states[r.pk].phase == "alive"]
    if _check_hang(job, run, spec, alive, now):
        run.refresh_from_db()
        _tear_down(job, run, spec, replicas, states, now, children, adopted=adopted)


def tensorflow_result_replica(job: Job, replicas: list[JobReplica]) -> JobReplica | None:
    """The replica of a TensorFlow job whose exit with 0 is the job's success, as Kubeflow's
    TFJob decides it by default (its successPolicy ""): the chief, or worker 0 without one.
    Its parameter servers, a TF 2 ParameterServerStrategy's workers and a sidecar evaluator
    serve until they are killed, so "every replica exited 0" never came: the job ran until
    its time limit (QA 58). None for other frameworks, and for a TensorFlow job with neither
    chief nor worker (an evaluator alone), whose every replica's exit decides."""
    if job.framework != TENSORFLOW:
        return None
    by_label = {(r.role, r.index): r for r in replicas}
    return by_label.get(("chief", 0)) or by_label.get(("worker", 0))


def _result_decided_at(
    job: Job, replicas: list[JobReplica], states: dict[int, ReplicaState]
) -> datetime | None:
    """When a TensorFlow job's result was decided: its chief's (worker 0's) exit with 0."""
    result = tensorflow_result_replica(job, replicas)
    if result is None:
        return None
    state = states[result.pk]
    return state.exited_at if state.phase == "exited" and state.exit_code == 0 else None


def _failed_after_result(
    job: Job, replicas: list[JobReplica], states: dict[int, ReplicaState]
) -> list[JobReplica]:
    """The replicas of a TensorFlow job that exited other than 0 after its chief (worker 0)
    had exited 0. The job's result was decided at that exit, and a worker watching then
    would have stopped them (_tensorflow_done): their exits, most often of the chief's end
    (a peer gone, "connection reset"), are not the job's failure. Review 37: seen in the
    same tick as the chief's exit (the worker down, or the moment before its tick), such an
    exit restarted or failed a job whose chief had finished."""
    decided = _result_decided_at(job, replicas, states)
    if decided is None:
        return []
    return [
        r
        for r in replicas
        if states[r.pk].phase == "exited"
        and states[r.pk].exit_code != 0
        and states[r.pk].exited_at is not None
        and states[r.pk].exited_at > decided
    ]


def _after_result(
    job: Job, replicas: list[JobReplica], states: dict[int, ReplicaState]
) -> set[int]:
    """The replicas (pks) whose failure came after a TensorFlow job's result was decided:
    those of _failed_after_result, and one still running that logged a fault keyword after
    it (a peer's "connect timeout" once the chief is gone), which the stop ends. With fault
    tolerance on, either restarted the whole finished training (review 37)."""
    decided = _result_decided_at(job, replicas, states)
    if decided is None:
        return set()
    after = {r.pk for r in _failed_after_result(job, replicas, states)}
    for replica in replicas:
        state = states[replica.pk]
        found = (state.keyword or {}).get("time")
        if state.phase == "alive" and isinstance(found, float) and found > decided.timestamp():
            after.add(replica.pk)
    return after


def _tensorflow_done(
    job: Job,
    run: LocalRun,
    spec: JobSpec | None,
    replicas: list[JobReplica],
    states: dict[int, ReplicaState],
    now: datetime,
) -> bool:
    """Whether a TensorFlow job's chief (worker 0) has exited 0 while others still run (or
    others exited other than 0 after it: _failed_after_result), and their stop, after which
    the job succeeds, is now decided. Not past the job's time limit: a worker watching then
    would have timed it out first (the deadline check does, next)."""
    result = tensorflow_result_replica(job, replicas)
    if result is None:
        return False
    state = states[result.pk]
    still_running = [r for r in replicas if states[r.pk].phase == "alive"]
    failed_after = _failed_after_result(job, replicas, states)
    if not (state.phase == "exited" and state.exit_code == 0 and (still_running or failed_after)):
        return False
    deadline = _deadline(job, run, spec, now)
    if deadline is not None and (state.exited_at is None or state.exited_at > deadline):
        return False
    if _workers_given_time(replicas, states, state.exited_at, deadline, now):
        return False  # looked at again on the next tick
    label = f"{result.role}-{result.index}"
    others = Words(tuple(sorted(f"{r.role}-{r.index}" for r in still_running)))
    if still_running:
        message = recorded(
            gettext_noop(
                "%(replica)s exited with 0, which ends a TensorFlow job as Kubeflow's TFJob "
                "does; the replicas still running were stopped: %(others)s."
            ),
            replica=label,
            others=others,
        )
    else:
        message = recorded(
            gettext_noop(
                "%(replica)s exited with 0, which ends a TensorFlow job as Kubeflow's TFJob does."
            ),
            replica=label,
        )
    if failed_after:
        message = joined(
            message,
            recorded(
                gettext_noop(
                    "%(replicas)s exited other than with 0 after it, which does not change "
                    "the job's result."
                ),
                replicas=Words(tuple(sorted(f"{r.role}-{r.index}" for r in failed_after))),
            ),
        )
    # Only if no stop was recorded since this tick read the run: a Stop from the web
    # process keeps its own target (and _finished_before_stop still finds the success).
    decided = LocalRun.objects.filter(pk=run.pk, stop_target="").update(
        stop_target=TARGET_SUCCEEDED, stop_message=message, stop_message_source=source_of(message)
    )
    if decided and still_running:
        job_event(
            job=job,
            reason="Succeeding",
            message=recorded(
                gettext_noop(
                    "%(replica)s exited with 0, which ends a TensorFlow job: stopping the "
                    "replicas still running (%(others)s) with SIGTERM, SIGKILL after "
                    "%(seconds)s s."
                ),
                replica=label,
                others=others,
                seconds=f"{settings.LOCAL_STOP_GRACE_SECONDS:g}",
            ),
        )
    return True


def _workers_given_time(
    replicas: list[JobReplica],
    states: dict[int, ReplicaState],
    decided: datetime | None,
    deadline: datetime | None,
    now: datetime,
) -> list[JobReplica]:
    """The workers of a TensorFlow job without ps still running less than
    LOCAL_TF_WORKER_WAIT_SECONDS after its chief (worker 0) exited 0 at `decided`: they are
    left to end by themselves first. Its MultiWorkerMirroredStrategy workers finish with the
    chief, a moment later; stopped at once, TF caught the SIGTERM, they ran on and read
    Stopped (143, or 137 after the grace) on a succeeded job (qa87). With ps (TF 2's
    ParameterServerStrategy) its workers serve until stopped, and are stopped at once; so is
    an evaluator, once the workers are done. None past the job's time limit."""
    if decided is None or any(r.role == "ps" for r in replicas):
        return []
    if deadline is not None and now > deadline:
        return []
    if now >= decided + timedelta(seconds=settings.LOCAL_TF_WORKER_WAIT_SECONDS):
        return []
    return [r for r in replicas if r.role == "worker" and states[r.pk].phase == "alive"]


def _deadline(job: Job, run: LocalRun, spec: JobSpec | None, now: datetime) -> datetime | None:
    """When the job's time limit (任务超时时间) passes: its time limit after its start (the
    first attempt's: restarts do not reset it). None without a spec that reads."""
    if spec is None:
        return None
    started = job.started_at or run.attempt_started_at or now
    return started + minutes(spec.timeout_minutes)


def _restarts_used_up(spec: JobSpec | None, failure: str) -> str:
    """The failure a job ends with; with fault tolerance, that its restarts are used up (QA
    38: its reason and jobFailed alert read as a job's without fault tolerance)."""
    limit = restart_limit(spec) if spec is not None else 0
    if not limit:
        return failure
    return recorded(
        gettext_noop("%(failure)s (fault-tolerance restarts used up: %(limit)s of %(limit)s)"),
        failure=failure,
        limit=limit,
    )


def _replica_failed_message(spec: JobSpec | None, run: LocalRun, failure: str) -> str:
    """The ReplicaFailed event's words. A job that restarts fails once per attempt: each event
    says which (QA 37), as the log's "[console] master-0 attempt N starting" lines do."""
    if spec is None or not restart_limit(spec):
        return failure
    return recorded(
        gettext_noop("Attempt %(attempt)s: %(failure)s"), attempt=run.attempt, failure=failure
    )


def _in_order_of_failure(
    replicas: list[JobReplica], states: dict[int, ReplicaState]
) -> list[JobReplica]:
    """The replicas as their failures are looked for: those that exited other than 0 first,
    the earliest exit first, then the rest in their order. Peers of a replica that died most
    often die of it, a moment later: when the worker sees them all at once, the job's reason
    names the first, the cause (QA 44: master-0's "connection reset by peer" was named, and
    worker-1's CUDA error was a tab away)."""
    never = datetime.max.replace(tzinfo=UTC)

    def exited(replica: JobReplica) -> datetime:
        state = states[replica.pk]
        failed = state.phase == "exited" and state.exit_code != 0
        return (state.exited_at or never) if failed else never

    return sorted(replicas, key=exited)  # stable: the rest keep their order


def _failed_at(replicas: list[JobReplica], states: dict[int, ReplicaState]) -> datetime | None:
    """When the job's first failure happened: its replicas' earliest exit other than 0. None
    when a failure's time is not known (a replica lost, a fault keyword, /tmp too full, an
    eviction): such a failure may have come before the time limit, and stays one."""
    times = []
    for replica in replicas:
        state = states[replica.pk]
        finished = state.phase == "exited" and state.exit_code == 0
        if state.tmp_over or state.phase == "lost":
            return None
        if (state.keyword or state.evicted) and not finished:  # as the failure's own rule
            return None
        if state.phase == "exited" and state.exit_code != 0:
            if state.exited_at is None:
                return None
            times.append(state.exited_at)
    return min(times, default=None)


def _timed_out_message(spec: JobSpec) -> str:
    return recorded(
        gettext_noop("Timed out: ran past its %(minutes)s-minute limit."),
        minutes=spec.timeout_minutes,
    )


def _timed_out_unwatched(
    job: Job, run: LocalRun, spec: JobSpec, deadline: datetime, now: datetime
) -> None:
    """Ends as Timed out, at its deadline, a job whose replicas all exited after it (left24):
    a worker watching would have stopped it there (supervise's `now > deadline`), so one that
    was not running then must not make it Succeeded. Decision: a replica that exited exactly at
    the deadline finished within its limit, as a watching worker times out only past it."""
    message = _timed_out_message(spec)
    with transaction.atomic():  # the end and its alert are queued together, or neither
        ended = job_transition(
            job=job,
            to=S.TIMED_OUT,
            reason="TimedOut",
            message=message,
            warning=True,
            ended_at=deadline,
        )
        if ended:
            job_alert(job=job, item="jobFailed", message=named_for_alert(job=job, message=message))
    if not ended:
        return
    _timed_out_late(job, now, TIMED_OUT_EXITED_LATE_MESSAGE)
    _finished(job, run)


TIMED_OUT_EXITED_LATE_MESSAGE = ngettext_noop(
    "No worker was running when this job reached its time limit: a worker recorded the "
    "timeout %(count)s second later, after its replicas had exited on their own. Its run "
    "time counts to its time limit.",
    "No worker was running when this job reached its time limit: a worker recorded the "
    "timeout %(count)s seconds later, after its replicas had exited on their own. Its run "
    "time counts to its time limit.",
)
TIMED_OUT_STOPPED_LATE_MESSAGE = ngettext_noop(
    "No worker was running when this job reached its time limit: a worker found it %(count)s "
    "second later, after a replica had failed, and stopped the others. Its run time counts "
    "to its time limit.",
    "No worker was running when this job reached its time limit: a worker found it %(count)s "
    "seconds later, after a replica had failed, and stopped the others. Its run time counts "
    "to its time limit.",
)


def _timed_out_late(job: Job, now: datetime, messages: tuple[str, str]) -> None:
    """Says on the page of a job Timed out at its limit (its end) that a worker recorded it
    later, as _ended_unwatched says of an end."""
    late = _seconds_late(job.finished_at, now)
    if late is not None:
        job_event(
            job=job,
            reason="EndedUnwatched",
            message=recorded_plural(messages, "count", count=late),
        )


OUTBOUND_LOST = "OutboundLost"
# What it says, and what the owner can do (QA round 24: it said only that a fault-tolerance
# restart would bring the network back, which a job without fault tolerance never gets).
OUTBOUND_LOST_MESSAGE = gettext_noop(
    "The job's outbound network ended: its slirp4netns process (or the holder of its network "
    "namespace) is gone, so its connections out now fail with “Network is unreachable”. Its "
    "replicas keep running without it. To have it back, stop the job and press Run again: "
    "the new job gets a network of its own."
)
OUTBOUND_LOST_MESSAGE_FAULT_TOLERANT = gettext_noop(
    "The job's outbound network ended: its slirp4netns process (or the holder of its network "
    "namespace) is gone, so its connections out now fail with “Network is unreachable”. Its "
    "replicas keep running without it; the next attempt of a fault-tolerance restart gets "
    "outbound network again. To have it back now, stop the job and press Run again."
)


def _outbound_lost(job: Job, run: LocalRun, spec: JobSpec | None) -> None:
    """Says once per attempt that its outbound network ended (network.outbound_lost). The job
    keeps running, as README decides (its namespace is its replicas' as long as they run):
    only its connections out fail, which without this said nothing of why. A worker killed
    between the event and the mark finds the event and does not say it again."""
    if not outbound_lost_event(job=job, since=run.attempt_started_at or job.started_at):
        fault_tolerant = spec is not None and spec.fault_tolerance
        job_event(
            job=job,
            reason=OUTBOUND_LOST,
            message=recorded(
                OUTBOUND_LOST_MESSAGE_FAULT_TOLERANT if fault_tolerant else OUTBOUND_LOST_MESSAGE
            ),
            warning=True,
        )
    network.note_outbound_lost(public_id=job.public_id, attempt=run.attempt)


def outbound_lost_event(*, job: Job, since: Any = None) -> JobEvent | None:
    """The OutboundLost event of the job's attempt started at `since` (None: of any attempt).
    Its page shows it at the top while the job runs (jobs.views.outbound_lost_notice): at the
    end of a long event list nobody saw it."""
    said = JobEvent.objects.filter(job=job, reason=OUTBOUND_LOST)
    if since is not None:
        said = said.filter(created_at__gte=since)
    return said.order_by("-created_at", "-id").first()


def outbound_lost_notice(*, job: Job) -> JobEvent | None:
    """The current attempt's OutboundLost event of a running local job, else None."""
    if job.backend != "local" or job.status != JobStatus.RUNNING:
        return None
    run = LocalRun.objects.filter(job=job).values("attempt_started_at").first()
    since = run["attempt_started_at"] if run else None
    return outbound_lost_event(job=job, since=since or job.started_at)


def tmp_over_message(label: str, over: dict[str, int]) -> str:
    """The reason a replica whose /tmp went over its cap is ended: how much it held and the
    cap, in GB, the amount with as many decimals as show it is more than the cap."""
    limit_gb = over.get("limit", 0) / 1024**3
    limit = f"{round(limit_gb, 3):g}" if limit_gb >= 0.0005 else f"{limit_gb:.2g}"
    used_gb = over.get("used", 0) / 1024**3
    used = next(
        (text for d in range(1, 7) if float(text := f"{used_gb:.{d}f}") > float(limit)),
        f"{used_gb:.2g}",
    )
    return recorded(
        gettext_noop(
            "%(replica)s wrote %(used)s GB to /tmp, over the %(limit)s GB limit (LOCAL_TMP_MAX_GB)."
        ),
        replica=label,
        used=used,
        limit=limit,
    )


def _adopt_unrecorded(
    job: Job, run: LocalRun, replicas: list[JobReplica], states: dict[int, ReplicaState]
) -> list[JobReplica]:
    """Records the pid of every live replica that has none: a worker killed between a spawn
    and recording it leaves one, and without a pid it could never be signalled (stopped,
    timed out, torn down). Returns the replicas adopted."""
    adopted = []
    for replica in replicas:
        if replica.pid or states[replica.pk].phase != "alive":
            continue
        state = replica_state_dir(job.public_id, run.attempt, f"{replica.role}-{replica.index}")
        found = live_shim(state)
        if found is None:  # it ended since read_state looked; the next tick sees how
            continue
        replica.pid, replica.process_start = found
        try:  # recorded just before the spawn
            launched = datetime.fromtimestamp((state / "launched").stat().st_mtime, tz=UTC)
        except OSError:
            launched = timezone.now()
        replica.started_at = replica.started_at or launched
        replica.node = replica.node or socket.gethostname()
        replica.save(update_fields=["pid", "process_start", "started_at", "node"])
        logger.info("%s: adopted %s (pid %s)", job.public_id, replica, replica.pid)
        adopted.append(replica)
    return adopted


def exit_message(label: str, code: int) -> RecordedText:
    """Why a replica that exited non-zero failed. 127 is the shell's "command not found": on
    this machine that is most often a program or file only the job's image has (the runner
    does not pull images, the replica sees this machine's files), so the reason says so
    rather than leave the number alone; the log has the shell's own line naming what."""
    if code == 127:
        return recorded(
            gettext_noop(
                "%(replica)s exited with code 127: a command or file was not found (local "
                "jobs run on this machine's files, not on their image's)."
            ),
            replica=label,
        )
    if code == 126:
        return recorded(
            gettext_noop(
                "%(replica)s exited with code 126: a command was found but could not be run "
                "(it is not executable, or is a folder)."
            ),
            replica=label,
        )
    # 128 + N is how a shell (and bubblewrap, which reports the replica's code) says its
    # command was killed by signal N (QA 44: "exited with code 137" left the engineer to know
    # that it is SIGKILL, and that SIGKILL is most often the memory). A code a program chose
    # past 128 that names no signal stays a number.
    try:
        number = signal.Signals(code - 128) if 128 < code < 128 + signal.NSIG else None
    except ValueError:
        number = None
    if number is not None:
        hint = SIGNAL_HINTS.get(number.name)
        return recorded(
            hint
            or gettext_noop(
                "%(replica)s exited with code %(code)s: killed by signal %(number)s (%(signal)s)."
            ),
            replica=label,
            code=code,
            number=int(number),
            signal=number.name,
        )
    return recorded(
        gettext_noop("%(replica)s exited with code %(code)s."), replica=label, code=code
    )


# What the signals a training job most often dies of usually mean, said with the number.
SIGNAL_HINTS = {
    "SIGKILL": gettext_noop(
        "%(replica)s exited with code %(code)s: killed by signal %(number)s (%(signal)s), "
        "most often the kernel's out-of-memory killer or a kill -9."
    ),
    "SIGSEGV": gettext_noop(
        "%(replica)s exited with code %(code)s: killed by signal %(number)s (%(signal)s), a "
        "segmentation fault: it touched memory it may not (most often a crash in a native "
        "library)."
    ),
    "SIGABRT": gettext_noop(
        "%(replica)s exited with code %(code)s: killed by signal %(number)s (%(signal)s), an "
        "abort() (most often a failed assertion or an uncaught C++ exception)."
    ),
}


# What the kernel's EROFS reads as in the shell's, Python's and most other programs' errors.
READ_ONLY_ERROR = "Read-only file system"


def _read_only_failure(
    job: Job, spec: JobSpec, label: str, code: int, *, runner: str = ""
) -> str | None:
    """Why the job fails when the replica, which ended non-zero, had just been refused a
    write into a mount the job asked read-only (数据源 只读): the reason names that mount,
    instead of a bare exit code whose cause only the log tells. Read from the log's last
    lines: the error that ended a command is at its end. None when no such line names one
    of the job's read-only mount paths (the rest of the sandbox is read-only too, and says
    so its own way: a write into /usr is not the mount's doing). `runner`: where it ran, for
    a job this worker does not follow (exits_recorded_where_it_ran)."""
    mounts = [d.mount_path.rstrip("/") or "/" for d in spec.datasources if d.read_only]
    if not mounts:
        return None
    log = job_logs.replica_log_path(job.public_id, label, runner)
    for line in reversed(job_logs.tail_lines(log, 20)):
        if READ_ONLY_ERROR not in line:
            continue
        for mount in sorted(mounts, key=len, reverse=True):  # the deepest mount first
            if re.search(rf"(?<![\w./-]){re.escape(mount)}(?=[/'\":\s]|$)", line):
                return recorded(
                    gettext_noop(
                        "%(replica)s exited with code %(code)s: it could not write to "
                        "%(path)s, which the job mounts read-only."
                    ),
                    replica=label,
                    code=code,
                    path=mount,
                )
    return None


# What is written to /dev/shm is memory the instance holds (its cgroup counts the tmpfs pages),
# so a /dev/shm as large as the memory, or at least half of it, may be what filled it: the
# reason says so (qa60: a 2Gi /dev/shm beside 1 GB of memory was killed at 1.5 GB written, its
# reason naming the memory only, and the user looked for a leak in their program).
# Said as a condition (review 42): the size is what /dev/shm may hold, not what was in it, and a
# job that never writes there (a plain leak, killed beside the default 10 Gi) is not told to
# make it smaller as though it were the cause.
SHM_OOM_REASON = gettext_noop(
    "OOMKilled: memory limit %(limit)s exceeded; what the job writes to /dev/shm (shared "
    "memory, up to %(shm)d GiB) counts against it too: if the job writes there, give the role "
    "more memory or make the shared memory smaller"
)


def shared_memory_may_fill_memory(*, shm_gi: int, memory_gb: int) -> bool:
    """Whether a /dev/shm of `shm_gi` is larger than, or close to (at least half of), a
    memory limit of `memory_gb`."""
    return bool(shm_gi) and shm_gi * 2 >= memory_gb


def _oom_failure(job: Job, run: LocalRun, spec: JobSpec, replica: JobReplica) -> str | None:
    """Why the job fails when the replica, which ended non-zero, was killed for its memory
    limit, or the limit of all local jobs together (its cgroup counted an OOM kill), recorded
    on the replica too; None otherwise."""
    role = next((r for r in spec.roles if r.name == replica.role), None)
    if role is None:
        return None
    label = f"{replica.role}-{replica.index}"
    enforcement = cgroups.current()
    where = {"public_id": job.public_id, "attempt": run.attempt, "label": label}
    if not cgroups.oom_killed(enforcement, **where):
        return None
    if role.memory_gb and (
        not enforcement.jobs_memory_bytes or cgroups.own_limit_reached(enforcement, **where)
    ):
        # The role's memory as its field sets it, in GiB, as the shared memory beside it is
        # (until fix90a Kubernetes' "4Gi", beside "up to 10 GiB" in the same reason).
        reason = recorded(
            gettext_noop("OOMKilled: memory limit %(limit)s exceeded"),
            limit=f"{role.memory_gb} GiB",
        )
        if shared_memory_may_fill_memory(shm_gi=spec.shared_memory_gi, memory_gb=role.memory_gb):
            reason = recorded(
                SHM_OOM_REASON, limit=f"{role.memory_gb} GiB", shm=spec.shared_memory_gi
            )
    else:
        # The jobs' parent ran out: the memory the worker has (the machine's, or its cgroup's
        # limit) less the console's reserve, which all local jobs share, was used up (by this
        # job or by others).
        reason = cgroups.shared_memory_oom_reason(enforcement)
    replica.reason, replica.reason_source = reason, source_of(reason)
    replica.save(update_fields=["reason", "reason_source"])
    return recorded(
        gettext_noop("%(replica)s ran out of memory and was killed (%(reason)s)."),
        replica=label,
        reason=reason,
    )


def _record_replica(
    replica: JobReplica, state: ReplicaState, now: datetime, *, stopping: bool
) -> None:
    status = {"unlaunched": "pending", "alive": "running"}.get(state.phase)
    if state.phase == "unlaunched" and stopping:
        status = "stopped"  # the stop came before its launch: it never will start
    elif status is None and state.phase == "exited" and state.exit_code == 0:
        status = "succeeded"
    elif status is None and stopping and replica.status not in ("failed", "lost"):
        # Ending (or being killed) while the job is torn down is the stop's doing, not a
        # failure of its own; the replica that caused a restart or a failure was recorded
        # before the stop began, except one that logged a fault keyword or went over its
        # /tmp cap: it was still running then, and the tear-down ends it, but it is the one
        # that failed.
        status = "failed" if state.keyword or state.tmp_over or state.evicted else "stopped"
    elif status is None:
        status = "lost" if state.phase == "lost" else "failed"
    if replica.status != status or replica.exit_code != state.exit_code:
        replica.status = status
        replica.exit_code = state.exit_code
        if state.phase in ("exited", "lost") and replica.finished_at is None:
            ended = min(state.exited_at or now, now)
            # Never before its start, which is stamped once its shim is spawned: a command
            # that ends at once (or a clock set back) has an exit record a hair earlier.
            if replica.started_at is not None:
                ended = max(ended, replica.started_at)
            replica.finished_at = ended
        replica.save(update_fields=["status", "exit_code", "finished_at"])


HANG_CLEARED = gettext_noop(
    "Logs resumed: a replica wrote a line after the hang warning; the job is no longer "
    "suspected to hang."
)


# How much of a replica's log's end is read for the job's last line of its own.
_LOG_TAIL_BYTES = 65536


def _last_job_line_at(path: Path) -> datetime | None:
    """The stamp of the last line the job itself wrote in a replica's log (the runner's own,
    marked with CONSOLE_MARK after the stamp, left out: "exited with code 0"), None when the
    log's end holds none."""
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - _LOG_TAIL_BYTES))
            tail = log.read()
    except OSError:
        return None
    for line in reversed(tail.split(b"\n")):
        stamp, _, text = line.partition(b" ")
        if not text or text.startswith(CONSOLE_MARK):
            continue
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            return datetime.fromisoformat(stamp.decode())
    return None


def _hang_cleared_at_end(job: Job, run: LocalRun, replicas: list[JobReplica]) -> None:
    """As the job ends (every replica exited, or one failed): a line the job wrote after the
    hang warning clears it first, as it does while the job runs (_check_hang). A replica that
    wrote again and exited before the next tick read as still silent there, and the job's
    end came with no "hang cleared" (qa95)."""
    if run.hang_warned_at is None:
        return
    for replica in replicas:
        path = job_logs.replica_log_path(job.public_id, f"{replica.role}-{replica.index}")
        written = _last_job_line_at(path)
        if written is not None and written > run.hang_warned_at:
            with transaction.atomic():
                run.hang_warned_at = None
                run.save(update_fields=["hang_warned_at"])
                job_event(job=job, reason="HangCleared", message=recorded(HANG_CLEARED))
            return


def _check_hang(
    job: Job, run: LocalRun, spec: JobSpec, replicas: list[JobReplica], now: datetime
) -> bool:
    """Warns once per silence past the hang threshold (event, jobHang alert, a capture of the
    stacks). With fault tolerance on, the warned silence then restarts the job (or fails it,
    its restarts used up) once that capture is stored: True when that was decided, the job
    to be torn down.

    A silence is one attempt's, from its replicas' last write (or the attempt's start): the
    warning is recorded as hang_warned_at, committed with its event, and every later look at
    the same silence finds it warned (this worker's, or the next one's after a restart of the
    worker). Only a write after it (HangCleared) or the next attempt (_begin_next_attempt
    clears it; the attempt's start, its banner line and its first line are new) begins
    another, which is warned about again: after a hang restart the job is warned about twice,
    a threshold apart, once per attempt (fix142: seen so under load, and right: the new
    attempt's processes hang anew, and their stacks are captured anew)."""
    ftc = spec.fault_tolerance_config
    if not ftc or not ftc.enabled_hang_detection or not ftc.hang_detection_timeout_minutes:
        return False
    last = run.attempt_started_at or now
    running = 0
    for replica in replicas:
        label = f"{replica.role}-{replica.index}"
        if (replica_state_dir(job.public_id, run.attempt, label) / "exit").exists():
            # Its command has ended, though its shim still holds the lock for a moment: the
            # shim's exit line is not the job writing again (the shim records the exit first).
            continue
        running += 1
        path = job_logs.replica_log_path(job.public_id, label)
        try:
            mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        except OSError:
            continue
        last = max(last, mtime)
    if not running:
        return False  # every command has ended: the job is ending, not hanging
    threshold = ftc.hang_detection_timeout_minutes
    if run.hang_warned_at is not None and last > run.hang_warned_at:
        # A line since the warning: the silence it was about is over, and the page says so
        # (QA 38: it said "may be hanging" to the end). A new silence is warned about again.
        with transaction.atomic():
            run.hang_warned_at = None
            run.save(update_fields=["hang_warned_at"])
            job_event(job=job, reason="HangCleared", message=recorded(HANG_CLEARED))
    if now - last <= minutes(threshold):
        return False
    if _tolerated_at_start(job, run, ftc, replicas, now):
        return False
    if run.hang_warned_at is not None and run.hang_warned_at >= last:
        # Already warned about this silence: fault tolerance restarts the hung job, as AIHC's
        # does (qa109: it was only warned about, holding its cards up to its time limit).
        return spec.fault_tolerance and _restart_hung(job, run, spec, threshold)
    message = recorded_plural(
        ngettext_noop(
            "No replica has written a log line for %(minutes)s minute (the hang threshold); "
            "the job may be hung.",
            "No replica has written a log line for %(minutes)s minutes (the hang threshold); "
            "the job may be hung.",
        ),
        "minutes",
        minutes=threshold,
    )
    # "Warned" is committed with the warning and its alert: a worker killed in between
    # would leave a silence marked as warned about whose alert no later worker sends.
    with transaction.atomic():
        run.hang_warned_at = now
        run.save(update_fields=["hang_warned_at"])
        job_event(job=job, reason="HangSuspected", message=message, warning=True)
        job_alert(job=job, item="jobHang", message=message)
        # Hang analysis: the worker captures every replica's call stacks (jobs.stacks).
        from .stacks import capture_for_hang

        capture_for_hang(job=job)
    return False


def _tolerated_at_start(
    job: Job, run: LocalRun, ftc: FaultToleranceConfig, replicas: list[JobReplica], now: datetime
) -> bool:
    """Whether a silence past the hang threshold is still the attempt's start-up, not a hang:
    within the start-up toleration since the attempt started (AIHC's
    --hang-detection-startup-toleration-minutes; 15 when the job asks none), as long as no
    replica has written a line of its own in this attempt (the runner's own lines, as the
    attempt's start, are not the job's). Loading a checkpoint may take longer than the
    threshold without a word (review59: such a job was restarted at minute 7 of each
    attempt, then failed). Read only for a silence past the threshold."""
    toleration = ftc.hang_detection_startup_toleration_minutes
    if toleration is None:
        toleration = DEFAULT_HANG_STARTUP_TOLERATION_MINUTES
    started = run.attempt_started_at
    if started is None or now - started > minutes(toleration):
        return False
    for replica in replicas:
        path = job_logs.replica_log_path(job.public_id, f"{replica.role}-{replica.index}")
        written = _last_job_line_at(path)
        if written is not None and written >= started:
            return False  # it has spoken: the threshold counts from its last line
    return True


def _restart_hung(job: Job, run: LocalRun, spec: JobSpec, threshold: int) -> bool:
    """Decides a fault-tolerance restart of a job whose hang was warned about, as a failure's
    (whole job, next attempt, Restarted event and jobFT alert), or its failure once its
    restarts are used up, freeing its cards. Not before the hang's capture of the stacks is
    stored: the restart ends the processes it reads. A hang counts toward the restart limit
    (AIHC's 无条件重试, restarts without a detected node fault, which a hang is), so a job
    that hangs at every attempt ends. True when decided here."""
    from .stacks import capture_pending

    if capture_pending(job=job):
        return False
    failure = recorded_plural(
        ngettext_noop(
            "The job hung: no replica wrote a log line for %(minutes)s minute (the hang "
            "threshold).",
            "The job hung: no replica wrote a log line for %(minutes)s minutes (the hang "
            "threshold).",
        ),
        "minutes",
        minutes=threshold,
    )
    if job.restarts < restart_limit(spec):
        target, message = TARGET_RESTART, failure
    else:
        target, message = TARGET_FAILED, _restarts_used_up(spec, failure)
    # Only if no stop was recorded since this tick read the run: a Stop or Delete wins.
    return bool(
        LocalRun.objects.filter(pk=run.pk, stop_target="").update(
            stop_target=target, stop_message=message, stop_message_source=source_of(message)
        )
    )


def _tear_down(
    job: Job,
    run: LocalRun,
    spec: JobSpec | None,
    replicas: list[JobReplica],
    states: dict[int, ReplicaState],
    now: datetime,
    children: Children | None,
    *,
    adopted: list[JobReplica],
) -> None:
    alive = [r for r in replicas if states[r.pk].phase == "alive"]
    if alive:
        # sigterm_due: a worker of another run directory began this tear-down and was killed
        # before its SIGTERM (_sigterm_again_where_it_ran).
        if run.kill_at is None or run.sigterm_due:
            for replica in alive:
                signal_group(replica, signal.SIGTERM)
            run.kill_at = now + timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS)
            run.sigterm_due = False
            run.save(update_fields=["kill_at", "sigterm_due"])
        elif now >= run.kill_at:
            # An escaped pid 1 that will not die holds its group only so long (see
            # ESCAPED_HOLD_SECONDS): then the job ends without it, as below.
            patient = now < run.kill_at + timedelta(seconds=ESCAPED_HOLD_SECONDS)
            for replica in alive:
                signal_group(replica, signal.SIGKILL, hold_escaped=patient)
                _record_killed(job, run, replica)
        else:
            for replica in adopted:  # its pid was unknown when the others got SIGTERM
                signal_group(replica, signal.SIGTERM)
        return
    # Every shim is gone; make sure no straggler of a lost replica survives either, and that
    # it has died (a signal takes effect a moment later) before the job ends and its cards
    # go to the next job.
    for replica in replicas:
        signal_group(replica, signal.SIGKILL)
    if stragglers := groups_still_alive(replicas, wait=STRAGGLER_WAIT_SECONDS):
        if run.kill_at is None:
            run.kill_at = now
            run.save(update_fields=["kill_at"])
        if now < run.kill_at + timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS):
            return  # looked at again on the next tick
        # A process stuck in the kernel (a hung network file system) cannot be killed;
        # the job ends rather than wait for it for ever.
        logger.warning(
            "%s: processes of %s outlived SIGKILL; ending the job without them",
            job.public_id,
            ", ".join(f"{r.role}-{r.index}" for r in stragglers),
        )
    _finish_tear_down(job, run, spec, replicas, now, children)


def _record_killed(job: Job, run: LocalRun, replica: JobReplica) -> None:
    """The SIGKILL ends the replica's shim too, before it can record an exit code: record
    the code a shell reports for it (137), unless the shim recorded the command's own."""
    label = f"{replica.role}-{replica.index}"
    _record_killed_in(replica_state_dir(job.public_id, run.attempt, label), job.public_id)


def _record_killed_in(state: Path, public_id: str) -> None:
    """_record_killed, for the replica whose files are in `state` (where it ran)."""
    tmp = state / "exit.killed"
    try:
        tmp.write_text(json.dumps({"code": 128 + signal.SIGKILL, "time": time.time()}))
        os.link(tmp, state / "exit")  # never over the shim's own record
    except FileExistsError:
        pass
    except OSError as exc:
        logger.warning("%s: could not record %s as killed: %s", public_id, state.name, exc)
    finally:
        tmp.unlink(missing_ok=True)


def _finish_tear_down(
    job: Job,
    run: LocalRun,
    spec: JobSpec | None,
    replicas: list[JobReplica],
    now: datetime,
    children: Children | None,
) -> None:
    # Every process of the attempt is gone: its cgroups go (a restart gets fresh ones), and
    # so does its network namespace (LOCAL_JOB_NETWORK=isolated; a restart gets a new one).
    network.end_networks(public_id=job.public_id, children=children)
    cgroups.remove_job_cgroups(cgroups.current(), public_id=job.public_id)
    message = restored(run.stop_message, run.stop_message_source)
    if run.stop_target == TARGET_REQUEUE:
        _requeued(job, run, message)
        return
    # The switch to the next attempt is committed with its event and jobFT alert, or none
    # of them: a worker killed in between leaves the restart still to do, and the next
    # worker does it (and alerts) once. The new attempt's processes start only after the
    # commit, so a rolled-back switch never leaves one running.
    # (A restart decided before its spec became unreadable is not made: it fails below.)
    with transaction.atomic():
        restarting = spec is not None and (
            run.stop_target == TARGET_RESTART and _begin_next_attempt(job, run, now)
        )
        if restarting and spec is not None:
            _restarted(job, spec, replicas, why=message)
    if restarting and spec is not None:
        # The failed attempt's /tmp folders go: each attempt starts with an empty /tmp, and
        # a job restarting after filling its /tmp must not keep one full folder per attempt.
        _remove_scratch(attempt_dir(job.public_id, run.attempt - 1))
        try:
            launch_attempt(job, run, spec, children=children)
        except Exception as exc:  # a job that cannot start fails; the worker carries on
            _fail_launch(job, run, exc)
        return
    # Re-read: the web process may have recorded a stop (or a delete) since this tick began,
    # and the job's status may have moved on.
    run.refresh_from_db()
    job.refresh_from_db()
    if job.status not in (S.RUNNING, S.STOPPING):
        return
    target = run.stop_target
    message = restored(run.stop_message, run.stop_message_source)
    if target == TARGET_RESTART:
        # A failure whose restart cannot be made without the spec fails the job.
        target = TARGET_STOPPED if spec is not None else TARGET_FAILED
    final = {
        TARGET_STOPPED: S.STOPPED,
        TARGET_TIMED_OUT: S.TIMED_OUT,
        TARGET_SUCCEEDED: S.SUCCEEDED,
    }.get(target, S.FAILED)
    reason = {S.STOPPED: "Stopped", S.TIMED_OUT: "TimedOut", S.SUCCEEDED: "Succeeded"}.get(
        final, "Failed"
    )
    text = message or (recorded(gettext_noop("Stopped.")) if final == S.STOPPED else "")
    states = {
        r.pk: read_state(replica_state_dir(job.public_id, run.attempt, f"{r.role}-{r.index}"))
        for r in replicas
    }
    last_exit = last_exit_time(list(states.values()))
    if final == S.SUCCEEDED:  # a TensorFlow job's: its work ended with its chief's
        last_exit = _work_ended(job, run, replicas, states)
    at_limit = (
        _failed_past_limit(job, run, spec, replicas, states, now) if final == S.TIMED_OUT else None
    )
    if at_limit is not None:
        last_exit = at_limit
    finished = (
        _finished_before_stop(job, run, replicas, states) if target == TARGET_STOPPED else None
    )
    if finished is not None:
        # It finished on its own before the stop reached it (while no worker ran, or in the
        # instant between a Stop and the next tick): it succeeded, and says so (review 24:
        # it ended Stopped as of its replicas' exit, before the Stop, with no jobSucceed).
        final, reason = S.SUCCEEDED, "Succeeded"
        last_exit, text = finished
    # The end and its alert are committed together: a worker killed in between would
    # leave an ended job whose alert no later worker sends.
    with transaction.atomic():
        ended = job_transition(
            job=job,
            to=final,
            reason=reason,
            message=text,
            warning=final not in (S.STOPPED, S.SUCCEEDED),
            ended_at=last_exit,
        )
        if ended and final in (S.FAILED, S.TIMED_OUT):
            job_alert(job=job, item="jobFailed", message=named_for_alert(job=job, message=text))
        elif ended and final == S.SUCCEEDED:
            job_alert(
                job=job,
                item="jobSucceed",
                message=recorded(gettext_noop("%(name)s succeeded."), name=job.task_name),
            )
    if ended and at_limit is not None:
        _timed_out_late(job, now, TIMED_OUT_STOPPED_LATE_MESSAGE)
        _finished(job, run)
    elif ended:
        _ended_unwatched(job, now)
        _finished(job, run)


def _requeued(job: Job, run: LocalRun, message: str) -> None:
    """Back to Queued after bubblewrap vanished as the job started (TARGET_REQUEUE), its
    attempt torn down: the run and its replicas' rows go, and so do its folder's attempt and
    logs (what a start makes; an earlier run's files set aside stay), so its next start is a
    first one, not one that finds an earlier run to set aside. One SandboxUnavailable warning,
    the scheduler's own words: it says nothing more while bubblewrap is missing, and starts
    the job in its place once it is back."""
    from .scheduler import SANDBOX_UNAVAILABLE

    with transaction.atomic():
        moved = job_transition(
            job=job, to=S.QUEUED, reason=SANDBOX_UNAVAILABLE, message=message, warning=True
        )
        if moved:
            job.replicas.all().delete()
            LocalRun.objects.filter(pk=run.pk).delete()
    if moved:
        folder = job_logs.job_dir(job.public_id)
        with contextlib.suppress(OSError):
            for entry in folder.iterdir():
                if entry.name.startswith(EARLIER_RUN):
                    continue
                if entry.name.startswith("attempt-"):
                    _remove_scratch(entry)  # its /tmp folders as a finished attempt's go
                shutil.rmtree(entry, ignore_errors=True)


def _failed_past_limit(
    job: Job,
    run: LocalRun,
    spec: JobSpec | None,
    replicas: list[JobReplica],
    states: dict[int, ReplicaState],
    now: datetime,
) -> datetime | None:
    """The time limit a Timed out job ends at, when a replica failed past it before the job
    was stopped (left26): no worker watched at the limit (supervise's left25 rule), so the
    others were stopped later. It ends at its limit, as one whose replicas all exited past it
    does (_timed_out_unwatched), not when they were stopped: the limit is what its owner set,
    and a watching worker would have stopped it there. None for any other timeout: a
    watching worker's (its end is when the replicas stopped, moments past the limit), or
    one whose failure's time is unknown."""
    deadline = _deadline(job, run, spec, now)
    failed_at = _failed_at(replicas, states)
    if deadline is None or failed_at is None or failed_at <= deadline:
        return None
    grace = timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS)
    signalled = run.kill_at - grace if run.kill_at is not None else None
    if signalled is not None and failed_at >= signalled:
        return None  # it exited from the stop's own SIGTERM
    return deadline


def _finished_before_stop(
    job: Job, run: LocalRun, replicas: list[JobReplica], states: dict[int, ReplicaState]
) -> tuple[datetime | None, str] | None:
    """When the job's work ended, and what to say, if it ended with 0 before its stop took
    effect (the tear-down's first signal, sent when `kill_at` was set a grace period ahead;
    none sent: every shim was gone at the first look). Its work is every replica's, except in
    an MPI job, whose result is its launcher's, and a TensorFlow job, whose result is its
    chief's (_result_replicas): an MPI job's workers' agents end only once
    a worker has told them the launcher has, so a Stop that came first ended them with SIGTERM
    and the job Stopped, though its launcher had succeeded (left24)."""
    if not states:
        return None
    signalled = (
        None
        if run.kill_at is None
        else run.kill_at - timedelta(seconds=settings.LOCAL_STOP_GRACE_SECONDS)
    )
    mpi = (attempt_dir(job.public_id, run.attempt, run.runner) / "mpi" / "launcher").is_dir()
    deciding = _result_replicas(job, run, replicas)
    result = [states[r.pk] for r in deciding]
    if not all(state.phase == "exited" and state.exit_code == 0 for state in result):
        return None
    ended = last_exit_time(result)
    if signalled is not None and (ended is None or ended >= signalled):
        return None  # (without MPI, a replica still alive then cannot have ended before)
    if mpi:
        text = recorded(gettext_noop("The MPI launcher exited with 0 before the stop reached it."))
    elif len(deciding) == 1 and tensorflow_result_replica(job, replicas) is not None:
        text = recorded(
            gettext_noop("%(replica)s exited with 0 before the stop reached it."),
            replica=f"{deciding[0].role}-{deciding[0].index}",
        )
        ended = _work_ended(job, run, replicas, states)  # a worker may have ended after it
    else:
        text = recorded(
            gettext_noop("All replicas exited with code 0 before the stop reached them.")
        )
    return ended, text


def _seconds_late(exited: datetime | None, now: datetime) -> int | None:
    """How many seconds after `exited` a worker recorded it, when that is later than the
    console counts a worker as not running (WORKER_STALE_SECONDS, the job list's banner)."""
    if exited is None or now - exited <= timedelta(seconds=settings.WORKER_STALE_SECONDS):
        return None
    return int((now - exited).total_seconds())


def _ended_unwatched(job: Job, now: datetime) -> None:
    """Says on the job's page that its end was recorded late, by a worker that was not
    running when the replicas exited (killed, stopped, not yet started again): without it,
    a run time shorter than the span from its start to its end event read as a mistake.
    Late means later than the console counts a worker as not running (WORKER_STALE_SECONDS,
    the job list's banner). Counted from the end the job was stamped with (job_transition:
    its replicas' exit, never before its start), so that the two agree: an exit record from
    a clock set back an hour said the end was recorded an hour late."""
    late = _seconds_late(job.finished_at, now)
    if late is None:
        return
    job_event(
        job=job,
        reason="EndedUnwatched",
        message=recorded_plural(
            ngettext_noop(
                "No worker was running when this job's replicas exited: a worker recorded the "
                "end %(count)s second later. Its run time counts to when its replicas exited.",
                "No worker was running when this job's replicas exited: a worker recorded the "
                "end %(count)s seconds later. Its run time counts to when its replicas exited.",
            ),
            "count",
            count=late,
        ),
    )


def _exited_unwatched(job: Job, label: str, exited: datetime | None, now: datetime) -> None:
    """As _ended_unwatched, for a replica whose failure a worker recorded late and that the
    job restarts for: the gap between its start and the failure is the worker's absence."""
    late = _seconds_late(exited, now)
    if late is None:
        return
    job_event(
        job=job,
        reason="EndedUnwatched",
        message=recorded_plural(
            ngettext_noop(
                "No worker was running when %(replica)s exited: a worker recorded it "
                "%(count)s second later.",
                "No worker was running when %(replica)s exited: a worker recorded it "
                "%(count)s seconds later.",
            ),
            "count",
            replica=label,
            count=late,
        ),
    )


def _restarted(job: Job, spec: JobSpec, replicas: list[JobReplica], *, why: str) -> None:
    """Records a restart begun by _begin_next_attempt: replicas pending again, the
    Restarted event and the jobFT alert."""
    for replica in replicas:
        replica.restarts += 1
        replica.status = "pending"
        replica.pid = None
        replica.process_start = ""
        replica.save(update_fields=["restarts", "status", "pid", "process_start"])
    text = recorded(
        gettext_noop("Restarting the whole job (%(n)s of %(limit)s): %(why)s"),
        n=job.restarts,
        limit=restart_limit(spec),
        why=why,
    )
    job_event(job=job, reason="Restarted", message=text, warning=True)
    job_alert(job=job, item="jobFT", message=text)


def _begin_next_attempt(job: Job, run: LocalRun, now: datetime) -> bool:
    """Moves the run to its next attempt for a fault-tolerance restart, unless a stop was
    recorded since the restart was decided: then the stop wins and nothing changes.

    The run's row is locked first, as request_stop locks it, so a concurrent stop either
    lands before (and is seen here) or after (and stops the new attempt). Only the fields
    of a new attempt are written (its master port too); `delete_when_stopped` is never
    touched."""
    with transaction.atomic():
        current = LocalRun.objects.select_for_update().get(pk=run.pk)
        still_running = Job.objects.filter(pk=job.pk, status=S.RUNNING).exists()
        restart = (
            current.stop_target == TARGET_RESTART
            and current.attempt == run.attempt
            and still_running
        )
        if restart:
            LocalRun.objects.filter(pk=run.pk).update(
                attempt=F("attempt") + 1,
                stop_target="",
                stop_message="",
                stop_message_source=None,
                kill_at=None,
                sigterm_due=False,
                hang_warned_at=None,
                attempt_started_at=now,
                running_alert_due=False,  # a restart's attempt has its jobFT alert instead
                # A new MASTER_PORT, as a restarted pod gets a network of its own: the old
                # one may linger in TIME_WAIT, where a master binding it without
                # SO_REUSEADDR would fail with "Address already in use".
                master_port=job_ports(1)[0],
            )
            Job.objects.filter(pk=job.pk).update(restarts=F("restarts") + 1, updated_at=now)
    run.refresh_from_db()
    job.refresh_from_db()
    return restart


def _remove_scratch(attempt: Path) -> None:
    """Removes the /tmp folders of an attempt's replicas (read-only ones included): each is
    moved to DISCARDED at once, and removed from there by remove_discarded, up to its budget
    now and the rest over the worker's next ticks."""
    for tmp in [attempt / "tmp", *(d / "tmp" for d in _folders(attempt))]:
        discard(tmp)
    remove_discarded()


def _folders(path: Path) -> list[Path]:
    try:
        return [entry for entry in path.iterdir() if entry.is_dir()]
    except OSError:
        return []


# -- removing what jobs left -------------------------------------------------------------
# A job's /tmp was removed whole in the worker's tick: one holding millions of files held the
# worker (every other job's stop, timeout, start and the disk's eviction) for minutes
# (300,000 empty files: 5 s; security round 16). Now a folder to remove is moved into this
# folder of LOCAL_RUN_DIR (a rename, at once), and each tick removes at most
# REMOVE_PER_TICK entries of what is there. Only folders whose processes have all ended
# come here, so nothing writes to them meanwhile.
DISCARDED = "discarded"
REMOVE_PER_TICK = 20_000


def discarded_dir() -> Path:
    return Path(settings.LOCAL_RUN_DIR) / DISCARDED


def discard(folder: Path) -> None:
    """Moves `folder` (under LOCAL_RUN_DIR, so on the same file system) into DISCARDED."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return
        discarded_dir().mkdir(exist_ok=True)
        os.rename(folder, discarded_dir() / uuid.uuid4().hex)
    except OSError as exc:  # not there (any more); or it stays, removed as it was before
        if folder.exists():
            logger.warning("could not move %s to be removed: %s", folder, exc)
            remove_tree(folder)


def remove_discarded(budget: int = REMOVE_PER_TICK) -> bool:
    """Removes up to `budget` entries of what DISCARDED holds; whether anything is left.

    However deep or unreadable the trees: one folder at a time, always one directly in
    DISCARDED. Its files and links are unlinked, its subfolders moved up into DISCARDED
    (each given owner permissions to be listed and emptied, a job may have taken them away),
    and once empty it is removed. So no path is ever longer than a name, no descriptor is
    held between folders, and what is left is only ever in DISCARDED, for the next tick."""
    try:
        top = os.open(discarded_dir(), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        while budget > 0:
            with os.scandir(top) as listing:
                names = [entry.name for entry in itertools.islice(listing, budget)]
            done = 0
            for name in names:
                if done >= budget:
                    break
                done += _empty_some(top, name, budget - done)
            budget -= done
            if not done:  # nothing left, or nothing of it can be removed: the next tick
                break
        with os.scandir(top) as listing:
            return next(listing, None) is not None
    finally:
        os.close(top)


def _empty_some(top: int, name: str, budget: int) -> int:
    """Removes up to `budget` entries of folder `name` of `top`, and the folder itself once
    empty; how many it removed or moved."""
    # A process of the job may outlive it (one holding a folder of its /tmp as its working
    # folder can still make and swap entries there once the folder is in DISCARDED): any
    # folder seen here may be a symbolic link by the time it is used. So no permission is
    # ever changed by name (chmod follows a link: a link swapped in for a folder made any file
    # of the worker's user u+rwx, go-rwx); open_own_folder opens the folder as itself
    # (O_NOFOLLOW), checks it is the inode listed, and changes it through that descriptor.
    # A name found swapped is left for the next pass, which unlinks the link.
    done = 0
    with contextlib.suppress(OSError):
        info = os.lstat(name, dir_fd=top)
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(name, dir_fd=top)
            return 1
        fd = open_own_folder(
            name, identity=(info.st_dev, info.st_ino), grant=stat.S_IRWXU, dir_fd=top
        )
        if fd is None:
            return 0
        try:
            with os.scandir(fd) as listing:
                for entry in listing:
                    if done >= budget:
                        return done
                    with contextlib.suppress(OSError):
                        if entry.is_dir(follow_symlinks=False):
                            # Moving a folder rewrites its "..": it must be writable.
                            sub = entry.stat(follow_symlinks=False)
                            held = open_own_folder(
                                entry.name,
                                identity=(sub.st_dev, sub.st_ino),
                                grant=stat.S_IRWXU,
                                dir_fd=fd,
                            )
                            if held is not None:
                                os.close(held)
                            # rename never follows a link: one swapped in is moved up as
                            # itself, and unlinked from there.
                            os.rename(entry.name, uuid.uuid4().hex, src_dir_fd=fd, dst_dir_fd=top)
                        else:
                            os.unlink(entry.name, dir_fd=fd)
                    done += 1
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=top)
        done += 1
    return done


def _finished(job: Job, run: LocalRun) -> None:
    """Cleans up after a job ends: scratch folders go, logs stay."""
    for path in job_logs.job_dir(job.public_id).glob("attempt-*"):
        _remove_scratch(path)
    # Read now, not from the run this tick began with: a Delete may have come meanwhile.
    # (One recorded after this read, or a worker killed before it, is carried out by the
    # worker's sweep of finished jobs awaiting deletion.)
    if LocalRun.objects.filter(pk=run.pk, delete_when_stopped=True).exists():
        from .actions import ActionError, job_delete

        # Files it left (FilesLeft): the worker's sweep, delete_requested, tries again, says why.
        with contextlib.suppress(ActionError):
            job_delete(job=job)
