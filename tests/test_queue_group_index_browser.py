"""A researcher sweeping a learning rate with one queue group: the wizard says which variable
tells the group's tasks apart, and each task's page shows its own value."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.test_wizard_browser import fill_basic, next_step, start

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def test_a_queue_group_of_six_is_told_its_index_in_the_wizard_and_on_each_tasks_page(
    logged_in_page, alice
):
    page = logged_in_page
    start(page)
    fill_basic(page, name="lr-sweep")
    # The image step lists the variable among those the local runner sets.
    expect(page.locator("#injected-vars")).to_contain_text("AIHC_GROUP_TASK_INDEX")
    page.fill("#id_image", "python:3.12")
    page.fill(
        "#id_command",
        "LRS=(0.1 0.03 0.01 0.003 0.001 0.0003)\n"
        "python3 /workspace/train.py --lr ${LRS[$AIHC_GROUP_TASK_INDEX]}",
    )
    next_step(page, "resources")
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ("fault", "advanced", "submission"):
        next_step(page, slug)
    page.check("input[name=mode][value=queue]")
    page.fill("#id_total", "6")
    page.fill("#id_concurrency", "2")
    next_step(page, "review")
    preview = page.locator("#env-preview")
    expect(preview).to_contain_text("AIHC_GROUP_TASK_INDEX=0 到 5")
    expect(preview).to_contain_text("AIHC_GROUP_TASK_TOTAL=6")
    page.click("#wizard-submit")

    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    jobs = list(Job.objects.filter(owner=alice).order_by("group_index"))
    assert [j.group_index for j in jobs] == [1, 2, 3, 4, 5, 6]
    page.goto(f"/jobs/{jobs[2].public_id}/")
    page.click("#replica-envs summary")
    # Every replica of task 3/6 (master-0, worker-0) is told the same.
    for table in page.locator("#replica-envs table").all():
        index = table.locator("tr", has_text="AIHC_GROUP_TASK_INDEX").locator("td")
        expect(index).to_have_text("2")
        total = table.locator("tr", has_text="AIHC_GROUP_TASK_TOTAL").locator("td")
        expect(total).to_have_text("6")

    # The best task of the sweep, run again alone, keeps its own place: 2 of 6, not 0 of 1.
    page.click("#job-rerun")
    page.wait_for_url(lambda url: jobs[2].public_id not in url and "/jobs/pytorchjob-" in url)
    again = Job.objects.get(owner=alice, source_job=jobs[2])
    assert again.group.total == 1
    page.click("#replica-envs summary")
    for table in page.locator("#replica-envs table").all():
        index = table.locator("tr", has_text="AIHC_GROUP_TASK_INDEX").locator("td")
        expect(index).to_have_text("2")


def test_copy_this_task_opens_a_draft_of_that_task_whose_review_says_it_keeps_its_place(
    logged_in_page, alice
):
    from jobs import spec as S
    from jobs.actions import job_rerun
    from jobs.services import jobs_submit

    from .runner_helpers import make_spec

    spec = make_spec(
        "true", name="sweep-lr", submission=S.Submission(S.SUBMIT_QUEUE, total=8), datasources=[]
    )
    tasks = jobs_submit(owner=alice, spec=spec, submit_key="sweep")
    [again] = job_rerun(job=tasks[5], owner=alice)
    page = logged_in_page

    # Task 6/8 run again reads as that task in the list, not as 1/1.
    page.goto("/")
    expect(page.locator(f'tr[data-job="{again.public_id}"] .group-task')).to_have_text(
        "6/8（再次）"
    )
    page.goto(f"/jobs/{tasks[5].public_id}/")
    page.get_by_role("button", name="复制此任务").click()

    page.wait_for_url(re.compile(r"/create/.+/basic/"))
    expect(page.locator(".alert-info").nth(1)).to_contain_text("草稿只包含任务 6/8")
    page.goto(page.url.replace("/basic/", "/review/"))
    expect(page.locator("#task-copy-note")).to_have_text(
        "这是任务 6/8 单独的副本：它的环境变量中有 AIHC_GROUP_TASK_INDEX=5 和 "
        "AIHC_GROUP_TASK_TOTAL=8，与该任务运行时相同，因此扫参脚本会选取同一个参数点。"
    )
    expect(page.locator("#copy-diff")).not_to_contain_text("0 到 7")
