"""The markers the API gives to follow a job's events and a pod's log (README: "Following a
job's events", "Following a log"): given back, each event and each line comes once, none
passed by and none twice."""

from __future__ import annotations

import random
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from jobs import spec as S
from jobs.api_views import job_events_answer
from jobs.backends.remote import RemoteBackend
from jobs.logs import LogMarker, log_read
from jobs.models import Job, JobEvent
from jobs.services import job_event, jobs_submit
from jobs.shim import GAP_SEARCH_BYTES, ReplicaLog, job_line
from tests.test_concurrent_limits import _waiting_on_locks


def _job(owner) -> Job:
    spec = S.JobSpec(
        name="followed",
        resource_pool_id="local",
        image="a/b:1",
        command="true",
        roles=[S.Role("master", 1, cpu=1)],
    )
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)[0]


def _a_request_event(job: Job) -> None:
    job_event(job=job, reason="AlertFailed", message="second")


def _a_platform_event(job: Job) -> None:  # a Kubernetes or AIHC job's, copied by the worker
    RemoteBackend._save_events(
        [(JobEvent(job=job, reason="BackOff", message="second"), timezone.now())]
    )


@pytest.mark.parametrize("second_event", [_a_request_event, _a_platform_event])
@pytest.mark.django_db(transaction=True)
def test_an_event_committed_after_a_later_one_is_still_answered_to_the_marker_before_both(
    alice, second_event
):
    """Two transactions write one job's events at the same moment (the worker's tick, and a
    request or the worker's copy of a platform's events): the first takes the smaller id and
    commits last. A poll between the two commits was answered the later event, and its
    marker passed the earlier one for good. Now the second insert waits for the first
    commit, so the poll gets neither, and the next poll both, in order."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's read committed transactions only")
    job = _job(alice)
    polled = job_events_answer(job=job)
    marker = int(polled["nextMarker"])
    inserted, commit = threading.Event(), threading.Event()
    failures: list[Exception] = []

    def the_worker_tick() -> None:  # its event first, committed at the end of its tick
        try:
            with transaction.atomic():
                job_event(job=job, reason="HangSuspected", message="first")
                inserted.set()
                assert commit.wait(timeout=60)
        except Exception as exc:  # said below, not lost in the thread
            failures.append(exc)
        finally:
            inserted.set()
            connections.close_all()

    def a_request() -> None:  # its event second, committed at once
        try:
            second_event(job)
        except Exception as exc:
            failures.append(exc)
        finally:
            connections.close_all()

    worker = threading.Thread(target=the_worker_tick)
    worker.start()
    assert inserted.wait(timeout=60)
    request = threading.Thread(target=a_request)
    request.start()
    deadline = time.monotonic() + 30
    while request.is_alive() and not _waiting_on_locks() and time.monotonic() < deadline:
        time.sleep(0.02)
    between = job_events_answer(job=job, marker=marker)  # a poll between the two commits
    commit.set()
    worker.join(timeout=60)
    request.join(timeout=60)
    assert not failures, failures

    after = job_events_answer(job=job, marker=int(between["nextMarker"]))
    messages = [e["message"] for e in between["events"] + after["events"]]
    assert messages == ["first", "second"]


# -- a pod's log ------------------------------------------------------------------------

CUT_LINE = "[console] log over {limit} MB: {dropped} bytes dropped here"


def _stamped(moment: datetime) -> bytes:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ ").encode()


def _numbers_read(tmp_path: Path, seed: int) -> tuple[list[list[str]], int]:
    """A log of random lines (random lengths, a random number sharing each stamp) written in
    random bursts past several cuts, read meanwhile by readers each polling at its own pace
    and with its own maxLines. What each was given, and how many lines were written."""
    chance = random.Random(seed)
    path = tmp_path / f"{seed}.log"
    log = ReplicaLog(
        str(path), limit_mb=1, cut_line=CUT_LINE, cut_record=str(tmp_path / f"{seed}.cut.json")
    )
    readers = [
        (chance.uniform(0.05, 1.0), chance.choice([1, 3, 17, 100, 1000]), [], [LogMarker(0, 0)])
        for _ in range(8)
    ]
    moment = datetime(2026, 12, 4, 13, 0, tzinfo=UTC)
    written = 0
    try:
        while written < 3000:
            for _ in range(chance.randint(1, 60)):
                moment += timedelta(microseconds=chance.randint(1, 3))
                for _ in range(chance.choice([1, 1, 2, 5, 12])):
                    body = f"line {written} " + "x" * chance.randint(0, 4000)
                    log.write(job_line(_stamped(moment), body.encode()))
                    written += 1
            for pace, count, given, marker in readers:
                while chance.random() < pace:
                    lines, marker[0] = log_read(path, count=count, marker=marker[0])
                    given.extend(lines)
                    if not lines:
                        break
    finally:
        log.close()
    for _pace, _count, given, marker in readers:  # each reads on to the end
        while True:
            lines, marker[0] = log_read(path, count=1000, marker=marker[0])
            given.extend(lines)
            if not lines:
                break
    return [given for _pace, _count, given, _marker in readers], written


@pytest.mark.parametrize("seed", range(40))
def test_a_log_followed_by_its_marker_across_cuts_gives_no_line_twice_and_drops_lines_only_at_a_cut(
    tmp_path, seed
):
    """Review 37: a reader a quarter of the cap behind, in the lines sharing the stamp the
    lines kept after a cut start with, was given a line again (the cut's own line took that
    stamp too and counted as one of them), or lost lines the cut kept (those of its stamp it
    had read were dropped, and the cut's line counted in their place)."""
    readers, written = _numbers_read(tmp_path, seed)
    for given in readers:
        numbers, cut = [], False
        for line in given:
            if "bytes dropped here" in line:
                cut = True
                continue
            number = int(line.split(" ")[2])
            assert not numbers or number > numbers[-1], f"line {number} given again"
            assert not numbers or number == numbers[-1] + 1 or cut, (
                f"lines {numbers[-1] + 1} to {number - 1} lost without the cut's line"
            )
            numbers.append(number)
            cut = False
        assert numbers[-1] == written - 1


def test_a_cut_looks_for_a_gap_between_stamps_within_a_megabyte_only(tmp_path):
    """Review 39: with no gap of two microseconds, the cut read the whole latest quarter of the
    cap, 65 KB a line (0.22 s per 2 MB; half a minute at the 1 GB default, the job's output
    held meanwhile). It looks within GAP_SEARCH_BYTES, and past that cuts at a line's start."""
    path = tmp_path / "replica.log"
    log = ReplicaLog(str(path), limit_mb=8, cut_line=CUT_LINE, cut_record=str(tmp_path / "c.json"))
    moment = datetime(2026, 12, 4, 13, 0, tzinfo=UTC)
    line_bytes = 1024  # a line of 1 KiB with its stamp: the cap holds 8192 of them
    gap_at = 8000  # a gap 1856 lines (1.8 MiB) after the latest quarter's first line, 6144
    try:
        for number in range(8193):  # the 8193rd goes past the cap: the cut
            when = moment + timedelta(microseconds=5 if number >= gap_at else 0)
            body = f"line {number} ".encode()
            log.write(job_line(_stamped(when), body + b"x" * (line_bytes - 28 - len(body) - 1)))
    finally:
        log.close()

    text = path.read_bytes().decode()
    after_cut = text.split("bytes dropped here\n", 1)[1]
    assert after_cut.split("\n", 1)[0][28:].startswith("line 6144 ")
    assert GAP_SEARCH_BYTES < (gap_at - 6144) * line_bytes  # the gap was past the bound
