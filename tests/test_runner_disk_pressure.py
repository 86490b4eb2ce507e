"""Several replicas within their own /tmp caps can still fill the disk together, and with it
the console's database and logs: the local runner guards the disk of LOCAL_RUN_DIR as the
kubelet guards a node's. Below LOCAL_DISK_MIN_FREE_GB free no job starts (it waits, saying
why, and starts once there is room); below LOCAL_DISK_EVICT_FREE_GB the replica holding the
most in /tmp is evicted, one at a time.

Real jobs on a real, small disk: a tmpfs of a few MB mounted for the test (as root), whose
statvfs is as honest as a disk's, holds the run folder, so the test fills and frees it."""

from __future__ import annotations

import contextlib
import html
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.models import JobReplica, JobStatus
from jobs.runner import run_dir_disk
from jobs.worker import Worker

from .runner_helpers import (
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)
from .test_api import alice_key, api, wsgi  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")

MB = 1024 * 1024
GB = 1024**3


@pytest.fixture
def small_disk(runner_settings, tmp_path) -> Iterator[Path]:  # noqa: F811
    """A 64 MB file system (tmpfs) holding LOCAL_RUN_DIR; the stored texts in English."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(disk)], check=True)
    runner_settings.LOCAL_RUN_DIR = disk / "runs"
    runner_settings.LANGUAGE_CODE = "en"
    runner_settings.LOCAL_TMP_MAX_GB = 1  # more than the disk: only the disk's limits act
    runner_settings.LOCAL_TMP_CHECK_SECONDS = 0.1
    # Where /healthz calls the disk full, which holds every start too: well under what the
    # tests leave free, but for those that set it.
    runner_settings.HEALTH_DISK_FREE_MB = 1
    yield disk
    # The replicas first (runner_settings would only end them after this), then the disk.
    for replica in JobReplica.objects.exclude(pid=None):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(replica.pid, signal.SIGKILL)
    subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.fixture(autouse=True)
def console_language_after():
    yield
    translation.deactivate()


def whole_lines(log: Path) -> bytes:
    """A log's whole lines: the part of a line the full disk took (the rest of a block the file
    holds) is there until the shim cuts it back, and may be again at the job's next line."""
    data = log.read_bytes()
    return data[: data.rfind(b"\n") + 1]


def fill(disk: Path, *, leave: int) -> Path:
    """A file taking all of the disk's free space but `leave` bytes."""
    filler = disk / "filler"
    with open(filler, "wb") as out:
        out.write(b"\0" * (run_dir_disk().free - leave))
    return filler


HELD = re.compile(
    r"Waiting for disk space: the disk of the run folder has (0\.\d+) GB free, under the "
    r"0\.0156 GB a job needs to start \(LOCAL_DISK_MIN_FREE_GB\)\. It starts by itself "
    r"once there is room\."
)


def test_a_job_waits_queued_while_the_disk_is_low_saying_so_once_and_starts_once_room_is_freed(
    alice, alice_client, small_disk, settings
):
    settings.LOCAL_DISK_MIN_FREE_GB = 16 * MB / GB
    settings.LOCAL_DISK_EVICT_FREE_GB = 0
    filler = fill(small_disk, leave=10 * MB)
    job = submit(alice, make_spec("echo started-at-last"))
    worker = Worker()

    deadline = time.monotonic() + 1.5  # many ticks (0.1 s polls)
    while time.monotonic() < deadline:
        worker.tick()
        time.sleep(0.05)

    assert status_of(job) == JobStatus.QUEUED
    [event] = job.events.filter(reason="DiskPressure")  # once, not once a tick
    found = HELD.fullmatch(event.message)
    assert found, event.message
    assert 8 * MB / GB < float(found.group(1)) < 11 * MB / GB
    assert event.type == "Warning"
    assert not job.replicas.exists()
    alice_client.cookies["django_language"] = "en"
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert "Waiting for disk space" in page and found.group(0) in page

    filler.unlink()
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert "started-at-last" in log_text(job, "master-0")
    reasons = list(job.events.values_list("reason", flat=True))
    assert reasons.index("DiskPressure") < reasons.index("Started")
    assert reasons.count("DiskPressure") == 1


EVICTED = re.compile(
    r"Evicted: the disk of the run folder had (0\.\d+) GB free, under the 0\.0234 GB limit "
    r"\(LOCAL_DISK_EVICT_FREE_GB\); master-0 held (0\.\d+) GB in /tmp, the most of any "
    r"running replica\."
)


def test_a_replica_filling_the_disk_past_the_hard_threshold_is_evicted_and_the_others_run_on(
    alice, small_disk, settings
):
    settings.LOCAL_DISK_MIN_FREE_GB = 40 * MB / GB
    settings.LOCAL_DISK_EVICT_FREE_GB = 24 * MB / GB
    # Both start with the disk nearly empty; then the big one writes 44 MB into its /tmp,
    # which leaves less than 24 MB of the 64 free, while the small one holds 1 MB.
    big = submit(
        alice,
        make_spec(
            "until [ -e /workspace/fill ]; do sleep 0.05; done; "
            "head -c 44000000 /dev/zero > /tmp/big; echo filled; sleep 60"
        ),
    )
    small = submit(
        alice,
        make_spec(f"head -c 1000000 /dev/urandom > /tmp/small; echo ready; {UNTIL_THE_GATE_OPENS}"),
    )
    worker = Worker()
    run_until(worker, lambda: "ready" in log_text(small, "master-0"), what="the small job")
    assert status_of(big) == JobStatus.RUNNING
    (Path(settings.LOCAL_VOLUMES.split("=", 1)[1]) / "fill").touch()

    run_until(worker, lambda: status_of(big) == JobStatus.FAILED, timeout=20)

    found = EVICTED.fullmatch(big.status_reason)
    assert found, big.status_reason
    assert float(found.group(1)) < 24 * MB / GB
    assert 1 * MB / GB < float(found.group(2)) < 42 * MB / GB  # what /tmp held when measured
    event = big.events.get(reason="ReplicaFailed")
    assert event.message == big.status_reason and event.type == "Warning"
    assert big.replicas.get().status == "failed"
    # Its /tmp is freed, and the disk measured again: nothing else is evicted.
    assert run_dir_disk().free > 24 * MB
    for _ in range(10):
        worker.tick()
        time.sleep(0.05)
    assert status_of(small) == JobStatus.RUNNING
    assert not small.events.filter(reason="ReplicaFailed").exists()
    open_gate(settings)
    run_until(worker, lambda: status_of(small) == JobStatus.SUCCEEDED)


def test_an_evicted_job_with_fault_tolerance_restarts_with_its_tmp_freed(
    alice, small_disk, settings
):
    settings.LOCAL_DISK_MIN_FREE_GB = 40 * MB / GB
    settings.LOCAL_DISK_EVICT_FREE_GB = 24 * MB / GB
    spec = make_spec(
        'echo "tmp holds $(ls -A /tmp | wc -l) files"; '
        "head -c 44000000 /dev/zero > /tmp/big; sleep 60",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
    )
    job = submit(alice, spec)
    worker = Worker()

    run_until(worker, lambda: status_of(job) == JobStatus.FAILED, timeout=30)

    assert job.restarts == 1
    restarted = job.events.get(reason="Restarted").message
    assert EVICTED.search(restarted), restarted
    # Its restart used up (QA 38: the reason says so).
    used_up = job.status_reason.removesuffix(" (fault-tolerance restarts used up: 1 of 1)")
    assert used_up != job.status_reason and EVICTED.fullmatch(used_up), job.status_reason
    assert log_text(job, "master-0").count(" tmp holds 0 files\n") == 2
    assert run_dir_disk().free > 60 * MB  # every attempt's /tmp removed


@pytest.fixture
def few_inodes(runner_settings, tmp_path) -> Iterator[Path]:  # noqa: F811
    """A file system (tmpfs) of 64 MB but only 1,000 inodes holding LOCAL_RUN_DIR; the byte
    thresholds set far below what it has free, so only its inodes can run short."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m,nr_inodes=1000", "tmpfs", str(disk)], check=True
    )
    runner_settings.LOCAL_RUN_DIR = disk / "runs"
    runner_settings.LANGUAGE_CODE = "en"
    runner_settings.LOCAL_TMP_MAX_GB = 1
    runner_settings.LOCAL_TMP_CHECK_SECONDS = 0.1
    runner_settings.LOCAL_DISK_MIN_FREE_GB = 1 * MB / GB
    runner_settings.LOCAL_DISK_EVICT_FREE_GB = 0.5 * MB / GB
    runner_settings.HEALTH_DISK_FREE_MB = 0
    yield disk
    for replica in JobReplica.objects.exclude(pid=None):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(replica.pid, signal.SIGKILL)
    subprocess.run(["umount", "-l", str(disk)], check=True)


HELD_FOR_INODES = re.compile(
    r"Waiting for disk space: the disk of the run folder can hold (\d+) more files and "
    r"folders \(inodes\) of its 1000, under the 10% a job needs to start\. It starts by "
    r"itself once there is room\."
)


def test_a_job_waits_queued_while_the_disk_is_short_of_inodes_and_starts_once_files_go(
    alice, alice_client, few_inodes
):
    """Medium (security round 16): the disk's guard counted only bytes, and empty files hold
    none: a disk out of inodes started jobs that could not make their own files."""
    filler = few_inodes / "filler"
    filler.mkdir()
    while (free := os.statvfs(few_inodes).f_favail) >= 50:
        (filler / str(free)).touch()
    job = submit(alice, make_spec("echo started-at-last"))
    worker = Worker()

    for _ in range(10):
        worker.tick()
        time.sleep(0.05)

    assert status_of(job) == JobStatus.QUEUED
    [event] = job.events.filter(reason="DiskPressure")
    found = HELD_FOR_INODES.fullmatch(event.message)
    assert found, event.message
    assert int(found.group(1)) < 100
    alice_client.cookies["django_language"] = "en"
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert "can hold" in page and "(inodes) of its 1000" in page

    subprocess.run(["rm", "-rf", str(filler)], check=True)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert "started-at-last" in log_text(job, "master-0")


EVICTED_FOR_INODES = re.compile(
    r"Evicted: the disk of the run folder could hold (\d+) more files and folders \(inodes\) "
    r"of its 1000, under the 5% limit; master-0 held (\d+) in /tmp, the most of any running "
    r"replica\."
)


def test_a_replica_using_up_the_disks_inodes_is_evicted_though_its_files_hold_no_bytes(
    alice, few_inodes, settings
):
    """High (security round 16): empty files count nothing against LOCAL_TMP_MAX_GB nor the
    disk's free bytes, so a job could use up the inodes of the disk holding the database
    and the logs. Below 5% of them free, the replica holding the most entries goes."""
    big = submit(
        alice,
        make_spec(
            "until [ -e /workspace/fill ]; do sleep 0.05; done; "
            "for i in $(seq 1000); do : > /tmp/empty-$i 2>/dev/null; done; echo filled; sleep 60"
        ),
    )
    small = submit(
        alice, make_spec(f": > /tmp/one; : > /tmp/two; echo ready; {UNTIL_THE_GATE_OPENS}")
    )
    worker = Worker()
    run_until(worker, lambda: "ready" in log_text(small, "master-0"), what="the small job")
    assert status_of(big) == JobStatus.RUNNING
    (Path(settings.LOCAL_VOLUMES.split("=", 1)[1]) / "fill").touch()

    run_until(worker, lambda: status_of(big) == JobStatus.FAILED, timeout=20)

    found = EVICTED_FOR_INODES.fullmatch(big.status_reason)
    assert found, big.status_reason
    assert int(found.group(1)) < 50 and int(found.group(2)) > 100
    assert big.replicas.get().status == "failed"
    assert os.statvfs(few_inodes).f_favail > 500  # its /tmp removed
    for _ in range(10):
        worker.tick()
        time.sleep(0.05)
    assert status_of(small) == JobStatus.RUNNING
    open_gate(settings)
    run_until(worker, lambda: status_of(small) == JobStatus.SUCCEEDED)


def test_an_eviction_waits_for_ended_jobs_files_only_while_their_removal_frees_the_disk(
    alice, small_disk, settings
):
    """Medium (review 16): every eviction waited while LOCAL_RUN_DIR/discarded/ held anything,
    so a job keeping it full (ending jobs of many files one after another) held evictions off
    while another replica filled the disk. It waits one tick, then while the removal frees."""
    from jobs.runner import evict_for_disk_pressure, remove_discarded

    settings.LOCAL_DISK_MIN_FREE_GB = 40 * MB / GB
    settings.LOCAL_DISK_EVICT_FREE_GB = 24 * MB / GB
    big = submit(
        alice,
        make_spec(
            "until [ -e /workspace/fill ]; do sleep 0.05; done; "
            "head -c 44000000 /dev/zero > /tmp/big; echo filled; sleep 60"
        ),
    )
    worker = Worker()
    run_until(worker, lambda: status_of(big) == JobStatus.RUNNING, what="the job")
    # What ended jobs left, still to be removed: two files of 2 MB.
    discarded = settings.LOCAL_RUN_DIR / "discarded"
    for name in ("first", "second"):
        (discarded / name).mkdir(parents=True)
        (discarded / name / "data").write_bytes(b"\1" * 2 * MB)
    (Path(settings.LOCAL_VOLUMES.split("=", 1)[1]) / "fill").touch()
    deadline = time.monotonic() + 20
    while "filled" not in log_text(big, "master-0"):
        assert time.monotonic() < deadline, "the job never filled its /tmp"
        time.sleep(0.05)
    assert run_dir_disk().free < 24 * MB

    assert evict_for_disk_pressure() is None  # the first tick waits for the removal
    remove_discarded(2)  # one of the two folders (its file, then itself): 2 MB freed
    assert len(os.listdir(discarded)) == 1
    assert evict_for_disk_pressure() is None  # it freed some: waiting on
    evicted = evict_for_disk_pressure()  # no removal since: nothing freed, so no more waiting

    assert evicted is not None and evicted.job_id == big.pk
    run_until(worker, lambda: status_of(big) == JobStatus.FAILED, timeout=20)
    assert EVICTED.fullmatch(big.status_reason), big.status_reason


def test_a_standalone_job_is_refused_at_submit_while_the_disk_is_low_and_let_in_once_freed(
    alice, small_disk, settings, tmp_path
):
    """The scheduler holds every job below LOCAL_DISK_MIN_FREE_GB, and a standalone job must
    not wait: it was let in, then waited Queued for disk space (left28). Now it is refused
    at its submission step, saying why with the numbers; a queue task is let in to wait."""
    from django.test import Client

    from jobs import wizard as W
    from jobs.models import Job
    from tests.test_wizard import (
        A800,
        complete_steps,
        field_errors,
        new_draft,
        post_step,
        submission_data,
    )

    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    settings.LOCAL_DISK_MIN_FREE_GB = 16 * MB / GB
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(alice)
    filler = fill(small_disk, leave=10 * MB)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.SUBMISSION)

    refused = post_step(client, draft, W.SUBMISSION, submission_data())

    assert refused.status_code == 200
    [said] = field_errors(refused, "id_mode")
    found = re.fullmatch(
        r"The disk of the local pool's run folder has (0\.\d+) GB free, under the 0\.0156 GB a "
        r"job needs to start \(LOCAL_DISK_MIN_FREE_GB\), and a standalone job must start at "
        r"once\. Submit it as a queue task, which waits for disk space, or submit it again "
        r"once space is freed\.",
        said,
    )
    assert found, said
    assert 8 * MB / GB < float(found.group(1)) < 11 * MB / GB
    assert 'value="standalone"' in refused.content.decode()  # the choice made is kept
    assert not Job.objects.filter(owner=alice).exists()
    filler.unlink()
    assert post_step(client, draft, W.SUBMISSION, submission_data()).status_code == 302
    submitted = client.post(reverse("wizard-submit", args=[draft.id]))
    assert submitted.status_code == 302
    assert Job.objects.get(owner=alice).status == JobStatus.QUEUED


def test_a_job_printing_while_its_logs_disk_is_full_runs_on_and_its_log_says_what_was_not_written(
    alice, small_disk, settings
):
    # QA 69: the first log line the full disk refused ended the replica's supervisor, and the
    # job with it (its output pipe closed): it failed as "lost (process ended without an exit
    # code)", saying nothing of the disk, and its log ended in half a line.
    padding = "x" * 300
    job = submit(
        alice,
        make_spec(
            "i=0; until [ -e /workspace/gate-open ]; do i=$((i+1)); "
            f"echo line-$i-{padding}; sleep 0.005; done; echo after-the-gate"
        ),
    )
    worker = Worker()
    run_until(worker, lambda: "line-20-" in log_text(job, "master-0"), what="its first lines")
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:  # to its last block, whatever the job writes meanwhile
            out.write(b"\0" * 4096)
    full_until = time.monotonic() + 2
    while time.monotonic() < full_until:  # the job prints on, a line each few ms
        worker.tick()
        time.sleep(0.05)
    filler.unlink()
    run_until(
        worker,
        lambda: "line-" in log_text(job, "master-0").partition("could not be written")[2],
        what="a line written after the disk was freed",
    )
    open_gate(settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="its end")

    lines = log_text(job, "master-0").splitlines()
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z "
    whole = re.compile(rf"{stamp}(\x1f\[console\] .*|line-\d+-{padding}|after-the-gate)")
    assert [line for line in lines if not whole.fullmatch(line)] == []  # no half line
    [said] = [line for line in lines if "could not be written" in line]
    found = re.fullmatch(
        rf"{stamp}\x1f\[console\] (\d+) bytes of output could not be written to the log "
        r"here: No space left on device",
        said,
    )
    assert found, said
    numbers = [int(line.split("line-")[1].split("-")[0]) for line in lines if "line-" in line]
    where = lines.index(said)
    before, after = (int(lines[where + step].split("line-")[1].split("-")[0]) for step in (-1, 1))
    missing = range(before + 1, after)
    # A gap there, and only there (how many lines fell in it depends on how often the job ran
    # in those 2 s: on a loaded machine, few).
    assert len(missing) > 0 and numbers == sorted(set(numbers))
    assert numbers[-1] - numbers[0] + 1 == len(numbers) + len(missing)
    # Each dropped line counted as the log would have held it: its stamp, the line, "\n".
    assert int(found.group(1)) == sum(28 + len(f"line-{n}-{padding}\n") for n in missing)


def test_a_job_ending_while_its_disk_is_full_keeps_its_exit_code_once_room_is_freed(
    alice, small_disk, settings
):
    # QA 69: the exit record the disk refused ended the supervisor without one, and a job that
    # succeeded was failed as "lost (process ended without an exit code)".
    job = submit(alice, make_spec(f"echo started; {UNTIL_THE_GATE_OPENS}; exit 0"))
    worker = Worker()
    run_until(worker, lambda: "started" in log_text(job, "master-0"), what="its start")
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 4096)
    open_gate(settings)  # the gate is on the job's volume, another disk
    full_until = time.monotonic() + 2
    while time.monotonic() < full_until:  # it has ended; its record waits for room
        worker.tick()
        time.sleep(0.05)
    assert status_of(job) == JobStatus.RUNNING
    filler.unlink()
    run_until(worker, lambda: status_of(job) != JobStatus.RUNNING, what="its end")

    assert status_of(job) == JobStatus.SUCCEEDED, job.status_reason
    assert job.replicas.get().exit_code == 0


def test_a_job_printing_while_its_logs_disk_is_full_is_not_taken_for_a_hang(
    alice, small_disk, settings
):
    # Hang detection reads when a replica's log was last written. A full disk refuses every
    # line (the shim drops them and says so later), yet the job is printing, not hanging: a
    # refused line still marks the log as written (the kernel stamps the file before finding
    # no room, and again as the shim truncates it back to its last whole line). A silent job
    # beside it on the same full disk is warned about, as any silent job.
    from django.db.models import F

    from jobs.logs import replica_log_path
    from jobs.models import LocalRun

    hang_detection = S.FaultToleranceConfig(
        enabled_hang_detection=True, hang_detection_timeout_minutes=1
    )
    padding = "x" * 300
    printing = submit(
        alice,
        make_spec(
            f"i=0; while :; do i=$((i+1)); echo line-$i-{padding}; sleep 0.005; done",
            fault_tolerance_config=hang_detection,
        ),
    )
    silent = submit(
        alice, make_spec("echo started; sleep 300", fault_tolerance_config=hang_detection)
    )
    worker = Worker()
    run_until(
        worker,
        lambda: (
            "line-20-" in log_text(printing, "master-0")
            and "started" in log_text(silent, "master-0")
        ),
        what="both jobs' first lines",
    )
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:  # to its last block, whatever the job writes meanwhile
            out.write(b"\0" * 4096)
    time.sleep(0.5)  # the lines in flight reach the full disk
    log = replica_log_path(printing.public_id, "master-0")
    kept = whole_lines(log)
    # Two minutes on, as far as hang detection can tell: each run started, and each log was
    # last written, two minutes ago (the threshold is one).
    LocalRun.objects.update(attempt_started_at=F("attempt_started_at") - timedelta(minutes=2))
    for job in (printing, silent):
        path = replica_log_path(job.public_id, "master-0")
        past = path.stat().st_mtime - 120
        os.utime(path, (past, past))
    # The job's next line (refused, as every line now) before the next look: right after the
    # clock was put back the silence is the test's, not the job's.
    deadline = time.monotonic() + 10
    while log.stat().st_mtime < time.time() - 60:
        assert time.monotonic() < deadline, "the refused lines left the log's time as it was"
        time.sleep(0.01)
    run_until(
        worker,
        lambda: silent.events.filter(reason="HangSuspected").exists(),
        what="the silent job's hang warning",
    )
    full_until = time.monotonic() + 2
    while time.monotonic() < full_until:  # the printing job prints on, nothing written
        worker.tick()
        time.sleep(0.05)

    assert whole_lines(log) == kept  # nothing it printed was written
    assert status_of(printing) == JobStatus.RUNNING
    assert not printing.events.filter(reason="HangSuspected").exists()
    filler.unlink()


def queue_group(owner, command: str, *, total: int) -> list:
    """A queue group of `total` tasks, all of which may run at once."""
    import uuid

    from jobs.services import jobs_submit

    spec = make_spec(command)
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=total, concurrency=total)
    spec.queue = "default"
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)


def filled_to_the_last_block(disk: Path) -> Path:
    filler = fill(disk, leave=0)
    with open(filler, "ab", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 4096)
    return filler


NO_ROOM = (
    r"Waiting for disk space: the file system of the run folder \(LOCAL_RUN_DIR\) had no room "
    r"left to make a job's folder as this one started \((0|0\.\d+) GB free now\)\. It starts "
    r"by itself once there is room\."
)


def test_jobs_whose_folder_the_full_disk_refuses_stay_queued_in_their_place_and_start_once_freed(
    alice, alice_client, small_disk, settings
):
    """High (qa112): a full LOCAL_RUN_DIR failed every new local job at once, "Started", then
    "StartFailed", then Failed "Could not start: [Errno 28] No space left on device", a queue
    group's tasks in turn. No threshold holds them here (all 0): the disk itself refuses the
    first one's folder, which is removed again, and it waits in its place, as for disk
    pressure, never marked Running."""
    from jobs.logs import job_dir
    from jobs.models import LocalRun

    settings.HEALTH_DISK_FREE_MB = 0
    group = queue_group(alice, "echo started-at-last", total=3)
    filler = filled_to_the_last_block(small_disk)
    worker = Worker()

    for _ in range(10):
        worker.tick()
        time.sleep(0.05)

    assert [status_of(job) for job in group] == [JobStatus.QUEUED] * 3
    [event] = [e for job in group for e in job.events.filter(reason="DiskPressure")]
    assert re.fullmatch(NO_ROOM, event.message), event.message
    assert event.type == "Warning"
    for job in group:
        reasons = set(job.events.values_list("reason", flat=True))
        assert not reasons & {"Started", "StartFailed", "Failed"}, reasons
        assert job.started_at is None
        assert not job_dir(job.public_id).exists()  # the half-made folder removed
    assert not LocalRun.objects.exists() and not JobReplica.objects.exists()
    alice_client.cookies["django_language"] = "en"
    held = event.job
    page = alice_client.get(reverse("job-detail", args=[held.public_id])).content.decode()
    assert re.search(NO_ROOM, html.unescape(page)), "the page says why it waits"

    filler.unlink()
    run_until(worker, lambda: {status_of(job) for job in group} == {JobStatus.SUCCEEDED})

    assert all("started-at-last" in log_text(job, "master-0") for job in group)
    assert held.events.filter(reason="DiskPressure").count() == 1


NO_INODES = (
    r"Waiting for disk space: the file system of the run folder \(LOCAL_RUN_DIR\) had no free "
    r"inodes \(files\) left to make a job's folder as this one started \(([\d.]+) GB free, "
    r"but no file or folder can be made\)\. It starts by itself once files are removed there\."
)


def test_a_job_whose_folder_a_disk_without_free_inodes_refuses_waits_saying_so_not_no_space(
    alice, few_inodes, settings
):
    """fix155: a disk whose every inode was taken (f_favail 0) with 60 MB free refused the
    job's folder (ENOSPC), and the job waited saying the disk "had no room left ... (0.0625 GB
    free now)". No threshold holds it here (all 0): the disk itself refuses."""
    settings.LOCAL_DISK_MIN_FREE_GB = 0
    settings.LOCAL_DISK_EVICT_FREE_GB = 0
    worker = Worker()
    worker.tick()  # what the worker makes of its own in LOCAL_RUN_DIR, made first
    [job] = queue_group(alice, "echo started-at-last", total=1)
    taken = []
    with contextlib.suppress(OSError):
        while True:
            (few_inodes / f"empty-{len(taken)}").touch()
            taken.append(few_inodes / f"empty-{len(taken)}")
    found = os.statvfs(few_inodes)
    assert found.f_favail == 0 and found.f_bavail * found.f_frsize > 60 * MB

    for _ in range(5):
        worker.tick()
        time.sleep(0.05)

    assert status_of(job) == JobStatus.QUEUED
    [event] = job.events.filter(reason="DiskPressure")
    said = re.fullmatch(NO_INODES, event.message)
    assert said, event.message
    assert float(said.group(1)) > 60 * MB / GB
    assert "Started" not in set(job.events.values_list("reason", flat=True))

    for path in taken:
        path.unlink()
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert "started-at-last" in log_text(job, "master-0")


FULL = re.compile(
    r"Waiting for disk space: the file system of the run folder \(LOCAL_RUN_DIR\) has "
    r"(0\.\d+) GB free, under the 0\.0156 GB below which the console counts it as full "
    r"\(HEALTH_DISK_FREE_MB\), too little to make a job's folder\. It starts by itself once "
    r"there is room\."
)


def test_below_the_health_checks_threshold_no_job_starts_whatever_local_disk_min_free_gb(
    alice, alice_client, small_disk, settings
):
    """qa112: LOCAL_DISK_MIN_FREE_GB is 0 by default on a disk of under 0.5 GB (10%, to a
    tenth of a GB), and 0 may be set: jobs were then started on a disk /healthz called full.
    Below HEALTH_DISK_FREE_MB free they wait, saying so with the numbers."""
    settings.HEALTH_DISK_FREE_MB = 16
    filler = fill(small_disk, leave=10 * MB)
    [job] = queue_group(alice, "echo started-at-last", total=1)
    worker = Worker()

    for _ in range(10):
        worker.tick()
        time.sleep(0.05)

    assert status_of(job) == JobStatus.QUEUED
    [event] = job.events.filter(reason="DiskPressure")
    found = FULL.fullmatch(event.message)
    assert found, event.message
    assert 8 * MB / GB < float(found.group(1)) < 11 * MB / GB
    assert "Started" not in set(job.events.values_list("reason", flat=True))
    alice_client.cookies["django_language"] = "en"
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert "(LOCAL_RUN_DIR) has" in page and "(HEALTH_DISK_FREE_MB)" in page

    filler.unlink()
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)


def test_a_standalone_create_is_refused_409_below_the_health_checks_threshold(
    api,  # noqa: F811
    alice,
    small_disk,
    settings,
):
    """As for bubblewrap missing: the scheduler would hold it Queued, and a standalone job
    must start at once; the API says why on its field, nothing is made."""
    from jobs.models import Job

    from .test_api import body, refused

    settings.HEALTH_DISK_FREE_MB = 16
    fill(small_disk, leave=10 * MB)
    job_body = body(name="now", command="true")
    job_body["console"] = {"submission": {"mode": "standalone", "total": 1, "concurrency": 1}}

    error = refused(lambda: api.create_job(pool="local", body=job_body))

    assert error.status == 409
    assert re.match(
        r"console\.submission\.mode: The file system of the local pool's run folder "
        r"\(LOCAL_RUN_DIR\) has 0\.\d+ GB free, under the 0\.0156 GB below which the console "
        r"counts it as full \(HEALTH_DISK_FREE_MB\), and a standalone job must start at once\. "
        r"Submit it as a queue task, which waits for disk space, or submit it again once space "
        r"is freed\.",
        error.message,
    ), error.message
    assert not Job.objects.exists()
