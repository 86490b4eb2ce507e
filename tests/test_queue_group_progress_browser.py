"""A queue group's progress on a task's page follows its tasks while the page is open (qa109:
right after submit it said "排队中：3" beside "状态已变为：运行中" until a reload)."""

from __future__ import annotations

import re

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


def live_refreshes(page, count: int = 2) -> None:
    """Waits for `count` of the page's 2 s refreshes to be answered: the first's swap is done
    once the next is asked for (htmx asks again only after it settled)."""
    for _ in range(count):
        with page.expect_response(lambda r: r.url.endswith("/live/")):
            pass


@pytest.mark.parametrize("button", ["#group-stop", "#job-stop"])
def test_a_stop_tapped_again_while_its_post_is_on_its_way_is_neither_asked_nor_sent(
    logged_in_page, alice, button
):
    # review62 (qa45): the 2 s refresh drew a fresh copy of the confirmed form, without its
    # data-sent, so a second tap on a slow network was asked and sent again.
    tasks = sweep(alice, 3)
    Job.objects.filter(group_id=tasks[0].group_id).update(status=JobStatus.RUNNING)
    page = logged_in_page
    page.goto(f"/jobs/{tasks[0].public_id}/")
    questions: list[str] = []
    page.on("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    held = []  # the stop's POST, never answered: a network slower than the refreshes
    page.route(re.compile(r"/stop/$"), lambda route: held.append(route))

    page.click(button, no_wait_after=True)  # its navigation is held
    live_refreshes(page)
    # Tapped again (Playwright's own click would wait for the held navigation to end).
    page.evaluate("selector => document.querySelector(selector).click()", button)
    live_refreshes(page)

    assert (len(questions), len(held)) == (1, 1)
    assert Job.objects.filter(group_id=tasks[0].group_id, status=JobStatus.RUNNING).count() == 3
