"""Compare jobs (对比任务): the comparison of 8 local jobs (jobs.compare.MAX_COMPARED; CMP_JOBS
for another number) with Tensorboard on, against the bare
view and against one of the jobs' own pages, in one run.

Each job has 10 scalar tags at each of 2,000 steps in event files written by tensorboardX
(one file, written once and copied to each job's log path: the same bytes to read). Measured:
- the first request of the comparison (each job's files never read before): how many until
  every job is read (each request reads each job for at most 0.3 s);
- the comparison once read (a second look: each job's state and drawn lines kept), linear and
  on a log axis, and one job's page, alternated with the bare view; and the page's size.

Run: .venv/bin/python bench/run.py compare          (CMP_STEPS=2000 CMP_N=100 CMP_JOBS=8)
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tensorboardX.event_file_writer import EventsWriter
from tensorboardX.proto.event_pb2 import Event
from tensorboardX.summary import scalar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import console_server, logged_in_client, paired_ms, report  # noqa: E402

STEPS = int(os.getenv("CMP_STEPS", "2000"))
N = int(os.getenv("CMP_N", "100"))
TAGS = 10
JOBS = int(os.getenv("CMP_JOBS", "8"))
PENDING = "still reading its event files"

# Local jobs on volume `work`, each with Tensorboard on at its own log path, and the run
# folder its state file is kept in (as the worker leaves them).
SETUP = f"""
from jobs import spec as S
from jobs.logs import job_dir
from jobs.models import Job
owner = User.objects.get(username="bench")
for n in range({JOBS}):
    spec = S.JobSpec(name=f"lr-{{n}}", resource_pool_id="local", image="python:3.12",
        command=f"python train.py --lr 0.{{n}}1", roles=[S.Role("master", 1)],
        datasources=[S.Datasource("hostpath", "work", mount_path="/workspace")],
        tensorboard=S.TensorboardConfig(enable=True, log_path=f"/workspace/tb-{{n}}"))
    Job.objects.create(public_id=f"pytorchjob-cmp-{{n}}", name=spec.name, owner=owner,
        spec=spec.to_document(), resource_pool="local", status="running")
    job_dir(f"pytorchjob-cmp-{{n}}").mkdir(parents=True)
"""


def write_events(folder: Path) -> None:
    """A training loop's scalars: TAGS tags at each of STEPS steps, tensorboardX's own writer."""
    writer = EventsWriter(str(folder / "events"))
    for step in range(STEPS):
        for n in range(TAGS):
            value = 1.0 / (step + 1) + n + (step % 7) * 0.001
            writer.write_event(
                Event(wall_time=time.time(), step=step, summary=scalar(f"m/{n}", value))
            )
    writer.close()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-cmp-") as tmp:
        volume = Path(tmp) / "work"
        first = volume / "tb-0"
        first.mkdir(parents=True)
        write_events(first)
        for n in range(1, JOBS):
            shutil.copytree(first, volume / f"tb-{n}")
        size = sum(path.stat().st_size for path in first.iterdir())
        print(f"event files: {JOBS} x {size / 1e6:.1f} MB, {TAGS} tags x {STEPS} steps each")
        with console_server(extra_env={"LOCAL_VOLUMES": f"work={volume}"}, setup=SETUP) as (
            base,
            _env,
        ):
            client = logged_in_client(base)
            client.cookies.set("django_language", "en")  # PENDING is read in English
            url = "/compare/?" + "&".join(f"job=pytorchjob-cmp-{n}" for n in range(JOBS))
            took = []
            while True:
                start = time.perf_counter()
                r = client.get(url)
                took.append((time.perf_counter() - start) * 1000)
                assert r.status_code == 200 and "Training metrics" in r.text, r.status_code
                if PENDING not in r.text:
                    break
            print(
                f"first look (never read): {len(took)} requests until every job is read: "
                + ", ".join(f"{ms:.0f} ms" for ms in took)
            )
            assert r.text.count('class="col-md-6 col-xl-4 mb-0 compare-metric"') == TAGS
            page_kb = len(r.content) / 1000
            log_kb = len(client.get(url + "&scale=log").content) / 1000
            job_kb = len(client.get("/jobs/pytorchjob-cmp-0/").content) / 1000

            compare_ms, compare_base = paired_ms(client, url, n=N)
            log_ms, log_base = paired_ms(client, url + "&scale=log", n=N)
            job_ms, job_base = paired_ms(client, "/jobs/pytorchjob-cmp-0/", n=N)
            report(
                [
                    ("bare view", compare_base, 1.0),
                    (f"one job's page ({job_kb:.0f} KB)", job_ms, job_ms / job_base),
                    (
                        f"compare {JOBS} jobs, read ({page_kb:.0f} KB)",
                        compare_ms,
                        compare_ms / compare_base,
                    ),
                    (f"compare {JOBS} jobs, log axis ({log_kb:.0f} KB)", log_ms, log_ms / log_base),
                ]
            )


if __name__ == "__main__":
    main()
