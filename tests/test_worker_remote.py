"""The worker drives remote backends too: it submits queued AIHC jobs once and syncs them
(against the strict AIHC fake, the one outside service that cannot run here). Each test drives
the passes of the serving worker's remote thread (Worker.remote_pass) by hand."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from jobs import spec as S
from jobs.models import JobStatus
from jobs.services import jobs_submit
from jobs.worker import Worker
from tests.fake_aihc import FakeAihc, configure

SEED_DOC = json.loads(
    (Path(__file__).parent / "data" / "seed001_create_job_request.json").read_text()
)
POOL = "cce-pool1"
A800 = "baidu.com/a800_80g_cgpu"


@pytest.fixture
def fake(settings, db):
    fake = FakeAihc().start()
    fake.add_pool(POOL, "训练池", gpus={A800: (16, 16)}, pfs="pfs-7xWeAt")
    configure(settings, fake)
    settings.WORKER_REMOTE_SYNC_SECONDS = 0
    yield fake
    fake.stop()


def submit(owner, **kwargs):
    spec = S.parse_document(SEED_DOC, resource_pool_id=POOL)
    [job] = jobs_submit(
        owner=owner, spec=spec, submit_key=str(uuid.uuid4()), backend="aihc", **kwargs
    )
    return job


def test_the_worker_submits_a_queued_remote_job_once_and_follows_it_to_the_end(fake, alice):
    job = submit(alice)
    worker = Worker()

    worker.remote_pass()
    worker.remote_pass()

    job.refresh_from_db()
    assert len(fake.calls("CreateJob")) == 1
    assert job.external_id in fake.jobs

    fake.set_job_status(job.external_id, "Running")
    worker.remote_pass()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING

    fake.set_job_status(job.external_id, "Succeeded")
    worker.remote_pass()
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert len(fake.calls("CreateJob")) == 1


def test_queued_remote_jobs_are_submitted_oldest_first(fake, alice):
    for name in ("first-job", "second-job", "third-job"):
        spec = S.parse_document(SEED_DOC, resource_pool_id=POOL)
        spec.name = name
        jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()), backend="aihc")

    Worker().remote_pass()

    sent = [call.body["name"] for call in fake.calls("CreateJob")]
    assert sent == ["first-job", "second-job", "third-job"]  # a group's task 1/3 first


def test_a_remote_job_pending_review_is_never_submitted(fake, alice):
    job = submit(alice, initial_status=JobStatus.PENDING_REVIEW)

    Worker().remote_pass()

    job.refresh_from_db()
    assert job.status == JobStatus.PENDING_REVIEW
    assert fake.calls("CreateJob") == []


def test_an_unreachable_platform_is_one_warning_line_per_sync_not_a_traceback(fake, alice, caplog):
    job = submit(alice)
    worker = Worker()
    worker.remote_pass()  # submitted
    fake.fail_next("DescribeJob", status=500, code="InternalError", times=20)

    worker.remote_pass()

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    [record] = [r for r in caplog.records if r.getMessage().startswith(f"syncing {job.public_id}")]
    assert record.levelname == "WARNING" and record.exc_info is None
    assert "InternalError" in record.getMessage()
