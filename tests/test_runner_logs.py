from __future__ import annotations

import os
from datetime import UTC, datetime

from jobs.logs import BLOCK, MAX_TAIL_BYTES, lines_since, shown_lines, tail_lines


def test_the_tail_of_a_large_log_is_its_last_lines(tmp_path):
    path = tmp_path / "big.log"
    with open(path, "wb") as f:
        f.write(b"first line\n")
        f.truncate(300 * 1024 * 1024)  # a sparse 300 MB hole
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + b"".join(f"line {i}\n".encode() for i in range(1000)))

    assert tail_lines(path, 3) == ["line 997", "line 998", "line 999"]
    assert tail_lines(path, 1000)[0] == "line 0"


def test_the_tail_reads_a_bounded_amount_from_the_end_only(tmp_path):
    path = tmp_path / "no-newlines.log"
    with open(path, "wb") as f:
        f.write(b"early 1\nearly 2\n")
        f.write(b"x" * (MAX_TAIL_BYTES + 1024 * 1024))
        f.write(b"\nlast\n")

    # Reading the whole file would also find the early lines.
    assert tail_lines(path, 10) == ["last"]


def test_a_missing_log_has_no_lines_and_a_partial_last_line_is_kept(tmp_path):
    assert tail_lines(tmp_path / "none.log", 5) == []
    path = tmp_path / "partial.log"
    path.write_bytes(b"a\nb\nhalf")
    assert tail_lines(path, 2) == ["b", "half"]


def test_each_tail_line_says_where_it_starts_in_the_file_and_a_shown_line_keeps_it(tmp_path):
    # The job page tells new lines from shown ones by it, a repeated line's text being no guide.
    path = tmp_path / "repeats.log"
    path.write_bytes(b"same\n" * 3 + "één\n".encode() + b"half")
    with open(path, "ab") as f:
        f.write(b"x" * (4 * BLOCK))  # far from the start: the tail begins mid-file
        f.write(b"\nsame\nsame\n")
    size = path.stat().st_size

    assert [line.at for line in tail_lines(path, 2)] == [size - 10, size - 5]
    path.write_bytes(b"same\n" * 3 + "één\n".encode() + b"half")
    tail = tail_lines(path, 5)
    assert [(line, line.at) for line in tail] == [
        ("same", 0),
        ("same", 5),
        ("same", 10),
        ("één", 15),
        ("half", 21),
    ]
    assert [line.at for line in shown_lines(tail)] == [0, 5, 10, 15, 21]
    assert [line.at for line in shown_lines(["a platform's line"])] == [None]


def test_lines_since_a_time_are_selected_by_their_timestamps(tmp_path):
    path = tmp_path / "stamped.log"
    path.write_text(
        "2026-01-01T10:00:00.000000Z old\n"
        "2026-01-01T10:05:00.000000Z new\n"
        "2026-01-01T10:06:00.000000Z newer\n"
    )

    since = datetime(2026, 1, 1, 10, 1, tzinfo=UTC)

    assert [line.split(" ", 1)[1] for line in lines_since(path, since)] == ["new", "newer"]


def test_platform_log_lines_show_what_a_terminal_would_draw():
    lines = [
        # a tqdm bar from a platform's log (its redraws in one line), cursor hidden meanwhile
        "\x1b[?25l 10%|#         |\r 50%|#####     |\r100%|##########|\r\n",
        "\x1b(Bplain\x1b=\tend\x1b",  # a charset switch, keypad mode, a tab, a lone ESC
        "\x1b]0;window title",  # an OSC cut off by the line's end
        "loss \x1b[1;31m2.5\x1b[",  # a CSI cut off by the line's end
    ]

    assert shown_lines(lines) == ["100%|##########|", "plain\tend", "", "loss 2.5"]
