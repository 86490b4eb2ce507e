"""Changing one's password in a browser, as a person would."""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_a_user_changes_their_password_from_the_navigation_and_logs_in_with_it(
    logged_in_page, alice
):
    page = logged_in_page

    page.click("#nav-account")
    page.fill("#id_old_password", "alice-password")
    page.fill("#id_new_password1", "short")
    page.fill("#id_new_password2", "short")
    page.click("#password-change-submit")
    expect(page.locator("#id_new_password1")).to_have_class(re.compile("is-invalid"))
    expect(page.locator("#id_old_password")).to_have_value("")  # passwords are not sent back
    page.fill("#id_old_password", "alice-password")
    page.fill("#id_new_password1", "a-new-long-passphrase-7")
    page.fill("#id_new_password2", "a-new-long-passphrase-7")
    page.click("#password-change-submit")

    page.wait_for_url(lambda url: urlparse(url).path == "/")
    expect(page.locator(".alert-success")).to_contain_text("您的密码已修改")
    page.locator("form[action='/logout/'] button").click()
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "a-new-long-passphrase-7")
    page.click("#login-submit")
    page.wait_for_url(lambda url: urlparse(url).path == "/")
