"""Network of local jobs (jobs.network, jobs/netns_holder.py): how long a job's namespace
holder takes to be ready, without and with outbound network (slirp4netns), and one TCP
download from a server on this machine's own address, from the host's network and from an
isolated-outbound namespace (README "The network")."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

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


def host_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            with contextlib.suppress(OSError):
                request = struct.pack("256s", name.encode()[:15])
                address = socket.inet_ntoa(fcntl.ioctl(sock, 0x8915, request)[20:24])
                if not address.startswith("127."):
                    return address
    return None


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


def serve(server: socket.socket) -> None:
    chunk = b"x" * (1 << 20)
    while True:
        conn, _ = server.accept()
        with conn:
            for _ in range(SIZE // len(chunk)):
                conn.sendall(chunk)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        for outbound in (False, True):
            if outbound and not os.access(SLIRP, os.X_OK):
                print("slirp4netns is not installed: isolated-outbound not measured")
                break
            times = []
            for n in range(10):
                holder, seconds = start_holder(base / f"h{n}", outbound)
                times.append(seconds * 1000)
                end_holder(holder, base / f"h{n}")
            name = "isolated-outbound" if outbound else "isolated"
            print(f"holder ready ({name}, 10 starts): median {statistics.median(times):.0f} ms")
        address = host_address()
        if address is None or not os.access(SLIRP, os.X_OK):
            raise SystemExit(0)
        server = socket.create_server((address, 0))
        threading.Thread(target=serve, args=(server,), daemon=True).start()
        port = server.getsockname()[1]
        on_host = statistics.median(download_mb_s(address, port, None) for _ in range(3))
        holder, _ = start_holder(base / "download", True)
        try:
            outbound = statistics.median(download_mb_s(address, port, holder.pid) for _ in range(3))
        finally:
            end_holder(holder, base / "download")
        print(
            f"one TCP download of {SIZE >> 20} MB from {address} (median of 3): host network "
            f"{on_host:.0f} MB/s, isolated-outbound {outbound:.0f} MB/s "
            f"(ratio {outbound / on_host:.2f})"
        )
