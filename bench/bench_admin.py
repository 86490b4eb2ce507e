"""The review admin's job list and a user's job list at 1,000 and at 100,000 jobs.

Target: each page at 100k within 1.3x of the same page at 1k (same server, same run).
The benchmark user is a superuser who owns every job, the worst case for both pages.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time

import httpx
from common import BARE_URL, ROOT, console_server, logged_in_client, report

TARGET = 1.3
SAMPLES = 100

SETUP = """
User.objects.filter(username='bench').update(is_staff=True, is_superuser=True)
"""

# Adds N jobs with bulk_create: three pools, three queues per pool, every status, creation
# times spread over 90 days (auto_now_add is switched off so the given times are kept).
GROW = """
import sys, uuid
from datetime import timedelta
import django
django.setup()
from django.contrib.auth.models import User
from django.utils import timezone
from jobs import spec as S
from jobs.models import Job, JobStatus

n = int(sys.argv[1])
owner = User.objects.get(username="bench")
spec = S.JobSpec(
    name="bench-job", resource_pool_id="pool-0", image="python:3.12", command="python train.py",
    roles=[S.Role("master", 1, "baidu.com/a800_80g_cgpu", 8), S.Role("worker", 3, "baidu.com/a800_80g_cgpu", 8)],
    envs=[S.Env("LR", "0.001"), S.Env("TOKEN", "secret", secret=True)],
)
document = spec.to_document()
Job._meta.get_field("created_at").auto_now_add = False
now = timezone.now()
statuses = list(JobStatus.values)
start = Job.objects.count()
batch = []
for i in range(start, start + n):
    batch.append(Job(
        public_id=f"pytorchjob-{uuid.uuid4()}", name=f"bench-{i}", owner=owner, spec=document,
        framework=S.PYTORCH, status=statuses[i % len(statuses)], resource_pool=f"pool-{i % 3}",
        queue=f"queue-{i % 3}", priority=S.PRIORITIES[i % 3], total_cards=8 * (1 + i % 4),
        created_at=now - timedelta(minutes=(i * 1.3) % (90 * 24 * 60)),
    ))
    if len(batch) == 5000:
        Job.objects.bulk_create(batch)
        batch = []
Job.objects.bulk_create(batch)
"""

PAGES = {"admin job list": "/admin/jobs/job/", "user's job list": "/"}


def grow(env: dict[str, str], n: int) -> None:
    subprocess.run([sys.executable, "-c", GROW, str(n)], cwd=ROOT, env=env, check=True)


def interleaved_ms(clients: list[httpx.Client], url: str) -> list[float]:
    """Median ms of `url` on each server, requests alternating between them so that load
    from elsewhere on the machine weighs on both alike."""
    samples: list[list[float]] = [[] for _ in clients]
    for _ in range(10):
        for client in clients:
            client.get(url)
    for _ in range(SAMPLES):
        for client, times in zip(clients, samples, strict=True):
            start = time.perf_counter()
            r = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
            assert r.status_code == 200, (url, r.status_code)
    return [statistics.median(times) for times in samples]


def main() -> None:
    # Two servers, one with 1,000 jobs and one with 100,000, measured side by side.
    with (
        console_server(setup=SETUP) as (small_base, small_env),
        console_server(setup=SETUP) as (large_base, large_env),
    ):
        grow(small_env, 1_000)
        grow(large_env, 100_000)
        clients = [logged_in_client(small_base), logged_in_client(large_base)]
        bare = interleaved_ms(clients, BARE_URL)
        pages = {name: interleaved_ms(clients, url) for name, url in PAGES.items()}
    for env in (small_env, large_env):
        shutil.rmtree(env["CONSOLE_VAR_DIR"], ignore_errors=True)  # 100k jobs take ~160 MB

    rows = []
    for i, label in enumerate(("1k", "100k")):
        for name, (ms) in pages.items():
            rows.append((f"{name} @ {label}", ms[i], ms[i] / bare[i]))
    report(rows)
    print()
    worst = 0.0
    for name, (small, large) in pages.items():
        growth = large / small
        worst = max(worst, growth)
        print(f"{name}: 100k / 1k = {growth:.2f}x (target <= {TARGET}x)")
    print("OK" if worst <= TARGET else "OVER TARGET")


if __name__ == "__main__":
    main()
