from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serves the console (gunicorn) and runs the background worker, until Ctrl-C."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.getenv("HOST", "127.0.0.1"))
        parser.add_argument("--port", default=os.getenv("PORT", "8000"))

    def handle(self, *args: Any, host: str, port: str, **options: Any) -> None:
        python = sys.executable
        commands = [
            gunicorn_command(python=python, host=host, port=port),
            [python, "manage.py", "worker"],
        ]
        # Each child gets its own process group: Ctrl-C reaches only this command, which then
        # stops every group in order, and a gunicorn worker caught mid-boot cannot outlive
        # its master and keep the port bound. If this command itself is killed (SIGKILL,
        # nothing to clean up with), the kernel sends each child SIGTERM.
        parent = os.getpid()
        children = [
            subprocess.Popen(cmd, start_new_session=True, preexec_fn=lambda: die_with(parent))
            for cmd in commands
        ]
        self.stdout.write(f"Console on http://{host}:{port}/ (Ctrl-C stops it)")

        def stop(*_: Any) -> None:
            for child in children:
                signal_group(child, signal.SIGTERM)
            deadline = time.monotonic() + 15
            for child in children:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=max(deadline - time.monotonic(), 0.1))
                # Whatever is left in the group (jobs run in sessions of their own).
                signal_group(child, signal.SIGKILL)
                child.wait()
            sys.exit(0)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        stop()


PR_SET_PDEATHSIG = 1


def die_with(parent: int) -> None:
    """In a child, before exec: SIGTERM when the parent dies (Linux's PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def gunicorn_command(*, python: str, host: str, port: str) -> list[str]:
    return [
        python,
        "-m",
        "gunicorn",
        "console.wsgi:application",
        "--bind",
        f"{host}:{port}",
        "--workers",
        os.getenv("WEB_WORKERS", "2"),
        "--threads",
        os.getenv("WEB_THREADS", "4"),
        "--access-logfile",
        "-",
        # gunicorn 27 opens a control socket (~/.gunicorn/gunicorn.ctl) that takes shutdown
        # and reload commands from anyone who can reach the file; the console never uses it.
        "--no-control-socket",
    ]


def signal_group(child: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signum)
