"""Runs py-spy for a native read (jobs.stacks) inside the replica's namespaces.

Run by the worker as root, as a program of its own (`python -I native_reader.py PID START UID
GID -- PY-SPY ARGS...`), never imported: it changes its own namespaces and credentials, which
the worker's threads must not. It imports nothing but the standard library.

py-spy 0.4.3 unwinds a thread's native stack by the thread id the process's Python records
(3.11 and later: PyThreadState.native_thread_id), which is the id the sandbox's pid namespace
gives it: from the host it names another thread, and every native read of a sandboxed replica
failed ("UNW_EBADREG: bad register number"). So py-spy runs in the replica's pid namespace,
given the pid the job sees. And in its mount namespace (hang19b): py-spy names a native frame
from the library's file, opened by the path the process maps it at, in py-spy's own mount
namespace; from the host's, a library the job loaded from its /tmp or a volume (a venv with
torch on a dataset volume) was `??`, or named from whatever host file has that path (another
job's /tmp file), and py-spy read host files the sandbox hides.

There the job's processes can see it, and it runs as their uid: one that could ptrace it would
act through it outside the sandbox (the host's network, its other namespaces). So it runs in the
job's user namespace (a job run as a user of its own has one: bwrap --unshare-user) holding
CAP_SYS_PTRACE there, and nothing else: the kernel lets a process ptrace one holding a
capability it lacks only with CAP_SYS_PTRACE itself, which no job process has, while py-spy's
capability reaches only the processes of that user namespace, the job's own: so no job process
may be in a user namespace above it, which a job that made one inside its sandbox's would be
(review 19: all_in, pid_levels). No new privilege
(no_new_privs), no other capability, not even in its bounding set; its supplementary groups
cleared. (Decided over an undumpable py-spy, run from a copy nobody may read: this machine's
kernel, 6.18, leaves such a process dumpable.)

In the job's mount namespace py-spy reads what the job's files are, and only what the job may
see: the host's root as the sandbox shows it (hidden paths covered), its volumes, its /tmp.
The job chooses those files (a library's path in its maps, a file swapped in at that path, a
FIFO, /usr/lib/debug on a volume): py-spy parses them as data, as it parses the job's memory
already, as the job's uid, bounded in time and memory as any read (a FIFO that never opens:
the read times out and falls back). The job chooses nothing py-spy runs or loads:
- py-spy is opened before the reader enters any of the job's namespaces and run from that
  descriptor (fexecve), never by a path the job's mount namespace resolves;
- it must be a static program (no PT_INTERP: the kernel would load the interpreter it names
  by path, in the job's mount namespace, where a volume at /usr/lib64 could be the job's),
  else the read is refused; py-spy 0.4.3's wheel is static-pie and loads no library (it has
  no dlopen); its environment is empty but PATH, so nothing reaches it by LD_*;
- the reader enters the job's mount namespace last, just before the job's user namespace
  (as the host's root: bwrap run as root makes two user namespaces, the job's inside the
  one that owns its mount namespace), and touches no path there: its checks were made in a
  /proc of its own before, it opens nothing and imports nothing after (whatever Python
  loaded there would be the job's file);
- py-spy holds no descriptor of the host's files (every one the reader opened is
  close-on-exec: its own program, the namespaces), so nothing leads it back out of the
  sandbox's view; its /proc/self/exe, the host's py-spy, is read-only to it;
- the checks read a /proc the reader mounts itself (in a private copy of the host's mount
  namespace), not the job's: a process in a user and mount namespace the job made could
  show anything at its /proc. Only once they show every process of the sandbox in the
  process's user and mount namespaces without capabilities (so none of them can have
  changed a mount there since bwrap made it) does the reader take the job's /proc for real.
"""

from __future__ import annotations

import ctypes
import os
import struct
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
OWN_NAMESPACE = (
    "native frames are read only of a sandbox whose processes share its user and mount namespaces"
)
PT_INTERP = 3

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


def all_in(user: str, mounts: str) -> bool:
    """Whether every process of the pid namespace the /proc mounted shows (but this one) is
    in the user namespace `user` and the mount namespace `mounts` and holds no capability
    there (ended ones, whose namespaces cannot be read, aside)."""
    own = str(os.getpid())
    for entry in os.listdir("/proc"):
        if entry.isdigit() and entry != own:
            try:
                if os.readlink(f"/proc/{entry}/ns/user") != user:
                    return False
                if os.readlink(f"/proc/{entry}/ns/mnt") != mounts:
                    return False
                with open(f"/proc/{entry}/status") as status:
                    held = [line.split()[1] for line in status if line.startswith("CapPrm:")]
            except OSError:
                continue
            if held and int(held[0], 16):
                return False
    return True


def interpreter_of(program: int) -> bool:
    """Whether the ELF program open at `program` names an interpreter (PT_INTERP) for the
    kernel to load by path; also True of what is not a 64-bit ELF program (refused too)."""
    header = os.pread(program, 64, 0)
    if len(header) < 64 or header[:5] != b"\x7fELF\x02":
        return True
    order = "<" if header[5] == 1 else ">"
    offset, size, count = (
        struct.unpack_from(f"{order}Q", header, 32)[0],
        *struct.unpack_from(f"{order}HH", header, 54),
    )
    table = os.pread(program, size * count, offset)
    if size < 4 or len(table) < size * count:
        return True
    return any(
        struct.unpack_from(f"{order}I", table, n * size)[0] == PT_INTERP for n in range(count)
    )


def main(argv: list[str]) -> None:
    if len(argv) < 6 or argv[4] != "--":
        fail("usage: native_reader.py PID START UID GID -- PY-SPY ARGS...")
    pid, start, uid, gid = int(argv[0]), argv[1], int(argv[2]), int(argv[3])
    command = argv[5:]
    capset = SYS_CAPSET.get(os.uname().machine)
    if capset is None:
        fail(f"native frames are not read on {os.uname().machine}")
    own_user = os.readlink("/proc/self/ns/user")
    # Opened here, in the host's mount namespace, and run from this descriptor (close-on-exec,
    # as every descriptor Python opens): the job's mount namespace resolves no path of it.
    program = os.open(command[0], os.O_RDONLY | os.O_CLOEXEC)
    if interpreter_of(program):
        fail(f"{command[0]} is not a static program: it is not run in a job's namespaces")
    try:
        user = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
        pids = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY)
        mounts = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
        its_user = os.readlink(f"/proc/{pid}/ns/user")
        its_mounts = os.readlink(f"/proc/{pid}/ns/mnt")
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
    # namespace's: mounted as root before entering the job's), for the checks below: not the
    # job's own, which they are to vouch for (see the docstring).
    checked(
        libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
        "mounting /proc",
    )
    if not all_in(its_user, its_mounts):
        # Review 19: a user namespace the job made inside its sandbox's (possible where no
        # seccomp filter refuses it: libseccomp not installed), the process read in it. The
        # job's processes in its parent, as its owner's uid, hold every capability in it,
        # CAP_SYS_PTRACE too: they could ptrace py-spy, and act through it in the host's
        # mount and network namespaces. With every process of the sandbox in the process's
        # user namespace, none is in one above it; those made since are inside it, or below.
        # Nor may one hold a capability there, as the one that made it (without exec) does.
        # Nor be in another mount namespace (which needs one): py-spy enters the process's.
        fail(OWN_NAMESPACE)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    # Its root and working folder become the job's: from here on no path is opened, nor
    # anything imported, until py-spy runs from its descriptor. Entered as the host's root,
    # just before the job's user namespace: bwrap run as root makes two, the job's inside the
    # one that owns its mount namespace, which the job's capabilities would not reach (EPERM).
    os.setns(mounts, os.CLONE_NEWNS)
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
    os.execve(program, command, {"PATH": "/usr/bin:/bin"})  # fexecve


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except OSError as exc:
        fail(f"{exc.strerror or exc}")
