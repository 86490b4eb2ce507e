"""Hang analysis (Hang 解析) for local jobs: every running replica's Python call stacks.

AIHC's console collects a hung job's call stacks and shows them aggregated on its "Hang 解析"
tab, after a detected hang or on request. Here the worker does it for local jobs with
py-spy (`py-spy dump --json --pid`), which reads a Python process's thread stacks from
outside it, without the process's help.

Decided (feasibility checked with a real job in the bubblewrap sandbox on this machine):
py-spy reads a sandboxed process by its host pid (the worker's user is the job's user, so it
may read the job's memory as it may signal it). The alternative, a sitecustomize put on the
job's PYTHONPATH that dumps stacks on a signal with faulthandler, needs the job's
cooperation (a job that sets PYTHONPATH or blocks the signal shows nothing; a native hang
holding the GIL is not reached by a Python signal handler) and changes what the job runs.
py-spy needs nothing of the job, and is a small binary wheel on PyPI.

- Never `--locals` (locals may hold secrets). `--native` always (hang19): a real training
  hang is inside native code (an NCCL collective, a CUDA sync, a C extension's lock) and
  Python frames alone stop at the call that entered it. py-spy interleaves the native frames
  where they are on the thread's stack; each is kept with its library. A native read runs
  inside the replica's pid, mount and user namespaces (jobs/native_reader.py says how and
  why: its libraries named from the job's files, as the job sees them), so
  only by a worker run as root and only of a job run as a user of its own. A native read that
  fails (py-spy's reason, or longer than NATIVE_SECONDS) is followed by a Python-only read of
  that process in what is left of its PROCESS_SECONDS, and the capture says so. No source
  lines either: py-spy reports file:line:function, and reading the line's text would mean the
  worker opening a file by a path the job chose. Every text (function, file, thread name,
  command line) has the job's secret values masked, as its logs have.
- Each py-spy run is bounded (PROCESS_SECONDS; its output, OUTPUT_BYTES; its data,
  PY_SPY_DATA_BYTES), the whole capture too (TOTAL_SECONDS), and it
  runs in a thread of the worker, not in its tick: the tick only asks for captures and
  stores what finished. py-spy gets an empty environment but PATH: nothing of the worker's.
- Stored as rows (StackCapture), deleted with the job as its logs are; at most
  CAPTURES_KEPT per job, the oldest dropped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from .actions import ActionError
from .logs import masked
from .models import Job, JobStatus, StackCapture, StackCaptureTrigger
from .runtime_env import LOCAL_MPI_RSH_AGENT
from .services import job_event
from .texts import ngettext_noop, recorded_plural

logger = logging.getLogger(__name__)

CAPTURES_KEPT = 10  # per job; the oldest finished ones are dropped past it
MANUAL_EVERY_SECONDS = 30  # a job's Capture stacks is taken at most this often
PROCESS_SECONDS = 10.0  # one process: its native read and, if that fails, its Python-only one
# Of a process's PROCESS_SECONDS, what its native read may take: the rest is left for the
# Python-only read that follows a failed one (a native read pauses the process longer, and
# symbolising a large library such as libtorch_cuda can take seconds).
NATIVE_SECONDS = 6.0
TOTAL_SECONDS = 30.0  # one capture, all replicas
PROCESSES_PER_REPLICA = 32  # Python processes read per replica (a torchrun agent, its ranks...)
FOLDED_AFTER = 12  # frames shown of a stack before the rest is folded
# Kept of what py-spy returns, so a job with thousands of threads or a runaway recursion
# cannot make a capture (a row, a page) of any size: the innermost frames are kept.
THREADS_PER_PROCESS = 256
FRAMES_PER_THREAD = 200
TEXT_LIMIT = 500  # characters kept of a function, file, thread name or command line
# What one py-spy run may take besides time (review 17b: a hostile process named python can
# make its output, and py-spy's own memory, grow for the whole PROCESS_SECONDS). Its output is
# read up to OUTPUT_BYTES (what is kept, THREADS_PER_PROCESS threads of FRAMES_PER_THREAD
# frames, is about 13 MB of py-spy's JSON), and it runs with RLIMIT_DATA (heap and private
# mappings; util-linux's prlimit sets it before exec) at PY_SPY_DATA_BYTES: decided, as
# RLIMIT_AS is not workable for it (address space reserved, not used, counts) and its
# memory, in the worker's cgroup, would otherwise be the console's to lose. py-spy reading an
# ordinary process uses about 10 MB.
OUTPUT_BYTES = 16 * 2**20
PY_SPY_DATA_BYTES = 256 * 2**20
# How much longer than the worker's own bound of a read py-spy's `timeout` lets it run.
OWN_BOUND_GRACE_SECONDS = 2
TOOL_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"

# Why a replica or a process has no stacks (stored as the code, shown in the page's language).
REASONS = {
    "not_running": gettext_noop("The replica was not running."),
    "no_python": gettext_noop("No Python process was running in it."),
    "unreadable": gettext_noop("Its stacks could not be read: %(detail)s"),
    "timeout": gettext_noop("Reading its stacks took longer than %(seconds)s seconds."),
    "out_of_time": gettext_noop("Not read: the capture ran out of its %(seconds)s seconds."),
    "no_tool": gettext_noop("py-spy is not installed where the worker runs."),
    # A capture stored before review 17b: one such entry for each process past the first.
    "more": gettext_noop("Not read: only the first %(count)s Python processes are read."),
    "processes_dropped": gettext_noop(
        "%(dropped)s more Python processes were not read: only the first %(count)s are."
    ),
    "threads_dropped": gettext_noop(
        "Only its first %(count)s threads are kept; %(dropped)s more were not."
    ),
    # The native read failed and the Python-only one that followed it worked; `reason` is the
    # native read's own (one of the above).
    "native_failed": gettext_noop(
        "Its native frames could not be read, so only its Python frames are shown: %(reason)s"
    ),
}

# Why a process's native frames are not read, by the console's own set-up (not py-spy's
# words): stored as a code beside the English detail (which a release before QA 31 shows),
# and shown in the page's language. Before, every Python process of every capture in the
# default set-up (a worker run as root, no LOCAL_JOB_UID_BASE) said it in English on a
# Chinese page.
# Shown once under a capture, in plain words (qa92: each process's line, orange and beside
# monospace like py-spy's output, said it in broken English): how the console is set up, not
# a fault of this capture.
NATIVE_REFUSALS = {
    "native_needs_root": gettext_noop(
        "Only Python frames are shown: native frames can be read only when the worker runs as root."
    ),
    "native_needs_own_user": gettext_noop(
        "Only Python frames are shown: native frames can be read only when jobs run under "
        "their own user IDs (an administrator sets LOCAL_JOB_UID_BASE)."
    ),
}

# The console's own words in a read's `detail` (its tools missing, how py-spy ended; those of
# jobs/native_reader.py, which writes them as py-spy's `Error:` line), stored in English as
# before (a capture stays readable by an older release) and shown in the page's language:
# _detail says a stored detail again when it is one of these whole (%(…)s stands for a value).
# Anything else is py-spy's own words (or the kernel's), shown as py-spy wrote it.
CONSOLE_DETAILS = (
    gettext_noop("the process ended while it was read"),
    gettext_noop("setpriv (util-linux) is not installed"),
    gettext_noop("prlimit (util-linux) is not installed"),
    gettext_noop("timeout (coreutils) is not installed"),
    gettext_noop("py-spy's output was larger than %(size)s MB"),
    gettext_noop("py-spy's output could not be read"),
    gettext_noop("py-spy was ended by signal %(signal)s"),
    gettext_noop("py-spy failed (exit status %(status)s)"),
    # jobs/native_reader.py's (its wording must stay the same as these).
    gettext_noop("native frames are not read on %(machine)s"),
    gettext_noop("%(program)s is not a static program: it is not run in a job's namespaces"),
    gettext_noop("native frames are read only of jobs run as users of their own"),
    gettext_noop(
        "native frames are read only of a sandbox whose processes share its user and mount "
        "namespaces"
    ),
)
_CONSOLE_DETAIL_PATTERNS = [
    (
        re.compile(re.sub(r"%\\\(([a-z]+)\\\)s", r"(?P<\1>.+?)", re.escape(template))),
        template,
    )
    for template in CONSOLE_DETAILS
]

_PYTHON = re.compile(r"python[0-9.]*[a-z]?")
# The local runner's MPI agent (jobs/mpi_agent.py, run as `python3 /etc/mpi/rsh ...`): each
# worker's serves the launcher, and the launcher's mpirun runs one per worker it reaches.
# They are the console's, not the job's: read, they showed as the job's stacks (qa68: the
# launcher's `rsh` wait looked like master-0 stuck, and four groups of the agent's threads
# stood among the ranks'). What they start (the ranks) is still read.
_CONSOLE_PROGRAMS = frozenset({LOCAL_MPI_RSH_AGENT})


def py_spy() -> str | None:
    """The py-spy beside the worker's interpreter (the venv's), else one on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.exists():
        return str(beside)
    return shutil.which("py-spy")


# -- asking for one ----------------------------------------------------------------------


def capture_pending(*, job: Job) -> bool:
    return job.stack_captures.filter(finished_at=None).exists()


def capture_for_hang(*, job: Job) -> StackCapture | None:
    """Asks the worker for a capture after the hang it just recorded (none while one is
    pending already). Called in the transaction that records the HangSuspected event."""
    if capture_pending(job=job):
        return None
    return StackCapture.objects.create(job=job, trigger=StackCaptureTrigger.HANG)


def capture_requested(*, job: Job, actor: Any) -> StackCapture:
    """Capture stacks, asked for on the job's page: a running local job's, at most once per
    MANUAL_EVERY_SECONDS (any capture counts, a hang's too) and never while one is pending.
    ActionError says why not."""
    if job.backend != "local":
        raise ActionError(gettext("Call stacks can be captured for local jobs only."))
    with transaction.atomic():
        # The job's row locked (PostgreSQL): two requests at once make one capture.
        locked = Job.objects.select_for_update().get(pk=job.pk)
        if locked.status != JobStatus.RUNNING:
            raise ActionError(gettext("Call stacks can be captured only while the job runs."))
        if capture_pending(job=locked):
            raise ActionError(gettext("A capture is being taken; it shows here when it is done."))
        latest = locked.stack_captures.order_by("-created_at").first()
        if latest is not None:
            wait = latest.created_at + timedelta(seconds=MANUAL_EVERY_SECONDS) - timezone.now()
            if wait.total_seconds() > 0:
                raise ActionError(
                    gettext(
                        "Stacks were captured less than %(every)s seconds ago; "
                        "try again in %(seconds)s seconds."
                    )
                    % {"every": MANUAL_EVERY_SECONDS, "seconds": int(wait.total_seconds()) + 1}
                )
        return StackCapture.objects.create(
            job=locked, trigger=StackCaptureTrigger.MANUAL, requested_by=actor
        )


# -- taking it (the worker) ----------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    label: str
    pgid: int | None  # the replica's process group (its shim's), None: not running
    start: str  # the group leader's start, so a recycled pid is not read


class StackCollector:
    """The worker's part: each tick starts the captures asked for (in a thread of its own)
    and stores those that finished. A worker killed meanwhile leaves the capture pending, and
    the next one takes it again."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stacks")
        self.running: dict[int, Future[list[dict[str, Any]]]] = {}

    def tick(self, *, followed: Any) -> None:
        self._store_finished()
        pending = StackCapture.objects.filter(
            finished_at=None, job__backend="local", job__in=Job.objects.filter(followed)
        ).select_related("job")
        for capture in pending:
            if capture.pk in self.running:
                continue
            job = capture.job
            targets = [
                Target(
                    f"{r.role}-{r.index}",
                    r.pid if job.status == JobStatus.RUNNING and r.status == "running" else None,
                    r.process_start,
                )
                for r in job.replicas.order_by("role", "index")
            ]
            self.running[capture.pk] = self.pool.submit(
                read_stacks, targets=targets, secrets=job.secret_values()
            )

    def _store_finished(self) -> None:
        for pk, future in list(self.running.items()):
            if not future.done():
                continue
            del self.running[pk]
            try:
                replicas = future.result()
            except Exception:
                logger.exception("capturing stacks failed")
                replicas = []
            store_capture(pk=pk, replicas=replicas)

    def wait(self, timeout: float) -> None:
        """Until the captures started have finished (tests; a stopping worker)."""
        deadline = time.monotonic() + timeout
        for future in list(self.running.values()):
            future.exception(timeout=max(0.0, deadline - time.monotonic()))


def store_capture(*, pk: int, replicas: list[dict[str, Any]]) -> None:
    with transaction.atomic():
        capture = StackCapture.objects.select_related("job").filter(pk=pk).first()
        if capture is None or capture.finished_at is not None:
            return  # deleted with its job meanwhile, or stored by another worker
        capture.finished_at = timezone.now()
        capture.replicas = replicas
        capture.save(update_fields=["finished_at", "replicas"])
        read = sum(1 for r in replicas if any(p.get("threads") for p in r.get("processes", [])))
        # Replicas that had ended (one that exited 0 while the others hang) are said apart:
        # "1 of 2 read" alone read as a failure to read one (QA 31).
        ended = sum(1 for r in replicas if r.get("error") == "not_running")
        manual = capture.trigger == StackCaptureTrigger.MANUAL
        # Plural forms by the replicas counted ("1 of 1 replica read", qa92).
        errors = {r.get("error") for r in replicas}
        if not read and "no_python" in errors and errors <= {"no_python", "not_running"}:
            # Nothing failed to be read: there was no Python to read (qa95: an MPI job of a
            # C program read "0 of 3 replicas read", as if reading had failed).
            text = (
                ngettext_noop(
                    "Call stacks captured on request: no Python process ran in the %(total)s "
                    "replica, and only Python processes' stacks are read.",
                    "Call stacks captured on request: no Python process ran in any of the "
                    "%(total)s replicas, and only Python processes' stacks are read.",
                )
                if manual
                else ngettext_noop(
                    "Call stacks captured after the hang: no Python process ran in the "
                    "%(total)s replica, and only Python processes' stacks are read.",
                    "Call stacks captured after the hang: no Python process ran in any of the "
                    "%(total)s replicas, and only Python processes' stacks are read.",
                )
            )
        elif ended:
            text = (
                ngettext_noop(
                    "Call stacks captured on request: %(read)s of %(total)s replica read "
                    "(%(ended)s had ended).",
                    "Call stacks captured on request: %(read)s of %(total)s replicas read "
                    "(%(ended)s had ended).",
                )
                if manual
                else ngettext_noop(
                    "Call stacks captured after the hang: %(read)s of %(total)s replica read "
                    "(%(ended)s had ended).",
                    "Call stacks captured after the hang: %(read)s of %(total)s replicas read "
                    "(%(ended)s had ended).",
                )
            )
        else:
            text = (
                ngettext_noop(
                    "Call stacks captured on request: %(read)s of %(total)s replica read.",
                    "Call stacks captured on request: %(read)s of %(total)s replicas read.",
                )
                if manual
                else ngettext_noop(
                    "Call stacks captured after the hang: %(read)s of %(total)s replica read.",
                    "Call stacks captured after the hang: %(read)s of %(total)s replicas read.",
                )
            )
        message = recorded_plural(text, "total", read=read, total=len(replicas), ended=ended)
        job_event(job=capture.job, reason="StacksCaptured", message=message)
        kept = capture.job.stack_captures.exclude(finished_at=None).values_list("pk", flat=True)
        StackCapture.objects.filter(pk__in=list(kept[CAPTURES_KEPT:])).delete()


def read_stacks(
    *,
    targets: list[Target],
    secrets: list[str],
    seconds: float = TOTAL_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> list[dict[str, Any]]:
    """Each replica's Python processes' thread stacks (see StackCapture.replicas)."""
    deadline = clock() + seconds
    tool = py_spy()
    own_namespace = _pid_namespace("self")
    out = []
    for target in targets:
        entry: dict[str, Any] = {"label": target.label, "processes": []}
        out.append(entry)
        found = _python_processes(target, own_namespace) if target.pgid else None
        if found is None:
            entry["error"] = "not_running"
            continue
        pids, dropped = found
        if not pids:
            entry["error"] = "no_python"
            continue
        if tool is None:
            entry["error"] = "no_tool"
            continue
        if dropped:
            # Counted, not listed (review 17b: each had an entry with its command line, so a
            # job of thousands of Python processes made a capture, and a page, of megabytes).
            entry["processes_dropped"] = dropped
        for listed in pids:
            process: dict[str, Any] = {
                "pid": listed.inside,
                "command": _text(listed.command, secrets),
            }
            entry["processes"].append(process)
            left = deadline - clock()
            if left <= 0:
                process.update(error="out_of_time", seconds=int(seconds))
            else:
                process.update(_read_process(tool, listed, min(PROCESS_SECONDS, left), secrets))
    return out


def _read_process(
    tool: str,
    listed: Listed,
    seconds: float,
    secrets: list[str],
    *,
    native_seconds: float = NATIVE_SECONDS,
) -> dict[str, Any]:
    """The process's threads with their native frames; when the native read fails (py-spy's
    reason, or out of its time: not when the process ended), its Python frames only, read in
    what is left of `seconds`, with the native read's reason kept (`native_error`). The two
    reads together stay within `seconds`: the native one takes at most its share of them."""
    began = time.monotonic()
    share = min(native_seconds, seconds * native_seconds / PROCESS_SECONDS)
    read = _dump(tool, listed, share, secrets, native=True)
    if "threads" in read or read == ENDED:
        return read
    left = seconds - (time.monotonic() - began)
    if left <= 0:
        return read
    python_only = _dump(tool, listed, left, secrets, native=False)
    if "threads" in python_only:
        python_only["native_error"] = read
    return python_only


@dataclass(frozen=True)
class Listed:
    """A replica's Python process as listed: its host pid, its start (the process's identity:
    the replica's processes are read one after another, up to PROCESS_SECONDS each, and a pid
    listed may name another process by its turn, another user's job's), and what is shown of
    it, read while it was known to be that process."""

    pid: int
    start: str
    inside: int  # the pid the job sees
    command: str


ENDED = {"error": "unreadable", "detail": "the process ended while it was read"}


def _unprivileged(argv: list[str], *, as_ids: tuple[int, int] | None = None) -> list[str] | None:
    """`argv` run without any capability and unable to gain one (no_new_privs), for a worker
    run as root: py-spy parses memory the job controls, so it gets no privilege beyond a uid,
    which is all ptrace needs to read a job that runs without capabilities: the job's own
    (`as_ids`, its process's uid and gid: a job run as a user of its own,
    LOCAL_JOB_UID_BASE), else root's. util-linux's setpriv (essential on Debian) does it
    before exec (a preexec function is unsafe in the capture's thread). None: root without
    setpriv, so the stacks are not read."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv", path=TOOL_PATH)
    if setpriv is None:
        return None
    user = []
    if as_ids is not None and as_ids != (0, 0):
        user = [f"--reuid={as_ids[0]}", f"--regid={as_ids[1]}", "--clear-groups"]
    return [
        setpriv,
        *user,
        "--bounding-set=-all",
        "--inh-caps=-all",
        "--no-new-privs",
        "--",
        *argv,
    ]


def _native_argv(tool: str, listed: Listed, ids: tuple[int, int] | None) -> list[str] | str:
    """What runs py-spy for a native read of the process, inside its sandbox's namespaces
    (jobs/native_reader.py says how, and why); else why it cannot be read natively. Only by a
    worker run as root, and only of a job run as a user of its own (LOCAL_JOB_UID_BASE),
    which has a user namespace of its own to hold py-spy's one capability: a job run as root
    shares the host's (and uid 0: a native read of it is refused). Why not: a code of
    NATIVE_REFUSALS."""
    if os.geteuid() != 0:
        return "native_needs_root"
    if ids is None or ids[0] == 0:
        return "native_needs_own_user"
    reader = Path(__file__).with_name("native_reader.py")
    ticks = listed.start.rpartition(":")[2]
    return [
        sys.executable, "-I", str(reader), str(listed.pid), ticks, str(ids[0]), str(ids[1]),
        "--", tool, "dump", "--json", "--pid", str(listed.inside), "--native",
    ]  # fmt: skip


def _ids(pid: int) -> tuple[int, int] | None:
    """The process's real uid and gid (a job cannot change its own: it has no capability)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        fields = {name: rest.split() for name, _, rest in (line.partition(":") for line in lines)}
        return int(fields["Uid"][0]), int(fields["Gid"][0])
    except (OSError, KeyError, IndexError, ValueError):
        return None


def _dump(
    tool: str, listed: Listed, seconds: float, secrets: list[str], *, native: bool = False
) -> dict[str, Any]:
    """One py-spy read of the process (`native`: with its native frames, see _frame)."""
    from .runner import process_start

    pid = listed.pid
    ids = _ids(pid)
    # Review 17b: checked against the start taken when it was listed, not only across the
    # read: a pid reused before its turn was read, as the uid of whatever holds it now.
    start = process_start(pid)
    if start is None or start != listed.start:
        return dict(ENDED)
    if native:
        found = _native_argv(tool, listed, ids)
        if isinstance(found, str):
            return {"error": "unreadable", "detail": NATIVE_REFUSALS[found], "detail_code": found}
        argv: list[str] | None = found
    else:
        argv = _unprivileged([tool, "dump", "--json", "--pid", str(pid)], as_ids=ids)
    if argv is None:
        return {"error": "unreadable", "detail": "setpriv (util-linux) is not installed"}
    prlimit = shutil.which("prlimit", path=TOOL_PATH)
    if prlimit is None:
        return {"error": "unreadable", "detail": "prlimit (util-linux) is not installed"}
    timeout = shutil.which("timeout", path=TOOL_PATH)
    if timeout is None:
        return {"error": "unreadable", "detail": "timeout (coreutils) is not installed"}
    # coreutils' timeout bounds py-spy by itself, so a read stuck when its worker is killed
    # (nothing left to kill it, and py-spy pauses the process it reads) still ends (chaos 18).
    # It runs a little longer than the worker's own bound, which kills the whole chain first.
    bound = [timeout, "--signal=KILL", f"{math.ceil(seconds) + OWN_BOUND_GRACE_SECONDS}s"]
    try:
        done = _bounded_run(
            [*bound, prlimit, f"--data={PY_SPY_DATA_BYTES}", *argv], seconds=seconds
        )
    except subprocess.TimeoutExpired:
        return {"error": "timeout", "seconds": round(seconds)}
    except OSError as exc:
        return {"error": "unreadable", "detail": _text(str(exc), secrets)}
    if done is None:
        return {
            "error": "unreadable",
            "detail": f"py-spy's output was larger than {OUTPUT_BYTES // 2**20} MB",
        }
    if done.returncode != 0:
        detail = _py_spy_error(done.stderr, done.returncode)
        return {"error": "unreadable", "detail": _text(detail, secrets)}
    if process_start(pid) != start:
        # The process ended while it was read, and its pid may name another one now (another
        # job's): what was read is not kept.
        return dict(ENDED)
    try:
        threads = json.loads(done.stdout)
        return {
            "threads": [
                {
                    "name": _text(str(t.get("thread_name") or t.get("thread_id")), secrets),
                    "frames": [_frame(f, secrets) for f in t.get("frames", [])[:FRAMES_PER_THREAD]],
                }
                for t in threads[:THREADS_PER_PROCESS]
            ],
            "threads_dropped": max(0, len(threads) - THREADS_PER_PROCESS),
        }
    except (ValueError, TypeError, AttributeError):
        return {"error": "unreadable", "detail": "py-spy's output could not be read"}


# py-spy names a native frame it has no symbol for by its address, which differs from one
# process to the next (each maps its libraries elsewhere): kept, it would split identical
# stacks of two ranks into two groups.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
UNKNOWN_SYMBOL = "??"


def _frame(raw: dict[str, Any], secrets: list[str]) -> dict[str, Any]:
    """A frame as stored: a Python frame's function, file and line; a native frame (py-spy
    names its library, `module`; one in memory no file backs, JIT code or a deleted library,
    has none and an address for a name) also marked `native`, with its library's file name
    (`library`, what its owner sees) and py-spy's file (`file`: the library's path as the job
    sees it, or the source file its debug information names, with its line: staff only)."""
    name = str(raw.get("name", ""))
    module = raw.get("module")
    frame = {
        "name": _text(name, secrets),
        "file": _text(str(raw.get("filename", "")), secrets),
        "line": int(raw.get("line") or 0),
    }
    if module is None and not _ADDRESS.fullmatch(name):
        return frame
    if _ADDRESS.fullmatch(name):
        frame["name"] = UNKNOWN_SYMBOL
    frame["native"] = True
    frame["library"] = _text(os.path.basename(str(module)) if module else "?", secrets)
    return frame


def _bounded_run(argv: list[str], *, seconds: float) -> subprocess.CompletedProcess[bytes] | None:
    """`argv` run as subprocess.run(capture_output=True, timeout=seconds) would, but killed,
    and None returned, once it has written more than OUTPUT_BYTES (review 17b: py-spy's JSON
    of a process of 200 threads 2,000 frames deep is 100 MB, read whole into the worker and
    parsed into objects many times that size). Its error output is kept to its first 64 KiB."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin"},
        # A group of its own, killed whole: `argv` may be a chain (timeout runs py-spy as its
        # child), and killing only its head would leave the rest running.
        start_new_session=True,
    )
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + seconds
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ, out)
            selector.register(process.stderr, selectors.EVENT_READ, err)
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(argv, seconds)
                for key, _ in selector.select(left):
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        selector.unregister(key.fileobj)
                    elif key.data is out:
                        out += data
                        if len(out) > OUTPUT_BYTES:
                            return None
                    elif len(err) < 1 << 16:
                        err += data
        returncode = process.wait(max(0.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stdout.close()
        process.stderr.close()
    return subprocess.CompletedProcess(argv, returncode, bytes(out), bytes(err))


def _py_spy_error(stderr: bytes, returncode: int) -> str:
    """py-spy's own words: its `Error:` line and its causes, without its backtrace; without
    any, how it ended (a signal: a crash, or the kernel's)."""
    lines = stderr.decode(errors="replace").splitlines()
    kept = []
    for line in lines:
        if line.startswith("Stack backtrace:"):
            break
        if line.strip() and not line.startswith("Caused by:"):
            kept.append(line.strip().removeprefix("Error: "))
    if kept:
        return "; ".join(kept)
    if returncode < 0:
        return f"py-spy was ended by signal {-returncode}"
    return f"py-spy failed (exit status {returncode})"


def _text(value: str, secrets: list[str]) -> str:
    return masked(value, secrets)[:TEXT_LIMIT]


def _pid_namespace(pid: int | str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return ""


def _python_processes(target: Target, own_namespace: str) -> tuple[list[Listed], int] | None:
    """The replica's first PROCESSES_PER_REPLICA Python processes inside its sandbox, as the
    runner finds the replica's processes (its process group, every child of it and their
    descendants), by pid, and how many more there are; None when its group leader is gone or
    is another process now."""
    from .runner import _processes, process_start

    if target.pgid is None or process_start(target.pgid) != target.start:
        return None
    processes = _processes()
    children: dict[int, list[int]] = {}
    for p in processes:
        children.setdefault(p.ppid, []).append(p.pid)
    alive = {p.pid for p in processes if p.alive}
    found: set[int] = set()
    todo = [p.pid for p in processes if p.pgid == target.pgid]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    pythons = []
    dropped = 0
    for pid in sorted(found & alive):
        start = process_start(pid)
        # The shim (a Python process too) runs outside the sandbox's pid namespace.
        namespace = _pid_namespace(pid)
        if start is None or not namespace or namespace == own_namespace:
            continue
        try:
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            continue
        if not _PYTHON.fullmatch(exe.removesuffix(" (deleted)")):
            continue
        if _program_argument(pid) in _CONSOLE_PROGRAMS:
            continue
        if len(pythons) >= PROCESSES_PER_REPLICA:
            dropped += 1
            continue
        listed = Listed(pid, start, _pid_inside(pid), _command(pid))
        if process_start(pid) == start:  # all of it read of that one process
            pythons.append(listed)
    return pythons, dropped


def _pid_inside(pid: int) -> int:
    """The pid the job itself sees (the last of NSpid), or the host's when unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return pid


def _program_argument(pid: int) -> str:
    """A Python process's first argument (its script, when it runs one), "" when unknown."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return argv[1].decode(errors="replace") if len(argv) > 1 else ""


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")


# -- showing it ----------------------------------------------------------------------------


def _detail(entry: dict[str, Any]) -> str:
    """An entry's detail: in the page's language when it is one of the console's own (a
    NATIVE_REFUSALS code, or a detail that is one of CONSOLE_DETAILS); py-spy's as it is."""
    code = entry.get("detail_code", "")
    if code in NATIVE_REFUSALS:
        return gettext(NATIVE_REFUSALS[code])
    detail = str(entry.get("detail", ""))
    for pattern, template in _CONSOLE_DETAIL_PATTERNS:
        found = pattern.fullmatch(detail)
        if found:
            return gettext(template) % found.groupdict()
    return detail


def reason_text(entry: dict[str, Any]) -> str:
    code = entry.get("error", "")
    if code not in REASONS:
        return ""
    params = {
        "detail": _detail(entry),
        "seconds": entry.get("seconds", ""),
        "count": entry.get("count", ""),
        "dropped": entry.get("dropped", ""),
        "reason": entry.get("reason", ""),
    }
    return gettext(REASONS[code]) % params


def compact_labels(labels: list[str]) -> str:
    """ "master-0, worker-0..3": runs of consecutive indices of one role collapsed."""
    by_role: dict[str, list[int]] = {}
    others = []
    for label in labels:
        role, _, index = label.rpartition("-")
        if role and index.isdigit():
            by_role.setdefault(role, []).append(int(index))
        else:
            others.append(label)
    parts = []
    for role, indices in by_role.items():
        indices = sorted(set(indices))
        start = previous = indices[0]
        for index in [*indices[1:], None]:
            if index is not None and index == previous + 1:
                previous = index
                continue
            parts.append(f"{role}-{start}" if start == previous else f"{role}-{start}..{previous}")
            if index is not None:
                start = previous = index
    return ", ".join(parts + others)


@dataclass
class StackGroup:
    frames: list[dict[str, Any]]
    replicas: list[str]  # labels, in the job's order
    threads: list[str]  # "worker-1 pid 7 MainThread"

    @property
    def replicas_text(self) -> str:
        return compact_labels(self.replicas)

    @cached_property
    def rows(self) -> list[dict[str, Any]]:
        """The stack as shown: each Python frame a row, each run of native frames between
        them one row ({"native": [frames]}), folded so the Python view reads as it did."""
        rows: list[dict[str, Any]] = []
        for frame in self.frames:
            if not frame.get("native"):
                rows.append({"frame": frame})
            elif rows and "native" in rows[-1]:
                rows[-1]["native"].append(frame)
            else:
                rows.append({"native": [frame]})
        for row in rows:
            if "native" in row:
                # Named on its folded line by its innermost frame with a symbol (libc's
                # internals often have none): where the thread waits.
                named = [f for f in row["native"] if f["name"] != UNKNOWN_SYMBOL]
                row["lead"] = (named or row["native"])[0]
        return rows

    @property
    def shown_rows(self) -> list[dict[str, Any]]:
        return self.rows[:FOLDED_AFTER]

    @property
    def folded_rows(self) -> list[dict[str, Any]]:
        return self.rows[FOLDED_AFTER:]

    @property
    def folded_count(self) -> int:
        """Frames, native ones included, in the folded rows."""
        return sum(len(row.get("native", [None])) for row in self.folded_rows)


def frame_key(frame: dict[str, Any]) -> tuple[str, int, str]:
    """What makes two frames the same: a Python frame's file, line and function; a native
    frame's library and function (not its path, nor an address: see _ADDRESS)."""
    if frame.get("native"):
        return ("native:" + frame.get("library", ""), 0, frame["name"])
    return (frame["file"], frame["line"], frame["name"])


def _has_native(frames: list[dict[str, Any]]) -> bool:
    return any(f.get("native") for f in frames)


def stack_groups(replicas: list[dict[str, Any]]) -> list[StackGroup]:
    """Every thread's stack, identical ones (frame by frame: frame_key) across
    replicas and processes collapsed into one group; the groups held by the fewest replicas
    first (the odd rank out), then by how many threads share them, then in the job's order.

    A capture in which some processes were read with their native frames and others for their
    Python frames only (a native read that failed or was not made) compares Python frames
    only: otherwise a rank read without them would stand apart as the odd one out, its stack
    being the same. Such a group shows the frames of a thread read with its native ones."""
    read = [
        process["threads"]
        for replica in replicas
        for process in replica.get("processes", [])
        if process.get("threads")
    ]
    natively = [any(_has_native(t["frames"]) for t in threads) for threads in read]
    python_only = any(natively) and not all(natively)
    groups: dict[tuple[tuple[str, int, str], ...], StackGroup] = {}
    order = {r["label"]: n for n, r in enumerate(replicas)}
    for replica in replicas:
        for process in replica.get("processes", []):
            for thread in process.get("threads", []):
                frames = thread["frames"]
                key = tuple(frame_key(f) for f in frames if not (python_only and f.get("native")))
                group = groups.setdefault(key, StackGroup(frames, [], []))
                if _has_native(frames) and not _has_native(group.frames):
                    group.frames = frames
                if replica["label"] not in group.replicas:
                    group.replicas.append(replica["label"])
                group.threads.append(f"{replica['label']} pid {process['pid']} {thread['name']}")
    return sorted(
        groups.values(),
        key=lambda g: (len(g.replicas), len(g.threads), order.get(g.replicas[0], 0)),
    )


def native_note(replicas: list[dict[str, Any]]) -> str:
    """Why the capture has no native frames when the console's set-up is why (NATIVE_REFUSALS),
    in the page's language; "" otherwise."""
    for replica in replicas:
        for process in replica.get("processes", []):
            code = (process.get("native_error") or {}).get("detail_code")
            if code in NATIVE_REFUSALS:
                return gettext(NATIVE_REFUSALS[code])
    return ""


def unread(replicas: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(who, why) for each replica or process whose stacks could not be read."""
    out = []
    for replica in replicas:
        if replica.get("error"):
            out.append((replica["label"], reason_text(replica)))
        if replica.get("processes_dropped"):
            dropped = {
                "error": "processes_dropped",
                "count": PROCESSES_PER_REPLICA,
                "dropped": replica["processes_dropped"],
            }
            out.append((replica["label"], reason_text(dropped)))
        for process in replica.get("processes", []):
            who = f"{replica['label']} pid {process['pid']} ({process.get('command', '')})"
            if process.get("error"):
                out.append((who, reason_text(process)))
            if process.get("native_error"):
                failed = process["native_error"]
                if failed.get("detail_code") in NATIVE_REFUSALS:
                    continue  # the console's set-up: said once, by native_note
                reason = _detail(failed) or reason_text(failed)
                out.append((who, reason_text({"error": "native_failed", "reason": reason})))
            if process.get("threads_dropped"):
                dropped = {
                    "error": "threads_dropped",
                    "count": THREADS_PER_PROCESS,
                    "dropped": process["threads_dropped"],
                }
                out.append((who, reason_text(dropped)))
    return out
