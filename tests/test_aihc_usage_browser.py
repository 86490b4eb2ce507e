"""An AIHC job's resource usage, read by the worker from AIHC's job metrics, seen in a browser."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.test_aihc_usage import GIB, fake, running_job  # noqa: F401

pytestmark = pytest.mark.browser


def test_a_person_opens_a_running_aihc_job_from_the_list_and_sees_its_pods_usage(
    logged_in_page,
    alice,
    fake,  # noqa: F811
):
    job, worker, [master, worker_pod] = running_job(alice, fake)
    when = int(time.time()) - 20
    fake.set_metrics(job.external_id, master, "CpuUsage", [(when, 1.5), (when + 15, 0.75)])
    fake.set_metrics(job.external_id, master, "MemoryUsage", [(when, GIB), (when + 15, 2 * GIB)])
    worker.sync_remote()  # the worker's tick: AIHC's metrics become the job's samples
    page = logged_in_page

    page.goto("/")
    page.get_by_role("link", name=job.name, exact=True).click()

    expect(page.get_by_role("heading", name="资源使用")).to_be_visible()
    usage = page.locator("#usage")
    master_row = usage.locator("tr", has_text="master-0")
    expect(master_row.locator(".usage-cpu")).to_contain_text("0.75 核")
    expect(master_row.locator(".usage-memory")).to_contain_text("2.0 GB")
    expect(master_row.locator(".usage-tmp")).to_contain_text("百舸 AIHC 不测量此项")
    # The worker pod has no point from AIHC yet: said in words, not shown as zero.
    expect(usage.locator("tr", has_text="worker-0")).to_contain_text("尚未采样")
    expect(page.locator("#usage-unavailable")).to_have_count(0)
