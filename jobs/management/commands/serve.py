from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.core.management import get_commands
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serves the console (gunicorn) and runs the background worker, until Ctrl-C."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.getenv("HOST", "127.0.0.1"))
        parser.add_argument("--port", default=os.getenv("PORT", "8000"))

    def handle(self, *args: Any, host: str, port: str, **options: Any) -> None:
        python = sys.executable
        commands = [
            [
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
            ],
        ]
        if "worker" in get_commands():
            commands.append([python, "manage.py", "worker"])
        children = [subprocess.Popen(cmd) for cmd in commands]
        self.stdout.write(f"Console on http://{host}:{port}/ (Ctrl-C stops it)")

        def stop(*_: Any) -> None:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 15
            for child in children:
                try:
                    child.wait(timeout=max(deadline - time.monotonic(), 0.1))
                except subprocess.TimeoutExpired:
                    child.kill()
            sys.exit(0)

        signal.signal(signal.SIGTERM, stop)
        try:
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        stop()
