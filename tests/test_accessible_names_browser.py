"""Names a screen reader says (qa104): the Resources step's role table is named and has column
headers in every layout, and its cells do not say their column's name twice; the top bar's
account link says what it opens, with the user's name."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .test_wizard_browser import fill_basic, fill_image, start

pytestmark = pytest.mark.browser

COLUMNS = ["角色", "实例数", "加速芯片", "卡型", "每实例加速芯片数", "CPU 核数", "内存（GiB）"]


@pytest.mark.parametrize("width", [1280, 1920])  # a row of two lines, and of one
def test_the_role_table_is_named_with_column_headers_and_each_field_is_said_once(
    logged_in_page, width
):
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 900})
    start(page)
    fill_basic(page)
    fill_image(page)

    table = page.get_by_role("table", name="角色", exact=True)

    expect(table).to_have_count(1)
    expect(table.get_by_role("columnheader")).to_have_text(COLUMNS)
    master = table.get_by_role("row").filter(has_text="master")
    expect(master.get_by_role("checkbox", name="master 加速芯片", exact=True)).to_have_count(1)
    expect(master.get_by_role("spinbutton", name="master 实例数", exact=True)).to_have_count(1)
    # A cell reads as its field (and the role's name), not the column's name before it again.
    assert "text:" not in master.aria_snapshot()
    expect(master.get_by_role("cell").nth(2)).to_have_accessible_name("master 加速芯片")


@pytest.mark.parametrize(
    ("language", "name"), [("zh-hans", "账号设置（alice）"), ("en", "Account settings (alice)")]
)
def test_the_account_link_says_it_opens_the_accounts_settings_with_the_name_shown(
    logged_in_page, language, name
):
    page = logged_in_page
    page.context.add_cookies([{"name": "django_language", "value": language, "url": page.url}])
    page.reload()

    account = page.get_by_role("link", name=name, exact=True)

    expect(account).to_have_text("alice")
    expect(account).to_have_id("nav-account")
