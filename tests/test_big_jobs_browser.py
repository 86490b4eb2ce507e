"""A big job's page in a browser: the usage of its 64 running replicas (QA 56)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from jobs.monitoring import USAGE_SHOWN

from .test_big_jobs import running, with_usage

pytestmark = pytest.mark.browser


def test_show_them_all_lists_every_running_replicas_usage_and_the_refresh_keeps_them(
    logged_in_page, alice, settings, tmp_path
):
    settings.LOCAL_VOLUMES = f"work={tmp_path}"
    job = with_usage(running(alice, 63))
    page = logged_in_page
    rows = page.locator("#usage tbody tr")

    page.goto(reverse("job-detail", args=[job.public_id]))
    expect(rows).to_have_count(USAGE_SHOWN)
    expect(page.locator("#usage-hidden")).to_contain_text(
        f"另有 {64 - USAGE_SHOWN} 个运行中的实例未显示。"
    )
    page.click("#usage-all")

    expect(rows).to_have_count(64)
    expect(page.locator("#usage-hidden")).to_have_count(0)
    for _refresh in range(2):  # the second's answer comes after the first was drawn
        with page.expect_response(lambda response: "/live/" in response.url):
            pass
    expect(rows).to_have_count(64)
    expect(rows.last).to_contain_text("worker-62")
