"""An on-call engineer sets up a local job's alerts in the wizard (QA 59): the events offered
are those the local pool sends (no 任务所在节点出现故障, which it never sends), and on a console
without a mail server the alert emails field says mail only goes to the log."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs import wizard as W

from .conftest import log_in
from .fake_aihc import FakeAihc, configure
from .test_wizard import A800, step_url
from .test_wizard_browser import fill_basic, fill_image, next_step, start
from .test_wizard_seed_parity import FT_ALERT_NEVER_COMES, aihc_draft_alerting

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def test_an_on_call_engineer_picks_the_local_pools_alert_events_and_is_told_mail_is_not_set(
    page, alice, live_server, settings
):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}
    log_in(page, "alice", "alice-password")
    start(page)
    fill_basic(page)
    fill_image(page)
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/mnt/data")
    next_step(page, "fault")
    page.check("#id_fault_tolerance")
    next_step(page, "advanced")

    events = page.locator("input[name=alert_items]")
    expect(events).to_have_count(5)
    expect(page.locator("input[name=alert_items][value=nodeFT]")).to_have_count(0)
    expect(page.get_by_text("任务所在节点出现故障")).to_have_count(0)
    expect(page.locator("#id_alert_emails_helptext")).to_contain_text(
        "分隔多个地址。本控制台未设置邮件服务器（EMAIL_HOST）：在管理员设置之前，告警邮件只会写入控制台日志。"
    )
    page.get_by_label("任务发生容错").check()
    page.get_by_label("任务失败退出").check()
    page.fill("#id_alert_emails", "oncall@example.com")
    next_step(page, "submission")  # taken: nothing refused on 高级配置


@pytest.fixture
def aihc_pool(settings):
    fake = FakeAihc().start()
    fake.add_pool("cce-pool1", "百舸训练池", gpus={A800: (32, 16)}, pfs="pfs-7xWeAt")
    configure(settings, fake)
    yield fake
    fake.stop()


def test_the_aihc_warning_that_fault_tolerance_alerts_never_come_follows_the_events_box(
    logged_in_page, alice_client, aihc_pool
):
    # left54: the warning showed only once the step was drawn again with the event saved, and
    # stayed there after the box was unticked.
    draft = aihc_draft_alerting(alice_client, ["jobFailed"])
    page = logged_in_page
    page.goto(step_url(draft, W.ADVANCED))
    warning = page.locator("#alert-items-warning")
    expect(warning).to_be_hidden()

    events = page.locator("fieldset", has=page.locator("input[name=alert_items]"))
    expect(events).not_to_have_accessible_description(re.compile("永远不会发出"))

    page.get_by_label("任务发生容错").check()
    expect(warning).to_be_visible()
    expect(warning).to_have_text(FT_ALERT_NEVER_COMES)
    # Said with the events to a screen reader: their help text describes the group.
    expect(events).to_have_accessible_description(re.compile(re.escape(FT_ALERT_NEVER_COMES)))

    page.get_by_label("任务发生容错").uncheck()
    expect(warning).to_be_hidden()
    expect(events).not_to_have_accessible_description(re.compile("永远不会发出"))


def test_the_reviews_fault_tolerance_link_lands_on_the_fault_tolerance_switch(
    logged_in_page, alice_client, aihc_pool
):
    # qa79: the warning names step 5's 容错 switch, but its link opened the step with focus on
    # the page, leaving a keyboard or screen-reader user to look for the switch.
    draft = aihc_draft_alerting(alice_client, ["jobFT"])
    page = logged_in_page
    page.goto(step_url(draft, W.REVIEW))

    page.locator("#alert-notice").get_by_role("link", name="容错&诊断").click()

    expect(page).to_have_url(
        re.compile(rf"{re.escape(step_url(draft, W.FAULT))}#id_fault_tolerance$")
    )
    switch = page.get_by_role("checkbox", name="容错", exact=True)
    expect(switch).to_be_focused()
    page.keyboard.press("Space")
    expect(switch).to_be_checked()
