"""Session 21's new help texts and messages on a phone (390 pixels), in both languages: the
容错&诊断, 高级配置 and 投递方式 steps with their switches on, the 任务hang alert's refusal
(which names a request field, one long word) and a queue task's fields. Nothing is wider
than the screen. And a draft stored before such a rule, fixed from its review's problem link,
with JavaScript and without: once fixed, 保存并返回确认 goes straight back to 确认 (left22; it
took 下一步 on every step after the fixed one)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs import wizard as W
from jobs.models import Job

from .conftest import BROWSER_TIMEOUT_MS, log_in
from .test_wizard import A800, step_url
from .test_wizard_browser import fill_basic, fill_image, next_step, start
from .test_wizard_stored_drafts import saved_before_the_rules

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
    # In the wizard's words: the switch, not the request's field path (copy edit).
    expect(refusal).to_contain_text(re.compile("打开“任务hang检测”开关|turn on Hang detection"))
    expect(refusal).not_to_contain_text("faultToleranceConfig")
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


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_a_hang_alert_fixed_on_step_5_is_back_at_the_review_in_one_click(
    browser, live_server, transactional_db, alice, alice_client, javascript
):
    draft = saved_before_the_rules(alice_client, fault={})
    context = browser.new_context(
        base_url=live_server.url, java_script_enabled=javascript, locale="zh-CN"
    )
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    try:
        log_in(page, "alice", "alice-password")
        page.goto(step_url(draft, W.REVIEW))

        # The review's problem opens step 6 with its message, which names step 5.
        page.locator("#review-problems a").click()
        page.wait_for_url("**/advanced/?check=1")
        expect(page.locator("#wizard-form")).to_contain_text("第 5 步")
        page.get_by_role("button", name="上一步").click()
        page.wait_for_url("**/fault/?fixing=1")
        page.locator("#id_hang_detection").check()
        page.locator("#id_hang_minutes").fill("30")
        page.get_by_role("button", name="保存并返回确认").click()

        page.wait_for_url(f"**{step_url(draft, W.REVIEW)}")
        expect(page.locator("#review-problems")).to_have_count(0)
        expect(page.locator("#wizard-submit")).to_be_enabled()
        page.locator("#wizard-submit").click()
        page.wait_for_url("**/jobs/*/")
        job = Job.objects.get()
        assert page.url.endswith(f"/jobs/{job.public_id}/")
        assert job.job_spec().fault_tolerance_config.enabled_hang_detection
    finally:
        context.close()
