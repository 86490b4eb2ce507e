"""Replica logs of the local runner: one timestamped file per replica, read from the end.

Every line is "<UTC time, RFC 3339 with microseconds>Z <output>". Reading the last N lines
seeks from the end of the file and reads backwards in blocks, and never more than
`max_bytes`, so a 1 GB log costs what a 1 MB log costs.

A log is kept under LOCAL_LOG_MAX_MB by the shim that writes it: past that, its middle is
dropped, leaving its beginning, a CONSOLE_LOG_CUT line, and its latest part (jobs/shim.py,
ReplicaLog). The file stays a log like any other for the page and the download; how much
was dropped is also kept next to it (log_cut_path), for the page to say so.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext, gettext_noop

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
# Other control characters (a lone ESC, BEL, backspace), but not the tab.
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
MASK = "******"

# The runner's own lines in a replica's log, written in the console's language (the shim
# fills in {code} and {error}); a page in another language says them again in its own.
CONSOLE_BANNER = gettext_noop("[console] %(replica)s attempt %(attempt)d starting")
CONSOLE_EXIT = gettext_noop("[console] exited with code {code}")
CONSOLE_START_FAILED = gettext_noop("[console] could not start: {error}")
CONSOLE_LOG_CUT = gettext_noop("[console] log over {limit} MB: {dropped} bytes dropped here")
CONSOLE_LINES = (CONSOLE_BANNER, CONSOLE_EXIT, CONSOLE_START_FAILED, CONSOLE_LOG_CUT)
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
            if msgid == CONSOLE_BANNER:
                return wording % {**values, "attempt": int(values["attempt"])}
            return wording.format(**values)
    return text


def plain_text(text: str) -> str:
    """The text as a terminal shows it, without its escape sequences; of a line a progress
    bar redrew after `\\r`, the last drawing."""
    text = SEQUENCES.sub("", text)
    if "\r" in text:
        drawn = [part for part in text.split("\r") if part.strip()]
        text = drawn[-1] if drawn else ""
    return CONTROLS.sub("", text)


def masked(text: str, secrets: Iterable[str]) -> str:
    """The text with every secret value replaced by ******; each line of a multi-line one
    too, as an error may quote it in part. (Values under 4 characters are left, as the
    runner leaves them: masking every "1" would wreck the text.)"""
    parts = {part for s in secrets if s for part in [s, *s.splitlines()] if len(part) >= 4}
    for secret in sorted(parts, key=len, reverse=True):
        if secret in text:  # untouched, a recorded text keeps its source (its other languages)
            text = text.replace(secret, MASK)
    return text


def job_secrets(job: Any) -> list[str]:
    """The job's secret values, or none if its spec cannot be read any more."""
    from .spec import SpecError

    try:
        return job.job_spec().secret_values()
    except SpecError:
        return []


def cut_for_page(text: str) -> str:
    """A line longer than SHOWN_LINE_CHARS, cut there, saying how much more the download has."""
    if len(text) <= SHOWN_LINE_CHARS:
        return text
    more = len(text) - SHOWN_LINE_CHARS
    return f"{text[:SHOWN_LINE_CHARS]} " + gettext(
        "[… %(count)d more characters in this line: download the log for all of it]"
    ) % {"count": more}


def shown_lines(lines: Iterable[str], *, secrets: Iterable[str] = ()) -> list[str]:
    """Lines as the pages show them: without terminal escape sequences, with the job's
    secrets masked (again: a colour code inside a value hid it from the mask applied when
    the line was written), cut at SHOWN_LINE_CHARS, and each line's UTC stamp in the
    console's time zone, as every other time on the page is, to the millisecond. A download
    keeps the file as is."""
    zone = timezone.get_current_timezone()
    secrets = list(secrets)
    shown = []
    for line in lines:
        found = STAMP.match(line)
        text = masked(plain_text(line[found.end() :] if found else line), secrets)
        text = cut_for_page(console_line_shown(text))
        if found:
            when = datetime.fromisoformat(found.group(1)).replace(tzinfo=UTC).astimezone(zone)
            text = f"{when:%Y-%m-%d %H:%M:%S}.{found.group(2)} {text}"
        shown.append(text)
    return shown


def job_dir(public_id: str) -> Path:
    return Path(settings.LOCAL_RUN_DIR) / public_id


def replica_log_path(public_id: str, label: str) -> Path:
    return job_dir(public_id) / "logs" / f"{label}.log"


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
    """The last `n` lines of `path` (decoded leniently), reading backwards from the end."""
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
    if position > 0 and lines:
        lines.pop(0)  # the first one is probably cut
    return [line.decode("utf-8", errors="replace") for line in lines[-n:]]


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
