from __future__ import annotations

import re

import pytest

from jobs import spec as S
from jobs.models import FINAL_STATUSES, TRANSITIONS, Job, JobStatus
from jobs.services import TransitionError, job_transition, jobs_submit

A800 = "baidu.com/a800_80g_cgpu"


def make_spec(**changes) -> S.JobSpec:
    spec = S.JobSpec(
        name="demo",
        resource_pool_id="local",
        image="python:3.12",
        command="echo hi",
        roles=[S.Role("master", 1, A800, 2), S.Role("worker", 1, A800, 2)],
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


def test_submitting_a_spec_creates_a_queued_job_with_an_api_style_id(alice):
    [job] = jobs_submit(owner=alice, spec=make_spec(), submit_key="k1")

    assert re.fullmatch(r"pytorchjob-[0-9a-f-]{36}", job.public_id)
    assert job.status == JobStatus.QUEUED
    assert job.total_cards == 4
    assert job.job_spec() == make_spec()
    assert [e.reason for e in job.events.all()] == ["Created"]


@pytest.mark.parametrize(
    ("framework", "roles", "prefix"),
    [
        (S.MPI, [S.Role("master"), S.Role("worker", 1)], "mpijob-"),
        (S.TENSORFLOW, [S.Role("worker", 1)], "tfjob-"),
        (S.CUSTOM, [S.Role("server", 1)], "customjob-"),
    ],
)
def test_job_ids_follow_the_framework(alice, framework, roles, prefix):
    [job] = jobs_submit(
        owner=alice, spec=make_spec(framework=framework, roles=roles), submit_key=prefix
    )

    assert job.public_id.startswith(prefix)


def test_submitting_the_same_key_twice_creates_one_job(alice):
    first = jobs_submit(owner=alice, spec=make_spec(), submit_key="same")
    second = jobs_submit(owner=alice, spec=make_spec(), submit_key="same")

    assert first == second
    assert Job.objects.count() == 1


def test_a_queue_group_creates_its_tasks_once(alice):
    spec = make_spec(submission=S.Submission(S.SUBMIT_QUEUE, total=3, concurrency=2))

    jobs = jobs_submit(owner=alice, spec=spec, submit_key="group")
    again = jobs_submit(owner=alice, spec=spec, submit_key="group")

    assert len(jobs) == 3 and again == jobs
    assert jobs[0].group.concurrency == 2
    assert Job.objects.count() == 3


def test_an_invalid_spec_is_not_submitted(alice):
    with pytest.raises(S.SpecError) as excinfo:
        jobs_submit(owner=alice, spec=make_spec(name="Bad"), submit_key="bad")

    assert "name" in excinfo.value.errors
    assert Job.objects.count() == 0


def test_transitions_follow_the_state_machine_and_record_events(alice):
    [job] = jobs_submit(owner=alice, spec=make_spec(), submit_key="t")

    assert job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    assert job.started_at is not None
    assert job_transition(job=job, to=JobStatus.SUCCEEDED, reason="Succeeded", message="exit 0")

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.finished_at is not None
    assert [e.reason for e in job.events.all()] == ["Created", "Started", "Succeeded"]


def test_a_job_ends_when_its_processes_ended_but_never_before_it_started(alice):
    from datetime import timedelta

    [job] = jobs_submit(owner=alice, spec=make_spec(), submit_key="t")
    assert job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    started = job.started_at

    # An exit record a hair before the worker's Running stamp (a command that ends at once).
    ended_early = started - timedelta(milliseconds=5)
    assert job_transition(job=job, to=JobStatus.SUCCEEDED, reason="Succeeded", ended_at=ended_early)

    job.refresh_from_db()
    assert job.finished_at == started


def test_a_job_ends_when_its_processes_ended_not_when_a_worker_recorded_it(alice):
    from datetime import timedelta

    [job] = jobs_submit(owner=alice, spec=make_spec(), submit_key="t")
    assert job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    exited = job.started_at + timedelta(microseconds=1)

    assert job_transition(job=job, to=JobStatus.FAILED, reason="Failed", ended_at=exited)

    job.refresh_from_db()
    assert job.finished_at == exited


def test_a_final_job_cannot_move_again(alice):
    [job] = jobs_submit(owner=alice, spec=make_spec(), submit_key="f")
    job_transition(job=job, to=JobStatus.STOPPED, reason="Stopped")

    with pytest.raises(TransitionError):
        job_transition(job=job, to=JobStatus.RUNNING, reason="Started")


def test_a_stale_transition_loses_to_the_one_that_won(alice):
    [job] = jobs_submit(owner=alice, spec=make_spec(), submit_key="race")
    stale = Job.objects.get(pk=job.pk)
    job_transition(job=job, to=JobStatus.STOPPED, reason="Stopped")

    assert job_transition(job=stale, to=JobStatus.RUNNING, reason="Started") is False
    assert stale.status == JobStatus.STOPPED
    assert stale.events.filter(reason="Started").count() == 0


def test_every_status_is_in_the_state_machine_and_finals_have_no_exit():
    assert set(TRANSITIONS) == set(JobStatus.values)
    assert FINAL_STATUSES == {
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.STOPPED,
        JobStatus.TIMED_OUT,
    }
    assert all(targets <= set(JobStatus.values) for targets in TRANSITIONS.values())
