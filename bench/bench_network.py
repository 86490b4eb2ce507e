"""Network of local jobs (jobs.network, jobs/netns_holder.py): how long a job's namespace
holder takes to be ready, without and with outbound network (slirp4netns), and one TCP
download from a server outside this machine's loopback, from the host's network and from an
isolated-outbound namespace (README "The network"). The server binds nothing of this
machine's: it runs in a network namespace of its own, reached through a veth pair
(tests/outside_network.py, as the tests' is; needs root and iproute2)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.outside_network import outside_server, unavailable  # noqa: E402

HOLDER = Path(__file__).resolve().parent.parent / "jobs" / "netns_holder.py"
SLIRP = "/usr/bin/slirp4netns"
SIZE = 512 * 1024 * 1024
DOWNLOAD = """
import socket, sys, time
t = time.monotonic()
with socket.create_connection((sys.argv[1], int(sys.argv[2]))) as s:
    n = 0
    while chunk := s.recv(1 << 20):
        n += len(chunk)
print(n / (time.monotonic() - t) / 1e6)
"""


def start_holder(state: Path, outbound: bool) -> tuple[subprocess.Popen, float]:
    """A holder as the worker starts one, and the seconds until it said it is ready."""
    state.mkdir(parents=True, exist_ok=True)
    lock = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    started = time.monotonic()
    holder = subprocess.Popen(
        [sys.executable, str(HOLDER), "--state", str(state), "--lock-fd", str(lock)]
        + (["--outbound", SLIRP] if outbound else []),
        pass_fds=(lock,),
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
    )
    os.close(lock)
    while not (state / "pid").exists():
        if holder.poll() is not None:
            raise SystemExit(f"the holder failed: {(state / 'err').read_text()}")
        time.sleep(0.001)
    return holder, time.monotonic() - started


def end_holder(holder: subprocess.Popen, state: Path) -> None:
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait()
    shutil.rmtree(state)


def joining(pid: int):
    def join() -> None:
        user = f"/proc/{pid}/ns/user"
        if os.readlink(user) != os.readlink("/proc/self/ns/user"):
            os.setns(os.open(user, os.O_RDONLY), 0)
        os.setns(os.open(f"/proc/{pid}/ns/net", os.O_RDONLY), 0)

    return join


def download_mb_s(address: str, port: int, holder: int | None) -> float:
    out = subprocess.run(
        [sys.executable, "-c", DOWNLOAD, address, str(port)],
        preexec_fn=joining(holder) if holder else None,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        for outbound in (False, True):
            if outbound and not os.access(SLIRP, os.X_OK):
                print("slirp4netns is not installed: isolated-outbound not measured")
                return
            times = []
            for n in range(10):
                holder, seconds = start_holder(base / f"h{n}", outbound)
                times.append(seconds * 1000)
                end_holder(holder, base / f"h{n}")
            name = "isolated-outbound" if outbound else "isolated"
            print(f"holder ready ({name}, 10 starts): median {statistics.median(times):.0f} ms")
        if unavailable():  # not SystemExit: bench/run.py runs the next benchmarks after it
            print(f"download not measured: {unavailable()}")
            return
        with outside_server(str(SIZE)) as outside:
            address, port = outside.address, outside.port
            on_host = statistics.median(download_mb_s(address, port, None) for _ in range(3))
            holder, _ = start_holder(base / "download", True)
            try:
                outbound = statistics.median(
                    download_mb_s(address, port, holder.pid) for _ in range(3)
                )
            finally:
                end_holder(holder, base / "download")
        print(
            f"one TCP download of {SIZE >> 20} MB from {address}, in a namespace of its own "
            f"through a veth pair (median of 3): host network "
            f"{on_host:.0f} MB/s, isolated-outbound {outbound:.0f} MB/s "
            f"(ratio {outbound / on_host:.2f})"
        )


if __name__ == "__main__":
    main()
