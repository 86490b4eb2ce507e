"""The address bar follows the wizard's steps as they are drawn (qa104 saw it lag the drawn
step, so that a reload then reopened the step before): the step's address is in place by the
time its heading takes focus, after 下一步 and after 上一步 alike. htmx pushes an answer's
HX-Push-Url before it swaps the step in (htmx:pushedIntoHistory comes before htmx:afterSwap),
and this holds it so."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .test_wizard_browser import start

pytestmark = pytest.mark.browser

# The address at the moment each element took focus, recorded as it happens (not read
# afterwards, when a late address would have caught up).
RECORD_FOCUS = """() => { window.focusedAt = [];
  document.addEventListener('focusin', e => window.focusedAt.push([e.target.id, location.pathname])); }"""


def test_a_steps_address_is_in_the_bar_when_its_heading_takes_focus(logged_in_page):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "bert-large")
    page.check("input[name=framework][value=PyTorchJob]")
    page.evaluate(RECORD_FOCUS)

    page.click("#wizard-next")

    expect(page.locator("#step-heading")).to_be_focused()
    expect(page.locator("#step-heading")).to_contain_text("镜像与命令")
    [address] = [path for id_, path in page.evaluate("window.focusedAt") if id_ == "step-heading"]
    assert address.endswith("/image/")
    assert page.url.endswith("/image/")

    # And back again: 上一步's step is at its address as its heading takes focus.
    page.evaluate("() => window.focusedAt = []")
    page.click("#wizard-back")

    expect(page.locator("#step-heading")).to_contain_text("基础信息")
    expect(page.locator("#step-heading")).to_be_focused()
    [address] = [path for id_, path in page.evaluate("window.focusedAt") if id_ == "step-heading"]
    assert address.endswith("/basic/")
