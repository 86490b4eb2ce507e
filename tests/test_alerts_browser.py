"""An on-call engineer sets up a local job's alerts in the wizard (QA 59): the events offered
are those the local pool sends (no 任务所在节点出现故障, which it never sends), and on a console
without a mail server the alert emails field says mail only goes to the log."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import log_in
from .test_wizard import A800
from .test_wizard_browser import fill_basic, fill_image, next_step, start

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
        "本控制台未设置邮件服务器（EMAIL_HOST）：在管理员设置之前，告警邮件只会写入其日志。"
    )
    page.get_by_label("任务发生容错").check()
    page.get_by_label("任务失败退出").check()
    page.fill("#id_alert_emails", "oncall@example.com")
    next_step(page, "submission")  # taken: nothing refused on 高级配置
