"""Session 21's new help texts and messages on a phone (390 pixels), in both languages: the
容错&诊断, 高级配置 and 投递方式 steps with their switches on, the 任务hang alert's refusal
(which names a request field, one long word) and a queue task's fields. Nothing is wider
than the screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import log_in
from .test_wizard import A800
from .test_wizard_browser import fill_basic, fill_image, next_step, start

pytestmark = pytest.mark.browser

FITS = "[document.documentElement.scrollWidth, innerWidth]"


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_the_fault_advanced_and_submission_steps_fit_a_phone_with_their_new_texts(
    page, alice, live_server, language
):
    page.context.add_cookies(
        [{"name": "django_language", "value": language, "url": live_server.url}]
    )
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, "alice", "alice-password")
    start(page)
    fill_basic(page)
    fill_image(page)
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/mnt/data")
    next_step(page, "fault")
    page.check("#id_fault_tolerance")
    expect(page.locator("#id_hang_detection_helptext")).to_be_visible()
    wide, screen = page.evaluate(FITS)
    assert wide <= screen  # 容错&诊断: the hang detection help, retries and keywords
    next_step(page, "advanced")
    page.check("input[name=alert_items][value=jobHang]")
    page.fill("#id_alert_emails", "ops@example.com")
    page.click("#wizard-next")
    refusal = page.locator("[id^=error_][id$=_id_alert_items]")
    expect(refusal).to_contain_text("faultToleranceConfig.enabledHangDetection")
    assert refusal.evaluate("e => e.scrollWidth <= e.clientWidth")
    wide, screen = page.evaluate(FITS)
    assert wide <= screen  # 高级配置: the refusal, the alerts' help, the timeout's
    page.uncheck("input[name=alert_items][value=jobHang]")
    page.check("input[name=alert_items][value=jobFailed]")
    next_step(page, "submission")
    page.check("input[name=mode][value=queue]")
    expect(page.locator("#id_target_queue")).to_be_visible()
    wide, screen = page.evaluate(FITS)
    assert wide <= screen  # 投递方式: 投递目标队列 and the group's two counts
