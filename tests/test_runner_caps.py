"""A runaway job cannot fill the machine's disk or memory: its log is kept under
LOCAL_LOG_MAX_MB (its beginning and its latest lines, with a marker where the middle was
dropped), its /tmp (a folder on disk) is measured against LOCAL_TMP_MAX_GB and a replica
over it is ended as a failure, and nothing else is writable but its volumes and /dev/shm.
Real jobs on the local runner, with caps of 1 MB to keep them small."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.backends.local import LocalBackend
from jobs.logs import replica_log_path, runner_of
from jobs.models import Job, JobReplica, JobStatus
from jobs.runner import _remove_scratch, attempt_dir
from jobs.shim import ReplicaLog, TmpMeter, job_line
from jobs.texts import binary_size
from jobs.worker import Worker

from .runner_helpers import (
    PY,
    UNTIL_THE_GATE_OPENS,
    as_nobody,
    log_text,
    make_spec,
    open_gate,
    owned_by_nobody,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_runner import silent_for_minutes

pytestmark = pytest.mark.usefixtures("runner_settings")

STAMP_LENGTH = len("2026-11-30T09:00:00.000000Z ")


@pytest.fixture(autouse=True)
def console_language_after():
    """A page fetched in English leaves English active in this thread (LocaleMiddleware
    does not switch back): the tests that follow, here or in another file, would read the
    worker's messages in English."""
    yield
    translation.deactivate()


def numbered(first: int, last: int) -> str:
    """A command printing lines `first`..`last`-1, each of the same length (see line())."""
    return f'{PY} -c \'for i in range({first}, {last}): print(f"line {{i:07d}} " + "x" * 90)\''


def line(i: int) -> str:
    return f"line {i:07d} " + "x" * 90


# The runner's own line, marked as the console's (jobs/shim.py, CONSOLE_MARK).
MARKER = re.compile(r"\S+Z \x1f\[console\] 日志超过 1 MB，此处略去 (\d+) 字节")


def marked_drop(lines: list[str]) -> int:
    """The bytes the log's one cut marker says were dropped."""
    [marker] = [text for text in lines if "[console] 日志超过" in text]
    found = MARKER.fullmatch(marker)
    assert found, marker
    return int(found.group(1))


def bytes_missing(lines: list[str], printed: list[str]) -> int:
    """The bytes the lines `printed` (without their stamps) took in the log, of those that
    are not in `lines` (the log as it is) any more."""
    kept = {text[STAMP_LENGTH:] for text in lines}
    return sum(STAMP_LENGTH + len(text.encode()) + 1 for text in printed if text not in kept)


def test_a_job_printing_past_its_log_cap_keeps_its_first_and_latest_lines_and_says_what_went(
    alice, alice_client, settings
):
    settings.LOCAL_LOG_MAX_MB = 1
    # 5 MB of output in two halves; between them the job waits, the test makes its log look
    # two minutes silent, and the second half (cut as it comes) must count as activity.
    command = (
        f"{numbered(0, 25_000)}; echo first-half-done; {UNTIL_THE_GATE_OPENS}; "
        f"{numbered(25_000, 50_000)}; echo second-half-done"
    )
    spec = make_spec(
        command,
        fault_tolerance_config=S.FaultToleranceConfig(
            enabled_hang_detection=True, hang_detection_timeout_minutes=1
        ),
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "first-half-done" in log_text(job, "master-0"), what="half")
    silent_for_minutes(job, 2)
    open_gate(settings)
    # The job prints its second half on its own; no tick looks at the faked silence first.
    deadline = time.monotonic() + 30
    while "second-half-done" not in log_text(job, "master-0"):
        assert time.monotonic() < deadline, "the second half was never printed"
        time.sleep(0.05)

    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    path = replica_log_path(job.public_id, "master-0")

    raw = path.read_bytes()
    text = raw.decode()
    lines = text.splitlines()
    assert len(raw) <= 1024 * 1024
    # The beginning: the start-up line and the first lines printed.
    assert lines[0].endswith("[console] master-0 第 1 次运行开始")
    assert lines[1][STAMP_LENGTH:] == line(0)
    assert f" {line(1000)}\n" in text
    # The latest: the end of the output and how it ended.
    assert lines[-3][STAMP_LENGTH:] == line(49_999)
    assert lines[-2].endswith(" second-half-done")
    assert lines[-1].endswith("[console] master-0 已退出，退出码 0")
    # One marker, counting every byte of output missing between them.
    printed = [line(i) for i in range(25_000)] + ["first-half-done"]
    printed += [line(i) for i in range(25_000, 50_000)] + ["second-half-done"]
    dropped = marked_drop(lines)
    assert dropped == bytes_missing(lines, printed) > 4_000_000
    # Nothing was taken for a hang: the lines written past the cap were activity.
    assert not job.events.filter(reason="HangSuspected").exists()

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    download = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))

    assert line(49_999) in page and 'id="log-cut"' in page and 'id="log-truncated"' not in page
    with translation.override("en"):
        size = binary_size(dropped)
    assert (
        "This log went over its 1 MB limit: the download has its beginning and its latest "
        f"part, with {size} ({dropped} bytes) of output dropped between them"
    ) in english
    assert b"".join(download.streaming_content) == raw  # the marker with it


def test_a_restarted_job_cut_again_keeps_one_marker_counting_both_attempts(alice, settings):
    settings.LOCAL_LOG_MAX_MB = 1
    # 2.6 MB of lines in each attempt: the first fails, the second (its restart) succeeds.
    first_run = "/workspace/first-run-done"
    command = (
        f"if [ -e {first_run} ]; then {numbered(20_000, 40_000)}; "
        f"else touch {first_run}; {numbered(0, 20_000)}; exit 3; fi"
    )
    spec = make_spec(
        command,
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    path = replica_log_path(job.public_id, "master-0")
    lines = path.read_text().splitlines()
    # The runner's own lines as the log keeps them, marked as the console's.
    printed = ["\x1f[console] master-0 第 1 次运行开始", *map(line, range(20_000))]
    printed += ["\x1f[console] master-0 已退出，退出码 3", "\x1f[console] master-0 第 2 次运行开始"]
    printed += [*map(line, range(20_000, 40_000)), "\x1f[console] master-0 已退出，退出码 0"]
    assert job.restarts == 1
    assert path.stat().st_size <= 1024 * 1024
    assert lines[1][STAMP_LENGTH:] == line(0) and lines[-2][STAMP_LENGTH:] == line(39_999)
    # The second attempt's cut dropped the first's marker with the rest, and counts on.
    assert marked_drop(lines) == bytes_missing(lines, printed) > 4_000_000


@pytest.mark.parametrize("cuts", [2, 3])
def test_a_log_cut_again_holds_one_marker_counting_every_byte_dropped_and_only_whole_lines(
    tmp_path, cuts
):
    """QA 99: a later cut kept the earlier cut's line in the head (shorter than the line it
    had replaced, it now ended within the first quarter), so two markers stood side by
    side, the first one's count stale. Lines of 200 bytes: the one crossing the quarter
    (262144) is longer than a marker, as most lines are."""
    path = tmp_path / "master-0.log"
    cut_line = "[console] 日志超过 {limit} MB，此处略去 {dropped} 字节"
    log = ReplicaLog(str(path), limit_mb=1, cut_line=cut_line, cut_record=f"{path}.cut.json")
    moment = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
    printed: list[str] = []
    cut, size = 0, 0
    try:
        while cut < cuts:
            body = f"line {len(printed):07d} "
            body += "x" * (200 - STAMP_LENGTH - len(body) - 1)
            when = moment + timedelta(microseconds=2 * len(printed))
            log.write(job_line(when.strftime("%Y-%m-%dT%H:%M:%S.%fZ ").encode(), body.encode()))
            printed.append(body)
            cut, size = cut + (log.size < size), log.size
    finally:
        log.close()

    raw = path.read_bytes()
    lines = raw.decode().splitlines()
    markers = [text for text in lines if "[console] 日志超过" in text]
    assert len(markers) == 1
    # It follows the first quarter's whole lines (1310 of them), as the first cut's did.
    assert [text[STAMP_LENGTH:] for text in lines[:1310]] == printed[:1310]
    assert lines[1310] == markers[0]
    found = MARKER.fullmatch(markers[0])
    assert found and int(found.group(1)) == bytes_missing(lines, printed)
    # Every other line whole: a line printed, in order, up to the last one.
    after = [text[STAMP_LENGTH:] for text in lines[1311:]]
    assert after == printed[-len(after) :]
    record = json.loads(Path(f"{path}.cut.json").read_text())
    assert record["marker_at"] == 1310 * 200 and record["dropped"] == int(found.group(1))


def test_the_log_cut_marker_reads_in_the_pages_language(alice, alice_client):
    job = submit(alice, make_spec("echo hi"))
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text(
        "2026-11-30T09:00:00.000000Z first\n"
        "2026-11-30T09:00:05.000000Z \x1f[console] 日志超过 1 MB，此处略去 4096 字节\n"
        "2026-11-30T09:00:05.000000Z latest\n"
    )
    alice_client.cookies["django_language"] = "en"

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert "log over 1 MB: 4096 bytes dropped here" in page


def test_the_job_page_says_the_bytes_a_cut_dropped_as_its_marker_does_beside_the_size(
    alice, alice_client
):
    """QA 99: the page said "略去了 150.0 MB" (MB of 1,024 x 1,024 bytes, as every size the
    console shows and LOCAL_LOG_MAX_MB) where the marker said 157286706 bytes: the same
    amount, which nothing on the page showed. The note gives the bytes too."""
    job = submit(alice, make_spec("echo hi"))
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text(
        "2026-11-30T09:00:00.000000Z first\n"
        "2026-11-30T09:00:05.000000Z \x1f[console] 日志超过 100 MB，此处略去 157286706 字节\n"
    )
    Path(f"{log}.cut.json").write_text(
        json.dumps({"limit_mb": 100, "dropped": 157286706, "marker_at": 34, "kept_from": 120})
    )

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    # (binary_size's space does not break: "150.0\xa0MiB")
    assert "其间略去了 150.0\xa0MiB（157286706 字节）的输出" in page
    assert "with 150.0\xa0MiB (157286706 bytes) of output dropped between them" in english


OVER_THE_CAP = re.compile(
    r"(\S+) 向 /tmp 写入了 (0\.\d+) GB，超过 0\.001 GB 的上限（LOCAL_TMP_MAX_GB）。"
)


def runs(settings) -> Path:
    return Path(settings.LOCAL_RUN_DIR)


def test_a_job_writing_past_its_tmp_cap_is_ended_as_a_failure_saying_how_much_it_wrote(
    alice, alice_client, settings
):
    settings.LOCAL_TMP_MAX_GB = 0.001  # ~1 MB
    settings.LOCAL_TMP_CHECK_SECONDS = 0.1
    # The worker writes 5 MB into its working folder (/tmp) and would then run for a minute.
    spec = make_spec(
        'if [ "$RANK" = 1 ]; then head -c 5000000 /dev/urandom > ./checkpoint.bin; fi; '
        "echo written; sleep 60",
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    job = submit(alice, spec)
    began = time.monotonic()

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, timeout=20)

    assert time.monotonic() - began < 20
    # What /tmp held when it was measured (the write may not have been over yet).
    found = OVER_THE_CAP.fullmatch(job.status_reason)
    assert found, job.status_reason
    assert found.group(1) == "worker-0" and 0.001 < float(found.group(2)) <= 0.005
    event = job.events.get(reason="ReplicaFailed")
    assert event.message == job.status_reason and event.type == "Warning"
    replicas = {f"{r.role}-{r.index}": (r.status, r.exit_code) for r in job.replicas.all()}
    assert replicas == {"worker-0": ("failed", 143), "master-0": ("stopped", 143)}
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    said = (
        f"worker-0 wrote {found.group(2)} GB to /tmp, over the 0.001 GB limit (LOCAL_TMP_MAX_GB)."
    )
    assert said in english


def test_a_job_over_its_tmp_cap_is_restarted_by_fault_tolerance_with_the_full_tmp_removed(
    alice, settings
):
    settings.LOCAL_TMP_MAX_GB = 0.001
    settings.LOCAL_TMP_CHECK_SECONDS = 0.1
    spec = make_spec(
        'echo "tmp holds $(ls -A /tmp | wc -l) files"; '
        "head -c 5000000 /dev/urandom > /tmp/big; sleep 60",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
    )
    job = submit(alice, spec)
    worker = Worker()
    first_tmp = runs(settings) / job.public_id / "attempt-1" / "master-0" / "tmp"

    run_until(worker, lambda: first_tmp.exists(), what="the first attempt's /tmp")
    run_until(worker, lambda: (status_of(job), job.restarts) == (JobStatus.RUNNING, 1))

    assert not first_tmp.exists()  # not one full folder per attempt
    restarted = job.events.get(reason="Restarted").message
    assert OVER_THE_CAP.search(restarted), restarted
    run_until(worker, lambda: status_of(job) == JobStatus.FAILED, timeout=20)
    # Its restart used up (QA 38: the reason says so).
    used_up = job.status_reason.removesuffix("（容错重启次数已用完：共 1 次）")
    assert used_up != job.status_reason and OVER_THE_CAP.fullmatch(used_up), job.status_reason
    # Each attempt began with an empty /tmp.
    assert log_text(job, "master-0").count(" tmp holds 0 files\n") == 2


def test_a_job_under_its_tmp_cap_succeeds_with_its_tmp_on_disk_and_nothing_else_writable(
    alice, settings
):
    settings.LOCAL_TMP_MAX_GB = 0.001  # ~1 MB
    settings.LOCAL_TMP_CHECK_SECONDS = 0.1
    (volume(settings) / "at-run").mkdir()
    (volume(settings) / "at-work").mkdir()
    hidden = Path.home()  # covered by an empty folder: storing data there fails too
    command = (
        "head -c 100000 /dev/urandom > /tmp/under-the-cap && echo TMP-OK; "
        "echo data > /dev/shm/x && echo SHM-OK; "
        "echo data > /workspace/out && echo VOLUME-OK; "
        # Volumes mounted over hidden folders (/run) or above them (the checkout under /work)
        # stay writable.
        "echo data > /run/out && echo RUN-VOLUME-OK; "
        "echo data > /work/out && echo WORK-VOLUME-OK; "
        # bwrap's own tmpfs mounts hold nothing: the root, a folder rebuilt around a mount
        # point (/opt), /dev and a hidden folder.
        f"for d in / /opt /dev {hidden}; do "
        'echo data > "$d/stored" 2>/dev/null && echo "STORED in $d" || echo "refused in $d"; '
        f"done; echo READY; {UNTIL_THE_GATE_OPENS}"
    )
    spec = make_spec(
        command,
        datasources=[
            S.Datasource("hostpath", "work", mount_path="/workspace"),
            S.Datasource("hostpath", "work", mount_path="/run", source_path="at-run"),
            S.Datasource("hostpath", "work", mount_path="/work", source_path="at-work"),
            S.Datasource("hostpath", "work", mount_path="/opt/console-caps-test/data"),
        ],
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "READY" in log_text(job, "master-0"), what="the job's writes")

    # /tmp is the replica's folder on this machine's disk, not memory.
    on_disk = runs(settings) / job.public_id / "attempt-1" / "master-0" / "tmp" / "under-the-cap"
    assert on_disk.stat().st_size == 100000
    # Measured many times meanwhile, and under the cap: it runs on.
    deadline = time.monotonic() + 1
    while time.monotonic() < deadline:
        worker.tick()
        time.sleep(0.05)
    assert status_of(job) == JobStatus.RUNNING
    open_gate(settings)
    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    for ok in ("TMP-OK", "SHM-OK", "VOLUME-OK", "RUN-VOLUME-OK", "WORK-VOLUME-OK"):
        assert ok in log, log
    assert "STORED" not in log
    for folder in ("/", "/opt", "/dev", str(hidden)):
        assert f"refused in {folder}\n" in log
    assert (volume(settings) / "at-run" / "out").read_text() == "data\n"
    assert (volume(settings) / "at-work" / "out").read_text() == "data\n"
    assert not on_disk.parent.exists()  # removed once the job ended


def test_tmp_is_measured_as_du_counts_it_in_passes_of_bounded_length(tmp_path):
    root = tmp_path / "tmp"
    root.mkdir()
    (root / "data").write_bytes(os.urandom(300_000))
    os.link(root / "data", root / "data-again")  # one file, counted once
    with open(root / "sparse", "wb") as sparse:  # 1 GB long, nothing written: no blocks
        sparse.truncate(1024**3)
    (tmp_path / "outside").write_bytes(os.urandom(2_000_000))
    (root / "link").symlink_to(tmp_path / "outside")  # not followed
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "deeper" / "small").write_bytes(os.urandom(10_000))
    du = int(subprocess.check_output(["du", "-s", "--block-size=1", str(root)]).split()[0])

    whole = TmpMeter(root).measure()
    paced = TmpMeter(root, max_entries=2)
    passes = [paced.measure() for _ in range(5)]

    assert whole == du
    assert 300_000 < whole < 400_000
    # 7 entries, 2 a pass: the count grows over 4 passes to the whole (the first pass does
    # not reach sub/deeper), then a walk begins again.
    assert passes[0] <= passes[1] <= passes[2] <= passes[3] == du
    assert passes[0] < du and passes[4] < du


def test_tmp_folders_a_job_made_unreadable_are_measured_by_an_unprivileged_worker(
    nobody_folder,
):
    root = nobody_folder / "tmp"
    (root / "hidden" / "deeper").mkdir(parents=True)
    (root / "hidden" / "deeper" / "data").write_bytes(os.urandom(1_000_000))
    (root / "no-search").mkdir()
    (root / "no-search" / "data").write_bytes(os.urandom(500_000))
    owned_by_nobody(root)
    du = int(subprocess.check_output(["du", "-s", "--block-size=1", str(root)]).split()[0])
    # What a job can do to its own folders: no permission at all, or listing without search.
    (root / "hidden" / "deeper").chmod(0o000)
    (root / "hidden").chmod(0o000)
    (root / "no-search").chmod(0o600)

    measured = as_nobody(lambda: TmpMeter(root).measure())

    assert measured == du > 1_500_000
    # Given what measuring needs, owner read and search, and nothing more.
    assert stat.S_IMODE((root / "hidden").stat().st_mode) == 0o500
    assert stat.S_IMODE((root / "no-search").stat().st_mode) == 0o700


def test_the_tmp_meter_never_changes_a_folder_outside_the_tree_put_in_place_of_one_inside(
    nobody_folder,
):
    root = nobody_folder / "tmp"
    (root / "a" / "b").mkdir(parents=True)
    (nobody_folder / "outside" / "b").mkdir(parents=True)  # the console's state, say
    owned_by_nobody(nobody_folder)
    (nobody_folder / "outside" / "b").chmod(0o000)

    def measure_while_the_job_swaps_a_folder_for_a_link() -> list[int]:
        meter = TmpMeter(root, max_entries=2)
        first = meter.measure()  # a, then a/b: a/b is next to be walked
        (root / "a").rename(root / "a-moved")
        (root / "a").symlink_to(nobody_folder / "outside")
        return [first, meter.measure()]

    as_nobody(measure_while_the_job_swaps_a_folder_for_a_link)

    assert stat.S_IMODE((nobody_folder / "outside" / "b").stat().st_mode) == 0o000


def leave_locked_folders(tmp: Path) -> None:
    """What a job may leave in its /tmp: Go's module cache (read-only folders, chmod -R
    a-w) and a folder no one may enter (chmod 000)."""
    module = tmp / "go" / "pkg" / "mod" / "example.com" / "lib@v1.0.0"
    module.mkdir(parents=True)
    (module / "lib.go").write_text("package lib\n")
    (tmp / "locked" / "inner").mkdir(parents=True)
    (tmp / "locked" / "inner" / "data").write_bytes(b"x" * 1000)
    owned_by_nobody(tmp)
    for folder in [module, *module.parents]:
        if folder == tmp:
            break
        folder.chmod(0o555)
    (tmp / "locked" / "inner").chmod(0o000)
    (tmp / "locked").chmod(0o000)


def test_a_finished_jobs_tmp_is_removed_by_an_unprivileged_worker_read_only_folders_and_all(
    nobody_folder, settings
):
    settings.LOCAL_RUN_DIR = nobody_folder / "runs"
    attempt = attempt_dir("j-locked", 1)
    (attempt / "master-0").mkdir(parents=True)
    (attempt / "master-0" / "exit").write_text("{}")
    owned_by_nobody(nobody_folder)
    leave_locked_folders(attempt / "master-0" / "tmp")

    as_nobody(lambda: _remove_scratch(attempt))

    assert os.listdir(attempt / "master-0") == ["exit"]


def test_a_deleted_job_takes_its_run_folder_with_it_when_the_worker_is_unprivileged(
    alice, nobody_folder, settings
):
    settings.LOCAL_RUN_DIR = nobody_folder / "runs"
    job = submit(alice, make_spec("true"))
    job.status = JobStatus.FAILED
    job.save(update_fields=["status"])
    (attempt_dir(job.public_id, 1) / "master-0").mkdir(parents=True)
    owned_by_nobody(nobody_folder)
    leave_locked_folders(attempt_dir(job.public_id, 1) / "master-0" / "tmp")
    # What the delete reads of the database, read here: the test's database is root's (0600,
    # in a 0700 folder), and the child, as nobody, failed to open it whenever SQLite had to
    # open its -wal file again (a CI run: "unable to open database file"). A worker run as
    # that user owns its database; the files are what this test is about.
    job = Job.objects.prefetch_related("replicas").get(pk=job.pk)
    runner_of(job)  # its LocalRun, or none: kept on the job

    as_nobody(lambda: LocalBackend().delete(job))

    assert not (nobody_folder / "runs" / job.public_id).exists()
