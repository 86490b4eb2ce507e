"""Card quotas in a real browser (QA 63): a lead sharing one machine sees who uses what now on
the admin's list of quotas, and a researcher sees their quota where they choose cards."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from jobs.models import CardQuota, Job, JobStatus
from tests.conftest import log_in
from tests.test_quotas import running_job
from tests.test_wizard import A800
from tests.test_wizard_browser import (
    _local_pool,  # noqa: F401 (autouse: 8 A800 and 4 V100 cards)
    fill_basic,
    fill_image,
    start,
)

pytestmark = pytest.mark.browser


def test_a_lead_opens_card_quotas_and_sees_who_holds_what_now_and_a_reload_follows_an_end(
    page, alice, bob, superuser
):
    vision = Group.objects.create(name="vision")
    vision.user_set.add(alice, bob)
    CardQuota.objects.create(group=vision, max_cards=2)
    running_job(alice, {A800: [0, 1]})
    bobs = running_job(bob, {A800: [2]})
    log_in(page, "root", "root-password")

    page.goto("/admin/")
    page.get_by_role("link", name="卡配额").click()

    row = page.locator("#result_list tbody tr", has_text="vision")
    expect(row.locator("td.field-held_now")).to_have_text(
        "alice：2 张卡，1 个运行中任务；bob：1 张卡，1 个运行中任务"
    )
    Job.objects.filter(pk=bobs.pk).update(status=JobStatus.SUCCEEDED)
    page.reload()
    expect(row.locator("td.field-held_now")).to_have_text("alice：2 张卡，1 个运行中任务")


def test_a_researcher_sees_their_quota_beside_the_idle_cards_when_choosing_cards(page, alice):
    team = Group.objects.create(name="team")
    alice.groups.add(team)
    CardQuota.objects.create(group=team, max_cards=2)
    running_job(alice, {A800: [0]})
    log_in(page, "alice", "alice-password")

    start(page)
    fill_basic(page)
    fill_image(page)

    expect(page.locator("#quota-line")).to_have_text(
        "您在此资源池的配额：任意类型的卡：运行中的任务占用 1 / 2 张"
    )
    expect(page.locator("#pool-stock")).to_contain_text("空闲 7 / 共 8")


def test_a_quota_lowered_below_what_runs_shows_on_the_pools_page_with_what_it_means_unreloaded(
    page, alice
):
    # QA 63: "2 / 1" stood alone; the researcher could not tell whether their jobs would be
    # stopped or whether new ones would start.
    quota = CardQuota.objects.create(user=alice, card_type=A800, max_cards=2)
    running_job(alice, {A800: [0, 1]})
    log_in(page, "alice", "alice-password")
    page.get_by_role("link", name="资源池").first.click()
    pool = page.locator("section.pool", has_text="本机")
    expect(pool.locator("td.quota-cards")).to_have_text("2 / 2")
    expect(pool.locator("p.quota-over")).to_have_count(0)

    quota.max_cards = 1
    quota.save()  # the lead lowers it while both cards are held

    expect(pool.locator("td.quota-cards")).to_have_text("2 / 1")  # the poll
    expect(pool.locator("p.quota-over")).to_have_text(
        "您运行中的任务占用超过了配额：配额在它们启动后被更改。这些任务会运行到结束，不会被停止；"
        "在您的占用降到限额以下、足以容纳新任务之前，您受此配额约束的新任务都不会启动："
        "队列任务会等待，独立任务会被拒绝。"
    )
