"""The console after a year of a big team's use: every list and report page against a
database filled by bench/scale_seed.py (200 users, 30,000 jobs over 12 months, events, drafts,
usage records, API keys; `scale-user` has 2,000 jobs).

For each page, opened in-process through Django's test client as the user who would open it:
its status, the number of SQL queries it made, and its median time as a ratio to the bare view
(bench/urls.py) timed alternately with it. Growth is what to look for: a page whose query count
depends on the data (N+1) or whose time is many times the others'. The worker's retention
pass is timed too (it ran on every tick: a tick must stay short with 30,000 jobs).

    .venv/bin/python bench/run.py scale      # or: .venv/bin/python bench/bench_scale.py
    SCALE_JOBS=5000 ...                      # a smaller database, to compare growth
    SCALE_VAR_DIR=/tmp/x ...                 # keep (or reuse) the seeded folder
    SCALE_ONLY="pools,events" ...            # only the pages whose name has one of these
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SAMPLES = int(os.environ.get("SCALE_SAMPLES", "7"))
ONLY = [word for word in os.environ.get("SCALE_ONLY", "").split(",") if word]


def _prepare() -> tuple[str, bool]:
    var = os.environ.get("SCALE_VAR_DIR") or tempfile.mkdtemp(prefix="bench-scale-")
    keep = bool(os.environ.get("SCALE_VAR_DIR"))
    env = {**os.environ, "CONSOLE_VAR_DIR": var, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    fresh = not (Path(var) / "console.sqlite3").exists()
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    if fresh:
        jobs = os.environ.get("SCALE_JOBS", "30000")
        subprocess.run([sys.executable, "bench/scale_seed.py", jobs], cwd=ROOT, env=env, check=True)
    os.environ.update(CONSOLE_VAR_DIR=var, DJANGO_SETTINGS_MODULE="bench.settings")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    return var, keep


def main() -> None:
    var, keep = _prepare()
    import django

    django.setup()
    import time as _time

    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    from jobs.aihc import signer
    from jobs.api_keys import api_key_create
    from jobs.models import ApiKey, Job

    setup_test_environment()  # the test client's response.context, ALLOWED_HOSTS testserver
    user = User.objects.get(username="scale-user")
    reviewer = User.objects.get(username="scale-reviewer")
    admin = User.objects.get(username="scale-admin")
    heavy = Job.objects.get(name="scale-heavy")
    newest = Job.objects.filter(owner=user).order_by("-created_at").first()
    assert newest is not None
    mine = Job.objects.filter(owner=user).count()
    last_page = (mine + 19) // 20
    ApiKey.objects.filter(owner=user).delete()
    key, secret = api_key_create(owner=user, description="bench")

    def signed(path: str, query: list[tuple[str, str]]) -> dict[str, str]:
        stamp = signer.canonical_time(_time.time())
        headers = {"Host": "testserver", "x-bce-date": stamp}
        headers["Authorization"] = signer.authorization(
            access_key=key.access_key_id,
            secret_key=secret,
            method="GET",
            path=path,
            params=query,
            headers=headers,
            timestamp=stamp,
            signed_header_names=["host"],
        )
        return headers

    year = "date_from=2025-01-01&date_to=2026-12-31"
    pages: list[tuple[str, User | None, str]] = [
        ("bare view", None, "/bench/bare/"),
        ("job list", user, "/"),
        ("job list ?status=failed", user, "/?status=failed"),
        ("job list ?status=running", user, "/?status=running"),
        ("job list ?pool=cce-a800-train", user, "/?pool=cce-a800-train"),
        ("job list ?queue=q1", user, "/?queue=q1"),
        ("job list ?framework=TFJob", user, "/?framework=TFJob"),
        ("job list ?q=train-1", user, "/?q=train-1"),
        ("job list ?q=grp 2/3", user, "/?q=grp+2%2F3"),
        ("job list page 2", user, "/?page=2"),
        (f"job list last page ({last_page})", user, f"/?page={last_page}"),
        ("job list past the end", user, f"/?page={last_page + 5}"),
        ("job list refresh (htmx)", user, "HX:/"),
        ("my drafts", user, "/create/"),
        ("my usage (this month)", user, "/account/usage/"),
        ("my usage (two years)", user, f"/account/usage/?{year}"),
        ("my usage (two years) CSV", user, f"/account/usage/?{year}&format=csv"),
        ("my usage (two years) last page", user, f"/account/usage/?{year}&page=40"),
        ("API keys page", user, "/account/keys/"),
        ("pools page", user, "/pools/"),
        ("heavy job page (10k events, 10k lines)", user, f"/jobs/{heavy.public_id}/"),
        ("heavy job live (htmx)", user, f"HX:/jobs/{heavy.public_id}/live/"),
        ("heavy job logs (htmx)", user, f"HX:/jobs/{heavy.public_id}/logs/"),
        ("heavy job log search (htmx)", user, f"HX:/jobs/{heavy.public_id}/logs/search/?q=step+99"),
        ("admin index (reviewer)", reviewer, "/admin/"),
        ("admin job list (reviewer)", reviewer, "/admin/jobs/job/"),
        ("admin job list (superuser)", admin, "/admin/jobs/job/"),
        ("admin review queue", reviewer, "/admin/jobs/job/?status__exact=pending_review"),
        ("admin ?review_state=pending", reviewer, "/admin/jobs/job/?review_state__exact=pending"),
        ("admin ?status=failed", reviewer, "/admin/jobs/job/?status__exact=failed"),
        ("admin ?owner", reviewer, f"/admin/jobs/job/?owner__id__exact={user.pk}"),
        ("admin ?pool", reviewer, "/admin/jobs/job/?pool=cce-a800-train"),
        ("admin ?q=user042", reviewer, "/admin/jobs/job/?q=user042"),
        ("admin ?q=train-12", reviewer, "/admin/jobs/job/?q=train-12"),
        ("admin date drill-down", reviewer, "/admin/jobs/job/?created_at__year=2026"),
        ("admin last page", reviewer, "/admin/jobs/job/?p=599"),
        ("admin heavy job page", reviewer, f"/admin/jobs/job/{heavy.pk}/change/"),
        ("admin heavy job logs", reviewer, f"/admin/jobs/job/{heavy.pk}/logs/"),
        ("admin usage report", reviewer, "/admin/jobs/job/usage/"),
        ("admin usage report (two years)", reviewer, f"/admin/jobs/job/usage/?{year}"),
        ("admin usage CSV (two years)", reviewer, f"/admin/jobs/job/usage/?{year}&format=csv"),
        ("admin API keys", admin, "/admin/jobs/apikey/"),
        ("admin API keys ?q=user0", admin, "/admin/jobs/apikey/?q=user0"),
        ("admin users", admin, "/admin/auth/user/"),
        ("admin groups", admin, "/admin/auth/group/"),
        ("admin card quotas", admin, "/admin/jobs/cardquota/"),
    ]
    api: list[tuple[str, str, list[tuple[str, str]]]] = [
        ("API v1 ListJobs page 1", "/api/v1/aijobs", [("resourcePoolId", "local")]),
        (
            "API v1 ListJobs last page",
            "/api/v1/aijobs",
            [("resourcePoolId", "local"), ("pageNo", "50"), ("pageSize", "10")],
        ),
        ("API v2 DescribeJobs", "/", [("action", "DescribeJobs"), ("resourcePoolId", "local")]),
        (
            "API v2 DescribeJobs page 20",
            "/",
            [("action", "DescribeJobs"), ("resourcePoolId", "local"), ("pageNumber", "20")],
        ),
        # A job's events: the heavy job's 10,000, and a day of them (startTime, endTime).
        (
            "API v1 job events (10k)",
            f"/api/v1/aijobs/{heavy.public_id}/events",
            [("resourcePoolId", heavy.resource_pool)],
        ),
        (
            "API v2 DescribeJobEvents (10k)",
            "/",
            [
                ("action", "DescribeJobEvents"),
                ("resourcePoolId", heavy.resource_pool),
                ("jobId", heavy.public_id),
            ],
        ),
        (
            "API v2 DescribeJobEvents an hour",
            "/",
            [
                ("action", "DescribeJobEvents"),
                ("resourcePoolId", heavy.resource_pool),
                ("jobId", heavy.public_id),
                ("startTime", str(int(heavy.created_at.timestamp()))),
                ("endTime", str(int(heavy.created_at.timestamp()) + 3600)),
            ],
        ),
        (
            "API v2 DescribeJobs keyword",
            "/",
            [
                ("action", "DescribeJobs"),
                ("resourcePoolId", "local"),
                ("keyword", "train-1"),
            ],
        ),
    ]

    if ONLY:  # the bare view stays: every ratio is to it
        pages = [p for p in pages if p[0] == "bare view" or any(w in p[0] for w in ONLY)]
        api = [a for a in api if any(w in a[0] for w in ONLY)]
    clients: dict[int, Client] = {}

    def client_for(who: User | None) -> Client:
        if who is None:
            return Client()
        if who.pk not in clients:
            c = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
            c.force_login(who)
            clients[who.pk] = c
        return clients[who.pk]

    def fetch(who: User | None, url: str) -> tuple[int, int, int]:
        c = client_for(who)
        headers = {}
        if url.startswith("HX:"):
            url, headers = url[3:], {"HX-Request": "true"}
        with CaptureQueriesContext(connection) as queries:
            r = c.get(url, headers=headers)
            body = b"".join(r.streaming_content) if r.streaming else r.content
        return r.status_code, len(queries), len(body)

    def fetch_api(path: str, query: list[tuple[str, str]]) -> tuple[int, int, int]:
        with CaptureQueriesContext(connection) as queries:
            r = Client().get(path, dict(query), headers=signed(path, query))
        return r.status_code, len(queries), len(r.content)

    def timed(call) -> float:
        start = time.perf_counter()
        call()
        return (time.perf_counter() - start) * 1000

    bare = lambda: fetch(None, "/bench/bare/")  # noqa: E731
    rows = []
    for name, who, url in pages:
        status, count, size = fetch(who, url)
        page_ms, bare_ms = [], []
        for _ in range(SAMPLES):
            bare_ms.append(timed(bare))
            page_ms.append(timed(lambda who=who, url=url: fetch(who, url)))
        rows.append(
            (name, status, count, size, statistics.median(page_ms), statistics.median(bare_ms))
        )
    for name, path, query in api:
        status, count, size = fetch_api(path, query)
        page_ms, bare_ms = [], []
        for _ in range(SAMPLES):
            bare_ms.append(timed(bare))
            page_ms.append(timed(lambda path=path, query=query: fetch_api(path, query)))
        rows.append(
            (name, status, count, size, statistics.median(page_ms), statistics.median(bare_ms))
        )

    # The worker's retention pass (on every 1-second tick before session 18, once a minute
    # since). Alone: a whole tick would take the lease and start the seeded queued jobs. The
    # pass needs none of what Worker() sets up (cgroups, leftover processes).
    from jobs.worker import Worker

    worker = Worker.__new__(Worker)
    worker.expiry_failed = {}  # as Worker() starts it: no deletion has failed yet
    passes = []
    for _ in range(SAMPLES):
        worker.next_expiry_check = 0.0  # a look each time, as every tick looked before
        passes.append(timed(worker.delete_expired))
    width = max(len(r[0]) for r in rows)
    print(f"{Job.objects.count()} jobs; {mine} of scale-user's; {SAMPLES} samples a page")
    print(f"{'page'.ljust(width)}  status  queries  KB      median ms  x bare")
    for name, status, count, size, ms, bare_ms in rows:
        print(
            f"{name.ljust(width)}  {status:6}  {count:7}  {size / 1024:6.0f}  "
            f"{ms:9.1f}  {ms / bare_ms:7.0f}"
        )
    print(f"worker's retention pass: {statistics.median(passes):.1f} ms")
    if not keep:
        shutil.rmtree(var, ignore_errors=True)


if __name__ == "__main__":
    main()
