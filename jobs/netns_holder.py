"""Holds the network namespace of one attempt of a local job (runs as a plain script,
without Django; LOCAL_JOB_NETWORK=isolated or isolated-outbound, jobs.network).

It makes a network namespace of its own, in which the only interface is loopback, brings
loopback up, says it is ready (writes its pid to file `pid` in its state folder) and then
sleeps until the worker kills it. Every replica of the attempt enters this namespace before its sandbox
starts (the shim's --netns-fd), so they reach each other on 127.0.0.1 and nothing else.
A namespace lives while a process is in it: this one keeps it for replicas started later
(one relaunched by a restarted worker), and dies with the attempt.

Run as root it makes only the network namespace. Run as another user, it cannot: it makes a
user namespace first, in which that user is itself (uid and gid mapped onto themselves; with
--outbound, onto root: see new_network_namespace), and the network namespace belongs to that
user namespace, so the worker's user (and nobody else) can enter it. The worker holds a lock
on `<state>/lock` from before the spawn and passes it in: lock held = holder alive, as for a
replica's shim (jobs.runner.live_shim).

With --outbound (LOCAL_JOB_NETWORK=isolated-outbound) the namespace also gets a way out:
slirp4netns, a user-mode network stack (as rootless Podman uses), attached to it as interface
`tap0` (10.0.2.100/24, gateway 10.0.2.2, DNS forwarder 10.0.2.3). slirp4netns must run in the
host's network namespace, so the holder forks it before it leaves that namespace; the child
waits on a pipe until the namespace is made, then becomes slirp4netns, with:
- nothing of any environment (an empty one) and no descriptor but its pipes, its output
  (/dev/null) and its error file (`slirp.err`): not the worker's lock, nor anything else;
- --disable-host-loopback: no connection to this machine's 127.0.0.1 (through 10.0.2.2 or
  otherwise);
- --enable-sandbox (its own mount namespace, every capability dropped but binding low ports)
  and --enable-seccomp, so it has less privilege than the holder, never more (it runs as the
  same user, and enters the holder's user namespace, if any, as the holder is there);
- --exit-fd: it ends as soon as the holder does (the worker kills both at once, as a group;
  this covers a holder killed alone).
Once slirp4netns says the interface is configured, the holder adds an `unreachable` route for
169.254.0.0/16 (the cloud's metadata service at 169.254.169.254 and the rest of link-local):
a job has no capability in the namespace (bubblewrap drops them all, and the namespace belongs
to the holder's user namespace or the host's), so it cannot remove the route. Then it writes
the job's resolv.conf (`nameserver 10.0.2.3`), and says it is ready.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path

# <linux/sockios.h>, <net/if.h>: read and set an interface's flags; IFF_UP.
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = "16sH14x"  # struct ifreq: the name, then the flags (a short) in the union

# slirp4netns's defaults (--configure): the job's side of the link, and its DNS forwarder.
SLIRP_DNS = "10.0.2.3"
# Podman's MTU for slirp4netns: a large one makes fewer, bigger packets through the user-mode
# stack (several times the throughput of 1500); it is the namespace's link only, the host's
# own connections keep their MTU.
SLIRP_MTU = 65520
# How long slirp4netns may take to attach and configure tap0 (well under a second here).
SLIRP_READY_SECONDS = 8.0
# <linux/netlink.h>, <linux/rtnetlink.h>: one route added through a netlink socket, as
# `ip route add unreachable 169.254.0.0/16` does (no iproute2 needed).
RTM_NEWROUTE = 24
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
NLMSG_ERROR = 2
RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_UNIVERSE, RTN_UNREACHABLE, RTA_DST = 254, 3, 0, 7, 1
LINK_LOCAL = ("169.254.0.0", 16)


def new_network_namespace(*, root_inside: bool = False) -> None:
    """Moves this process into a new network namespace (and, without the privilege for
    that, a new user namespace first) with its loopback interface up.

    `root_inside` (with outbound network): the user namespace maps the worker's user onto
    uid and gid 0 rather than onto itself. slirp4netns 1.2 makes itself uid 0 there once it
    has joined it (setegid(0), seteuid(0)), and fails otherwise; each replica's bubblewrap
    then makes the replica's own user namespace in it, mapping the worker's user back onto
    itself (jobs.network.JobNetwork.user), so a job sees the same uid either way."""
    try:
        os.unshare(os.CLONE_NEWNET)
    except PermissionError:
        uid, gid = os.geteuid(), os.getegid()
        inside_uid, inside_gid = (0, 0) if root_inside else (uid, gid)
        os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNET)
        # setgroups must be refused before an unprivileged process may write gid_map.
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{inside_uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{inside_gid} {gid} 1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(IFREQ, b"lo", 0)
        flags = struct.unpack(IFREQ, fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


def add_unreachable_route(destination: str, prefix: int) -> None:
    """`ip route add unreachable <destination>/<prefix>` in this process's namespace."""
    rtmsg = struct.pack(
        "BBBBBBBBI",
        socket.AF_INET, prefix, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_UNIVERSE,
        RTN_UNREACHABLE, 0,
    )  # fmt: skip
    attribute = struct.pack("HH", 8, RTA_DST) + socket.inet_aton(destination)
    body = rtmsg + attribute
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE
    message = struct.pack("IHHII", 16 + len(body), RTM_NEWROUTE, flags, 1, 0) + body
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.bind((0, 0))
        sock.send(message)
        reply = sock.recv(4096)
    kind = struct.unpack_from("IHHII", reply)[1]
    error = struct.unpack_from("i", reply, 16)[0] if kind == NLMSG_ERROR else 0
    if error:
        raise OSError(-error, f"route {destination}/{prefix}: {os.strerror(-error)}")


class Outbound:
    """slirp4netns, forked while this process is still in the host's network namespace and
    held back until attach() (see the module's docstring)."""

    def __init__(self, slirp: str, state: Path) -> None:
        self.state = state
        go_read, self.go = os.pipe()
        exit_read, self.exit_fd = os.pipe()  # kept open by the holder for life, never written
        self.ready, ready_write = os.pipe()
        err = os.open(state / "slirp.err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.pid = os.fork()
        if self.pid == 0:  # the child: becomes slirp4netns once told where
            try:
                os.dup2(err, 2)
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                keep = {0, 1, 2, go_read, exit_read, ready_write}
                for name in os.listdir("/proc/self/fd"):
                    if int(name) not in keep:
                        with contextlib.suppress(OSError):  # the listing's own descriptor
                            os.close(int(name))
                target = os.read(go_read, 32).decode()
                if not target:  # the holder failed (or died) before the namespace was made
                    os._exit(1)
                os.close(go_read)
                os.set_inheritable(exit_read, True)
                os.set_inheritable(ready_write, True)
                argv = [
                    slirp,
                    "--configure",
                    f"--mtu={SLIRP_MTU}",
                    "--disable-host-loopback",
                    "--enable-sandbox",
                    "--enable-seccomp",
                    f"--exit-fd={exit_read}",
                    f"--ready-fd={ready_write}",
                    target,  # the holder's pid: slirp4netns enters its (user and) network namespace
                    "tap0",
                ]
                os.execve(slirp, argv, {})
            except BaseException as exc:  # noqa: BLE001 - a forked child must never return
                with open(2, "w", closefd=False) as stderr:
                    print(f"cannot run {slirp}: {exc}", file=stderr, flush=True)
            os._exit(127)
        os.close(err)
        os.close(go_read)
        os.close(exit_read)
        os.close(ready_write)
        # The worker waits for this helper too when it ends the holder (jobs.network._kill).
        (state / "helper").write_text(str(self.pid))

    def attach(self) -> None:
        """Lets slirp4netns attach to this process's (new) namespace, and waits until it has
        configured tap0; then shuts link-local off and writes the job's resolv.conf."""
        os.write(self.go, str(os.getpid()).encode())
        os.close(self.go)
        deadline = time.monotonic() + SLIRP_READY_SECONDS
        watched = [self.ready]
        while True:
            if select.select(watched, [], [], 0.05)[0]:
                if os.read(self.ready, 1):
                    break
                # Closed its ready pipe without a word: it is ending; a moment to see how.
                watched, deadline = [], min(deadline, time.monotonic() + 1.0)
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                raise OSError(f"slirp4netns failed: {self._error(status)}")
            if time.monotonic() >= deadline:
                if not watched:
                    raise OSError(f"slirp4netns failed: {self._error(None)}")
                raise OSError("slirp4netns did not configure the network in time")
        os.close(self.ready)
        add_unreachable_route(*LINK_LOCAL)
        resolv = self.state / "resolv.conf.tmp"
        resolv.write_text(f"nameserver {SLIRP_DNS}\n")
        os.replace(resolv, self.state / "resolv.conf")

    def _error(self, status: int | None) -> str:
        lines = (self.state / "slirp.err").read_text(errors="replace").strip().splitlines()
        # Its last word, but not the warning it prints whenever it starts with --enable-seccomp.
        lines = [line for line in lines if not line.startswith("WARNING:")]
        if lines:
            return lines[-1]
        if status is None:
            return "it closed its ready pipe"
        return f"exit code {os.waitstatus_to_exitcode(status)}"

    def abandon(self) -> None:
        """The holder failed: the child, still waiting or already slirp4netns, ends."""
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", required=True)
    parser.add_argument("--lock-fd", type=int, required=True)  # kept open for life
    # The path of slirp4netns, for LOCAL_JOB_NETWORK=isolated-outbound.
    parser.add_argument("--outbound", default="")
    args = parser.parse_args(argv)
    state = Path(args.state)
    # A stop of the worker's terminal (Ctrl-C) is not ours: only the worker ends a holder.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    outbound = Outbound(args.outbound, state) if args.outbound else None
    try:
        new_network_namespace(root_inside=outbound is not None)
        if outbound is not None:
            outbound.attach()
    except OSError as exc:
        if outbound is not None:
            outbound.abandon()
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
