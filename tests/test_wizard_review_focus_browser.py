"""保存并返回确认 (Save and back to Confirm) from a step opened by the review's 编辑 link puts
focus on the review's heading of the section just edited (qa115: on the page's heading, a
screen reader starting again from the top of the review)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from playwright.sync_api import expect

from jobs import wizard as W

from .test_wizard import A800, complete_steps, new_draft, step_url

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


@pytest.mark.parametrize(
    ("language", "edit", "save", "heading"),
    [
        ("zh-hans", "编辑：容错&诊断", "保存并返回确认", "容错&诊断"),
        (
            "en",
            "Edit: Fault tolerance & diagnostics",
            "Save and back to Confirm",
            "Fault tolerance & diagnostics",
        ),
    ],
)
def test_save_and_back_to_confirm_focuses_the_reviews_heading_of_the_section_edited(
    logged_in_page, alice, language, edit, save, heading
):
    client = Client()
    client.force_login(alice)
    draft = new_draft(client)
    complete_steps(client, draft)
    page = logged_in_page
    page.context.add_cookies([{"name": "django_language", "value": language, "url": page.url}])
    page.goto(step_url(draft, W.REVIEW))

    page.get_by_role("link", name=edit, exact=True).focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/fault/\?fixing=1$"))
    page.get_by_role("button", name=save, exact=True).focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/review/$"))

    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_focused()
    expect(page.locator("#review-fault")).to_be_focused()
