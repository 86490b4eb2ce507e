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

The ranks an MPI launch daemon (MPICH's and Intel MPI's hydra_pmi_proxy, Open MPI's orted or
prted) starts in a worker are watched: the first that ends with a code other than 0 or by a
signal is recorded in /tmp/.mpi/rank-failed ({"code": N} or {"signal": N}; replacing one
older than its handed command), and /tmp/.mpi/busy exists while a handed command runs. The
runner fails the job when such a record is older than its grace while the launcher still
runs and a worker is still busy: hydra's proxy exits 0 when its rank exited 3 without
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
import stat
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
# What starts the ranks in a host (its /proc/<pid>/comm): their children are the ranks, and
# nothing else a handed command runs (a probe, a rank's own helpers) is watched.
LAUNCH_DAEMONS = {"hydra_pmi_proxy", "pmi_proxy", "orted", "prted"}
WATCH_SECONDS = 0.05
# struct pidfd_info (linux/pidfd.h): its first 64 bytes, exit_code (a wait status) at 60.
PIDFD_INFO_EXIT = 1 << 3
PIDFD_GET_INFO = (3 << 30) | (64 << 16) | (0xFF << 8) | 11
_busy_lock = threading.Lock()
_handed = 0


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
            command = json.loads(data)["command"]
            if len(fds) != 3 or not isinstance(command, str):
                return
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
        watcher = threading.Thread(
            target=watch_ranks, args=(process.pid, ended, hung_up, time.time()), daemon=True
        )
        busy(+1)
        watcher.start()
        try:
            code = process.wait()
        finally:
            ended.set()
            watcher.join()
            busy(-1)
        with contextlib.suppress(OSError):
            conn.send(str(code if code >= 0 else 128 - code).encode())


def busy(change: int) -> None:
    """/tmp/.mpi/busy exists while this agent runs a handed command: a rank's failure whose
    launcher has already ended what it started (mpirun's own abort, its script going on) is
    no hang. Its time is the last handed command's start: a failure recorded before it
    belongs to an earlier mpirun (the next one's launch can come while the last one's
    handed command is still ending here)."""
    global _handed
    with _busy_lock:
        _handed += change
        with contextlib.suppress(OSError):
            if change > 0:
                # O_NONBLOCK: a named pipe the job left there must not hold the handed
                # command (and this lock) waiting for a reader.
                flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                fd = os.open(BUSY, flags, 0o644)
                try:
                    os.utime(fd)
                finally:
                    os.close(fd)
            elif _handed == 0:
                os.unlink(BUSY)


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


def _record_failed(status: int, alive_at: float, started: float) -> None:
    """The record's time is when the rank was last seen running, not when it is written (a
    look later): what the runner compares with a later launch's start. The first failure
    only, but a record older than this rank's handed command (`started`) is an earlier
    launch's, which its launcher ended: it is replaced, or a retry's rank that then hangs
    MPICH's mpiexec went unrecorded and the job ran for ever (review34)."""
    code = os.waitstatus_to_exitcode(status)
    record = json.dumps({"signal": -code} if code < 0 else {"code": code}).encode()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    with contextlib.suppress(OSError):
        try:
            fd = os.open(RANK_FAILED, flags, 0o644)
            target = ""
        except FileExistsError:
            earlier = os.lstat(RANK_FAILED)
            if not stat.S_ISREG(earlier.st_mode) or earlier.st_mtime >= started:
                return
            target = f"{RANK_FAILED}.{os.getpid()}.{threading.get_ident()}"
            fd = os.open(target, flags, 0o644)
        try:
            os.write(fd, record)
            os.utime(fd, (alive_at, alive_at))
        finally:
            os.close(fd)
        if target:
            os.replace(target, RANK_FAILED)  # whole, for the runner reading it meanwhile


def watch_ranks(top: int, ended: threading.Event, hung_up: threading.Event, started: float) -> None:
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
                        _record_failed(status, alive_at[pid], started)
                    del alive_at[pid]
            if last:
                return
            ended.wait(WATCH_SECONDS)
    finally:
        for pidfd in watched.values():
            os.close(pidfd)


def rsh(host: str, words: list[str]) -> int:
    command = " ".join(words)
    own = f"{os.environ.get('AIHC_ROLE', '')}-{os.environ.get('AIHC_ROLE_INDEX', '')}"
    if host == own:
        os.execv("/bin/sh", ["/bin/sh", "-c", command])
    if not HOST.fullmatch(host) or not os.path.isdir(os.path.join(AGENTS, host)):
        print(f"rsh: {host}: not a host of this job", file=sys.stderr)
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
        socket.send_fds(conn, [json.dumps({"command": command}).encode()], [0, 1, 2])
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
