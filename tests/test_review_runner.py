"""Review with the real local runner: held jobs are not dispatched, approved ones run, and a
reviewer's stop ends a running job."""

from __future__ import annotations

import time
import uuid

import pytest
from django.test import Client

from jobs.models import JobStatus, ReviewMode, ReviewPolicy
from jobs.review import job_approve
from jobs.worker import Worker

from .runner_helpers import (
    log_text,
    make_spec,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)

pytestmark = pytest.mark.usefixtures("runner_settings")


def test_a_job_pending_review_is_not_dispatched_until_approved(alice, reviewer):
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    job = submit(alice, make_spec("echo reviewed-and-ran"))
    worker = Worker()

    deadline = time.monotonic() + 1
    while time.monotonic() < deadline:
        worker.tick()
        time.sleep(0.05)
    assert status_of(job) == JobStatus.PENDING_REVIEW
    assert log_text(job, "master-0") == ""

    job_approve(job=job, reviewer=reviewer)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="the approved job")

    assert "reviewed-and-ran" in log_text(job, "master-0")


def test_a_reviewer_stops_a_running_job_from_the_admin(alice, reviewer):
    name = f"reviewer-stops-me-{uuid.uuid4().hex[:8]}"  # unique on a shared machine
    token = f"{name}-x"
    # The name is assembled by the shell: the command's text, on the command lines of the
    # shim and bwrap too, would match while the sleeper is not yet running (or never is).
    job = submit(alice, make_spec(f'T={name}; exec -a "$T-x" sleep 300'))
    worker = Worker()
    run_until(worker, lambda: len(processes_with(token)) == 1, what="the sleeper")
    client = Client()
    client.force_login(reviewer)

    r = client.post(
        "/admin/jobs/job/",
        {"action": "stop_jobs", "_selected_action": [job.pk], "post": "yes"},
    )
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, what="the stop")

    assert r.status_code == 302
    assert processes_with(token) == []
    requested = job.events.get(reason="StopRequested")
    assert requested.actor == reviewer


def test_a_secret_env_reaches_the_job_but_no_event_log_record_or_page(alice, caplog):
    import logging

    from jobs import spec as S

    caplog.set_level(logging.DEBUG)
    spec = make_spec(
        # Checks the value without spelling it out in the (visible) command.
        'test "${API_TOKEN:0:6}" = runner && test ${#API_TOKEN} -eq 19 && echo token-arrived',
        envs=[S.Env("API_TOKEN", "runner-secret-value", secret=True)],
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job")
    client = Client()
    client.force_login(alice)

    page = client.get(f"/jobs/{job.public_id}/").content.decode()

    assert "token-arrived" in log_text(job, "master-0")
    assert "runner-secret-value" not in page
    assert "runner-secret-value" not in caplog.text
    assert not job.events.filter(message__contains="runner-secret-value").exists()
