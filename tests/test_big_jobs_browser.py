"""A big job's page in a browser: the usage of its 64 running replicas (QA 56), and the list
its replicas' logs are picked from (left33)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from jobs.monitoring import USAGE_SHOWN
from tests.conftest import log_in

from .runner_helpers import runner_settings  # noqa: F401
from .test_big_jobs import finished, running, with_usage

pytestmark = pytest.mark.browser


def test_show_them_all_lists_every_running_replicas_usage_and_the_refresh_keeps_them(
    logged_in_page, alice, settings, tmp_path
):
    settings.LOCAL_VOLUMES = f"work={tmp_path}"
    job = with_usage(running(alice, 63))
    page = logged_in_page
    rows = page.locator("#usage tbody tr")

    page.goto(reverse("job-detail", args=[job.public_id]))
    expect(rows).to_have_count(USAGE_SHOWN)
    expect(page.locator("#usage-hidden")).to_contain_text(
        f"另有 {64 - USAGE_SHOWN} 个运行中的实例未显示。"
    )
    page.click("#usage-all")

    expect(rows).to_have_count(64)
    expect(page.locator("#usage-hidden")).to_have_count(0)
    for _refresh in range(2):  # the second's answer comes after the first was drawn
        with page.expect_response(lambda response: "/live/" in response.url):
            pass
    expect(rows).to_have_count(64)
    expect(rows.last).to_contain_text("worker-62")


def fits(page, width: int) -> None:
    """The replica picker takes one row on a laptop, two at most on a phone (64 tabs made 6
    rows on a laptop), and nothing is wider than the page."""
    nav = page.locator("#log-replica-nav").bounding_box()["height"]
    row = page.locator("#log-replica-show").bounding_box()["height"]
    assert nav / row < (1.5 if width > 400 else 2.7), (nav, row)
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.usefixtures("runner_settings")
@pytest.mark.parametrize("width", [390, 1280])
def test_a_job_of_64_replicas_picks_a_replicas_log_from_its_list_on_a_phone_and_a_laptop(
    logged_in_page, alice, width
):
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 800})
    job = finished(alice, 63)
    page.goto(reverse("job-detail", args=[job.public_id]))
    expect(page.locator("#log-replica-nav")).to_be_visible()
    expect(page.locator("#log-panel .nav-tabs")).to_have_count(0)
    fits(page, width)

    page.select_option("#log-replica", "worker-40")
    page.click("#log-replica-show")

    expect(page.locator("#log-lines")).to_contain_text("hello from worker-40")
    expect(page).to_have_url(re.compile(r"\?replica=worker-40#logs$"))
    # The panel was drawn anew around the button pressed: the focus stays on it.
    expect(page.locator("#log-replica-show")).to_be_focused()
    expect(page.locator("#log-replica")).to_have_value("worker-40")
    expect(page.locator("#log-replica-previous")).to_contain_text("worker-39")
    fits(page, width)  # with both neighbours' links too
    page.click("#log-replica-next")
    expect(page.locator("#log-lines")).to_contain_text("hello from worker-41")
    expect(page).to_have_url(re.compile(r"\?replica=worker-41#logs$"))
    expect(page.locator("#log-replica-next")).to_be_focused()  # on to worker-42 from here
    page.go_back()
    expect(page.locator("#log-lines")).to_contain_text("hello from worker-40")
    # At the last replica its link is gone: the focus goes to the list's button, not the page.
    page.goto(reverse("job-detail", args=[job.public_id]) + "?replica=worker-61")
    page.click("#log-replica-next")
    expect(page.locator("#log-lines")).to_contain_text("hello from worker-62")
    expect(page.locator("#log-replica-next")).to_have_count(0)
    expect(page.locator("#log-replica-show")).to_be_focused()


@pytest.mark.usefixtures("runner_settings")
def test_without_javascript_the_replica_list_opens_the_replicas_log(browser, live_server, alice):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        log_in(page, "alice", "alice-password")
        job = finished(alice, 63)
        page.goto(reverse("job-detail", args=[job.public_id]))

        page.select_option("#log-replica", "worker-62")
        page.click("#log-replica-show")

        expect(page).to_have_url(re.compile(r"\?replica=worker-62#logs$"))
        expect(page.locator("#log-lines")).to_contain_text("hello from worker-62")
        expect(page.locator("#log-replica-next")).to_have_count(0)
        page.click("#log-replica-previous")
        expect(page.locator("#log-lines")).to_contain_text("hello from worker-61")
    finally:
        context.close()
