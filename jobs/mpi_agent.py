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
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
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

        def hang_up() -> None:
            with contextlib.suppress(OSError):
                conn.recv(1)
            # The whole group, its shell ended or not: what it left running in the
            # background holds the launcher's output as well.
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)

        threading.Thread(target=hang_up, daemon=True).start()
        code = process.wait()
        with contextlib.suppress(OSError):
            conn.send(str(code if code >= 0 else 128 - code).encode())


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
