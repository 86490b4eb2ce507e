"""A staff Stop in the admin takes an optional reason, which the owner sees in the job's
event and the reason it ends with (qa98: "admin 请求停止。", then "已停止。")."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client
from django.utils import translation

from jobs.models import Job, JobStatus
from jobs.worker import Worker

from .runner_helpers import (
    UNTIL_THE_GATE_OPENS,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)

pytestmark = pytest.mark.usefixtures("runner_settings")

CHANGELIST = "/admin/jobs/job/"
REASON = "The A800 pool is drained for maintenance tonight."


def reviewer_client(reviewer) -> Client:
    client = Client()
    client.force_login(reviewer)
    client.cookies["django_language"] = "en"
    return client


def stop_in_the_admin(client: Client, job: Job, reason: str):
    asked = client.post(CHANGELIST, {"action": "stop_jobs", "_selected_action": [job.pk]})
    assert asked.status_code == 200 and 'name="reason"' in asked.content.decode()
    return client.post(
        CHANGELIST,
        {"action": "stop_jobs", "_selected_action": [job.pk], "post": "yes", "reason": reason},
    )


def test_a_queued_job_stopped_with_a_reason_shows_it_to_its_owner_in_either_language(
    alice, reviewer
):
    job = submit(alice, make_spec("true"))

    done = stop_in_the_admin(reviewer_client(reviewer), job, f"  {REASON}\r\n")

    assert done.status_code == 302
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    with translation.override("en"):
        assert job.status_reason_shown == f"Stopped by carol: {REASON}"
    with translation.override("zh-hans"):
        assert job.status_reason_shown == f"已由 carol 停止：{REASON}"
    assert job.events.filter(message__contains=REASON).exists()


def test_a_running_local_job_stopped_with_a_reason_ends_with_it_and_its_event_says_it(
    alice, reviewer
):
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="the job running")

    stop_in_the_admin(reviewer_client(reviewer), job, REASON)
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, what="the job stopped")

    job.refresh_from_db()
    with translation.override("en"):
        assert job.status_reason_shown == f"Stopped by carol: {REASON}"
        requested = job.events.get(reason="StopRequested")
        assert requested.message_shown == f"Stop requested by carol: {REASON}"


def test_a_stop_reason_too_long_is_said_on_its_box_kept_and_nothing_stopped(alice, reviewer):
    job = submit(alice, make_spec("true"))
    long_reason = "x" * 1001

    page = stop_in_the_admin(reviewer_client(reviewer), job, long_reason)

    assert page.status_code == 200
    html = page.content.decode()
    assert "Keep the reason to 1000 characters (this one has 1001)" in html
    assert f">{long_reason}</textarea>" in html
    assert status_of(job) == JobStatus.QUEUED


def test_a_stop_without_a_reason_reads_as_before(alice, reviewer):
    job = submit(alice, make_spec("true"))

    stop_in_the_admin(reviewer_client(reviewer), job, "")

    job.refresh_from_db()
    with translation.override("en"):
        assert job.status_reason_shown == "Stopped by carol."


@pytest.mark.parametrize(
    ("control", "code"), [("\x00", "U+0000"), ("\x1b[31m", "U+001B"), ("\x7f", "U+007F")]
)
def test_a_stop_reason_with_a_control_character_is_said_on_its_box_kept_and_nothing_written(
    alice, reviewer, control, code
):
    # A NUL was a 500 on PostgreSQL (the event's text, the history's JSON): refused before
    # anything is written, as SQLite (which would take it) shows.
    job = submit(alice, make_spec("true"))
    events = job.events.count()
    reason = f"Drained{control} tonight.\n\tSee the wiki."

    page = stop_in_the_admin(reviewer_client(reviewer), job, reason)

    assert page.status_code == 200
    html = page.content.decode()
    assert f"The reason has an invisible control character ({code}): delete it." in html
    assert f">{reason}</textarea>" in html
    assert status_of(job) == JobStatus.QUEUED
    assert job.events.count() == events
    assert not LogEntry.objects.exists()


def test_a_stop_reason_with_a_control_character_is_refused_in_chinese_too(alice, reviewer):
    job = submit(alice, make_spec("true"))
    client = reviewer_client(reviewer)
    client.cookies["django_language"] = "zh-hans"

    page = stop_in_the_admin(client, job, "维护\x00")

    assert "原因中有一个看不见的控制字符（U+0000）：请删除它。" in page.content.decode()
    assert status_of(job) == JobStatus.QUEUED


def test_a_stop_reason_with_line_breaks_and_tabs_is_taken(alice, reviewer):
    job = submit(alice, make_spec("true"))

    stop_in_the_admin(reviewer_client(reviewer), job, "Drained tonight.\r\n\tSee the wiki.")

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.events.filter(message__contains="Drained tonight.\n\tSee the wiki.").exists()
