"""中文/EN pressed from the keyboard loads the page again in the other language with focus on
the switch, pressed now (qa104: focus was left on the page itself, and a keyboard user began
again from its top)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .test_keyboard_browser import tab_to
from .test_wizard_browser import start

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("where", ["job list", "wizard step", "drafts page"])
def test_the_language_pressed_has_focus_on_the_page_that_comes_back_in_it(logged_in_page, where):
    page = logged_in_page
    if where == "wizard step":
        start(page)
        page.fill("#id_name", "bert-large")
    if where == "drafts page":  # review57: its buttons were drawn without aria-pressed
        page.click("#nav-create-job")
        page.wait_for_url(re.compile(r"/create/$"))
    tab_to(page, "button[data-language=en]")

    page.keyboard.press("Enter")

    expect(page.locator("html")).to_have_attribute("lang", "en")
    switch = page.get_by_role("button", name="EN", exact=True)
    expect(switch).to_have_attribute("aria-pressed", "true")
    expect(switch).to_be_focused()
    if where == "wizard step":
        expect(page.locator("#id_name")).to_have_value("bert-large")  # saved first, as before

    # And back: 中文, pressed with Space, has focus on the Chinese page.
    page.keyboard.press("Shift+Tab")
    expect(page.get_by_role("button", name="中文", exact=True)).to_be_focused()
    page.keyboard.press("Space")

    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.get_by_role("button", name="中文", exact=True)).to_be_focused()
