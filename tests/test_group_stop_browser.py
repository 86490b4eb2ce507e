"""Stop the group clicked as a person would (qa93): on a task's page, where its group's
progress shows, and on the job list filtered by the group; the browser asks first, naming how
many tasks it stops."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from jobs import spec as S
from jobs.models import Job, JobStatus
from jobs.services import jobs_submit

pytestmark = pytest.mark.browser


def sweep(owner, total: int) -> list[Job]:
    spec = S.parse_document(
        {
            "name": "sweep",
            "queue": "default",
            "jobFramework": "PyTorchJob",
            "jobSpec": {"image": "registry.example.com/x:1", "command": "true", "replicas": 1},
        },
        resource_pool_id="local",
    )
    spec.submission = S.Submission(S.SUBMIT_QUEUE, total=total, concurrency=1)
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)


def test_stop_the_group_on_a_tasks_page_asks_naming_how_many_then_stops_them_all(
    logged_in_page, alice
):
    tasks = sweep(alice, 30)
    page = logged_in_page
    page.goto(f"/jobs/{tasks[2].public_id}/")
    questions: list[str] = []

    def answer(dialog) -> None:
        questions.append(dialog.message)
        dialog.dismiss() if len(questions) == 1 else dialog.accept()

    page.on("dialog", answer)
    expect(page.locator("#group-stop")).to_have_text("停止整组（30 个未结束的任务）")
    page.click("#group-stop")  # cancelled
    assert Job.objects.filter(group_id=tasks[0].group_id, status=JobStatus.QUEUED).count() == 30
    page.click("#group-stop")  # confirmed

    expect(page.locator("#group-progress")).to_contain_text("已停止：30")
    expect(page.locator("#group-stop")).to_have_count(0)
    assert page.url.endswith(f"/jobs/{tasks[2].public_id}/")
    assert re.search("停止此队列任务组中 30 个未结束的任务", questions[0])
    assert Job.objects.filter(group_id=tasks[0].group_id, status=JobStatus.STOPPED).count() == 30


def test_stop_the_group_on_the_list_filtered_by_it(logged_in_page, alice):
    tasks = sweep(alice, 12)
    other = sweep(alice, 3)
    page = logged_in_page
    page.goto(f"/?group={tasks[0].group_id}")
    page.once("dialog", lambda dialog: dialog.accept())

    page.click("#group-stop")

    page.wait_for_url(re.compile(rf"/\?group={tasks[0].group_id}$"))
    expect(page.locator(".alert-success")).to_contain_text("12")
    expect(page.locator("#group-stop")).to_have_count(0)
    assert Job.objects.filter(group_id=tasks[0].group_id, status=JobStatus.STOPPED).count() == 12
    # Another group is left as it was.
    assert Job.objects.filter(group_id=other[0].group_id, status=JobStatus.QUEUED).count() == 3
