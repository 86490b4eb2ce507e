"""In-process breakdown of what every logged-in request pays (the "floor"), and each wizard
partial bench_wizard.py measures on top of it.

Not a benchmark (bench/run.py does not run it): the console's WSGI application called in a
loop with the environ gunicorn would pass (a logged-in browser's cookies), no HTTP. Prints
ms per request (the fastest of 10 batches, this machine being shared) of the bare view, the
logged-in no-op view and the partials (role totals, example, queue options, idle count, AIAK
preview and section, mount row); then, for each, every
middleware's own time and that of the session read and decode, the user read, the session
hash check, URL resolving, SQL execution and the request signals (perf_counter_ns, children
taken out; the innermost middleware's own time holds the view's).
The timing wrappers add ~40% of their own; read the shares, not the sums.

Run: .venv/bin/python bench/profile_floor.py [N] [--cprofile NAME]
"""

from __future__ import annotations

import cProfile
import functools
import io
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)
os.environ.update(
    CONSOLE_VAR_DIR=tempfile.mkdtemp(prefix="prof-floor-"),
    DJANGO_SETTINGS_MODULE="bench.settings",
    DEBUG="0",
    LOG_LEVEL="WARNING",
    LOCAL_ACCELERATORS="baidu.com/a800_80g_cgpu=8",
    LOCAL_VOLUMES="scratch=/tmp",
)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

from bench import bench_wizard  # noqa: E402

N = int(next((a for a in sys.argv[1:] if a.isdigit()), "2000"))

call_command("migrate", verbosity=0)
User.objects.create_user("bench", "bench@example.com", "bench-password")
exec(bench_wizard.SETUP, {})  # the bench's draft, every step done
client = Client(HTTP_HOST="127.0.0.1")
client.get("/login/")
assert (
    client.post(
        "/login/",
        {
            "username": "bench",
            "password": "bench-password",
            "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
        },
    ).status_code
    == 302
)
COOKIE = "; ".join(f"{name}={morsel.value}" for name, morsel in client.cookies.items())
DRAFT = f"/create/{bench_wizard.DRAFT_ID}"
A800 = bench_wizard.A800
AIAK = "creation_mode=aiak&training_mode=SFT&training_method=full&aiak_template=llama2-7b"
URLS = {
    "bare": ("/bench/bare/", False),
    "logged-in no-op": (bench_wizard.LOGGED_IN_BARE_URL, False),
    "role totals": (
        f"{DRAFT}/totals/?roles-TOTAL_FORMS=2&roles-0-use_accelerator=on"
        f"&roles-0-accelerator_type={A800}&roles-0-accelerators=1&roles-0-replicas=1"
        f"&roles-1-use_accelerator=on&roles-1-accelerator_type={A800}"
        "&roles-1-accelerators=1&roles-1-replicas=2",
        True,
    ),
    "example": (f"{DRAFT}/example/?example=MPIJob", True),
    "queue options": (f"{DRAFT}/queues/?resource_pool=local", True),
    "idle count": (
        f"{DRAFT}/idle/?row=1&roles-1-use_accelerator=on&roles-1-accelerator_type={A800}"
        "&roles-1-accelerators=1&roles-1-replicas=2",
        True,
    ),
    "AIAK preview": (f"{DRAFT}/aiak/?{AIAK}", {"HTTP_HX_TARGET": "aiak-preview"}),
    "mount row": (
        f"{DRAFT}/mount-row/?row=1&mounts-1-type=hostpath&mounts-1-source_path=/ssd1/data"
        "&mounts-1-mount_path=/mnt/data&mounts-1-access=ro",
        True,
    ),
}

# Time wrappers are installed before the application (and its middleware) is made.
own: dict[str, int] = defaultdict(int)
stack: list[int] = []


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stack.append(0)
        start = time.perf_counter_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = time.perf_counter_ns() - start
            own[name] += spent - stack.pop()
            if stack:
                stack[-1] += spent

    return wrapper


def instrument() -> None:
    import django.contrib.auth as auth
    import django.contrib.auth.middleware as auth_middleware
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.sessions.backends.base import SessionBase
    from django.core.handlers.base import BaseHandler
    from django.db.backends import utils as db_utils

    for path in settings.MIDDLEWARE:
        cls = import_string(path)
        cls.__call__ = timed("middleware " + path.rsplit(".", 1)[1], cls.__call__)
    store = import_string(settings.SESSION_ENGINE + ".SessionStore")
    store.load = timed("session: load (query, less decode)", store.load)
    SessionBase.decode = timed("session: decode (signature, zlib, JSON)", SessionBase.decode)
    backend = import_string(settings.AUTHENTICATION_BACKENDS[0])
    backend.get_user = timed("user: read (backend.get_user)", backend.get_user)
    AbstractBaseUser.get_session_auth_hash = timed(
        "user: session hash (HMAC-SHA256)", AbstractBaseUser.get_session_auth_hash
    )
    auth.get_user = timed("user: auth.get_user, the rest", auth.get_user)
    auth_middleware.auth.get_user = auth.get_user
    BaseHandler.resolve_request = timed("URL resolving", BaseHandler.resolve_request)
    db_utils.CursorWrapper.execute = timed(
        "SQLite execute (cursor)", db_utils.CursorWrapper.execute
    )
    signal_class = type(django.core.signals.request_started)
    send = signal_class.send

    def named_send(self: Any, sender: Any, **named: Any) -> Any:
        signals = django.core.signals
        name = {
            id(signals.request_started): "signal request_started",
            id(signals.request_finished): "signal request_finished (close_old_connections)",
        }.get(id(self), "signals: other (model pre/post_init...)")
        return timed(name, send)(self, sender, **named)

    signal_class.send = named_send


def environ(url: str, htmx: bool | dict[str, str], logged_in: bool) -> dict[str, Any]:
    path, _, query = url.partition("?")
    env = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_ACCEPT": "*/*",
        "HTTP_ACCEPT_ENCODING": "gzip, deflate",
        "HTTP_USER_AGENT": "python-httpx/0.28.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    if logged_in:
        env["HTTP_COOKIE"] = COOKIE
    if htmx:
        env["HTTP_HX_REQUEST"] = "true"
        if isinstance(htmx, dict):  # more htmx headers (HX-Target)
            env.update(htmx)
    return env


def main() -> None:
    from django.core.wsgi import get_wsgi_application

    plain = get_wsgi_application()

    def call(app: Any, name: str) -> str:
        url, htmx = URLS[name]
        answered: list[str] = []
        body = app(environ(url, htmx, name != "bare"), lambda s, h, e=None: answered.append(s))
        b"".join(body)
        body.close()
        return answered[0]

    def per_request_ms(app: Any, name: str, n: int) -> float:
        for _ in range(30):
            assert call(app, name).startswith("200"), name
        batches = []
        for _ in range(10):
            start = time.perf_counter_ns()
            for _ in range(n // 10):
                call(app, name)
            batches.append((time.perf_counter_ns() - start) / (n // 10) / 1e6)
        return min(batches)

    print(f"in-process ms per request (fastest of 10 batches of {N // 10})")
    figures = {name: per_request_ms(plain, name, N) for name in URLS}
    for name, ms in figures.items():
        print(f"  {name:16} {ms:6.3f}  x bare {ms / figures['bare']:5.2f}")

    if "--cprofile" in sys.argv:
        name = sys.argv[sys.argv.index("--cprofile") + 1]
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(N):
            call(plain, name)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(40)
        return

    instrument()
    app = get_wsgi_application()
    for name in URLS:
        per_request_ms(app, name, 30)
        n = N // 10
        fastest: tuple[int, dict[str, int]] | None = None
        for _ in range(10):  # the fastest batch's parts, as above
            own.clear()
            start = time.perf_counter_ns()
            for _ in range(n):
                call(app, name)
            total = time.perf_counter_ns() - start
            if fastest is None or total < fastest[0]:
                fastest = (total, dict(own))
        total, parts = fastest
        print(f"\n{name}: {total / n / 1000:.0f} µs per request with the timing wrappers")
        for part, ns in sorted(parts.items(), key=lambda item: -item[1]):
            print(f"  {ns / n / 1000:7.1f} µs  {part}")
        rest = total - sum(parts.values())
        print(f"  {rest / n / 1000:7.1f} µs  the rest (WSGI handler, the loop)")


if __name__ == "__main__":
    main()
