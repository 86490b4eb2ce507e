"""How long Hang analysis's reads pause the process they read: a native read (py-spy
--native, run in the process's namespaces through jobs/native_reader.py) against a
Python-only one, each through the worker's own chain (jobs.stacks._dump), of a process as a
job run as a user of its own is (another uid, a user and a pid namespace of its own).

The process reads the clock in a loop and reports the longest gap between two reads: py-spy
stops every thread of it while it reads. Its threads sleep in a recursion of the given depth.
Run as root: `.venv/bin/python bench/stacks_pause.py` (the README's figures)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django  # noqa: E402

django.setup()

from jobs.runner import process_start  # noqa: E402
from jobs.stacks import Listed, _dump, py_spy  # noqa: E402

AS_A_JOB = [
    "setpriv", "--reuid=200099", "--regid=200099", "--clear-groups", "--inh-caps=-all",
    "--bounding-set=-all", "unshare", "--user", "--map-current-user", "--pid", "--fork",
    "--mount-proc", "--kill-child", "/usr/bin/python3", "-c",
]  # fmt: skip
SPINNER = textwrap.dedent(
    """
    import select, sys, threading, time
    threads, depth = int(sys.argv[1]), int(sys.argv[2])
    def deep(n):
        return time.sleep(600) if n == 0 else deep(n - 1)
    for _ in range(threads):
        threading.Thread(target=deep, args=(depth,), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.readline()
    # Until told to stop (after the read, however long it took), a line on its input.
    gap, previous = 0.0, time.monotonic()
    while not select.select([sys.stdin], [], [], 0)[0]:
        now = time.monotonic()
        gap, previous = max(gap, now - previous), now
    print(f"{gap * 1000:.0f}", flush=True)
    """
)
RUNS = 5


def one(threads: int, depth: int, native: bool) -> tuple[float, float]:
    """(ms the read took, longest ms the process went without reading its clock)."""
    leader = subprocess.Popen(
        [*AS_A_JOB, SPINNER, str(threads), str(depth)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert leader.stdout.readline() == "ready\n"
        [child] = Path(f"/proc/{leader.pid}/task/{leader.pid}/children").read_text().split()
        pid = int(child)
        [inside] = [
            line.split()[-1]
            for line in Path(f"/proc/{pid}/status").read_text().splitlines()
            if line.startswith("NSpid:")
        ]
        listed = Listed(pid, process_start(pid), int(inside), "")
        leader.stdin.write("go\n")
        leader.stdin.flush()
        time.sleep(0.5)  # the loop running
        began = time.monotonic()
        read = _dump(py_spy(), listed, 10, [], native=native)
        took = (time.monotonic() - began) * 1000
        time.sleep(0.5)  # the loop running again
        leader.stdin.write("stop\n")
        leader.stdin.flush()
        gap = float(leader.stdout.readline())
        assert "threads" in read, read
        assert native == any(f.get("native") for t in read["threads"] for f in t["frames"])
    finally:
        os.killpg(leader.pid, 9)
        leader.wait()
    return took, gap


def main() -> None:
    if os.geteuid() != 0:
        sys.exit("run as root: native reads are a root worker's")
    print("threads x depth   read            took (median ms)   pause (median ms)")
    for threads, depth in ((1, 0), (50, 50), (200, 100)):
        for native in (False, True):
            runs = [one(threads, depth, native) for _ in range(RUNS)]
            took = statistics.median(t for t, _ in runs)
            gap = statistics.median(g for _, g in runs)
            kind = "native" if native else "Python only"
            print(f"{threads:>4} x {depth:<4}       {kind:<15} {took:>8.0f}           {gap:>8.0f}")


if __name__ == "__main__":
    main()
