"""Replica logs of the local runner: one timestamped file per replica, read from the end.

Every line is "<UTC time, RFC 3339 with microseconds>Z <output>". Reading the last N lines
seeks from the end of the file and reads backwards in blocks, and never more than
`max_bytes`, so a 1 GB log costs what a 1 MB log costs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.utils import timezone

BLOCK = 64 * 1024
DEFAULT_TAIL = 200
# Reading stops after this much even if fewer lines were found (a file of huge lines
# or of zeros must not make a tail read the whole file).
MAX_TAIL_BYTES = 8 * 1024 * 1024


STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})\d{3}Z ")


def in_local_time(lines: Iterable[str]) -> list[str]:
    """Lines as the pages show them: each line's UTC stamp in the console's time zone, as
    every other time on the page is, to the millisecond. A download keeps the file as is."""
    zone = timezone.get_current_timezone()
    shown = []
    for line in lines:
        found = STAMP.match(line)
        if found:
            when = datetime.fromisoformat(found.group(1)).replace(tzinfo=UTC).astimezone(zone)
            line = f"{when:%Y-%m-%d %H:%M:%S}.{found.group(2)} {line[found.end() :]}"
        shown.append(line)
    return shown


def job_dir(public_id: str) -> Path:
    return Path(settings.LOCAL_RUN_DIR) / public_id


def replica_log_path(public_id: str, label: str) -> Path:
    return job_dir(public_id) / "logs" / f"{label}.log"


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
