"""A token typed into the command or the entrypoint, as a person meets its warning: after
going on, the review step says so with a way back, the image step shows it on the field, and
知道了 hides it there (and on the review step) with what was typed kept."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.test_plain_secrets import HF
from tests.test_wizard_browser import (  # noqa: F401
    _local_pool,
    fill_basic,
    next_step,
    settled,
    start,
)

pytestmark = pytest.mark.browser


def test_a_token_typed_into_the_command_is_warned_of_and_got_it_hides_the_warning(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    fill_basic(page)
    command = f"huggingface-cli login --token {HF} && torchrun train.py"
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", command)
    next_step(page, "resources")  # a warning, not a refusal
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ("fault", "advanced", "submission", "review"):
        next_step(page, slug)

    notice = page.locator("#plain-secrets-notice")
    expect(notice).to_contain_text("运行参数中有疑似 Hugging Face 令牌（hf_…）")
    notice.get_by_role("link", name="镜像与命令").click()
    page.wait_for_url(re.compile(r"/image/$"))

    warning = page.locator("#command-secrets")
    expect(warning).to_contain_text("请把它移到勾选“保密”的环境变量中")
    expect(warning).not_to_contain_text(HF)
    warning.get_by_role("button", name="知道了，不再显示").click()
    expect(page.locator("#command-secrets")).to_have_count(0)
    expect(page.locator("#id_command")).to_have_value(command)

    page.goto(page.url.replace("/image/", "/review/"))
    expect(page.locator("#review-summary")).to_be_visible()
    expect(page.locator("#plain-secrets-notice")).to_have_count(0)


def test_got_it_pressed_from_the_keyboard_leaves_focus_on_the_field_it_warned_of(logged_in_page):
    # qa74: focus went to the step's heading, at the top of the page; a keyboard user had to
    # Tab back down past every field to the command they were at.
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", f"huggingface-cli login --token {HF} && torchrun train.py")
    next_step(page, "resources")
    page.click("#wizard-back")
    page.wait_for_url(re.compile(r"/image/$"))
    settled(page)

    page.locator("#command-secrets").get_by_role("button", name="知道了，不再显示").focus()
    page.keyboard.press("Enter")

    expect(page.locator("#command-secrets")).to_have_count(0)
    expect(page.locator("#id_command")).to_be_focused()

    page.click("#add-env")
    page.fill("#id_env-0-name", "LOGIN_ARGS")
    page.fill("#id_env-0-value", f"--token {HF}")
    page.click("#add-env")
    expect(page.locator("tr.env-row")).to_have_count(2)
    page.locator("tr.env-row").first.get_by_role("button", name="知道了，不再显示").focus()
    page.keyboard.press("Enter")

    expect(page.locator(".env-secrets")).to_have_count(0)
    expect(page.locator("#id_env-0-value")).to_be_focused()


def test_a_token_typed_into_the_entrypoint_is_warned_of_under_it_and_got_it_hides_it(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    fill_basic(page)
    entrypoint = f"env HF_TOKEN={HF} python"
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_entrypoint", entrypoint)
    page.fill("#id_command", "train.py")
    next_step(page, "resources")  # a warning, not a refusal
    page.click("#wizard-back")
    page.wait_for_url(re.compile(r"/image/$"))
    settled(page)

    warning = page.locator("#entrypoint-secrets")
    expect(warning).to_contain_text("运行命令中有疑似 Hugging Face 令牌（hf_…）")
    expect(warning).to_contain_text("并从运行命令中删去")
    expect(warning).not_to_contain_text(HF)
    expect(page.locator("#command-secrets")).to_have_count(0)
    warning.get_by_role("button", name="知道了，不再显示").click()
    expect(page.locator("#entrypoint-secrets")).to_have_count(0)
    expect(page.locator("#id_entrypoint")).to_have_value(entrypoint)
