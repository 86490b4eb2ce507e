"""Draws the console's pages with another revision's templates and with this checkout's, in one
process over one database, and checks the HTML is the same (whitespace-normalised, the CSRF
token and CSP nonce, which change on every request, blanked). For changes to templates that
must not change a page (e.g. the page frame's, bench/profile_frame.py).

Run: .venv/bin/python bench/compare_frame_html.py [REV]     (REV: main by default)
Prints each page's name and "same" or a diff; exits 1 when any page differs.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)
REV = sys.argv[1] if len(sys.argv) > 1 else "main"
VAR = Path(tempfile.mkdtemp(prefix="compare-frame-"))
os.environ.update(
    CONSOLE_VAR_DIR=str(VAR),
    DJANGO_SETTINGS_MODULE="bench.settings",
    DEBUG="0",
    LOG_LEVEL="WARNING",
    LOCAL_ACCELERATORS="baidu.com/a800_80g_cgpu=8",
    LOCAL_VOLUMES="scratch=/tmp",
)

# The other revision's template folders, side by side with ours.
BEFORE = VAR / "before"
BEFORE.mkdir()
archive = subprocess.run(
    ["git", "archive", REV, "templates", "jobs/templates"],
    cwd=ROOT,
    check=True,
    capture_output=True,
).stdout
subprocess.run(["tar", "-x", "-C", str(BEFORE)], input=archive, check=True)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from bench.bench_wizard import DRAFT_ID, SETUP  # noqa: E402
from jobs import spec as S  # noqa: E402
from jobs.models import Draft  # noqa: E402
from jobs.services import jobs_submit  # noqa: E402

call_command("migrate", verbosity=0)
alice = User.objects.create_user("alice", password="alice-password-1")
staff = User.objects.create_user("rita", password="rita-password-1", is_staff=True)
[job] = jobs_submit(
    owner=alice,
    spec=S.JobSpec(
        name="compare-job",
        resource_pool_id="local",
        image="python:3.12",
        command="echo hi",
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    ),
    submit_key="compare-1",
)
# bench_wizard's draft, every step done, owned by Alice.
exec(SETUP.replace('username="bench"', 'username="alice"'), {})
draft = Draft.objects.get(id=DRAFT_ID)

PAGES: list[tuple[str, str | None, str, str, dict[str, str]]] = [
    # (name, who, method, URL, POST data); who None: not logged in.
    ("login", None, "GET", "/login/", {}),
    ("login, bad password", None, "POST", "/login/", {"username": "alice", "password": "x"}),
    ("job list", "alice", "GET", "/", {}),
    ("job list, staff", "rita", "GET", "/", {}),
    ("job list, English", "alice/en", "GET", "/", {}),
    ("job page", "alice", "GET", f"/jobs/{job.public_id}/", {}),
    ("job page, English", "alice/en", "GET", f"/jobs/{job.public_id}/", {}),
    ("drafts (create)", "alice", "GET", "/create/", {}),
    ("wizard basic step", "alice", "GET", f"/create/{draft.id}/basic/", {}),
    ("wizard image step", "alice/en", "GET", f"/create/{draft.id}/image/", {}),
    ("wizard review step", "alice", "GET", f"/create/{draft.id}/review/", {}),
    ("wizard basic, htmx", "alice", "GET", f"/create/{draft.id}/basic/?htmx", {}),
    ("pools", "alice", "GET", "/pools/", {}),
    ("my usage", "alice", "GET", "/account/usage/", {}),
    ("my usage, English", "alice/en", "GET", "/account/usage/", {}),
    ("API keys", "alice", "GET", "/account/keys/", {}),
    ("password change", "alice", "GET", "/account/password/", {}),
    ("not found", "alice", "GET", "/jobs/no-such-job/", {}),
    ("not found, anonymous", None, "GET", "/no-such-page/", {}),
]
BLANK = [
    (re.compile(r'(csrfmiddlewaretoken" value=")[^"]+'), r"\1TOKEN"),
    (re.compile(r'("X-CSRFToken": ")[^"]+'), r"\1TOKEN"),
    (re.compile(r'(nonce=")[^"]+'), r"\1NONCE"),
    # A fresh key per drawn form (a submit made twice creates one draft), and the clock.
    (re.compile(r'(name="(?:create|request)_key" value=")[^"]+'), r"\1KEY"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "HH:MM:SS"),
]


def normalised(html: str) -> str:
    for pattern, replacement in BLANK:
        html = pattern.sub(replacement, html)
    return "\n".join(line.strip() for line in html.splitlines() if line.strip())


def draw(templates: list[Path]) -> dict[str, str]:
    engine = {**settings.TEMPLATES[0], "DIRS": templates}
    drawn = {}
    with override_settings(TEMPLATES=[engine]):
        for name, who, method, url, data in PAGES:
            client = Client(HTTP_HOST="127.0.0.1")
            if who:
                username, _, language = who.partition("/")
                client.force_login(User.objects.get(username=username))
                if language:
                    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
            if name == "login":  # after logging out: the page shows that message
                leaving = Client(HTTP_HOST="127.0.0.1")
                leaving.force_login(alice)
                leaving.post("/logout/")
                client = leaving
            headers = {"HX-Request": "true"} if url.endswith("?htmx") else {}
            if method == "GET":
                response = client.get(url.removesuffix("?htmx"), headers=headers)
            else:
                response = client.post(url, data, headers=headers)
            assert response.status_code in (200, 404), (name, response.status_code)
            drawn[name] = normalised(response.content.decode())
    return drawn


before = draw([BEFORE / "templates", BEFORE / "jobs" / "templates"])
after = draw([ROOT / "templates"])
differ = 0
for name, _who, _method, url, _data in PAGES:
    if before[name] == after[name]:
        print(f"same     {name} ({url}, {len(after[name])} characters)")
        continue
    differ += 1
    print(f"DIFFERS  {name} ({url})")
    sys.stdout.writelines(
        difflib.unified_diff(
            before[name].splitlines(True), after[name].splitlines(True), REV, "this checkout", n=1
        )
    )
sys.exit(1 if differ else 0)
