"""Training metrics (训练指标): the job page's status poll of a local job with Tensorboard on,
against the bare view and against the same poll of a job without Tensorboard, in one run.

The event files are written by tensorboardX (its own protobufs and CRC32C), as a training
script writes them: 10 scalar tags at each of 20,000 steps, a 2,000-value histogram every
third step and a 60 KB image every 50th, about 100 MB. Measured:
- reading that file in full, in-process (CPU seconds, MB/s);
- the first polls of a page opened on it: how many until the curves are complete;
- a status poll once it is read (nothing new), and one after each 100 new steps appended
  between polls (a job that trains on), alternated with the bare view.

Writing the file takes about a minute: tensorboardX computes its CRC32C in Python.

Run: .venv/bin/python bench/run.py tensorboard          (TB_STEPS=20000 TB_POLLS=30)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tensorboardX.event_file_writer import EventsWriter
from tensorboardX.proto.event_pb2 import Event
from tensorboardX.proto.summary_pb2 import Summary
from tensorboardX.summary import histogram, scalar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    BARE_URL,
    ROOT,
    console_server,
    logged_in_client,
    paired_ms,
    report,
)

STEPS = int(os.getenv("TB_STEPS", "20000"))
POLLS = int(os.getenv("TB_POLLS", "30"))
NEW_STEPS = 100
TAGS = 10
HTMX = {"HX-Request": "true"}


def _default_bins() -> list[float]:
    """SummaryWriter.add_histogram's default buckets (TensorFlow's), without its queue."""
    limit, positive = 1e-12, []
    while limit < 1e20:
        positive.append(limit)
        limit *= 1.1
    return [-b for b in reversed(positive)] + [0.0] + positive


BINS = _default_bins()
IMAGE = Summary(
    value=[
        Summary.Value(
            tag="samples",
            image=Summary.Image(
                height=140, width=140, colorspace=3, encoded_image_string=os.urandom(60_000)
            ),
        )
    ]
)


def write_steps(writer: EventsWriter, start: int, steps: int) -> None:
    """What a training loop writes for `steps` steps, flushed: tensorboardX's own writer
    without SummaryWriter's queue, so the events are in the file when this returns."""
    rng = np.random.default_rng(start)
    for step in range(start, start + steps):
        for n in range(TAGS):
            value = 1.0 / (step + 1) + n + rng.normal() * 0.01
            writer.write_event(
                Event(wall_time=time.time(), step=step, summary=scalar(f"m/{n}", value))
            )
        if step % 3 == 0:
            summary = histogram("weights", rng.normal(size=2000), BINS)
            writer.write_event(Event(wall_time=time.time(), step=step, summary=summary))
        if step % 50 == 0:
            writer.write_event(Event(wall_time=time.time(), step=step, summary=IMAGE))
    writer.flush()


# Jobs as the worker leaves them while they run: a local job on volume `work`, with
# Tensorboard on and off, and the run folder the state file is kept in.
SETUP = """
from jobs import spec as S
from jobs.logs import job_dir
from jobs.models import Job
owner = User.objects.get(username="bench")
for public_id, enable in [("pytorchjob-tb", True), ("pytorchjob-plain", False)]:
    spec = S.JobSpec(name=public_id[11:], resource_pool_id="local", image="python:3.12",
        command="python train.py", roles=[S.Role("master", 1)],
        datasources=[S.Datasource("hostpath", "work", mount_path="/workspace")],
        tensorboard=S.TensorboardConfig(enable=enable, log_path="/workspace/tb"))
    Job.objects.create(public_id=public_id, name=spec.name, owner=owner,
        spec=spec.to_document(), resource_pool="local", status="running")
    job_dir(public_id).mkdir(parents=True)
"""

# In a process of its own (Django configured there): the whole folder read at once.
READ_ALL = """
import os, sys, time
import django
django.setup()
from jobs import tensorboard as tb
folder = tb.LogFolder(mounted=sys.argv[1], path=sys.argv[2])
start = time.process_time()
state, pending = tb.read_state(folder, state_dir=None, seconds=3600)
cpu = time.process_time() - start
assert pending == 0 and len(state["runs"]["."]["tags"]) == int(sys.argv[3]), state
print(cpu)
"""


def read_all(env: dict[str, str], volume: Path, logs: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", READ_ALL, str(volume), str(logs), str(TAGS)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-tb-") as tmp:
        volume = Path(tmp) / "work"
        logs = volume / "tb"
        logs.mkdir(parents=True)
        started = time.perf_counter()
        write_steps(EventsWriter(str(logs / "events")), 0, STEPS)
        size = sum(path.stat().st_size for path in logs.iterdir())
        print(
            f"event file: {size / 1e6:.1f} MB, {STEPS} steps "
            f"(written by tensorboardX in {time.perf_counter() - started:.0f} s)"
        )
        with console_server(extra_env={"LOCAL_VOLUMES": f"work={volume}"}, setup=SETUP) as (
            base,
            env,
        ):
            cpu = read_all(env, volume, logs)
            print(f"read in full, in-process: {cpu:.2f} s CPU, {size / 1e6 / cpu:.1f} MB/s")

            client = logged_in_client(base)
            tb_url, plain_url = "/jobs/pytorchjob-tb/live/", "/jobs/pytorchjob-plain/live/"
            # A page opened on the file: each poll reads for at most READ_SECONDS.
            polls, took = 0, 0.0
            while True:
                start = time.perf_counter()
                r = client.get(tb_url, headers=HTMX)
                took += time.perf_counter() - start
                polls += 1
                assert r.status_code == 200, r.status_code
                if 'id="metrics-pending"' not in r.text:
                    break
            print(
                f"first read through the status poll: {polls} polls, {took:.1f} s of requests "
                f"(the page polls every 2 s: complete after about {2 * (polls - 1)} s)"
            )
            assert f"m/{TAGS - 1}" in r.text

            plain_ms, plain_base = paired_ms(client, plain_url, n=100, headers=HTMX)
            tb_ms, tb_base = paired_ms(client, tb_url, n=100, headers=HTMX)

            # A job that trains on: 100 new steps (about 1,000 records) before each poll,
            # written by a live writer (a second file, as the job's current one).
            writer = EventsWriter(str(logs / "events"))
            grown, base_grown = [], []
            for n in range(POLLS):
                write_steps(writer, STEPS + n * NEW_STEPS, NEW_STEPS)
                start = time.perf_counter()
                client.get(BARE_URL)
                middle = time.perf_counter()
                r = client.get(tb_url, headers=HTMX)
                end = time.perf_counter()
                assert r.status_code == 200 and 'id="metrics-pending"' not in r.text
                base_grown.append((middle - start) * 1000)
                grown.append((end - middle) * 1000)
            writer.close()
            new = statistics.median(grown)
            report(
                [
                    ("bare view", plain_base, 1.0),
                    ("status poll, no Tensorboard", plain_ms, plain_ms / plain_base),
                    ("status poll, Tensorboard, all read", tb_ms, tb_ms / tb_base),
                    (
                        f"status poll, {NEW_STEPS} new steps since the last",
                        new,
                        new / statistics.median(base_grown),
                    ),
                ]
            )


if __name__ == "__main__":
    main()
