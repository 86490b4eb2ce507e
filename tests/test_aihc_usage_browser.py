"""An AIHC job's resource usage, read by the worker from AIHC's job metrics, seen in a browser."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.test_aihc_usage import fake, running_job  # noqa: F401

pytestmark = pytest.mark.browser


def test_a_person_opens_a_running_aihc_job_from_the_list_and_sees_its_pods_utilisation(
    logged_in_page,
    alice,
    fake,  # noqa: F811
):
    job, worker, [master, worker_pod] = running_job(alice, fake)
    when = int(time.time()) - 20
    fake.set_metrics(job.external_id, master, "GpuUsage", [(when, 95.0), (when + 15, 88.04)])
    fake.set_metrics(job.external_id, master, "CpuUsage", [(when, 15.0), (when + 15, 7.5)])
    fake.set_metrics(job.external_id, master, "MemoryUsage", [(when, 40.0), (when + 15, 42.0)])
    worker.sync_remote()  # the worker's tick: AIHC's metrics become the job's samples
    page = logged_in_page

    page.goto("/")
    page.get_by_role("link", name=job.name, exact=True).click()

    expect(page.get_by_role("heading", name="资源使用")).to_be_visible()
    usage = page.locator("#usage")
    for column in ("GPU 使用率", "CPU 使用率", "内存使用率"):
        expect(usage.get_by_role("columnheader", name=column)).to_be_visible()
    master_row = usage.locator("tr", has_text="master-0")
    expect(master_row.locator(".usage-gpu")).to_contain_text("88.0%GPU 使用率")
    expect(master_row.locator(".usage-cpu")).to_contain_text("7.5%CPU 使用率")
    expect(master_row.locator(".usage-memory")).to_contain_text("42.0%内存使用率")
    expect(master_row.get_by_role("img", name="最低 88.0%，最高 95.0%")).to_be_visible()
    expect(usage).not_to_contain_text("核")
    # The worker pod has no point from AIHC yet: said in words, not shown as zero.
    expect(usage.locator("tr", has_text="worker-0")).to_contain_text("尚未采样")
    expect(page.locator("#usage-unavailable")).to_have_count(0)
