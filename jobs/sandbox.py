"""The bubblewrap sandbox each local replica runs in.

What a replica sees (decisions, since no container engine runs here and the image is not
pulled):
- the host's file system, read-only, standing in for the image (its interpreters and tools),
  with every capability dropped so it cannot be remounted writable;
- except the console's own state and secrets, and what the worker's user keeps for itself
  (the paths the runner passes as `hidden`): an empty folder (tmpfs) over each such folder,
  /dev/null over each such file. The job runs as the worker's user, so whatever that user
  can read and the sandbox shows, the job reads: the database with sessions and every
  job's secret envs, the secret key, other jobs' logs, the user's home, sockets in /run;
- its own writable /tmp, also HOME and the working directory: a per-replica folder under
  the run dir, on disk as a container's writable layer or a pod's emptyDir is (a tmpfs
  would spend memory on what a job keeps in its working folder: checkpoints, pip's and
  Hugging Face's caches). Its size is capped as Kubernetes caps ephemeral storage: the
  shim measures it every so often and the runner ends a replica over LOCAL_TMP_MAX_GB;
- of the host's devices, only those of its own cards and the control nodes they need (for
  NVIDIA cards /dev/nvidia<minor> of each card allocated to it, /dev/nvidiactl,
  /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia-modeset and the nodes of
  /dev/nvidia-caps/, each on its own, as NVIDIA's container toolkit binds them); none for a
  CPU-only replica. Behind the binds, under cgroup v1 with the worker as root, a device
  cgroup allows only those nodes and bwrap's standard ones (jobs.cgroups, device_rules);
- of the driver's /proc/driver/nvidia/gpus, only its own cards' entries (driver_cards);
- bwrap's options through a descriptor (--args, options_memfd), so bwrap's copy that is
  pid 1 of the job's pid namespace shows none of the host paths above in /proc/1/cmdline;
  nor in /proc/1/fd, which the job can list (pid 1 runs as its user and is dumpable: the flag
  is reset at the exec of a bwrap that is not setuid, and bwrap sets none): bwrap closes the
  --bind-fd descriptors and the --args file before forking the command, and pid 1 then
  closes all but stdio (/dev/null, the shim's output pipe) and its eventfd (bwrap's
  close_extra_fds). Decided: nothing more is done (no pid-1 wrapper of our own), as that
  leaves nothing to hide; tests/test_sandbox.py checks it with a real job. The bind
  mounts' host folders do show in /proc/self/mountinfo (the kernel's, as under Docker);
- /dev/shm as a tmpfs of the size the spec asks for; a fresh /proc in its own pid namespace,
  so when the job's first process dies every process of the replica dies with it, with
  /proc/sys, /proc/sysrq-trigger and /proc/fs read-only (PROC_READ_ONLY);
- nothing else writable but its read-write volumes. bwrap builds the sandbox on tmpfs
  mounts of its own, none of them sized: the root (where the folders rebuilt around a
  missing mount point live), /dev, and the empty folders over hidden paths. Each is made
  read-only once everything is mounted, so a job cannot store data there, in memory and
  out of its /tmp cap's sight ("Read-only file system", as anywhere else on the host; a
  tiny size instead would still hold a little and would say "No space left", which is not
  what a hidden folder is);
- the hostpath volumes of the spec at their mount paths, read-only when asked, bound from
  descriptors opened and checked beforehand (open_in_root), never by name;
- an MPI job's hostfile at /etc/mpi/hostfile, its agent at /etc/mpi/rsh, the folder the
  runner marks the launcher's end in at /etc/mpi/launcher, and each worker's agent folder
  (its /tmp/.mpi) read-only at /etc/mpi/agents/<label>, bound from a descriptor as the
  volumes are (jobs.runner._mpi_files);
- the host's network, or with LOCAL_JOB_NETWORK=isolated the job's own namespace with only
  loopback, which the shim enters before bwrap starts (jobs.network: bwrap cannot join one);
  with isolated-outbound, that namespace with slirp4netns's tap0 too, and its resolv.conf
  (nameserver 10.0.2.3) bound over /etc/resolv.conf (one of the runner's `files`);
- the job's environment, which bwrap sets for the command alone (environment_options): bwrap
  itself runs on the host with a fixed one, so no LD_PRELOAD of a job's reaches the host's
  dynamic loader;
- no setuid or setgid files made (seccomp, as systemd's RestrictSUIDSGID): what a job writes
  to a volume stays on the host, where the bit is honoured, so a job could otherwise leave a
  program there that runs as the worker's user (or root) for anyone who can reach the folder;
  the same filter refuses new user namespaces and the kernel's keyrings (as Docker's default
  seccomp profile; see no_setuid_filter_fd).

A mount path that does not exist on the host must not be created on the host: its nearest
existing ancestor is rebuilt inside the sandbox (a tmpfs folder with the host's entries
bound into it), so the host tree is never written to.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import logging
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.utils.translation import gettext, gettext_noop

from .texts import display_text, recorded, source_of

logger = logging.getLogger(__name__)

# Host entries the sandbox provides itself instead of binding.
OWN_TOP_LEVEL = frozenset({"proc", "dev", "sys", "tmp"})
# Parts of the sandbox's /proc that change the kernel for the whole machine, made read-only
# (as Docker's default): /proc/sys (every sysctl; kernel.core_pattern names a program the
# kernel runs as root on the host at the next crash), /proc/sysrq-trigger (reboot, crash)
# and /proc/fs. bwrap covers /proc/bus and /proc/irq itself, and means to cover /proc/sys
# and /proc/sysrq-trigger, but skips any it finds not writable with access(): /proc/sys, a
# folder, always answers EACCES, while its files are writable by uid 0, capabilities or
# not (the kernel checks a sysctl's mode against the effective uid only, and most sysctls
# check nothing more). So a job of a worker run as root (the README's way to enforce CPU and
# memory under cgroup v1) could rewrite the host's sysctls. Bound from the host's /proc
# (the same files: a sysctl is the kernel's, and net.* ones answer for the reader's own
# network namespace); "-try": a kernel without sysrq has no /proc/sysrq-trigger.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/fs")


class SandboxError(Exception):
    """A mount cannot be set up; the message is safe to show the user."""


class FolderMoved(SandboxError):
    """A folder of a mount was moved or replaced between its opening and its check."""


@dataclass(frozen=True)
class Mount:
    fd: int  # O_PATH descriptor of the host folder, opened and checked by open_in_root
    source: str  # its real path when it was opened
    dest: str  # path inside the sandbox
    read_only: bool = False


# The reasons a start refuses a mount are recorded (jobs.texts) in the console's language
# with their message and parameters, so each reader of the job's event, page or API answer
# gets them in theirs (qa90: an English API reply said "Could not start: 挂载点 /data（存储卷
# scratch）：swap3 解析到了存储卷根目录之外"). Where the same reason is said at submit, on a
# form's field, it is said again in the request's language (said_here).
OUTSIDE_ROOT = gettext_noop("%(path)s resolves outside the volume root")


def said_here(text: str) -> str:
    """A recorded reason in the language active now (a form's, an API request's)."""
    return display_text(text, source_of(text))


def is_within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or inside it (both absolute, normalised)."""
    return os.path.commonpath([folder, path]) == folder


def resolve_in_root(root: Path, sub_path: str | None) -> Path:
    """The real host path of `sub_path` inside `root`; refuses anything resolving outside.

    Symlinks are resolved first, so a link inside the volume pointing at /etc is refused.
    """
    real_root = Path(os.path.realpath(root))
    relative = (sub_path or "").lstrip("/")
    target = Path(os.path.realpath(real_root / relative))
    if not is_within(str(target), str(real_root)):
        raise SandboxError(recorded(OUTSIDE_ROOT, path=sub_path or "/"))
    return target


def open_in_root(root: Path, sub_path: str | None) -> tuple[int, str]:
    """An O_PATH descriptor of the folder `sub_path` inside `root`, and its real path.

    bwrap is handed this descriptor (--bind-fd), not a name: a name checked now and bound
    later can be swapped for a symbolic link in between by any job writing the same volume
    (renameat2 RENAME_EXCHANGE), and bwrap would follow it. So the folder is opened once,
    the check is made on what was opened, and what was checked is what gets mounted.
    Raises OSError when there is no such folder (a symbolic link put there after
    resolve_in_root is opened as itself, O_NOFOLLOW, and refused as not a folder).
    """
    source = resolve_in_root(root, sub_path)
    fd = os.open(source, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC)
    # A folder on the way may have been swapped since resolve_in_root: check where the
    # descriptor really points.
    opened = os.readlink(f"/proc/self/fd/{fd}")
    if not is_within(opened, os.path.realpath(root)):
        os.close(fd)
        raise SandboxError(recorded(OUTSIDE_ROOT, path=sub_path or "/"))
    return fd, opened


def _components(sub_path: str | None) -> list[str] | None:
    """`sub_path`'s folder names from the volume's root; None when it leaves the root ("..")."""
    relative = os.path.normpath("/" + (sub_path or "").lstrip("/")).lstrip("/")
    if "\x00" in relative:
        return None
    parts = [part for part in relative.split("/") if part and part != "."]
    return None if ".." in parts else parts


def missing_folder_problem(root: Path, sub_path: str | None) -> str | None:
    """Why the missing folder `sub_path` of a volume could not be made at a job's start
    (make_in_root), or None when it could: the part that exists is walked from the volume's
    root without following a link, as make_in_root walks it, so the submit says what the
    start would fail with. The caller names the row (the field under its source path)."""
    parts = _components(sub_path)
    if parts is None:
        return gettext("The path must stay inside the volume.")
    too_long = gettext(
        "“%(path)s” does not exist and cannot be made: a folder name on the way is longer "
        "than the file system allows."
    ) % {"path": sub_path}
    current = os.path.realpath(root)
    for index, part in enumerate(parts):
        parent, current = current, os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            # The folders from here on are made at start: each name must fit, or the start
            # made those before it, then failed (until review 48 only the first was looked at).
            return too_long if _longer_than_allowed(parent, parts[index:]) else None
        except OSError as error:
            # Said now, not as a start that fails: a name the file system cannot hold (a
            # folder is at most 255 bytes on Linux), a folder this machine may not enter.
            if error.errno == errno.ENAMETOOLONG:
                return too_long
            return gettext(
                "“%(path)s” does not exist and cannot be made: the worker may not look "
                "inside “%(part)s”."
            ) % {"path": sub_path, "part": "/".join(parts[:index]) or "/"}
        if not stat.S_ISDIR(mode):
            reason = _not_made_reason(
                sub_path, "/".join(parts[: index + 1]), link=stat.S_ISLNK(mode)
            )
            return said_here(reason)
    return None


def outside_volume_problem(root: Path, sub_path: str | None, volume: str) -> str:
    """Why `sub_path` resolves outside the volume `volume` (resolve_in_root refused it),
    said at submit: the symbolic link on the way that leads out, named as the missing
    folder's reason names a link (QA 99: "The path must stay inside the volume" named
    nothing, and the path had no ".." in it)."""
    real_root = os.path.realpath(root)
    parts = _components(sub_path) or []
    current = real_root
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        leads_to = os.path.realpath(current)
        if os.path.islink(current) and not is_within(leads_to, real_root):
            return gettext(
                "“%(link)s” is a symbolic link to a folder outside volume “%(volume)s”, and a "
                "mount must stay inside its volume: give a folder inside it."
            ) % {"link": "/".join(parts[: index + 1]), "volume": volume}
        current = leads_to
    return gettext("The path must stay inside the volume.")


def _longer_than_allowed(folder: str, names: list[str]) -> bool:
    """Whether one of `names`, to be made below `folder`, is longer than its file system
    allows a name to be."""
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except OSError:
        limit = 255  # Linux's NAME_MAX
    return any(len(os.fsencode(name)) > limit for name in names)


def read_only_missing_message(path: str, volume: str) -> str:
    """Why a read-only mount of a folder that does not exist is refused rather than made:
    an empty folder the job may not write gives it nothing, so the path is most likely a
    typo (Kubernetes' kubelet would make it all the same)."""
    return recorded(
        gettext_noop(
            "“%(path)s” does not exist in volume “%(volume)s”, and the mount is read-only: a "
            "folder made for it would be empty and could not be written, so the path is most "
            "likely mistyped. Choose a folder that exists (blank or / for the whole volume), or "
            "mount it read-write to have it made when the job starts."
        ),
        path=path,
        volume=volume,
    )


def _not_made_reason(sub_path: str | None, part: str, *, link: bool) -> str:
    if link:
        return recorded(
            gettext_noop(
                "“%(path)s” does not exist and cannot be made: “%(part)s” on the way is a "
                "symbolic link, and a missing folder is made only through real folders (a link "
                "could lead out of the volume). Give the path the link stands for."
            ),
            path=sub_path,
            part=part,
        )
    return recorded(
        gettext_noop(
            "“%(path)s” does not exist and cannot be made: “%(part)s” on the way is a file, "
            "not a folder."
        ),
        path=sub_path,
        part=part,
    )


def make_in_root(
    root: Path, sub_path: str | None, *, as_user: tuple[int, int] | None = None
) -> tuple[int, str]:
    """The missing folder `sub_path` inside `root`, made as the kubelet makes a missing
    subPath, as an O_PATH descriptor and its real path (what open_in_root returns).

    Walked from the volume's root one folder at a time, each opened relative to the one
    before (dir_fd) with O_NOFOLLOW: another job writing the volume may swap any folder on
    the way for a symbolic link to /etc, and a name resolved by the kernel as a whole path
    would follow it. A link or a file on the way raises SandboxError (the reason, for the
    job's start event), whatever it points at. Each folder made gets the permission bits
    of the volume's root (as the kubelet gives a subPath it makes), and is owned by
    `as_user` (the user the job runs as; None: the worker's own), as one the job made with
    `mkdir -p` would be; when the root is set-group-ID, the group it passes on is kept.
    With `as_user`, a folder is made only in one that user may write (SandboxError else):
    made by the worker (root), Bob's job got a folder of his inside Alice's, which his own
    permissions do not let him write (until review 48).
    """
    parts = _components(sub_path)
    if parts is None:
        raise SandboxError(recorded(OUTSIDE_ROOT, path=sub_path or "/"))
    real_root = os.path.realpath(root)
    flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    current = os.open(real_root, flags)
    try:
        root_mode = stat.S_IMODE(os.fstat(current).st_mode)
        for index, part in enumerate(parts):
            made = False
            if as_user is not None and not _may_enter(os.fstat(current), *as_user):
                # Not made, nor looked into, where the job's user could not go by itself: the
                # mount would be refused all the same (check_within_reach), a folder left made.
                raise SandboxError(
                    _not_enterable_reason(sub_path, "/".join(parts[:index]), as_user)
                )
            try:
                following = os.open(part, flags, dir_fd=current)
            except FileNotFoundError:
                if as_user is not None and not _may_make_in(os.fstat(current), *as_user):
                    raise SandboxError(
                        _not_writable_reason(sub_path, "/".join(parts[:index]), as_user)
                    ) from None
                try:
                    os.mkdir(part, 0o700, dir_fd=current)
                    made = True
                except FileExistsError:  # another job made it meanwhile: open theirs
                    pass
                following = _opened(current, part, sub_path=sub_path, walked=parts[: index + 1])
            except NotADirectoryError:
                following = _opened(current, part, sub_path=sub_path, walked=parts[: index + 1])
            if made:
                _set_made(following, root_mode=root_mode, as_user=as_user)
            os.close(current)
            current = following
        opened = os.readlink(f"/proc/self/fd/{current}")
        if not is_within(opened, real_root):  # a root swapped itself, say
            raise SandboxError(recorded(OUTSIDE_ROOT, path=sub_path or "/"))
    except BaseException:
        os.close(current)
        raise
    return current, opened


def _may_make_in(folder: os.stat_result, uid: int, gid: int) -> bool:
    """Whether the user uid:gid may make an entry in `folder` (may_access: write and enter)."""
    return uid == 0 or may_access(folder, uid, gid, os.W_OK | os.X_OK)


def _may_enter(folder: os.stat_result, uid: int, gid: int) -> bool:
    return uid == 0 or may_access(folder, uid, gid, os.X_OK)


def may_access(info: os.stat_result, uid: int, gid: int, wanted: int) -> bool:
    """Whether the user uid:gid, in no other group (as a job runs: jobs.shim), may do `wanted`
    (os.R_OK, os.W_OK, os.X_OK, or'ed) with the file `info` is of, by its permission bits as
    the kernel reads them (the owner's, else the group's, else the others'; an ACL is not
    read, and may only be stricter or allow more)."""
    if info.st_uid == uid:
        shift = 6
    elif info.st_gid == gid:
        shift = 3
    else:
        shift = 0
    needed = wanted << shift
    return info.st_mode & needed == needed


def _not_writable_reason(sub_path: str | None, part: str, as_user: tuple[int, int]) -> str:
    return recorded(
        gettext_noop(
            "“%(path)s” does not exist and cannot be made: the job runs as uid %(uid)d, gid "
            "%(gid)d, which may not write in “%(part)s”, and a missing folder is made only "
            "where the job could make it itself."
        ),
        path=sub_path,
        part=part or "/",
        uid=as_user[0],
        gid=as_user[1],
    )


def _not_enterable_reason(sub_path: str | None, part: str, as_user: tuple[int, int]) -> str:
    return recorded(
        gettext_noop(
            "the job runs as uid %(uid)d, gid %(gid)d, which may not enter “%(part)s” on the "
            "way to “%(path)s”: a job mounts only a folder its user could reach by itself."
        ),
        path=sub_path or "/",
        part=part or "/",
        uid=as_user[0],
        gid=as_user[1],
    )


def check_within_reach(
    mounted: int,
    source: str,
    *,
    root: Path,
    volume: str,
    read_only: bool,
    as_user: tuple[int, int],
) -> None:
    """Raises SandboxError unless the user `as_user` (a job's, LOCAL_JOB_UID_BASE) could
    reach the folder `source` by itself: enter every folder from / down to it and read it
    (write it too, for a read-write mount), by may_access. `mounted` is the descriptor
    open_in_root or make_in_root gave for `source`, what bwrap binds.

    The worker (root) opens the folder and bwrap binds it from that descriptor, so the job
    never walks the path itself: Bob's job mounted alice/private/data, read-write or not,
    though alice/private is Alice's 0700 folder he may not enter (until review 48). Walked
    from / one folder at a time without following a link, as opened; the folder reached
    must be the one mounted (else it moved meanwhile, and is refused as gone). The volume's
    root is named as the root of `volume`, not "/" (QA 99: "may not read “/”" read as the
    machine's root)."""
    uid, gid = as_user
    if uid == 0:
        return
    real_root = os.path.realpath(root)
    relative = os.path.relpath(source, real_root)
    path = "/" if relative == "." else relative
    flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    current = os.open("/", flags)
    try:
        walked = "/"
        for name in [name for name in source.split("/") if name]:
            if not may_access(os.fstat(current), uid, gid, os.X_OK):
                # Above the volume's own folder the host's paths are not the job's to read.
                part = os.path.relpath(walked, real_root) if is_within(walked, real_root) else None
                if part is None:
                    raise SandboxError(
                        recorded(
                            gettext_noop(
                                "the job runs as uid %(uid)d, gid %(gid)d, which may not enter "
                                "a folder above the volume's own folder on this machine: staff "
                                "can let it in (chmod o+x)."
                            ),
                            uid=uid,
                            gid=gid,
                        )
                    )
                if part == ".":
                    raise SandboxError(
                        recorded(
                            gettext_noop(
                                "the job runs as uid %(uid)d, gid %(gid)d, which may not enter "
                                "the root of volume “%(volume)s”: a job mounts only a folder "
                                "its user could reach by itself."
                            ),
                            volume=volume,
                            uid=uid,
                            gid=gid,
                        )
                    )
                raise SandboxError(_not_enterable_reason(path, part, as_user))
            try:
                following = os.open(name, flags, dir_fd=current)
            except OSError:  # swapped for a link, or gone, since it was opened
                raise FolderMoved(_moved_reason(path)) from None
            os.close(current)
            current = following
            walked = os.path.join(walked, name)
        reached, bound = os.fstat(current), os.fstat(mounted)
        if (reached.st_dev, reached.st_ino) != (bound.st_dev, bound.st_ino):
            raise FolderMoved(_moved_reason(path))
        if not may_access(reached, uid, gid, os.R_OK | os.X_OK) and path == "/":
            raise SandboxError(
                recorded(
                    gettext_noop(
                        "the job runs as uid %(uid)d, gid %(gid)d, which may not read the root "
                        "of volume “%(volume)s”: a job mounts only a folder its user could "
                        "reach by itself."
                    ),
                    volume=volume,
                    uid=uid,
                    gid=gid,
                )
            )
        if not may_access(reached, uid, gid, os.R_OK | os.X_OK):
            raise SandboxError(
                recorded(
                    gettext_noop(
                        "the job runs as uid %(uid)d, gid %(gid)d, which may not read "
                        "“%(path)s”: a job mounts only a folder its user could reach by itself."
                    ),
                    path=path,
                    uid=uid,
                    gid=gid,
                )
            )
        if not read_only and not may_access(reached, uid, gid, os.W_OK) and path == "/":
            raise SandboxError(
                recorded(
                    gettext_noop(
                        "the job runs as uid %(uid)d, gid %(gid)d, which may not write in the "
                        "root of volume “%(volume)s”: mount it read-only if the job only reads "
                        "it."
                    ),
                    volume=volume,
                    uid=uid,
                    gid=gid,
                )
            )
        if not read_only and not may_access(reached, uid, gid, os.W_OK):
            raise SandboxError(
                recorded(
                    gettext_noop(
                        "the job runs as uid %(uid)d, gid %(gid)d, which may not write in "
                        "“%(path)s”: mount it read-only if the job only reads it."
                    ),
                    path=path,
                    uid=uid,
                    gid=gid,
                )
            )
    finally:
        os.close(current)


def reach_problem(
    root: Path, sub_path: str | None, *, volume: str, read_only: bool, as_user: tuple[int, int]
) -> str | None:
    """What a job's start would refuse of a mount of `sub_path` in the volume at `root` for
    its user `as_user` (check_within_reach; for a missing read-write folder, make_in_root's
    walk), said when the job is submitted, so that its owner learns it on the mount's row
    and not once it has been queued (left47). None when the start would mount it, and when
    this process cannot tell (the web server may not look where the worker, root, can; a
    folder moved meanwhile): the start checks again all the same, as permissions change."""
    if as_user[0] == 0:
        return None
    try:
        fd, source = open_in_root(root, sub_path)
    except FileNotFoundError:
        problem = None if read_only else _missing_folder_reach_problem(root, sub_path, as_user)
        return said_here(problem) if problem else None
    except (OSError, ValueError, SandboxError):
        return None  # the submit's own checks say what is wrong with the path
    try:
        check_within_reach(
            fd, source, root=root, volume=volume, read_only=read_only, as_user=as_user
        )
    except FolderMoved:
        return None
    except SandboxError as error:
        return said_here(error.args[0])
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


def _missing_folder_reach_problem(
    root: Path, sub_path: str | None, as_user: tuple[int, int]
) -> str | None:
    """As make_in_root walks the volume to a missing folder for `as_user`: each folder that
    exists on the way must be one the job's user may enter, and the last one it may write."""
    parts = _components(sub_path)
    if parts is None:
        return None
    current = os.path.realpath(root)
    for index, part in enumerate(parts):
        try:
            folder = os.lstat(current)
        except OSError:
            return None
        if not _may_enter(folder, *as_user):
            return _not_enterable_reason(sub_path, "/".join(parts[:index]), as_user)
        following = os.path.join(current, part)
        try:
            os.lstat(following)
        except FileNotFoundError:
            if not _may_make_in(folder, *as_user):
                return _not_writable_reason(sub_path, "/".join(parts[:index]), as_user)
            return None
        except OSError:
            return None
        current = following
    return None


def _moved_reason(path: str) -> str:
    return recorded(
        gettext_noop(
            "“%(path)s” was moved or replaced while the job started: start the job again."
        ),
        path=path,
    )


def _opened(parent: int, name: str, *, sub_path: str | None, walked: list[str]) -> int:
    """The folder `name` in `parent`, opened without following a link; SandboxError when
    it is a link or a file (an O_PATH open of a link with O_NOFOLLOW and O_DIRECTORY
    answers ENOTDIR, as a file does)."""
    try:
        return os.open(
            name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent
        )
    except (NotADirectoryError, FileNotFoundError):
        try:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
        except FileNotFoundError:
            mode = 0  # gone again: said as a file would be
        raise SandboxError(
            _not_made_reason(sub_path, "/".join(walked), link=stat.S_ISLNK(mode))
        ) from None


def _set_made(fd: int, *, root_mode: int, as_user: tuple[int, int] | None) -> None:
    """The mode and owner of a folder make_in_root made (0700 until then, so nobody else
    enters it before), set through its descriptor (its /proc link is that very inode), not
    its name, which another job may have swapped since."""
    inode = f"/proc/self/fd/{fd}"
    try:
        if as_user is not None:
            group = -1 if root_mode & stat.S_ISGID else as_user[1]
            os.chown(inode, as_user[0], group)
        os.chmod(inode, root_mode)
    except BaseException:
        os.close(fd)
        raise


# Host folders whose entries the world may not read are covered in every sandbox
# (private_entries): the job runs as the worker's user, and a worker run as root would
# otherwise read /etc/shadow, the SSH host keys, and an environment file of the console's
# own service (README's /etc/ai-job-console.env with SECRET_KEY and the AIHC keys, if it is
# readable by the worker's user or the worker is root). /etc only: it is small (a thousand
# entries, a few ms) and what jobs need there (passwd, hosts, resolv.conf, ssl/certs) is
# world-readable; /var/lib and the rest are too big to walk for each job.
PRIVATE_SCAN = ("/etc",)
PRIVATE_SCAN_MAX_ENTRIES = 20_000
PRIVATE_SCAN_MAX_DEPTH = 8


def private_entries(folder: str, *, max_entries: int = PRIVATE_SCAN_MAX_ENTRIES) -> list[str]:
    """The files under `folder` others may not read, and its folders they may not list or
    enter (not walked further): what the sandbox covers. Symbolic links are not followed
    (their target is checked where it lies, if under `folder`). At most `max_entries` are
    looked at, PRIVATE_SCAN_MAX_DEPTH folders deep."""
    found: list[str] = []
    pending = [(folder, 0)]
    seen = 0
    while pending and seen < max_entries:
        path, depth = pending.pop()
        try:
            with os.scandir(path) as entries:
                listed = list(entries)
        except OSError:
            continue
        for entry in listed:
            seen += 1
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            mode = info.st_mode
            if stat.S_ISLNK(mode):
                continue
            if stat.S_ISDIR(mode):
                if mode & (stat.S_IROTH | stat.S_IXOTH) != stat.S_IROTH | stat.S_IXOTH:
                    found.append(entry.path)
                elif depth < PRIVATE_SCAN_MAX_DEPTH:
                    pending.append((entry.path, depth + 1))
            elif stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                found.append(entry.path)
    return sorted(found)


def read_only_parent_lacking(dest: str, mounts: list[tuple[str, str, bool]]) -> str | None:
    """The mount path of the read-only mount `dest` lies in, if it has no `dest` to mount on.

    `mounts` are the job's (mount path, host folder, read-only). A mount point inside another
    mount is made in that mount's folder, as a container runtime makes it; in a read-only
    mount it cannot be (bwrap fails with EROFS and the replica never starts), so it must
    exist there already."""
    around = [m for m in mounts if m[0] != dest and is_within(dest, m[0])]
    if not around:
        return None
    path, folder, read_only = max(around, key=lambda m: len(m[0]))
    if read_only and not os.path.lexists(os.path.join(folder, os.path.relpath(dest, path))):
        return path
    return None


def read_only_parent_message(dest: str, parent: str) -> str:
    return recorded(
        gettext_noop(
            "%(path)s lies inside the read-only mount %(parent)s, which has no folder "
            "“%(folder)s” to mount it on, and a read-only mount cannot get one. Create the "
            "folder in the volume first, or choose a path outside %(parent)s."
        ),
        path=dest,
        parent=parent,
        folder=os.path.relpath(dest, parent),
    )


def _shadowed_dirs(dests: list[str]) -> set[str]:
    """Host folders to rebuild in the sandbox so missing mount points never touch the host."""
    shadowed: set[str] = set()
    for dest in dests:
        parts = Path(dest).parts[1:]
        if not parts or parts[0] in OWN_TOP_LEVEL:
            continue
        current = "/"
        ancestors = []
        for part in parts:
            nxt = os.path.join(current, part)
            if os.path.islink(nxt):
                raise SandboxError(
                    recorded(
                        gettext_noop("%(path)s goes through a symbolic link on this machine"),
                        path=dest,
                    )
                )
            if not os.path.isdir(nxt):
                break
            ancestors.append(nxt)
            current = nxt
        else:
            continue  # the mount point exists: mounting over it writes nothing
        shadowed.update(ancestors)
    return shadowed


def _host_entries(directory: str, shadowed: set[str], args: list[str]) -> None:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if directory == "/" and entry.name in OWN_TOP_LEVEL:
            continue
        path = entry.path
        if entry.is_symlink():
            args += ["--symlink", os.readlink(path), path]
        elif path in shadowed:
            args += ["--dir", path]
            _host_entries(path, shadowed, args)
        else:
            args += ["--ro-bind", path, path]


def _mask_args(hidden: list[str]) -> tuple[list[str], list[str]]:
    """bwrap arguments that cover each existing hidden path with an empty folder or file,
    and the folders covered so (tmpfs mounts, made read-only once all is mounted).

    Real paths, because bwrap would follow a symbolic link in a destination from its own
    new root, not the host's. Paths under /tmp, /proc, /dev and /sys are already the
    sandbox's own, and "/" is never hidden (the README promises the machine's tools).
    """
    real = {os.path.realpath(path) for path in hidden}
    args: list[str] = []
    folders: list[str] = []
    for path in sorted(real):
        parts = Path(path).parts
        if len(parts) < 2 or parts[1] in OWN_TOP_LEVEL:
            continue
        if any(other != path and is_within(path, other) for other in real):
            continue  # an enclosing folder is hidden already
        if os.path.isdir(path):
            args += ["--tmpfs", path]
            folders.append(path)
        elif os.path.lexists(path):
            args += ["--ro-bind", "/dev/null", path]
    return args, folders


def bwrap_argv(*, bwrap: str, command: list[str], **options) -> list[str]:
    """The whole bwrap command line running `command` (bwrap_options' keywords), the
    options on it: what the tests read. The runner hands bwrap its options through a
    descriptor instead (options_memfd): see there."""
    return [bwrap, *bwrap_options(**options), "--", *command]


def options_memfd(options: list[str]) -> int:
    """A descriptor (an in-memory file, at its start) holding `options` NUL-separated, for
    bwrap's `--args FD`: its command line is then `bwrap --args FD -- <command>`.

    The first process of the sandbox's pid namespace (pid 1, every job can read its
    /proc/1/cmdline) is a copy of bwrap, whose command line would otherwise name every host
    path of the sandbox: the run folder holding the replica's /tmp, the volumes' host
    folders, the hidden paths. bwrap reads the descriptor and closes it before the job
    starts. (Making the job's command pid 1 instead, --as-pid-1, would leave no process to
    reap its orphans.)"""
    fd = os.memfd_create("bwrap-args", os.MFD_CLOEXEC)
    data = b"".join(option.encode() + b"\0" for option in options)
    written = 0
    while written < len(data):
        written += os.write(fd, data[written:])
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def environment_options(env: Mapping[str, str]) -> list[str]:
    """bwrap's options that make `env` the command's environment, and nothing else of bwrap's.

    Never the environment bwrap is started with: bwrap is not setuid, so the host's dynamic
    loader honours that one's LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH (and glibc's
    GCONV_PATH...) in bwrap's own process on the host, as the worker's user, before any
    namespace or seccomp filter exists. A job that named a library it had built in its /tmp
    so ran code on the host, as root with a root worker (qa100). bwrap sets these once it
    has read them, in its own memory, and the command it starts in the sandbox inherits
    them: only that command's loader (and its children's) reads them, inside the sandbox,
    where a job's LD_PRELOAD is its own business. They go in the options' descriptor
    (options_memfd), never on a command line, where any account's `ps` would read secret
    values; NUL-separated there, so a value may hold newlines (a NUL the spec refuses)."""
    options = ["--clearenv"]
    for name, value in env.items():
        options += ["--setenv", name, value]
    return options


def bwrap_options(
    *,
    tmp_dir: Path,
    shm_bytes: int,
    mounts: list[Mount],
    files: list[tuple[Path, str]],
    hidden: list[str],
    seccomp_fd: int | None = None,
    devices: Sequence[tuple[str, str]] = (),
    driver_cards: tuple[str, Sequence[str]] | None = None,
    as_user: tuple[int, int] | None = None,
    hostname: str | None = None,
    env: Mapping[str, str],
) -> list[str]:
    """bwrap's options (without the command) for the mounts and files given.

    `env` is the command's whole environment, set by bwrap for the command alone (see
    environment_options): bwrap itself runs on the host with a fixed one of the shim's.

    `hostname`: the replica's own (a UTS namespace of its own), as each pod has its own on
    Kubernetes: without it every replica had the machine's, and torchrun's c10d rendezvous,
    which tells its nodes apart by hostname and pid, took them all for one node (qa86).

    `devices` are the (host path, path in the sandbox) of the device nodes the replica may
    use: its own cards' and the control nodes they need, none for a CPU-only replica.

    `driver_cards`, where the NVIDIA driver's per-card folder exists on the host (see
    backends.local.nvidia_driver_cards): (that folder, the names of the replica's own cards'
    entries in it). The sandbox shows the folder, at the same path, holding those entries
    only: not the machine's other cards.

    `hidden` are host paths the job must not see. They are covered before the volumes are
    bound, so a volume mounted at or under a hidden path still appears there (bwrap reads a
    bind's source from the host, not from the sandbox being built).

    `as_user` (uid, gid): bwrap starts as root of the user namespace it is in (that of an
    isolated-outbound job's network namespace, for a worker not run as root: jobs.network),
    and makes the replica a user namespace of its own in which it is this user again, as
    bwrap run by that user does by itself.
    """
    dests = [m.dest for m in mounts] + [dest for _, dest in files]
    # No capabilities: even a job running as root cannot remount the host read-write.
    args = [*environment_options(env), "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"]
    if as_user is not None:
        args += ["--unshare-user", "--uid", str(as_user[0]), "--gid", str(as_user[1])]
    if hostname is not None:
        args += ["--unshare-uts", "--hostname", hostname]
    _host_entries("/", _shadowed_dirs(dests), args)
    masks, covered = _mask_args(hidden)
    args += masks
    args += ["--ro-bind", "/sys", "/sys", "--proc", "/proc"]
    for path in PROC_READ_ONLY:
        args += ["--ro-bind-try", path, path]
    if driver_cards is not None:
        # /proc/driver/nvidia/gpus lists every card of the machine (the fresh /proc shows the
        # driver's folder as the host's does): an empty folder over it, with the replica's
        # own cards' entries bound back from the host, made read-only below.
        folder, own = driver_cards
        args += ["--tmpfs", folder]
        for name in own:
            args += ["--ro-bind", os.path.join(folder, name), os.path.join(folder, name)]
    args += ["--dev", "/dev"]
    # Only the replica's own accelerator nodes (backends.local.accelerator_devices), never
    # the machine's every /dev/nvidia*: a job ignoring CUDA_VISIBLE_DEVICES must not reach
    # another's cards. It cannot make the others' nodes itself: /dev is read-only (below) and
    # making a device node needs CAP_MKNOD, dropped above.
    for source, dest in devices:
        args += ["--dev-bind", source, dest]
    args += ["--size", str(shm_bytes), "--tmpfs", "/dev/shm"]
    args += ["--bind", str(tmp_dir), "/tmp"]
    for mount in sorted(mounts, key=lambda m: m.dest.count("/")):
        bind = "--ro-bind-fd" if mount.read_only else "--bind-fd"
        args += [bind, str(mount.fd), mount.dest]
    # The hostfile and /tmp are bound by name: they live under LOCAL_RUN_DIR, which only the
    # runner writes (a job sees none of it but its /tmp's contents, and cannot replace the
    # folder it is mounted on), so no job can swap what these names point at.
    for source, dest in files:
        args += ["--ro-bind", str(source), dest]
    # Last, once every mount point has been made: bwrap's own unsized tmpfs mounts become
    # read-only (see the module's docstring). Each remount is of that mount alone: /tmp,
    # /dev/shm, /dev's devices and the volumes mounted below stay as they are. A hidden
    # folder at or under a volume's mount path is skipped: the top mount there is the
    # volume (read-write if asked), or its tmpfs lies beneath the volume out of reach.
    args += ["--remount-ro", "/", "--remount-ro", "/dev"]
    # The device binds stay read-write: bwrap's --remount-ro adds nodev to what it remounts,
    # and a node on a nodev mount no longer opens. They are single nodes, never a host folder
    # (the folder /dev/nvidia-caps is the sandbox's own, read-only, with the host's nodes
    # bound into it: backends.local.accelerator_devices), so a job of a worker run as root
    # adds or removes nothing in the host's /dev; it can still change the mode of the nodes
    # it is given, which it owns (uid 0) without any capability.
    if driver_cards is not None:
        args += ["--remount-ro", driver_cards[0]]
    for folder in covered:
        if not any(is_within(folder, mount.dest) for mount in mounts):
            args += ["--remount-ro", folder]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--chdir", "/tmp"]
    return args


# -- no setuid or setgid files (seccomp) ------------------------------------------------

# libseccomp's constants (seccomp.h).
_ACT_ALLOW = 0x7FFF0000
_CMP_MASKED_EQ = 7
_O_CREAT = 0o100
_O_TMPFILE = 0o20000000  # __O_TMPFILE, without O_DIRECTORY
# (syscall, index of its mode argument, index of its open flags or None): each refused when
# the mode asks for S_ISUID or S_ISGID (and, with flags, when it creates a file).
_MODE_SYSCALLS = (
    ("chmod", 1, None),
    ("fchmod", 1, None),
    ("fchmodat", 2, None),
    ("fchmodat2", 2, None),
    ("creat", 1, None),
    ("mknod", 1, None),
    ("mknodat", 2, None),
    ("open", 2, 1),
    ("openat", 3, 2),
)
# Their mode cannot be inspected (a struct, a ring): refused as absent, so callers fall back
# to the calls above (glibc and liburing do). clone3 likewise: its flags are in a struct, and
# glibc falls back to clone, whose flags are checked below (as Docker's default profile).
_ABSENT_SYSCALLS = ("openat2", "io_uring_setup", "clone3")
# No new user namespace (unshare or clone with CLONE_NEWUSER), as Docker's default profile:
# inside one a job holds every capability again, over namespaces of its own, which opens the
# kernel's network, mount and netfilter code to it, the source of most local root exploits of
# recent years (nf_tables...). bwrap makes the ones it needs before the filter is loaded.
_CLONE_NEWUSER = 0x10000000
_NAMESPACE_SYSCALLS = (("unshare", 0), ("clone", 0))  # (syscall, index of its flags)
# The kernel's keyrings are not namespaced: a job could read or add to the keys of the
# worker's user (root's, for a root worker). Refused, as in Docker's default profile.
_KEYRING_SYSCALLS = ("keyctl", "add_key", "request_key")
# Other ABIs the kernel runs on the native one (a 32-bit binary's chmod is another number).
_COMPAT_ARCHES = {"x86_64": ("x86", "x32"), "aarch64": ("arm",)}


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


@functools.cache
def _libseccomp() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2")
    except OSError:
        logger.warning(
            "libseccomp is not installed: local jobs may make setuid and setgid files "
            "(install libseccomp2 to refuse them)"
        )
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_arch_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _errno_action(number: int) -> int:
    return 0x00050000 | (number & 0xFFFF)


def no_setuid_filter_fd() -> int | None:
    """A descriptor (an in-memory file, at its start) holding the seccomp program bwrap loads
    with --seccomp: every call that would make a setuid or setgid file, a new user namespace,
    or use the kernel's keyrings fails with EPERM (clone3, openat2 and io_uring_setup with
    ENOSYS), everything else is allowed. None without libseccomp (logged once)."""
    lib = _libseccomp()
    if lib is None:
        return None
    _NO_FILTER = gettext("The sandbox's filter against setuid files cannot be built (%(step)s).")
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise SandboxError(_NO_FILTER % {"step": "seccomp_init"})
    try:
        for arch in _COMPAT_ARCHES.get(os.uname().machine, ()):
            token = lib.seccomp_arch_resolve_name(arch.encode())
            if token:
                lib.seccomp_arch_add(ctx, token)  # -EEXIST when native: fine
        rules: list[tuple[str, int, list[_ArgCmp]]] = []
        for bit in (stat.S_ISUID, stat.S_ISGID):
            for name, mode_arg, flags_arg in _MODE_SYSCALLS:
                mode = _ArgCmp(mode_arg, _CMP_MASKED_EQ, bit, bit)
                if flags_arg is None:
                    rules.append((name, errno.EPERM, [mode]))
                    continue
                for flag in (_O_CREAT, _O_TMPFILE):
                    creates = _ArgCmp(flags_arg, _CMP_MASKED_EQ, flag, flag)
                    rules.append((name, errno.EPERM, [creates, mode]))
        rules += [(name, errno.ENOSYS, []) for name in _ABSENT_SYSCALLS]
        for name, flags_arg in _NAMESPACE_SYSCALLS:
            user = _ArgCmp(flags_arg, _CMP_MASKED_EQ, _CLONE_NEWUSER, _CLONE_NEWUSER)
            rules.append((name, errno.EPERM, [user]))
        rules += [(name, errno.EPERM, []) for name in _KEYRING_SYSCALLS]
        for name, number, conditions in rules:
            syscall = lib.seccomp_syscall_resolve_name(name.encode())
            if syscall == -1:  # __NR_SCMP_ERROR: older libseccomp without it
                continue
            array = (_ArgCmp * max(len(conditions), 1))(*conditions)
            failed = lib.seccomp_rule_add_array(
                ctx, _errno_action(number), syscall, len(conditions), array
            )
            if failed:
                raise SandboxError(_NO_FILTER % {"step": name})
        fd = os.memfd_create("no-setuid.bpf", os.MFD_CLOEXEC)
        if lib.seccomp_export_bpf(ctx, fd):
            os.close(fd)
            raise SandboxError(_NO_FILTER % {"step": "seccomp_export_bpf"})
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    finally:
        lib.seccomp_release(ctx)
