"""An AIHC job back in Queued after its first start (Pending again) waits to run again, and that
wait is left out of its card time (JobWait, jobs.usage). fix141: on a v2 pool its wait ends
when AIHC's jobTimeLine says it ran again (the Running condition after its last Pending, found
by the timeline's order: review63), not at the sync that sees it, which may come long after
(the worker down); never before the wait began, nor before the month it is seen in began
(review63), never in the future. Where AIHC does not say (v1, whose runningAt is only the first
start), the sync that sees it running ends the wait, as before. Against the strict fake."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.utils import timezone

from jobs.models import JobStatus, JobWait
from jobs.services import month_began
from tests import test_aihc_backend
from tests.test_aihc_backend import submitted

# The AIHC backend tests' fixtures: the strict fake, the backend, messages in English.
fake, aihc, english = test_aihc_backend.fake, test_aihc_backend.aihc, test_aihc_backend.english
HOUR = timedelta(hours=1)


@pytest.fixture(autouse=True)
def console_well_into_its_month(settings):
    """The console's time zone one of two 26 hours apart, that in which this month began more
    than a day ago: a wait's end is never before the month it is seen in began (review63),
    and these tests' times, hours back from now, are then in this month whenever they run."""
    for zone in ("Etc/GMT-14", "Etc/GMT+12"):
        settings.TIME_ZONE = zone
        if timezone.now() - month_began(timezone.now()) > 24 * HOUR:
            return zone
    raise AssertionError("one of them is")


def _waiting_again(
    fake,
    aihc,
    owner,
    settings,
    version: str,
    *,
    began_ago: timedelta,
    first_ran_at=None,
    pending_at=None,
):
    """An AIHC job that ran (AIHC's time `first_ran_at`, 3 hours ago by default), then went
    Pending (`pending_at`, now by default): Queued, its wait begun `began_ago` (the wait's row
    set back, as if the sync that saw it Pending came then)."""
    settings.AIHC_API_VERSION = version
    job = submitted(fake, aihc, owner)
    fake.set_job_status(job.external_id, "Running", at=first_ran_at or timezone.now() - 3 * HOUR)
    aihc.sync(job)
    fake.set_job_status(job.external_id, "Pending", at=pending_at)
    aihc.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.started_at is not None
    began = (timezone.now() - began_ago).replace(microsecond=0)
    JobWait.objects.filter(job=job).update(began_at=began)
    return job, began


def _second(when):
    return when.astimezone(UTC).replace(microsecond=0)


def test_on_v2_a_jobs_wait_ends_when_aihcs_timeline_says_it_ran_again(fake, aihc, alice, settings):
    job, began = _waiting_again(fake, aihc, alice, settings, "v2", began_ago=2 * HOUR)
    ran_again = _second(timezone.now() - HOUR)
    fake.set_job_status(job.external_id, "Running", at=ran_again)

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    wait = JobWait.objects.get(job=job)
    assert (wait.began_at, wait.ended_at) == (began, ran_again)


def test_on_v2_a_job_that_ran_again_and_ended_between_syncs_waited_until_it_ran(
    fake, aihc, alice, settings
):
    job, began = _waiting_again(fake, aihc, alice, settings, "v2", began_ago=2 * HOUR)
    ran_again = _second(timezone.now() - HOUR)
    fake.set_job_status(job.external_id, "Running", at=ran_again)
    fake.set_job_status(job.external_id, "Succeeded")

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert JobWait.objects.get(job=job).ended_at == ran_again


def test_a_running_time_in_the_future_ends_the_wait_no_later_than_the_sync(
    fake, aihc, alice, settings
):
    job, began = _waiting_again(fake, aihc, alice, settings, "v2", began_ago=2 * HOUR)
    fake.set_job_status(job.external_id, "Running", at=timezone.now() + HOUR)  # AIHC's clock

    aihc.sync(job)
    after_the_sync = timezone.now()

    wait = JobWait.objects.get(job=job)
    assert began < wait.ended_at <= after_the_sync


def test_a_running_time_before_the_wait_began_is_not_its_end_the_sync_is(
    fake, aihc, alice, settings
):
    # The only Running after the wait in AIHC's words is stamped before it began (AIHC's clock
    # behind ours): not taken, as v1 gives none (its runningAt is the first start only).
    job, began = _waiting_again(fake, aihc, alice, settings, "v2", began_ago=HOUR)
    fake.set_job_status(job.external_id, "Running", at=began - HOUR / 2)
    before_the_sync = timezone.now()

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert JobWait.objects.get(job=job).ended_at >= before_the_sync


def test_on_v2_aihcs_clock_ahead_of_ours_does_not_end_the_wait_at_the_jobs_first_start(
    fake, aihc, alice, settings
):
    # AIHC stamps the first start after the wait began by our clock (review63: it ended the
    # wait there); the timeline's order says it ran again only after its Pending.
    now = timezone.now()
    job, began = _waiting_again(
        fake,
        aihc,
        alice,
        settings,
        "v2",
        began_ago=4 * HOUR,
        first_ran_at=now - 3 * HOUR - HOUR / 2,
        pending_at=now - 3 * HOUR,
    )
    ran_again = _second(now - 2 * HOUR)
    fake.set_job_status(job.external_id, "Running", at=ran_again)

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert JobWait.objects.get(job=job).ended_at == ran_again


def test_on_v2_a_job_that_ended_from_its_wait_waited_until_the_sync_saw_it_end(
    fake, aihc, alice, settings
):
    # No Running after its Pending: the first start's Running, after the wait began by our
    # clock here (AIHC's ahead), is not taken for a run again.
    job, began = _waiting_again(fake, aihc, alice, settings, "v2", began_ago=4 * HOUR)
    fake.set_job_status(job.external_id, "Failed")
    before_the_sync = timezone.now()

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert JobWait.objects.get(job=job).ended_at >= before_the_sync


def test_on_v1_a_jobs_wait_ends_at_the_sync_that_sees_it_run_again(fake, aihc, alice, settings):
    # v1 says no time of a run again (its runningAt is the first start only).
    job, began = _waiting_again(fake, aihc, alice, settings, "v1", began_ago=2 * HOUR)
    fake.set_job_status(job.external_id, "Running", at=timezone.now() - HOUR)
    before_the_sync = timezone.now()

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    wait = JobWait.objects.get(job=job)
    assert wait.began_at == began
    assert wait.ended_at >= before_the_sync


def test_a_wait_that_aihc_ended_in_a_month_now_over_ends_when_this_month_began(
    fake, aihc, alice, settings
):
    # Begun 4 hours before this month, run again an hour before it, seen now: the month over
    # keeps its figures (review63: it grew by that hour), this one counts the wait's rest.
    month = month_began(timezone.now())
    job, began = _waiting_again(
        fake, aihc, alice, settings, "v2", began_ago=timezone.now() - (month - 4 * HOUR)
    )
    fake.set_job_status(job.external_id, "Running", at=month - HOUR)

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    wait = JobWait.objects.get(job=job)
    assert (wait.began_at, wait.ended_at) == (began, month)


def test_a_timeline_time_before_utcs_year_1_is_none_and_the_sync_goes_on(
    fake, aihc, alice, settings
):
    # Go's zero time with an offset east of UTC: read as a time, it failed every sync of the
    # job (OverflowError).
    job, began = _waiting_again(fake, aihc, alice, settings, "v2", began_ago=2 * HOUR)
    fake.set_job_status(job.external_id, "Running")
    with fake.lock:
        fake.jobs[job.external_id].later_conditions[-1] = ("Running", "0001-01-01T00:00:00+08:00")
    before_the_sync = timezone.now()

    aihc.sync(job)

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert JobWait.objects.get(job=job).ended_at >= before_the_sync
