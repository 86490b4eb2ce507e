"""Network isolation of local jobs: LOCAL_JOB_NETWORK=isolated or isolated-outbound (README
"What a job gets").

With `host` (the default) replicas run on this machine's network, as they always did. With
`isolated`, each attempt of a job gets a network namespace of its own with only a loopback
interface, up: its replicas reach each other on 127.0.0.1 (MASTER_ADDR, TF_CONFIG, the MPI
hostfile stay as they are) and nothing else, neither this machine's services on its
loopback (the console, a database, another job's ports) nor any other machine (no outbound
network, no DNS).

With `isolated-outbound`, the namespace is the same and also gets outbound network through
slirp4netns, a user-mode network stack (as rootless Podman's), which the holder starts and
attaches (jobs/netns_holder.py): a job reaches what this machine's own outbound connections
reach, except this machine's loopback (--disable-host-loopback) and link-local addresses
(169.254.0.0/16, the cloud's metadata service: an unreachable route the job cannot remove);
names resolve through slirp4netns's forwarder at 10.0.2.3, which the job's /etc/resolv.conf
names (the holder writes it, LOCAL_RUN_DIR/<job>/attempt-<n>/network/resolv.conf, bound over
the host's). Nothing outside reaches into the namespace (no port is forwarded). The holder and
slirp4netns are one process group: ending the holder ends both.

bubblewrap (0.8) can make a new network namespace per sandbox (--unshare-net), but cannot
put several sandboxes into one. So a small holder process (jobs/netns_holder.py) makes the
namespace and keeps it; the worker opens the holder's namespaces (/proc/<pid>/ns/...) and
hands the descriptors to each replica's shim, whose command enters them (setns) before
bubblewrap starts. The holder is found as a replica's shim is (a lock it holds for life, its
pid file, its start time checked before any signal), so a restarted worker adopts it, and
it is killed when the attempt's processes are gone: at the job's end, before a
fault-tolerance restart (the next attempt gets a fresh namespace, as a restarted pod gets a
network of its own), on a stop and on delete.

Files, in LOCAL_RUN_DIR/<job>/attempt-<n>/network/: `lock` (held by the holder), `pid`
(written by the holder once loopback is up: ready), `err` (what it printed, if it failed);
with outbound network also `helper` (slirp4netns's pid), `slirp.err` (what it printed) and
`resolv.conf`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils.translation import gettext_noop

from . import cgroups, runner
from . import logs as job_logs
from .health import problem_recorded
from .sandbox import SandboxError
from .texts import recorded

logger = logging.getLogger(__name__)

HOLDER = Path(__file__).resolve().parent / "netns_holder.py"
# Why a job could not start, recorded with its message (jobs.texts), as every refusal below:
# an English API reader of a job failed by a worker set to Chinese reads it in English.
NOT_SET_UP_IN_TIME = gettext_noop("its network namespace could not be set up in time")
# How long a new (or adopted, still starting) holder may take to set its namespace up.
READY_SECONDS = 10.0
# How long ending a holder waits for it to be gone (SIGKILL: well under a second).
END_SECONDS = 2.0


OUTBOUND = "isolated-outbound"


def isolated() -> bool:
    """Whether new attempts get a network namespace of their own (with outbound or not)."""
    return settings.LOCAL_JOB_NETWORK in ("isolated", OUTBOUND)


def outbound() -> bool:
    """Whether new attempts' namespaces get outbound network (slirp4netns)."""
    return settings.LOCAL_JOB_NETWORK == OUTBOUND


def network_dir(public_id: str, attempt: int) -> Path:
    return runner.attempt_dir(public_id, attempt) / "network"


def attempt_isolated(public_id: str, attempt: int, *, launched: bool) -> bool:
    """Whether the attempt's replicas run in a namespace of their own. An attempt keeps the
    network it started with, whatever the setting of the worker that launches its replicas
    still to start (`launched`: some have been): one begun isolated by a worker since
    restarted with `host` still puts them into its namespace, one begun on the host's
    network puts them there too."""
    if launched:
        return (network_dir(public_id, attempt) / "lock").exists()
    return isolated()


@dataclass(frozen=True)
class JobNetwork:
    """Open descriptors of an attempt's namespaces, in the order a replica enters them (its
    user namespace first, when the holder needed one)."""

    fds: tuple[int, ...]
    # The job's /etc/resolv.conf (nameserver 10.0.2.3), when the namespace has outbound
    # network; None without (the host's stays, naming a server the job cannot reach).
    resolv_conf: Path | None = None
    # (uid, gid) each replica's bubblewrap maps the worker's user back onto, in a user
    # namespace of its own, when the holder's maps it onto root (isolated-outbound, worker
    # not run as root: jobs/netns_holder.py); None when the replica keeps its uid as it is.
    user: tuple[int, int] | None = None

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


def job_network(
    *, public_id: str, attempt: int, launched: bool, children: runner.Children | None
) -> JobNetwork:
    """The attempt's network namespace, opened for its replicas to enter: that of the live
    holder (started by this worker, or by one before it), else of a new holder.

    `launched`: a replica of the attempt has been started already. It is in the namespace of
    a holder that must still be alive; a new one would cut the replicas still to start off
    from it, so the job fails instead (raises SandboxError, as for any start that cannot be
    made)."""
    state = network_dir(public_id, attempt)
    found = _ready_holder(state)
    if found is None:
        if launched:
            raise SandboxError(
                recorded(
                    gettext_noop(
                        "the network namespace of its replicas already running is gone (its "
                        "holder process ended), so the others cannot join them"
                    )
                )
            )
        found = _spawn_holder(state, children)
    # Into the job's cgroup, also when adopted: a worker killed between the holder's spawn
    # and this move left it (and slirp4netns) in its own cgroup, where slirp4netns's memory
    # came out of the console's reserve (chaos round 18). Moving one already there is a no-op.
    helper = _helper(state, found[0])
    cgroups.hold_network_helpers(
        cgroups.current(),
        public_id=public_id,
        attempt=attempt,
        pids=[found[0], *([helper[0]] if helper else [])],
    )
    return _open_namespaces(*found, state=state)


def _ready_holder(state: Path) -> tuple[int, str] | None:
    """(pid, start time) of the live holder in `state` once it is ready; None if none lives.
    One still setting up (adopted right after a spawn) is waited for."""
    deadline = time.monotonic() + READY_SECONDS
    while True:
        found = runner.live_shim(state)
        if found is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            if int((state / "pid").read_text()) == found[0]:
                return found
        if time.monotonic() >= deadline:
            _kill(*found, children=None, state=state)
            raise SandboxError(recorded(NOT_SET_UP_IN_TIME))
        time.sleep(0.01)


class HolderFailed(SandboxError):
    """The holder could not make the namespace: `reason` is its own error (the kernel's)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(
            recorded(
                gettext_noop(
                    "its network namespace (LOCAL_JOB_NETWORK=%(setting)s) cannot be created: "
                    "%(error)s"
                ),
                # In the check's own words (slirp4netns missing, an exit code) said in each
                # reader's language too; the kernel's as they are.
                error=problem_recorded(reason),
                setting=settings.LOCAL_JOB_NETWORK,
            )
        )


def slirp_missing() -> str:
    """Why slirp4netns cannot be run (worded as jobs.health.OWN_PROBLEMS reads it), "" if it
    can or is not wanted."""
    if outbound() and not os.access(settings.LOCAL_SLIRP4NETNS, os.X_OK):
        return f"slirp4netns is not installed at {settings.LOCAL_SLIRP4NETNS}"
    return ""


def _spawn_holder(state: Path, children: runner.Children | None) -> tuple[int, str]:
    if missing := slirp_missing():
        raise HolderFailed(missing)
    state.mkdir(parents=True, exist_ok=True)
    # A dead holder's: `pid` would say ready, `resolv.conf` outbound.
    for name in ("pid", "resolv.conf", "helper"):
        (state / name).unlink(missing_ok=True)
    lock_fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a holder that started since _ready_holder looked
            raise SandboxError(
                recorded(gettext_noop("another process is setting up its network namespace"))
            ) from None
        with open(state / "err", "wb") as err:
            child = subprocess.Popen(
                [
                    sys.executable,
                    str(HOLDER),
                    "--state",
                    str(state),
                    "--lock-fd",
                    str(lock_fd),
                    *(["--outbound", settings.LOCAL_SLIRP4NETNS] if outbound() else []),
                ],
                start_new_session=True,  # outlives the worker, as a replica's shim does
                pass_fds=(lock_fd,),
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
            )
    finally:
        os.close(lock_fd)
    if children is not None:
        children[child.pid] = child
    deadline = time.monotonic() + READY_SECONDS
    while True:
        with contextlib.suppress(OSError, ValueError):
            if int((state / "pid").read_text()) == child.pid:
                start = runner.process_start(child.pid)
                if start is not None:
                    return child.pid, start
        if child.poll() is not None:
            error = (state / "err").read_text(errors="replace").strip().splitlines()
            # Worded as jobs.health.OWN_PROBLEMS reads it (said in the reader's language).
            raise HolderFailed(error[-1] if error else f"exit code {child.returncode}")
        if time.monotonic() >= deadline:
            child.kill()
            child.wait()
            raise SandboxError(recorded(NOT_SET_UP_IN_TIME))
        time.sleep(0.01)


def _open_namespaces(pid: int, start: str, *, state: Path) -> JobNetwork:
    """The holder's namespaces, opened: the descriptors keep them alive and name them
    exactly, so what a replica enters later is what was checked here, whatever happens to
    the holder or its pid meanwhile. An attempt keeps the network it began with: outbound
    if its holder was started so (it wrote the job's resolv.conf)."""
    fds: list[int] = []
    as_user = None
    try:
        user = f"/proc/{pid}/ns/user"
        if os.readlink(user) != os.readlink("/proc/self/ns/user"):
            fds.append(os.open(user, os.O_RDONLY | os.O_CLOEXEC))
            # "<inside> <outside> <count>": the worker's uid mapped onto root in there.
            inside = Path(f"/proc/{pid}/uid_map").read_text().split()[0]
            if inside == "0" and os.getuid() != 0:
                as_user = (os.getuid(), os.getgid())
        fds.append(os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC))
        # Opened from the process that was checked, and in a namespace of its own.
        if runner.process_start(pid) != start or os.readlink(f"/proc/{pid}/ns/net") == os.readlink(
            "/proc/self/ns/net"
        ):
            raise OSError("the holder process changed")
    except OSError:
        for fd in fds:
            os.close(fd)
        raise SandboxError(
            recorded(gettext_noop("its network namespace could not be opened"))
        ) from None
    resolv_conf = state / "resolv.conf"
    return JobNetwork(
        fds=tuple(fds), resolv_conf=resolv_conf if resolv_conf.exists() else None, user=as_user
    )


def _helper(state: Path, holder: int) -> tuple[int, str] | None:
    """(pid, start time) of the holder's slirp4netns (isolated-outbound), if it runs: the
    process its `helper` file names, while that is still the holder's child."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int((state / "helper").read_text())
        start = runner.process_start(pid)
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        if start is not None and int(stat[1]) == holder and runner.process_start(pid) == start:
            return pid, start
    return None


def _kill(
    pid: int, start: str, *, children: runner.Children | None, state: Path | None = None
) -> None:
    """SIGKILLs the holder and its slirp4netns, if any (unless its pid now names another
    process), and waits until they are gone; the holder is reaped when this process started
    it. They are one process group, which the holder leads (started in a session of its
    own), so one signal ends both; slirp4netns would also end by itself once the holder is
    gone (its --exit-fd), but a stop that returns must leave nothing behind. Never pid 1
    (review64): os.killpg(1) is kill(-1), every process."""
    if pid <= 1 or runner.process_start(pid) != start:
        return
    helper = _helper(state, pid) if state is not None else None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid and runner.process_start(pid) == start:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    child = children.pop(pid, None) if children is not None else None
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=END_SECONDS)
    else:
        _wait_dead(pid, start)
    if helper is not None:
        _wait_dead(*helper)  # reparented to init, which reaps it


def _wait_dead(pid: int, start: str) -> None:
    deadline = time.monotonic() + END_SECONDS
    while runner.process_start(pid) == start and time.monotonic() < deadline:
        with contextlib.suppress(OSError, IndexError):
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return  # dead; its parent reaps it
        time.sleep(0.01)


# Written in an attempt's network folder once its lost outbound network has been said (the
# OutboundLost event), so it is looked for once a tick and said once.
OUTBOUND_LOST_MARK = "outbound-lost"


def outbound_lost(*, public_id: str, attempt: int) -> bool:
    """Whether the attempt's outbound network (isolated-outbound) has ended while its
    replicas run: its slirp4netns, or its holder (slirp4netns ends with it), killed from
    outside. False for an attempt without outbound network, before its holder is ready, and
    once said (OUTBOUND_LOST_MARK). A few reads of /proc: made on every supervision tick."""
    state = network_dir(public_id, attempt)
    if not (state / "helper").exists() or (state / OUTBOUND_LOST_MARK).exists():
        return False
    try:
        holder = int((state / "pid").read_text())
    except (OSError, ValueError):
        return False  # not ready (or it failed: the job's start says so)
    if not _live(holder):
        return True
    found = _helper(state, holder)
    return found is None or not _live(found[0])


def note_outbound_lost(*, public_id: str, attempt: int) -> None:
    with contextlib.suppress(OSError):
        (network_dir(public_id, attempt) / OUTBOUND_LOST_MARK).touch()


def _live(pid: int) -> bool:
    """Whether `pid` runs (a zombie, killed and not reaped yet, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def end_networks(
    *, public_id: str, children: runner.Children | None = None, run_by: str = ""
) -> None:
    """Kills every live holder of the job's attempts: once its processes are gone (the job
    ended, a restart begins, a stop or delete), nothing may keep its namespace. `run_by`:
    where the job started (LocalRun.runner, job_logs.job_dir), for a Delete from the web."""
    job_dir = job_logs.job_dir(public_id, run_by)
    for state in sorted(job_dir.glob("attempt-*/network")):
        found = runner.live_shim(state)
        if found is not None:
            _kill(*found, children=children, state=state)
            logger.info("%s: ended the network namespace of %s", public_id, state.parent.name)
        if found is None or runner.live_shim(state) is None:
            # Its lock goes with it: a holder without one is looked for no more (live_shim
            # searches /proc for a lock whose pid file names no holder), and the attempt is
            # over, so it never needs another.
            (state / "lock").unlink(missing_ok=True)


def job_ids_with_networks() -> set[str]:
    """Public ids of jobs whose run folder holds a holder's lock (live or not)."""
    run_dir = Path(settings.LOCAL_RUN_DIR)
    return {path.parts[-4] for path in run_dir.glob("*/attempt-*/network/lock")}


def isolation_problem() -> str:
    """The worker's start-up check of LOCAL_JOB_NETWORK=isolated (or isolated-outbound, then
    with its slirp4netns attached and configured): makes one network namespace exactly as
    each job's is made (the same holder, run the same way, as the same user), then
    ends it. "" when that works; else why not, in the holder's (the kernel's) words, e.g.
    `[Errno 1] Operation not permitted` where unprivileged user namespaces are refused.

    Checked once per worker process: a machine that refuses them refuses every job, so
    queued local jobs wait saying why (jobs.scheduler) rather than fail one by one. Its state
    folder, LOCAL_RUN_DIR/network-check, is no job's (job folders hold attempt-<n>/)."""
    state = Path(settings.LOCAL_RUN_DIR) / "network-check"
    left = runner.live_shim(state)
    if left is not None:  # a worker killed mid-check left its holder
        _kill(*left, children=None, state=state)
    children: runner.Children = {}
    try:
        found = _spawn_holder(state, children)
    except HolderFailed as exc:
        return exc.reason
    except (SandboxError, OSError) as exc:
        return str(exc)
    finally:
        for child in children.values():  # spawned and failed: reaped
            if child.poll() is not None:
                child.wait()
    _kill(*found, children=children, state=state)
    for name in ("lock", "pid", "err", "helper", "slirp.err", "resolv.conf"):
        (state / name).unlink(missing_ok=True)
    return ""


def describe() -> str:
    """How local jobs' network is set up, for the worker's start-up line."""
    if outbound():
        return (
            "isolated-outbound (a network namespace per job, with outbound network through "
            f"{settings.LOCAL_SLIRP4NETNS}; not this machine's loopback nor link-local)"
        )
    if isolated():
        return "isolated (a network namespace per job, loopback only)"
    return "the host's (LOCAL_JOB_NETWORK=host)"
