"""The wizard's "详见帮助" in a browser: the help's section opens in a new tab, and the step's
typing, not saved until 下一步, stays where it was (qa113)."""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from jobs import wizard as W
from tests.test_wizard import _local_pool, complete_steps, new_draft, step_url  # noqa: F401

pytestmark = pytest.mark.browser


def test_see_help_on_hang_detection_opens_its_section_in_a_new_tab_keeping_the_step(
    logged_in_page, alice
):
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.FAULT)
    page = logged_in_page
    page.goto(step_url(draft, W.FAULT))
    page.check("#id_hang_detection")
    page.fill("#id_hang_minutes", "42")

    with page.context.expect_page() as opened:
        page.locator("#id_hang_detection_help_link").click()
    help_tab = opened.value
    help_tab.wait_for_load_state()

    assert help_tab.url.endswith("/help/#hang-detection")
    section = help_tab.locator("#hang-detection")
    expect(section.get_by_role("heading")).to_have_text("任务hang检测")
    expect(section).to_be_in_viewport()
    expect(page.locator("#id_hang_minutes")).to_have_value("42")
    assert page.url.endswith(step_url(draft, W.FAULT))
