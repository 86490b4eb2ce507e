"""In-process cost of every wizard page: each step page and its htmx fragment, each partial.

Not a benchmark (bench/run.py does not run it): the console's WSGI application called in a
loop, as bench/profile_floor.py does, for the bench's draft (bench_wizard.SETUP) and for a
second draft whose every step shows its errors. For each page it prints the Python function
calls per request (counted under cProfile: the same on every run, so a change's effect shows
even when other work on this shared machine moves the timings by 20-50%), the SQL queries,
the answer's bytes and the CPU time per request (time.process_time, fastest of 60 samples
of 3 requests and the median of the 15 fastest).

Run: .venv/bin/python bench/profile_wizard.py [--only TEXT] [--calls-only] [--lang en]
     .venv/bin/python bench/profile_wizard.py --dump DIR   (each page's status and HTML)
     .venv/bin/python bench/profile_wizard.py --compare DIR DIR
`--compare` says which pages differ once the CSRF token, CSP nonce, the drafts page's
create key, the review's revision, a step's `seen` version and times are blanked: for
changes meant to leave the wizard's HTML as it is (dump before, dump after, compare).
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARGS = sys.argv[1:]


def option(name: str) -> str | None:
    return ARGS[ARGS.index(name) + 1] if name in ARGS else None


BLANKED = [
    (re.compile(rb'(csrfmiddlewaretoken" value=")[^"]*'), rb"\1-"),
    (re.compile(rb'(nonce=")[^"]*'), rb"\1-"),
    (re.compile(rb'("X-CSRFToken": ")[^"]*'), rb"\1-"),
    (re.compile(rb'(name="create_key" value=")[^"]*'), rb"\1-"),
    (re.compile(rb'(name="revision" value=")[^"]*'), rb"\1-"),
    (re.compile(rb'(name="seen" value=")[^"]*'), rb"\1-"),  # the step's version as shown
    (re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d"), rb"-"),
]


def compare(before: Path, after: Path) -> int:
    """Exit status 1 when any page differs (or is missing) once the tokens are blanked."""

    def blanked(path: Path) -> bytes:
        text = path.read_bytes()
        for pattern, replacement in BLANKED:
            text = pattern.sub(replacement, text)
        return text

    differ = 0
    for page in sorted(before.glob("*.html")):
        other = after / page.name
        if not other.exists() or blanked(page) != blanked(other):
            print(f"differs: {page.name}")
            differ += 1
    print(f"{len(list(before.glob('*.html')))} pages compared, {differ} differ")
    return 1 if differ else 0


if "--compare" in ARGS:
    where = ARGS.index("--compare")
    sys.exit(compare(Path(ARGS[where + 1]), Path(ARGS[where + 2])))

sys.path.insert(0, str(ROOT))
os.chdir(ROOT)
os.environ.update(
    CONSOLE_VAR_DIR=tempfile.mkdtemp(prefix="prof-wizard-"),
    DJANGO_SETTINGS_MODULE="bench.settings",
    DEBUG="0",
    LOG_LEVEL="WARNING",
    LOCAL_ACCELERATORS="baidu.com/a800_80g_cgpu=8",
    LOCAL_VOLUMES="scratch=/tmp",
)

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from bench import bench_wizard  # noqa: E402
from jobs.models import Draft  # noqa: E402

call_command("migrate", verbosity=0)
User.objects.create_user("bench", "bench@example.com", "bench-password")
exec(bench_wizard.SETUP, {})  # the bench's draft, every step done

# The same draft with a wrong value on every step, each step attempted: its errors shown.
WRONG = {
    "basic": {"name": "", "framework": "MPIJob", "queue": "nope"},
    "image": {"image": "", "command": "", "env-0-name": "1x"},
    "resources": {"roles-0-name": "", "roles-0-replicas": "0", "roles-0-accelerators": "99"},
    "data": {"mounts-0-name": "nope", "mounts-0-mount_path": "relative"},
    "fault": {"hang_minutes": "-3", "fault_tolerance": "on", "retry_limit": "x"},
    "advanced": {
        "retention_value": "abc",
        "timeout_minutes": "0",
        "alert_webhooks": "https://oapi.dingtalk.com/robot/send?access_token=a#secret=SECx\nnot",
    },
    "submission": {"mode": "queue", "target_queue": "", "total": "0", "concurrency": "9"},
}
bench_draft = Draft.objects.get(id=bench_wizard.DRAFT_ID)
wrong_data = dict(bench_draft.data)
for wrong_step, values in WRONG.items():
    wrong_data[wrong_step] = {**wrong_data[wrong_step], **{k: [v] for k, v in values.items()}}
wrong_data["_attempted"] = list(WRONG)
WRONG_ID = bench_wizard.DRAFT_ID[:-1] + "2"
Draft.objects.create(
    id=WRONG_ID,
    owner=bench_draft.owner,
    data=wrong_data,
    completed_steps=list(bench_draft.completed_steps),
)

client = Client(HTTP_HOST="127.0.0.1")
client.get("/login/")
token = client.cookies["csrftoken"].value
logged_in = client.post(
    "/login/",
    {"username": "bench", "password": "bench-password", "csrfmiddlewaretoken": token},
)
assert logged_in.status_code == 302
COOKIE = "; ".join(f"{name}={morsel.value}" for name, morsel in client.cookies.items())

DRAFT = f"/create/{bench_wizard.DRAFT_ID}"
WRONG_DRAFT = f"/create/{WRONG_ID}"
A800 = bench_wizard.A800
AIAK = "training_mode=SFT&training_method=full&aiak_template=llama2-7b"
HTMX = {"HTTP_HX_REQUEST": "true"}
PAGES: dict[str, tuple[str, dict[str, str]]] = {
    "bare": ("/bench/bare/", {}),
    "logged-in no-op": (bench_wizard.LOGGED_IN_BARE_URL, {}),
    "drafts": ("/create/", {}),
}
for step in bench_wizard.STEPS:
    PAGES[f"step {step}"] = (f"{DRAFT}/{step}/", {})
    PAGES[f"fragment {step}"] = (f"{DRAFT}/{step}/", HTMX)
PAGES |= {
    "role totals": (
        f"{DRAFT}/totals/?roles-TOTAL_FORMS=2&roles-0-use_accelerator=on"
        f"&roles-0-accelerator_type={A800}&roles-0-accelerators=1&roles-0-replicas=1"
        f"&roles-1-use_accelerator=on&roles-1-accelerator_type={A800}"
        "&roles-1-accelerators=1&roles-1-replicas=2",
        HTMX,
    ),
    "example": (f"{DRAFT}/example/?example=MPIJob", HTMX),
    "queue options": (f"{DRAFT}/queues/?resource_pool=local", HTMX),
    "idle count": (
        f"{DRAFT}/idle/?row=1&roles-1-use_accelerator=on&roles-1-accelerator_type={A800}"
        "&roles-1-accelerators=1&roles-1-replicas=2",
        HTMX,
    ),
    "AIAK preview": (
        f"{DRAFT}/aiak/?creation_mode=aiak&{AIAK}",
        {**HTMX, "HTTP_HX_TARGET": "aiak-preview"},
    ),
    "mount row": (
        f"{DRAFT}/mount-row/?row=1&mounts-1-type=hostpath&mounts-1-source_path=/ssd1/data"
        "&mounts-1-mount_path=/mnt/data&mounts-1-access=ro",
        HTMX,
    ),
}
if "--dump" in ARGS:  # pages only compared, not measured
    for step in bench_wizard.STEPS:
        PAGES[f"wrong step {step}"] = (f"{WRONG_DRAFT}/{step}/", {})
        PAGES[f"wrong fragment {step}"] = (f"{WRONG_DRAFT}/{step}/", HTMX)
    PAGES |= {
        "wrong mount row": (
            f"{WRONG_DRAFT}/mount-row/?row=0&mounts-0-type=hostpath&mounts-0-name=scratch"
            "&mounts-0-mount_path=relative",
            HTMX,
        ),
    }

application = get_wsgi_application()


def answer(name: str) -> tuple[str, bytes]:
    url, headers = PAGES[name]
    path, _, query = url.partition("?")
    environ: dict[str, Any] = {
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
        "HTTP_ACCEPT_LANGUAGE": option("--lang") or "zh-hans",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        **headers,
    }
    if name != "bare":
        environ["HTTP_COOKIE"] = COOKIE
    statuses: list[str] = []
    body = application(environ, lambda status, _headers, _info=None: statuses.append(status))
    content = b"".join(body)
    body.close()
    return statuses[0], content


class Counted:
    """A database execute wrapper that notes each statement's SQL (Django's own query log
    is emptied when a request starts)."""

    def __init__(self, queries: list[str]) -> None:
        self.queries = queries

    def __call__(self, execute: Any, sql: str, *rest: Any) -> Any:
        self.queries.append(sql)
        return execute(sql, *rest)


def main() -> None:
    only = option("--only")
    names = [name for name in PAGES if only is None or only in name]
    dump = option("--dump")
    if dump is not None:
        folder = Path(dump)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            status, content = answer(name)
            (folder / f"{name.replace(' ', '_')}.html").write_bytes(
                status.encode() + b"\n" + content
            )
        print(f"{len(names)} pages written to {folder}")
        return
    print(
        f"{'page':22} {'calls':>7} {'queries':>7} {'bytes':>6} {'fastest ms':>10} {'median ms':>9}"
    )
    for name in names:
        for _ in range(10):
            status, content = answer(name)
            assert status.startswith("200"), (name, status)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(5):
            answer(name)
        profile.disable()
        calls = sum(row[1] for row in pstats.Stats(profile).stats.values()) / 5  # type: ignore[attr-defined]
        queries: list[str] = []
        with connection.execute_wrapper(Counted(queries)):
            answer(name)
        samples = []
        for _ in range(0 if "--calls-only" in ARGS else 60):
            start = time.process_time()
            for _ in range(3):
                answer(name)
            samples.append((time.process_time() - start) / 3 * 1000)
        samples = sorted(samples) or [0.0]
        print(
            f"{name:22} {calls:7.0f} {len(queries):7} {len(content):6} "
            f"{samples[0]:10.3f} {statistics.median(samples[:15]):9.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
