"""Touch targets on a phone (left31): at 390 pixels every button, link, tick and switch of the
job list and a job's page is at least 24 by 24 CSS pixels (WCAG 2.2, 2.5.8 Target Size
(Minimum)), measured in Chromium. Before, the list's ticks were 16 by 16, its job names' links
19 high, a job page's log ticks and switch 16 high and Download log 21."""

from __future__ import annotations

import pytest

from jobs.models import JobStatus
from jobs.views import PAGE_SIZE
from jobs.worker import Worker
from tests.conftest import BROWSER_TIMEOUT_MS, log_in

from .runner_helpers import (  # noqa: F401
    UNTIL_THE_GATE_OPENS,
    make_spec,
    run_until,
    runner_settings,
    status_of,
    submit,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("runner_settings")]

MINIMUM = 24

# Every control a finger can tap that is on screen, with its size: a tick's or switch's label
# toggles it, so it is one too (a text box's label is not: the box is what is tapped). The
# skip link shows only when focused by a keyboard, as a full button.
TARGETS = """() => [...document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), select, textarea, summary, label.form-check-label')]
  .filter(e => e.offsetParent !== null && !e.matches('.visually-hidden-focusable'))
  .map(e => { const r = e.getBoundingClientRect();
    return {what: e.id || e.getAttribute('name') || (e.innerText || '').trim().slice(0, 40) || e.outerHTML.slice(0, 120),
            width: r.width, height: r.height}; })"""


def too_small(page) -> list[dict]:
    return [t for t in page.evaluate(TARGETS) if t["width"] < MINIMUM or t["height"] < MINIMUM]


@pytest.fixture
def phone(browser, live_server, alice):
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": 390, "height": 844},
        has_touch=True,
        is_mobile=True,
    )
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    log_in(page, "alice", "alice-password")
    yield page
    context.close()


def test_on_a_phone_every_target_of_the_job_list_and_a_jobs_page_is_at_least_24_pixels(
    phone, alice, settings
):
    from .runner_helpers import open_gate

    worker = Worker()
    ended = submit(alice, make_spec("echo done"))
    run_until(worker, lambda: status_of(ended) == JobStatus.SUCCEEDED, what="ended")
    running = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    run_until(worker, lambda: status_of(running) == JobStatus.RUNNING, what="running")
    # Enough for a second page, the two above on it.
    newest = [submit(alice, make_spec("echo waiting")) for _ in range(PAGE_SIZE)][-1]
    try:
        sizes = {}
        for path, named in [
            # The column heads and the last and first pages' links (feat-list) too.
            ("/", ["select-all", f"select-{newest.public_id}", "page-next", "bulk-stop"]),
            (
                "/?sort=status",
                ["sort-name", "sort-status", "sort-cards", "sort-created", "page-last"],
            ),
            ("/?page=2", ["page-previous", "page-first", f"job-link-{ended.public_id}"]),
            (f"/jobs/{running.public_id}/", ["job-stop", "job-copy"]),
            (f"/jobs/{ended.public_id}/", ["job-delete", "job-copy", "job-rerun", "log-download"]),
        ]:
            phone.goto(path)
            measured = {t["what"]: t for t in phone.evaluate(TARGETS)}
            assert set(named) <= set(measured), (path, sorted(measured))  # on screen, measured
            sizes[path] = too_small(phone)
        assert sizes == {path: [] for path in sizes}
    finally:
        open_gate(settings)
        run_until(worker, lambda: status_of(running) == JobStatus.SUCCEEDED, what="done")
