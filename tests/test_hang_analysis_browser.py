"""Hang analysis in the browser: a person opens a running job's page, clicks Capture stacks,
and sees the replicas' call stacks grouped, the odd rank first, without a reload."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs import spec as S
from jobs.services import jobs_submit

from .test_hang_analysis import TRAIN, until_started
from .test_job_pages_browser import worker_thread  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("worker_thread")]


def test_capture_stacks_shows_each_replicas_stacks_grouped_on_the_job_page(
    logged_in_page, alice, tmp_path
):
    (tmp_path / "scratch").mkdir(exist_ok=True)
    (tmp_path / "scratch" / "train.py").write_text(TRAIN)
    spec = S.JobSpec(
        name="hung",
        resource_pool_id="local",
        image="registry.example.com/x:1",
        command="/usr/bin/python3 /workspace/train.py",
        # Rank 1 (worker-0) is the odd one out; master-0 and worker-1 wait for it.
        envs=[S.Env("STUCK_RANK", "1")],
        roles=[S.Role("master", 1), S.Role("worker", 2)],
        datasources=[S.Datasource("hostpath", "scratch", mount_path="/workspace")],
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="hung")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text(re.compile("运行中"), timeout=20_000)
    expect(page.locator("#hang-heading")).to_have_text("Hang 解析")
    expect(page.locator("#hang-none")).to_be_visible()
    until_started(job)  # Running is as they start, not when they have reached the hang

    page.click("#hang-capture")

    groups = page.locator("#hang .hang-group")
    expect(groups).to_have_count(2, timeout=20_000)
    expect(groups.nth(0).locator(".hang-replicas")).to_have_text("worker-0")
    expect(groups.nth(0).locator(".hang-frames")).to_contain_text(
        "stuck_in_allreduce (/workspace/train.py:6)"
    )
    expect(groups.nth(1).locator(".hang-replicas")).to_have_text("master-0, worker-1")
    expect(groups.nth(1)).to_contain_text("2 个实例")
    expect(groups.nth(1).locator(".hang-frames")).to_contain_text("waiting_for_peer")
    expect(page.locator("#hang-captures .nav-link.active")).to_contain_text("手动")
    # Asked again at once: refused in place, saying why.
    page.click("#hang-capture")
    expect(page.locator("#hang-refused")).to_contain_text("不到 30 秒前已抓取过调用栈")
    expect(groups).to_have_count(2)


def test_capture_stacks_comes_when_the_job_starts_and_goes_when_it_ends_without_a_reload(
    logged_in_page, alice, reviewer, tmp_path
):
    from jobs.models import ReviewMode, ReviewPolicy
    from jobs.review import job_approve

    (tmp_path / "scratch").mkdir(exist_ok=True)
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    spec = S.JobSpec(
        name="ends",
        resource_pool_id="local",
        image="registry.example.com/x:1",
        command="sleep 3",
        roles=[S.Role("master", 1)],
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="ends")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    # Held for review: nothing to capture yet (the button stood there, and a click said so).
    expect(page.locator("#job-status")).to_have_text(re.compile("待审核"))
    expect(page.locator("#hang-capture")).to_have_count(0)

    job_approve(job=job, reviewer=reviewer)
    expect(page.locator("#job-status")).to_have_text(re.compile("运行中"), timeout=20_000)
    expect(page.locator("#hang-capture")).to_be_visible()

    # The status poll brings the end; the button goes with it.
    expect(page.locator("#job-status")).to_have_text(re.compile("成功"), timeout=30_000)
    expect(page.locator("#hang-capture")).to_have_count(0)
    expect(page.locator("#hang-none")).to_be_visible()


def open_hang_analysis_from_the_admin_as_the_reviewer(page, job) -> None:
    """As the reviewer carol: the job's page in the admin, then its Hang 解析 link."""
    from tests.conftest import log_in

    log_in(page, "carol", "carol-password")
    page.goto(f"/admin/jobs/job/{job.pk}/change/")
    page.get_by_role("link", name=re.compile("Hang 解析", re.I)).click()
    page.wait_for_url(re.compile(rf"/jobs/{job.public_id}/hang/$"))


def test_staff_open_a_jobs_hang_analysis_from_the_admin_and_find_their_way_back(
    page, alice, reviewer
):

    spec = S.JobSpec(
        name="reviewed",
        resource_pool_id="local",
        image="registry.example.com/x:1",
        command="sleep 60",
        roles=[S.Role("master", 1)],
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="reviewed")
    open_hang_analysis_from_the_admin_as_the_reviewer(page, job)
    expect(page.locator("#hang-heading")).to_have_text("Hang 解析")

    page.click("#hang-back-admin")
    page.wait_for_url(re.compile(rf"/admin/jobs/job/{job.pk}/change/$"))


def test_on_staffs_hang_analysis_page_capture_stacks_follows_the_jobs_status(
    page, alice, reviewer, tmp_path
):
    """Staff's page of its own polls the job's status as the owner's page does: Capture
    stacks comes when the job starts and goes when it ends (it outlived the job there)."""
    from jobs.models import ReviewMode, ReviewPolicy
    from jobs.review import job_approve

    (tmp_path / "scratch").mkdir(exist_ok=True)
    ReviewPolicy.objects.create(pk=1, mode=ReviewMode.ALL)
    spec = S.JobSpec(
        name="watched",
        resource_pool_id="local",
        image="registry.example.com/x:1",
        command="sleep 3",
        roles=[S.Role("master", 1)],
    )
    [job] = jobs_submit(owner=alice, spec=spec, submit_key="watched")
    open_hang_analysis_from_the_admin_as_the_reviewer(page, job)
    expect(page.locator("#job-status")).to_have_text(re.compile("待审核"))
    expect(page.locator("#hang-capture")).to_have_count(0)

    job_approve(job=job, reviewer=reviewer)
    expect(page.locator("#job-status")).to_have_text(re.compile("运行中"), timeout=20_000)
    expect(page.locator("#hang-capture")).to_be_visible()

    expect(page.locator("#job-status")).to_have_text(re.compile("成功"), timeout=30_000)
    expect(page.locator("#hang-capture")).to_have_count(0)
    expect(page.locator("#hang-none")).to_be_visible()


def test_capture_stacks_stays_disabled_through_the_status_refresh_while_its_request_is_on_its_way(
    logged_in_page, alice
):
    from .test_job_pages_browser import submitted
    from .test_slow_network_browser import HeldAnswer

    job = submitted(alice, "slow-capture", command="sleep 60")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text(re.compile("运行中"), timeout=20_000)
    button = page.locator("#hang-capture")
    sent = []
    page.on("request", lambda r: sent.append(r.url) if "/hang/capture/" in r.url else None)
    slow = HeldAnswer(page, "/hang/capture/")

    button.click()
    slow.wait_held()
    expect(button).to_be_disabled()
    for _refresh in range(2):  # the second's answer comes after the first was drawn
        with page.expect_response(lambda r: "/live/" in r.url):
            pass
    # Before, the refresh drew an enabled button over it: a second press was sent, refused
    # (one capture in 30 s), and its answer could land over the first's.
    expect(button).to_be_disabled()
    button.click(force=True)
    slow.let_go()

    expect(page.locator("#hang-captures .nav-link.active")).to_contain_text("手动")
    expect(page.locator("#hang-refused")).to_have_count(0)
    expect(button).to_be_enabled()
    assert len(sent) == 1
