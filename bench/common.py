"""Shared harness: a real console server on 127.0.0.1 with its own database, a logged-in
HTTP client, and timing that reports medians and ratios against the bare view."""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
BARE_URL = "/bench/bare/"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def console_server(
    extra_env: dict[str, str] | None = None, setup: str = "", threads: int = 1
) -> Iterator[tuple[str, dict[str, str]]]:
    """Starts gunicorn (1 worker, 1 thread by default: measures the code, not concurrency).

    `setup` is Python run with Django configured before the server starts (create users,
    jobs...). Yields (base_url, env) so callers can run more manage.py commands.
    """
    var = tempfile.mkdtemp(prefix="bench-")
    port = free_port()
    env = {
        **os.environ,
        "CONSOLE_VAR_DIR": var,
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    script = (
        "import django; django.setup()\n"
        "from django.contrib.auth.models import User\n"
        "User.objects.create_user('bench', 'bench@example.com', 'bench-password')\n" + setup
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "bench.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            str(threads),
            "--log-level",
            "warning",
            "--no-control-socket",  # as `manage.py serve`: no ~/.gunicorn/gunicorn.ctl
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(base + BARE_URL, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("bench server did not start") from None
                time.sleep(0.2)
        yield base, env
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)


def logged_in_client(base: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=30, follow_redirects=False)
    r = client.get("/login/")
    token = client.cookies["csrftoken"]
    r = client.post(
        "/login/",
        data={"username": "bench", "password": "bench-password", "csrfmiddlewaretoken": token},
        headers={"Referer": base + "/login/"},
    )
    assert r.status_code == 302, r.status_code
    return client


def median_ms(
    client: httpx.Client, url: str, *, n: int = 200, headers: dict[str, str] | None = None
) -> float:
    for _ in range(10):  # warm up caches and connections
        client.get(url, headers=headers)
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        r = client.get(url, headers=headers)
        samples.append((time.perf_counter() - start) * 1000)
        assert r.status_code < 400, (url, r.status_code)
    return statistics.median(samples)


def paired_ms(
    client: httpx.Client,
    url: str,
    *,
    baseline: str = BARE_URL,
    n: int = 200,
    headers: dict[str, str] | None = None,
) -> tuple[float, float]:
    """Median ms of `url` and of `baseline`, sampled alternately.

    This machine's speed drifts by 2x within a minute (shared cores); timing the baseline
    once and the pages later put that drift into the ratios. Alternating puts it in both.
    """
    for _ in range(10):
        client.get(url, headers=headers)
        client.get(baseline)
    page, base = [], []
    for _ in range(n):
        start = time.perf_counter()
        client.get(baseline)
        middle = time.perf_counter()
        r = client.get(url, headers=headers)
        end = time.perf_counter()
        assert r.status_code < 400, (url, r.status_code)
        base.append((middle - start) * 1000)
        page.append((end - middle) * 1000)
    return statistics.median(page), statistics.median(base)


def report(rows: list[tuple[str, float, float]]) -> None:
    """Prints name, median ms and ratio to the bare view for each row."""
    width = max(len(name) for name, _, _ in rows)
    print(f"{'measurement'.ljust(width)}  median ms  x bare")
    for name, ms, ratio in rows:
        print(f"{name.ljust(width)}  {ms:9.2f}  {ratio:6.2f}")
