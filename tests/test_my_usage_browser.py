"""A user opens My usage from the navigation and switches to last month, in a browser."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from jobs.usage import Period
from tests.test_usage_report import run

pytestmark = pytest.mark.browser


def test_a_user_opens_my_usage_from_the_navigation_and_switches_to_last_month(
    logged_in_page, alice, bob
):
    this_month = Period.this_month()
    last_month = Period.this_month(today=this_month.first - timedelta(days=1))
    noon = last_month.starts_at + timedelta(days=3, hours=12)
    last = run(alice, noon, noon + timedelta(hours=5), cards=2)  # 10 card-hours last month
    run(bob, noon, noon + timedelta(hours=7), cards=8)  # Bob's: not on Alice's page
    page = logged_in_page

    page.click("#nav-usage")

    expect(page.locator("h1")).to_have_text("我的用量")
    expect(page.locator("#nav-usage")).to_have_attribute("aria-current", "page")
    expect(page.locator("#id_date_from")).to_have_value(this_month.first.isoformat())
    expect(page.locator("#usage-jobs")).to_have_text("0")

    page.click("#usage-last-month")

    expect(page.locator("#id_date_from")).to_have_value(last_month.first.isoformat())
    expect(page.locator("#id_date_to")).to_have_value(last_month.last.isoformat())
    expect(page.locator("#usage-card-hours")).to_have_text("10.00")
    expect(page.locator("#usage-jobs")).to_have_text("1")
    row = page.locator(f"#usage-jobs-table tr[data-job='{last.public_id}']")
    expect(row).to_contain_text("5.00")
    row.get_by_role("link").click()
    page.wait_for_url(f"**/jobs/{last.public_id}/")
    # The job's page counts its card-hours as My usage does (admin30).
    expect(page.locator("#job-card-hours")).to_have_text("10.00")


def test_a_cpu_only_job_reads_as_using_no_cards_on_my_usage_and_on_its_page(logged_in_page, alice):
    # admin30: its row said 0.00 card-hours, its page nothing of its use.
    start = Period.this_month().starts_at + timedelta(hours=1)
    cpu = run(alice, start, start + timedelta(hours=5), cards=0)
    page = logged_in_page

    page.click("#nav-usage")

    row = page.locator(f"#usage-jobs-table tr[data-job='{cpu.public_id}']")
    expect(row.locator(".usage-cpu-only")).to_have_text("无（仅 CPU）")
    row.get_by_role("link").click()
    expect(page.locator("#job-card-hours")).to_have_text("0（纯 CPU 任务，共 5.00 小时）")


def test_my_usage_names_each_pool_and_shows_its_id_on_hover(logged_in_page, alice):
    from jobs.models import Job

    start = Period.this_month().starts_at + timedelta(hours=1)
    here = run(alice, start, start + timedelta(hours=2), cards=1)
    gone = run(alice, start, start + timedelta(hours=1), cards=1)
    Job.objects.filter(pk=gone.pk).update(resource_pool="cce-retired")
    page = logged_in_page

    page.click("#nav-usage")

    pools = page.locator("#usage-pools .usage-pool")
    expect(pools).to_have_text(["cce-retired", "本机 Local"])
    pools.nth(1).hover()
    expect(pools.nth(1)).to_have_attribute("title", "资源池 ID：local")
    expect(pools.nth(0)).not_to_have_attribute("title", re.compile(".*"))
    row = page.locator(f"#usage-jobs-table tr[data-job='{here.public_id}'] .usage-pool")
    expect(row).to_have_text("本机 Local")
    expect(row).to_have_attribute("title", "资源池 ID：local")


def test_my_usage_names_a_pool_no_longer_offered_by_its_last_known_name(logged_in_page, alice):
    from jobs.models import Job
    from jobs.pools import known_pools_keep

    start = Period.this_month().starts_at + timedelta(hours=1)
    gone = run(alice, start, start + timedelta(hours=1), cards=1)
    Job.objects.filter(pk=gone.pk).update(resource_pool="cce-old", backend="aihc")
    known_pools_keep(backend="aihc", names={"cce-old": "旧训练池"})  # as AIHC last named it
    page = logged_in_page

    page.click("#nav-usage")

    for pool in (
        page.locator("#usage-pools .usage-pool"),
        page.locator(f"#usage-jobs-table tr[data-job='{gone.public_id}'] .usage-pool"),
    ):
        expect(pool).to_have_text("旧训练池（cce-old，已不再提供）")
        pool.hover()
        expect(pool).to_have_attribute("title", "资源池 ID：cce-old")


def test_on_a_phone_each_jobs_id_goes_under_its_name_and_its_start_stays_on_one_line(
    logged_in_page, alice
):
    start = Period.this_month().starts_at + timedelta(hours=1)
    job = run(alice, start, start + timedelta(hours=2), cards=1)
    page = logged_in_page
    page.set_viewport_size({"width": 390, "height": 844})

    page.click("#nav-usage")

    table = page.locator("#usage-jobs-table")
    row = table.locator(f"tr[data-job='{job.public_id}']")
    expect(row.locator(".usage-job-id")).to_be_visible()
    expect(row.locator(".usage-job-id")).to_have_text(job.public_id)
    expect(table.get_by_role("columnheader", name="任务 ID")).to_be_hidden()
    # The start time was broken over three lines ("2026-" / "12-02" / "09:57") and the ID over five.
    started = row.locator(".usage-started")
    lines = started.evaluate(
        "td => { const r = document.createRange(); r.selectNodeContents(td);"
        " return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size }"
    )
    assert lines == 1
