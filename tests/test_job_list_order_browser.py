"""The job list in a browser as someone with months of jobs uses it: sorted by a click on a
column head, paged to its last page and back, and a job's address pasted into its search box."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import Job, JobStatus
from jobs.services import job_transition

from .test_job_pages_browser import submitted

pytestmark = pytest.mark.browser

# Names out of creation order: the newest first is not the names' order.
NAMES = [f"run-{(n * 7) % 23:02d}" for n in range(23)]


def finished_jobs(owner, names: list[str]) -> list[Job]:
    """Failed jobs (nothing to refresh), a minute apart in this order, the first the oldest."""
    start = timezone.now() - timedelta(days=1)
    jobs = []
    for n, name in enumerate(names):
        job = submitted(owner, name)
        job_transition(job=job, to=JobStatus.FAILED, reason="Test")
        Job.objects.filter(pk=job.pk).update(created_at=start + timedelta(minutes=n))
        jobs.append(job)
    return jobs


def row_names(page) -> list[str]:
    return page.locator("#job-table tbody tr[data-job] td:nth-child(2) > a").all_inner_texts()


def test_a_column_head_clicked_sorts_the_list_in_place_and_the_order_is_kept_on_paging(
    logged_in_page, alice
):
    finished_jobs(alice, NAMES)
    page = logged_in_page
    page.goto("/")
    assert row_names(page)[:3] == [NAMES[-1], NAMES[-2], NAMES[-3]]  # newest first
    expect(page.locator("th[aria-sort]")).to_have_attribute("aria-sort", "descending")
    # Typed, not yet sent: only the list swaps, so it stays; and the page is not reloaded.
    page.fill("#id_queue", "defa")
    page.evaluate("window.notReloaded = true")
    # A job ticked on this page (the newest, which sorted by name goes to page 2) stays ticked.
    ticked = Job.objects.get(name=NAMES[-1])
    page.check(f"#select-{ticked.public_id}")

    page.get_by_role("link", name="名称").click()

    page.wait_for_url(f"**/?sort=name&sel={ticked.public_id}")
    expect(page.locator("#sort-name")).to_be_focused()  # focus stays on the head clicked
    expect(page.locator("#selection-count")).to_have_text("已选 1 个任务")
    page.get_by_role("button", name=f"取消勾选 {ticked.name}").click()
    expect(page.locator("#selection-bar")).to_be_hidden()
    expect(page.locator("#job-table tbody tr[data-job]").first).to_contain_text("run-00")
    assert row_names(page) == sorted(NAMES)[:20]
    name_head = page.locator("th", has=page.locator("#sort-name"))
    expect(name_head).to_have_attribute("aria-sort", "ascending")
    expect(name_head).to_contain_text("▲")
    expect(page.locator("th[aria-sort]")).to_have_count(1)
    assert page.evaluate("window.notReloaded") is True
    expect(page.locator("#id_queue")).to_have_value("defa")

    # Again: Z to A.
    page.get_by_role("link", name="名称").click()
    page.wait_for_url("**/?sort=-name")
    expect(page.locator("#job-table tbody tr[data-job]").first).to_contain_text("run-22")
    expect(name_head).to_have_attribute("aria-sort", "descending")
    # Back: the previous order, as its address says (with the tick it carried); and Forward.
    page.go_back()
    page.wait_for_url(f"**/?sort=name&sel={ticked.public_id}")
    expect(page.locator("#job-table tbody tr[data-job]").first).to_contain_text("run-00")
    expect(name_head).to_have_attribute("aria-sort", "ascending")
    page.go_forward()
    page.wait_for_url("**/?sort=-name")
    expect(page.locator("#job-table tbody tr[data-job]").first).to_contain_text("run-22")

    # The next page goes on in that order, and so does a search sent from the filters.
    page.get_by_role("link", name="下一页").click()
    page.wait_for_url("**/?sort=-name&page=2")
    assert row_names(page) == sorted(NAMES, reverse=True)[20:]
    page.fill("#id_queue", "")
    page.fill("#id_q", "run-1")
    page.press("#id_q", "Enter")
    page.wait_for_url(re.compile(r"\?q=run-1.*sort=-name"))
    assert row_names(page) == sorted((n for n in NAMES if "run-1" in n), reverse=True)


def test_the_last_page_link_shows_the_oldest_jobs_and_the_first_page_link_comes_back(
    logged_in_page, alice
):
    jobs = finished_jobs(alice, [f"job-{n:02d}" for n in range(45)])
    page = logged_in_page
    page.goto("/")
    expect(page.locator("#page-number")).to_have_text("第 1 页，共 3 页")

    page.get_by_role("link", name="最后一页（第 3 页）").click()

    page.wait_for_url("**/?page=3")
    assert row_names(page) == ["job-04", "job-03", "job-02", "job-01", "job-00"]
    expect(page.locator("#page-number")).to_have_text("第 3 页，共 3 页")
    expect(page.get_by_role("link", name=re.compile("最后一页"))).to_have_count(0)

    page.get_by_role("link", name="第一页（第 1 页）").click()
    page.wait_for_url("**/?page=1")
    assert row_names(page)[0] == jobs[-1].name

    # Sorted by name: the last page holds the last names.
    page.get_by_role("link", name="名称").click()
    page.wait_for_url("**/?sort=name")
    page.get_by_role("link", name="最后一页（第 3 页）").click()
    page.wait_for_url("**/?sort=name&page=3")
    assert row_names(page) == ["job-40", "job-41", "job-42", "job-43", "job-44"]

    # At 400% zoom (320 CSS pixels) the five page links wrap: nothing scrolls sideways.
    page.set_viewport_size({"width": 320, "height": 640})
    page.goto("/?page=2")
    expect(page.locator("#page-last")).to_be_visible()
    wide, screen = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert wide <= screen


def test_a_job_address_pasted_into_the_search_box_opens_that_job_and_another_users_finds_none(
    logged_in_page, alice, bob
):
    wanted = submitted(alice, "wanted-run")
    submitted(alice, "other-run")
    theirs = submitted(bob, "bobs-run")
    page = logged_in_page
    page.goto(f"/jobs/{wanted.public_id}/")
    address = page.url + "#events"
    page.goto("/")

    page.focus("#id_q")
    page.keyboard.insert_text(address)  # as a paste puts it
    page.press("#id_q", "Enter")

    page.wait_for_url(f"**/jobs/{wanted.public_id}/")
    expect(page.locator("h1")).to_contain_text("wanted-run")

    # Bob's job's address: the same as an address of no job, searched for and not found; the
    # address stays in the box.
    other = address.replace(wanted.public_id, theirs.public_id)
    page.goto("/")
    page.focus("#id_q")
    page.keyboard.insert_text(other)
    page.press("#id_q", "Enter")
    page.wait_for_url(re.compile(r"/\?q=http"))
    expect(page.locator("#job-table")).to_contain_text("没有符合筛选条件的任务")
    expect(page.locator("#id_q")).to_have_value(other)
    expect(page.locator("body")).not_to_contain_text("bobs-run")
