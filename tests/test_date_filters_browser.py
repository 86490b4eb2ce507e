"""The job list's date filters used with the keyboard alone: focus shows on each of their parts."""

from __future__ import annotations

import pytest

from .test_job_pages_browser import submitted
from .test_keyboard_browser import FOCUS_INDICATOR

pytestmark = pytest.mark.browser


def test_focus_on_a_date_filters_every_part_and_its_calendar_button_shows_as_an_outline(
    logged_in_page, alice
):
    # qa84: on the calendar button the field's outline went (outline: none); only Chromium's
    # thin ring on the icon was left.
    submitted(alice, "to-filter")  # the filters show once there is a job
    page = logged_in_page
    page.goto("/")
    page.locator("#id_created_from").focus()
    parts = []
    for _ in range(6):  # year, month, day, the calendar button, then out of the field
        if page.evaluate("() => document.activeElement.id") != "id_created_from":
            break
        indicator = page.evaluate(FOCUS_INDICATOR)
        parts.append(indicator)
        page.keyboard.press("Tab")
    assert len(parts) >= 2
    for indicator in parts:
        assert indicator["width"] >= 2 and indicator["contrast"] >= 3, parts
