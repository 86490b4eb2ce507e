"""What is kept of deleted jobs (DeletedJob) is forgotten after DELETED_JOB_KEEP_DAYS (left26).

The rows exist so that an old link to a deleted job's page (an alert mail, a bookmark) tells
its owner it was deleted, and when. The worker's hourly housekeeping forgets those older than
the setting; younger ones, whose links are still followed, stay."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import DeletedJob
from jobs.worker import Worker

from .runner_helpers import runner_settings  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")

ROOT = Path(__file__).resolve().parent.parent


def _deleted(owner, name: str, *, days_ago: float) -> DeletedJob:
    return DeletedJob.objects.create(
        public_id=f"pytorchjob-{name}",
        owner=owner,
        name=name,
        deleted_at=timezone.now() - timedelta(days=days_ago),
    )


def test_the_worker_forgets_deleted_jobs_past_the_retention_and_keeps_the_younger(
    alice, alice_en, settings, caplog
):
    settings.DELETED_JOB_KEEP_DAYS = 30
    old = _deleted(alice, "old", days_ago=31)
    young = _deleted(alice, "young", days_ago=29)

    with caplog.at_level(logging.INFO, logger="jobs.worker"):
        Worker().forget_deleted()

    assert list(DeletedJob.objects.values_list("name", flat=True)) == ["young"]
    assert "forgot 1 deleted jobs kept past DELETED_JOB_KEEP_DAYS" in caplog.text
    # The younger one's link still tells its owner; the forgotten one's is a plain 404.
    kept = alice_en.get(reverse("job-detail", args=[young.public_id]))
    gone = alice_en.get(reverse("job-detail", args=[old.public_id]))
    assert kept.status_code == gone.status_code == 404
    assert "Job young was deleted" in kept.content.decode()
    assert "There is nothing at this address" in gone.content.decode()


def test_by_default_a_year_is_kept(alice):
    _deleted(alice, "last-spring", days_ago=300)
    _deleted(alice, "two-years-ago", days_ago=730)

    Worker().forget_deleted()

    assert list(DeletedJob.objects.values_list("name", flat=True)) == ["last-spring"]


def test_zero_keeps_them_for_ever(alice, settings):
    settings.DELETED_JOB_KEEP_DAYS = 0
    _deleted(alice, "ancient", days_ago=3650)

    Worker().forget_deleted()

    assert DeletedJob.objects.filter(name="ancient").exists()


@pytest.mark.parametrize("days", ["36501", "1000000"])
def test_a_keep_past_a_hundred_years_is_refused_when_the_console_starts(days):
    # Meant as "for ever", such a number passed the dates Python holds: the worker's hourly
    # pass failed with a traceback each time (review28), where 0 keeps them for ever.
    done = subprocess.run(
        [sys.executable, "-c", "import console.settings"],
        cwd=ROOT,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "DELETED_JOB_KEEP_DAYS": days,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode != 0
    assert f"DELETED_JOB_KEEP_DAYS is a whole number from 0 to 36500, not '{days}'" in done.stderr
