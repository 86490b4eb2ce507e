"""The markers the API gives to follow a job's events and a pod's log (README: "Following a
job's events", "Following a log"): given back, each event and each line comes once, none
passed by and none twice."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connection, connections, transaction

from jobs import spec as S
from jobs.api_views import job_events_answer
from jobs.models import Job
from jobs.services import job_event, jobs_submit
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


@pytest.mark.django_db(transaction=True)
def test_an_event_committed_after_a_later_one_is_still_answered_to_the_marker_before_both(alice):
    """Two transactions write one job's events at the same moment (the worker's tick and a
    request): the first takes the smaller id and commits last. A poll between the two
    commits was answered the later event, and its marker passed the earlier one for good.
    Now the second insert waits for the first commit, so the poll gets neither, and the
    next poll both, in order."""
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
            job_event(job=job, reason="AlertFailed", message="second")
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
