"""Local runner benchmarks: submit-to-running latency with a real worker, one scheduling
pass over 10,000 queued jobs, the tail of a 1 GB log against a 1 MB log, and the job pages
against the bare view."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BARE_URL, ROOT, console_server, logged_in_client, median_ms, report

JOBS = 10

SUBMIT_AND_WAIT = """
import django, statistics, sys, time
django.setup()
from django.contrib.auth.models import User
from jobs import spec as S
from jobs.models import Job
from jobs.services import jobs_submit
owner = User.objects.create_user("bench-runner")
latencies = []
for n in range(int(sys.argv[1])):
    spec = S.JobSpec(name=f"lat-{n}", resource_pool_id="local", image="python:3.12",
        command="echo ready", roles=[S.Role("master", 1), S.Role("worker", 1)])
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=f"lat-{n}")
    while True:
        job.refresh_from_db()
        if job.is_final:
            break
        time.sleep(0.01)
    assert job.status == "succeeded", job.status
    latencies.append((job.started_at - job.created_at).total_seconds() * 1000)
print(statistics.median(latencies), max(latencies))
"""

SCHEDULING_PASS = """
import django, statistics, time, uuid
django.setup()
from django.contrib.auth.models import User
from jobs import spec as S
from jobs.models import Job, JobStatus, LocalRun
from jobs.scheduler import dispatch_local, queue_position
owner = User.objects.create_user("bench-sched")
card = "baidu.com/a800_80g_cgpu"
spec = S.JobSpec(name="queued", resource_pool_id="local", image="python:3.12", command="true",
    roles=[S.Role("master", 1, card, 2)])
doc = spec.to_document()
priorities = ["high", "normal", "low"]
Job.objects.bulk_create(
    Job(public_id=f"pytorchjob-{uuid.uuid4()}", name="queued", owner=owner, spec=doc,
        resource_pool="local", queue=f"q{i % 10}", priority=priorities[i % 3], total_cards=2)
    for i in range(10_000)
)
# One running job holds both cards, so the pass must walk the queues and start nothing.
holder = Job.objects.create(public_id="pytorchjob-holder", name="holder", owner=owner, spec=doc,
    resource_pool="local", status=JobStatus.RUNNING, total_cards=2)
LocalRun.objects.create(job=holder, devices={card: [0, 1]})
samples = []
for _ in range(5):
    start = time.perf_counter()
    started = dispatch_local()
    samples.append((time.perf_counter() - start) * 1000)
    assert started == []
last = Job.objects.filter(status=JobStatus.QUEUED).order_by("created_at").last()
start = time.perf_counter()
position = queue_position(last)
position_ms = (time.perf_counter() - start) * 1000
print(statistics.median(samples), position_ms, position)
"""


def run_django(env: dict[str, str], script: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def django_env(var: str, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "CONSOLE_VAR_DIR": var,
        "LOG_LEVEL": "WARNING",
        **extra,
    }
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return env


def bench_latency(poll: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as var:
        env = django_env(var, WORKER_POLL_SECONDS=poll)
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "worker"], cwd=ROOT, env=env, start_new_session=True
        )
        try:
            median, worst = run_django(env, SUBMIT_AND_WAIT, str(JOBS)).split()
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
        return float(median), float(worst)


def bench_scheduling() -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory(prefix="bench-sched-") as var:
        env = django_env(var, LOCAL_ACCELERATORS="baidu.com/a800_80g_cgpu=2")
        median, position_ms, position = run_django(env, SCHEDULING_PASS).split()
        return float(median), float(position_ms), int(position)


def bench_tail() -> tuple[float, float]:
    from jobs.logs import tail_lines

    lines = b"".join(
        f"2026-01-01T00:00:00.{i:06d}Z step {i} loss 0.{i:04d}\n".encode() for i in range(2000)
    )
    with tempfile.TemporaryDirectory(prefix="bench-tail-") as tmp:
        big, small = Path(tmp) / "big.log", Path(tmp) / "small.log"
        with open(big, "wb") as f:  # 1 GB, sparse except for its last lines
            f.truncate(1024**3 - len(lines))
            f.seek(0, os.SEEK_END)
            f.write(lines)
        with open(small, "wb") as f:
            f.write(lines * (1024**2 // len(lines) + 1))
        results = []
        for path in (big, small):
            assert len(tail_lines(path, 200)) == 200
            samples = []
            for _ in range(300):
                start = time.perf_counter()
                tail_lines(path, 200)
                samples.append((time.perf_counter() - start) * 1000)
            results.append(statistics.median(samples))
        return results[0], results[1]


PAGES_SETUP = """
import uuid
from django.contrib.auth.models import User
from jobs import spec as S
from jobs.models import Job
owner = User.objects.get(username="bench")
spec = S.JobSpec(name="page", resource_pool_id="local", image="python:3.12", command="true",
    roles=[S.Role("master", 1), S.Role("worker", 2)])
doc = spec.to_document()
Job.objects.bulk_create(
    Job(public_id=f"pytorchjob-{i:06d}", name=f"page-{i}", owner=owner, spec=doc,
        resource_pool="local", status="failed" if i % 2 else "queued")
    for i in range(5000)
)
"""


def bench_pages() -> list[tuple[str, float, float]]:
    with console_server(setup=PAGES_SETUP) as (base, _env):
        client = logged_in_client(base)
        bare = median_ms(client, BARE_URL)
        rows = [("bare view", bare, 1.0)]
        for name, url, headers in [
            ("job list (5,000 jobs)", "/", None),
            ("job list, htmx poll", "/", {"HX-Request": "true"}),
            ("job detail (queued, position)", "/jobs/pytorchjob-004998/", None),
        ]:
            ms = median_ms(client, url, n=100, headers=headers)
            rows.append((name, ms, ms / bare))
        return rows


if __name__ == "__main__":
    for poll in ("1", "0.1"):
        median, worst = bench_latency(poll)
        print(
            f"submit-to-running (worker poll {poll} s, {JOBS} jobs of 2 replicas): "
            f"median {median:.0f} ms, worst {worst:.0f} ms"
        )
    pass_ms, position_ms, position = bench_scheduling()
    print(f"one scheduling pass over 10,000 queued jobs (10 queues, none fits): {pass_ms:.1f} ms")
    print(f"queue position of the last of them (#{position}): {position_ms:.1f} ms")
    big, small = bench_tail()
    print(
        f"tail of 200 lines: 1 GB log {big:.3f} ms, 1 MB log {small:.3f} ms "
        f"(ratio {big / small:.2f})"
    )
    report(bench_pages())
