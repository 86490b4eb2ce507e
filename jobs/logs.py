"""Replica logs of the local runner: one timestamped file per replica, read from the end.

Every line is "<UTC time, RFC 3339 with microseconds>Z <output>"; the runner's own lines
(CONSOLE_LINES) have CONSOLE_MARK before their text, which no line of the job's output has
(the shim takes it off: jobs/shim.py, job_line), so the pages show them as the console's
(ShownLine.console) and a job printing "[console] exited with code 0" shows as the job's.
Lines written before the mark, and lines a platform returns (AIHC, Kubernetes), show as
the job's output. Reading the last N lines
seeks from the end of the file and reads backwards in blocks, and never more than
`max_bytes`, so a 1 GB log costs what a 1 MB log costs.

A log is kept under LOCAL_LOG_MAX_MB by the shim that writes it: past that, its middle is
dropped, leaving its beginning, a CONSOLE_LOG_CUT line, and its latest part (jobs/shim.py,
ReplicaLog). The file stays a log like any other for the page and the download; how much
was dropped is also kept next to it (log_cut_path), for the page to say so.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import io
import json
import os
import re
import socket
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import regex
from django.conf import settings
from django.db import connection
from django.utils import timezone, translation
from django.utils.translation import gettext, gettext_noop

from .backends.base import DOWNLOAD_TOO_LONG, BackendError, got_no_answer
from .shim import char_start, log_text

BLOCK = 64 * 1024
DEFAULT_TAIL = 200
# Reading stops after this much even if fewer lines were found (a file of huge lines
# or of zeros must not make a tail read the whole file).
MAX_TAIL_BYTES = 8 * 1024 * 1024
# A page shows this much of one line. Lines of 64 KiB (a JSON dump, a tensor printed whole)
# made a 200-line tail, polled every 2 s while the job runs, 8 MB a poll; cut here it stays
# under 0.5 MB. The download keeps every line whole.
SHOWN_LINE_CHARS = 2000


STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})\d{3}Z ")

# What a terminal acts on rather than shows (colours from loguru or rich, cursor moves and
# line erases from tqdm, rich's hyperlinks): CSI sequences, the string sequences (OSC, DCS,
# SOS, PM, APC) up to their terminator or the line's end, and the short ESC ones (ESC 7,
# ESC ( B). A cut-off CSI at the line's end goes too.
SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|$)"
    r"|\x1b[ -/]*[0-~]",
    re.DOTALL,
)
# Other control characters (a lone ESC, BEL, backspace), but not the tab; and Unicode's
# bidirectional embeddings, overrides and isolates, with which a line drew its text in
# another order than it holds (U+202E shows "exe.txt" as "txt.exe"), over the rest of its
# line (security round 16). The marks U+200E and U+200F, which reorder nothing, stay.
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MASK = "******"
# Marks a line of the log as the runner's own (jobs/shim.py, CONSOLE_MARK).
CONSOLE_MARK = "\x1f"


def unmarked(line: str) -> str:
    """A line a platform returned (AIHC, Kubernetes), without any CONSOLE_MARK: its lines are
    all the job's, and no shim stamps them, so one the job printed as "<stamp> <mark>..."
    would otherwise show as the console's. The pages drop the mark anyway (a control
    character), so nothing shown changes."""
    return line.replace(CONSOLE_MARK, "")


class TailLine(str):
    """A line of a log file's tail (tail_lines), with `at`: the byte offset where it starts
    in the file. A str, so anything taking lines takes it as it is."""

    at: int | None = None

    @classmethod
    def at_offset(cls, text: str, at: int) -> TailLine:
        line = cls(text)
        line.at = at
        return line


class ShownLine(str):
    """A line as a page shows it; `console`: the runner's own line, not the job's output.
    A str, so the API and anything else taking lines take it as it is."""

    console: bool = False
    # Its stamp as shown ("" without one) and its text after it.
    stamp: str = ""
    text: str = ""
    # Where it starts in its log file (TailLine.at); None for a line a platform returned.
    at: int | None = None

    @property
    def said(self) -> str:
        """Its text after the page's Console label: a console line's own "[console]" said it
        twice ("Console [console] master-0 attempt 1 starting", copy edit)."""
        return self.text.removeprefix("[console] ") if self.console else self.text

    @classmethod
    def of(cls, stamp: str, text: str, *, console: bool) -> ShownLine:
        line = cls(stamp + text)
        line.stamp, line.text, line.console = stamp, text, console
        return line


# The runner's own lines in a replica's log, written in the console's language (the shim
# fills in {code} and {error}); a page in another language says them again in its own.
CONSOLE_BANNER = gettext_noop("[console] %(replica)s attempt %(attempt)d starting")
# An MPI worker's banner (jobs.runner.mpi_worker): it runs no command of its own, and what the
# launcher's mpirun starts in it writes to the launcher's log, so its own log stays all but
# empty; said where its reader looks for the training's output.
CONSOLE_MPI_WORKER_BANNER = gettext_noop(
    "[console] %(replica)s attempt %(attempt)d starting as an MPI worker: it runs what the "
    "launcher's mpirun starts here, whose output is in %(launcher)s's log"
)
# Names its replica, as the banner does: the page's merged view and a copied line said
# "exited with code 3" of no replica (copy edit). CONSOLE_EXIT_UNNAMED: logs written before.
CONSOLE_EXIT = gettext_noop("[console] %(replica)s exited with code {code}")
CONSOLE_EXIT_UNNAMED = gettext_noop("[console] exited with code {code}")
CONSOLE_START_FAILED = gettext_noop("[console] could not start: {error}")
CONSOLE_LOG_CUT = gettext_noop("[console] log over {limit} MB: {dropped} bytes dropped here")
# Output a full disk kept out of the log (jobs.shim.ReplicaLog); {error} is the system's.
CONSOLE_LOG_UNWRITTEN = gettext_noop(
    "[console] {dropped} bytes of output could not be written to the log here: {error}"
)
CONSOLE_LINES = (
    CONSOLE_BANNER,
    CONSOLE_MPI_WORKER_BANNER,
    CONSOLE_EXIT,
    CONSOLE_EXIT_UNNAMED,
    CONSOLE_START_FAILED,
    CONSOLE_LOG_CUT,
    CONSOLE_LOG_UNWRITTEN,
)
PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]|\{(\w+)\}")
_console_patterns: dict[str, list[tuple[str, re.Pattern[str]]]] = {}


def _pattern(wording: str) -> re.Pattern[str]:
    """A regex matching a console line as `wording` writes it, capturing its values."""
    out, end = [], 0
    for found in PLACEHOLDER.finditer(wording):
        out.append(re.escape(wording[end : found.start()]))
        name = found.group(1) or found.group(2)
        out.append(f"(?P<{name}>.*)" if name == "error" else f"(?P<{name}>\\S+)")
        end = found.end()
    out.append(re.escape(wording[end:]))
    return re.compile("".join(out) + "$")


def console_line_shown(text: str) -> str:
    """One of the runner's own lines in the page's language (any other line as it is)."""
    if not text.startswith("[console]") or translation.get_language() == settings.LANGUAGE_CODE:
        return text
    if settings.LANGUAGE_CODE not in _console_patterns:
        with translation.override(settings.LANGUAGE_CODE):
            _console_patterns[settings.LANGUAGE_CODE] = [
                (msgid, _pattern(gettext(msgid))) for msgid in CONSOLE_LINES
            ]
    for msgid, pattern in _console_patterns[settings.LANGUAGE_CODE]:
        if found := pattern.match(text):
            values = found.groupdict()
            wording = gettext(msgid)
            if msgid in (CONSOLE_BANNER, CONSOLE_MPI_WORKER_BANNER):
                return wording % {**values, "attempt": int(values["attempt"])}
            if msgid == CONSOLE_EXIT:
                return (wording % {"replica": values["replica"]}).format(code=values["code"])
            return wording.format(**values)
    return text


def plain_text(text: str) -> str:
    """The text as a terminal shows it, without its escape sequences; of a line a progress
    bar redrew after `\\r`, the last drawing."""
    # Most lines have no control character, so nothing to drop: a search runs this on every
    # line of a log, and the two substitutions were most of its time.
    if text.isprintable():
        return text
    text = SEQUENCES.sub("", text)
    if "\r" in text:
        drawn = [part for part in text.split("\r") if part.strip()]
        text = drawn[-1] if drawn else ""
    return CONTROLS.sub("", text)


def masked(text: str, secrets: Iterable[str]) -> str:
    """The text with every secret value replaced by ******; each line of a multi-line one
    too, as an error may quote it in part. (Values under 4 characters are left, as the
    runner leaves them: masking every "1" would wreck the text.)"""
    for secret in _masked_values(secrets):
        if secret in text:  # untouched, a recorded text keeps its source (its other languages)
            text = text.replace(secret, MASK)
    return text


def _masked_values(secrets: Iterable[str]) -> list[str]:
    """What masked() replaces, longest first (a secret that starts another is masked as part
    of the longer one where the longer one is written)."""
    values = {part for s in secrets if s for part in [s, *s.splitlines()] if len(part) >= 4}
    return sorted(values, key=len, reverse=True)


# A download's lines are sent in pieces of about this many characters, whole lines each: a
# piece a line was a write a line (a system call, and 5 to 8 bytes of chunked framing), so a
# log of a million short lines took 18 s of a web thread to send, and 6% more bytes (review 44).
DOWNLOAD_PIECE_CHARS = 64 * 1024


# A download reads a line at most this many characters at a time. A progress bar redrawn
# after `\r` for hours (tqdm), or a tool that never ends its line, writes one line of
# hundreds of MB, which was read, masked and sent whole (session 34 left it): a 200 MB line
# took several times that of one web thread. Cut here, the rest of the line is read as the
# next part; the download still holds every character as written.
DOWNLOAD_LINE_CHARS = 1024 * 1024
LINE_ENDS = ("\n", "\r")
# A platform's whole log, for a download, is written to a temporary file as it comes (spooled_
# lines reads it back): in memory up to this many bytes, in the system's temporary directory
# beyond, removed once the download is given (Kubernetes, AIHC).
DOWNLOAD_SPOOL_BYTES = 1024 * 1024


def text_parts(text: TextIO) -> Iterator[str]:
    """`text`'s lines with their ends as written, a longer line than DOWNLOAD_LINE_CHARS in
    parts of that many characters (the last part of a line has its end, the others none)."""
    while part := text.readline(DOWNLOAD_LINE_CHARS):
        yield part


def file_parts(file: BinaryIO) -> Iterator[str]:
    """A log file's lines (decoded as the job page shows them: shim.log_text) with their
    newlines, a longer line than DOWNLOAD_LINE_CHARS bytes in parts of at most that many,
    never cut inside a UTF-8 character (each half would show as garbage)."""
    carried = b""
    while data := file.readline(DOWNLOAD_LINE_CHARS):
        data = carried + data
        cut = len(data) if data.endswith(b"\n") else char_start(data, len(data))
        carried = data[cut:]
        if cut:
            yield log_text(data[:cut])
    if carried:
        yield log_text(carried)


def masked_parts(parts: Iterable[str], secrets: Sequence[str]) -> Iterator[str]:
    """`parts` of lines (text_parts) masked as whole lines are (masked): of a part that does
    not end its line, the last characters, one fewer than the longest secret has, are held
    back unmasked and masked with the next part, so a secret the cut falls inside is masked
    whole; the held back characters start earlier where a secret written whole in the part
    runs into them. What is given is cut where no secret is written across the cut, so it is
    masked as the whole line would be. (Until review 46 the part was masked first and its
    masked end held back: a secret that starts a longer one, written just before the cut,
    was masked alone, and the rest of the longer one came out in the clear.)"""
    values = _masked_values(secrets)
    held = max((len(v) for v in values), default=1) - 1
    carried = ""
    for part in parts:
        text = carried + part
        if text.endswith(LINE_ENDS) or held <= 0:
            carried = ""
            yield masked(text, values)
            continue
        cut, at_cut = _clear_cut(text, max(len(text) - held, 0), values, held=held)
        carried = text[cut:]
        if at_cut:
            # The cut stopped inside copies of secrets that overlap end to end: the copy it
            # stopped at is masked now, so what is given before it cannot join what follows
            # into a secret in the clear, however the next part is cut.
            carried = MASK + carried[len(at_cut) :]
        if cut:
            yield masked(text[:cut], values)
    if carried:
        yield masked(carried, values)


def _clear_cut(text: str, cut: int, values: Sequence[str], *, held: int) -> tuple[int, str]:
    """`cut`, or earlier, where no secret value written whole in `text` is cut in two, and "".
    (A value that starts before `cut` and ends after it is moved past; that may put the cut
    in another, so it is looked at again until none is.) The cut moves back `held` characters
    and one value at most: values that overlap one another end to end (a secret "aaaa" in a
    line of a million "a") moved it to the part's start, so the whole line was held in memory
    and looked through again for each part (review 47). Stopped there, the value written from
    the cut is given with it, for masked_parts to mask at once."""
    floor = cut - held
    found = ""
    moved = True
    while moved and cut > 0:
        if cut <= floor:
            return cut, found
        moved = False
        for value in values:
            # Only a value that starts before the cut and ends after it is found here.
            start = text.find(value, max(cut - len(value) + 1, 0), cut + len(value) - 1)
            if start != -1:
                cut, moved, found = start, True, value
    return cut, ""


# An escape sequence a part of a line ends inside of (DOWNLOAD_LINE_CHARS cut it there): its
# introducer and what may still go on (SEQUENCES' three kinds), to the part's end.
UNFINISHED_SEQUENCE = re.compile(
    r"(?:(?:\x1b\[|\x9b)[0-?]*[ -/]*"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])(?:[^\x07\x9c\x1b]|\x1b(?!\\))*"
    r"|\x1b[ -/]*)\Z",
    re.DOTALL,
)
# How far back from a part's end such a sequence is looked for: a colour code or a cursor
# move is a few characters; a longer one (an OSC title or hyperlink) cut is dropped as before.
SEQUENCE_HELD_CHARS = 1024


def whole_sequences(parts: Iterable[str]) -> Iterator[str]:
    """`parts` of lines (text_parts, file_parts) with an escape sequence a cut falls inside of
    moved whole into the next part, so that stripping each part (plain_text) drops it whole:
    cut, its start went as "a cut-off CSI at the line's end" and its rest ("1m") was left as
    text, joining a secret's two halves around it unmasked (left39: "hf-sec\x1b[3" + "1mret").
    """
    carried = ""
    for part in parts:
        text = carried + part
        carried = ""
        if not text.endswith(LINE_ENDS):
            found = UNFINISHED_SEQUENCE.search(text, max(len(text) - SEQUENCE_HELD_CHARS, 0))
            if found:
                text, carried = text[: found.start()], text[found.start() :]
        if text:
            yield text
    if carried:
        yield carried


def spooled_lines(log: BinaryIO, secrets: list[str]) -> Iterator[str]:
    """The lines of a log written to `log` with their ends as written (a progress bar's
    `\\r` kept: until left38 each became a newline), a line longer than
    jobs.logs.DOWNLOAD_LINE_CHARS in parts, masked as a backend's logs() masks them and never read as
    the runner's own; `log` is closed once read, or when the download is closed before its
    end. Masked a line at a time: the answer's chunks were joined in the file, so a secret
    cut across two is whole here, and one cut across two parts of a line is held back
    (jobs.logs.masked_parts)."""
    with log, io.TextIOWrapper(log, encoding="utf-8", errors="replace", newline="") as text:
        log.seek(0)
        for part in masked_parts(text_parts(text), secrets):
            yield unmarked(part)


def _in_pieces(lines: Iterable[str]) -> Iterator[str]:
    """`lines` (each with its end, or a part of a longer line: DOWNLOAD_LINE_CHARS) joined
    into pieces of DOWNLOAD_PIECE_CHARS or more, the last shorter: so a piece holds at most
    DOWNLOAD_LINE_CHARS more than that, one write however long the log's lines."""
    piece: list[str] = []
    size = 0
    for line in lines:
        piece.append(line)
        size += len(line)
        if size >= DOWNLOAD_PIECE_CHARS:
            yield "".join(piece)
            piece, size = [], 0
    if piece:
        yield "".join(piece)


def downloaded_lines(lines: Iterable[str]) -> Iterator[str]:
    """A replica's log as the owner's download gives it from its platform: `lines` as
    Backend.download_lines gives them (each with its end, a long line in parts), sent in
    pieces (DOWNLOAD_PIECE_CHARS); `lines` is closed with it (a download closed early
    removes its temporary file: KubernetesBackend.download_lines)."""
    try:
        yield from _in_pieces(lines)
    finally:
        if isinstance(lines, Generator):
            lines.close()


def downloaded_for_staff(lines: Iterable[str], *, secrets: Iterable[str]) -> Iterator[str]:
    """A replica's log as the admin's download gives it to staff, each line ending in a
    newline (a long line in parts: DOWNLOAD_LINE_CHARS), sent in pieces
    (DOWNLOAD_PIECE_CHARS): each line's text as the
    admin's Logs page has it (no terminal codes, the job's secrets masked again: a colour
    code inside a value hid it from the mask applied when the line was written), but whole
    and with its stamp as written (UTC). Decision: not the file as it is (the owner's
    download is): staff never get a secret."""
    secrets = list(secrets)

    def shown(part: str) -> str:
        # A line's end is a newline here (a redraw's `\r` too: the page shows each redraw
        # so); a part of a longer line has none, as written.
        if part.endswith(LINE_ENDS):
            return plain_text(part.rstrip("\r\n")) + "\n"
        return plain_text(part)

    def rejoined(parts: Iterable[str]) -> Iterator[str]:
        # Where the line bound (DOWNLOAD_LINE_CHARS) cut a "\r\n" in two, the line ends once
        # (its "\r" ended it; its "\n" alone was drawn as an empty line). Until review 46.
        after_cr = False
        for part in parts:
            if after_cr and part.startswith("\n"):
                part = part[1:]
            # A "\n" taken off leaves no "\r" before what comes next: an empty line right
            # after the cut "\r\n" is a line of its own (it went too until review 47).
            after_cr = part.endswith("\r")
            if part:
                yield part

    def ended(parts: Iterable[str]) -> Iterator[str]:
        # The log's last line is ended too, as every other line is here.
        last = ""
        for part in parts:
            last = part or last
            yield part
        if last and not last.endswith("\n"):
            yield "\n"

    try:
        yield from _in_pieces(
            ended(masked_parts(map(shown, rejoined(whole_sequences(lines))), secrets))
        )
    finally:
        if isinstance(lines, Generator):
            lines.close()


def download_unavailable_reason(exc: BackendError) -> str:
    """Why a replica's whole log could not be read from its platform now, for the page that
    says so (the owner's Download, the admin's): a platform that did not answer (within
    *_DOWNLOAD_READ_TIMEOUT) is said to be slow, with what to do; one still sending the log
    when LOG_DOWNLOAD_TOTAL_SECONDS were up, that the log is larger than comes in that time;
    a refusal as the platform words it."""
    why = gettext("The logs cannot be read right now: %(why)s") % {"why": exc.message}
    if exc.code == DOWNLOAD_TOO_LONG:
        # The platform answered, and was still sending: a log this large (or a link this
        # slow) takes longer every time, so "try again" would not help (review 42).
        return (
            why
            + " "
            + gettext(
                "A download waits at most %(seconds)d seconds for the whole log, and this one "
                "is larger than comes in that time. Its latest lines are on the job's page; an "
                "administrator can raise LOG_DOWNLOAD_TOTAL_SECONDS."
            )
            % {"seconds": settings.LOG_DOWNLOAD_TOTAL_SECONDS}
        )
    if not got_no_answer(exc):
        return why
    return (
        why
        + " "
        + gettext(
            "A download waits at most %(seconds)d seconds for the whole log, so that a slow "
            "platform does not hold up the console. Try again in a few minutes; the job's "
            "page shows the latest lines meanwhile."
        )
        % {"seconds": settings.LOG_DOWNLOAD_TOTAL_SECONDS}
    )


def job_secrets(job: Any) -> list[str]:
    """The job's secret values, also once its spec cannot be read any more (Job.secret_values)."""
    return job.secret_values()


def cut_for_page(text: str) -> str:
    """A line longer than SHOWN_LINE_CHARS, cut there, saying how much more the download has."""
    if len(text) <= SHOWN_LINE_CHARS:
        return text
    more = len(text) - SHOWN_LINE_CHARS
    return f"{text[:SHOWN_LINE_CHARS]} " + gettext(
        "[… %(count)d more characters in this line: download the log for all of it]"
    ) % {"count": more}


def shown_lines(
    lines: Iterable[str], *, secrets: Iterable[str] = (), utc: bool = False
) -> list[ShownLine]:
    """Lines as the pages show them: without terminal escape sequences, with the job's
    secrets masked (again: a colour code inside a value hid it from the mask applied when
    the line was written), cut at SHOWN_LINE_CHARS, and each line's UTC stamp in the
    reader's time zone (jobs.time_zones), as every other time on the page is, to the millisecond. A download
    keeps the file as is. `utc`: each stamp in UTC, marked Z (`2026-12-07T06:30:37.471Z`), as
    the API answers every time (qa97: its lines were in TIME_ZONE without an offset)."""
    secrets = list(secrets)
    shown = []
    for line in lines:
        found, text, console = _shown_text(line, secrets)
        stamp = _utc_stamp(found) if utc else _shown_stamp(found)
        shown_line = ShownLine.of(stamp, cut_for_page(text), console=console)
        shown_line.at = getattr(line, "at", None)
        shown.append(shown_line)
    return shown


def _utc_stamp(found: re.Match[str] | None) -> str:
    """A line's stamp as the file has it, UTC, to the millisecond ("" for none)."""
    return f"{found.group(1)}.{found.group(2)}Z " if found else ""


def _shown_text(line: str, secrets: list[str]) -> tuple[re.Match[str] | None, str, bool]:
    """A line's stamp (if it has one), its text as the page shows it, not yet cut, and
    whether it is the runner's own (marked right after its stamp; said in the page's
    language). A line of the job's is shown as it is, "[console]" and all."""
    found = STAMP.match(line)
    rest = line[found.end() :] if found else line
    if found and rest.startswith(CONSOLE_MARK):
        return found, console_line_shown(masked(plain_text(rest[1:]), secrets)), True
    return found, masked(plain_text(rest), secrets), False


def _shown_stamp(found: re.Match[str] | None) -> str:
    """A line's UTC stamp in the reader's time zone, to the millisecond ("" for none)."""
    if found is None:
        return ""
    zone = timezone.get_current_timezone()
    when = datetime.fromisoformat(found.group(1)).replace(tzinfo=UTC).astimezone(zone)
    return f"{when:%Y-%m-%d %H:%M:%S}.{found.group(2)} "


def job_dir(public_id: str, runner: str = "") -> Path:
    """A local job's folder (its logs, its attempts' files). `runner` is where the worker that
    started it ran (LocalRun.runner, `host:/run/dir`, jobs.runner.runner_key): on this host,
    the folder is in that worker's run directory, which need not be this process's
    LOCAL_RUN_DIR (a second worker standing by on this host with a run directory of its own
    took over and started the job), so the web pages read, and Delete removes, the files
    where they are. A job started on another host, or before runners were recorded, is
    looked for in this process's LOCAL_RUN_DIR (a web server cannot read another machine's
    files: README, "Several workers on one database").

    A job whose recorded folder is not there but whose folder is in this LOCAL_RUN_DIR is read
    here: a backup restored into another folder or onto another machine (qa89: every restored
    job's log read "No output yet", the recorded run directory being the lost one). Decided:
    a fallback on read, not rewriting LocalRun.runner, which would make the new worker follow
    a job that was running at backup time and launch or fail it (README, "What a takeover
    means for local jobs"); a folder named by a job's unique id in this run directory is that
    job's, put there by a restore."""
    here = Path(settings.LOCAL_RUN_DIR) / public_id
    host, sep, run_dir = runner.partition(":")
    if sep and run_dir and host == socket.gethostname():
        recorded = Path(run_dir) / public_id
        if recorded.exists() or not here.exists():
            return recorded
    return here


def ran_elsewhere(public_id: str, runner: str) -> bool:
    """Whether a job's worker ran it on another host than this process's and its folder was
    not restored into this LOCAL_RUN_DIR (job_dir): its files are out of this process's reach."""
    host, sep, run_dir = runner.partition(":")
    elsewhere = bool(sep and run_dir) and host != socket.gethostname()
    return elsewhere and not (Path(settings.LOCAL_RUN_DIR) / public_id).exists()


def runner_of(job: Any) -> str:
    """Where a local job's replicas run (LocalRun.runner; "" before it started)."""
    from .models import LocalRun

    try:
        return job.local_run.runner
    except LocalRun.DoesNotExist:
        return ""


def replica_log_path(public_id: str, label: str, runner: str = "") -> Path:
    return job_dir(public_id, runner) / "logs" / f"{label}.log"


def log_cut_path(log: Path) -> Path:
    """Where the shim records how much of `log` it dropped (JSON; none until a cut)."""
    return log.with_name(log.name + ".cut.json")


def log_cut(log: Path) -> dict[str, int] | None:
    """{"limit_mb", "dropped"} of a log the shim cut (bytes of output dropped in all), or
    None for a log that was never over its cap."""
    try:
        record = json.loads(log_cut_path(log).read_text())
        return {"limit_mb": int(record["limit_mb"]), "dropped": int(record["dropped"])}
    except (OSError, ValueError, TypeError, KeyError):
        return None


def tail_lines(path: Path, n: int, *, max_bytes: int = MAX_TAIL_BYTES) -> list[str]:
    """The last `n` lines of `path` (decoded leniently: shim.log_text), reading backwards
    from the end."""
    if n <= 0:
        return []
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    try:
        end = os.fstat(fd).st_size
        position = end
        chunks: list[bytes] = []
        newlines = 0
        read = 0
        while position > 0 and newlines <= n and read < max_bytes:
            size = min(BLOCK, position, max_bytes - read)
            position -= size
            chunk = os.pread(fd, size, position)
            chunks.append(chunk)
            newlines += chunk.count(b"\n")
            read += size
    finally:
        os.close(fd)
    data = b"".join(reversed(chunks))
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    # Where each line starts in the file: the job page tells new lines from those it shows
    # by it (static/job_logs.js), the text of a line printed again being no guide.
    starts = []
    at = position
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    if position > 0 and lines:
        lines.pop(0)  # the first one is probably cut
        starts.pop(0)
    return [
        TailLine.at_offset(log_text(line), at)
        for line, at in zip(lines[-n:], starts[-n:], strict=True)
    ]


def line_time(line: str) -> datetime | None:
    stamp, _, _ = line.partition(" ")
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def lines_since(path: Path, since: datetime, *, limit: int = 10_000) -> list[str]:
    """Lines written at or after `since` (at most the last `limit` of them)."""
    lines = tail_lines(path, limit)
    for i, line in enumerate(lines):
        when = line_time(line)
        if when is not None and when >= since:
            return lines[i:]
    return []


# -- search -----------------------------------------------------------------------------
# A search reads a replica's log as the page shows it (escape codes gone, secrets masked,
# stamps in the console's zone), so it finds what the reader sees and never where a secret
# is: "hunter2" finds nothing in a line that shows "******". It reads from the log's end
# backwards, as a person searching a training log wants its latest matches (the traceback
# that ended the job), not the first ones of a gigabyte. Every bound below keeps one search
# to one request's worth of work, whatever the log or the pattern.
SEARCH_MAX_PATTERN = 200
SEARCH_CONTEXT = 2
SEARCH_MAX_CONTEXT = 10
SEARCH_MAX_MATCHES = 200
# A search stops here, wherever it is in the log, and says which part it searched: a 1 GB
# log takes longer.
SEARCH_SECONDS = 5.0
# Of a longer line (the shim writes pieces of 64 KiB; a file written otherwise may have a
# line of any length, or none at all) the search reads this much, its start, and skips the rest.
SEARCH_LINE_BYTES = 128 * 1024
# Line numbers count from the log's first line, as the download's do, so a search that
# stopped before reaching it counts the newlines of the part it did not search: 1 MiB at a
# time with bytes.count, 0.7 to 2 s a GB on our busy two-core test machine, 3.2 s from a
# cold disk (a log is kept under LOCAL_LOG_MAX_MB, 1 GB by default). That count has this
# long of its own after the search; past it, line numbers count from the first line
# searched instead, and the page says so. Numbering from the end, or by byte offset, was the
# other choice: always fast, but no editor or `sed -n` finds a line by it in the download.
SEARCH_COUNT_SECONDS = 3.0
COUNT_BLOCK = 1024 * 1024
# How many searches one person runs at once, across the web server's processes and threads.
# qa90: ten searches of a 570 MB log at once (each up to SEARCH_SECONDS and then the count)
# took every thread the web server has (WEB_WORKERS x WEB_THREADS, 8 by default), and another
# person's log-in waited 8.3 s. Two, not one: a search sent again while the first is on its
# way (its words changed) ends the first in the browser only (hx-sync replace), and the server
# goes on with it to the end; one slot would refuse that second search.
SEARCHES_PER_USER = 2


class SearchesBusy(Exception):
    """The person has SEARCHES_PER_USER searches running already."""


@contextlib.contextmanager
def search_slot(*, user_id: int) -> Iterator[None]:
    """Holds one of the person's SEARCHES_PER_USER slots while the search runs; SearchesBusy
    when all are held. A slot is a lock (flock) on a file under CONSOLE_VAR_DIR, so every
    process of the web server on this machine counts the same ones, and the kernel lets go of
    it when the request ends or its process dies (no count left behind to clean up). A user id
    is its database's: the files are named by the database too, so two consoles (or two test
    runs) sharing a folder but not a database do not count each other's person 1 as one."""
    folder = settings.VAR_DIR / "search-slots"
    folder.mkdir(exist_ok=True)
    database = hashlib.sha256(str(connection.settings_dict["NAME"]).encode()).hexdigest()[:12]
    for slot in range(SEARCHES_PER_USER):
        fd = os.open(folder / f"{database}-{user_id}-{slot}", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield
        finally:
            os.close(fd)  # which lets go of the lock
        return
    raise SearchesBusy


# `regex` builds a counted repeat out: "(a{1000}){1000}" took 260 MB, and so did a repeat of
# 40 small pieces ("(?:a*b+a*b+...){9999}"), as each piece is copied per count. What a
# pattern costs is its size built out (jobs.logs._built_out_size), which stays under this:
# about 3 MB of compiled pattern.
SEARCH_MAX_REPEATS = 10_000
COUNTED_REPEAT = re.compile(r"\{(\d*)(?:,(\d*))?\}")
# A pattern calling itself ("(?R)", "(?1)", "(?&name)") grows its stack without end before
# any timeout is looked at (memory in gigabytes); no log search needs it.
RECURSION = re.compile(r"\(\?(?:R|&|P>|[-+]?\d)")
# Verbose mode ("(?x)") ignores spaces, even inside a count ("a{1 000}"), and makes "#" start
# a comment that may hide a bracket: its patterns are not read piece by piece below.
VERBOSE = re.compile(r"\(\?[a-zA-Z^-]*x")
# Escapes whose name follows in braces: "\N{EM DASH}", "\p{Han}".
NAMED_ESCAPE = re.compile(r"\\[NpP]\{[^}]*\}")
# A character class, to its first unescaped "]" that is not its first character.
CHARACTER_CLASS = re.compile(r"\[\^?\]?(?:\\.|[^\\\]])*\]", re.DOTALL)
# The rest of a comment "(?#...)", to its first unescaped ")".
COMMENT_REST = re.compile(r"(?:\\.|[^\\)])*\)", re.DOTALL)


class SearchPatternError(ValueError):
    pass


# What the regular-expression engine says, said in the page's language: its own words are
# English and technical ("unterminated character set"), and a Chinese page showed them as they
# were. By the start of its message (`msg`, without the position), longest first, so "missing ),
# unterminated comment" is not read as "missing )". Every message `regex` (the engine the
# search uses) raises is here, and every one Python's `re` raises (the same mistakes, some in
# other words; tests/test_job_logs_search.py reads both engines' sources to keep it so). A
# message not listed (a later engine's) says only that the pattern cannot be read there, with
# the position: never the engine's English inside a Chinese sentence.
REGEX_MISTAKES: dict[str, str] = {}


def _mistake(words: str, *starts: str) -> None:
    for start in starts:
        REGEX_MISTAKES[start] = words


_mistake(
    gettext_noop("a [ is not closed by a ]"),
    "unterminated character set",
    "missing ]",
    "expected character set",
)
_mistake(gettext_noop("a comment (?#... is not closed by a )"), "missing ), unterminated comment")
_mistake(
    gettext_noop("a group name is not closed, by a > or a )"),
    "missing ), unterminated name",
    "missing >, unterminated name",
    "missing >",
)
_mistake(gettext_noop("a < is missing before a group's name or number"), "missing <")
_mistake(
    gettext_noop("a ( is not closed by a )"), "missing ), unterminated subpattern", "missing )"
)
_mistake(gettext_noop("a ) has no ( before it"), "unbalanced parenthesis")
_mistake(
    gettext_noop(
        "*, +, ? or {n} has nothing before it to repeat; to find the character itself, put a "
        "\\ before it"
    ),
    "nothing to repeat",
)
_mistake(
    gettext_noop("a fuzzy-match constraint such as {e<=1} has nothing before it"),
    "nothing for fuzzy constraint",
)
_mistake(
    gettext_noop("a fuzzy-match constraint such as {e<=1} is not written as the engine reads it"),
    "bad fuzzy cost limit",
    "repeated fuzzy cost",
    "more than one cost equation",
)
_mistake(gettext_noop("two repeats follow each other, such as **"), "multiple repeat")
_mistake(gettext_noop("in {m,n}, m is greater than n"), "min repeat greater than max repeat")
_mistake(
    gettext_noop("a count in {n} is too large"),
    "repeat count too big",
    "the repetition number is too large",
)
_mistake(
    gettext_noop("the pattern ends with a single \\; to find a \\ itself, write \\\\"),
    "bad escape (end of pattern)",
)
_mistake(
    gettext_noop(
        "a \\ is followed by nothing, or by a letter that means nothing after it; to find a "
        "\\ itself, write \\\\"
    ),
    "bad escape",
)
_mistake(
    gettext_noop(
        "\\x, \\u or \\U is not followed by the hexadecimal digits it needs, such as \\x41, "
        "\\u4e2d or \\U0001F600"
    ),
    "incomplete escape",
    "bad hex escape",
)
_mistake(gettext_noop("an octal escape is over \\377, the largest there is"), "octal escape value")
_mistake(
    gettext_noop("\\N{...} needs the name of a Unicode character, such as \\N{EM DASH}"),
    "undefined character name",
    "missing character name",
    "missing {",
)
_mistake(
    gettext_noop("\\p{...} or \\P{...} names no Unicode property, such as \\p{Han}"),
    "unknown property",
)
_mistake(gettext_noop("a { is not closed by a }"), "expected }")
_mistake(
    gettext_noop("\\L<...> names a list of words, which a search does not have"),
    "undefined named list",
    "missing named list",
)
_mistake(gettext_noop("a range in [...] runs backwards, such as z-a"), "bad character range")
_mistake(
    gettext_noop("a reference such as \\1 names no group"),
    "invalid group reference",
    "unknown group",
    "bad group number",
    "invalid relative group number",
    "missing relative group number",
    "group reference not allowed",
)
_mistake(
    gettext_noop("a reference refers to the group it is in, which has not ended yet"),
    "cannot refer to an open group",
    "cannot refer to group defined in the same lookbehind",
)
_mistake(
    gettext_noop("two groups have the same name, so a reference to it is unclear"),
    "redefinition of group name",
    "ambiguous group reference",
)
_mistake(
    gettext_noop(
        "a group name is missing or has a character a name cannot have: use letters, digits "
        "and _, not starting with a digit"
    ),
    "missing group name",
    "bad character in group name",
)
_mistake(
    gettext_noop(
        "the flags in (?...) are not valid: a flag is unknown, turned on and off at once, or "
        "not allowed with another (a, u and L exclude each other), or a global flag is not "
        "at the pattern's start"
    ),
    "bad inline flags",
    "unknown flag",
    "missing flag",
    "missing -, : or )",
    "missing :",
    "ASCII and LOCALE flags are incompatible",
    "ASCII and UNICODE flags are incompatible",
    "cannot use LOCALE flag",
    "cannot use UNICODE flag",
    "global flags not at the start",
    "ASCII, LOCALE and UNICODE flags are mutually incompatible",
    "VERSION0 and VERSION1 flags are mutually incompatible",
)
_mistake(
    gettext_noop(
        "(? or (* is followed by something the engine does not know; for a group of its own, "
        "write (?:...)"
    ),
    "unknown extension",
    "unknown verb",
    "expected lookaround conditional",
)
_mistake(
    gettext_noop("a conditional (?(...)yes|no) has more than two branches"),
    "conditional backref with more than two branches",
)
_mistake(
    gettext_noop("a look-behind (?<=...) or (?<!...) must match a fixed number of characters"),
    "look-behind requires fixed-width pattern",
    "looks too much behind",
)
_mistake(gettext_noop("the pattern has too many groups"), "too many groups")
_mistake(gettext_noop("the pattern ends in the middle of a construct"), "unexpected end of pattern")
_mistake(
    gettext_noop("the pattern is nested too deeply"),
    "maximum recursion depth exceeded",
    "recursive regex not supported by Scanner",
)
# Any other message: the engine's words are not shown (they are English whatever the page's).
UNKNOWN_MISTAKE = gettext_noop("the pattern cannot be read as a regular expression")
MISTAKE_STARTS = sorted(REGEX_MISTAKES, key=len, reverse=True)


def regex_mistake(exc: Exception, text: str) -> str:
    """The engine's refusal of `text` as people read it: what is wrong, then where (for
    `regex.error`, which knows where; a ValueError or OverflowError from the engine does not)."""
    message = str(getattr(exc, "msg", None) or exc)
    said = next(
        (gettext(REGEX_MISTAKES[start]) for start in MISTAKE_STARTS if message.startswith(start)),
        gettext(UNKNOWN_MISTAKE),
    )
    position = getattr(exc, "pos", None)
    if position is None:
        return said
    if position >= len(text):
        return gettext("at its end, %(mistake)s") % {"mistake": said}
    return gettext("at character %(position)d, %(mistake)s") % {
        "mistake": said,
        "position": position + 1,
    }


class SearchCursorError(ValueError):
    """Where a search of older matches was to start is no line start of the log (beyond its
    end, or inside a line): a link made up, or one from before the log was cut."""


def _counts(text: str) -> Iterator[int]:
    for low, high in COUNTED_REPEAT.findall(text):
        yield max(int(low or 0), int(high or 0), 1)


def _built_out_size(text: str) -> int | None:
    """How many pieces a pattern has once its counted repeats are built out: a counted repeat
    multiplies what it repeats, and what follows one another (or is an alternative) adds up,
    so "a{200}b{200}" is 400 and "((a{100}){100}){100}" a million. A piece is a character
    class, an escape, a dot, or a run of plain characters (which `regex` keeps as one string,
    so "(abcdefghij){5000}" is 5,000). None for a text this does not read piece by piece."""
    # One frame a group open: [the pieces before its last, its last piece (what a count
    # would repeat), the length of that last piece if it is a run of plain characters].
    frames = [[0, 0, 0]]
    i = 0
    while i < len(text):
        char, frame = text[i], frames[-1]
        if char == "{" and (count := COUNTED_REPEAT.match(text, i)):
            if frame[2] > 1:  # a count repeats only the last character of a run
                frame[0], frame[1] = frame[0] + 1, 1
            frame[1] = max(frame[1], 1) * max(_counts(count.group()))
            frame[2] = 0
            i = count.end()
            continue
        if char in "*+?":  # not built out; a run ends there as a count ends it
            frame[2] = 0
        elif char == "|":
            frame[0], frame[1], frame[2] = frame[0] + frame[1], 0, 0
        elif char == ")":
            if len(frames) == 1:
                return None
            frames.pop()
            parent = frames[-1]
            parent[0], parent[1], parent[2] = parent[0] + parent[1], frame[0] + frame[1], 0
        elif text.startswith("(?#", i):  # a comment, to its first unescaped ")"
            end = COMMENT_REST.match(text, i + 3)
            if end is None:
                return None
            i = end.end()
            continue
        elif char == "(":
            frames.append([0, 0, 0])
        elif char in "\\[":
            # One piece, to its end: "\d", "\N{...}", or a class. (Where `regex` reads a
            # class further, a POSIX class or a nested set, this reads more pieces after it:
            # more, never fewer.)
            if found := NAMED_ESCAPE.match(text, i):
                end = found.end()
            elif char == "\\":
                end = i + 2
            else:
                found = CHARACTER_CLASS.match(text, i)
                if found is None:
                    return None
                end = found.end()
            frame[0], frame[1], frame[2] = frame[0] + frame[1], 1, 0
            i = end
            continue
        elif frame[2]:  # a plain character extends the run before it
            frame[2] += 1
        else:
            frame[0], frame[1], frame[2] = frame[0] + frame[1], 1, 1
        i += 1
    if len(frames) != 1:
        return None
    return frames[0][0] + frames[0][1]


def search_pattern(text: str, *, is_regex: bool, match_case: bool) -> regex.Pattern[str]:
    """The compiled search: `text` as a substring, or as a regular expression (Python's
    syntax). The `regex` module, unlike `re`, takes a timeout on each match, which is what
    bounds a pattern that backtracks catastrophically ("(a|aa)+$")."""
    flags = 0 if match_case else regex.IGNORECASE
    if is_regex:
        if RECURSION.search(text):
            raise SearchPatternError(gettext("it calls itself, which a search does not allow"))
        size = None if VERBOSE.search(text) else _built_out_size(text)
        if size is None:
            # Not read piece by piece (verbose, or unbalanced, which `regex` refuses anyway):
            # every count multiplied, with each character a piece, errs only on the safe side.
            size = len(text)
            for count in _counts(text):
                size *= count
        if size > SEARCH_MAX_REPEATS:
            raise SearchPatternError(
                gettext("its counted repeats, written out, would be over %(limit)d pieces")
                % {"limit": SEARCH_MAX_REPEATS}
            )
    try:
        return regex.compile(text if is_regex else regex.escape(text), flags)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise SearchPatternError(regex_mistake(exc, text)) from None
    except ValueError as exc:
        # Flags that exclude each other ("(?u)(?a)") are a ValueError in `regex`, not its
        # error: it was a server error.
        raise SearchPatternError(regex_mistake(exc, text)) from None


@dataclass
class FoundLine:
    # In the log, from 1 (in the download too, for a local log; see LogSearch.numbered).
    number: int
    # The line as shown, in pieces: (text, True) is a match, to highlight.
    parts: list[tuple[str, bool]]
    match: bool
    # The runner's own line (ShownLine.console).
    console: bool = False
    # Its stamp as shown ("" without one), apart from `parts`: a runner's line shows its
    # Console badge after the stamp, as the tail does (ShownLine.stamp); never a match.
    stamp: str = ""


@dataclass
class LogSearch:
    # Runs of neighbouring lines (matches and their context), in the log's order; a gap
    # between runs.
    groups: list[list[FoundLine]] = field(default_factory=list)
    shown: int = 0  # matching lines found, the newest (at most the limit)
    lines: int = 0  # lines searched, the log's last
    # Why it ended before the log's first line: "time" (out of time) or "limit" (it found
    # the limit of matching lines); "" when it searched the whole log.
    stopped: str = ""
    # A local log: its size in bytes when searched, and how many of its last bytes were
    # searched (None for lines a platform returned, which are counted in lines).
    size: int | None = None
    searched: int = 0
    # Line numbers count from the log's first line; False: from the first line searched
    # (counting the lines before it took too long).
    numbered: bool = True
    # Where the oldest line searched starts (a byte offset in a file, an index in a list).
    start: int = 0
    # Where the part searched ends: the log's size, or for older matches, where the newer
    # ones began (search_file's `before`).
    end: int = 0
    # Where a search of older matches goes on, back from (its `before`): the start of the
    # oldest match shown when the limit was reached, or of the oldest line searched when out
    # of time; None once the log's first line was searched (or none was, out of time).
    resume: int | None = None


def _found_line(
    number: int,
    found: re.Match[str] | None,
    text: str,
    console: bool,
    spans: list[tuple[int, int]],
) -> FoundLine:
    """A line for the results: its matches marked, cut at SHOWN_LINE_CHARS as the tail is."""
    shown = text[:SHOWN_LINE_CHARS]
    parts: list[tuple[str, bool]] = []
    end = 0
    for start, stop in spans:
        start, stop = max(start, end), min(stop, len(shown))
        if start >= stop:  # an empty match, or one past the cut
            continue
        parts += [(shown[end:start], False), (shown[start:stop], True)]
        end = stop
    parts.append((shown[end:], False))
    if len(text) > SHOWN_LINE_CHARS:
        parts.append((cut_for_page(text)[len(shown) :], False))
    return FoundLine(
        number=number,
        parts=[p for p in parts if p[0]],
        match=bool(spans),
        console=console,
        stamp=_shown_stamp(found),
    )


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


# `regex` counts a match's timeout in the process's CPU time (C's clock()), which on a busy
# machine runs slower than the wall clock: given the 5 s left, one match took 12.6 s, and
# 1 s took 3.7 s with five busy processes on our two cores. So a match is first given this
# much, and one cut short is run again with twice as much, or with what the last try shows
# fits in the time left on the wall clock, whichever is less; the work done again at most
# doubles that of a slow line, and most lines take microseconds.
FIRST_MATCH_SECONDS = 0.1


def _within[T](deadline: float, match: Callable[..., T], *args: Any) -> T:
    """match(*args, timeout=...) ended by `deadline` (time.monotonic()) even where `regex`
    reads its timeout on the CPU clock; TimeoutError once the deadline is passed."""
    given, share = FIRST_MATCH_SECONDS, 1.0
    while True:
        started = time.monotonic()
        left = deadline - started
        if left <= 0:
            raise TimeoutError
        timeout = min(given, left * share)
        try:
            return match(*args, timeout=timeout)
        except TimeoutError:
            took = time.monotonic() - started
            # The CPU time the try had, of the time it took: this process's share of a CPU.
            share = min(1.0, timeout / took) if took > 0 else 1.0
            given *= 2


def _search_newest_first(
    lines: Iterable[tuple[int, str] | UnmatchedLines],
    *,
    pattern: regex.Pattern[str],
    deadline: float,
    context: int,
    limit: int,
    secrets: Iterable[str],
    after: Sequence[tuple[int, str]] = (),
) -> LogSearch:
    """The search of `lines`, given from the log's last as (where it starts, text): the
    newest `limit` matching lines, each with `context` lines either side (neighbouring runs
    joined, as grep does). It stops there, or at `deadline` (time.monotonic()), with what it
    found so far. Each line's number is counted from the end (1 for the line searched
    first), for the caller to number them from the start (_number_from). `after`: the lines
    that follow the part searched (of a page of older matches, the first lines of the newer
    page, oldest first): not searched, only shown as the context after a match just before
    them (numbered 0, -1, … from the end)."""
    secrets = list(secrets)
    result = LogSearch()
    groups: list[list[FoundLine]] = []  # each, and their lines, newest first until the end
    # The lines just searched and not shown, newer than the next one, in case it matches.
    newer: deque[tuple[int, re.Match[str] | None, str, bool]] = deque(maxlen=context)
    for number in range(len(after) - 1, -1, -1):  # newest first, as the lines searched
        newer.append((-number, *_shown_text(after[number][1], secrets)))
    older = 0  # context lines still to show before the last match shown
    last = 0  # the number of the last (oldest) line shown
    oldest_match = 0  # where the oldest match shown starts
    number = 0

    def each_line() -> Iterator[tuple[int, str]]:
        """`lines` a line at a time, but for lines none of which can match that come at a
        time when they need not be shown (as the context after a match): counted, and the
        oldest `context` of them kept as the context before the next match."""
        nonlocal number
        for item in lines:
            if not isinstance(item, UnmatchedLines):
                yield item
            elif older or result.shown >= limit:
                yield from item.lines()
            else:
                oldest = item.lines(oldest=context) if context else []
                number += item.count - len(oldest)
                yield from oldest
                result.lines, result.start = number, item.start

    try:
        for start, line in each_line():
            number += 1
            if result.shown >= limit and not older:
                result.stopped = "limit"
                break
            found, text, console = _shown_text(line, secrets)
            is_match = _within(deadline, pattern.search, text) is not None
            if is_match and result.shown >= limit:
                # An older match ends the context of the last one shown, unsearched: the
                # count of lines searched is of those whose every match is shown.
                result.stopped = "limit"
                break
            result.lines, result.start = number, start
            if is_match:
                first = newer[0][0] if newer else number
                if not groups or first > last + 1:
                    groups.append([])
                group = groups[-1]
                group += [_found_line(n, f, t, c, []) for n, f, t, c in newer]
                spans = _within(deadline, _spans, pattern, text)
                group.append(_found_line(number, found, text, console, spans))
                result.shown += 1
                oldest_match = start
                newer.clear()
                older, last = context, number
            elif older:
                groups[-1].append(_found_line(number, found, text, console, []))
                older, last = older - 1, number
            else:
                newer.append((number, found, text, console))
    except TimeoutError:  # the deadline, or one match that took up the time left
        result.stopped = "time"
    if result.stopped == "limit":
        # The lines before the oldest match shown were searched only as its context.
        result.resume = oldest_match
    elif result.stopped == "time" and result.lines:
        result.resume = result.start
    result.groups = [group[::-1] for group in reversed(groups)]
    return result


def _spans(pattern: regex.Pattern[str], text: str, *, timeout: float) -> list[tuple[int, int]]:
    return [found.span() for found in pattern.finditer(text, timeout=timeout)]


def _number_from(result: LogSearch, total: int) -> None:
    """Numbers the lines found from the first of `total` lines, the last searched from
    being line `total` (they were numbered from the end)."""
    for group in result.groups:
        for line in group:
            line.number = total - line.number + 1


def search_lines(
    lines: list[str],
    *,
    pattern: regex.Pattern[str],
    deadline: float,
    context: int = SEARCH_CONTEXT,
    limit: int = SEARCH_MAX_MATCHES,
    secrets: Iterable[str] = (),
) -> LogSearch:
    """The search of lines in hand (what a platform returned of a log), from the last: see
    _search_newest_first. Line numbers count from the first of `lines`."""
    newest_first = ((index, lines[index]) for index in range(len(lines) - 1, -1, -1))
    result = _search_newest_first(
        newest_first,
        pattern=pattern,
        deadline=deadline,
        context=context,
        limit=limit,
        secrets=secrets,
    )
    _number_from(result, len(lines))
    return result


@dataclass(frozen=True)
class UnmatchedLines:
    """Whole lines of a log, read in one block, none of which the search can match
    (_block_cannot_match): counted and passed over, not searched a line at a time. `data`:
    the file's bytes from `start`, the lines without the newline after the last."""

    start: int
    data: bytes

    @property
    def count(self) -> int:
        return self.data.count(b"\n") + 1

    def lines(self, oldest: int | None = None) -> list[tuple[int, str]]:
        """The lines, newest first, each with where it starts, as _lines_backwards reads them;
        only the `oldest` ones, if given."""
        pieces = self.data.split(b"\n") if oldest is None else self.data.split(b"\n", oldest)
        if oldest is not None and len(pieces) > oldest:
            pieces = pieces[:oldest]
        found, start = [], self.start
        for piece in pieces:
            found.append((start, log_text(piece[:SEARCH_LINE_BYTES])))
            start += len(piece) + 1
        return found[::-1]


def _lines_backwards(
    fd: int,
    size: int,
    *,
    deadline: float,
    cannot_match: Callable[[bytes], bool] | None = None,
) -> Iterator[tuple[int, str] | UnmatchedLines]:
    """The lines of the open file's first `size` bytes from its last to its first, each with
    where it starts, decoded leniently, read a block at a time from the end: a 1 GB log never
    sits in memory, nor does a line of any length (past SEARCH_LINE_BYTES, only its start is
    read, as the page shows a line's start). Raises TimeoutError at `deadline`, which a file
    without a newline would otherwise pass. The whole lines of a block that `cannot_match`
    says no line of can match come as one UnmatchedLines, not a line at a time."""
    position = size  # where the part not read yet ends
    # The end of the line that the block before (in the file) starts, as read so far; empty
    # once it is longer than SEARCH_LINE_BYTES (`long`), as its start is read then.
    carry, long = b"", False
    while position > 0:
        _remaining(deadline)
        read = min(BLOCK, position)
        position -= read
        block = os.pread(fd, read, position)
        first = block.find(b"\n")
        if first < 0:  # no line starts in this block: the carried one goes on
            carry, long = _carried(block + carry, long)
            continue
        last = block.rfind(b"\n")
        # Newest first: the tail with what was carried, then each whole line before it.
        start = position + last + 1
        if start < size:  # not the nothing after a log's last newline
            yield start, _line_text(fd, start, block[last + 1 :] + carry, long)
        if first < last:
            whole = block[first + 1 : last]
            if cannot_match is not None and cannot_match(whole):
                yield UnmatchedLines(start=position + first + 1, data=whole)
            else:
                for piece in reversed(whole.split(b"\n")):
                    start -= len(piece) + 1
                    yield start, _line_text(fd, start, piece, False)
        carry, long = _carried(block[:first], False)
    if size:
        yield 0, _line_text(fd, 0, carry, long)


def _block_cannot_match(
    data: bytes, *, pattern: regex.Pattern[str], secrets: list[str], deadline: float
) -> bool:
    """Whether no line in `data` (whole lines) can match a plain-text search (_literal): then
    the block is searched whole, once, not a line at a time (qa107: 3 MB/s, 15 MB of a 100 MB
    log in its 5 s). A line is searched as shown (_shown_text: without its stamp and the
    terminal's escape sequences, its secrets masked, the runner's own lines in the page's
    language), which for a block of UTF-8 printable text holding no secret is the line as
    written less its stamp: a part of the block, so text not found in the block is in none of
    its lines. Anything else (a control character, the runner's mark, a secret, bytes not
    UTF-8) is searched a line at a time, as ever: so a secret's value is never found (it is
    masked first) and the mask ****** is found where a secret was."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if not text.replace("\n", " ").isprintable() or any(s in text for s in secrets):
        return False
    return _within(deadline, pattern.search, text) is None


def _literal(pattern: regex.Pattern[str]) -> bool:
    """Whether `pattern` matches plain text only, within one line: escaped text (a search not
    of a regular expression, or one without special characters), without a newline. A
    regular expression can read past a line's ends (^, $, lookarounds), so is searched a line
    at a time."""
    text = regex.sub(r"\\(.)", r"\1", pattern.pattern, flags=regex.DOTALL)
    return "\n" not in text and regex.escape(text) == pattern.pattern


def _carried(data: bytes, long: bool) -> tuple[bytes, bool]:
    """What to keep of the end of a line read so far: nothing once it is too long to be read
    whole."""
    if long or len(data) > SEARCH_LINE_BYTES:
        return b"", True
    return data, False


def _line_text(fd: int, start: int, data: bytes, long: bool) -> str:
    """The line starting at `start`: `data`, the line read whole, or its start if `long`."""
    data = os.pread(fd, SEARCH_LINE_BYTES, start) if long else data[:SEARCH_LINE_BYTES]
    return log_text(data)


def _lines_forward(
    fd: int, start: int, end: int, *, count: int, deadline: float
) -> list[tuple[int, str]]:
    """The first `count` lines of the file from byte `start` (a line's start) to `end`, oldest
    first, each with where it starts, as _lines_backwards reads them (of a line over
    SEARCH_LINE_BYTES, its start)."""
    lines: list[tuple[int, str]] = []
    position = start
    while len(lines) < count and position < end:
        _remaining(deadline)
        head = os.pread(fd, min(SEARCH_LINE_BYTES, end - position), position)
        if not head:  # the file was cut meanwhile
            break
        newline = head.find(b"\n")
        text = head if newline < 0 else head[:newline]
        lines.append((position, log_text(text)))
        if newline >= 0:
            position += newline + 1
            continue
        position += len(head)  # a long line: on to its end
        while position < end:
            _remaining(deadline)
            block = os.pread(fd, min(BLOCK, end - position), position)
            if not block:
                break
            newline = block.find(b"\n")
            position += len(block) if newline < 0 else newline + 1
            if newline >= 0:
                break
    return lines


def _lines_before(fd: int, end: int, *, deadline: float) -> int | None:
    """How many lines of the file end before byte `end` (its newlines there), or None if
    counting them would pass `deadline`."""
    count, position = 0, 0
    while position < end:
        if time.monotonic() >= deadline:
            return None
        block = os.pread(fd, min(COUNT_BLOCK, end - position), position)
        if not block:  # the file was cut meanwhile
            return None
        count += block.count(b"\n")
        position += len(block)
    return count


def search_file(
    path: Path,
    *,
    pattern: regex.Pattern[str],
    deadline: float,
    context: int = SEARCH_CONTEXT,
    limit: int = SEARCH_MAX_MATCHES,
    secrets: Iterable[str] = (),
    count_seconds: float = SEARCH_COUNT_SECONDS,
    before: int | None = None,
) -> LogSearch:
    """The search of a local log, read backwards from its end (_lines_backwards): see
    _search_newest_first. Lines a job writes meanwhile, past its size when opened, are left
    for the next search. Line numbers count from the log's first line (see
    SEARCH_COUNT_SECONDS). With `before` (a byte offset, a line's start: the `resume` of the
    search before), the older matches: the search starts from the line that ends there;
    SearchCursorError if no line starts there. The `context` lines from `before` on (the
    newer page's first) are read too, to show as the context after a match just before it,
    as the whole log's search would show it: not searched again, nor marked, as they were
    that page's."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        if before is not None:
            raise SearchCursorError(before) from None
        return LogSearch()
    try:
        size = os.fstat(fd).st_size
        end = size if before is None else before
        if end > size or (0 < end < size and os.pread(fd, 1, end - 1) != b"\n"):
            raise SearchCursorError(before)
        try:
            after = _lines_forward(fd, end, size, count=context, deadline=deadline)
        except TimeoutError:
            after = []  # out of time already: the search says so
        values = _masked_values(secrets)
        result = _search_newest_first(
            _lines_backwards(
                fd,
                end,
                deadline=deadline,
                # Plain text is looked for in a block at once, a line at a time only where found.
                cannot_match=functools.partial(
                    _block_cannot_match, pattern=pattern, secrets=values, deadline=deadline
                )
                if _literal(pattern)
                else None,
            ),
            pattern=pattern,
            deadline=deadline,
            context=context,
            limit=limit,
            secrets=secrets,
            after=after,
        )
        if not result.lines:  # none of its bytes searched
            result.start = end
        result.size, result.end, result.searched = size, end, end - result.start
        before_start = 0
        if result.start:
            before_start = _lines_before(
                fd, result.start, deadline=time.monotonic() + count_seconds
            )
    finally:
        os.close(fd)
    if before_start is None:
        result.numbered = False
        before_start = 0
    _number_from(result, before_start + result.lines)
    return result


# -- reading a log on from where a reader stopped (the API's marker) ----------------------
# A script following a log polls for what was written since its last read. A time does not
# say where that was: a line's stamp is shown to the millisecond, and a job prints many lines
# in one (QA 57: 3,000 lines of a loop had 4 stamps), so the same time given again repeated
# lines and a later one lost them, and "the last maxLines since" lost every line past
# maxLines written between two polls. A marker says it exactly: the stamp of the last line
# given, in unix microseconds as the file keeps it, and how many lines, counted from the
# first with that stamp, were given ("1764855459627104.3"). Stamps only go forward in a log,
# also across a cut (jobs.shim.ReplicaLog), so a marker finds its place in the file as it is
# now, after any number of cuts; "0.0" is the log's start. A line the reader had not reached
# when a cut dropped it is gone (the cut's own line says how many bytes).
LOG_MARKER = re.compile(r"(\d{1,17})\.(\d{1,9})")
LOG_START = "0.0"
STAMP_BYTES = 28  # "2026-12-04T13:37:39.627104Z "
MAX_LOG_READ_BYTES = MAX_TAIL_BYTES


@dataclass(frozen=True)
class LogMarker:
    stamp: int  # unix microseconds (0: before every line)
    lines: int  # lines given counted from the first stamped `stamp` (or from the start)

    def __str__(self) -> str:
        return f"{self.stamp}.{self.lines}"

    @classmethod
    def parse(cls, text: str) -> LogMarker | None:
        found = LOG_MARKER.fullmatch(text)
        return cls(int(found[1]), int(found[2])) if found else None


def _stamp_micros(head: bytes) -> int | None:
    """The stamp of a line (its first STAMP_BYTES) in unix microseconds, or None."""
    try:
        moment = datetime.strptime(head[: STAMP_BYTES - 1].decode("ascii"), "%Y-%m-%dT%H:%M:%S.%fZ")
    except (UnicodeDecodeError, ValueError):
        return None
    whole = moment.replace(tzinfo=UTC)
    return (int(whole.timestamp()) * 1_000_000) + whole.microsecond


def _next_line_start(fd: int, offset: int, end: int) -> int:
    """Where the first line starting at or after `offset` starts (`end` when none does)."""
    if offset <= 0:
        return 0
    position = offset - 1
    while position < end:
        chunk = os.pread(fd, min(BLOCK, end - position), position)
        if not chunk:
            return end
        found = chunk.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(chunk)
    return end


def _first_stamped(fd: int, start: int, end: int) -> tuple[int | None, int]:
    """The stamp of the first stamped line starting at or after line start `start`, and
    where it starts (None and `end` when there is none)."""
    while start < end:
        stamp = _stamp_micros(os.pread(fd, STAMP_BYTES, start))
        if stamp is not None:
            return stamp, start
        start = _next_line_start(fd, start + 1, end)
    return None, end


def _first_at_or_after(fd: int, stamp: int, end: int) -> int:
    """Where the first line stamped `stamp` or later starts, by bisection (stamps only go
    forward): a 1 GB log costs a few dozen reads."""
    low, high = 0, end
    while low < high:
        middle = (low + high) // 2
        found, _at = _first_stamped(fd, _next_line_start(fd, middle, end), end)
        if found is None or found >= stamp:
            high = middle
        else:
            low = middle + 1
    return _first_stamped(fd, _next_line_start(fd, low, end), end)[1]


def _marker_lines(fd: int, start: int, end: int, count: int) -> list[tuple[int, bytes]]:
    """Up to `count` whole lines from line start `start`, each with where it starts (at
    most MAX_LOG_READ_BYTES: fewer lines when they are long)."""
    found: list[tuple[int, bytes]] = []
    position = start
    while len(found) < count and position < end:
        data = os.pread(fd, min(BLOCK * 4, end - position), position)
        pieces = data.split(b"\n")[:-1]  # the last is an unfinished line, or ""
        if not pieces:
            break  # a line longer than a block: the shim writes none
        for piece in pieces:
            if len(found) == count:
                break
            found.append((position, piece))
            position += len(piece) + 1
        if position - start >= MAX_LOG_READ_BYTES:
            break
    return found


def _whole_end(fd: int) -> int:
    """Where the log's last whole line ends: a line being written is not read yet."""
    end = os.fstat(fd).st_size
    position = end
    while position > 0:
        size = min(BLOCK, position)
        chunk = os.pread(fd, size, position - size)
        found = chunk.rfind(b"\n")
        if found >= 0:
            return position - size + found + 1
        position -= size
    return 0


def _line_start_before(fd: int, position: int) -> int:
    """Where the line ending just before line start `position` starts."""
    cursor = position - 1  # that line's newline
    while cursor > 0:
        size = min(BLOCK, cursor)
        found = os.pread(fd, size, cursor - size).rfind(b"\n")
        if found >= 0:
            return cursor - size + found + 1
        cursor -= size
    return 0


def _marker_at(fd: int, end: int, last_stamp: int | None) -> LogMarker:
    """The marker of line start `end`: the stamp of the last stamped line before it and how
    many lines from the first line with that stamp come before it."""
    if last_stamp is None:
        # The lines just given had no stamp: the one before them has.
        position = end
        while position > 0 and last_stamp is None:
            position = _line_start_before(fd, position)
            last_stamp = _stamp_micros(os.pread(fd, STAMP_BYTES, position))
    first = _first_at_or_after(fd, last_stamp, end) if last_stamp else 0
    lines = 0
    while first < end:
        chunk = os.pread(fd, min(BLOCK * 4, end - first), first)
        lines += chunk.count(b"\n")
        first += len(chunk)
    return LogMarker(last_stamp or 0, lines)


def log_read(
    path: Path, *, count: int, marker: LogMarker | None = None, since: datetime | None = None
) -> tuple[list[str], LogMarker]:
    """Lines of a replica's log and the marker of where they end (the next read's): with
    `marker`, the first `count` lines after it; else the last `count` lines, of those
    written at or after `since` when it is given. Whole lines only: a line still being
    written comes with the next read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return [], marker or LogMarker(0, 0)
    try:
        end = _whole_end(fd)
        if marker is not None:
            start = _first_at_or_after(fd, marker.stamp, end) if marker.stamp else 0
            skipped = _marker_lines(fd, start, end, marker.lines)
            for at, line in skipped:
                stamp = _stamp_micros(line[:STAMP_BYTES])
                if stamp is not None and stamp != marker.stamp:
                    start = at  # a later line: those at the marker's stamp were cut away
                    break
            else:
                start = skipped[-1][0] + len(skipped[-1][1]) + 1 if skipped else start
            read = _marker_lines(fd, start, end, count)
        else:
            first = 0
            if since is not None:
                micros = int(since.timestamp()) * 1_000_000 + since.microsecond
                first = _first_at_or_after(fd, micros, end)
            read = _lines_backward(fd, first, end, count)
        if read:
            after = read[-1][0] + len(read[-1][1]) + 1
            stamps = [s for _, line in read if (s := _stamp_micros(line[:STAMP_BYTES]))]
            following = _marker_at(fd, after, stamps[-1] if stamps else None)
        else:
            following = marker or _marker_at(fd, end, None)
    finally:
        os.close(fd)
    return [log_text(line) for _, line in read], following


def _lines_backward(fd: int, first: int, end: int, count: int) -> list[tuple[int, bytes]]:
    """The last `count` whole lines between line starts `first` and `end` (at most
    MAX_LOG_READ_BYTES of them), each with where it starts."""
    position = end
    chunks: list[bytes] = []
    newlines = 0
    while position > first and newlines <= count and end - position < MAX_LOG_READ_BYTES:
        size = min(BLOCK, position - first)
        position -= size
        chunks.append(os.pread(fd, size, position))
        newlines += chunks[-1].count(b"\n")
    pieces = b"".join(reversed(chunks)).split(b"\n")[:-1]
    starts = []
    at = position
    for piece in pieces:
        starts.append((at, piece))
        at += len(piece) + 1
    if position > first and starts:
        starts.pop(0)  # it starts before what was read
    return starts[-count:] if count else []
