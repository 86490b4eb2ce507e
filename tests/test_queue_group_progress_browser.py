"""A queue group's progress on a task's page follows its tasks while the page is open (qa109:
right after submit it said "排队中：3" beside "状态已变为：运行中" until a reload)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import Job, JobStatus

from .test_group_stop_browser import sweep

pytestmark = pytest.mark.browser


def test_the_groups_progress_is_redrawn_as_its_tasks_change_without_a_reload(logged_in_page, alice):
    tasks = sweep(alice, 3)
    page = logged_in_page
    page.goto(f"/jobs/{tasks[0].public_id}/")
    expect(page.locator("#group-progress")).to_contain_text("排队中：3")
    questions: list[str] = []
    page.on("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))

    Job.objects.filter(group_id=tasks[0].group_id).update(status=JobStatus.RUNNING)

    expect(page.locator("#group-progress")).to_contain_text("所在任务组共 3 个任务：运行中：3。")
    page.click("#group-stop")  # the form drawn again still asks first
    assert questions and "3 个未结束的任务" in questions[0]
    assert Job.objects.filter(group_id=tasks[0].group_id, status=JobStatus.RUNNING).count() == 3
