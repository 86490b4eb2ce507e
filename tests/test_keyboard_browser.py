"""The console used with the keyboard alone and read by a screen reader: where focus is and
whether it shows, and what is announced while pages refresh themselves (axe, in
test_accessibility_browser.py, judges neither)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

# The focused element's focus indicator: its outline's width and its contrast against the
# background behind the element (the nearest ancestor that paints one). WCAG 1.4.11 asks 3:1.
FOCUS_INDICATOR = """() => {
  const element = document.activeElement;
  const rgb = (text) => text.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => {
    const channel = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  };
  let behind = element.parentElement;
  while (behind && rgb(getComputedStyle(behind).backgroundColor)[3] === 0) behind = behind.parentElement;
  const style = getComputedStyle(element);
  if (style.outlineStyle === "none") return {width: 0, contrast: 1};
  const [a, b] = [luminance(rgb(style.outlineColor)), luminance(rgb(getComputedStyle(behind).backgroundColor))];
  return {width: parseFloat(style.outlineWidth), contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
}"""


def test_focus_in_the_dark_top_bar_shows_as_an_outline_that_stands_out_from_the_bar(
    logged_in_page,
):
    page = logged_in_page
    reached = []
    for _ in range(12):
        page.keyboard.press("Tab")
        focused = page.evaluate("() => document.activeElement.closest('nav.navbar') !== null")
        if not focused:
            continue
        reached.append(page.evaluate("() => document.activeElement.textContent.trim()"))
        indicator = page.evaluate(FOCUS_INDICATOR)
        assert indicator["width"] >= 2, reached[-1]
        assert indicator["contrast"] >= 3, (reached[-1], indicator)
    # The brand, the three pages, both languages, the account's three links and 退出登录.
    assert reached[:4] == ["AI 训练任务控制台", "训练任务", "资源池", "创建任务"]
    assert "退出登录" in reached
