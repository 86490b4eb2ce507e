"""A running job's log tail, which refreshes itself every 2 s, can be paused from the keyboard
(暂停刷新 / Pause updates, WCAG 2.2.2), and a screen reader hears how many lines each refresh
brought (qa104: it heard nothing of them, and nothing stopped them)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .test_job_pages_browser import submitted, worker_thread  # noqa: F401
from .test_keyboard_browser import tab_to

pytestmark = pytest.mark.browser

CHATTY = "for i in $(seq 1 900); do echo line-$i; sleep 0.2; done"


@pytest.mark.parametrize(
    ("language", "button", "said"),
    [("zh-hans", "暂停刷新", r"^新增 \d+ 行$"), ("en", "Pause updates", r"^\d+ new lines?$")],
)
def test_a_paused_log_asks_for_nothing_and_pressed_again_catches_up_with_the_new_lines_said(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
    language,
    button,
    said,
):
    page = logged_in_page
    page.context.add_cookies([{"name": "django_language", "value": language, "url": page.url}])
    job = submitted(alice, "chatty", command=CHATTY)
    log_requests: list[str] = []
    page.on("request", lambda r: log_requests.append(r.url) if "/logs/" in r.url else None)
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#log-lines")).to_contain_text("line-2")
    pause = page.get_by_role("button", name=button, exact=True)
    status = page.locator("#log-new-lines")
    expect(status).to_have_attribute("role", "status")

    tab_to(page, "#log-pause", presses=60)
    page.keyboard.press("Enter")

    expect(pause).to_have_attribute("aria-pressed", "true")
    # A refresh already on its way when it was pressed is drawn: its answer comes before the
    # status area's next refresh (every 2 s too) is sent.
    with page.expect_request(re.compile(r"/live/")):
        pass
    lines = page.locator("#log-lines").inner_text()
    log_requests.clear()
    page.evaluate(
        """() => { window.statusChanges = 0;
      new MutationObserver(() => window.statusChanges++).observe(
        document.getElementById('log-new-lines'), {childList: true, characterData: true, subtree: true}); }"""
    )
    for _ in range(2):  # two of the status area's refreshes: the tail's would have come between
        with page.expect_request(re.compile(r"/live/")):
            pass
    assert log_requests == []
    assert page.locator("#log-lines").inner_text() == lines
    assert page.evaluate("() => window.statusChanges") == 0

    expect(pause).to_be_focused()
    page.keyboard.press("Space")

    expect(pause).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#log-lines")).not_to_have_text(lines)
    assert log_requests
    expect(status).to_have_text(re.compile(said))
