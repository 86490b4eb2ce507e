"""A job the worker cannot delete (its retention passed, or it was deleted while it ran): the
worker tries again every minute, logs the first failure and each change of reason as a
warning, the same reason again at most once an hour, and says why on the job, where its owner
and staff (the admin's job page) read it. Real failures: a file made immutable (chattr +i, as
root) in the job's folder, and a database trigger refusing the row's deletion."""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.logs import job_dir
from jobs.models import Job, LocalRun
from jobs.worker import Worker

from .runner_helpers import runner_settings  # noqa: F401
from .test_scale import REFUSING_TRIGGER, finished_long_ago

pytestmark = pytest.mark.usefixtures("runner_settings")

# A "minute" of JOB_MINUTE_SECONDS, so its "hour" (DELETION_RELOGGED_MINUTES) is 1.2 s.
MINUTE = 0.02


def set_immutable(path: Path, on: bool) -> None:
    subprocess.run(["chattr", "+i" if on else "-i", str(path)], check=True, capture_output=True)


@pytest.fixture
def immutable() -> Iterator[list[Path]]:
    """Files a test makes immutable (root alone can, on a file system that has the flag): their
    flag is taken off again after the test, so its folder can be removed."""
    if shutil.which("chattr") is None:
        pytest.skip("needs chattr (e2fsprogs)")
    made: list[Path] = []
    yield made
    for path in made:
        set_immutable(path, False)


def stuck_folder(job: Job, immutable: list[Path], name: str = "master-0.log") -> Path:
    """The job's folder with a log in it that nothing, root included, can remove."""
    logs = job_dir(job.public_id) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / name
    log.write_text("its output\n")
    try:
        set_immutable(log, True)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"chattr +i does not work here (root, ext4 or the like): {exc.stderr}")
    immutable.append(log)
    return log


def warnings_of(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "jobs.worker" and r.levelno >= logging.WARNING
    ]


def test_a_failing_retention_deletion_is_logged_once_then_hourly_and_on_a_new_reason_until_it_goes(
    alice, settings, caplog, immutable
):
    settings.JOB_MINUTE_SECONDS = MINUTE
    [job] = finished_long_ago(alice, 1, days=3)
    log = stuck_folder(job, immutable)
    worker = Worker()
    caplog.set_level(logging.INFO, logger="jobs.worker")
    said = f"Operation not permitted: {job.public_id}/logs/master-0.log"

    for _ in range(5):  # five "minutes" of tries, all within the "hour"
        worker.delete_expired()
        time.sleep(MINUTE * 1.5)

    assert warnings_of(caplog) == [
        f"deleting {job.public_id} (its retention passed) failed: {said}; tried again every minute"
    ]
    assert Job.objects.filter(pk=job.pk).exists()
    [event] = job.events.filter(reason="DeleteFailed")
    assert event.type == "Warning"
    assert said in event.message and str(settings.LOCAL_RUN_DIR) not in event.message

    # Another file stuck instead: a new reason, said at once, and on the job.
    set_immutable(log, False)
    immutable.remove(log)
    other = stuck_folder(job, immutable, name="worker-0.log")
    caplog.clear()
    worker.delete_expired()
    assert warnings_of(caplog) == [
        f"deleting {job.public_id} (its retention passed) failed for another reason: "
        f"Operation not permitted: {job.public_id}/logs/worker-0.log (was: {said}); tried "
        "again every minute"
    ]
    assert job.events.filter(reason="DeleteFailed").count() == 2

    # The same reason an "hour" later: said again, with how long it has been failing.
    caplog.clear()
    time.sleep(60 * MINUTE)
    worker.delete_expired()
    [again] = warnings_of(caplog)
    assert again.startswith(f"deleting {job.public_id} (its retention passed) still fails, ")
    assert "tries since " in again and again.endswith(
        f"Operation not permitted: {job.public_id}/logs/worker-0.log; tried again every minute"
    )
    assert job.events.filter(reason="DeleteFailed").count() == 2

    # Freed: deleted at the next try, which says so.
    set_immutable(other, False)
    immutable.remove(other)
    caplog.clear()
    time.sleep(MINUTE * 1.5)
    worker.delete_expired()
    [done] = warnings_of(caplog)
    assert done.startswith(f"deleted {job.public_id}, after ")
    assert not Job.objects.filter(pk=job.pk).exists()
    assert not job_dir(job.public_id).exists()


def test_a_worker_started_again_says_a_failure_it_finds_in_its_log_but_not_twice_on_the_job(
    alice, settings, caplog, immutable
):
    settings.JOB_MINUTE_SECONDS = MINUTE
    [job] = finished_long_ago(alice, 1, days=3)
    stuck_folder(job, immutable)
    caplog.set_level(logging.WARNING, logger="jobs.worker")

    Worker().delete_expired()
    Worker().delete_expired()  # a worker started again: it knows nothing of the first failure

    assert len(warnings_of(caplog)) == 2
    assert job.events.filter(reason="DeleteFailed").count() == 1


def test_a_job_deleted_while_it_ran_whose_folder_stays_is_tried_again_a_minute_later_not_each_tick(
    alice, settings, caplog, immutable, django_assert_num_queries
):
    settings.JOB_MINUTE_SECONDS = 0.5
    [job] = finished_long_ago(alice, 1, days=3)
    LocalRun.objects.create(job=job, delete_when_stopped=True)
    stuck_folder(job, immutable)
    caplog.set_level(logging.WARNING, logger="jobs.worker")
    worker = Worker()

    worker.delete_requested()
    worker.delete_requested()
    worker.delete_requested()

    assert warnings_of(caplog) == [
        f"deleting {job.public_id} (deleted while it ran) failed: Operation not permitted: "
        f"{job.public_id}/logs/master-0.log; tried again every minute"
    ]
    assert job.events.filter(reason="DeleteFailed").count() == 1
    assert Job.objects.filter(pk=job.pk).exists()


def test_the_owners_delete_of_a_job_whose_files_stay_says_why_and_keeps_the_job(
    alice, alice_client, immutable
):
    [job] = finished_long_ago(alice, 1, days=3)
    stuck_folder(job, immutable)

    response = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("job-detail", args=[job.public_id])
    page = response.content.decode()
    assert (
        f"无法删除其在本机上的全部文件（Operation not permitted: {job.public_id}/logs/master-0.log）"
        in page
    )
    assert str(job_dir(job.public_id).parent) not in page
    assert Job.objects.filter(pk=job.pk).exists()


def test_the_owners_delete_works_once_an_operator_moved_the_jobs_stuck_folder_aside(
    alice, alice_client, immutable, tmp_path
):
    # README's way out, for a file that cannot be freed now: the folder moved, not the file.
    [job] = finished_long_ago(alice, 1, days=3)
    log = stuck_folder(job, immutable)
    url = reverse("job-delete", args=[job.public_id])
    alice_client.post(url, {"confirmed": "1"})
    assert Job.objects.filter(pk=job.pk).exists()

    aside = tmp_path / job.public_id
    shutil.move(job_dir(job.public_id), aside)
    immutable[immutable.index(log)] = aside / "logs" / log.name
    response = alice_client.post(url, {"confirmed": "1"})

    assert response.status_code == 302
    assert not Job.objects.filter(pk=job.pk).exists()
    assert (aside / "logs" / log.name).read_text() == "its output\n"


SECRET = "hf_s3cr3t_token_value"


def test_a_file_named_after_the_jobs_secret_is_masked_in_the_log_the_event_and_the_owners_delete(
    alice, alice_client, settings, caplog, immutable
):
    # The job chooses its files' names: one may carry its secret (a cache keyed by a token).
    settings.JOB_MINUTE_SECONDS = MINUTE
    [job] = finished_long_ago(alice, 1, days=3)
    spec = job.job_spec()
    spec.envs = [S.Env(name="HF_TOKEN", value=SECRET, secret=True)]
    Job.objects.filter(pk=job.pk).update(spec=spec.to_document())
    job.refresh_from_db()
    stuck_folder(job, immutable, name=f"cache-{SECRET}.lock")
    caplog.set_level(logging.WARNING, logger="jobs.worker")

    Worker().delete_expired()
    response = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert response.status_code == 200
    said = f"Operation not permitted: {job.public_id}/logs/cache-******.lock"
    [warning] = warnings_of(caplog)
    assert said in warning and SECRET not in warning
    [event] = job.events.filter(reason="DeleteFailed")
    assert said in event.message and SECRET not in event.message
    page = response.content.decode()
    assert f"{job.public_id}/logs/cache-******.lock" in page and SECRET not in page
    assert Job.objects.filter(pk=job.pk).exists()


@pytest.fixture
def refused_by_the_database(transactional_db, alice) -> Iterator[Job]:
    [job] = finished_long_ago(alice, 1, days=3)
    create, drop = REFUSING_TRIGGER[connection.vendor]
    with connection.cursor() as cursor:
        for statement in create:
            cursor.execute(statement.format(ids=job.pk))
    yield job
    with connection.cursor() as cursor:
        for statement in drop:
            cursor.execute(statement)


def test_staff_read_in_the_admin_why_a_jobs_deletion_fails(
    refused_by_the_database, settings, caplog, superuser
):
    job = refused_by_the_database
    caplog.set_level(logging.WARNING, logger="jobs.worker")

    Worker().delete_expired()

    [warning] = [r for r in caplog.records if r.name == "jobs.worker"]
    assert warning.levelno == logging.WARNING and warning.exc_info  # its traceback, once
    assert warning.getMessage() == (
        f"deleting {job.public_id} (its retention passed) failed: IntegrityError: kept; tried "
        "again every minute"
    )
    staff = Client()
    staff.force_login(superuser)
    url = reverse("admin:jobs_job_change", args=[job.pk])
    page = staff.get(url).content.decode()
    assert "删除失败" in page
    assert "任务调度进程（worker）无法删除此任务：IntegrityError: kept。它每分钟重试一次。" in page
    with translation.override("en"):
        staff.cookies["django_language"] = "en"
        english = staff.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Deletion failed" in english
    assert "The worker could not delete this job: IntegrityError: kept. It tries again" in english


def test_the_owners_delete_of_a_job_whose_row_the_database_refuses_says_why_and_keeps_it(
    refused_by_the_database, alice_client
):
    # It was an error page (500); README said the Delete says why (review 19).
    job = refused_by_the_database

    response = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("job-detail", args=[job.public_id])
    assert "数据库拒绝删除该任务（IntegrityError: kept），因此保留该任务。" in (
        response.content.decode()
    )
    assert Job.objects.filter(pk=job.pk).exists()
