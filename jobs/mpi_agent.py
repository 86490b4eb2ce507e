#!/usr/bin/env python3
"""The local runner's stand-in for the SSH an MPI launcher reaches its workers through.

Copied by the runner to /etc/mpi/rsh of every replica of a local MPI job, and run there by
the job's own python3 (standard library only: the sandbox sees this machine's file system,
not the console's virtualenv). Two uses:

- `rsh <host> <command...>`: what OpenMPI runs for each host of the hostfile
  (OMPI_MCA_plm_rsh_agent, as training-operator v1's /etc/mpi/kubexec.sh), Intel MPI's
  hydra (I_MPI_HYDRA_BOOTSTRAP_EXEC) and MPICH's (HYDRA_LAUNCHER_EXEC: its proxy, which
  starts that host's ranks). It hands the command and its own stdin, stdout and
  stderr to the agent serving that replica (a host is a replica's label, `worker-0`), waits
  for it and exits with its code, as `ssh host command` does. Its own replica's host runs
  the command here (a master given cards is a host too).
- `rsh --serve`: what an MPI worker replica runs instead of the job's command (a Kubeflow
  MPI worker runs its SSH server): it serves /tmp/.mpi/agent.sock, which the runner shows
  every replica of the job, read-only, at /etc/mpi/agents/<label>/, and runs what it is
  handed in this replica's sandbox (its cards, cgroups and environment). It exits 0 once
  the launcher has exited 0 (the runner then makes /etc/mpi/launcher/done).

A connection is a SOCK_SEQPACKET one: one message with the command (JSON) and the three
descriptors, answered by one message with the exit code; the client hanging up (mpirun
ending its launches) kills what it started.

Each launch has an id, which rsh sends with the command: the launcher's (rsh's parent's) pid
and start time, or, for an rsh run inside a handed command (Open MPI's orted reaching further
hosts itself), the id of the launch that handed it, which the agent puts in its environment
as CONSOLE_MPI_LAUNCH. A job may run two launchers at once (`mpirun ... & mpirun ...`), and
a rank's failure is judged against its own launch only.

The ranks an MPI launch daemon (MPICH's and Intel MPI's hydra_pmi_proxy, Open MPI's orted or
prted) starts in a worker are watched: the first of a launch that ends with a code other than
0 or by a signal is recorded in /tmp/.mpi/rank-failed ({launch: {"code": N, "time": T}} or
"signal"; replacing one older than its handed command), and /tmp/.mpi/busy says which
launches have a handed command running here ({launch: since}). The runner fails the job
when such a record is older than its grace while the launcher still runs and a worker is
still busy with that launch: hydra's proxy exits 0 when its rank exited 3 without
MPI_Abort, and mpiexec then waits for ever (README, "MPICH"). A rank's exit code is read
through a pidfd opened while it runs (PIDFD_GET_INFO, Linux 6.15; before, from /proc while
it is a zombie, which may be missed).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

AGENTS = "/etc/mpi/agents"
OWN_FOLDER = "/tmp/.mpi"
OWN_SOCKET = OWN_FOLDER + "/agent.sock"
LAUNCHER_DONE = "/etc/mpi/launcher/done"
HOST = re.compile(r"[a-z][-a-z0-9]*")
CONNECT_SECONDS = 120  # a worker still starting (a loaded machine) is waited for
NO_AGENT = 255  # what ssh exits with when it cannot reach the host
RANK_FAILED = OWN_FOLDER + "/rank-failed"
BUSY = OWN_FOLDER + "/busy"
UNKNOWN_HOST = OWN_FOLDER + "/unknown-host"
# What starts the ranks in a host (its /proc/<pid>/comm): their children are the ranks, and
# nothing else a handed command runs (a probe, a rank's own helpers) is watched.
LAUNCH_DAEMONS = {"hydra_pmi_proxy", "pmi_proxy", "orted", "prted"}
WATCH_SECONDS = 0.05
# struct pidfd_info (linux/pidfd.h): its first 64 bytes, exit_code (a wait status) at 60.
PIDFD_INFO_EXIT = 1 << 3
PIDFD_GET_INFO = (3 << 30) | (64 << 16) | (0xFF << 8) | 11
LAUNCH_ENV = "CONSOLE_MPI_LAUNCH"
LAUNCH = re.compile(r"[0-9]{1,10}-[0-9]{1,20}")  # pid-starttime
# Failures of this many launches are kept (the latest): a retry loop's old launches, which
# their launchers ended, need none, and the file stays small for the runner to read.
KEPT_FAILURES = 32
_lock = threading.Lock()
_handed: dict[str, int] = {}  # launch: its handed commands running here
_busy_since: dict[str, float] = {}  # launch: its last handed command's start
_failed: dict[str, dict[str, float]] = {}  # launch: {"code" or "signal": N, "time": T}


def serve() -> int:
    os.makedirs(OWN_FOLDER, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(OWN_SOCKET)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(OWN_SOCKET)
    server.listen(64)
    server.settimeout(0.2)
    while not os.path.exists(LAUNCHER_DONE):
        try:
            conn, _ = server.accept()
        except OSError:  # the 0.2 s timeout (socket.timeout, before Python 3.10)
            continue
        threading.Thread(target=run_handed, args=(conn,), daemon=True).start()
    return 0


def run_handed(conn: socket.socket) -> None:
    with conn:
        try:
            data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        except OSError:
            return
        try:
            message = json.loads(data)
            command, launch = message["command"], message.get("launch", "")
            if len(fds) != 3 or not isinstance(command, str):
                return
            if not isinstance(launch, str) or not LAUNCH.fullmatch(launch):
                launch = ""  # one launch for whatever rsh could not name
            # An rsh that this command runs (Open MPI's tree spawn: orted reaching further
            # hosts) belongs to the same launch.
            env = {**os.environ, LAUNCH_ENV: launch} if launch else None
            # A process group of its own, killed whole when the launcher hangs up: what the
            # shell started (orted, the ranks) holds the launcher's output, whose end the
            # launcher's replica waits for, and a launcher that died would otherwise run on
            # (Running) as long as they do. A Stop still ends it: its SIGTERM ends this agent,
            # the sandbox's command, and the kernel then kills everything in the sandbox.
            process = subprocess.Popen(
                ["/bin/sh", "-c", command],
                stdin=fds[0],
                stdout=fds[1],
                stderr=fds[2],
                start_new_session=True,
                env=env,
            )
        except (ValueError, KeyError, TypeError, OSError):
            return
        finally:
            for fd in fds:
                os.close(fd)

        hung_up = threading.Event()

        def hang_up() -> None:
            with contextlib.suppress(OSError):
                conn.recv(1)
            hung_up.set()  # what the kill below ends is not a rank that failed
            # The whole group, its shell ended or not: what it left running in the
            # background holds the launcher's output as well.
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)

        threading.Thread(target=hang_up, daemon=True).start()
        ended = threading.Event()
        started = time.time()
        watcher = threading.Thread(
            target=watch_ranks,
            args=(process.pid, ended, hung_up, started, launch),
            daemon=True,
        )
        busy(launch, +1, started)
        watcher.start()
        try:
            code = process.wait()
        finally:
            ended.set()
            watcher.join()
            busy(launch, -1, started)
        with contextlib.suppress(OSError):
            conn.send(str(code if code >= 0 else 128 - code).encode())


def busy(launch: str, change: int, started: float) -> None:
    """/tmp/.mpi/busy names the launches this agent runs a handed command of, each with its
    last handed command's start: a rank's failure whose launcher has already ended what it
    started (mpirun's own abort, its script going on) is no hang, nor does another launch
    running beside it (`mpirun ... & mpirun ...`) make it one. A failure recorded before
    that start belongs to an earlier launch by the same launcher (a shell handing commands
    itself; the next one's can come while the last one's is still ending here)."""
    with _lock:
        _handed[launch] = _handed.get(launch, 0) + change
        if change > 0:
            _busy_since[launch] = started
        if _handed[launch] <= 0:
            del _handed[launch]
            _busy_since.pop(launch, None)
        _write(BUSY, dict(_busy_since))


def _write(path: str, facts: dict) -> None:
    """`facts` as JSON at `path`, whole (the runner reads it meanwhile), or no file when
    there are none. Written beside it and renamed over it: the job owns the folder, and a
    named pipe or a link it left there is replaced, not opened."""
    with contextlib.suppress(OSError):
        if not facts:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return
        beside = f"{path}.{os.getpid()}.new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(beside)
        fd = os.open(beside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            os.write(fd, json.dumps(facts).encode())
        finally:
            os.close(fd)
        os.replace(beside, path)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as children:
                found += [int(child) for child in children.read().split()]
    return found


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return ""


def _ranks(top: int) -> set[int]:
    """The children of the launch daemons among `top` and its descendants."""
    ranks: set[int] = set()
    todo = [top]
    while todo:
        pid = todo.pop()
        children = _children(pid)
        if _comm(pid) in LAUNCH_DAEMONS:
            ranks.update(children)  # a rank's own children are its business
        else:
            todo += children
    return ranks


def _wait_status(pid: int, pidfd: int) -> int | None:
    """How an ended process ended (a wait status), if it can still be known."""
    info = bytearray(64)
    struct.pack_into("Q", info, 0, PIDFD_INFO_EXIT)
    with contextlib.suppress(OSError):
        fcntl.ioctl(pidfd, PIDFD_GET_INFO, info)
        if struct.unpack_from("Q", info, 0)[0] & PIDFD_INFO_EXIT:
            return struct.unpack_from("i", info, 60)[0]
    with contextlib.suppress(OSError, ValueError, IndexError):  # a zombie not reaped yet
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            return int(fields[49])  # exit_code, the 52nd field
    return None


def _record_failed(status: int, alive_at: float, started: float, launch: str) -> None:
    """The record's time is when the rank was last seen running, not when it is written (a
    look later): what the runner compares with a later launch's start. The first failure of
    each launch only, but one older than this rank's handed command (`started`) is an
    earlier launch's, which its launcher ended: it is replaced, or a retry's rank that then
    hangs MPICH's mpiexec went unrecorded and the job ran for ever (review34)."""
    code = os.waitstatus_to_exitcode(status)
    with _lock:
        earlier = _failed.get(launch)
        if earlier is not None and earlier["time"] >= started:
            return
        _failed[launch] = {"signal": -code} if code < 0 else {"code": code}
        _failed[launch]["time"] = alive_at
        for old in sorted(_failed, key=lambda key: _failed[key]["time"])[:-KEPT_FAILURES]:
            del _failed[old]
        _write(RANK_FAILED, dict(_failed))


def watch_ranks(
    top: int, ended: threading.Event, hung_up: threading.Event, started: float, launch: str
) -> None:
    """Records a rank of `top`'s launch daemons that ends other than with 0 (_record_failed),
    until `top` has ended: a rank ends before the daemon that reaps it. One that starts and
    ends between two looks (WATCH_SECONDS, longer on a loaded machine: tests saw a rank that
    ended a few tenths of a second after its start missed) is not seen."""
    watched: dict[int, int] = {}  # pid: pidfd
    alive_at: dict[int, float] = {}  # pid: when it was last seen running
    try:
        while True:
            last = ended.is_set()
            looked = time.time()
            for pid in _ranks(top) - watched.keys():
                with contextlib.suppress(OSError):
                    watched[pid] = os.pidfd_open(pid)
                    alive_at[pid] = looked
            if watched:
                readable, _, _ = select.select(list(watched.values()), [], [], 0)
                for pid, pidfd in list(watched.items()):
                    if pidfd not in readable:
                        alive_at[pid] = looked
                        continue
                    status = _wait_status(pid, pidfd)
                    if status is None and not last:
                        continue  # reaped a moment later: looked at again
                    os.close(watched.pop(pid))
                    if status and not hung_up.is_set():
                        _record_failed(status, alive_at[pid], started, launch)
                    del alive_at[pid]
            if last:
                return
            ended.wait(WATCH_SECONDS)
    finally:
        for pidfd in watched.values():
            os.close(pidfd)


def launch_id() -> str:
    """The launch this rsh belongs to: the one whose handed command runs it (in a worker),
    else its launcher's, the parent's pid and start time (mpirun and mpiexec.hydra run rsh
    themselves; a pid alone may be used again). "" when it cannot be told."""
    inherited = os.environ.get(LAUNCH_ENV, "")
    if LAUNCH.fullmatch(inherited):
        return inherited
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/stat") as stat:
            started = stat.read().rsplit(")", 1)[1].split()[19]  # starttime, the 22nd field
    except (OSError, IndexError):
        return ""
    return f"{parent}-{started}"


def replica_label(host: str, own: str) -> str:
    """The replica `host` names: its label (`worker-0`, the injected hostfile's), or its
    hostname, `<job>-worker-0` (its pod's name on AIHC, what Kubeflow's hostfile lists), whose
    `<job>-` this replica's own hostname, `<job>-<own label>`, tells. A label is taken as it
    is first, whatever the job is named (a job `worker`: `worker-0` is that label)."""
    if host == own or os.path.isdir(os.path.join(AGENTS, host)):
        return host
    mine = socket.gethostname()
    prefix = mine[: -len(own)] if mine.endswith(f"-{own}") else ""
    return host[len(prefix) :] if prefix and host.startswith(prefix) else host


def _refused(host: str) -> None:
    """Records, for the runner, that this launch asked for a host that is not the job's
    (UNKNOWN_HOST, in this replica's /tmp/.mpi), while the launcher that ran this rsh runs:
    MPICH's mpiexec then waits for ever for the proxy it could not start (qa95: the job stayed
    Running until stopped). A watcher left behind removes the record once that launcher has
    ended, so a launcher that ended the job itself (Open MPI's mpirun does) or a script that
    went on after it is not failed for it. The runner fails the job when the record is older
    than LOCAL_MPI_RANK_GRACE_SECONDS."""
    launch = launch_id()
    try:
        parent = os.pidfd_open(os.getppid())
    except OSError:
        return
    with contextlib.suppress(OSError):
        os.makedirs(OWN_FOLDER, exist_ok=True)
    record = {"host": host[:253], "time": time.time(), "launch": launch}
    _write(UNKNOWN_HOST, record)
    if os.fork() != 0:
        os.close(parent)
        return
    # The watcher: nothing of rsh's output held open (the launcher waits for its end).
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        select.select([parent], [], [])
        with contextlib.suppress(OSError, ValueError), open(UNKNOWN_HOST) as kept:
            if json.load(kept).get("launch") == launch:
                os.unlink(UNKNOWN_HOST)
    finally:
        os._exit(0)


def rsh(host: str, words: list[str]) -> int:
    command = " ".join(words)
    own = f"{os.environ.get('AIHC_ROLE', '')}-{os.environ.get('AIHC_ROLE_INDEX', '')}"
    asked, host = host, replica_label(host, own)
    if host == own:
        os.execv("/bin/sh", ["/bin/sh", "-c", command])
    if not HOST.fullmatch(host) or not os.path.isdir(os.path.join(AGENTS, host)):
        print(f"rsh: {asked}: not a host of this job", file=sys.stderr)
        _refused(asked)
        return NO_AGENT
    path = os.path.join(AGENTS, host, "agent.sock")
    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(path)
            break
        except OSError as exc:
            conn.close()
            if time.monotonic() > deadline:
                print(f"rsh: {host}: no agent at {path} ({exc.strerror})", file=sys.stderr)
                return NO_AGENT
            time.sleep(0.1)
    with conn:
        message = {"command": command, "launch": launch_id()}
        socket.send_fds(conn, [json.dumps(message).encode()], [0, 1, 2])
        reply = conn.recv(16)
    return int(reply) if reply.isdigit() else NO_AGENT


def main(argv: list[str]) -> int:
    if argv == ["--serve"]:
        return serve()
    if len(argv) < 2:
        print("usage: rsh <host> <command...> | rsh --serve", file=sys.stderr)
        return NO_AGENT
    return rsh(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
