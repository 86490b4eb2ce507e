"""Runs py-spy for a native read (jobs.stacks) inside the replica's namespaces.

Run by the worker as root, as a program of its own (`python -I native_reader.py PID START UID
GID -- PY-SPY ARGS...`), never imported: it changes its own namespaces and credentials, which
the worker's threads must not. It imports nothing but the standard library.

py-spy 0.4.3 unwinds a thread's native stack by the thread id the process's Python records
(3.11 and later: PyThreadState.native_thread_id), which is the id the sandbox's pid namespace
gives it: from the host it names another thread, and every native read of a sandboxed replica
failed ("UNW_EBADREG: bad register number"). So py-spy runs in the replica's pid namespace,
with a /proc of that namespace (in a mount namespace of its own, a copy of the host's: it runs
nothing of the sandbox's files), given the pid the job sees.

There the job's processes can see it, and it runs as their uid: one that could ptrace it would
act through it outside the sandbox (the host's files, the host's network). So it runs in the
job's user namespace (a job run as a user of its own has one: bwrap --unshare-user) holding
CAP_SYS_PTRACE there, and nothing else: the kernel lets a process ptrace one holding a
capability it lacks only with CAP_SYS_PTRACE itself, which no job process has, while py-spy's
capability reaches only the processes of that user namespace, the job's own: so no job process
may be in a user namespace above it, which a job that made one inside its sandbox's would be
(review 19: all_in, pid_levels). No new privilege
(no_new_privs), no other capability, not even in its bounding set; its supplementary groups
cleared. (Decided over an undumpable py-spy, run from a copy nobody may read: this machine's
kernel, 6.18, leaves such a process dumpable.)
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import NoReturn

MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
PR_SET_KEEPCAPS, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 8, 24, 38, 47
PR_CAP_AMBIENT_RAISE = 2
CAP_SYS_PTRACE = 19
CAP_LAST = 63
LINUX_CAPABILITY_VERSION_3 = 0x20080522
# capset(2)'s number; on another architecture the read fails, saying so (and falls back).
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
OWN_NAMESPACE = "native frames are read only of a sandbox whose processes share its user namespace"

libc = ctypes.CDLL(None, use_errno=True)


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def fail(message: str) -> NoReturn:
    print(f"Error: {message}", file=sys.stderr)
    sys.exit(2)


def checked(result: int, what: str) -> None:
    if result != 0:
        fail(f"{what}: {os.strerror(ctypes.get_errno())}")


def start_of(pid: int) -> str | None:
    """As jobs.runner.process_start: the process's start time (field 22 of its stat)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def pid_levels(pid: int) -> int:
    """How many pid namespaces the process is in, the host's included (its NSpid's pids)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return len(line.split()) - 1
    except OSError:
        pass
    return 0


def all_in(user: str) -> bool:
    """Whether every process of the pid namespace the /proc mounted shows (but this one) is
    in the user namespace `user` and holds no capability there (ended ones, whose namespaces
    cannot be read, aside)."""
    own = str(os.getpid())
    for entry in os.listdir("/proc"):
        if entry.isdigit() and entry != own:
            try:
                if os.readlink(f"/proc/{entry}/ns/user") != user:
                    return False
                with open(f"/proc/{entry}/status") as status:
                    held = [line.split()[1] for line in status if line.startswith("CapPrm:")]
            except OSError:
                continue
            if held and int(held[0], 16):
                return False
    return True


def main(argv: list[str]) -> None:
    if len(argv) < 6 or argv[4] != "--":
        fail("usage: native_reader.py PID START UID GID -- PY-SPY ARGS...")
    pid, start, uid, gid = int(argv[0]), argv[1], int(argv[2]), int(argv[3])
    command = argv[5:]
    capset = SYS_CAPSET.get(os.uname().machine)
    if capset is None:
        fail(f"native frames are not read on {os.uname().machine}")
    own_user = os.readlink("/proc/self/ns/user")
    try:
        user = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
        pids = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY)
        its_user = os.readlink(f"/proc/{pid}/ns/user")
    except OSError:
        fail("the process ended while it was read")
    # Its namespaces, now held open, are those of the process listed, not of one that took
    # its pid since (another user's job's).
    if start_of(pid) != start:
        fail("the process ended while it was read")
    if uid == 0 or its_user == own_user:
        # CAP_SYS_PTRACE in the host's user namespace would reach every process of the host.
        fail("native frames are read only of jobs run as users of their own")
    if pid_levels(pid) != 2:
        # In a pid namespace the job made inside its sandbox's (all_in below looks at the
        # sandbox's: bwrap's, a child of the host's).
        fail(OWN_NAMESPACE)
    os.setns(pids, os.CLONE_NEWPID)  # for the child forked below
    os.unshare(os.CLONE_NEWNS)
    checked(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "making mounts private")
    child = os.fork()
    if child:
        _, status = os.waitpid(child, 0)
        if os.WIFSIGNALED(status):
            fail(f"py-spy was ended by signal {os.WTERMSIG(status)}")
        sys.exit(os.waitstatus_to_exitcode(status))
    # A /proc numbering processes as the sandbox does (its pid namespace is the host's user
    # namespace's: mounted as root before entering the job's).
    checked(
        libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
        "mounting /proc",
    )
    if not all_in(its_user):
        # Review 19: a user namespace the job made inside its sandbox's (possible where no
        # seccomp filter refuses it: libseccomp not installed), the process read in it. The
        # job's processes in its parent, as its owner's uid, hold every capability in it,
        # CAP_SYS_PTRACE too: they could ptrace py-spy, and act through it in the host's
        # mount and network namespaces. With every process of the sandbox in the process's
        # user namespace, none is in one above it; those made since are inside it, or below.
        # Nor may one hold a capability there, as the one that made it (without exec) does.
        fail(OWN_NAMESPACE)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setns(user, os.CLONE_NEWUSER)  # every capability, but only in the job's namespace
    for cap in range(CAP_LAST + 1):
        if cap != CAP_SYS_PTRACE:
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # past the kernel's last: EINVAL, ignored
    checked(libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), "keeping capabilities")
    os.setresuid(uid, uid, uid)
    data = (CapData * 2)()
    data[0].effective = data[0].permitted = data[0].inheritable = 1 << CAP_SYS_PTRACE
    header = CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    checked(libc.syscall(capset, ctypes.byref(header), data), "setting capabilities")
    checked(
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_PTRACE, 0, 0),
        "keeping CAP_SYS_PTRACE across exec",
    )
    checked(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    os.execve(command[0], command, {"PATH": "/usr/bin:/bin"})


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except OSError as exc:
        fail(f"{exc.strerror or exc}")
