"""A local job's training curves (训练指标), read from the TensorBoard event files its code
writes under the TensorBoard log path (spec `tensorboardConfig.logPath`), for its job page.

Decisions:
- Where the files are. logPath is a path inside the replica's sandbox. The console reads it
  only where it lies on a volume the job mounts (the deepest mount at or above it, as in the
  sandbox): that folder is on the host, outlives the job, and every replica sees the same
  one. Anywhere else the files are in the replica's own view (its private /tmp, removed when
  the replica ends, one per replica) or on a remote platform's storage (AIHC, Kubernetes):
  the page says so instead of drawing an empty chart.
- Never outside what the job mounted. The folder is resolved (symbolic links, `..`) and must
  lie inside the mounted folder; it is opened without following a link and checked where the
  open descriptor really points. Below it, every folder and file is opened relative to its
  parent's descriptor with O_NOFOLLOW, so no link is ever followed, and only regular files
  whose name holds "tfevents" are read (O_NONBLOCK: a FIFO put there cannot hang a request).
  The job may write its volume while the page reads it; nothing it does there makes the
  console read another file of the host.
- The format: TFRecord framing (uint64 length, masked CRC32C of the length, the data, masked
  CRC32C of the data) around `Event` protobufs. Only the few protobuf fields scalars need are
  decoded (wire format below): Event.wall_time/step/summary, Summary.Value.tag, simple_value
  (TF1, tensorboardX), a scalar `tensor` (TF2's tf.summary.scalar: float, double or half, one
  element) and the plugin name of its metadata, so a tensor of another plugin is never taken
  for a scalar (TF2 writes the metadata only with a tag's first value: it is remembered per
  run). Histograms, images and graphs are skipped without being decoded.
- Damage: a record whose length checksum fails, or that is cut short (the file being
  written), ends the read of that file for now; it is tried again on the next read, as
  TensorBoard does. A record whose data checksum fails is skipped and counted. The data
  checksum is verified for the records whose scalars are used, the only ones whose content
  matters here; the megabytes of images and histograms are skipped unchecked. CRC32C comes
  from google-crc32c (C; the standard library has only CRC-32): a 256-entry table in Python
  took a third of the CPU of reading an event file (bench/bench_tensorboard.py).
- Runs: a folder holding event files is a run, named by its path under logPath ("." for
  logPath itself), as TensorBoard names them; its files are read in name order.
- Cost. The page polls every 2 seconds and event files grow to hundreds of MB. What has been
  read is kept in a small state file in the job's run folder (like the usage samples): each
  file's read offset, and each tag's series. A read picks up from the offsets, at most
  READ_SECONDS per request (a large backlog is caught up over several polls, the page says
  so); a request that finds another one reading shows the state as it is. Each tag keeps at
  most MAX_POINTS points for its chart: when full, each run of 4 points keeps its lowest and
  highest, so the extremes always stay on the chart; the first, latest, lowest and highest
  values are kept exactly beside it. At most MAX_TAGS tags are kept and shown; the page counts
  the others.
- Hostile files. The job writes the files; the web process reads them. A tag or plugin name
  is kept to MAX_TAG_CHARS, a tensor's values are counted, not decoded (only a one-value one
  is a scalar), an event's first MAX_EVENT_VALUES values are read, and a run folder's name
  that is no UTF-8 is shown with "�" (os keeps it as surrogates, which no page can be
  encoded with).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import logging
import math
import os
import posixpath
import re
import stat
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import google_crc32c
from django.utils.translation import get_language, pgettext
from django.utils.translation import gettext as _

from . import job_users
from . import logs as job_logs
from .backends.local import host_volumes
from .models import Job
from .runtime_env import GROUP_INDEX, with_group_task
from .sandbox import SandboxError, check_within_reach, is_within, may_access, resolve_in_root
from .shim import write_atomic
from .spec import JobSpec, SpecError, mask, normalised_mount_path
from .volume_access import may_mount

logger = logging.getLogger(__name__)

MAX_TAGS = 48
MAX_POINTS = 500
READ_SECONDS = 0.3  # per request; a poll comes every 2 s
MAX_DIRS = 1000  # folders walked under logPath
MAX_FILES = 500  # event files read
MAX_DEPTH = 16
# Entries (files and folders of any kind) listed in one walk, all folders together. A
# folder's listing was read whole and sorted on every status poll, in the web process: a
# job that wrote a million files into its log path cost each poll seconds of CPU and
# hundreds of MB (security round 16). A log folder holds a few files a run; past this, the
# rest of a folder is not listed, and folders after it (in name order) not walked.
MAX_ENTRIES = 10_000
MAX_RECORD = 256 * 1024 * 1024  # a longer record is damage, not data
MAX_PLUGIN_TAGS = 2000  # tags of other plugins remembered per run
# Values read of one event: TF1's merged summaries hold a few hundred; a record of millions
# (up to MAX_RECORD) took seconds and hundreds of MB per 10 MB in a web request.
MAX_EVENT_VALUES = 2000
# A tag (or a plugin name) is kept to this many characters: a tag of megabytes would be kept
# in the state file (with up to MAX_PLUGIN_TAGS others) and put three times into the page.
MAX_TAG_CHARS = 200
STATE_FILE = "tensorboard.json"
LOCK_FILE = "tensorboard.lock"
# 2: each tag counts its NaN and infinite values ("nonfinite"); a state of 1 is read again.
STATE_VERSION = 2

CHART_WIDTH = 300
CHART_HEIGHT = 100

SCALARS_PLUGIN = "scalars"
REMOTE_NAMES = {"aihc": "AIHC", "kubernetes": "Kubernetes"}
DT_FLOAT, DT_DOUBLE, DT_HALF = 1, 2, 19


# -- CRC32C (Castagnoli), as TFRecord masks it -----------------------------------------


def masked_crc32c(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# -- protobuf wire format, the few fields read -------------------------------------------


class Malformed(Exception):
    pass


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    # Nearly every key, length and step below 128 is one byte: no loop for those.
    if pos < len(buf) and buf[pos] < 0x80:
        return buf[pos], pos + 1
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise Malformed
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value, end): for a varint its value; for the other wire
    types the offset where their bytes start, `end` where they stop."""
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value, pos
            continue
        if wire == 1:
            start, pos = pos, pos + 8
        elif wire == 2:
            length, start = _varint(buf, pos)
            pos = start + length
        elif wire == 5:
            start, pos = pos, pos + 4
        else:  # groups (3, 4) appear in none of these messages
            raise Malformed
        if pos > end:
            raise Malformed
        yield number, wire, start, pos


def _string(buf: bytes, start: int, end: int) -> str:
    """A string field, its first MAX_TAG_CHARS characters ("…" after them if there are more)."""
    text = buf[start : min(end, start + 4 * MAX_TAG_CHARS + 4)].decode("utf-8", errors="replace")
    return text if len(text) <= MAX_TAG_CHARS else f"{text[:MAX_TAG_CHARS]}…"


def _plugin_name(buf: bytes, start: int, end: int) -> str:
    """SummaryMetadata.plugin_data.plugin_name."""
    for number, wire, s, e in _fields(buf, start, end):
        if number == 1 and wire == 2:
            for n, w, s2, e2 in _fields(buf, s, e):
                if n == 1 and w == 2:
                    return _string(buf, s2, e2)
    return ""


def _tensor_scalar(buf: bytes, start: int, end: int) -> float | None:
    """The value of a TensorProto holding one float, double or half; None otherwise. Only
    the first value is decoded, and the others counted: a tensor of millions of values (a
    record may be up to MAX_RECORD) must not become a list of millions of floats."""
    dtype = 0
    elements = 1
    count = 0
    first: float | None = None
    content = b""
    for number, wire, s, e in _fields(buf, start, end):
        if number == 1 and wire == 0:
            dtype = s
        elif number == 2 and wire == 2:  # tensor_shape: each dim's size multiplies
            for n, w, s2, e2 in _fields(buf, s, e):
                if n == 1 and w == 2:
                    size = next((v for n3, w3, v, _ in _fields(buf, s2, e2) if n3 == 1), 0)
                    elements *= size
        elif number == 4 and wire == 2:
            content = buf[s:e]
        elif number in (5, 6) and wire in (2, 5 if number == 5 else 1):
            # float_val, double_val: packed or not
            width = 4 if number == 5 else 8
            if first is None and e - s >= width:
                first = struct.unpack_from("<f" if number == 5 else "<d", buf, s)[0]
            count += (e - s) // width
        elif number == 13 and wire in (0, 2):  # half_val: each half's bits in an int32
            halves = (
                [s]
                if wire == 0
                else [v for v, _ in itertools.islice(_packed_varints(buf, s, e), 2)]
            )
            if first is None and halves:
                first = struct.unpack("<e", struct.pack("<H", halves[0] & 0xFFFF))[0]
            count += len(halves)
    if elements != 1:
        return None
    width = {DT_FLOAT: ("<f", 4), DT_DOUBLE: ("<d", 8), DT_HALF: ("<e", 2)}.get(dtype)
    if width is None:
        return None
    if content:
        return struct.unpack(width[0], content)[0] if len(content) == width[1] else None
    return first if count == 1 else None


def _packed_varints(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int]]:
    while pos < end:
        value, pos = _varint(buf, pos)
        yield value, pos


@dataclass
class Scalar:
    tag: str
    value: float | None  # None: a tensor whose plugin decides (see parse_event)
    plugin: str  # the plugin named in this value's metadata ("" when none)
    tensor: float | None = None


def parse_event(data: bytes) -> tuple[float, int, list[Scalar]]:
    """An Event's wall time, step and the values of its summary that may be scalars."""
    wall_time = 0.0
    step = 0
    found: list[Scalar] = []
    for number, wire, s, e in _fields(data, 0, len(data)):
        if number == 1 and wire == 1:
            wall_time = struct.unpack_from("<d", data, s)[0]
        elif number == 2 and wire == 0:
            step = s - (1 << 64) if s >= 1 << 63 else s  # int64, two's complement
        elif number == 5 and wire == 2:
            # Its first MAX_EVENT_VALUES values (Summary has no other field).
            for n, w, vs, ve in itertools.islice(_fields(data, s, e), MAX_EVENT_VALUES):
                if n == 1 and w == 2 and (value := _summary_value(data, vs, ve)) is not None:
                    found.append(value)
    return wall_time, step, found


def _summary_value(buf: bytes, start: int, end: int) -> Scalar | None:
    tag = ""
    simple: float | None = None
    tensor: float | None = None
    has_tensor = False
    plugin = ""
    for number, wire, s, e in _fields(buf, start, end):
        if number == 1 and wire == 2 or number == 7 and wire == 2 and not tag:
            tag = _string(buf, s, e)
        elif number == 2 and wire == 5:
            simple = struct.unpack_from("<f", buf, s)[0]
        elif number == 8 and wire == 2:
            has_tensor = True
            tensor = _tensor_scalar(buf, s, e)
        elif number == 9 and wire == 2:
            plugin = _plugin_name(buf, s, e)
    if not tag:
        return None
    if simple is not None:
        return Scalar(tag=tag, value=simple, plugin=plugin)
    if has_tensor:
        return Scalar(tag=tag, value=None, plugin=plugin, tensor=tensor)
    if plugin:  # metadata alone: remembered for the tag's later tensors
        return Scalar(tag=tag, value=None, plugin=plugin)
    return None


# -- TFRecord framing ----------------------------------------------------------------------


_HEADER = struct.Struct("<QI")  # the data's length, the length's masked CRC32C
_FOOTER = struct.Struct("<I")  # the data's masked CRC32C


class Records:
    """The whole records of an event file from `offset` on, as (data, the masked CRC32C
    stored for it). `offset` moves past each record as it is handed out; `blocked` says the
    iteration ended at a record cut short or with a damaged length (tried again on the next
    read, once the file has changed), not at the end of the file."""

    def __init__(self, fd: int, offset: int) -> None:
        self.fd = fd
        self.offset = offset
        self.blocked = False

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        with os.fdopen(os.dup(self.fd), "rb", buffering=1 << 20) as file:
            file.seek(self.offset)
            while True:
                header = file.read(12)
                if len(header) < 12:
                    self.blocked = bool(header)
                    return
                length, length_crc = _HEADER.unpack(header)
                if length > MAX_RECORD or masked_crc32c(header[:8]) != length_crc:
                    self.blocked = True
                    return
                data = file.read(length + 4)  # and its checksum: one read, not two
                if len(data) < length + 4:
                    self.blocked = True
                    return
                self.offset += 12 + length + 4
                yield data[:length], _FOOTER.unpack_from(data, length)[0]


# -- what has been read: the state file ----------------------------------------------------


def _new_state(folder: str) -> dict:
    return {"version": STATE_VERSION, "folder": folder, "runs": {}, "skipped": [], "damaged": 0}


def _new_run() -> dict:
    # files: name -> {ino, offset, size (when last read), blocked}; plugins: tag -> the
    # plugin named in its metadata; tags: tag -> series (_add_point).
    return {"files": {}, "plugins": {}, "tags": {}}


def _add_point(series: dict, step: int, value: float, wall_time: float) -> None:
    series["n"] += 1
    if series["first"] is None:
        series["first"] = [step, value]
    series["last"] = [step, value, wall_time]
    if not math.isfinite(value):
        # Counted here, not from the points kept: compacting keeps only finite extremes.
        series["nonfinite"] = series.get("nonfinite", 0) + 1
    else:
        if series["low"] is None or value < series["low"][1]:
            series["low"] = [step, value]
        if series["high"] is None or value > series["high"][1]:
            series["high"] = [step, value]
    points = series["points"]
    points.append([step, value])
    if len(points) > MAX_POINTS:
        series["points"] = compact(points)


def compact(points: list[list]) -> list[list]:
    """About half the points: the first and the last, and of each run of 4 the lowest and
    the highest (in their order), so every extreme the chart showed stays on it."""
    keep = {0, len(points) - 1}
    for start in range(0, len(points), 4):
        chunk = [
            i for i in range(start, min(start + 4, len(points))) if math.isfinite(points[i][1])
        ]
        if chunk:
            keep.add(min(chunk, key=lambda i: points[i][1]))
            keep.add(max(chunk, key=lambda i: points[i][1]))
    return [points[i] for i in sorted(keep)]


# The time TensorBoard's writers (TF, tensorboardX, PyTorch's) put in an event file's name
# when they create it: events.out.tfevents.<unix seconds>.<host>[...].
_NAME_TIME = re.compile(r"tfevents\.(\d+)(?:\.|$)")


# Event files created this long before a job started are still its own (names and start
# times in whole seconds). From its start, not its submission: a queue group's tasks are all
# submitted at once, and a task that waited for the one before it drew that one's files too
# (review29), as did a copy that waited for cards while another job wrote there.
PRELOADED_SECONDS = 2


def _written_in(name: str, window: tuple[int, int | None] | None) -> bool:
    """Whether an event file was created while its job could write it (`window`: from its
    start to its end, in whole seconds; None: any time). Two jobs given one log path (a
    Copy & edit or Run again keeps it) write their files side by side; without this each page
    drew both jobs' points as one curve (QA 43). A name without a time is kept."""
    found = _NAME_TIME.search(name)
    if window is None or found is None:
        return True
    written = int(found.group(1))
    return window[0] <= written and (window[1] is None or written <= window[1])


class _Reading:
    """One refresh of a state: walks the log folder and reads what is new, until `deadline`."""

    def __init__(
        self,
        state: dict,
        deadline: float,
        window: tuple[int, int | None] | None = None,
        *,
        as_user: tuple[int, int] | None = None,
    ) -> None:
        self.state = state
        # LogFolder.as_user: the console reads as the worker's user, so until review 50 Bob's
        # log folder (his user may read it) gave his page the curves of Alice's 0700 run
        # folder and 0600 event files inside it.
        self.as_user = as_user
        self.deadline = deadline
        self.window = window
        self.tags = sum(len(run["tags"]) for run in state["runs"].values())
        self.seen_runs: set[str] = set()
        self.pending = 0  # bytes left to read (not counting records that wait to be whole)
        self.changed = False
        self.folders = 0
        self.files = 0
        self.entries = 0

    def walk(self, fd: int, run: str, depth: int) -> None:
        """Reads the event files in the folder open at `fd` (run `run`), then its subfolders."""
        self.folders += 1
        try:
            with os.scandir(fd) as listing:
                entries = list(itertools.islice(listing, MAX_ENTRIES - self.entries))
        except OSError:
            return
        self.entries += len(entries)
        entries.sort(key=lambda entry: entry.name)
        events: dict[str, os.stat_result] = {}
        folders = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if self._may_read(entry, os.R_OK | os.X_OK):
                        folders.append(entry.name)
                elif (
                    "tfevents" in entry.name
                    and self.files < MAX_FILES
                    and _written_in(entry.name, self.window)
                    and entry.is_file(follow_symlinks=False)
                    and self._may_read(entry, os.R_OK)
                ):
                    events[entry.name] = entry.stat(follow_symlinks=False)
                    self.files += 1
            except OSError:
                continue
        if events:
            self.seen_runs.add(run)
            self.read_run(fd, run, events)
        for name in folders:
            if depth >= MAX_DEPTH or self.folders >= MAX_DIRS or self.entries >= MAX_ENTRIES:
                break
            try:
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                continue
            try:
                self.walk(child, name if run == "." else f"{run}/{name}", depth + 1)
            finally:
                os.close(child)

    def _may_read(self, entry: os.DirEntry, wanted: int) -> bool:
        """Whether the job's user (as_user) may do `wanted` with `entry`; always without one."""
        if self.as_user is None:
            return True
        return may_access(entry.stat(follow_symlinks=False), *self.as_user, wanted)

    def read_run(self, fd: int, name: str, events: dict[str, os.stat_result]) -> None:
        runs = self.state["runs"]
        run = runs.get(name)
        if run is not None and any(
            file_name not in events
            or events[file_name].st_ino != known["ino"]
            or events[file_name].st_size < known["offset"]
            for file_name, known in run["files"].items()
        ):
            # A file removed, replaced or cut shorter: TensorBoard would show what is there now.
            self.tags -= len(run["tags"])
            run = None
        if run is None:
            run = runs[name] = _new_run()
            self.changed = True
        for file_name, found in events.items():
            known = run["files"].setdefault(
                file_name, {"ino": found.st_ino, "offset": 0, "size": 0, "blocked": False}
            )
            if found.st_size == known["offset"] or (
                known["blocked"] and found.st_size == known["size"]
            ):
                continue
            if time.monotonic() >= self.deadline:
                self.pending += found.st_size - known["offset"]
                continue
            self.read_file(fd, file_name, run, known)

    def read_file(self, fd: int, file_name: str, run: dict, known: dict) -> None:
        try:
            file = os.open(
                file_name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd
            )
        except OSError:
            return
        try:
            opened = os.fstat(file)
            if not stat.S_ISREG(opened.st_mode) or opened.st_ino != known["ino"]:
                return  # swapped since the folder was listed: read on the next refresh
            records = Records(file, known["offset"])
            for data, data_crc in records:
                self.take(run, data, data_crc)
                if time.monotonic() >= self.deadline:
                    break
            known.update(offset=records.offset, size=opened.st_size, blocked=records.blocked)
            self.changed = True
            if not records.blocked:
                self.pending += max(opened.st_size - records.offset, 0)
        except OSError:
            return
        finally:
            os.close(file)

    def take(self, run: dict, data: bytes, data_crc: int) -> None:
        """Keeps the scalars of one record."""
        try:
            wall_time, step, values = parse_event(data)
        except (Malformed, struct.error):
            self.state["damaged"] += 1
            return
        if not values:
            return
        if masked_crc32c(data) != data_crc:
            self.state["damaged"] += 1
            return
        plugins = run["plugins"]
        for found in values:
            if found.plugin and found.tag not in plugins and len(plugins) < MAX_PLUGIN_TAGS:
                plugins[found.tag] = found.plugin
            value = found.value
            if value is None and plugins.get(found.tag, SCALARS_PLUGIN) == SCALARS_PLUGIN:
                value = found.tensor
            if value is None:
                continue
            series = run["tags"].get(found.tag)
            if series is None:
                if self.tags >= MAX_TAGS:
                    self._skip(run, found.tag)
                    continue
                series = run["tags"][found.tag] = {
                    "n": 0,
                    "nonfinite": 0,
                    "points": [],
                    "first": None,
                    "last": None,
                    "low": None,
                    "high": None,
                }
                self.tags += 1
            _add_point(series, step, value, wall_time)

    def _skip(self, run: dict, tag: str) -> None:
        skipped = self.state["skipped"]
        key = f"{next(n for n, r in self.state['runs'].items() if r is run)}\x00{tag}"
        if key not in skipped and len(skipped) < 1000:
            skipped.append(key)

    def finish(self) -> None:
        """Forgets the runs whose folder is gone."""
        for name in list(self.state["runs"]):
            if name not in self.seen_runs:
                del self.state["runs"][name]
                self.changed = True
        if self.changed:
            alive = set(self.state["runs"])
            self.state["skipped"] = [
                key for key in self.state["skipped"] if key.split("\x00", 1)[0] in alive
            ]


# -- where a job's event files are -----------------------------------------------------------


@dataclass(frozen=True)
class LogFolder:
    mounted: str  # the real host folder of the volume mount logPath lies in
    path: str  # logPath's real host folder, inside `mounted`
    # The uid and gid the owner's jobs run as (LOCAL_JOB_UID_BASE), None without: the walk
    # reads only the folders and files inside `path` that user could read itself.
    as_user: tuple[int, int] | None = None


def log_folder(
    spec: JobSpec, *, owner: Any = None, owner_groups: set[str] | None = None
) -> LogFolder | str:
    """The host folder of a local job's TensorBoard log path, or why there is none to read.
    With an `owner`, none in a volume they may no longer mount (jobs.volume_access): the job
    page would otherwise keep reading a team's volume after its owner left the team
    (`owner_groups`: their group names, when the caller has read them)."""
    log_path = normalised_mount_path(spec.tensorboard.log_path)
    if log_path is None:
        return _("The TensorBoard log path is not an absolute path.")
    mounts = [
        ds
        for ds in spec.datasources
        if ds.type == "hostpath"
        and normalised_mount_path(ds.mount_path)
        and is_within(log_path, ds.mount_path)
    ]
    if not mounts:
        return _(
            "The TensorBoard log path %(path)s is not on a volume this job mounts, so its event "
            "files stay inside the job's own file system (its /tmp is removed when it ends), "
            "where the console does not read. Mount a volume at or above %(path)s (step "
            "Data sources) to see the curves here."
        ) % {"path": log_path}
    # The deepest mount wins, as it does in the sandbox.
    mount = max(mounts, key=lambda ds: len(ds.mount_path))
    volumes = {volume.name: volume for volume in host_volumes()}
    roots = {name: volume.root for name, volume in volumes.items()}
    if mount.name not in roots:
        return _("Volume %(volume)s is not available on this machine.") % {"volume": mount.name}
    if owner is not None and not may_mount(
        user=owner, volume=volumes[mount.name], groups=owner_groups
    ):
        return _(
            "Volume %(volume)s is no longer offered to this job's owner, so its event files "
            "are not read."
        ) % {"volume": mount.name}
    outside = _(
        "The TensorBoard log path %(path)s leads outside the folder the job mounts there (a "
        "symbolic link): the console reads only inside it."
    ) % {"path": log_path}
    try:
        mounted = str(resolve_in_root(roots[mount.name], mount.source_path))
    except SandboxError:
        return outside
    target = os.path.realpath(
        posixpath.join(mounted, posixpath.relpath(log_path, mount.mount_path))
    )
    if not is_within(target, mounted):
        return outside
    as_user = None
    if owner is not None:
        try:
            as_user = job_users.user_for(owner_id=owner.pk)
        except job_users.JobUserError as error:
            return _("The event files are not read: %(reason)s") % {"reason": error}
        if as_user is not None and (
            refused := _out_of_owners_reach(
                target, root=roots[mount.name], volume=mount.name, as_user=as_user
            )
        ):
            return refused
    return LogFolder(mounted=mounted, path=target, as_user=as_user)


def _out_of_owners_reach(
    target: str, *, root: Path, volume: str, as_user: tuple[int, int]
) -> str | None:
    """Why the console does not read the log folder `target` for a job whose user is
    `as_user` (LOCAL_JOB_UID_BASE): as the runner mounts a folder (sandbox.
    check_within_reach), only one that user could read itself. The console reads as the
    worker's user, so until review 48 Bob's job page drew the curves of Alice's event files in
    her 0700 folder, his job's TensorBoard log path under a mount of it. None: read it (none
    there yet included: looked at again at each read). What is inside it is read as that
    user could too (_Reading.walk)."""
    try:
        fd = os.open(target, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        check_within_reach(fd, target, root=root, volume=volume, read_only=True, as_user=as_user)
    except SandboxError as error:
        return _("The event files are not read: %(reason)s") % {"reason": error}
    finally:
        os.close(fd)
    return None


def _open_folder(folder: LogFolder) -> int | None:
    """A descriptor of the log folder, checked where it really points; None when there is no
    such folder (yet), or it has become something else since it was resolved."""
    try:
        fd = os.open(folder.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    if not is_within(os.readlink(f"/proc/self/fd/{fd}"), folder.mounted):
        os.close(fd)
        return None
    return fd


def read_state(
    folder: LogFolder,
    *,
    state_dir: Path | None,
    seconds: float,
    window: tuple[int, int | None] | None = None,
) -> tuple[dict, int]:
    """What has been read of the folder's event files, brought up to date for at most
    `seconds`, and how many bytes are left to read. The state is kept in `state_dir` (the
    job's run folder) when there is one: only one request reads at a time, the others
    answer with the state as it is. `window`: only the files created then (_written_in)."""
    deadline = time.monotonic() + seconds
    if state_dir is None or not state_dir.is_dir():
        return _refreshed(_new_state(folder.path), folder, deadline, window=window)
    state_path = state_dir / STATE_FILE
    try:
        lock = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o640)
    except OSError:
        return _refreshed(_new_state(folder.path), folder, deadline, window=window)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # Another request is reading: the state as that one last saved it.
            state = _loaded(state_path, folder)
            left = sum(
                max(known["size"] - known["offset"], 0)
                for run in state["runs"].values()
                for known in run["files"].values()
                if not known["blocked"]
            )
            return state, left
        # Taken out while it is brought up to date, put back once it matches the file again.
        with _caches_lock:
            identity, state = _kept.pop(str(state_path), (None, None))
        with contextlib.suppress(OSError):
            if state is None or identity != _identity(state_path) or state["folder"] != folder.path:
                state = None
        state = state or _loaded(state_path, folder)
        state, pending = _refreshed(state, folder, deadline, save_to=state_path, window=window)
        with contextlib.suppress(OSError):
            _keep(state_path, state)
        return state, pending
    finally:
        os.close(lock)


# The latest states read in this process, by state file, with the file's identity then:
# decoding a state of 48 tags (~700 KB of JSON) would be most of every poll's cost. Another
# process (a second gunicorn worker) that updates the file changes its identity.
_kept: dict[str, tuple[tuple[int, int, int], dict]] = {}
KEPT_STATES = 16  # jobs whose pages are open at once; ~3 MB each at most in memory
# gunicorn's threads (WEB_THREADS) share this and _drawn: two evicting at once could pick the
# same oldest entry, and the second pop would fail the page's section.
_caches_lock = threading.Lock()


def _identity(path: Path) -> tuple[int, int, int]:
    found = path.stat()
    return found.st_ino, found.st_mtime_ns, found.st_size


def _keep(path: Path, state: dict) -> None:
    identity = _identity(path)
    with _caches_lock:
        if len(_kept) >= KEPT_STATES:
            _kept.pop(next(iter(_kept)))
        _kept[str(path)] = (identity, state)


def _loaded(path: Path, folder: LogFolder) -> dict:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return _new_state(folder.path)
    if state.get("version") != STATE_VERSION or state.get("folder") != folder.path:
        return _new_state(folder.path)
    return state


def _refreshed(
    state: dict,
    folder: LogFolder,
    deadline: float,
    *,
    save_to: Path | None = None,
    window: tuple[int, int | None] | None = None,
) -> tuple[dict, int]:
    fd = _open_folder(folder)
    reading = _Reading(state, deadline, window, as_user=folder.as_user)
    if fd is not None:
        try:
            reading.walk(fd, ".", 0)
        finally:
            os.close(fd)
    reading.finish()
    if reading.changed and save_to is not None:
        state["generation"] = state.get("generation", 0) + 1
        # A job deleted meanwhile has no folder: nothing is written (nor the folder made again).
        with contextlib.suppress(OSError):
            write_atomic(save_to, json.dumps(state, separators=(",", ":")))
    return state, reading.pending


# -- the job page's section ------------------------------------------------------------------


@dataclass(frozen=True)
class MetricChart:
    run: str
    tag: str
    latest: str  # the latest value, as shown
    latest_step: int
    first_step: int  # the chart's first and last step (steps may go back: a restart)
    last_step: int
    low: str  # the lowest and highest values (the chart's bottom and top)
    high: str
    points: str  # an SVG polyline's points, in a CHART_WIDTH x CHART_HEIGHT box
    text: str  # the chart's text alternative
    # On a log scale: the ticks of its Y axis, and how many of its points are 0 or below (not
    # drawn) of how many it has.
    ticks: list[AxisTick] = field(default_factory=list)
    left_out: int = 0
    point_count: int = 0
    # On either scale: how many of its values (value_count, all read) are NaN or infinite,
    # which no axis has a place for (not drawn).
    nonfinite: int = 0
    value_count: int = 0


@dataclass
class TrainingMetrics:
    log_path: str
    note: str = ""  # why there are no curves to read (the page shows it instead)
    charts: list[MetricChart] = field(default_factory=list)
    runs: int = 0
    more_tags: int = 0  # tags found beyond MAX_TAGS, not shown
    damaged: int = 0  # records skipped as damaged
    pending: int = 0  # bytes of event files still to read (caught up over the next polls)


def shown_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}"


def shown_name(run: str) -> str:
    """A run's folder path as the page shows it: bytes that are no UTF-8 (kept by os as
    surrogates, which no page can be encoded with) as "�"."""
    return run.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


@dataclass(frozen=True)
class AxisTick:
    label: str  # a power of ten as every value on the page reads (shown_value: 0.001, 1e-05)
    y: str  # its height in the chart, from the top: in the viewBox (CHART_HEIGHT 100) and in %


@dataclass(frozen=True)
class LogAxis:
    """A log scale's Y axis: from the power of ten at or below the lowest value drawn to the
    one at or above the highest (whole decades, so both ends are labelled ticks)."""

    bottom: float  # exponents of ten
    top: float

    def y(self, value: float) -> float:
        return (
            CHART_HEIGHT
            - 2
            - (math.log10(value) - self.bottom) / (self.top - self.bottom) * (CHART_HEIGHT - 4)
        )

    def ticks(self) -> list[AxisTick]:
        """A tick at each power of ten, or each second, third… past MAX_TICKS of them."""
        bottom, top = int(self.bottom), int(self.top)
        every = math.ceil((top - bottom) / (MAX_TICKS - 1))
        return [
            AxisTick(
                label=power_of_ten(exponent),
                y=f"{CHART_HEIGHT - 2 - (exponent - bottom) / (top - bottom) * (CHART_HEIGHT - 4):.1f}",
            )
            for exponent in range(bottom, top + 1, every)
        ]


MAX_TICKS = 6  # labelled ticks of a log axis: a chart is 6 to 8 rem high


def power_of_ten(exponent: int) -> str:
    """10**exponent as shown_value shows it (6 significant digits, %g), also where it is no
    float (1e+309, 1e-400: a hostile file's tag may span those)."""
    if -4 <= exponent < 6:
        return shown_value(10.0**exponent)
    return f"1e{'+' if exponent > 0 else '-'}{abs(exponent):02d}"


def log_axis(points: list[list]) -> LogAxis | None:
    """The log axis of the positive points (None: there are none to draw)."""
    drawn = [value for _step, value in points if value > 0]
    if not drawn:
        return None
    # A value written as a float32 (0.1 is 0.100000001) is a power of ten to within its
    # precision: its own decade, not the one above (or below) it.
    bottom = math.floor(math.log10(min(drawn)) + 1e-6)
    top = math.ceil(math.log10(max(drawn)) - 1e-6)
    if top == bottom:  # one power of ten alone: a level line between the decades around it
        bottom, top = bottom - 1, top + 1
    return LogAxis(bottom=bottom, top=top)


def chart(run: str, tag: str, series: dict, *, log: bool = False) -> MetricChart:
    """A tag's chart, on a linear Y axis from its lowest value to its highest, or on a log one
    (`log`), where its points at or below 0 are left out and counted, never drawn elsewhere."""
    points = _finite_points(series)
    low = series["low"][1] if series["low"] else 0.0
    high = series["high"][1] if series["high"] else 0.0
    first_step = series["first"][0]
    last_step, latest, _wall = series["last"]
    steps = (points[0][0], points[-1][0]) if points else (first_step, last_step)
    # No finite value at all (every one NaN): nothing drawn, and no extremes to name.
    low_shown = shown_value(low) if series["low"] else "–"
    high_shown = shown_value(high) if series["high"] else "–"
    text = _(
        "%(tag)s: %(count)s values, steps %(first)s to %(last)s; lowest %(low)s, highest "
        "%(high)s, latest %(latest)s at step %(step)s"
    ) % {
        "tag": tag,
        "count": series["n"],
        "first": steps[0],
        "last": steps[1],
        "low": low_shown,
        "high": high_shown,
        "latest": shown_value(latest),
        "step": last_step,
    }
    axis = log_axis(points) if log else None
    return MetricChart(
        run=shown_name(run),
        tag=tag,
        latest=shown_value(latest),
        latest_step=last_step,
        first_step=steps[0],
        last_step=steps[1],
        low=low_shown,
        high=high_shown,
        points=_polyline(points, steps=steps, low=low, high=high, log=axis)
        if not log or axis
        else "",
        text=text,
        ticks=axis.ticks() if axis else [],
        left_out=sum(1 for _step, value in points if value <= 0) if log else 0,
        point_count=len(points),
        nonfinite=series.get("nonfinite", 0),
        value_count=series["n"],
    )


def _finite_points(series: dict) -> list[list]:
    return sorted((p for p in series["points"] if math.isfinite(p[1])), key=lambda point: point[0])


def _polyline(
    points: list[list],
    *,
    steps: tuple[int, int],
    low: float,
    high: float,
    log: LogAxis | None = None,
) -> str:
    """An SVG polyline's points for (step, value) points in a CHART_WIDTH x CHART_HEIGHT box
    spanning `steps` across and `low` to `high` up, or the `log` axis up (its points at or
    below 0 left out)."""
    drawn = []
    for step, value in points:
        if log is not None and value <= 0:
            continue
        x = (step - steps[0]) / (steps[1] - steps[0]) * CHART_WIDTH if steps[1] > steps[0] else 0
        # In halves: the span of two doubles far apart (-1e308 to 1e308) is no float.
        y = (
            log.y(value)
            if log is not None
            else CHART_HEIGHT / 2
            if high == low
            else CHART_HEIGHT
            - 2
            - (value / 2 - low / 2) / (high / 2 - low / 2) * (CHART_HEIGHT - 4)
        )
        drawn.append(f"{x:.1f},{y:.1f}")
    if len(drawn) == 1 and len(points) > 1:
        # One point left of several (a log scale left the others out): a short dash where it
        # is, as a polyline of one point draws nothing, not a line over steps it has no value at.
        x, y = (float(part) for part in drawn[0].split(","))
        drawn = [f"{max(x - 2, 0):.1f},{y:.1f}", f"{min(x + 2, CHART_WIDTH):.1f},{y:.1f}"]
    elif len(drawn) == 1:  # one value: a level line, as a polyline of one point draws nothing
        drawn.append(f"{CHART_WIDTH},{drawn[0].split(',')[1]}")
    return " ".join(drawn)


def training_metrics(
    *,
    job: Job,
    seconds: float | None = None,
    owner_groups: set[str] | None = None,
    log: bool = False,
) -> TrainingMetrics | None:
    """The training curves of a job with TensorBoard on (None: it is off, or its spec cannot
    be read), or the reason the console has none to show; reading for at most `seconds`
    (READ_SECONDS by default). `owner_groups`: its owner's group names, when read already.
    `log`: the charts on a log Y axis."""
    read = _read_job(job=job, seconds=seconds, owner_groups=owner_groups)
    if read is None:
        return None
    metrics, state, folder = read
    if state is not None:
        charts = _charts(
            state, key=(job.public_id, folder, state.get("generation"), get_language(), log)
        )
        metrics.charts = _names_masked(charts, secrets=job.secret_values())
    return metrics


def _names_masked(charts: list[Any], *, secrets: list[str]) -> list[Any]:
    """The charts with the jobs' secret values masked in their run and tag names, as in their
    logs: the job names them (a run folder after its Hugging Face repo and token...), and a
    secret is never rendered (QA 53: a run named with HF_TOKEN's value showed it). Copies:
    the drawn charts are kept for the next poll."""
    if not secrets:
        return charts
    return [
        replace(
            chart,
            run=job_logs.masked(chart.run, secrets),
            tag=job_logs.masked(chart.tag, secrets),
            text=job_logs.masked(chart.text, secrets),
        )
        for chart in charts
    ]


def _task_folder(folder: LogFolder, spec: JobSpec, job: Job) -> tuple[LogFolder, str] | None:
    """A queue group task's own sub-folder of the log path, named by its
    AIHC_GROUP_TASK_INDEX (`<log path>/2` for task 3/6), when there is one, and its name as a
    page may show it. The group's tasks share one spec and so one log path: tasks running
    side by side write there at the same time, which no file's creation time tells apart, and
    each task's page drew all of them (compare27). A sweep that writes each task's files under
    its index gets its own curves on each page and in Compare; a Run again of task 3/6 pins
    index 2 and reads that folder too. An index the job's envs set as a secret is read there
    all the same, but shown masked: a secret is never rendered (left29)."""
    env = next((e for e in with_group_task(spec, job).envs if e.name == GROUP_INDEX), None)
    index = env.value if env is not None else ""
    if not index or index in {".", ".."} or "/" in index:
        return None
    path = os.path.realpath(os.path.join(folder.path, index))
    if not os.path.isdir(path) or not is_within(path, folder.mounted):
        return None
    # The index is the job's to set (its envs): a folder its user could not read is not read
    # for it (review 50: Bob's AIHC_GROUP_TASK_INDEX=private read Alice's 0700 run folder).
    if folder.as_user is not None and not may_access(
        os.stat(path), *folder.as_user, os.R_OK | os.X_OK
    ):
        return None
    shown = mask(index) if env is not None and env.secret else posixpath.basename(path)
    return LogFolder(mounted=folder.mounted, path=path, as_user=folder.as_user), shown


def _read_job(
    *, job: Job, seconds: float | None, owner_groups: set[str] | None
) -> tuple[TrainingMetrics, dict | None, str] | None:
    """A job's metrics without their charts, the state read (None when nothing can be read:
    the metrics' note says why) and its log folder; None with TensorBoard off or an unreadable
    spec. The one way a page reads a job's event files: bounded by `seconds`, and through the
    state file in the job's run folder (read_state)."""
    try:
        spec = job.job_spec()
    except SpecError:
        return None
    if not spec.tensorboard.enable:
        return None
    metrics = TrainingMetrics(log_path=spec.tensorboard.log_path)
    if job.backend != "local":
        metrics.note = _(
            # AIHC's console is in Chinese: its page's name as it shows it, then what it means.
            "The console reads event files on this machine only; this job's are on the storage "
            "of %(backend)s. Open its TensorBoard there (on AIHC: the job's 训练效果监控, "
            "training monitoring, page)."
        ) % {"backend": REMOTE_NAMES.get(job.backend, job.backend)}
        return metrics, None, ""
    folder = log_folder(spec, owner=job.owner, owner_groups=owner_groups)
    if isinstance(folder, str):
        metrics.note = folder
        return metrics, None, ""
    own = _task_folder(folder, spec, job)
    if own is not None:
        folder, shown = own
        metrics.log_path = posixpath.join(metrics.log_path, shown)
    try:
        state, metrics.pending = read_state(
            folder,
            state_dir=job_logs.job_dir(job.public_id, job_logs.runner_of(job)),
            seconds=READ_SECONDS if seconds is None else seconds,
            # Names carry whole seconds (cut, not rounded): from just before it started (the
            # runner marks it Running before its processes start; not started yet, from its
            # submission) to the second it ended in (its processes have exited by then).
            window=(
                int((job.started_at or job.created_at).timestamp()) - PRELOADED_SECONDS,
                int(job.finished_at.timestamp()) if job.finished_at else None,
            ),
        )
    except Exception:  # whatever a job left in its volume must not break its page
        logger.exception("reading the event files of %s failed", job.public_id)
        metrics.note = _("The event files cannot be read right now.")
        return metrics, None, ""
    if not state["runs"] and not metrics.pending and job.is_final:
        # "No scalars yet" promised curves that could no longer come (QA 37): most often the
        # code wrote its event files to a path of its own, not the one the job was given.
        metrics.note = _(
            "This job has ended and there are no event files (events.out.tfevents.*) under "
            "%(path)s, so it has no curves. Its code is given this path in the "
            "AIHC_TENSORBOARD_LOG_PATH variable: write them there, e.g. "
            'SummaryWriter(os.environ["AIHC_TENSORBOARD_LOG_PATH"]).'
        ) % {"path": spec.tensorboard.log_path}
        return metrics, None, ""
    metrics.runs = len(state["runs"])
    metrics.damaged = state["damaged"]
    metrics.more_tags = len(state["skipped"])
    return metrics, state, folder.path


# The charts of the latest states read, by (job, log folder, its state's generation, language,
# log scale):
# drawing 48 charts of 500 points is most of a poll's cost, and most polls find nothing new.
_drawn: dict[tuple, list[MetricChart]] = {}
DRAWN_KEPT = 16


def _charts(state: dict, *, key: tuple) -> list[MetricChart]:
    if key[2] is not None:
        with _caches_lock:
            drawn = _drawn.get(key)
        if drawn is not None:
            return drawn
    charts = [
        chart(run_name, tag, series, log=key[4])
        for run_name, run in sorted(state["runs"].items())
        for tag, series in sorted(run["tags"].items())
    ]
    if key[2] is not None:  # a state kept in a file; one read in memory alone has no generation
        with _caches_lock:
            if len(_drawn) >= DRAWN_KEPT:
                _drawn.pop(next(iter(_drawn)))
            _drawn[key] = charts
    return charts


# -- several jobs' curves on one chart (Compare jobs, jobs.compare) --------------------------


@dataclass(frozen=True)
class ComparedLine:
    column: int  # the job's column on the page: its colour and dash (console.css)
    name: str  # the job's name, for the legend and the text alternative
    points: str  # an SVG polyline's points, on the chart's common scale
    latest: str
    latest_step: int
    low: str
    high: str
    left_out: int = 0  # on a log scale: its points at or below 0, not drawn
    point_count: int = 0  # of its points on the chart
    nonfinite: int = 0  # on either scale: its NaN and infinite values, not drawn
    value_count: int = 0  # of all its values read
    # Among the jobs with this tag, its latest value is the lowest or the highest of theirs
    # ("low", "high"; "" otherwise, or when they do not differ): words, not a guess of which
    # is better (a loss falls, an accuracy rises).
    extreme: str = ""


@dataclass(frozen=True)
class ComparedChart:
    run: str
    tag: str
    lines: list[ComparedLine]  # the jobs that have this tag, in column order
    low: str  # the chart's bottom and top: the lowest and highest of all its lines
    high: str
    first_step: int
    last_step: int
    text: str  # the chart's text alternative: each job's latest, lowest and highest
    ticks: list[AxisTick] = field(default_factory=list)  # a log scale's Y axis


@dataclass
class MetricsComparison:
    metrics: list[TrainingMetrics | None]  # each job's, in column order (None: TensorBoard off)
    charts: list[ComparedChart] = field(default_factory=list)
    # Each job's latest value of each chart's tag (None: it has no such tag), in column order.
    latest: list[list[ComparedLine | None]] = field(default_factory=list)
    named_runs: bool = False  # some chart is of a run other than the log path itself
    more_tags: int = 0  # tags of these jobs beyond MAX_TAGS, not shown

    @property
    def all_off(self) -> bool:
        """TensorBoard is off for every job: each one's line says so, and no more is said."""
        return all(m is None for m in self.metrics)


def compared_metrics(
    jobs: list[Job],
    *,
    names: list[str],
    owner_groups: list[set[str] | None] | None = None,
    log: bool = False,
) -> MetricsComparison:
    """The jobs' training curves together: one chart per run and tag any of them has (the
    first MAX_TAGS in name order), with a line per job that has it, all on one scale; each
    line named as `names` has its job (jobs.compare.column_names). Each job
    is read as its page reads it (_read_job: bounded by READ_SECONDS, through its state file),
    so comparing costs each job no more than a refresh of its page."""
    groups = owner_groups or [None] * len(jobs)
    read = [
        _read_job(job=job, seconds=None, owner_groups=owner)
        for job, owner in zip(jobs, groups, strict=True)
    ]
    comparison = MetricsComparison(metrics=[one[0] if one else None for one in read])
    states = [one[1] if one else None for one in read]
    keys = sorted(
        {
            (run_name, tag)
            for state in states
            if state is not None
            for run_name, run in state["runs"].items()
            for tag in run["tags"]
        }
    )
    comparison.more_tags = max(len(keys) - MAX_TAGS, 0)
    comparison.named_runs = any(run_name != "." for run_name, _tag in keys)
    comparison.charts = [
        _compared_chart(
            run_name,
            tag,
            [
                (column, name, state["runs"].get(run_name, {}).get("tags", {}).get(tag))
                for column, (name, state) in enumerate(zip(names, states, strict=True))
                if state is not None
            ],
            log=log,
        )
        for run_name, tag in keys[:MAX_TAGS]
    ]
    comparison.charts = _names_masked(
        comparison.charts, secrets=[value for job in jobs for value in job.secret_values()]
    )
    by_column = [{line.column: line for line in c.lines} for c in comparison.charts]
    comparison.latest = [[lines.get(column) for lines in by_column] for column in range(len(jobs))]
    return comparison


def _extremes_marked(lines: list[ComparedLine], latest: list[float]) -> list[ComparedLine]:
    """The lines whose latest value is the lowest or the highest of them (each that ties),
    among finite values, when at least two differ."""
    finite = [value for value in latest if math.isfinite(value)]
    if len(set(finite)) < 2:
        return lines
    low, high = min(finite), max(finite)
    marks = {low: "low", high: "high"}
    return [
        replace(line, extreme=marks.get(value, "")) if math.isfinite(value) else line
        for line, value in zip(lines, latest, strict=True)
    ]


def _compared_chart(
    run: str, tag: str, found: list[tuple[int, str, dict | None]], *, log: bool = False
) -> ComparedChart:
    present = [(column, name, series) for column, name, series in found if series is not None]
    drawn = [(column, name, series, _finite_points(series)) for column, name, series in present]
    lows = [series["low"][1] for _c, _n, series in present if series["low"]]
    highs = [series["high"][1] for _c, _n, series in present if series["high"]]
    low, high = (min(lows), max(highs)) if lows and highs else (0.0, 0.0)
    firsts = [points[0][0] if points else series["first"][0] for _c, _n, series, points in drawn]
    lasts = [points[-1][0] if points else series["last"][0] for _c, _n, series, points in drawn]
    steps = (min(firsts), max(lasts))
    # On a log scale, one axis for every line: the decades around all their positive points.
    axis = log_axis([point for *_found, points in drawn for point in points]) if log else None
    lines = [
        ComparedLine(
            column=column,
            name=name,
            points=_polyline(points, steps=steps, low=low, high=high, log=axis)
            if points and (axis or not log)
            else "",
            latest=shown_value(series["last"][1]),
            latest_step=series["last"][0],
            low=shown_value(series["low"][1]) if series["low"] else "–",
            high=shown_value(series["high"][1]) if series["high"] else "–",
            left_out=sum(1 for _step, value in points if value <= 0) if log else 0,
            point_count=len(points),
            nonfinite=series.get("nonfinite", 0),
            value_count=series["n"],
        )
        for column, name, series, points in drawn
    ]
    lines = _extremes_marked(lines, [series["last"][1] for _c, _n, series, _p in drawn])
    said = [
        _("%(job)s: latest %(latest)s at step %(step)s, lowest %(low)s, highest %(high)s")
        % {
            "job": line.name,
            "latest": line.latest,
            "step": line.latest_step,
            "low": line.low,
            "high": line.high,
        }
        for line in lines
    ]
    missing = [name for _column, name, series in found if series is None]
    if missing:
        said.append(
            _("no values from %(jobs)s")
            % {"jobs": pgettext("between list items", ", ").join(missing)}
        )
    text = _("%(tag)s, steps %(first)s to %(last)s. %(jobs)s.") % {
        "tag": tag if run == "." else f"{shown_name(run)} / {tag}",
        "first": steps[0],
        "last": steps[1],
        "jobs": "; ".join(said),
    }
    return ComparedChart(
        run=shown_name(run),
        tag=tag,
        lines=lines,
        low=shown_value(low) if lows else "–",
        high=shown_value(high) if highs else "–",
        first_step=steps[0],
        last_step=steps[1],
        text=text,
        ticks=axis.ticks() if axis else [],
    )
