"""Log-in with the console's password hasher against Django's default one, in one run.

Two servers (1 gunicorn worker, N threads each): the console's settings (Argon2id first) and
the same settings with Django's default hashers (PBKDF2, 1.5 million rounds). Each round logs
N users in at the same moment on one server, then on the other, alternately, so the machine's
drift lands in both. Prints the median log-in time of each and their ratio; the bare view on
the same server is the floor.

Run: .venv/bin/python bench/run.py login          (LOGIN_USERS=8 LOGIN_ROUNDS=5)
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BARE_URL, console_server, median_ms  # noqa: E402

USERS = int(os.getenv("LOGIN_USERS", "8"))
ROUNDS = int(os.getenv("LOGIN_ROUNDS", "5"))
PASSWORD = "login-bench-password-1"
# Created with each server's hasher, so every log-in checks a password stored the way that
# server stores new ones.
SETUP = f"""
for i in range({USERS}):
    User.objects.create_user(f"user{{i}}", password={PASSWORD!r})
"""


def log_in(base: str, username: str, took: list[float]) -> None:
    with httpx.Client(base_url=base, timeout=120) as client:
        client.get("/login/")
        token = client.cookies["csrftoken"]
        start = time.perf_counter()
        r = client.post(
            "/login/",
            data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Referer": base + "/login/"},
        )
        took.append((time.perf_counter() - start) * 1000)
        assert r.status_code == 302, (username, r.status_code)


def round_of_log_ins(base: str) -> list[float]:
    """USERS people pressing 登录 at the same moment."""
    took: list[float] = []
    threads = [threading.Thread(target=log_in, args=(base, f"user{i}", took)) for i in range(USERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return took


def main() -> None:
    with ExitStack() as stack:
        console, _ = stack.enter_context(console_server(setup=SETUP, threads=USERS))
        django_default, _ = stack.enter_context(
            console_server({"BENCH_DJANGO_DEFAULT_HASHERS": "1"}, setup=SETUP, threads=USERS)
        )
        with httpx.Client(base_url=console) as client:
            bare = median_ms(client, BARE_URL, n=50)
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(ROUNDS):
            ours += round_of_log_ins(console)
            theirs += round_of_log_ins(django_default)
    mine, default = statistics.median(ours), statistics.median(theirs)
    print(f"{USERS} users logging in at once, {ROUNDS} rounds, medians")
    print(f"bare view                          {bare:9.1f} ms")
    print(f"log-in, Django's default (PBKDF2)  {default:9.1f} ms")
    print(f"log-in, console (Argon2id)         {mine:9.1f} ms  x{mine / default:.2f} of Django's")


if __name__ == "__main__":
    main()
