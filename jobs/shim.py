"""The per-replica supervisor of the local runner (runs as a plain script, without Django).

The worker starts one shim per replica, in a new session, so the replica outlives a worker
that is killed or restarted. The shim:

- pins itself (and so the replica) to the given CPU cores;
- moves the command into the replica's cgroups (its CPU and memory limits, jobs.cgroups)
  between fork and exec, so no instruction of it runs outside them; the shim itself stays
  outside (its memory is not the job's, and the job's OOM kill never hits it);
- with LOCAL_JOB_NETWORK=isolated, moves the command into the job's network namespace
  (jobs.network) the same way, right after, so bubblewrap starts inside it;
- starts the sandboxed command (bwrap) with a fixed environment of its own
  (BWRAP_ENVIRONMENT), handing it the descriptors of the volume folders the runner opened
  and checked and of bwrap's options (`--mount-fd`; bwrap binds the folders, and reads its
  options, the job's environment among them, from the last: sandbox.environment_options);
- reads the job's environment from an in-memory file the runner made (secret values
  never appear on a command line), for the values of its secret envs;
- writes every output line to the replica's log, prefixed with a UTC timestamp, with the
  values of the job's secret envs (each line of a multi-line one) replaced by `******`,
  and keeps that log under its size cap (ReplicaLog); its own lines (the banner, the exit
  code, a cut) carry CONSOLE_MARK after the stamp, which a line of the job's never does;
- records the first line that contains a fault-tolerance keyword (file `keyword`);
- records the exit code when the command ends (file `exit`), which is how a restarted
  worker learns how an adopted replica ended;
- measures the replica's /tmp every so often and records when it holds more than its cap
  (file `tmp-over`; TmpMeter): the worker then ends the replica as a failure, as the
  kubelet evicts a pod over its ephemeral-storage limit;
- samples what the replica uses, CPU, memory and /tmp, every so often into file `usage`
  (UsageMeter, UsageLog), which the job page shows;
- ends the replica when its command ends: whatever the command left running in the
  background (a TensorBoard, a log shipper) is killed then, as in a container whose main
  process exits. Left alone, it would hold the sandbox open, and with it the log pipe, and
  the job would stay Running with its cards taken until that process ended, if ever.

The worker holds a lock on `<state>/lock` from before the spawn and passes it in as an open
file descriptor: while the lock is held the shim is alive, which is how a worker tells a
live replica from a dead one without trusting pids.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import json
import math
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

MAX_LINE = 64 * 1024
MASK = b"******"
# Right after the stamp, marks a line as the runner's own ("<stamp> \x1f[console] exited with
# code 0"), for the pages to show it as the console's (jobs.logs). ASCII's unit separator: no
# text a person reads holds it, it ends no line anywhere (the record separator, \x1e, does for
# Python's str.splitlines), and the pages drop it from any line as a control character. A
# line of the job's is written without it: the shim takes every one its output begins with
# off the line (job_line), so no job can print a line that reads as the runner's.
CONSOLE_MARK = b"\x1f"
# Shorter secret values are not masked: replacing every "1" or "on" would wreck the log.
MIN_MASKED_LENGTH = 4
PR_SET_CHILD_SUBREAPER = 36
# All of the environment bwrap runs with on the host. Never the job's: bwrap is not setuid,
# so the host's dynamic loader would honour its LD_PRELOAD, LD_AUDIT or LD_LIBRARY_PATH in
# bwrap's process, as the worker's user, before any namespace exists (qa100). bwrap sets the
# job's for the sandboxed command only (sandbox.environment_options).
BWRAP_ENVIRONMENT = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

# The command's first step inside the sandbox, run as `bash -c START_GATE bash COMMAND` with
# two descriptors the shim appends: it writes a byte to the first once its process exists,
# then waits on the second for the shim's word ("g") before it becomes `bash -c COMMAND`.
# A stop's SIGTERM that came while bubblewrap was still setting up found no command to
# reach (the sandbox's init ignores it): the shim caught it, so the command ends here with
# 143, as that SIGTERM would have ended it. A later one reaches the command's process.
START_GATE = (
    'printf . >&"$2"; read -r -n 1 go <&"$3"; eval "exec $2>&- $3<&-"; '
    '[ "$go" = g ] || exit 143; exec bash -c "$1"'
)


STAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ "


def stamp() -> bytes:
    return datetime.now(UTC).strftime(STAMP_FORMAT).encode()


def console_line(when: bytes, text: str) -> bytes:
    """One of the runner's own lines as the log keeps it: marked as the console's."""
    return when + CONSOLE_MARK + text.encode() + b"\n"


def job_line(when: bytes, line: bytes) -> bytes:
    """A line (or a piece of one) of the job's output as the log keeps it: never marked as
    the console's, however it begins."""
    return when + line.lstrip(CONSOLE_MARK) + (b"" if line.endswith(b"\n") else b"\n")


def log_text(data: bytes) -> str:
    """A log line's text, as the job page, its search, the admin's download and a failure
    reason show it (left31). UTF-8, as nearly every tool writes; else GB18030 (GBK's
    superset), what a tool built on Chinese Windows or a `zh_CN.GBK` locale writes, when all
    of the line reads as GB18030; else UTF-8 with U+FFFD for each byte it cannot read
    (Latin-1's é, a binary's bytes). Not GB18030 when UTF-8 read Chinese (or any character
    of three bytes) before its first unreadable byte: that is UTF-8 text with a stray byte,
    which GB18030 would garble (a GBK pair can read as a two-byte UTF-8 character, "训" as
    "ѵ", never as Chinese); nor when the line is cut in the middle of a character (a long
    line's 64 KiB piece). Latin-1 letters in pairs can read as GB18030 ("Müller" as
    "M黮ler"): a log that is neither shows them so."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut = exc.end == len(data) and exc.reason == "unexpected end of data"
        read = data[: exc.start].decode("utf-8")
        if cut or any(ord(c) >= 0x800 for c in read):
            return data.decode("utf-8", errors="replace")
    try:
        return data.decode("gb18030")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_exit_record(state: Path, code: int) -> None:
    """The replica's exit code (and when it exited) for the worker, tried again every second
    while the disk is full: the shim holds its lock meanwhile, so the worker sees the replica
    as running until the record is written, rather than as lost without an exit code (QA 69:
    a job that succeeded on a full disk was failed so)."""
    record = json.dumps({"code": code, "time": time.time()})
    while True:
        try:
            write_atomic(state / "exit", record)
            return
        except OSError as error:
            if error.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            (state / "exit.tmp").unlink(missing_ok=True)
            time.sleep(1)


def become_subreaper() -> None:
    """Orphans of the command's sandbox become this process's children instead of init's.

    bwrap runs as two processes: the outer one, the shim's child, which exits with the
    command's code as soon as the command ends, and the init of the replica's pid namespace,
    which waits for every process left in it. Once the outer one is gone, that init is
    adopted here, where the shim can end it (and every process in the namespace with it)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def own_children() -> list[int]:
    """Pids of this process's children (not reaped yet, so none can be a recycled pid)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                found.append(int(entry))
    return found


def end_with_command(child: subprocess.Popen[bytes]) -> None:
    """Once the command has ended, kills what it left in its sandbox (see become_subreaper).

    Not when the outer bwrap was itself killed by a signal: that is a stop (or a timeout,
    or a restart's tear-down), and the command's own SIGTERM handler gets the grace period
    the worker allows before its SIGKILL."""
    if child.wait() < 0:
        return
    for pid in own_children():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)  # a pid namespace's init: everything in it dies
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


# When the machine runs out of memory, the kernel's OOM killer ends the process it scores
# worst, mostly by size. A job's command gets the highest preference (as Kubernetes gives a
# BestEffort pod), so that a job without a memory limit (the default) that fills the machine's
# memory, even spread over many small processes each smaller than the database, the worker
# or the web server, is what gets killed, not those. This is for a runaway job, not against
# a hostile one: the kernel lets a process lower its own value back to where it started (0
# here), though never below, so it can make itself only as likely a choice as the console's
# processes. What holds a hostile job is a memory value on its role (jobs.cgroups) or a
# memory limit on the worker's unit. The shim itself keeps its own value (it is not the job;
# its end would make the replica look lost).
OOM_SCORE_ADJ = 1000


def become(uid: int, gid: int) -> None:
    """Makes this process the user uid in the group gid and nothing else, for good: no other
    group, and real, effective and saved ids all changed (a saved uid 0 would let it take
    root back). Raises OSError if anything of root's is left."""
    os.setgroups([gid])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if (
        os.getresuid() != (uid, uid, uid)
        or os.getresgid() != (gid, gid, gid)
        or os.getgroups() not in ([gid], [])
    ):
        raise OSError(f"still {os.getresuid()} {os.getresgid()} {os.getgroups()}")
    # No way back: setuid(0) must fail now.
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise OSError("could become root again")


def joining(
    cgroups: list[str], namespaces: list[int], as_user: tuple[int, int] | None = None
) -> Callable[[], None]:
    """What the command's process runs between fork and exec: it writes itself into each
    cgroup, then enters each namespace (descriptors of the job's network namespace, and of
    the user namespace that owns it first when there is one: jobs.network), so bubblewrap
    starts inside them, then, with `as_user` (LOCAL_JOB_UID_BASE, jobs.job_users), becomes
    that user for good (become), which needs both done first: only root may move a process
    into the cgroups and namespaces, both root's. Cgroups first: a process in another user
    namespace may no longer move itself. (The shim has no other thread at that point, which
    preexec_fn and entering a user namespace need.)"""

    def join() -> None:
        # First the OOM killer's preference (see OOM_SCORE_ADJ), while still in the shim's
        # own namespaces. Raising it is always allowed; a /proc without it changes nothing.
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as adj:
            adj.write(str(OOM_SCORE_ADJ))
        for folder in cgroups:
            with open(os.path.join(folder, "cgroup.procs"), "w") as procs:
                procs.write(str(os.getpid()))
        for fd in namespaces:
            os.setns(fd, 0)  # 0: whatever kind of namespace the descriptor is
        if as_user is not None:
            become(*as_user)

    return join


LINE_END = re.compile(rb"\r\n|\n|\r")


# (mask, value, length): the first byte of a UTF-8 character of 4, 3 or 2 bytes.
UTF8_LEADS = ((0xF8, 0xF0, 4), (0xF0, 0xE0, 3), (0xE0, 0xC0, 2))


def char_start(data: bytes, at: int) -> int:
    """Where to cut `data` near `at` without splitting a UTF-8 character: `at`, or the start
    of a character `at` falls inside (each half, logged as a line of its own, would show as
    garbage). Data that is not UTF-8 is cut at `at`."""
    for start in range(at - 1, max(at - 4, -1), -1):
        byte = data[start]
        if byte & 0xC0 != 0x80:  # not a continuation byte: ASCII, or where a character starts
            length = next((n for mask, lead, n in UTF8_LEADS if byte & mask == lead), 1)
            return start if start + length > at else at
    return at


STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z ")
COPY_CHUNK = 1024 * 1024


def copy_range(source: int, target: int, start: int, end: int) -> None:
    """Appends bytes `start`..`end` of file `source` to file `target`."""
    while start < end:
        try:  # in the kernel, without passing through this process
            done = os.copy_file_range(source, target, end - start, start)
        except OSError:  # a file system or kernel without it
            done = os.write(target, os.pread(source, min(COPY_CHUNK, end - start), start))
        if done <= 0:
            raise OSError(f"copied nothing at {start}")
        start += done


def _stamp_moment(head: bytes) -> datetime | None:
    """The stamp a line starts with (its first 28 bytes), or None."""
    if not STAMP.fullmatch(head):
        return None
    return datetime.strptime(head.decode("ascii"), STAMP_FORMAT)


# How far past the latest quarter's first line a cut looks for a gap between two stamps (see
# ReplicaLog.cut). Each line is stamped as the shim writes it, one write each, so such a gap comes
# within a few lines; a megabyte without one is a clock standing still or moving coarsely, and
# the cut is then at a line's start, as for a job printing every microsecond. Bounded, and read
# in one piece: read 65 KB a line across a quarter of the cap, a cut with no gap took 0.22 s per
# 2 MB, half a minute at the 1 GB default, the job's output held meanwhile (review 39).
GAP_SEARCH_BYTES = 1 << 20


def _after_a_gap(fd: int, start: int, end: int) -> int | None:
    """The first line start after line start `start`, within GAP_SEARCH_BYTES of it, whose stamp
    is at least two microseconds after the stamp of the line before it (None when no line
    before `end` is)."""
    window = os.pread(fd, min(GAP_SEARCH_BYTES, end - start), start)
    before = _stamp_moment(window[:28])
    position = 0
    while before is not None:
        newline = window.find(b"\n", position)
        if newline < 0 or start + newline + 1 >= end:
            break
        position = newline + 1
        moment = _stamp_moment(window[position : position + 28])
        if moment is not None and moment - before >= timedelta(microseconds=2):
            return start + position
        before = moment
    return None


UNWRITTEN_LINE = "[console] {dropped} bytes of output could not be written to the log here: {error}"


class ReplicaLog:
    """The replica's log, kept under `limit_mb` MB on disk however much the job prints.

    A job printing in a loop would otherwise fill the disk the console's database lives on.
    What a reader needs of a long log is its beginning (the start-up, the config, the first
    error) and where the job is now, so when the next line would take the file past the
    cap, the log is cut: its first quarter (to the end of a line) stays, then one line
    saying how many bytes of output were dropped there (in all cuts so far), then its
    latest quarter (from the start of a line, between two stamps: see cut), and writing goes
    on after it.

    - Every line is still written when it comes (nothing is dropped as it is written, only
      later, from the middle), so the live view shows it and hang detection, which looks at
      the file's modification time, sees the job as active. The job never waits for its log
      beyond the moment a cut takes (copying half the cap, within the page cache), about
      once per half a cap of output: a job printing a lot pays for it, not the machine.
    - The cut is written as a new file that then replaces the log: the page, the download
      (of the file, so with the marker in it) and a download already under way each read
      one whole file, the old or the new, never a mix. On disk a cut log stays between half
      the cap and the cap (for a moment, while the new file is written, 1.5 times it).
    - A replica's attempts share one log, so where the last cut put its line, and how much
      it counted, are kept next to the log (`cut_record`, which also tells the job page
      that the log was cut): the next cut, by this shim or a later attempt's, drops that
      line with the rest and carries its count on. A shim killed between replacing the log
      and writing the record leaves the record one cut behind: the next count then misses
      that cut's bytes.
    - A cut that fails (the disk is full) leaves the log as it was; the job runs on.
    - A line that cannot be written (the disk is full) is dropped whole, and the job runs
      on: the shim goes on reading its output, so the job neither waits on a full pipe nor
      dies of a closed one. The next line that can be written is preceded by one line
      (`unwritten_line`) saying how many bytes of output were dropped there, and why. Part
      of a line the disk took before it filled is taken back off the file, so no half line
      stays in it looking whole. Found in QA 69: on a full disk the first refused write
      ended the shim, the job with it (its output pipe closed), and the job failed as
      "lost (process ended without an exit code)", saying nothing of the disk, its log
      ending in half a line.
    """

    def __init__(
        self,
        path: str,
        *,
        limit_mb: int,
        cut_line: str,
        cut_record: str,
        unwritten_line: str = UNWRITTEN_LINE,
    ) -> None:
        self.path = Path(path)
        self.limit_mb = limit_mb
        self.limit = limit_mb * 1024 * 1024  # 0: no cap
        self.cut_line = cut_line
        self.cut_record = Path(cut_record) if cut_record else None
        self.unwritten_line = unwritten_line
        self.unwritten = 0  # bytes of output dropped since the last line written
        self.unwritten_error = ""
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        self.size = os.fstat(self.fd).st_size

    def write(self, data: bytes) -> None:
        if self.limit and self.size + len(data) > self.limit:
            with contextlib.suppress(OSError):
                self.cut()
        if self.unwritten:
            said = self.unwritten_line.replace("{dropped}", str(self.unwritten))
            if not self._append(
                console_line(stamp(), said.replace("{error}", self.unwritten_error))
            ):
                self.unwritten += len(data)
                return
            self.unwritten = 0
        if not self._append(data):
            self.unwritten += len(data)

    def _append(self, data: bytes) -> bool:
        """Writes `data` whole and says True, or leaves the file as it was and says False."""
        written = 0
        try:
            while written < len(data):
                written += os.write(self.fd, data[written:])
        except OSError as error:
            self.unwritten_error = error.strerror or str(error)
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.size)
            return False
        self.size += written
        return True

    def close(self) -> None:
        os.close(self.fd)

    def _previous_cut(self) -> tuple[int, int, int, int] | None:
        """(where its line starts, where it ends, bytes dropped in all, the cap then in MB)
        of the last cut."""
        if self.cut_record is None:
            return None
        try:
            record = json.loads(self.cut_record.read_text())
            return (
                int(record["marker_at"]),
                int(record["kept_from"]),
                int(record["dropped"]),
                int(record["limit_mb"]),
            )
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def cut(self) -> None:
        quarter = self.limit // 4
        source = os.open(self.path, os.O_RDONLY)
        fresh = self.path.with_name(self.path.name + ".cutting")
        try:
            size = os.fstat(source).st_size
            head_end = os.pread(source, quarter, 0).rfind(b"\n") + 1  # 0: no whole line
            # Under the same cap (or a lower one) the head a later cut keeps ends where the
            # last cut's line starts: that head was already the whole lines of the first
            # quarter, and the line after it, the cut's own, is shorter than the line it
            # replaced, so it (and perhaps a line after it) now ends within the quarter.
            # Kept, it stood beside the new cut's line with its own, stale, count (QA 99).
            previous = self._previous_cut()
            if previous is not None and previous[3] >= self.limit_mb:
                head_end = min(head_end, previous[0])
            tail_start = max(size - quarter, head_end)
            if tail_start > head_end:  # to the start of the next line
                window = os.pread(source, MAX_LINE + 1024, tail_start - 1)
                found = window.find(b"\n")
                tail_start = tail_start + found if found >= 0 else tail_start
            # The part kept starts with a line stamped at least two microseconds after the
            # one before it, and the cut's line is stamped in between: no stamp's lines are
            # split by the cut, and the cut's line shares its stamp with none. A marker
            # (jobs.logs.LogMarker) is a stamp and a count of lines from the first of that
            # stamp: with a stamp's lines split, a reader that had read some of those dropped
            # skipped as many kept ones, and with the cut's line stamped as those kept after
            # it (or as those dropped before it), it counted as one of them: a reader among
            # them was given a line again, or lost lines and the cut's line (review 37). A
            # job printing every microsecond for a quarter of the cap has no such place: it
            # is cut as before, at a line's start.
            apart = _after_a_gap(source, tail_start, size) if tail_start > head_end else None
            if apart is not None:
                tail_start = apart
            if tail_start >= size or tail_start <= head_end:
                return  # nothing to drop between whole lines
            # The previous cut's line is dropped with the rest (and its count carried on),
            # unless the head now keeps it (a cap raised since): then it says its own.
            dropped = tail_start - head_end
            if previous is not None and head_end <= previous[0] < tail_start:
                marker_at, kept_from, earlier, _cap = previous
                dropped += earlier - (min(kept_from, tail_start) - marker_at)
            # Stamped a microsecond before the first line kept after it (as it, when no gap
            # was found), so the times in the file still only go forward (a reader of the
            # lines since a time relies on it, and a marker).
            first = os.pread(source, 28, tail_start)
            when = first if STAMP.fullmatch(first) else stamp()
            if apart is not None:  # a microsecond before it: after every line dropped
                moment = _stamp_moment(first)
                assert moment is not None
                when = (moment - timedelta(microseconds=1)).strftime(STAMP_FORMAT).encode()
            text = self.cut_line.replace("{limit}", str(self.limit_mb))
            marker = console_line(when, text.replace("{dropped}", str(dropped)))
            target = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
            try:
                copy_range(source, target, 0, head_end)
                os.write(target, marker)
                copy_range(source, target, tail_start, size)
            finally:
                os.close(target)
            os.replace(fresh, self.path)
        except BaseException:
            fresh.unlink(missing_ok=True)
            raise
        finally:
            os.close(source)
        os.close(self.fd)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self.size = os.fstat(self.fd).st_size
        if self.cut_record is not None:
            write_atomic(
                self.cut_record,
                json.dumps(
                    {
                        "limit_mb": self.limit_mb,
                        "dropped": dropped,
                        "marker_at": head_end,
                        "kept_from": head_end + len(marker),
                    }
                ),
            )


# One pass of TmpMeter looks at this many entries (files, folders, links) at most, a few
# tenths of a second of one core: measuring a /tmp of millions of files costs the same
# each time, the walk going on where the last pass stopped.
TMP_WALK_MAX_ENTRIES = 100_000


def open_own_folder(
    path: str, *, identity: tuple[int, int], grant: int, dir_fd: int | None = None
) -> int | None:
    """A descriptor to list the folder `path` (relative to `dir_fd` if given) with, or None
    when it cannot be listed or is no longer the folder seen there before (`identity`: its
    st_dev and st_ino then).

    The replica runs as the worker's user, and so may make a folder of its /tmp unreadable
    (`chmod 000`) or read-only (Go's module cache is, `chmod -R a-w`), which keeps the
    worker's user (no root) from measuring or removing what is in it. A folder of that
    user's lacking the owner permissions `grant` is given them (chmod u+...; nothing else
    is ever changed, and nothing of another user's). Safely while the replica still runs:
    the folder is opened as itself (O_NOFOLLOW: a symbolic link put in its place is not
    followed), the inode opened must be the one seen inside the tree (a folder on the way
    swapped for a link leads elsewhere: to another inode), and its permissions are changed
    through the descriptor, never by name."""
    try:
        handle = os.open(
            path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError:  # deleted meanwhile, or no longer a folder
        return None
    try:
        info = os.fstat(handle)
        if (info.st_dev, info.st_ino) != identity:
            return None
        if info.st_uid == os.geteuid() and info.st_mode & grant != grant:
            # An O_PATH descriptor cannot be fchmod'ed; its /proc link is that very inode.
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(info.st_mode) | grant)
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=handle)
    except OSError:
        return None
    finally:
        os.close(handle)


# A folder is opened by its path from the nearest folder held open above it (an anchor),
# never by a path longer than this: the kernel refuses a path past PATH_MAX (4096 bytes),
# and a folder a job nested deeper than that (50 levels of 200-character names) was
# skipped, so what it held went uncounted against LOCAL_TMP_MAX_GB and the disk's eviction,
# and stayed unwritable for remove_tree (security round 16).
ANCHOR_PATH_BYTES = 2048


class _Anchor:
    """A folder held open while folders below it wait to be opened from it."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd  # None: the root's path is absolute
        self.waiting = 0


def walk_tree(root: Path, *, top: os.stat_result, grant: int) -> Iterator[os.stat_result]:
    """The lstat of every entry below `root` (`top`: root's own), folders given the owner
    permissions `grant` they lack to be walked (open_own_folder). Symbolic links are not
    followed, and a folder of another file system (a mount point) is not entered. However
    deep the tree, each folder is opened by a path under ANCHOR_PATH_BYTES, from a folder
    above it held open (one for each ANCHOR_PATH_BYTES of depth, at most, while folders
    under it wait)."""
    anchors: list[_Anchor] = []  # those holding a descriptor, closed at the end
    pending = [(_Anchor(None), str(root), top.st_dev, top.st_ino)]
    pending[0][0].waiting = 1

    def let_go(anchor: _Anchor) -> None:
        anchor.waiting -= 1
        if anchor.waiting == 0 and anchor.fd is not None:
            os.close(anchor.fd)
            anchors.remove(anchor)
            anchor.fd = None

    try:
        while pending:
            anchor, path, device, inode = pending.pop()
            fd = open_own_folder(path, identity=(device, inode), grant=grant, dir_fd=anchor.fd)
            if fd is None:
                let_go(anchor)
                continue
            here: _Anchor | None = None  # this folder, once a subfolder's path needs it
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        try:
                            info = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        if info.st_dev != top.st_dev:
                            continue
                        if stat.S_ISDIR(info.st_mode):
                            below = os.path.join(path, entry.name)
                            if len(below.encode(errors="surrogateescape")) <= ANCHOR_PATH_BYTES:
                                anchor.waiting += 1
                                pending.append((anchor, below, info.st_dev, info.st_ino))
                            else:
                                if here is None:
                                    try:
                                        here = _Anchor(os.dup(fd))
                                    except OSError:  # out of descriptors: not walked
                                        yield info
                                        continue
                                    anchors.append(here)
                                here.waiting += 1
                                pending.append((here, entry.name, info.st_dev, info.st_ino))
                        yield info
            finally:
                os.close(fd)
                let_go(anchor)  # after its subfolders, which may wait on it too
    finally:
        for held in anchors:
            os.close(held.fd)


def remove_tree(root: Path) -> str:
    """Removes the folder `root` and all it holds, once no process writes to it any more,
    as the worker's user: folders a job left unreadable or read-only (shutil.rmtree alone
    cannot empty them unless run as root) are first given u+rwx.

    Returns "" once it is gone (or was never there), else why not: the first error met, as
    "<what the system said>: <its path from root's own name>" (`Operation not permitted:
    pytorchjob-…/logs/master-0.log`), naming no folder of the host above it. What could be
    removed is gone either way."""
    try:
        top = os.lstat(root)
    except OSError:
        return ""
    if stat.S_ISDIR(top.st_mode):
        with contextlib.suppress(OSError):
            for _ in walk_tree(root, top=top, grant=stat.S_IRWXU):
                pass
    errors: list[str] = []

    def note(function: object, path: str, exc: BaseException) -> None:
        if not errors:
            said = getattr(exc, "strerror", None) or type(exc).__name__
            inside = os.path.relpath(path, root)
            errors.append(
                f"{said}: {root.name if inside == '.' else os.path.join(root.name, inside)}"
            )

    shutil.rmtree(root, onexc=note)
    if not os.path.lexists(root):
        return ""
    return errors[0] if errors else f"{root.name} is still there"


class TmpMeter:
    """How much disk a replica's /tmp takes, counted as `du` counts it.

    Allocated blocks (st_blocks * 512), not apparent sizes: a sparse file counts what it
    really takes, a file of a few bytes a whole block; a file with several links once.
    Symbolic links are not followed, and a folder of another file system (a mount point)
    is not entered. A folder the job made unreadable is made readable to its owner first
    (u+rx; see open_own_folder), or what it holds would go uncounted. A pass (`measure`)
    looks at TMP_WALK_MAX_ENTRIES entries at most: a bigger tree is walked over several
    passes, each going on where the last one stopped, and the count so far is what each
    pass returns, so a /tmp over its cap is seen as soon as the part counted is. (A file
    counted in an earlier pass of the same walk and deleted since is still counted until
    the walk ends: only for a /tmp of that many entries.)
    """

    def __init__(self, root: Path, *, max_entries: int = TMP_WALK_MAX_ENTRIES) -> None:
        self.root = root
        self.max_entries = max_entries
        self.walk: Iterator[os.stat_result] | None = None  # the walk going on
        self.total = 0
        self.entries = 0  # inodes met in this walk so far (a file's links count once)
        self.linked: set[int] = set()  # inodes with several links, counted already

    def measure(self) -> int:
        """Walks on for up to max_entries entries; the bytes counted in this walk so far
        (a walk that ended in the last pass begins again)."""
        if self.walk is None:
            top = os.lstat(self.root)
            self.walk = walk_tree(self.root, top=top, grant=stat.S_IRUSR | stat.S_IXUSR)
            self.total = top.st_blocks * 512
            self.entries = 0
            self.linked = set()
        for _ in range(self.max_entries):
            info = next(self.walk, None)
            if info is None:
                self.walk = None
                break
            if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                if info.st_ino in self.linked:
                    continue
                self.linked.add(info.st_ino)
            self.entries += 1
            self.total += info.st_blocks * 512
        return self.total


def watch_tmp(
    meter: TmpMeter, *, limit: int, every: float, state: Path, ended: threading.Event
) -> None:
    """Measures /tmp every `every` seconds until the command has ended, recording what it
    holds (file `tmp-used`: the worker evicts the replica holding the most when the disk
    runs low); once it holds more than `limit` bytes, records how much (file `tmp-over`)
    for the worker, and stops."""
    reported = -1
    while not ended.wait(every):
        try:
            used = meter.measure()
        except OSError:  # the folder is gone: the job is being cleaned up
            return
        if used != reported:
            with contextlib.suppress(OSError):  # a full disk: the last report stands
                write_atomic(state / "tmp-used", json.dumps({"used": used, "time": time.time()}))
                reported = used
        if used > limit and not ended.is_set():
            write_atomic(
                state / "tmp-over",
                json.dumps({"used": used, "limit": limit, "time": time.time()}),
            )
            return


# -- resource usage -------------------------------------------------------------------
# What a replica uses, sampled every LOCAL_METRICS_SECONDS while its command runs, for the
# job page (jobs/monitoring.py). Read from its cgroup when it has one, as the kubelet reads
# a container's, else added up over its processes in /proc.

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def _read_keys(path: Path) -> dict[str, int]:
    """The "name value" lines of a cgroup file (cpu.stat, memory.stat); {} if unreadable."""
    found = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if value.strip().isdigit():
                found[name] = int(value)
    return found


def cgroup_cpu_seconds(folders: list[Path]) -> float | None:
    """CPU time the replica's cgroup has used, None when none of `folders` counts it: v2's
    cpu.stat usage_usec, or v1's cpuacct.usage, of its cpu,cpuacct cgroup or its own cpuacct
    one (jobs.cgroups; a v1 cpu hierarchy of its own counts only throttling)."""
    for folder in folders:
        usage = _read_keys(folder / "cpu.stat").get("usage_usec")
        if usage is not None:
            return usage / 1e6
        with contextlib.suppress(OSError, ValueError):
            return int((folder / "cpuacct.usage").read_text()) / 1e9
    return None


def cgroup_memory_bytes(folders: list[Path]) -> int | None:
    """The replica's working set as the kubelet (cAdvisor) reports a container's, and
    counts it against its limit: the memory its cgroup is charged for (v2 memory.current,
    v1 memory.usage_in_bytes), less the page cache the kernel would drop first
    (inactive_file). None when none of `folders` is a memory cgroup."""
    for folder in folders:
        for usage_file, inactive in (
            ("memory.current", "inactive_file"),
            ("memory.usage_in_bytes", "total_inactive_file"),
        ):
            try:
                usage = int((folder / usage_file).read_text())
            except (OSError, ValueError):
                continue
            return max(usage - _read_keys(folder / "memory.stat").get(inactive, 0), 0)
    return None


def session_usage(session: int, *, exclude: int) -> tuple[float, int]:
    """(CPU seconds, memory bytes) of the live processes of `session` (the shim's: the
    replica's command inherits it, bubblewrap makes no new one), but the process `exclude`
    (the shim itself, which is not the job, as it is outside its cgroups).

    CPU counts each process's own time and that of the children it has reaped, so the
    total keeps what a process that ended used once its parent (the sandbox's init, in the
    end) reaped it. Memory is each process's proportional share of what it has resident
    (Pss: pages shared by a replica's forked workers count once in all), or its resident
    size where its smaps cannot be read."""
    cpu = 0.0
    memory = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == exclude:
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) < 22 or int(fields[3]) != session:
            continue
        cpu += sum(int(value) for value in fields[11:15]) / CLOCK_TICKS
        memory += _pss(int(entry)) or int(fields[21]) * PAGE_BYTES
    return cpu, memory


def _pss(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    return 0


class UsageMeter:
    """Samples a replica's CPU (cores used on average since the last sample) and memory."""

    def __init__(self, *, cgroups: list[Path], session: int, exclude: int) -> None:
        self.cgroups = cgroups
        self.session = session
        self.exclude = exclude
        self.last: tuple[float, float] | None = None  # (monotonic time, CPU seconds)

    def sample(self) -> tuple[float | None, int, float]:
        """(CPU cores since the last call, None on the first; memory bytes now; seconds
        since the last call)."""
        cpu = cgroup_cpu_seconds(self.cgroups)
        memory = cgroup_memory_bytes(self.cgroups)
        if cpu is None or memory is None:
            counted_cpu, counted_memory = session_usage(self.session, exclude=self.exclude)
            cpu = counted_cpu if cpu is None else cpu
            memory = counted_memory if memory is None else memory
        now = time.monotonic()
        cores, seconds = None, 0.0
        if self.last is not None and now > self.last[0]:
            seconds = now - self.last[0]
            # A process reaped outside the count (by the shim) takes its time with it.
            cores = max(cpu - self.last[1], 0.0) / seconds
        self.last = (now, cpu)
        return cores, memory, seconds


# The newest samples kept as they came; older ones are merged into buckets of a width that
# grows with their age (USAGE_TIERS: up to an age in seconds, the bucket width), so a
# replica's file stays under about 100 KB however long it runs: an hour at full resolution
# (at 15 s), a day in 5-minute buckets, a week in hours, then one line a day.
USAGE_FULL_SAMPLES = 240
USAGE_TIERS = ((24 * 3600, 300), (7 * 24 * 3600, 3600), (math.inf, 24 * 3600))


def merge_samples(records: list[dict]) -> dict:
    """One record for several: the CPU averaged over the time they span, the peak memory
    and /tmp (a sparkline of a long job should still show how close it came to a limit)."""
    span = sum(r["s"] for r in records)
    cpu = sum(r["cpu"] * r["s"] for r in records) / span if span else records[-1]["cpu"]
    return {
        "t": records[-1]["t"],
        "s": round(span, 3),
        "cpu": round(cpu, 3),
        "mem": max(r["mem"] for r in records),
        "tmp": max(r["tmp"] for r in records),
    }


def downsample(
    records: list[dict],
    *,
    full: int = USAGE_FULL_SAMPLES,
    merge: Callable[[list[dict]], dict] = merge_samples,
) -> list[dict]:
    """`records` (oldest first) with all but the newest `full` merged (`merge`) into their
    age's buckets (USAGE_TIERS). Buckets are aligned on multiples of their width, and a merged
    record carries its newest time, so merging again changes nothing."""
    if len(records) <= full:
        return records
    newest = records[-1]["t"]
    older, recent = records[:-full], records[-full:]
    merged: list[dict] = []
    group: list[dict] = []
    group_key: tuple[float, int] | None = None
    for record in older:
        age = newest - record["t"]
        width = next(width for up_to, width in USAGE_TIERS if age <= up_to)
        key = (width, int(record["t"] // width))
        if group and key != group_key:
            merged.append(merge(group))
            group = []
        group.append(record)
        group_key = key
    if group:
        merged.append(merge(group))
    return merged + recent


class UsageLog:
    """A replica's samples as JSON lines (`t`: when, `s`: the seconds it covers, `cpu`:
    cores, `mem` and `tmp`: bytes) in its state folder, so it goes with the job's other
    files. Appended to; every USAGE_FULL_SAMPLES appends its older lines are downsampled
    (downsample) and the file replaced whole, so a reader sees the old or the new file.
    Another record form (AIHC's utilisation, jobs.backends.aihc) overrides `read` and `merge`."""

    def __init__(self, path: Path, *, full: int = USAGE_FULL_SAMPLES) -> None:
        self.path = path
        self.full = full
        self.lines = len(self.read(path))
        self.compacted = self.lines

    def append(self, record: dict) -> None:
        with contextlib.suppress(OSError):  # a full disk: this sample is lost, the job runs on
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
            try:
                os.write(fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
            finally:
                os.close(fd)
            self.lines += 1
        if self.lines - self.compacted >= self.full:
            records = downsample(self.read(self.path), full=self.full, merge=self.merge)
            with contextlib.suppress(OSError):
                write_atomic(
                    self.path, "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
                )
            self.lines = self.compacted = len(records)

    def read(self, path: Path) -> list[dict]:
        return read_usage(path)

    def merge(self, records: list[dict]) -> dict:
        return merge_samples(records)


USAGE_LINE_BYTES = 160  # more than any line takes: what the page reads from the end


def usage_lines(path: Path, *, last: int | None = None) -> list[bytes]:
    """The lines of a usage file ([] if there is none); with `last`, only about the newest
    `last`, read from the end of the file (a line cut by where the read began is dropped)."""
    try:
        with open(path, "rb") as file:
            if last is not None:
                size = file.seek(0, os.SEEK_END)
                file.seek(max(size - last * USAGE_LINE_BYTES, 0))
                data = file.read()
                if size > last * USAGE_LINE_BYTES:
                    data = data.partition(b"\n")[2]  # the first line read is cut
            else:
                data = file.read()
    except OSError:
        return []
    return data.splitlines()


def read_usage(path: Path, *, last: int | None = None) -> list[dict]:
    """The samples in the file at `path`, oldest first ([] if there is none); with `last`,
    only the newest `last` of them, read from the end of the file."""
    records = []
    for line in usage_lines(path, last=last):
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            record = json.loads(line)
            records.append(
                {
                    "t": float(record["t"]),
                    "s": float(record["s"]),
                    "cpu": float(record["cpu"]),
                    "mem": int(record["mem"]),
                    "tmp": int(record["tmp"]),
                }
            )
    return records[-last:] if last is not None else records


def last_tmp_used(state: Path) -> int:
    """What the replica's /tmp held when watch_tmp last measured it (file `tmp-used`)."""
    try:
        return int(json.loads((state / "tmp-used").read_text())["used"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


# The first sample comes sooner than LOCAL_METRICS_SECONDS: a job just started shows its
# usage within seconds.
FIRST_USAGE_SECONDS = 2.0


def watch_usage(
    meter: UsageMeter, *, log: UsageLog, every: float, state: Path, ended: threading.Event
) -> None:
    """Samples the replica every `every` seconds until its command has ended, appending to
    `log`. The first reading only sets where CPU time is counted from."""
    meter.sample()
    wait = min(every, FIRST_USAGE_SECONDS)
    while not ended.wait(wait):
        wait = every
        try:
            cores, memory, seconds = meter.sample()
        except OSError:
            continue
        if cores is None or ended.is_set():
            continue
        log.append(
            {
                "t": round(time.time(), 1),
                "s": round(seconds, 3),
                "cpu": round(cores, 3),
                "mem": memory,
                "tmp": last_tmp_used(state),
            }
        )


PAUSE_SECONDS = 1.0


def output_pieces(fd: int) -> Iterator[tuple[bytes | None, bool]]:
    """The command's output as (piece, redraw) until it ends, then (b"", False).

    A piece is a line with its end made `\n` (`\r\n`, `\n` and a lone `\r` each end a
    line; redraw is True for `\r`), or up to MAX_LINE bytes of a longer line (cut between
    UTF-8 characters), or, when the output pauses for PAUSE_SECONDS, the line begun so far
    (a bar's newest redraw, a "Loading..."): the rest of that line comes as a piece of its
    own. (None, False) on a pause otherwise."""
    buffer = b""
    after_cr = False  # a `\n` right after a lone `\r` was the second half of `\r\n`
    ended = False
    while True:
        if after_cr and buffer:
            buffer = buffer.removeprefix(b"\n")
            after_cr = False
        found = LINE_END.search(buffer, 0, MAX_LINE + 2)
        if found and found.start() <= MAX_LINE:
            end = found.group()
            # A `\r` the buffer ends with may be half of a `\r\n`: its `\n` is skipped then.
            after_cr = end == b"\r" and found.end() == len(buffer) and not ended
            yield buffer[: found.start()] + b"\n", end == b"\r"
            buffer = buffer[found.end() :]
            continue
        if len(buffer) >= MAX_LINE:
            cut = char_start(buffer, MAX_LINE)
            yield buffer[:cut], False
            buffer = buffer[cut:]
            continue
        if ended:
            if buffer:
                yield buffer, False
            yield b"", False  # the end: what was held back is written now
            return
        ready, _, _ = select.select([fd], [], [], PAUSE_SECONDS)
        if not ready:
            yield (buffer or None), False
            buffer = b""
            continue
        data = os.read(fd, MAX_LINE)
        if data:
            buffer += data
        else:
            ended = True


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--lock-fd", type=int, required=True)
    # The replica's environment as JSON, in an in-memory file the worker made (runner.env_memfd):
    # for its secret values, masked in the log. The command gets it from bwrap's options.
    parser.add_argument("--env-fd", type=int, required=True)
    # Descriptors of the checked volume folders the command (bwrap --bind-fd) binds.
    parser.add_argument("--mount-fd", type=int, action="append", default=[])
    parser.add_argument("--cpus", default="")
    # The replica's cgroup in each hierarchy (jobs.cgroups), made and set up by the worker.
    parser.add_argument("--cgroup", action="append", default=[])
    # Namespaces the command enters, in order (LOCAL_JOB_NETWORK=isolated, jobs.network).
    parser.add_argument("--netns-fd", type=int, action="append", default=[])
    # "UID:GID" the command runs as (LOCAL_JOB_UID_BASE, jobs.job_users); unset: the shim's.
    parser.add_argument("--as-user", default="")
    parser.add_argument("--keyword", action="append", default=[])
    parser.add_argument("--secret-env", action="append", default=[])
    parser.add_argument("--banner", default="")
    parser.add_argument("--exit-line", default="[console] exited with code {code}")
    parser.add_argument("--start-failed-line", default="[console] could not start: {error}")
    parser.add_argument("--log-limit-mb", type=int, default=0)  # 0: no cap
    parser.add_argument(
        "--log-cut-line", default="[console] log over {limit} MB: {dropped} bytes dropped here"
    )
    parser.add_argument("--log-cut-record", default="")
    parser.add_argument("--log-unwritten-line", default=UNWRITTEN_LINE)
    # The replica's /tmp on the host, its cap in bytes (0: none) and how often to measure it.
    parser.add_argument("--tmp-dir", default="")
    parser.add_argument("--tmp-limit-bytes", type=int, default=0)
    parser.add_argument("--tmp-check-seconds", type=float, default=10.0)
    # How often the replica's CPU, memory and /tmp are sampled into file `usage` (0: never).
    parser.add_argument("--usage-seconds", type=float, default=0.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    state = Path(args.state)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    # First of all, before the command can start: a replica recorded as launched whose shim
    # never got this far (the worker died between recording and spawning) never ran, and
    # the worker may launch it; one whose shim did is lost if it ends without an exit code.
    write_atomic(state / "started", str(os.getpid()))

    # Keep draining output after a stop signal so the exit code is still recorded; a
    # handler (not SIG_IGN) so the command itself starts with default signal handling.
    # A stop's SIGTERM that comes before the command's process exists keeps it from starting
    # (here, or at START_GATE): swallowed here, the command would run on until the worker's
    # SIGKILL.
    stopped: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(signal.SIGTERM))
    signal.signal(signal.SIGINT, lambda *_: None)
    become_subreaper()
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})

    with os.fdopen(args.env_fd, "rb") as env_file:
        env = json.loads(env_file.read())
    keywords = [k.encode() for k in args.keyword if k]
    # Output is masked line by line, so a secret of several lines (a PEM key, a kubeconfig)
    # could never match whole: each of its lines is masked wherever it appears.
    secrets = sorted(
        {
            part.encode()
            for name in args.secret_env
            for part in env.get(name, "").splitlines()
            if len(part) >= MIN_MASKED_LENGTH
        },
        key=len,
        reverse=True,  # a secret containing another is masked whole
    )
    matched = False

    log = ReplicaLog(
        args.log,
        limit_mb=args.log_limit_mb,
        cut_line=args.log_cut_line,
        cut_record=args.log_cut_record,
        unwritten_line=args.log_unwritten_line,
    )
    if args.banner:
        log.write(console_line(stamp(), args.banner))
    if stopped:  # as if the stop had ended it at once
        code = 128 + signal.SIGTERM
        write_atomic(state / "exit", json.dumps({"code": code, "time": time.time()}))
        log.write(console_line(stamp(), args.exit_line.replace("{code}", str(code))))
        return 0
    as_user = None
    if args.as_user:
        uid, _, gid = args.as_user.partition(":")
        as_user = (int(uid), int(gid))
    ready_r, ready_w = os.pipe()  # START_GATE's two descriptors
    go_r, go_w = os.pipe()
    try:
        child = subprocess.Popen(
            [*command, str(ready_w), str(go_r)],
            env=BWRAP_ENVIRONMENT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=[*args.mount_fd, ready_w, go_r],
            preexec_fn=joining(args.cgroup, args.netns_fd, as_user),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        error = str(exc)
        if isinstance(exc, subprocess.SubprocessError):  # raised in preexec_fn: the join
            steps = []
            if args.cgroup:
                steps.append(
                    f"join the cgroup {', '.join(args.cgroup)} of its CPU and memory limits"
                )
            if args.netns_fd:
                steps.append("enter the job's network namespace")
            if as_user is not None:
                steps.append(f"run as uid {as_user[0]} and gid {as_user[1]}")
            error = f"cannot {' or '.join(steps)}"
        log.write(console_line(stamp(), args.start_failed_line.replace("{error}", error)))
        record: dict[str, object] = {"code": 127}
        if isinstance(exc, FileNotFoundError) and exc.filename == command[0]:
            # The sandbox itself was not there (bubblewrap removed since the worker looked):
            # a fact of the machine, not of the job's command (jobs.runner.supervise).
            record["no_sandbox"] = True
        write_atomic(state / "exit", json.dumps(record))
        return 0
    for fd in [*args.mount_fd, *args.netns_fd, ready_w, go_r]:  # bwrap has its own copies
        os.close(fd)
    (state / "pid").write_text(str(os.getpid()))
    threading.Thread(target=end_with_command, args=(child,), daemon=True).start()
    # Once the command's process exists, a stop's SIGTERM reaches it; one that came before
    # (during the start, or bubblewrap's setup) was only caught here: it goes no further.
    # Nothing to read: the sandbox ended before (bubblewrap could not set it up).
    with contextlib.suppress(OSError):
        if os.read(ready_r, 1) and not stopped:
            os.write(go_w, b"g")
    os.close(ready_r)
    os.close(go_w)
    ended = threading.Event()  # the command's output has ended: no more /tmp verdicts
    if args.tmp_dir and args.tmp_limit_bytes:
        with contextlib.suppress(OSError):
            meter = TmpMeter(Path(args.tmp_dir))
            threading.Thread(
                target=watch_tmp,
                args=(meter,),
                kwargs={
                    "limit": args.tmp_limit_bytes,
                    "every": args.tmp_check_seconds,
                    "state": state,
                    "ended": ended,
                },
                daemon=True,
            ).start()
    if args.usage_seconds:
        meter_usage = UsageMeter(
            cgroups=[Path(folder) for folder in args.cgroup],
            session=os.getsid(0),
            exclude=os.getpid(),
        )
        threading.Thread(
            target=watch_usage,
            args=(meter_usage,),
            kwargs={
                "log": UsageLog(state / "usage"),
                "every": args.usage_seconds,
                "state": state,
                "ended": ended,
            },
            daemon=True,
        ).start()
    assert child.stdout is not None
    # A line longer than MAX_LINE is read and logged in pieces, and a secret or keyword can
    # straddle a cut. So the end of a piece that does not end its line, as long as the
    # longest secret or keyword less one byte, is held back and masked and matched again
    # with the next piece: whatever straddles the cut starts there. (So is a character cut
    # in two, by MAX_LINE or by a pause in the middle of its bytes.)
    held_length = max(map(len, [*secrets, *keywords]), default=1) - 1
    held = b""
    # A progress bar (tqdm) redraws itself after `\r` and may never end its line: each
    # redraw is a line of the log, at most one a second (the newest wins; it is written
    # once the output pauses), so the live view and hang detection see it advance.
    progress: tuple[bytes, bytes] | None = None  # (stamp, line) not written yet
    progress_written = 0.0
    cut_before = False  # the line being read was cut (MAX_LINE, or a pause) and partly written

    def write(when: bytes, line: bytes) -> None:
        log.write(job_line(when, line))

    for piece, redraw in output_pieces(child.stdout.fileno()):
        now = time.monotonic()
        if progress is not None and not redraw:  # a pause, or a line after the bar's
            write(*progress)
            progress, progress_written = None, now
        if piece is None:  # the output paused
            continue
        text = held + piece
        for secret in secrets:
            text = text.replace(secret, MASK)
        if piece.endswith(b"\n") or not piece:  # the line ends here, or the output does
            line, held = text, b""
            if line == b"\n" and cut_before:
                line = b""  # the end of a line already written in pieces: no empty line
            cut_before = False
        else:
            cut = char_start(text, max(len(text) - held_length, 0))
            line, held = text[:cut], text[cut:]
            cut_before = True
        if redraw and line.strip():  # (a bar's leading `\r` ends an empty line: not one)
            if now - progress_written >= 1:
                write(stamp(), line)
                progress, progress_written = None, now  # a newer redraw than the one waiting
            else:
                progress = (stamp(), line)
        elif line and not redraw:
            write(stamp(), line)
        # Matched on the whole text, the held part included: a keyword that ends in it is
        # found now (and found again with the next piece, which changes nothing).
        if keywords and not matched:
            hit = next((k for k in keywords if k in text), None)
            if hit is not None:
                matched = True
                write_atomic(
                    state / "keyword",
                    json.dumps(
                        {
                            "keyword": hit.decode(errors="replace"),
                            "line": log_text(text)[:500],
                        }
                    ),
                )
    ended.set()
    if progress is not None:
        write(*progress)
    code = child.wait()
    if code < 0:  # killed by a signal: report it the way a shell does
        code = 128 - code
    # The exit record before the exit line: the worker's hang check leaves out a replica that
    # has one, so the line, written while this shim still holds its lock, is not taken for
    # the job writing again (it cleared a hang warning while the other replicas still hung).
    write_exit_record(state, code)
    log.write(console_line(stamp(), args.exit_line.replace("{code}", str(code))))
    log.close()
    wait_for_adopted()
    return 0


def wait_for_adopted() -> None:
    """Stays, holding the replica's lock, until every process adopted from the sandbox has
    ended (review 16). A stop's SIGTERM kills the outer bwrap, and the sandbox's pid 1 is
    adopted here; end_with_command leaves it its grace period. A job that had moved pid 1 out
    of the replica's process group (jobs.runner.signal_group) and closed its output ended
    the shim's reading at once: the shim exited, pid 1 went to init, out of the worker's
    reach, and the job ran on after it read Stopped, its cards given to the next job. Waited
    for here, the replica still reads alive, and the worker's SIGKILL at the end of the
    grace period finds pid 1 among the children of the group's processes. A job that ended
    by itself left nothing here (end_with_command killed it)."""
    while own_children():
        with contextlib.suppress(ChildProcessError, InterruptedError):
            os.waitpid(-1, 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
