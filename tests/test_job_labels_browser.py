"""Labels in a real browser: typed in the wizard, then followed from the job page (htmx on)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from jobs.services import jobs_submit
from tests.test_wizard_browser import _local_pool, next_step, start  # noqa: F401

pytestmark = pytest.mark.browser


def test_two_labels_typed_in_the_wizard_link_from_the_job_page_to_the_list_filtered_by_one(
    logged_in_page, alice
):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "lr-sweep-1")
    page.click("#add-label")
    # wizard.js puts the focus on the new row's first field.
    expect(page.locator("#id_label-0-key")).to_be_focused()
    page.keyboard.type("project")
    page.fill("#id_label-0-value", "llm")
    page.click("#add-label")
    page.fill("#id_label-1-key", "exp")
    page.fill("#id_label-1-value", "lr-sweep")
    next_step(page, "image")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    for slug in ("resources", "data", "fault", "advanced", "submission", "review"):
        if slug == "fault":
            page.fill("#id_mounts-0-mount_path", "/workspace")
        next_step(page, slug)
    expect(page.locator("#request-json")).to_contain_text('"key": "exp"')
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    # Another job of the project, not of this sweep: the sweep's label leaves it out.
    other = Job.objects.get().job_spec()
    other.name, other.labels = "other-run", [("project", "llm"), ("exp", "other")]
    jobs_submit(owner=alice, spec=other, submit_key="other")

    labels = page.locator("#job-labels a")
    expect(labels).to_have_text(["project=llm", "exp=lr-sweep"])
    page.get_by_role("link", name="带标签 exp=lr-sweep 的任务").click()

    page.wait_for_url(re.compile(r"/\?label=exp%3Dlr-sweep$"))
    expect(page.locator("tbody tr[data-job]")).to_have_count(1)
    expect(page.locator("tbody tr[data-job]")).to_contain_text("lr-sweep-1")
    expect(page.locator("#label-filters")).to_contain_text("exp=lr-sweep")
