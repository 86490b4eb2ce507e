"""Names a screen reader says (qa104): the Resources step's role table is named and has column
headers in every layout, and its cells do not say their column's name twice; the top bar's
account link says what it opens, with the user's name; the Data step's mount table is named
(qa115), as the variables' and labels' are."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .test_wizard_browser import fill_basic, fill_image, next_step, start

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
    ("language", "name"), [("zh-hans", "alice，账号设置"), ("en", "alice, account settings")]
)
def test_the_account_link_is_named_by_the_name_shown_then_says_it_opens_the_account_settings(
    logged_in_page, language, name
):
    page = logged_in_page
    page.context.add_cookies([{"name": "django_language", "value": language, "url": page.url}])
    page.reload()

    account = page.get_by_role("link", name=name, exact=True)

    # Named from the text shown, first (qa115, WCAG 2.5.3: a voice-control user says what they
    # see); named "账号设置（alice）" it was not.
    expect(account).to_have_text("alice")
    expect(account).to_have_id("nav-account")


@pytest.mark.parametrize(("language", "name"), [("zh-hans", "挂载"), ("en", "Mounts")])
def test_the_data_steps_mount_table_is_named_mounts(logged_in_page, language, name):
    page = logged_in_page
    page.context.add_cookies([{"name": "django_language", "value": language, "url": page.url}])
    start(page)
    fill_basic(page)
    fill_image(page)
    next_step(page, "data")

    expect(page.get_by_role("table", name=name, exact=True)).to_have_id("mount-table")
