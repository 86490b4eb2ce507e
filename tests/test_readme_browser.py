"""README's first steps for a newcomer, clicked through in a browser as README words them:
the image, command and mount path are read from README, so a step README no longer describes
right fails here."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job, JobStatus
from tests.conftest import log_in

from .runner_helpers import runner_settings, worker_in_thread  # noqa: F401
from .test_readme import README

pytestmark = pytest.mark.browser


def first_job_paragraph() -> str:
    return README.split("**A first job.**", 1)[1].split("\n\n", 1)[0]


@pytest.fixture
def worker(runner_settings, tmp_path):  # noqa: F811
    """The worker `make run` starts beside the web server, on the local pool's defaults: no
    cards, the scratch volume."""
    runner_settings.LOCAL_ACCELERATORS = ""
    runner_settings.LOCAL_VOLUMES = f"scratch={tmp_path / 'scratch'}"
    with worker_in_thread():
        yield


def test_a_newcomers_first_job_as_the_readme_tells_it_runs_and_prints_its_answer(
    page, alice, worker
):
    text = first_job_paragraph()
    # What README tells the newcomer to type, taken from README itself.
    image = re.search(r"e\.g\. `([^`]+)` \(a name without a tag", text)[1]  # type: ignore[index]
    command = re.search(r"a command such as\s+`([^`]+)`", text)[1]  # type: ignore[index]
    mount = re.search(r"a container mount path such as `([^`]+)` on step 4", text)[1]  # type: ignore[index]
    assert (image, command, mount) == ("python:3.12", "python3 -c 'print(6*7)'", "/workspace")

    log_in(page, "alice", "alice-password")
    # "Until then the job list says what a job is and offers 创建第一个训练任务 ..."
    assert "**创建第一个训练任务**" in text
    expect(page.get_by_role("link", name="创建第一个训练任务")).to_be_visible()
    expect(page.locator("#job-filters")).to_have_count(0)

    # "**创建任务** (Create job) › **新建训练任务**, then on each step **下一步** (Next)"
    page.get_by_role("link", name="创建任务", exact=True).click()
    page.get_by_role("button", name="新建训练任务").click()
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    steps = ["image", "resources", "data", "fault", "advanced", "submission", "review"]
    for step in steps:
        if step == "resources":
            page.fill("#id_image", image)
            page.fill("#id_command", command)
        if step == "fault":  # the step before it, step 4, is the data step
            page.fill("#id_mounts-0-mount_path", mount)
        page.get_by_role("button", name="下一步").click()
        page.wait_for_url(re.compile(rf"/{step}/$"))
    # "... and **提交** (Submit) on the last."
    page.get_by_role("button", name="提交").click()
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))

    # "The job page shows its status and log."
    expect(page.locator("#job-status")).to_contain_text("成功", timeout=60_000)
    expect(page.locator("#log-panel")).to_contain_text("42")
    job = Job.objects.get(owner=alice)
    assert job.status == JobStatus.SUCCEEDED
    assert job.job_spec().image == image
