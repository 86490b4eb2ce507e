"""Choosing one's time zone in a browser, as a person in Berlin would (jobs.time_zones)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from jobs.models import Job

from .test_job_pages_browser import submitted

pytestmark = pytest.mark.browser


def test_a_user_in_berlin_chooses_their_zone_and_reads_the_job_list_and_job_page_in_it(
    logged_in_page, alice
):
    job = submitted(alice, "midnight")
    # Midnight on December 1st in Shanghai, 17:00 on November 30th in Berlin.
    Job.objects.filter(pk=job.pk).update(created_at=datetime(2026, 11, 30, 16, 0, tzinfo=UTC))
    page = logged_in_page
    page.goto("/")
    row = page.locator(f'#job-table tr[data-job="{job.public_id}"]')
    expect(row).to_contain_text("2026-12-01 00:00:00")

    page.click("#nav-account")
    zone = page.get_by_label("时区")
    expect(zone).to_have_value("")  # the console's, Asia/Shanghai
    zone.select_option("Europe/Berlin")
    page.click("#time-zone-submit")

    expect(page.locator(".alert-success")).to_contain_text("时间现按柏林（Europe/Berlin，UTC+0")
    expect(page.get_by_label("时区")).to_have_value("Europe/Berlin")
    expect(page.get_by_label("时区")).to_be_focused()  # not 旧密码, far from the message
    page.click("a.navbar-brand")
    expect(row).to_contain_text("2026-11-30 17:00:00")
    expect(page.locator("#id_created_from")).to_have_attribute(
        "title", "Europe/Berlin 时区的日期，含当天"
    )
    row.get_by_role("link", name="midnight").click()
    created = page.locator("xpath=//dt[normalize-space()='创建时间']/following-sibling::dd[1]")
    expect(created).to_have_text("2026-11-30 17:00:00")
