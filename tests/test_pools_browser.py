"""The resource pools page in a browser: opened from the nav, its figures follow a job the
local runner starts without a reload, and a pool's button opens the wizard in that pool."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs import spec as S
from jobs.models import JobStatus
from jobs.worker import Worker
from tests.conftest import log_in
from tests.fake_aihc import FakeAihc, configure

from .runner_helpers import (  # noqa: F401
    CARD,
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    run_until,
    runner_settings,
    status_of,
    submit,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("runner_settings")]

AIHC_POOL = "cce-pool1"


@pytest.fixture
def fake(settings):
    fake = FakeAihc().start()
    fake.add_pool(AIHC_POOL, "百舸训练池", queues=("default", "urgent"), gpus={CARD: (16, 4)})
    configure(settings, fake)
    yield fake
    fake.stop()


def test_the_idle_cards_follow_a_job_that_starts_and_a_pool_opens_the_wizard_in_it(
    logged_in_page, alice, fake, settings
):
    page = logged_in_page
    csp_violations: list[str] = []
    page.on(
        "console",
        lambda m: csp_violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.click("#nav-pools")
    page.wait_for_url(re.compile(r"/pools/$"))
    local = page.locator('section[data-pool="local"]')
    idle = local.locator(f'tr[data-card="{CARD}"] .card-idle')
    expect(idle).to_have_text("2")
    expect(page.locator('section[data-pool="cce-pool1"] .card-idle')).to_have_text("12")
    page.evaluate("window.notReloaded = true")

    one_card = [S.Role("master", 1, accelerator_type=CARD, accelerators=1)]
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, name="holds-a-card", roles=one_card))
    run_until(Worker(), lambda: status_of(job) == JobStatus.RUNNING)

    # The poll brings the new figures in; the page itself is not reloaded.
    expect(idle).to_have_text("1")
    default = local.locator('tr[data-queue="default"]')
    expect(default.locator(".queue-running")).to_have_text("1")
    expect(default.locator(f'a[href="/jobs/{job.public_id}/"]')).to_have_text("holds-a-card")
    expect(local.locator(".own-cards")).to_contain_text("1")
    assert page.evaluate("window.notReloaded") is True
    open_gate(settings)

    page.locator('section[data-pool="cce-pool1"] .create-in-pool').click()
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    expect(page.locator("#id_resource_pool")).to_have_value(AIHC_POOL)
    expect(page.locator("#id_queue")).to_have_value("default")
    assert csp_violations == []


def test_logging_out_in_another_tab_leaves_the_figures_and_says_so_instead_of_a_login_page(
    logged_in_page,
):
    page = logged_in_page
    page.click("#nav-pools")
    page.wait_for_url(re.compile(r"/pools/$"))
    banner = page.locator("#request-error")
    expect(banner).to_be_hidden()

    other = page.context.new_page()
    other.goto("/")
    other.click("form[action='/logout/'] button")
    other.wait_for_url(re.compile(r"/login/"))

    # The next poll (every 5 s) finds no log-in: the page keeps its figures and says why,
    # rather than growing a login form of its own with the focus in it.
    expect(banner).to_be_visible()
    expect(banner).to_have_text(banner.get_attribute("data-poll-logged-out"))
    expect(page.locator('section[data-pool="local"] .card-idle')).to_have_count(1)
    assert page.locator("main #login-submit, main input[name=password]").count() == 0

    # Its refreshes stopped at that 401 (qa36: they went on, each a 401, all the while): coming
    # back to the tab after logging in again in the other starts them again.
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/pools/" in r.url else None)
    page.wait_for_timeout(6_000)
    assert asked == []
    log_in(other, "alice", "alice-password")
    page.bring_to_front()
    # What a tab switch fires in a browser with a screen; headless Chromium fires none.
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    expect(banner).to_be_hidden()  # the next poll succeeds again


def test_on_a_phone_a_pools_card_table_fits_without_scrolling_sideways(logged_in_page):
    page = logged_in_page
    page.set_viewport_size({"width": 390, "height": 800})
    page.click("#nav-pools")

    region = page.locator('section[data-pool="local"] .table-responsive').first
    expect(region.locator(".pool-meter")).to_be_visible()
    wide, room = region.evaluate("box => [box.scrollWidth, box.clientWidth]")
    assert wide <= room, f"the card table is {wide} px wide in {room} px"
    # Its short headers read on one line, not a character per line.
    header = region.locator("th", has_text="空闲").first
    line = region.locator("th", has_text="卡型").first
    assert header.bounding_box()["height"] <= line.bounding_box()["height"]


def test_on_a_375_pixel_phone_a_queues_name_and_its_header_each_read_on_one_line(logged_in_page):
    # qa92: "default" was drawn "def/aul/t" and 队列 one character a line.
    page = logged_in_page
    page.set_viewport_size({"width": 375, "height": 800})
    page.click("#nav-pools")

    queues = page.locator('section[data-pool="local"] .pool-queues')
    name = queues.locator("tbody th").first
    expect(name).to_have_text("default")

    def lines(cell) -> int:
        """How many lines the cell's text takes."""
        return cell.evaluate(
            """cell => {
              const range = document.createRange();
              range.selectNodeContents(cell.firstChild);
              return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
            }"""
        )

    assert lines(name) == 1
    assert lines(queues.locator("thead th").first) == 1  # 队列
