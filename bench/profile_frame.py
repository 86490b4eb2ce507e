"""In-process profile of the page frame (base.html around an empty content block).

Not a benchmark (bench/run.py does not run it): Django's test Client, no HTTP, so it shows
where the frame's CPU time goes. Prints ms per request of the bare view, the logged-in bare
view and the frame (logged in and anonymous), then the frame's template nodes by their own
time (each {% url %}, {% static %}, {% translate %}... separately), the context processors
one by one, and a cProfile listing.

Run: .venv/bin/python bench/profile_frame.py [N] [--cprofile]
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)
os.environ.update(
    CONSOLE_VAR_DIR=tempfile.mkdtemp(prefix="prof-frame-"),
    DJANGO_SETTINGS_MODULE="bench.settings",
    DEBUG="0",
    LOG_LEVEL="WARNING",
)

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.template import base as template_base  # noqa: E402
from django.test import Client, RequestFactory  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

N = int(next((a for a in sys.argv[1:] if a.isdigit()), "300"))

call_command("migrate", verbosity=0)
user = User.objects.create_user("bench", "bench@example.com", "bench-password")
client = Client(HTTP_HOST="127.0.0.1")
client.force_login(user)
anonymous = Client(HTTP_HOST="127.0.0.1")


def per_request_ms(c: Client, url: str, n: int = N) -> float:
    for _ in range(30):
        assert c.get(url).status_code == 200, url
    start = time.process_time()
    for _ in range(n):
        c.get(url)
    return (time.process_time() - start) / n * 1000


figures = {
    "bare": per_request_ms(anonymous, "/bench/bare/"),
    "logged-in bare": per_request_ms(client, "/bench/bare-logged-in/"),
    "frame (logged in)": per_request_ms(client, "/bench/frame/"),
    "frame (anonymous)": per_request_ms(anonymous, "/bench/frame-anonymous/"),
}
print(f"in-process CPU ms per request ({N} requests each)")
for name, ms in figures.items():
    print(f"  {name:20} {ms:6.3f}  x bare {ms / figures['bare']:5.2f}")
print(f"  frame's own: {figures['frame (logged in)'] - figures['logged-in bare']:.3f} ms")

# Each template node's own time (its children's taken out), summed over the requests.
own: dict[str, float] = defaultdict(float)
count: dict[str, int] = defaultdict(int)
stack: list[float] = []
original = template_base.Node.render_annotated


def timed(self, context):  # type: ignore[no-untyped-def]
    stack.append(0.0)
    start = time.perf_counter()
    try:
        return original(self, context)
    finally:
        took = time.perf_counter() - start
        children = stack.pop()
        if stack:
            stack[-1] += took
        token = getattr(self, "token", None)
        text = token.contents if token is not None else ""
        key = f"{type(self).__name__}: {text[:70]}"
        own[key] += took - children
        count[key] += 1


template_base.Node.render_annotated = timed
runs = 200
for _ in range(runs):
    client.get("/bench/frame/")
template_base.Node.render_annotated = original
total = sum(own.values())
print(f"\ntemplate nodes, own time per request (total {total / runs * 1e6:.0f} µs, timer included)")
for key, took in sorted(own.items(), key=lambda kv: -kv[1])[:45]:
    print(f"  {took / runs * 1e6:7.1f} µs  x{count[key] // runs:<3} {key}")

request = RequestFactory().get("/bench/frame/", HTTP_HOST="127.0.0.1")
request.user = user
request.session = client.session
request._messages = None  # type: ignore[attr-defined]
from django.contrib.messages.storage import default_storage  # noqa: E402
from django.middleware.csp import ContentSecurityPolicyMiddleware  # noqa: E402

request._messages = default_storage(request)  # type: ignore[attr-defined]
ContentSecurityPolicyMiddleware(lambda r: None).process_request(request)
from django.conf import settings  # noqa: E402

print("\ncontext processors, µs per call")
for path in settings.TEMPLATES[0]["OPTIONS"]["context_processors"]:
    processor = import_string(path)
    start = time.perf_counter()
    for _ in range(2000):
        processor(request)
    print(f"  {(time.perf_counter() - start) / 2000 * 1e6:6.1f}  {path}")

if "--cprofile" in sys.argv:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(100):
        client.get("/bench/frame/")
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(40)
