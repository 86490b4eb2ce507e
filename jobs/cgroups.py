"""CPU and memory limits of local replicas, enforced with cgroups when the worker can.

Decisions (README "Running jobs on this machine"):

- Detected once when the worker starts (`detect`), in this order:
  1. cgroup v2 with the `memory` and `cpu` controllers available in the worker's own cgroup
     and that cgroup writable (root, or a delegated subtree: systemd `Delegate=yes`);
  2. cgroup v1 with the `memory` and `cpu` hierarchies both writable at the worker's own
     cgroup in each;
  3. else nothing is enforced, and `why` says what was missing.
  Under v1 the `cpu` hierarchy counts no CPU time unless `cpuacct` is mounted with it
  (cpu,cpuacct): where `cpuacct` is a hierarchy of its own and writable, each replica gets a
  cgroup there too (created, joined and removed with the others), so its usage is read from
  the cgroup's cpuacct.usage, which counts every process of it, even one that left the
  replica's session (setsid), rather than added up from /proc. Enforcing needs none of it:
  without it usage is read from /proc.
  LOCAL_ENFORCE_LIMITS=off skips detection. Enforcing memory without CPU (or the reverse)
  is not offered: either both of a role's values hold, or the job says neither does.
- Every cgroup the console makes lies under the worker's own cgroup in each hierarchy
  (`<own>/ai-job-console/...`), never at a hierarchy's root, so an outer limit (the
  worker's unit, a container) still holds over every job.
- Every replica gets a cgroup, whether its role sets a CPU or memory value or not:
  `<own>/ai-job-console/<job public id>/attempt-<n>/<role>-<index>`, as the run directory
  names its files (a restart's attempt gets fresh cgroups, so the OOM count of one attempt
  is never read as the next one's). Memory: the role's GB as GiB (as shared memory is
  sized), swap 0 where the kernel accounts it; CPU: a CFS quota of the role's cores per
  100 ms period. A role without a value has no limit of that kind of its own, but is still
  under the jobs' parent (next point).
- The jobs' parent, `<own>/ai-job-console`, is held as the kubelet holds `kubepods` (its
  node's allocatable): memory to this machine's less LOCAL_RESERVED_MEMORY_GB (swap 0),
  so all jobs together, `/dev/shm` included (tmpfs pages are charged to the cgroup that
  wrote them), leave the console (web server, worker, database) its reserve; a job past it
  has one of its processes OOM-killed inside the parent, never the worker, which is
  outside. CPU by weight (decided): the parent gets a tenth of the default weight (v2
  cpu.weight 10 of 100, v1 cpu.shares 102 of 1024), so while the console's own processes
  want CPU they get it first, and jobs still use every core the console leaves idle; a
  hard reserve (LOCAL_RESERVED_CPUS, 0 by default) would take those cores from jobs even
  while the console sleeps, which on a 2-core machine halves them. With it set, the parent
  also gets a CFS quota of the machine's cores less it. Written at every worker start
  (a changed setting holds from then); failing to write them is logged, not fatal.
- The worker makes and sets up the cgroup before the spawn; the shim moves the replica's
  command into it between fork and exec, so no instruction of the command runs unlimited.
  The shim itself stays outside: its memory is not the job's, and a job running out of
  memory cannot get its supervisor killed (the replica would read as lost).
- A replica that ended non-zero while its cgroup counted an OOM kill was killed for its
  memory limit (v2 `memory.events` oom_kill, v1 `memory.oom_control` oom_kill). Exit code
  137 alone says nothing: a Stop's SIGKILL ends with 137 too.
- The cgroups of a job go when it ends (and an attempt's before the next one starts);
  those a worker restart finds for jobs that have ended are removed at its start. Only
  empty cgroups can be removed; a process stuck in the kernel keeps its cgroup until then.
- v2's "no internal processes" rule: controllers are enabled for children only in a cgroup
  without processes. When the worker's cgroup still holds processes (the worker itself,
  `manage.py serve` and gunicorn under one systemd unit), they are all moved into the leaf
  `<own>/ai-job-console-processes` first. A later worker started there (from `serve`)
  recognises the leaf and works from its parent. The root cgroup is never emptied so.
  That reshaping is done only to a cgroup delegated to the worker (systemd marks one with
  the xattr trusted.delegate=1), or one whose controllers an operator already enabled;
  a login session's or another unit's cgroup is left as its manager made it, and nothing
  is enforced there (the job says why).
- The number of processes: where the `pids` controller is there too (v1: a writable `pids`
  hierarchy; v2: `pids` available where memory and cpu are enabled), every replica gets a
  cgroup with `pids.max` = LOCAL_MAX_PROCESSES, whether or not its role sets CPU or memory:
  a command forking without end is refused more processes (EAGAIN) instead of taking every
  one the machine has. Without it nothing holds their number (the worker's log says so).
- Device nodes (cgroup v1 only): where a `devices` hierarchy is writable too (the worker as
  root: writing devices.deny needs CAP_SYS_ADMIN, tried once at detection), every replica
  gets a cgroup there that denies every device ("a") and allows back only the nodes
  bubblewrap's --dev gives every sandbox (null, zero, full, random, urandom, tty, ptmx and
  the pseudo-terminals) and the nodes bound for the replica's own cards and their control
  nodes, by their st_rdev: defence in depth behind the bind mounts (jobs.sandbox). Under v2
  devices are held by eBPF programs, which this console does not build: there the bind
  mounts alone hold (README "A replica sees only its own cards").
- No cpuset: CPU 独占 stays CPU affinity. With the quota, a process that resets its
  affinity still gets no more CPU time than its role's cores (see README).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from django.utils import translation
from django.utils.translation import gettext_noop

from .texts import Words, binary_size, display_text, joined, recorded, source_of

logger = logging.getLogger(__name__)

MODE_V2 = "cgroup v2"
MODE_V1 = "cgroup v1"
MODE_OFF = "off"  # LOCAL_ENFORCE_LIMITS=off
MODE_NONE = "none"  # nothing writable
JOBS_DIR = "ai-job-console"
PROCESSES_LEAF = "ai-job-console-processes"
CFS_PERIOD_US = 100_000
CONTROLLERS = ("memory", "cpu")
PIDS = "pids"  # optional: the number of processes (LOCAL_MAX_PROCESSES)
DEVICES = "devices"  # optional, v1 only: the device nodes a replica may open
# The nodes bubblewrap's --dev gives every sandbox, as (type, major, minor) of the kernel's
# fixed numbering (Documentation/admin-guide/devices.txt): null, zero, full, random, urandom,
# tty, ptmx, and the pseudo-terminals of the sandbox's own devpts (136-143, "*": any minor).
STANDARD_DEVICES = (
    ("c", "1", "3"),
    ("c", "1", "5"),
    ("c", "1", "7"),
    ("c", "1", "8"),
    ("c", "1", "9"),
    ("c", "5", "0"),
    ("c", "5", "2"),
    *(("c", str(major), "*") for major in range(136, 144)),
)


# The jobs' parent's CPU weight, a tenth of a sibling's default (the console's own processes).
JOBS_CPU_WEIGHT = 10  # v2 cpu.weight, default 100
JOBS_CPU_SHARES = 102  # v1 cpu.shares, default 1024


def gib(size: int) -> str:
    """Bytes as Kubernetes writes a quantity: GiB to a tenth ("21.1Gi"), under 1 GiB in MiB."""
    if size < 1024**3:
        return f"{round(size / 1024**2)}Mi"
    return f"{size / 1024**3:.1f}".removesuffix(".0") + "Gi"


class CgroupError(Exception):
    """A replica's cgroup cannot be set up; the message is safe to show the user."""


@dataclass(frozen=True)
class Enforcement:
    """How this worker enforces roles' CPU and memory: `mode`, and where its cgroups go
    (v2: one folder for both; v1: one per hierarchy), or `why` it does not."""

    mode: str
    why: str = ""  # a recorded text when nothing is enforced
    memory_root: Path | None = None  # .../<own>/ai-job-console
    cpu_root: Path | None = None
    # v1 only, when cpuacct is a hierarchy of its own (co-mounted, the cpu cgroup counts).
    cpuacct_root: Path | None = None
    # Where replicas' `pids` cgroups go: v2 the same folder when `pids` is enabled there;
    # v1 the pids hierarchy's. None: the number of processes is not held.
    pids_root: Path | None = None
    # v1 only: where replicas' `devices` cgroups go (their device allow-list). None: only
    # the sandbox's bind mounts hold which device nodes a replica reaches.
    devices_root: Path | None = None
    # What the jobs' parent (memory_root, cpu_root) is held to (hold_jobs): all local jobs'
    # memory together in bytes, and their CPU quota in cores (None: no quota, weight only);
    # `parent_problem`: why it could not be written ("" when it was).
    jobs_memory_bytes: int | None = None
    jobs_cpu_cores: float | None = None
    parent_problem: str = ""
    # Where the memory the worker has is less than the machine's: the cgroup whose limit it
    # is (memory_available); "" where it is the machine's.
    memory_limited_by: str = ""
    # The same, apart, for a job's OOM reason (shared_memory_oom_reason): the memory the
    # worker has (None: not worked out), and the cgroup whose limit it is ("": the machine's).
    memory_available_bytes: int | None = None
    memory_limit_cgroup: str = ""

    @property
    def active(self) -> bool:
        return self.mode in (MODE_V1, MODE_V2)

    def describe(self) -> str:
        """For the worker's log (in English, like the rest of it)."""
        processes = "" if self.pids_root else "; the number of processes is not held (no pids)"
        if self.mode == MODE_V2:
            return f"enforced with cgroup v2 under {self.memory_root}{processes}; {self.reserve()}"
        if self.mode == MODE_V1:
            roots = ", ".join(str(root) for root in self.roots())
            devices = "" if self.devices_root else "; no device allow-list (no devices)"
            return f"enforced with cgroup v1 under {roots}{processes}{devices}; {self.reserve()}"
        return (
            f"not enforced: {_in_english(self.why)}; "
            "local jobs together are not held (no reserve for the console)"
        )

    def reserve(self) -> str:
        """What all local jobs together are held to, for the worker's log."""
        if self.parent_problem:
            return f"local jobs together are not held: {self.parent_problem}"
        memory = gib(self.jobs_memory_bytes) if self.jobs_memory_bytes else "no limit"
        if self.memory_limited_by:
            memory += f" (of the limit of {self.memory_limited_by})"
        cpu = (
            f"at most {self.jobs_cpu_cores:g} cores"
            if self.jobs_cpu_cores is not None
            else "no CPU quota"
        )
        return (
            f"local jobs together: memory {memory} (LOCAL_RESERVED_MEMORY_GB kept for the "
            f"console), CPU a tenth of the console's weight, {cpu} (LOCAL_RESERVED_CPUS)"
        )

    def roots(self) -> list[Path]:
        if self.mode == MODE_V2 and self.memory_root:
            return [self.memory_root]
        return [
            root
            for root in (
                self.memory_root,
                self.cpu_root,
                self.cpuacct_root,
                self.pids_root,
                self.devices_root,
            )
            if root
        ]


# -- reading /proc -----------------------------------------------------------------------


@dataclass(frozen=True)
class CgroupMount:
    version: int  # 1 or 2
    root: str  # the cgroup the mount shows at its mount point
    mount_point: Path
    controllers: frozenset[str]  # v1: the hierarchy's; v2: empty (see cgroup.controllers)


def own_cgroups(proc_cgroup: str) -> dict[str, str]:
    """The worker's cgroup per v1 controller, and under "" its v2 cgroup, from the text of
    /proc/self/cgroup ("4:memory:/a/b", "1:cpu,cpuacct:/", "0::/system.slice/x.service")."""
    found: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and not controllers:
            found[""] = path
        for name in controllers.split(","):
            if name:
                found[name] = path
    return found


def cgroup_mounts(mountinfo: str) -> list[CgroupMount]:
    """The cgroup file systems in the text of /proc/self/mountinfo."""
    mounts = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        if len(fields) < dash + 4 or dash < 5:
            continue
        fstype, options = fields[dash + 1], fields[dash + 3].split(",")
        point = Path(fields[4].replace("\\040", " "))
        if fstype == "cgroup2":
            mounts.append(CgroupMount(2, fields[3], point, frozenset()))
        elif fstype == "cgroup":
            mounts.append(CgroupMount(1, fields[3], point, frozenset(options) - {"rw", "ro"}))
    return mounts


def folder_of(own: str, mount: CgroupMount) -> Path | None:
    """Where the cgroup `own` is under `mount`, None if the mount does not show it."""
    root = mount.root.rstrip("/")
    if own != root and not own.startswith(root + "/"):
        return None
    return mount.mount_point / own[len(root) :].lstrip("/")


# -- detection -----------------------------------------------------------------------


def detect(
    *, setting: str, proc_cgroup: str | None = None, mountinfo: str | None = None
) -> Enforcement:
    """What this worker can enforce. Sets up what v2 needs (see the module's notes), so call
    it in the worker only."""
    if setting == "off":
        return Enforcement(
            MODE_OFF, why=recorded(gettext_noop("turned off (LOCAL_ENFORCE_LIMITS=off)"))
        )
    if proc_cgroup is None:
        proc_cgroup = _read("/proc/self/cgroup")
    if mountinfo is None:
        mountinfo = _read("/proc/self/mountinfo")
    own = own_cgroups(proc_cgroup)
    mounts = cgroup_mounts(mountinfo)
    reasons = []
    v2 = next((m for m in mounts if m.version == 2), None)
    if v2 is not None and "" in own:
        try:
            root = _set_up_v2(own[""], v2)
            pids = PIDS in _read(root / "cgroup.subtree_control").split()
            return Enforcement(
                MODE_V2, memory_root=root, cpu_root=root, pids_root=root if pids else None
            )
        except CgroupError as exc:
            reasons.append(exc.args[0])
    if any(m.version == 1 for m in mounts):  # (a pure v2 host: only v2's reason is told)
        try:
            memory_root, cpu_root = (_set_up_v1(name, own, mounts) for name in CONTROLLERS)
            return Enforcement(
                MODE_V1,
                memory_root=memory_root,
                cpu_root=cpu_root,
                cpuacct_root=_cpuacct_v1(own, mounts),
                pids_root=_pids_v1(own, mounts),
                devices_root=_devices_v1(own, mounts),
            )
        except CgroupError as exc:
            reasons.append(exc.args[0])
    if not reasons:
        reasons.append(recorded(gettext_noop("no cgroup file system is mounted")))
    return Enforcement(MODE_NONE, why=joined(*reasons, sep="; "))


def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _set_up_v2(own: str, mount: CgroupMount) -> Path:
    """The folder for the console's cgroups in the v2 hierarchy, made ready; raises
    CgroupError (with the reason) when the worker cannot use it."""
    folder = folder_of(own, mount)
    if folder is None:
        raise CgroupError(
            recorded(
                gettext_noop("cgroup v2: the worker's cgroup %(cgroup)s is not visible"),
                cgroup=own,
            )
        )
    if folder.name == PROCESSES_LEAF:  # moved there by an earlier worker
        folder = folder.parent
    available = _read(folder / "cgroup.controllers").split()
    if missing := [c for c in CONTROLLERS if c not in available]:
        raise CgroupError(
            recorded(
                gettext_noop(
                    "cgroup v2: the worker's cgroup %(cgroup)s lacks the controllers "
                    "%(missing)s (it has: %(available)s)"
                ),
                missing=Words(tuple(missing)),
                cgroup=folder,
                available=" ".join(available) or "-",
            )
        )
    if not _enabled(folder) and folder != mount.mount_point and not _delegated(folder):
        # Moving a cgroup's processes and enabling its controllers is its manager's business
        # (systemd's, for a unit or a login session): done uninvited it can break how that
        # manager stops or accounts them. Only a cgroup given to the worker is reshaped.
        raise CgroupError(
            recorded(
                gettext_noop(
                    "cgroup v2: the worker's cgroup %(cgroup)s is not delegated to it; "
                    "run the worker in a systemd unit with Delegate=yes"
                ),
                cgroup=folder,
            )
        )
    try:
        if not _enabled(folder):
            if folder != mount.mount_point:  # never empty the root cgroup
                _move_processes(folder, folder / PROCESSES_LEAF)
            _enable(folder)
        elif _delegated(folder):
            # Set up by a release that enabled memory and cpu only: pids as well, if it can.
            with contextlib.suppress(OSError):
                _enable(folder)
        jobs = folder / JOBS_DIR
        jobs.mkdir(exist_ok=True)
        _check_writable(jobs)
        _enable(jobs)
    except OSError as exc:
        raise CgroupError(
            recorded(
                gettext_noop(
                    "cgroup v2: the worker cannot use its cgroup %(cgroup)s (%(error)s); "
                    "it needs a delegated cgroup, e.g. Delegate=yes in its systemd unit"
                ),
                cgroup=folder,
                error=exc.strerror or exc,
            )
        ) from None
    return jobs


def _check_writable(jobs: Path) -> None:
    """Raises PermissionError unless the worker can make its jobs' cgroups in `jobs`.

    The folder may be there already, made by a worker run as another user (root, before
    the worker was moved to an unprivileged one): finding it is not being able to use it,
    and every job asking for a CPU or memory value would then fail to start instead of
    running with its limits not enforced."""
    if not os.access(jobs, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(jobs))


def _delegated(folder: Path) -> bool:
    """Whether `folder` was delegated: systemd (since v251) marks a Delegate=yes unit's
    cgroup with the extended attribute trusted.delegate=1 (user.delegate=1 for a user
    manager's)."""
    for name in ("trusted.delegate", "user.delegate"):
        try:
            if os.getxattr(folder, name) == b"1":
                return True
        except OSError:
            continue
    return False


def _enabled(folder: Path) -> bool:
    return set(CONTROLLERS) <= set(_read(folder / "cgroup.subtree_control").split())


def _enable(folder: Path) -> None:
    """Enables memory and cpu for the children of `folder`, and pids where it is available
    (not required: without it only the number of processes goes unheld)."""
    wanted = [
        *CONTROLLERS,
        *([PIDS] if PIDS in _read(folder / "cgroup.controllers").split() else []),
    ]
    enabled = _read(folder / "cgroup.subtree_control").split()
    if missing := [c for c in wanted if c not in enabled]:
        (folder / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))


def _move_processes(source: Path, leaf: Path) -> None:
    """Moves every process of `source` into `leaf` (a few rounds: one may fork meanwhile)."""
    leaf.mkdir(exist_ok=True)
    for _ in range(5):
        pids = _read(source / "cgroup.procs").split()
        if not pids:
            return
        for pid in pids:
            try:
                (leaf / "cgroup.procs").write_text(pid)
            except ProcessLookupError:
                continue  # it ended
            except OSError as exc:
                if exc.errno != errno.ESRCH:
                    raise


def _set_up_v1(controller: str, own: dict[str, str], mounts: list[CgroupMount]) -> Path:
    mount = next((m for m in mounts if m.version == 1 and controller in m.controllers), None)
    if mount is None or controller not in own:
        raise CgroupError(
            recorded(
                gettext_noop("cgroup v1: no %(controller)s hierarchy is mounted"),
                controller=controller,
            )
        )
    folder = folder_of(own[controller], mount)
    if folder is None:
        raise CgroupError(
            recorded(
                gettext_noop("cgroup v1: the worker's %(controller)s cgroup is not visible"),
                controller=controller,
            )
        )
    jobs = folder / JOBS_DIR
    try:
        jobs.mkdir(exist_ok=True)
        _check_writable(jobs)
    except OSError as exc:
        raise CgroupError(
            recorded(
                gettext_noop("cgroup v1: the worker cannot create %(path)s (%(error)s)"),
                path=jobs,
                error=exc.strerror or exc,
            )
        ) from None
    return jobs


def _in_english(text: str) -> str:
    """A recorded text (a CgroupError's) as the worker's log says it: in English, like the
    rest of the log, whatever language the worker runs in."""
    with translation.override("en"):
        return display_text(text, source_of(text))


def _cpuacct_v1(own: dict[str, str], mounts: list[CgroupMount]) -> Path | None:
    """Where replicas' cpuacct cgroups go under v1: None when cpuacct is mounted with cpu
    (the replica's cpu cgroup counts its CPU time then), or is not there or not writable
    (its usage is then read from /proc)."""
    if any(m.version == 1 and {"cpu", "cpuacct"} <= m.controllers for m in mounts):
        return None
    try:
        return _set_up_v1("cpuacct", own, mounts)
    except CgroupError as exc:
        logger.info("CPU usage of replicas read from /proc: %s", _in_english(exc.args[0]))
        return None


def _pids_v1(own: dict[str, str], mounts: list[CgroupMount]) -> Path | None:
    """Where replicas' pids cgroups go under v1; None when there is no writable pids
    hierarchy (then the number of a replica's processes is not held)."""
    try:
        return _set_up_v1(PIDS, own, mounts)
    except CgroupError as exc:
        logger.warning(
            "The number of a replica's processes is not held (LOCAL_MAX_PROCESSES): %s",
            _in_english(exc.args[0]),
        )
        return None


def _devices_v1(own: dict[str, str], mounts: list[CgroupMount]) -> Path | None:
    """Where replicas' devices cgroups go under v1; None when there is no writable devices
    hierarchy, or the worker may not restrict devices in it (devices.deny needs
    CAP_SYS_ADMIN: tried on a probe cgroup, removed at once)."""
    try:
        root = _set_up_v1(DEVICES, own, mounts)
    except CgroupError as exc:
        logger.info(
            "No device allow-list for replicas (only their bind mounts): %s",
            _in_english(exc.args[0]),
        )
        return None
    probe = root / f".probe-{os.getpid()}"
    try:
        probe.mkdir(exist_ok=True)
        try:
            (probe / "devices.deny").write_text("a")
        finally:
            probe.rmdir()
    except OSError as exc:
        logger.warning(
            "No device allow-list for replicas (only their bind mounts): %s: %s", probe, exc
        )
        return None
    return root


def device_rules(nodes: list[tuple[str, int]]) -> list[str]:
    """The devices.allow lines of a replica: the standard nodes, then each of `nodes`, the
    (type "c" or "b", st_rdev) of the device nodes bound for its cards, "rwm" as a container
    runtime allows a device it passes in (m: mknod, which no job can do anyway)."""
    rules = [f"{kind} {major}:{minor} rwm" for kind, major, minor in STANDARD_DEVICES]
    for kind, rdev in nodes:
        rule = f"{kind} {os.major(rdev)}:{os.minor(rdev)} rwm"
        if rule not in rules:
            rules.append(rule)
    return rules


def device_nodes(paths: list[str]) -> list[tuple[str, int]]:
    """(type, st_rdev) of the device nodes among `paths` (host paths bound into a sandbox),
    read now. Anything else (a regular file: the tests' stand-ins) is not a device and
    needs no rule."""
    found: list[tuple[str, int]] = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            continue
        if stat.S_ISCHR(info.st_mode):
            found.append(("c", info.st_rdev))
        elif stat.S_ISBLK(info.st_mode):
            found.append(("b", info.st_rdev))
    return found


# The worker's finding, kept for the rest of the process (jobs.runner reads it).
_current: Enforcement | None = None


def current() -> Enforcement:
    """What this process enforces; detected on first use (the worker detects at its start)."""
    return _current or redetect()


def redetect() -> Enforcement:
    from django.conf import settings

    global _current
    found = detect(setting=settings.LOCAL_ENFORCE_LIMITS)
    if found.active:
        found = hold_jobs_to_reserve(
            found,
            reserved_memory_gb=settings.LOCAL_RESERVED_MEMORY_GB,
            reserved_cpus=settings.LOCAL_RESERVED_CPUS,
        )
    _current = found
    return _current


def hold_jobs_to_reserve(
    enforcement: Enforcement, *, reserved_memory_gb: float | None, reserved_cpus: float
) -> Enforcement:
    """hold_jobs with the memory the worker has (memory_available) less the reserve
    (reserve_bytes), and the machine's cores less `reserved_cpus` (0: no quota)."""
    available, limited_by = memory_available(enforcement)
    reserve = reserve_bytes(available, reserved_memory_gb)
    cpu_cores = (os.cpu_count() or 1) - reserved_cpus if reserved_cpus else None
    enforcement = replace(enforcement, memory_available_bytes=available)
    if limited_by != "MemTotal":
        enforcement = replace(
            enforcement,
            memory_limited_by=f"{limited_by}, {gib(available)}",
            memory_limit_cgroup=str(limited_by),
        )
    if available - reserve > 0:
        return hold_jobs(enforcement, memory_bytes=available - reserve, cpu_cores=cpu_cores)
    # Only where the worker's cgroup (or an ancestor's) holds less than the machine:
    # console.settings refuses a reserve not below MemTotal. The parent's memory limit is
    # lifted (an earlier start's would no longer mean anything); its CPU is still held.
    held = hold_jobs(enforcement, memory_bytes=None, cpu_cores=cpu_cores)
    problem = (
        f"LOCAL_RESERVED_MEMORY_GB ({reserve / 1024**3:g} GB) is not less than the memory "
        f"the worker has, {gib(available)} ({limited_by}'s limit)"
    )
    logger.warning("Local jobs together are not held: %s", problem)
    return replace(held, parent_problem=held.parent_problem or problem)


def shared_memory_oom_reason(enforcement: Enforcement) -> str:
    """Why a job killed past the memory all local jobs share failed: that memory, and what it
    is, the machine's memory or the limit of the worker's cgroup (or an ancestor's) where that
    is smaller (memory_available), less LOCAL_RESERVED_MEMORY_GB. Until QA 23's follow-up the
    reason named the machine's memory even where a cgroup's limit was the smaller; reasons
    recorded so stay as they were (their message is kept in jobs.texts.REWORDED).

    The amounts are measured, so said as the job page says a replica's memory (Django's
    binary_size, "2.5 GiB"; README "What a job gets"): until fix90a in Kubernetes' "2.5Gi",
    which the worker's log keeps (gib)."""
    limit = binary_size(enforcement.jobs_memory_bytes or 0)
    available = binary_size(enforcement.memory_available_bytes or machine_memory_bytes())
    if enforcement.memory_limit_cgroup:
        return recorded(
            gettext_noop(
                "OOMKilled: the memory all local jobs share, %(limit)s (the memory limit of the "
                "worker's cgroup %(cgroup)s, %(available)s, less LOCAL_RESERVED_MEMORY_GB), ran "
                "out"
            ),
            limit=limit,
            cgroup=enforcement.memory_limit_cgroup,
            available=available,
        )
    return recorded(
        gettext_noop(
            "OOMKilled: the memory all local jobs share, %(limit)s (this machine's memory, "
            "%(available)s, less LOCAL_RESERVED_MEMORY_GB), ran out"
        ),
        limit=limit,
        available=available,
    )


def machine_memory_bytes() -> int:
    """This machine's memory (MemTotal), as console.settings checks the reserve against."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def memory_available(enforcement: Enforcement) -> tuple[int, Path | str]:
    """The memory the worker and its jobs have, and what holds them to it: the machine's
    (MemTotal), or less where the worker's own cgroup or any of its ancestors has a memory
    limit (its systemd unit's MemoryMax=, a container's limit, a slice's). Decided: the jobs'
    parent is held to this less the reserve; held to MemTotal less it, a worker in a 4 GB unit
    on a 64 GB machine would give its jobs a limit its unit never lets them reach, and they
    would take all 4 GB from the console, the reserve protecting nothing. Read from the jobs'
    parent's own parent upwards, up to the hierarchy's top one that has the file (v2's root
    cgroup has no memory.max; above v1's mount point there is no cgroup)."""
    assert enforcement.memory_root
    name = "memory.max" if enforcement.mode == MODE_V2 else "memory.limit_in_bytes"
    available: int = machine_memory_bytes()
    limited_by: Path | str = "MemTotal"
    folder = enforcement.memory_root.parent
    while (folder / name).exists():
        value = _read(folder / name).strip()  # "max" (v2), or v1's 9223372036854771712
        if value.isdigit() and int(value) < available:
            available, limited_by = int(value), folder
        if folder.parent == folder:
            break
        folder = folder.parent
    return available, limited_by


def reserve_bytes(available: int, setting: float | None) -> int:
    """LOCAL_RESERVED_MEMORY_GB in bytes; unset (None), 10% of `available`, at least 2 GiB,
    at most half of it, to a tenth of a GiB (README, "All jobs together leave the console its
    share"). Of what the worker has, not of the machine: a default of the machine's would
    leave a worker limited to less nothing, or nothing for its jobs."""
    if setting is None:
        gb = available / 1024**3
        setting = round(min(max(2.0, gb * 0.10), gb / 2), 1)
    return int(setting * 1024**3)


def hold_jobs(
    enforcement: Enforcement, *, memory_bytes: int | None, cpu_cores: float | None
) -> Enforcement:
    """Holds the jobs' parent (every replica's cgroup is under it) to `memory_bytes` of
    memory (None: no limit of its own), a tenth of the console's CPU weight and, unless None, a quota of `cpu_cores`
    (see the module's notes). Returns the enforcement saying what holds; a parent that
    cannot be written is logged, and said by describe(), and jobs run as before."""
    assert enforcement.memory_root and enforcement.cpu_root
    memory, cpu = enforcement.memory_root, enforcement.cpu_root
    quota = f"{int(cpu_cores * CFS_PERIOD_US)}" if cpu_cores is not None else None
    try:
        if enforcement.mode == MODE_V2:
            (memory / "memory.max").write_text(str(memory_bytes or "max"))
            if (memory / "memory.swap.max").exists():
                (memory / "memory.swap.max").write_text("0")
            (cpu / "cpu.weight").write_text(str(JOBS_CPU_WEIGHT))
            (cpu / "cpu.max").write_text(f"{quota or 'max'} {CFS_PERIOD_US}")
        else:
            memory_bytes = _hold_memory_v1(memory, memory_bytes)
            (cpu / "cpu.shares").write_text(str(JOBS_CPU_SHARES))
            (cpu / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            try:
                (cpu / "cpu.cfs_quota_us").write_text(quota or "-1")
            except OSError as exc:
                # v1 refuses a parent's quota below one a running replica has (its role asks
                # more cores): memory and weight hold; the quota from a start without such.
                if exc.errno != errno.EINVAL:
                    raise
                logger.warning("Local jobs' CPU quota not set: a running replica has more")
                cpu_cores = None
    except OSError as exc:
        logger.warning("Local jobs together are not held (%s): %s", memory, exc)
        return replace(enforcement, parent_problem=f"{exc.filename or memory}: {exc.strerror}")
    return replace(enforcement, jobs_memory_bytes=memory_bytes, jobs_cpu_cores=cpu_cores)


def _hold_memory_v1(memory: Path, memory_bytes: int | None) -> int | None:
    """Sets the v1 jobs' parent's memory (and memory plus swap) to `memory_bytes` (None: no
    limit); returns the limit that holds. v1 refuses a limit below what the jobs there use
    now (EBUSY, once it cannot reclaim enough: a worker restarted with a larger reserve while
    they run): the limit held before stays, memory plus swap too, the CPU is still held, and
    the next start sets it (as for a CPU quota below a running replica's). Decided: rather
    than the whole parent left unheld, its swap limit lifted, for the jobs' whole run."""
    memsw = memory / "memory.memsw.limit_in_bytes"
    swap_before = _read(memsw).strip()
    # Memory plus swap may never be below memory alone: lifted first, then set.
    with contextlib.suppress(OSError):
        memsw.write_text("-1")
    try:
        (memory / "memory.limit_in_bytes").write_text(str(memory_bytes or -1))
    except OSError as exc:
        if exc.errno != errno.EBUSY or not memory_bytes:
            raise
        with contextlib.suppress(OSError):
            if swap_before:
                memsw.write_text(swap_before)
        logger.warning(
            "Local jobs' memory limit not lowered to %s: they use more now (the next start)",
            gib(memory_bytes),
        )
        held = _read(memory / "memory.limit_in_bytes").strip()
        return int(held) if held.isdigit() and int(held) < 2**62 else None
    with contextlib.suppress(OSError):
        memsw.write_text(str(memory_bytes or -1))
    return memory_bytes


# -- one replica -----------------------------------------------------------------------


def replica_folders(
    enforcement: Enforcement, *, public_id: str, attempt: int, label: str
) -> list[Path]:
    """The replica's cgroup in each hierarchy the mode uses (one under v2)."""
    return [root / public_id / f"attempt-{attempt}" / label for root in enforcement.roots()]


# The cgroup of an attempt's network helpers (LOCAL_JOB_NETWORK=isolated-outbound), beside its
# replicas' (`<role>-<index>`, which always ends in a number).
NETWORK_LABEL = "network"


def hold_network_helpers(
    enforcement: Enforcement, *, public_id: str, attempt: int, pids: list[int]
) -> bool:
    """Moves an attempt's network namespace holder and its slirp4netns into
    `<jobs' parent>/<public id>/attempt-<n>/network` (memory and cpu; v1: each hierarchy's).

    Decided: slirp4netns's memory is the job's traffic (its buffers grow with what the job
    sends and receives), so it is held with the jobs, under their parent, not left in the
    worker's cgroup where a job flooding it would take from the console's reserve; a job
    that makes it run out of memory loses its own network. No limit of its own: the parent's
    holds. Its CPU likewise gets the jobs' weight. Not fatal: one that cannot be moved
    (logged) runs in the worker's cgroup, as before. Removed with the job's other cgroups
    once the holder is ended (end_networks before remove_job_cgroups)."""
    if not enforcement.active:
        return False
    roots = {enforcement.memory_root, enforcement.cpu_root} - {None}
    try:
        for root in sorted(roots):
            folder = root / public_id / f"attempt-{attempt}" / NETWORK_LABEL
            if enforcement.mode == MODE_V2:  # controllers on the way down, as for a replica
                for parent in (folder.parent.parent, folder.parent):
                    parent.mkdir(exist_ok=True)
                    _enable(parent)
            folder.mkdir(parents=True, exist_ok=True)
            for pid in pids:
                try:
                    (folder / "cgroup.procs").write_text(str(pid))
                except ProcessLookupError:
                    continue  # it ended (slirp4netns after its holder)
    except OSError as exc:
        logger.warning("%s: network helpers left in the worker's cgroup: %s", public_id, exc)
        return False
    return True


def create_replica_cgroup(
    enforcement: Enforcement,
    *,
    public_id: str,
    attempt: int,
    label: str,
    memory_bytes: int | None,
    cpu_cores: int | None,
    max_processes: int | None = None,
    devices: list[str] | None = None,
) -> list[Path]:
    """Makes the replica's cgroup with its limits; returns the folders its command joins
    (the shim writes it into each). `max_processes` is set where the enforcement holds
    the number of processes (pids_root). `devices` are the lines of the replica's device
    allow-list (device_rules), set where the enforcement has a devices hierarchy
    (devices_root); None: no device cgroup. Raises CgroupError."""
    folders = replica_folders(enforcement, public_id=public_id, attempt=attempt, label=label)
    try:
        if enforcement.mode == MODE_V2:
            [folder] = folders
            for parent in (folder.parent.parent, folder.parent):
                parent.mkdir(exist_ok=True)
                _enable(parent)
            folder.mkdir(exist_ok=True)
            if memory_bytes is not None:
                (folder / "memory.max").write_text(str(memory_bytes))
                if (folder / "memory.swap.max").exists():
                    (folder / "memory.swap.max").write_text("0")
            if cpu_cores is not None:
                (folder / "cpu.max").write_text(f"{cpu_cores * CFS_PERIOD_US} {CFS_PERIOD_US}")
            if max_processes and enforcement.pids_root:
                (folder / "pids.max").write_text(str(max_processes))
            return folders
        by_root = dict(zip(enforcement.roots(), folders, strict=True))
        pids = by_root.get(enforcement.pids_root) if enforcement.pids_root else None
        device_folder = (
            by_root.get(enforcement.devices_root)
            if enforcement.devices_root and devices is not None
            else None
        )
        pids_held = pids if max_processes else None
        # Every replica, with or without values, joins its memory and cpu cgroups: under the
        # jobs' parent, which holds all of them to what the console does not keep for itself.
        folders = [f for f in folders if f != by_root.get(enforcement.devices_root)]
        folders += [device_folder] if device_folder else []
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
        if memory_bytes is not None:
            memory = by_root[enforcement.memory_root]
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            # Memory plus swap: no more than the memory itself (no swapping past the
            # limit). Absent, or refused, when the kernel does not account swap.
            with contextlib.suppress(OSError):
                (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        if cpu_cores is not None:
            cpu = by_root[enforcement.cpu_root]
            (cpu / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            try:
                (cpu / "cpu.cfs_quota_us").write_text(str(cpu_cores * CFS_PERIOD_US))
            except OSError as exc:
                # v1 refuses a quota above an outer one (the worker's own container):
                # that lower limit holds over the replica anyway.
                if exc.errno != errno.EINVAL:
                    raise
                logger.info("%s: CPU quota above the worker's own; left to it", label)
        if pids_held is not None and pids_held in folders:
            (pids_held / "pids.max").write_text(str(max_processes))
        if device_folder is not None:
            _allow_only(device_folder, devices or [], label=label)
    except OSError as exc:
        raise CgroupError(
            recorded(
                gettext_noop(
                    "could not set up the CPU and memory limits of %(replica)s: %(error)s"
                ),
                replica=label,
                error=exc,
            )
        ) from None
    return folders


def _allow_only(folder: Path, rules: list[str], *, label: str) -> None:
    """Sets a v1 devices cgroup to deny every device but `rules`. The deny must hold (an
    OSError otherwise); an allow the worker's own cgroup lacks is refused by the kernel
    (EPERM: a child gets no more than its parent), and a replica could not open that node
    anyway, so it is logged and skipped."""
    (folder / "devices.deny").write_text("a")
    for rule in rules:
        try:
            (folder / "devices.allow").write_text(rule)
        except OSError as exc:
            logger.info("%s: device %s not allowed to the worker itself: %s", label, rule, exc)


def oom_killed(enforcement: Enforcement, *, public_id: str, attempt: int, label: str) -> bool:
    """Whether the kernel killed a process of the replica for its memory limit."""
    if not enforcement.memory_root:
        return False
    folder = replica_folders(enforcement, public_id=public_id, attempt=attempt, label=label)[0]
    if enforcement.mode == MODE_V2:
        return _count(_read(folder / "memory.events"), "oom_kill") > 0
    control = _read(folder / "memory.oom_control")
    if "oom_kill " in control:
        return _count(control, "oom_kill") > 0
    # Kernels before 4.13 do not count kills: reaching the limit with the replica failing
    # is the best sign there is.
    return _count(f"failcnt {_read(folder / 'memory.failcnt')}", "failcnt") > 0


def own_limit_reached(
    enforcement: Enforcement, *, public_id: str, attempt: int, label: str
) -> bool:
    """Whether the replica's own memory limit (its role's value) was reached, rather than the
    jobs' parent's: the kernel counts a limit's hits in the cgroup whose limit it is (v2
    memory.events "oom", raised in that cgroup and its ancestors only; v1 memory.failcnt, or
    memory.memsw.failcnt where swap is accounted: memory plus swap is charged first, and
    both limits are the same; else its peak use at its limit)."""
    if not enforcement.memory_root:
        return False
    folder = replica_folders(enforcement, public_id=public_id, attempt=attempt, label=label)[0]
    if enforcement.mode == MODE_V2:
        return _count(_read(folder / "memory.events"), "oom") > 0
    if any(
        _count(f"failcnt {_read(folder / name)}", "failcnt") > 0
        for name in ("memory.failcnt", "memory.memsw.failcnt")
    ):
        return True
    # Where the hits are not counted (gVisor's cgroups count none), its use having reached
    # its own limit says the same.
    peak = _count(f"peak {_read(folder / 'memory.max_usage_in_bytes')}", "peak")
    limit = _count(f"limit {_read(folder / 'memory.limit_in_bytes')}", "limit")
    return 0 < limit <= peak


def _count(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


# -- removal -----------------------------------------------------------------------


def remove_job_cgroups(enforcement: Enforcement, *, public_id: str) -> bool:
    """Removes the job's cgroups (deepest first); True when none is left. A cgroup that still
    has a process cannot be removed: it stays, for the sweep at the next worker start."""
    left = False
    for root in enforcement.roots():
        job = root / public_id
        if not job.is_dir():
            continue
        for folder in sorted(_cgroup_tree(job), key=lambda p: len(p.parts), reverse=True):
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                left = True
                logger.warning("%s: cannot remove cgroup %s: %s", public_id, folder, exc)
    return not left


def _cgroup_tree(folder: Path) -> list[Path]:
    """`folder` and its sub-cgroups (a cgroup's files are plain files, its children folders)."""
    found = [folder]
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                found += _cgroup_tree(Path(entry.path))
    return found


def job_ids_with_cgroups(enforcement: Enforcement) -> set[str]:
    found: set[str] = set()
    for root in enforcement.roots():
        with contextlib.suppress(OSError):
            found.update(e.name for e in os.scandir(root) if e.is_dir(follow_symlinks=False))
    return found
