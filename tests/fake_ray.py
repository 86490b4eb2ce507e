#!/usr/bin/python3
"""A stand-in for Ray's `ray` command (Ray is not installed here), for the custom framework's
Ray example (tests/test_custom_roles.py). It does what the example relies on, over TCP, as
`ray` 2.x does, and refuses anything else (exit 2), so a changed example fails the test rather
than passing on a flag this fake ignores:

- `ray start --head --port=P`: a head listening on P (all addresses, as Ray's GCS does), in a
  process left running in the background; exits 0 once it listens (after
  FAKE_RAY_HEAD_START_SECONDS, as Ray's head takes a while), 1 if the port is taken.
- `ray health-check --address=H:P`: 0 if a head answers there, else 1.
- `ray start --address=H:P`: joins that head from a background process that stays joined while
  the head lives (Ray's raylet); 1 if no head answers.
- `ray stop`: ends this instance's background processes (named in its own /tmp, as Ray keeps
  its session there).
A driver asks the head `NODES` for the number of nodes joined, the head included."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

PIDS = Path("/tmp/fake-ray/pids")


def address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host, int(port)


def ask(addr: tuple[str, int], line: str) -> socket.socket:
    conn = socket.create_connection(addr, timeout=2)
    conn.sendall(line.encode() + b"\n")
    if conn.makefile().readline().strip() != "OK":
        raise OSError("not a head")
    return conn


def in_background(work) -> None:
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        PIDS.parent.mkdir(parents=True, exist_ok=True)
        with PIDS.open("a") as f:
            f.write(f"{os.getpid()}\n")
        work(lambda: os.write(write, b"1"))
        os._exit(0)
    os.close(write)
    sys.exit(0 if os.read(read, 1) == b"1" else 1)


def head(port: int) -> None:
    # Ray's head takes seconds to come up (20 s and more on a busy machine): workers started
    # beside it must wait for it, which a fake that listened at once would never show.
    time.sleep(float(os.environ.get("FAKE_RAY_HEAD_START_SECONDS", "0")))
    try:
        server = socket.create_server(("0.0.0.0", port))
    except OSError as exc:
        print(f"ray: port {port} is taken: {exc}", file=sys.stderr)
        sys.exit(1)
    joined: list[socket.socket] = []

    def serve(ready) -> None:
        ready()
        while True:
            conn, _ = server.accept()
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    def one(conn: socket.socket) -> None:
        words = conn.makefile().readline().split()
        if words == ["PING"]:
            conn.sendall(b"OK\n")
        elif words == ["JOIN"]:
            joined.append(conn)
            conn.sendall(b"OK\n")
        elif words == ["NODES"]:
            conn.sendall(f"OK\n{len(joined) + 1}\n".encode())
        if words != ["JOIN"]:  # a joined node's connection stays open while it lives
            conn.close()

    in_background(serve)


def join(addr: tuple[str, int]) -> None:
    try:
        conn = ask(addr, "JOIN")
    except OSError as exc:
        print(f"ray: no head at {addr[0]}:{addr[1]}: {exc}", file=sys.stderr)
        sys.exit(1)

    def stay(ready) -> None:
        ready()
        conn.settimeout(None)
        conn.recv(1)  # returns once the head is gone

    in_background(stay)


def main(args: list[str]) -> None:
    if args[:2] == ["start", "--head"] and len(args) == 3 and args[2].startswith("--port="):
        head(int(args[2].removeprefix("--port=")))
    elif args[:1] == ["start"] and len(args) == 2 and args[1].startswith("--address="):
        join(address(args[1].removeprefix("--address=")))
    elif args[:1] == ["health-check"] and len(args) == 2 and args[1].startswith("--address="):
        try:
            ask(address(args[1].removeprefix("--address=")), "PING").close()
        except OSError:
            sys.exit(1)
    elif args == ["stop"]:
        for pid in PIDS.read_text().split() if PIDS.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)
        PIDS.unlink(missing_ok=True)
    else:
        print(f"fake ray: not what the example runs: {args}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
