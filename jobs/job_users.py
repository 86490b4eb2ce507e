"""Which host user a local job runs as (LOCAL_JOB_UID_BASE, LOCAL_JOB_GID).

Unset, a replica runs as the worker's user, as it always has (uid 0 for a worker run as
root). Set, the worker is root and each console user's local jobs run as host uid
LOCAL_JOB_UID_BASE + that user's id, in group LOCAL_JOB_GID (each job's gid is its uid when
that is unset): the replica's shim drops to that user between fork and exec, after it has
moved the command into its cgroups and network namespace (which need root), and bubblewrap
then runs unprivileged, as for a worker not run as root. So a job owns no file of root's,
and one user's jobs cannot change another's files on a shared volume unless the file's group
bits let them; a user's successive jobs share a uid, and so their own files.

What the worker checks at its start (`problems`), refusing to run otherwise: it runs as
root (no other user can change its uid); LOCAL_JOB_GID names a group of this machine that is
not a system group; no user, group or subordinate id range (/etc/subuid, /etc/subgid, used
by rootless containers) of this machine lies in the jobs' range (from the base up); every
folder above LOCAL_RUN_DIR and each volume's folder can be entered by the jobs' user
(bubblewrap, run as that user, finds each folder it binds by its path).
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils.translation import gettext, gettext_noop

from .sandbox import may_access, reach_problem
from .texts import said_here

if TYPE_CHECKING:
    from .spec import JobSpec

# The highest uid Linux gives a process is 2^32-2, but many programs (and the kernel's own
# checks in places) treat uids as signed 32-bit numbers: the jobs' uids stay below 2^31-1.
HIGHEST_UID = 2**31 - 2
# Debian's system groups (SYS_GID_MAX in /etc/login.defs) are below 1000: shadow reads
# /etc/shadow, disk the raw disks, docker the Docker daemon. A job in one of them would
# have what that group has.
LOWEST_GID = 1000


class JobUserError(Exception):
    """The job cannot run as its owner's user: it fails to start with this reason, said in
    the language active where it is raised and kept with its message (texts.said_here), so
    the job's recorded reason is said in each reader's language."""


def enabled() -> bool:
    return settings.LOCAL_JOB_UID_BASE is not None


def job_uid(*, owner_id: int) -> int | None:
    """The host uid a console user's local jobs run as, or None when jobs run as the
    worker's user (the setting unset) or the user's id is past the highest (HIGHEST_UID)."""
    if not enabled():
        return None
    uid = settings.LOCAL_JOB_UID_BASE + owner_id
    return uid if uid <= HIGHEST_UID else None


def job_gid_setting() -> int | None:
    """LOCAL_JOB_GID as a gid (None: unset); raises JobUserError when it names no group."""
    value = settings.LOCAL_JOB_GID
    if not value:
        return None
    try:
        return int(value) if value.isdigit() else grp.getgrnam(value).gr_gid
    except KeyError:
        raise JobUserError(
            said_here(
                gettext_noop("LOCAL_JOB_GID=%(value)s is no group of this machine"), value=value
            )
        ) from None


def user_for(*, owner_id: int) -> tuple[int, int] | None:
    """(uid, gid) a job of this owner's runs as, None when jobs run as the worker's user.
    Raises JobUserError when it cannot run as its own user: never as someone else."""
    if not enabled():
        return None
    uid = settings.LOCAL_JOB_UID_BASE + owner_id
    if uid > HIGHEST_UID:
        raise JobUserError(
            said_here(
                gettext_noop(
                    "its owner's uid would be %(uid)s (LOCAL_JOB_UID_BASE=%(base)s + user id "
                    "%(id)s), past the highest a job may have, %(highest)s"
                ),
                uid=uid,
                base=settings.LOCAL_JOB_UID_BASE,
                id=owner_id,
                highest=HIGHEST_UID,
            )
        )
    # A user of this machine added since the worker started, with an id in the jobs' range:
    # the job would own that user's files.
    try:
        taken = pwd.getpwuid(uid).pw_name
    except KeyError:
        taken = None
    if taken is not None:
        raise JobUserError(
            said_here(
                gettext_noop(
                    "its owner's uid %(uid)s belongs to the user %(name)s of this machine"
                ),
                uid=uid,
                name=taken,
            )
        )
    gid = job_gid_setting()
    if gid is not None:
        return uid, gid
    # Without LOCAL_JOB_GID the gid is the uid: a group of this machine given that id since
    # the worker started would lend the job its rights (review 17b: only users were checked).
    try:
        group = grp.getgrgid(uid).gr_name
    except KeyError:
        return uid, uid
    raise JobUserError(
        said_here(
            gettext_noop(
                "its owner's gid %(gid)s (its uid: LOCAL_JOB_GID is unset) belongs to the group "
                "%(name)s of this machine"
            ),
            gid=uid,
            name=group,
        )
    )


def reach_refusals(*, spec: JobSpec, owner_id: int) -> dict[str, list[str]]:
    """The mounts of a local job's spec its owner's user could not reach by itself (enter
    each folder on the way, read it, write it for a read-write mount): what its start
    refuses (jobs.runner.volume_mounts), said by spec field path at submit, the wizard's
    data step and the APIs alike. Nothing when jobs run as the worker's user, nor when the
    owner's user is no user a job may run as (user_for: its start says why). Rows naming no
    volume of this machine are the submit's other checks' to refuse."""
    try:
        as_user = user_for(owner_id=owner_id)
    except JobUserError:
        return {}
    if as_user is None:
        return {}
    from .backends.local import host_volumes

    roots = {volume.name: volume.root for volume in host_volumes()}
    errors: dict[str, list[str]] = {}
    for i, ds in enumerate(spec.datasources):
        if ds.type != "hostpath" or ds.name not in roots:
            continue
        problem = reach_problem(
            roots[ds.name],
            ds.source_path,
            volume=ds.name,
            read_only=ds.read_only,
            as_user=as_user,
        )
        if problem is not None:
            errors[f"datasources[{i}].sourcePath"] = [
                gettext(
                    "The job would not be allowed to mount this folder when it starts: %(reason)s"
                )
                % {"reason": problem}
            ]
    return errors


def recorded_user(*, uid: int, gid: int) -> tuple[int, int]:
    """The (uid, gid) an attempt's first launch recorded, for the replicas a worker started
    again launches: checked as user_for checks a new attempt's, for a user (or, for a job
    whose gid is its uid, a group) of this machine given those ids since, which the rest of
    the job would own the files of (review 18b). Raises JobUserError: the job fails, its
    replicas already running ended with it."""
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = None
    if name is not None:
        raise JobUserError(
            said_here(
                gettext_noop(
                    "its attempt's uid %(uid)s belongs to the user %(name)s of this machine"
                ),
                uid=uid,
                name=name,
            )
        )
    if gid == uid:
        try:
            group = grp.getgrgid(gid).gr_name
        except KeyError:
            group = None
        if group is not None:
            raise JobUserError(
                said_here(
                    gettext_noop(
                        "its attempt's gid %(gid)s belongs to the group %(name)s of this machine"
                    ),
                    gid=gid,
                    name=group,
                )
            )
    return uid, gid


def own_user() -> tuple[int, int]:
    """The worker's own (uid, gid): what a replica runs as when it is not made another user.
    Recorded for every attempt started so (since session 19), so the attempt's remaining
    replicas, launched by a worker started again, run as that too (relaunch_user)."""
    return os.geteuid(), os.getegid()


def relaunch_user(*, owner_id: int, uid: int | None, gid: int | None) -> tuple[int, int] | None:
    """What the replicas of an attempt still to start after a worker restart run as (the
    `as_user` of a launch; None: as the worker's own user): exactly what its first launch
    recorded (`uid`, `gid`), whatever LOCAL_JOB_UID_BASE says now, its peers being that user.

    - Recorded as this worker's own user: as the worker's own user (a worker restarted with
      the setting set since ran them as the job's uid beside peers of the worker's user).
    - Another uid or gid: only a worker run as root can become it; one that is not (restarted
      as another user) cannot, and the job fails (JobUserError) rather than run them as
      itself. A root worker runs them as it, unless a user (or, for a job whose gid is its
      uid, a group) of this machine has been given that id since (recorded_user): a worker
      run as an ordinary user before, now as root, finds its old uid a user's, and fails.
    - Nothing recorded (None): an attempt started before migration 0025, or, as the worker's
      own user, before session 19 (the two cannot be told apart): as the setting says now
      (user_for), the rule review 18b decided; its peers most likely ran as that day's
      setting, which is today's unless it changed since."""
    if uid is None or gid is None:
        return user_for(owner_id=owner_id)
    if (uid, gid) == own_user():
        return None
    if os.geteuid() != 0:
        raise JobUserError(
            said_here(
                gettext_noop(
                    "its attempt started as uid %(uid)s and gid %(gid)s, which this worker (uid "
                    "%(own_uid)s, gid %(own_gid)s) cannot become: only a worker run as root can "
                    "run a job as another user"
                ),
                uid=uid,
                gid=gid,
                own_uid=os.geteuid(),
                own_gid=os.getegid(),
            )
        )
    return recorded_user(uid=uid, gid=gid)


def _id_ranges(path: str) -> list[tuple[str, int, int]]:
    """(name, first, count) of each line of /etc/subuid or /etc/subgid."""
    found = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            found.append((parts[0], int(parts[1]), int(parts[2])))
    return found


def unreachable_folder(path: Path, *, uid: int, gid: int) -> Path | None:
    """The uppermost folder from / down to `path` (itself included) the user uid:gid cannot
    enter (neither its owner nor in its group, without the others' x bit), if any."""
    for folder in [*reversed(path.parents), path]:
        try:
            info = folder.stat()
        except OSError:
            return None  # not made yet: the worker makes it, as root, 0755
        if not may_access(info, uid, gid, os.X_OK):
            return folder
    return None


class Problem(str):
    """One reason the worker refuses LOCAL_JOB_UID_BASE at its start: the text in English (as
    the worker's output and /healthz say it), plus its message and parameters, so staff read
    it in their language (`shown`). `public`: the wording /healthz answers to anyone, which
    names no folder, user or group of this machine, nor a uid or gid ("": the text itself
    names none; found in review: LOCAL_JOB_GID's group and the worker's uid were answered)."""

    key: str
    params: dict[str, object]
    public: str

    def __new__(cls, key: str, public: str = "", **params: object) -> Problem:
        made = super().__new__(cls, key % params)
        made.key, made.params, made.public = key, params, public
        return made

    def source(self) -> dict[str, object]:
        """What the lease keeps to say it again (jobs.health.worker_refused)."""
        return {"key": self.key, "params": self.params, "public": self.public}


def problems() -> list[Problem]:
    """Why this worker cannot run jobs as their owners' users (empty: it can, or the
    setting is unset). In English: the worker says them in its output as it stops, and
    records them for /healthz and staff's pages (jobs.health.worker_refused)."""
    if not enabled():
        return []
    base = settings.LOCAL_JOB_UID_BASE
    if os.geteuid() != 0:
        return [
            Problem(
                gettext_noop(
                    "LOCAL_JOB_UID_BASE=%(base)s needs a worker run as root, which this one "
                    "(uid %(uid)s) is not: only root can run a job as another user. Unset it, "
                    "or run the worker as root"
                ),
                gettext_noop(
                    "LOCAL_JOB_UID_BASE=%(base)s needs a worker run as root, which this one is not"
                ),
                base=base,
                uid=os.geteuid(),
            )
        ]
    found = []
    try:
        gid = job_gid_setting()
    except JobUserError:
        found.append(
            Problem(
                gettext_noop("LOCAL_JOB_GID=%(value)s is no group of this machine"),
                gettext_noop("LOCAL_JOB_GID is no group of this machine"),
                value=settings.LOCAL_JOB_GID,
            )
        )
        gid = None
    if gid is not None and gid < LOWEST_GID:
        found.append(
            Problem(
                gettext_noop(
                    "LOCAL_JOB_GID=%(value)s is a system group's (gid %(gid)s, below "
                    "%(lowest)s), whose rights every job would have: make a group of its own "
                    "for the jobs (groupadd)"
                ),
                gettext_noop(
                    "LOCAL_JOB_GID is a system group's, whose rights every job would have"
                ),
                value=settings.LOCAL_JOB_GID,
                gid=gid,
                lowest=LOWEST_GID,
            )
        )
    users = [(u.pw_name, u.pw_uid) for u in pwd.getpwall() if u.pw_uid >= base]
    # With LOCAL_JOB_GID every job's gid is that one (any number, the jobs' own group);
    # without it each job's gid is its uid, which no group of this machine may have.
    groups = [(g.gr_name, g.gr_gid) for g in grp.getgrall() if g.gr_gid >= base and gid is None]
    taken = {
        "user": gettext_noop(
            "LOCAL_JOB_UID_BASE=%(base)s: the user %(name)s of this machine has id "
            "%(number)s, in the range of the jobs' ids (%(base)s and up); choose a base above "
            "every user and group"
        ),
        "group": gettext_noop(
            "LOCAL_JOB_UID_BASE=%(base)s: the group %(name)s of this machine has id "
            "%(number)s, in the range of the jobs' ids (%(base)s and up); choose a base above "
            "every user and group"
        ),
    }
    for what, entries in (("user", users), ("group", groups)):
        for name, number in entries[:3]:
            found.append(
                Problem(
                    taken[what],
                    gettext_noop(
                        "LOCAL_JOB_UID_BASE=%(base)s: a user or group of this machine has an "
                        "id in the range of the jobs' ids"
                    ),
                    base=base,
                    name=name,
                    number=number,
                )
            )
    for path in ("/etc/subuid", "/etc/subgid"):
        for name, first, count in _id_ranges(path):
            if first + count > base:
                found.append(
                    Problem(
                        gettext_noop(
                            "LOCAL_JOB_UID_BASE=%(base)s: %(path)s gives %(name)s the ids "
                            "%(first)s to %(last)s, which reach the jobs' range (%(base)s and "
                            "up); choose a base above them"
                        ),
                        gettext_noop(
                            "LOCAL_JOB_UID_BASE=%(base)s: %(path)s gives ids that reach the "
                            "jobs' range"
                        ),
                        base=base,
                        path=path,
                        name=name,
                        first=first,
                        last=first + count - 1,
                    )
                )
    # Bubblewrap, run as the job's user, finds each folder it binds by its path.
    probe_uid, probe_gid = base + 1, gid if gid is not None else base + 1
    from .backends.local import host_volumes

    folders = [Path(settings.LOCAL_RUN_DIR)]
    folders += [volume.root for volume in host_volumes()]
    # The folders above each: the run folder itself the runner makes enterable (o+x), and a
    # volume's own folder is its owner's to open to whom it chooses (one user's jobs alone).
    for folder in folders:
        blocked = unreachable_folder(folder.absolute().parent, uid=probe_uid, gid=probe_gid)
        if blocked is not None:
            params: dict[str, object] = {"base": base, "blocked": blocked, "folder": folder}
            message = gettext_noop(
                "LOCAL_JOB_UID_BASE=%(base)s: the jobs' users cannot enter %(blocked)s, above "
                "%(folder)s, which their sandbox binds: let others enter it (chmod o+x "
                "%(blocked)s)"
            )
            if gid is not None:
                message = gettext_noop(
                    "LOCAL_JOB_UID_BASE=%(base)s: the jobs' users cannot enter %(blocked)s, "
                    "above %(folder)s, which their sandbox binds: let others enter it (chmod "
                    "o+x %(blocked)s), or give it group %(gid)s with g+x"
                )
                params["gid"] = gid
            found.append(
                Problem(
                    message,
                    gettext_noop(
                        "LOCAL_JOB_UID_BASE=%(base)s: the jobs' users cannot enter a folder "
                        "above LOCAL_RUN_DIR or a volume's folder"
                    ),
                    **{k: str(v) if isinstance(v, Path) else v for k, v in params.items()},
                )
            )
    return found


def describe() -> str:
    """Who local jobs run as, for the worker's start line (an operator reads there that the
    setting took)."""
    if not enabled():
        return f"the worker's own (uid {os.geteuid()}; LOCAL_JOB_UID_BASE unset)"
    base = settings.LOCAL_JOB_UID_BASE
    try:
        gid = job_gid_setting()
    except JobUserError:
        gid = None
    group = (
        f"gid {gid} (LOCAL_JOB_GID={settings.LOCAL_JOB_GID})"
        if gid is not None
        else "gid the same as the uid (LOCAL_JOB_GID unset)"
    )
    return f"each owner's, uid {base} + the console user's id, {group}"


def shared_folder_warnings() -> list[str]:
    """Volumes whose folder every job's user may write (others' w bit, or the group's when it
    is the jobs' group) without the sticky bit: there one user's jobs can delete, or rename a
    file over, what another user's jobs wrote, whatever that file's own modes (found in QA 23:
    README's `chmod 2775` let a job delete another user's checkpoint). With `chmod +t` only a
    file's owner (and the folder's) may delete or rename it, as in /tmp. Warned at the worker's
    start, not refused: a volume meant as a scratch space for all may be so on purpose."""
    if not enabled():
        return []
    try:
        gid = job_gid_setting()
    except JobUserError:
        gid = None
    from .backends.local import host_volumes

    found = []
    for volume in host_volumes():
        if volume.read_only:
            continue
        try:
            info = volume.root.stat()
        except OSError:
            continue  # made by the runner at a job's start, 0755
        mode = info.st_mode
        by_all = mode & stat.S_IWOTH or (mode & stat.S_IWGRP and info.st_gid == gid)
        if by_all and not mode & stat.S_ISVTX:
            found.append(
                f"the volume {volume.name} ({volume.root}, mode {stat.S_IMODE(mode):04o}) is "
                "writable by every job's user without the sticky bit: one user's jobs can "
                "delete, or rename a file over, files another user's jobs wrote there; "
                f"chmod +t {volume.root} (then only a file's owner may delete or rename it)"
            )
    return found
