"""A status reason of several lines as a person reads it: on its lines on the job page, on one
line in the job list, joined by " / " (fix108)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .test_multi_line_reasons import rejected_in_two_lines

pytestmark = pytest.mark.browser


def test_a_reason_of_several_lines_reads_on_its_lines_on_the_job_page_and_joined_in_the_list(
    logged_in_page, alice, reviewer
):
    job = rejected_in_two_lines(alice, reviewer)
    page = logged_in_page

    page.goto("/")
    listed = page.locator(f'tr[data-job="{job.public_id}"] .job-status-reason')
    expect(listed).to_have_text("Too many cards. / Ask for 8 at most. / Then submit again.")

    page.goto(f"/jobs/{job.public_id}/")
    reason = page.locator("#status-reason")
    expect(reason).to_be_visible()
    # innerText as laid out: the line breaks kept (white-space: pre-line), not spaces.
    lines = [line.strip() for line in reason.inner_text().splitlines()]
    assert [line for line in lines if line] == [
        "Too many cards.",
        "Ask for 8 at most.",
        "Then submit again.",
    ]
