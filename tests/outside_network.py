"""A server "outside" this machine, for tests and benchmarks of outbound network, that binds
nothing on any of the machine's own interfaces.

The rule here: servers that tests and benchmarks start bind to 127.0.0.1 only. A job with
outbound network must yet be shown reaching a server that is not on the host's loopback
(which slirp4netns refuses it), as it would reach another machine. So the server runs in a
network namespace of its own (`unshare --net`), joined to this machine's network by a veth
pair with a random /30 of the benchmarking range 198.18.0.0/15 (RFC 2544): `ajc-<random>`
on the host's side with the first address, `outside` in the namespace with the second,
which the server binds. That address exists only inside that namespace and is reached only
from this machine, through the veth; nothing listens on the machine's real interfaces.

Needs root and iproute2 (`ip`); `unavailable()` says why not. Nothing is left behind: the
server ends when its owner closes its stdin or dies (end of file), the namespace and the
veth pair with it; `outside_server` also removes, first, what a killed run left (by the
`ajc-` prefix and an owner that is no longer alive). No Django here: bench/ imports it too.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import random
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PREFIX = "ajc-"  # the host side's veth; the owner is in its alias
MARKER = "ajc-outside-server"  # in the server's command line
RANGE = ipaddress.ip_network("198.18.0.0/15")
HELLO = "hello from outside"

SERVER = """
import http.server, os, socket, sys, threading
print("ready", flush=True)  # in its own network namespace: unshare has run
address = sys.stdin.readline().strip()
mode = sys.argv[3]
if mode == "hello":
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(HELLO.encode())
        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer((address, 0), Hello)
    port, serve = server.server_address[1], server.serve_forever
else:  # bulk: that many bytes to each connection
    listener = socket.create_server((address, 0))
    def serve():
        chunk = b"x" * (1 << 20)
        while True:
            conn, _ = listener.accept()
            with conn:
                try:
                    for _ in range(int(mode) // len(chunk)):
                        conn.sendall(chunk)
                except OSError:
                    pass
    port = listener.getsockname()[1]
threading.Thread(target=serve, daemon=True).start()
print(port, flush=True)
sys.stdin.read()  # until the owner closes it, or dies
os._exit(0)
""".replace("HELLO", repr(HELLO))


@dataclass(frozen=True)
class Outside:
    address: str  # the server's, inside its namespace
    port: int
    host_side: str  # this machine's address on the veth (no server binds it)
    link: str
    pid: int

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}/"


def ip_command() -> str | None:
    return shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin")


def unavailable() -> str:
    """Why no outside server can be set up here ("" if it can)."""
    if os.geteuid() != 0:
        return "a server in a network namespace of its own needs root (veth pair, unshare)"
    if ip_command() is None:
        return "iproute2 is not installed (apt-get install iproute2): no veth pair to set up"
    return ""


def _start(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _owner_alive(owner: str) -> bool:
    pid, _, start = owner.partition(":")
    return pid.isdigit() and _start(int(pid)) == start


def _ip(*args: str, netns_of: int | None = None) -> str:
    command = [ip_command() or "ip", *args]
    if netns_of is not None:
        command = ["nsenter", f"--net=/proc/{netns_of}/ns/net", *command]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()}")
    return done.stdout


def remove_leftovers() -> None:
    """What a killed run left: servers and `ajc-` links whose owner is no longer alive."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if len(argv) > 4 and argv[3] == MARKER.encode() and not _owner_alive(argv[4].decode()):
                os.kill(int(entry.name), signal.SIGKILL)
    for link in json.loads(_ip("-j", "link", "show") or "[]"):
        name, alias = link.get("ifname", ""), link.get("ifalias", "")
        # A link without its alias yet is being set up by a test running meanwhile (the other
        # test process): `ip link add` cannot name the owner, `ip link set alias` does next.
        # One whose run was killed in between goes with its server's namespace (ended above).
        if name.startswith(PREFIX) and alias and not _owner_alive(alias.rpartition(" ")[2]):
            with contextlib.suppress(RuntimeError):
                _ip("link", "del", name)


def _free_block() -> ipaddress.IPv4Network:
    """A random /30 of 198.18.0.0/15 no address or route of this machine overlaps."""
    used = []
    for line in (_ip("-4", "-o", "addr", "show") + _ip("-4", "route", "show")).splitlines():
        for word in line.split():
            with contextlib.suppress(ValueError):
                used.append(ipaddress.ip_network(word, strict=False))
    for _ in range(100):
        block = ipaddress.ip_network(
            (int(RANGE.network_address) + 4 * random.randrange(1, RANGE.num_addresses // 4), 30)
        )
        if not any(block.overlaps(other) for other in used):
            return block
    raise RuntimeError("no free /30 in 198.18.0.0/15")


def _line(process: subprocess.Popen, timeout: float = 10) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise RuntimeError("the outside server did not answer in time")
    line = process.stdout.readline().strip()
    if not line:
        raise RuntimeError(f"the outside server ended: {process.stderr.read().strip()}")
    return line


@contextlib.contextmanager
def outside_server(mode: str = "hello") -> Iterator[Outside]:
    """A server in a network namespace of its own, reached from this machine through a veth
    pair. mode "hello": HTTP, every GET answered with HELLO; a number: that many bytes to
    each TCP connection."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    remove_leftovers()
    owner = f"{os.getpid()}:{_start(os.getpid())}"
    link = PREFIX + secrets.token_hex(4)
    block = _free_block()
    host_side, address = (str(a) for a in block.hosts())
    server = subprocess.Popen(
        ["unshare", "--net", "--", sys.executable, "-c", SERVER, MARKER, owner, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert _line(server) == "ready"
        # The peer is made in the server's namespace: it never appears on the host's side.
        _ip(
            "link", "add", link, "type", "veth", "peer", "name", "outside", "netns", str(server.pid)
        )
        _ip("link", "set", link, "alias", f"{MARKER} {owner}")
        _ip("addr", "add", f"{host_side}/30", "dev", link)
        _ip("link", "set", link, "up")
        _ip("addr", "add", f"{address}/30", "dev", "outside", netns_of=server.pid)
        _ip("link", "set", "outside", "up", netns_of=server.pid)
        server.stdin.write(address + "\n")
        server.stdin.flush()
        port = int(_line(server))
        yield Outside(address, port, host_side, link, server.pid)
    finally:
        with contextlib.suppress(RuntimeError):
            _ip("link", "del", link)  # and its peer
        with contextlib.suppress(OSError):
            server.stdin.close()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()
        server.stderr.close()
