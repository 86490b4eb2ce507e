"""Holds the network namespace of one attempt of a local job (runs as a plain script,
without Django; LOCAL_JOB_NETWORK=isolated, jobs.network).

It makes a network namespace of its own, in which the only interface is loopback, brings
loopback up, says it is ready (writes its pid to file `pid` in its state folder) and then sleeps until the
worker kills it. Every replica of the attempt enters this namespace before its sandbox
starts (the shim's --netns-fd), so they reach each other on 127.0.0.1 and nothing else.
A namespace lives while a process is in it: this one keeps it for replicas started later
(one relaunched by a restarted worker), and dies with the attempt.

Run as root it makes only the network namespace. Run as another user, it cannot: it makes a
user namespace first, in which that user is itself (uid and gid mapped onto themselves), and
the network namespace belongs to that user namespace, so the worker's user (and nobody
else) can enter it. The worker holds a lock on `<state>/lock` from before the spawn and
passes it in: lock held = holder alive, as for a replica's shim (jobs.runner.live_shim).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import socket
import struct
import sys
from pathlib import Path

# <linux/sockios.h>, <net/if.h>: read and set an interface's flags; IFF_UP.
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = "16sH14x"  # struct ifreq: the name, then the flags (a short) in the union


def new_network_namespace() -> None:
    """Moves this process into a new network namespace (and, without the privilege for
    that, a new user namespace first) with its loopback interface up."""
    try:
        os.unshare(os.CLONE_NEWNET)
    except PermissionError:
        uid, gid = os.geteuid(), os.getegid()
        os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNET)
        # setgroups must be refused before an unprivileged process may write gid_map.
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(IFREQ, b"lo", 0)
        flags = struct.unpack(IFREQ, fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", required=True)
    parser.add_argument("--lock-fd", type=int, required=True)  # kept open for life
    args = parser.parse_args(argv)
    state = Path(args.state)
    # A stop of the worker's terminal (Ctrl-C) is not ours: only the worker ends a holder.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        new_network_namespace()
    except OSError as exc:
        print(exc, file=sys.stderr, flush=True)  # the worker fails the job with it
        return 1
    # Ready: its pid, written once the namespace is set up (read by jobs.runner.live_shim).
    tmp = state / "pid.tmp"
    tmp.write_text(str(os.getpid()))
    os.replace(tmp, state / "pid")
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
