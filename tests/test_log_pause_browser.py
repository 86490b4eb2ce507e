"""A running job's log tail, which refreshes itself every 2 s, can be paused from the keyboard
(暂停刷新 / Pause updates, WCAG 2.2.2), and a screen reader hears how many lines each refresh
brought (qa104: it heard nothing of them, and nothing stopped them) while focus is in the log:
elsewhere they are counted silently and the total said once focus comes back (qa115: an
endless stream)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .test_job_pages_browser import submitted, worker_thread  # noqa: F401
from .test_keyboard_browser import tab_to

pytestmark = pytest.mark.browser

CHATTY = "for i in $(seq 1 900); do echo line-$i; sleep 0.2; done"


@pytest.mark.parametrize(
    ("language", "button", "resume", "said"),
    [
        ("zh-hans", "暂停刷新", "继续刷新", r"^新增 \d+ 行$"),
        ("en", "Pause updates", "Resume updates", r"^\d+ new lines?$"),
    ],
)
def test_a_paused_log_asks_for_nothing_and_pressed_again_catches_up_with_the_new_lines_said(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
    language,
    button,
    resume,
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

    # Paused, it says what pressing it again does (qa108), and no aria-pressed beside a label
    # that changes.
    pause = page.locator("#log-pause")
    expect(pause).to_have_accessible_name(resume)
    expect(pause).not_to_have_attribute("aria-pressed", re.compile("."))
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

    expect(pause).to_have_accessible_name(button)
    expect(page.locator("#log-lines")).not_to_have_text(lines)
    assert log_requests
    expect(status).to_have_text(re.compile(said))


def test_new_lines_are_said_only_with_focus_in_the_log_and_those_drawn_meanwhile_once_it_returns(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    page = logged_in_page
    job = submitted(alice, "chatty", command=CHATTY)
    # The lines the log box was first drawn with: every one drawn into it after them is new.
    # (Not those the page came with: a job not started yet comes with no log box, and the
    # status refresh draws it once the job runs, its lines none a reader is told of as new.
    # Session 55's "9 of 17": the page came with none, the box with 8.) Read in the page as
    # the box comes: read after, a refresh of the tail may have come between (review68).
    page.add_init_script(
        """window.firstBoxLine = null;
      function firstBox() {
        const box = document.getElementById('log-lines');
        if (window.firstBoxLine !== null || !box) return;
        const found = Array.from(box.textContent.matchAll(/line-(\\d+)/g), (m) => Number(m[1]));
        window.firstBoxLine = found.length ? Math.max(...found) : 0;
      }
      document.addEventListener('DOMContentLoaded', () => {
        firstBox();
        new MutationObserver(firstBox).observe(document.body, {childList: true, subtree: true});
      });"""
    )
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#log-lines")).to_contain_text("line-2")
    first = page.evaluate("() => window.firstBoxLine")
    page.evaluate(
        """() => { window.statusChanges = 0;
      new MutationObserver(() => window.statusChanges++).observe(
        document.getElementById('log-new-lines'), {childList: true, characterData: true, subtree: true}); }"""
    )
    # Searching: focus in the search, which listens for its own outcome.
    page.locator("#log-search-q").fill("line-1")
    page.locator("#log-search-q").press("Enter")
    expect(page.locator("#log-search-said")).to_have_text(re.compile(r"行中有 \d+ 行匹配。$"))
    # Lines drawn meanwhile, by two refreshes of the tail at least (five a second are printed).
    expect(page.locator("#log-lines")).to_contain_text(f"line-{first + 15}")

    # Back in the log box: the lines drawn since the page came, all of them, said at once.
    back = page.evaluate(
        """async () => { const box = document.getElementById('log-lines'); box.focus();
      await Promise.resolve();  // the observer's count: a microtask, no refresh between
      const texts = Array.from(box.querySelectorAll('.log-line'), (l) => l.textContent);
      return {last: Number(/line-(\\d+)/.exec(texts[texts.length - 1])[1]),
              said: document.getElementById('log-new-lines').textContent,
              search: document.getElementById('log-search-said').textContent,
              changes: window.statusChanges}; }"""
    )

    assert back["said"] == f"新增 {back['last'] - first} 行"
    assert back["changes"] == 1  # nothing said until then
    assert back["search"] == ""  # said when it came; still shown under the search box


def test_the_pause_button_goes_once_the_job_has_ended_and_its_tail_no_longer_refreshes(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    """review57: the ended job's tail came back without its refresh, and 暂停刷新 stayed,
    pressable, pausing nothing."""
    page = logged_in_page
    job = submitted(alice, "short", command="echo hello; sleep 3")
    page.goto(f"/jobs/{job.public_id}/")
    pause = page.locator("#log-pause")
    expect(pause).to_be_visible()

    expect(page.locator("#log-tail")).not_to_have_attribute("hx-trigger", re.compile("."))

    expect(pause).to_be_hidden()
    expect(page.locator("#log-lines")).to_contain_text("hello")


def test_a_last_line_read_before_its_end_and_grown_since_is_not_said_to_be_new_lines(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    """review57: a platform's log read mid-line has a last line that grows by the next
    refresh; no run of the old tail was found in the new one, and every line was said new.
    Here the line read mid-line is made in the page: the old tail's last line cut short."""
    page = logged_in_page
    job = submitted(alice, "quiet", command="for i in 1 2 3 4 5; do echo line-$i; done; sleep 60")
    page.goto(f"/jobs/{job.public_id}/")
    lines = page.locator("#log-lines .log-line")
    expect(page.locator("#log-lines")).to_contain_text("line-5")
    pause = page.locator("#log-pause")
    pause.click()  # no refresh draws over the line cut short below
    expect(pause).to_have_text("继续刷新")
    with page.expect_request(re.compile(r"/live/")):
        pass  # a refresh on its way when it was pressed is drawn before this
    page.evaluate("() => document.getElementById('log-new-lines').textContent = ''")
    last = lines.last.inner_text()
    page.evaluate(
        """() => { const lines = document.querySelectorAll('#log-lines .log-line');
      const last = lines[lines.length - 1];
      last.textContent = last.textContent.replace(/5\\n$/, '\\n'); }"""
    )
    expect(lines.last).not_to_have_text(last)

    with page.expect_response(re.compile(r"/logs/")):
        pause.click()  # pressed again, the tail asks at once

    expect(lines.last).to_have_text(last)  # the refresh has been drawn
    expect(page.locator("#log-new-lines")).to_have_text("")


def test_new_lines_repeating_the_lines_shown_are_counted_by_their_place_in_the_log(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    """fix128: the new lines were those past the old tail's last lines found again, by text,
    in the new one: a job printing the same line again and again (its stamp the same within a
    millisecond, a platform's line without any) made the new tail read as the old one, and its
    new lines went unsaid. Here the old tail is given the new tail's very text in the page, as
    such a job's would have it; where each line starts in the log stays the server's."""
    page = logged_in_page
    page.context.add_cookies([{"name": "django_language", "value": "en", "url": page.url}])
    job = submitted(
        alice,
        "repeats",
        command=(
            "for i in $(seq 1 200); do echo line-$i; done; sleep 12; "
            "for i in 201 202 203; do echo line-$i; done; sleep 60"
        ),
    )
    page.goto(f"/jobs/{job.public_id}/")
    box = page.locator("#log-lines")
    expect(box).to_contain_text("line-200")
    pause = page.locator("#log-pause")
    pause.click()
    expect(pause).to_have_text(re.compile("继续刷新|Resume updates"))
    with page.expect_request(re.compile(r"/live/")):
        pass  # a refresh on its way when it was pressed is drawn before this
    assert "line-201" not in box.inner_text()  # the three lines are not shown yet
    assert page.locator("#log-lines .log-line").count() == 200
    # The tail as the next refresh will draw it (the same request as the tail's own).
    page.evaluate(
        """() => { window.nextTail = async () => {
      const url = document.getElementById('log-tail').getAttribute('hx-get');
      const answer = await fetch(url, {headers: {'HX-Request': 'true', 'HX-Target': 'log-tail'}});
      const drawn = document.createElement('template');
      drawn.innerHTML = await answer.text();
      return Array.from(drawn.content.querySelectorAll('.log-line'), (l) => l.textContent); }; }"""
    )
    for _ in range(120):  # once the job has printed its three lines more
        if "line-203" in "".join(page.evaluate("() => window.nextTail()")):
            break
        page.wait_for_timeout(500)
    page.evaluate(
        """async () => { const texts = await window.nextTail();
      const lines = document.querySelectorAll('#log-lines .log-line');
      if (texts.length !== lines.length) throw new Error('tails of different lengths');
      lines.forEach((line, i) => { line.textContent = texts[i]; });
      document.getElementById('log-new-lines').textContent = ''; }"""
    )

    with page.expect_response(re.compile(r"/logs/")):
        pause.click()  # pressed again, the tail asks at once

    expect(box).to_contain_text("line-203")
    expect(page.locator("#log-new-lines")).to_have_text("3 new lines")
