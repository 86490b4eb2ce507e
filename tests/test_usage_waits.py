"""A job's waits to run again after its first start (a Kubernetes job restarted as a whole
whose pods the cluster refuses, an AIHC job Pending again) are left out of its card time,
each in the period it fell in (review58 of fix128: their total was one later start, taken
from the job's earliest part). Job times and waits are set on the rows: they are the
fixture, what the backends would have stamped (jobs.services.job_transition)."""

from __future__ import annotations

from datetime import date, timedelta

from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from jobs.models import Job, JobStatus, JobWait, UsageRecord
from jobs.services import job_transition
from jobs.usage import Period, job_usage, usage_report
from tests.test_usage_report import APRIL, at, run

MAY = Period(date(2026, 5, 1), date(2026, 5, 31))
DAY = timedelta(days=1)


def ran_waited_ran(owner: User) -> Job:
    """A 1-card Kubernetes job that ran all April, waited 1–29 May, and ran to 31 May."""
    job = run(owner, at(1), at(31, month=5), backend="kubernetes", pool="k8s")
    JobWait.objects.create(job=job, began_at=at(1, month=5), ended_at=at(29, month=5))
    return job


def card_days(owner: User, period: Period, now=None) -> float:
    return usage_report(period=period, owner=owner, now=now).total.card_time / DAY


def test_a_wait_is_left_out_of_the_month_it_fell_in_not_the_jobs_first_month(alice):
    job = ran_waited_ran(alice)

    assert (card_days(alice, APRIL), card_days(alice, MAY)) == (30, 2)
    assert job_usage(job=job).card_time == 32 * DAY


def test_a_month_closed_while_a_job_waits_keeps_its_figures_once_the_job_runs_again(alice):
    job = run(alice, at(1), None, backend="kubernetes", pool="k8s", status=JobStatus.QUEUED)
    wait = JobWait.objects.create(job=job, began_at=at(1, month=5))
    while_waiting = card_days(alice, APRIL, now=at(15, month=5))

    JobWait.objects.filter(pk=wait.pk).update(ended_at=at(29, month=5))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, finished_at=at(31, month=5))

    assert while_waiting == card_days(alice, APRIL) == 30
    assert card_days(alice, MAY) == 2


def test_a_deleted_jobs_record_leaves_out_each_wait_in_its_own_month(alice):
    job = ran_waited_ran(alice)

    job.delete()

    assert (card_days(alice, APRIL), card_days(alice, MAY)) == (30, 2)
    assert UsageRecord.objects.get().waits.count() == 1
    assert JobWait.objects.get().job is None


def test_a_job_that_waited_a_whole_month_is_not_among_the_jobs_that_ran_in_it(alice):
    job = run(alice, at(1), at(30, month=6), backend="kubernetes", pool="k8s")
    JobWait.objects.create(job=job, began_at=at(1, month=5), ended_at=at(1, month=6))

    report = usage_report(period=MAY, owner=alice)

    assert (report.total.jobs, report.total.card_time) == (0, timedelta(0))


def test_the_report_reads_waits_in_the_same_three_queries_for_one_or_many(
    alice, bob, django_assert_num_queries
):
    for owner in (alice, bob):
        for _ in range(3):
            ran_waited_ran(owner)
    Job.objects.filter(owner=bob).delete()

    with django_assert_num_queries(3):
        report = usage_report(period=APRIL)

    assert report.total.card_time == 6 * 30 * DAY


def test_a_job_moved_back_to_queued_and_on_opens_and_closes_its_wait_by_the_row(alice):
    """A job read while Queued before its first start (stale) is stopped after another process
    ran it and moved it back to Queued: the wait ends with it (fix128 left it open beside
    finished_at and counted it)."""
    job = run(alice, None, None, backend="kubernetes", pool="k8s")
    stale = Job.objects.get(pk=job.pk)
    assert job_transition(job=job, to=JobStatus.RUNNING, reason="Running")
    assert job_transition(job=job, to=JobStatus.QUEUED, reason="Queued")
    # It had run an hour, and waited two since.
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(started_at=now - timedelta(hours=3))
    JobWait.objects.filter(job=job).update(began_at=now - timedelta(hours=2))

    assert job_transition(job=stale, to=JobStatus.STOPPED, reason="Stopped")

    job.refresh_from_db()
    assert job_usage(job=job).card_time == timedelta(hours=1)
    wait = job.waits.get()
    assert (job.status, wait.ended_at) == (JobStatus.STOPPED, job.finished_at)


def test_my_usage_counts_a_wait_in_the_month_it_fell_in(alice):
    ran_waited_ran(alice)
    client = Client()
    client.force_login(alice)

    april = client.get("/account/usage/", {"date_from": "2026-04-01", "date_to": "2026-04-30"})
    may = client.get("/account/usage/", {"date_from": "2026-05-01", "date_to": "2026-05-31"})

    assert april.context["report"].total.card_time == 30 * DAY
    assert may.context["report"].total.card_time == 2 * DAY
