"""The job list's 3-second refresh, as a team lead on a busy list meets it: rows come and go
under a filter while jobs are ticked for a bulk action, and no tick is lost or made on the way."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import JobStatus
from jobs.services import job_transition

from .test_job_pages_browser import submitted

pytestmark = pytest.mark.browser


def test_a_job_ticked_on_page_2_that_the_refresh_brings_onto_page_1_stays_ticked_and_selected(
    logged_in_page, alice
):
    # Queued with no worker: the list refreshes every 3 s. queued-00 alone is on page 2.
    jobs = [submitted(alice, f"queued-{n:02d}") for n in range(21)]
    oldest, newest = jobs[0], jobs[-1]
    page = logged_in_page
    page.goto("/?status=queued&page=2")
    page.check(f"#select-{oldest.public_id}")
    page.get_by_role("link", name="上一页").click()
    page.wait_for_url(f"**/?status=queued&page=1&sel={oldest.public_id}")
    expect(page.locator("#selection-count")).to_have_text("已选 1 个任务")

    # The newest job ends (another tab, the worker): it leaves the filter, and the next refresh
    # moves queued-00 up from page 2 into this page.
    job_transition(job=newest, to=JobStatus.FAILED, reason="Test")
    expect(page.locator(f'tr[data-job="{oldest.public_id}"]')).to_be_visible()

    # Still ticked and still selected, as it was on page 2 (its box came unticked from the
    # refresh, which does not carry the selection, and the page dropped it without a word).
    expect(page.locator(f"#select-{oldest.public_id}")).to_be_checked()
    expect(page.locator("#selection-count")).to_have_text("已选 1 个任务")
    expect(page.locator("#selection-jobs .selection-job")).to_have_text(["queued-00 ×"])
    page.click("#bulk-stop")
    expect(page.locator("#bulk-jobs tbody tr")).to_have_count(1)
    expect(page.locator(f'#bulk-jobs tr[data-job="{oldest.public_id}"]')).to_be_visible()
