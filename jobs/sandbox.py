"""The bubblewrap sandbox each local replica runs in.

What a replica sees (decisions, since no container engine runs here and the image is not
pulled):
- the host's file system, read-only, standing in for the image (its interpreters and tools),
  with every capability dropped so it cannot be remounted writable;
- its own writable /tmp (a per-replica folder under the run dir), also HOME and the
  working directory;
- /dev/shm as a tmpfs of the size the spec asks for; a fresh /proc in its own pid namespace,
  so when the job's first process dies every process of the replica dies with it;
- the hostpath volumes of the spec at their mount paths, read-only when asked;
- the MPI hostfile at /etc/mpi/hostfile.

A mount path that does not exist on the host must not be created on the host: its nearest
existing ancestor is rebuilt inside the sandbox (a tmpfs folder with the host's entries
bound into it), so the host tree is never written to.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

# Host entries the sandbox provides itself instead of binding.
OWN_TOP_LEVEL = frozenset({"proc", "dev", "sys", "tmp"})


class SandboxError(Exception):
    """A mount cannot be set up; the message is safe to show the user."""


@dataclass(frozen=True)
class Mount:
    source: str  # host path
    dest: str  # path inside the sandbox
    read_only: bool = False


def resolve_in_root(root: Path, sub_path: str | None) -> Path:
    """The real host path of `sub_path` inside `root`; refuses anything resolving outside.

    Symlinks are resolved first, so a link inside the volume pointing at /etc is refused.
    """
    real_root = Path(os.path.realpath(root))
    relative = (sub_path or "").lstrip("/")
    target = Path(os.path.realpath(real_root / relative))
    if os.path.commonpath([real_root, target]) != str(real_root):
        raise SandboxError(f"{sub_path!r} resolves outside the volume root")
    return target


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
                raise SandboxError(f"{dest} goes through a symbolic link on this machine")
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


def bwrap_argv(
    *,
    bwrap: str,
    command: list[str],
    tmp_dir: Path,
    shm_bytes: int,
    mounts: list[Mount],
    files: list[tuple[Path, str]],
) -> list[str]:
    """The bwrap command line running `command` with the mounts and files given."""
    dests = [m.dest for m in mounts] + [dest for _, dest in files]
    # No capabilities: even a job running as root cannot remount the host read-write.
    args = [bwrap, "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"]
    _host_entries("/", _shadowed_dirs(dests), args)
    args += ["--ro-bind", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev"]
    for device in sorted(glob.glob("/dev/nvidia*")):
        args += ["--dev-bind", device, device]
    args += ["--size", str(shm_bytes), "--tmpfs", "/dev/shm"]
    args += ["--bind", str(tmp_dir), "/tmp"]
    for mount in sorted(mounts, key=lambda m: m.dest.count("/")):
        args += ["--ro-bind" if mount.read_only else "--bind", mount.source, mount.dest]
    for source, dest in files:
        args += ["--ro-bind", str(source), dest]
    args += ["--chdir", "/tmp", "--"]
    return args + command
