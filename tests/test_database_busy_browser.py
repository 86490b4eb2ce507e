"""In the browser: 提交 pressed while another process holds SQLite past the request's wait
shows the page saying the database is busy (not "Server error"), and pressed again after going
back, once the lock is gone, makes the job once (QA 69). The lock is real, on the test
database's file; the request's wait is shortened to 1 s (tests/test_database_busy.py)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from jobs import wizard as W
from jobs.models import Job

from .conftest import log_in
from .test_database_busy import _short_wait, database_held  # noqa: F401
from .test_wizard import A800, complete_steps, new_draft, step_url

pytestmark = pytest.mark.browser


def test_submit_pressed_while_the_database_is_busy_says_so_and_pressed_again_makes_one_job(
    page, alice, settings, tmp_path
):
    from playwright.sync_api import expect

    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft)
    log_in(page, "alice", "alice-password")
    page.goto(step_url(draft, W.REVIEW))

    with database_held():
        page.click("#wizard-submit")
        expect(page.locator("h1")).to_have_text("数据库正忙")
    assert not Job.objects.exists()
    page.go_back()
    page.click("#wizard-submit")
    page.wait_for_url("**/jobs/*/")

    job = Job.objects.get()
    assert page.url.endswith(reverse("job-detail", args=[job.public_id]))
    expect(page.locator("body")).to_contain_text(f"任务 {job.name} 已提交")
    assert Job.objects.count() == 1
