"""Volumes kept for a team (LOCAL_VOLUMES "@group", ":ro") in a real browser: the wizard offers
a team member their team's volumes and another user only the open ones."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from tests.conftest import log_in
from tests.test_wizard import A800
from tests.test_wizard_browser import fill_basic, fill_image, next_step, settled, start

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _team_volumes(settings, tmp_path, alice):
    for name in ("scratch", "team-a", "models"):
        (tmp_path / name).mkdir()
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = (
        f"scratch={tmp_path / 'scratch'},team-a={tmp_path / 'team-a'}@team-a,"
        f"models={tmp_path / 'models'}:ro"
    )
    alice.groups.add(Group.objects.create(name="team-a"))


def to_the_data_step(page):
    start(page)
    fill_basic(page)
    fill_image(page)
    next_step(page, "data")


def volume_choices(page) -> list[str]:
    return page.locator("#id_mounts-0-name option").evaluate_all(
        "options => options.map(o => o.value).filter(Boolean)"
    )


def test_a_team_member_is_offered_the_teams_volume_and_another_user_is_not(
    logged_in_page, browser, live_server, bob
):
    page = logged_in_page
    to_the_data_step(page)

    assert volume_choices(page) == ["scratch", "team-a", "models"]
    page.select_option("#id_mounts-0-name", "team-a")
    page.fill("#id_mounts-0-mount_path", "/ckpt")
    next_step(page, "fault")

    context = browser.new_context(base_url=live_server.url, locale="zh-CN")
    try:
        other = context.new_page()
        log_in(other, "bob", "bob-password")
        to_the_data_step(other)
        assert volume_choices(other) == ["scratch", "models"]
        expect(other.locator("#mount-table")).not_to_contain_text("team-a")
    finally:
        context.close()


def test_choosing_a_read_only_volume_makes_the_row_read_only_and_says_why(logged_in_page):
    page = logged_in_page
    to_the_data_step(page)
    access = page.locator("#id_mounts-0-access")
    expect(access.locator("option")).to_have_count(2)

    page.select_option("#id_mounts-0-name", "models")
    settled(page)

    expect(page.locator("#id_mounts-0-access option")).to_have_count(1)
    expect(page.locator("#id_mounts-0-access")).to_have_value("ro")
    expect(page.locator("#id_mounts-0-access_reason")).to_contain_text("对所有人只读")
    page.select_option("#id_mounts-0-name", "scratch")
    settled(page)
    expect(page.locator("#id_mounts-0-access option")).to_have_count(2)
    expect(page.locator("#id_mounts-0-access_reason")).to_have_count(0)
