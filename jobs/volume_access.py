"""Who may mount which volume of the local pool (LOCAL_VOLUMES), enforced in one place.

An operator writes each volume as ``name=/abs/root``, optionally followed by ``:ro``
(read-only for everyone) and then ``@group+group`` (only members of those Django groups may
mount it; superusers may mount any volume):

    models=/data/models:ro,team-a=/data/a@team-a,shared=/data/s:ro@team-a+team-b

A folder may be written in double quotes, ``lab="/srv/u@lab":ro@team-a`` (see below).

A volume with no ``@`` stays open to every user, as before this rule existed. Decisions the
brief left open, written down here and in README:

- The ``@`` starts the group list only when it is the last ``@`` of the item and what follows
  it holds no ``/`` (a root such as ``/data/user@host/x`` stays a root); ``:ro`` only when the
  root ends with it. A group name cannot hold ``,`` or ``+`` (the separators), nor end with
  ``:ro`` (``/data/a@team:ro`` is refused at start: it would have read as a read-write
  volume of a group "team:ro"). So a bare folder whose last part holds an ``@``
  (``/srv/u@lab``) reads as /srv/u kept for group "lab"; such a folder is written in double
  quotes, ``lab="/srv/u@lab"`` (then ``:ro`` and ``@group+group`` after the closing quote),
  and everything between the quotes is the folder, ``@`` and ``:ro`` included. Decision:
  quotes rather than an escape such as ``@@``, because every value that worked before keeps
  its reading: a root starting with ``"`` was never absolute and so was refused at start,
  while ``/data/a@@team`` was (and stays) the folder ``/data/a@`` kept for "team". A ``,``
  still ends an item, quoted or not, and a folder cannot hold a ``"``.
- A volume the user may not mount is answered exactly as a volume that does not exist ("not
  offered to you"): the message names only what the user sent, never another team's volume,
  and checks nothing inside it (a source path's existence would tell what it holds).
- A read-only volume mounted read-write is refused with a field message (the API, an import,
  an old draft), not quietly made read-only: what the job gets is what its spec says.
- The runner asks again at each start (a job queued before its owner left the group, or
  before the volume became read-only, fails with the reason instead of being mounted).

The parsing here is used by console.settings at start (ValueError -> ImproperlyConfigured),
so this module imports no model at import time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backends import Pool
    from .spec import JobSpec

VOLUMES_SYNTAX = (
    "LOCAL_VOLUMES is name=/absolute/folder[:ro][@group+group],... with each name once "
    "(e.g. scratch=/data/scratch,models=/data/models:ro,team-a=/data/a@team-a)"
)


@dataclass(frozen=True)
class HostVolume:
    name: str
    root: Path
    read_only: bool = False  # read-only for everyone (":ro")
    groups: frozenset[str] = field(default_factory=frozenset)  # empty: open to all

    @property
    def restricted(self) -> bool:
        return bool(self.groups)


def parse_volumes(value: str) -> list[HostVolume]:
    """The volumes LOCAL_VOLUMES lists; ValueError naming the first item that is wrong."""
    volumes: list[HostVolume] = []
    names: set[str] = set()
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        name, eq, rest = (part.strip() for part in item.partition("="))
        groups: frozenset[str] = frozenset()
        if rest.startswith('"'):
            root, read_only, groups = _quoted(rest, item)
        else:
            root, at, tail = rest.rpartition("@")
            if at and "/" not in tail:
                groups = _groups(tail, item)
            else:
                root = rest
            root = root.strip()
            read_only = root.endswith(":ro")
            if read_only:
                root = root[: -len(":ro")].rstrip()  # "/data/x :ro" is /data/x, as "/data/x " is
        if not (name and eq and Path(root).is_absolute()) or name in names:
            raise ValueError(f"{VOLUMES_SYNTAX}, not {item!r}{_why(name, eq, root, names)}")
        names.add(name)
        volumes.append(HostVolume(name, Path(root), read_only=read_only, groups=groups))
    return volumes


def _why(name: str, eq: str, root: str, names: set[str]) -> str:
    """Why an item is wrong, in brackets, as the other refusals say it (QA 22: a relative
    folder, as `scratch=var/volumes/scratch` copied from the default, said nothing of why)."""
    if not (name and eq):
        return " (no name= before the folder)"
    if not root:
        return " (no folder after the =)"
    if not Path(root).is_absolute():
        return " (the folder is not absolute: it starts with /)"
    return f" (the name {name} is listed twice)"


def _groups(text: str, item: str) -> frozenset[str]:
    """The groups of `text`, what follows an item's ``@``."""
    members = [g.strip() for g in text.split("+")]
    if not all(members):
        raise ValueError(f"{VOLUMES_SYNTAX}, not {item!r} (an empty group name)")
    if any(g.endswith(":ro") for g in members):
        # "/data/a@team:ro" read as group "team:ro", read-write: refused, not guessed.
        raise ValueError(f"{VOLUMES_SYNTAX}, not {item!r} (:ro goes before the @)")
    return frozenset(members)


def _quoted(rest: str, item: str) -> tuple[str, bool, frozenset[str]]:
    """The folder, read-only flag and groups of ``"/folder"[:ro][@group+group]``: the folder
    is what the quotes hold, as written (an ``@`` or ``:ro`` in it is part of its name)."""
    root, closed, after = rest[1:].partition('"')
    if not closed:
        raise ValueError(f"{VOLUMES_SYNTAX}, not {item!r} (the folder's closing \" is missing)")
    after = after.strip()
    read_only = after.startswith(":ro")
    if read_only:
        after = after[len(":ro") :].strip()
    if after and not after.startswith("@"):
        raise ValueError(
            f"{VOLUMES_SYNTAX}, not {item!r} (after a quoted folder only :ro and then "
            "@group+group may follow)"
        )
    return root, read_only, _groups(after[1:], item) if after else frozenset()


def _group_names(user: Any) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


class GroupNames:
    """`user`'s group names, read when first asked and then kept: one reader per request (the
    wizard's state holds one), so a page that both offers the pool's volumes and checks a
    spec's (the review step) reads them once. Not kept beyond it: membership is today's, and
    the runner asks again at each start."""

    def __init__(self, user: Any) -> None:
        self.user = user
        self._names: set[str] | None = None

    def __call__(self) -> set[str]:
        if self._names is None:
            self._names = _group_names(self.user) if getattr(self.user, "pk", None) else set()
        return self._names


def may_mount(*, user: Any, volume: HostVolume, groups: set[str] | None = None) -> bool:
    """Whether `user` may mount `volume`: an open volume, a superuser, or a member of one of
    its groups (`groups`: the user's group names, when the caller has read them)."""
    if not volume.restricted or getattr(user, "is_superuser", False):
        return True
    if user is None or not getattr(user, "pk", None):
        return False
    return bool(volume.groups & (groups if groups is not None else _group_names(user)))


def mountable_volumes(
    *, user: Any, volumes: list[HostVolume], groups: GroupNames | None = None
) -> list[HostVolume]:
    """Of `volumes`, the ones `user` may mount, in their order (the user's groups read once,
    and only when some volume is kept for groups; `groups`: a reader the caller shares)."""
    if all(not v.restricted for v in volumes) or getattr(user, "is_superuser", False):
        return list(volumes)
    names = (groups or GroupNames(user))()
    return [v for v in volumes if may_mount(user=user, volume=v, groups=names)]


def pool_for_user(*, pool: Pool | None, user: Any, groups: GroupNames | None = None) -> Pool | None:
    """`pool` as `user` sees it in the wizard: the local pool offers only the volumes they may
    mount (a copy; the pool itself, cached for everyone, is not changed)."""
    if pool is None or pool.backend != "local":
        return pool
    from .backends.local import host_volumes

    allowed = {v.name for v in mountable_volumes(user=user, volumes=host_volumes(), groups=groups)}
    kept = [v for v in pool.volumes if v.type != "hostpath" or v.name in allowed]
    if len(kept) == len(pool.volumes):
        return pool
    return dataclasses.replace(pool, volumes=kept)


def mount_folders(*, spec: JobSpec, backend: str, user: Any) -> list[str]:
    """Each of a job's mount rows' folder on this machine, for the job page beside the row:
    the local volume's root (what the wizard's volume list names it by) with the source path
    below it (QA 99: the page showed `out:runs/r1 → /out`, the folder nowhere). "" for a
    row of a cloud pool's storage, of a volume no longer in LOCAL_VOLUMES, or of one `user`
    may no longer mount: the wizard no longer shows them its folder either."""
    import posixpath

    if backend != "local":
        return [""] * len(spec.datasources)
    from .backends.local import host_volumes

    volumes = {v.name: v for v in mountable_volumes(user=user, volumes=host_volumes())}
    folders = []
    for ds in spec.datasources:
        volume = volumes.get(ds.name) if ds.type == "hostpath" else None
        below = (ds.source_path or "").strip("/")
        folders.append(
            "" if volume is None else posixpath.normpath(posixpath.join(str(volume.root), below))
        )
    return folders


def not_offered_message(name: str) -> str:
    """Said in the language active now (a form's, an API request's) and kept with its message
    (jobs.texts.said_here): a start refused for it (jobs.runner.volume_mounts) records it so,
    and each reader of the job's reason reads it in theirs, not in the worker's language."""
    from django.utils.translation import gettext_noop

    from .texts import said_here

    return said_here(
        gettext_noop(
            "Volume “%(name)s” is not offered to you on the local pool; choose one of the "
            "volumes the wizard lists."
        ),
        name=name,
    )


def no_longer_in_group_message(name: str) -> str:
    """Why a queued job cannot start when its owner may no longer mount a volume it names
    (qa106: the wizard's words, "choose one of the volumes the wizard lists", made no sense
    for a job already queued). The owner named the volume when they could mount it, so
    saying that it is kept for groups tells them nothing new. Said as not_offered_message
    is: in the language active now, with its message."""
    from django.utils.translation import gettext_noop

    from .texts import said_here

    return said_here(
        gettext_noop(
            "Your account is no longer in a group that may mount volume “%(name)s”: copy the "
            "job (Copy & edit) and choose another volume in the copy, or ask staff to add you "
            "to one of the volume's groups."
        ),
        name=name,
    )


def no_longer_listed_message(name: str) -> str:
    """Why a queued job cannot start when a volume it names has left LOCAL_VOLUMES since:
    the runner's own words for a volume this machine does not have (jobs.runner.volume_mounts)."""
    from django.utils.translation import gettext_noop

    from .texts import said_here

    return said_here(
        gettext_noop("Volume %(volume)s (%(type)s) is not available on this machine."),
        volume=name,
        type="hostpath",
    )


def read_only_message(name: str) -> str:
    """Said as not_offered_message is: in the language active now, with its message."""
    from django.utils.translation import gettext_noop

    from .texts import said_here

    return said_here(
        gettext_noop(
            "Volume “%(name)s” is read-only for everyone (set by the administrator): mount it "
            "read-only."
        ),
        name=name,
    )


def hostpath_row_hint(*, owner: Any, mount_path: str, groups: GroupNames | None = None) -> str:
    """What to write instead of a mount row of cloud storage on the local pool: the volumes
    `owner` may mount (never another team's: mountable_volumes) and the row's JSON with the
    first of them at the row's own mount path (qa109: seed 001's pfs row was told only that
    a cloud pool was needed, not what this pool has nor how a row of it is written)."""
    import json

    from django.utils.translation import gettext as _

    from .backends.local import host_volumes
    from .texts import list_words

    volumes = mountable_volumes(user=owner, volumes=host_volumes(), groups=groups)
    if not volumes:
        return _(
            "This pool offers you no volume: leave the row out, or ask the administrator for "
            "one (LOCAL_VOLUMES)."
        )
    first = volumes[0]
    row: dict[str, Any] = {"type": "hostpath", "name": first.name, "mountPath": mount_path}
    if first.read_only:
        row["options"] = {"readOnly": True}
    return _(
        "This pool's volumes you may mount: %(volumes)s. Write the row as %(row)s (add "
        "sourcePath for a folder inside the volume)."
    ) % {
        "volumes": list_words(
            _("%(name)s (read-only)") % {"name": v.name} if v.read_only else v.name for v in volumes
        ),
        "row": json.dumps(row, ensure_ascii=False),
    }


def volume_refusals(
    *, spec: JobSpec, owner: Any, groups: GroupNames | None = None, at_start: bool = False
) -> dict[str, list[str]]:
    """What `owner` may not mount of a local job's spec, by spec field path: a volume that is
    not offered to them (or does not exist: the same words), and a read-only volume mounted
    read-write. The one check the wizard, Run again, the APIs and the runner all ask.
    `groups`: the owner's group names as the page already read them (the wizard's review).
    `at_start`: asked by the runner of a job already queued, which says why in words for a
    queued job (the owner left the volume's groups; the volume is no longer listed), not the
    wizard's."""
    from .backends.local import host_volumes

    volumes = {v.name: v for v in host_volumes()}
    allowed = {
        v.name for v in mountable_volumes(user=owner, volumes=list(volumes.values()), groups=groups)
    }
    errors: dict[str, list[str]] = {}
    for i, ds in enumerate(spec.datasources):
        if ds.type != "hostpath" or not ds.name:
            continue  # the backend's or the spec's own message (choose a volume)
        if ds.name not in allowed:
            if not at_start:
                said = not_offered_message(ds.name)
            elif ds.name in volumes:
                said = no_longer_in_group_message(ds.name)
            else:
                said = no_longer_listed_message(ds.name)
            errors.setdefault(f"datasources[{i}].name", []).append(said)
        elif volumes[ds.name].read_only and not ds.read_only:
            errors.setdefault(f"datasources[{i}].options.readOnly", []).append(
                read_only_message(ds.name)
            )
    return errors


def queued_jobs_losing_volumes(
    *, user: Any, groups_before: set[str]
) -> list[tuple[Any, list[str]]]:
    """`user`'s queued local jobs (Queued, or Pending review) that name a volume they could
    mount in `groups_before` and may no longer mount in their groups now, each with those
    volumes' names: what moving them between groups does to jobs already waiting, said to
    the staff who moved them (qa106; jobs.admin's user admin), as each fails at start."""
    from .backends.local import host_volumes
    from .models import Job, JobStatus
    from .spec import SpecError

    restricted = [v for v in host_volumes() if v.restricted]
    if not restricted or getattr(user, "is_superuser", False):
        return []
    now = _group_names(user)
    lost = {
        v.name
        for v in restricted
        if may_mount(user=user, volume=v, groups=groups_before)
        and not may_mount(user=user, volume=v, groups=now)
    }
    if not lost:
        return []
    found = []
    waiting = Job.objects.filter(
        owner=user, backend="local", status__in=[JobStatus.QUEUED, JobStatus.PENDING_REVIEW]
    ).order_by("created_at", "pk")
    for job in waiting:
        try:
            spec = job.job_spec()
        except SpecError:
            continue  # fails at start for its own reason
        names = sorted(
            {ds.name for ds in spec.datasources if ds.type == "hostpath" and ds.name in lost}
        )
        if names:
            found.append((job, names))
    return found
