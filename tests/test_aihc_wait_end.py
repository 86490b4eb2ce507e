"""An AIHC job back in Queued after its first start (Pending again) waits to run again, and that
wait is left out of its card time (JobWait, jobs.usage). fix141: on a v2 pool its wait ends
when AIHC's jobTimeLine says it ran again (its Running condition after the wait began), not at
the sync that sees it, which may come long after (the worker down); never before the wait
began, never in the future. Where AIHC does not say (v1, whose runningAt is only the first
start), the sync that sees it running ends the wait, as before. Against the strict fake."""

from __future__ import annotations

from datetime import UTC, timedelta

from django.utils import timezone

from jobs.models import JobStatus, JobWait
from tests import test_aihc_backend
from tests.test_aihc_backend import submitted

# The AIHC backend tests' fixtures: the strict fake, the backend, messages in English.
fake, aihc, english = test_aihc_backend.fake, test_aihc_backend.aihc, test_aihc_backend.english
HOUR = timedelta(hours=1)


def _waiting_again(fake, aihc, owner, settings, version: str, *, began_ago: timedelta):
    """An AIHC job that ran, then went Pending: Queued, its wait begun `began_ago` (the
    wait's row set back, as if the sync that saw it Pending came then)."""
    settings.AIHC_API_VERSION = version
    job = submitted(fake, aihc, owner)
    fake.set_job_status(job.external_id, "Running", at=timezone.now() - 3 * HOUR)
    aihc.sync(job)
    fake.set_job_status(job.external_id, "Pending")
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
