"""Windows high contrast (CSS forced colours) for a low-vision user (qa104): forced colours
replace every background and border colour with the system's and drop background images, so
what Bootstrap draws with them (a tick, a radio's dot, the current step, a pressed toggle) must
be drawn another way. Measured in Chromium with forced colours emulated."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import BROWSER_TIMEOUT_MS, log_in

from .test_job_pages_browser import submitted
from .test_wizard_browser import fill_basic, start

pytestmark = pytest.mark.browser

# Each visible tick, radio and switch of the page: how it is drawn (appearance) and whether it
# is on. With appearance none, its state is a background image, which forced colours remove.
BOXES = """() => [...document.querySelectorAll('input.form-check-input')]
  .filter(e => e.offsetParent !== null)
  .map(e => ({name: e.name || e.id, checked: e.checked,
              appearance: getComputedStyle(e).appearance}))"""


@pytest.fixture
def high_contrast(browser, live_server, alice):
    context = browser.new_context(base_url=live_server.url, locale="zh-CN", forced_colors="active")
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    log_in(page, "alice", "alice-password")
    yield page
    context.close()


def background(locator) -> str:
    return locator.evaluate("e => getComputedStyle(e).backgroundColor")


def colour(locator) -> str:
    return locator.evaluate("e => getComputedStyle(e).color")


def test_ticked_radios_and_boxes_are_drawn_as_the_systems_own_controls_in_high_contrast(
    high_contrast, alice
):
    page = high_contrast
    assert page.evaluate("() => matchMedia('(forced-colors: active)').matches")
    start(page)
    page.check("input[name=framework][value=PyTorchJob]")
    page.check("input[name=creation_mode][value=custom]")

    boxes = page.evaluate(BOXES)

    assert {"framework", "creation_mode"} <= {b["name"] for b in boxes if b["checked"]}
    assert [b for b in boxes if b["appearance"] != "auto"] == []

    # The job list's ticks too.
    job = submitted(alice, "ticked")
    page.goto("/")
    page.check(f"#select-{job.public_id}")

    boxes = page.evaluate(BOXES)

    assert "jobs" in [b["name"] for b in boxes if b["checked"]]
    assert [b for b in boxes if b["appearance"] != "auto"] == []


def test_the_current_step_and_the_pressed_language_stand_out_and_steps_not_reachable_are_greyed(
    high_contrast,
):
    page = high_contrast
    start(page)
    fill_basic(page)  # 基本信息 done and reachable, 镜像与命令 current, the rest not reachable yet
    steps = page.locator(".wizard-steps > .list-group-item")
    current = page.locator(".wizard-steps > [aria-current=step]")
    reachable = steps.nth(0).get_by_role("button")
    unreachable = steps.nth(3)
    expect(current).to_contain_text("镜像")
    expect(unreachable).to_have_class(re.compile(r"\bdisabled\b"))
    pressed = page.locator("button[data-language][aria-pressed=true]")
    other = page.locator("button[data-language][aria-pressed=false]")

    # Each pair drawn alike, which should not be (all of them were, before).
    alike = [
        what
        for what, one, another in [
            ("current step's background", background(current), background(steps.nth(0))),
            ("current step's text", colour(current), colour(steps.nth(0))),
            ("unreachable step's text", colour(unreachable), colour(reachable)),
            ("pressed language", background(pressed), background(other)),
        ]
        if one == another
    ]
    assert alike == []
