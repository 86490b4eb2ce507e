"""The job page's Stop and Delete, once confirmed, are on their way: pressed again before the
answer comes (clicked twice fast, Enter pressed twice, or pressed again after the status refresh
drew the buttons afresh) they are neither asked nor sent again (static/console.js, form[data-sent];
qa45, review62). The slow answer is real: another process holds the console's SQLite database
(tests/test_database_busy.py) until the test lets it go, so each request sent does reach the
server and waits there, as on a busy one; the server's own request_started signal counts them."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.signals import request_finished, request_started
from django.utils import timezone
from playwright.sync_api import expect

from jobs.models import Job, JobReplica, JobStatus, LocalRun
from jobs.runner import runner_key

from .conftest import BROWSER_TIMEOUT_MS, log_in
from .test_database_busy import database_held
from .test_job_pages_browser import submitted

pytestmark = pytest.mark.browser


def running(owner) -> Job:
    """A local job of `owner` that runs (as a worker of this run directory started it; none
    runs now, so a Stop is recorded and waits for one)."""
    job = submitted(owner, "night-run")
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, started_at=timezone.now())
    LocalRun.objects.create(job=job, runner=runner_key())
    JobReplica.objects.create(job=job, role="master", index=0, status="running")
    return job


# How long a wait inside database_held() lasts at most: well under SQLite's busy timeout (20 s,
# console.settings), after which the POST held meanwhile would be answered 503 (database busy)
# and the test fail on that rather than on what it waited for (review63).
HELD_WAIT_MS = 10_000
# How long leaving posts_reaching_the_server waits at most for the POSTs it saw to be answered,
# the database let go: one still writing while the test ends would write into its teardown.
ANSWERED_SECONDS = 60


@contextmanager
def posts_reaching_the_server(path: str) -> Iterator[list[str]]:
    """The POSTs to `path` the console has started to answer, one entry each. Left (also on a
    failure) once each has been answered."""
    seen: list[str] = []
    unanswered: set[int] = set()  # the server's threads answering one of them
    changed = threading.Condition()

    # The live server answers each connection in a thread of its own, one request after another:
    # the first request_finished in the thread of such a POST is that POST's.
    def started(sender, environ, **kwargs) -> None:
        if environ["REQUEST_METHOD"] == "POST" and environ["PATH_INFO"] == path:
            with changed:
                seen.append(path)
                unanswered.add(threading.get_ident())

    def finished(sender, **kwargs) -> None:
        with changed:
            if threading.get_ident() in unanswered:
                unanswered.discard(threading.get_ident())
                changed.notify_all()

    request_started.connect(started, weak=False)
    request_finished.connect(finished, weak=False)
    try:
        yield seen
    finally:
        with changed:
            answered = changed.wait_for(lambda: not unanswered, timeout=ANSWERED_SECONDS)
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert answered, f"a POST to {path} still unanswered after {ANSWERED_SECONDS} s"


def until(page, condition, *, what: str, within_ms: int = BROWSER_TIMEOUT_MS) -> None:
    """Waits (letting Playwright deliver the page's events meanwhile) for `condition`."""
    for _ in range(within_ms // 50):
        if condition():
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"timed out waiting for {what}")


def stop_events(job: Job) -> int:
    return job.events.filter(message_source__key="Stop requested by %(user)s.").count()


@pytest.fixture
def job_page(page, alice):
    """Alice on her running job's page, every question answered yes (and counted)."""
    job = running(alice)
    log_in(page, "alice", "alice-password")
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-live")).to_contain_text("运行中")
    questions: list[str] = []
    page.on("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    return page, job, questions


def presser(page, button: str):
    """A click of the mouse on `button`, as a person's, again and again. Playwright's own
    actions (page.click, locators, page.evaluate) wait for a navigation under way, here the
    held answer that the test lets go only after pressing again; a person does not. So the
    button is found before the first press."""
    box = page.locator(button).bounding_box()
    return lambda: page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def press_twice(page, button: str, how: str) -> None:
    if how == "click":
        press = presser(page, button)
        press()
        press()
    else:
        page.focus(button)
        page.keyboard.press("Enter")
        page.keyboard.press("Enter")


@pytest.mark.parametrize("how", ["click", "enter"])
def test_stop_pressed_twice_on_a_slow_server_is_asked_and_sent_once(job_page, how):
    """Before qa45 the second was asked and sent too."""
    page, job, questions = job_page
    path = f"/jobs/{job.public_id}/stop/"

    with posts_reaching_the_server(path) as posts:
        with database_held():
            press_twice(page, "#job-stop", how)
            until(page, lambda: posts, what="the Stop to reach the server", within_ms=HELD_WAIT_MS)
        expect(page.get_by_role("alert").filter(has_text="已请求停止任务")).to_be_visible()

    assert posts == [path] and len(questions) == 1
    assert stop_events(job) == 1
    assert Job.objects.get(pk=job.pk).status == JobStatus.STOPPING


@pytest.mark.parametrize("how", ["click", "enter"])
def test_delete_pressed_twice_on_a_slow_server_is_asked_and_sent_once(job_page, how):
    page, job, questions = job_page
    path = f"/jobs/{job.public_id}/delete/"

    with posts_reaching_the_server(path) as posts:
        with database_held():
            press_twice(page, "#job-delete", how)
            until(
                page, lambda: posts, what="the Delete to reach the server", within_ms=HELD_WAIT_MS
            )
        page.wait_for_url(re.compile(r"/$"))
        expect(page.get_by_role("alert")).to_contain_text("停止后将被删除")

    assert posts == [path] and len(questions) == 1
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert job.local_run.delete_when_stopped is True
    assert job.events.filter(reason="Stopping").count() == 1


# Says (to the test, through page.expose_function) each status refresh that drew the job's
# buttons afresh (#job-actions, swapped in out of band), once htmx has handled it: the test
# cannot ask the page (page.evaluate waits for the navigation under way).
BUTTONS_DRAWN_SAID = """
let drawn = false;
document.addEventListener("htmx:oobBeforeSwap", (event) => {
  if (event.detail.target.id === "job-actions") drawn = true;
});
document.addEventListener("htmx:afterSettle", () => {
  if (drawn) window.buttonsDrawn();
  drawn = false;
});
"""


@pytest.mark.parametrize("button", ["#job-stop", "#job-delete"])
def test_stop_or_delete_pressed_again_after_the_status_refresh_is_not_sent_again(job_page, button):
    """The refresh redraws the buttons every 2 s: a fresh copy drawn over a form on its way had
    no data-sent, and a second press was asked and sent again (review62)."""
    page, job, questions = job_page
    path = f"/jobs/{job.public_id}/{'stop' if button == '#job-stop' else 'delete'}/"
    refreshes: list[int] = []
    page.expose_function("buttonsDrawn", lambda: refreshes.append(1))
    page.add_init_script(BUTTONS_DRAWN_SAID)
    page.reload()
    press = presser(page, button)

    with posts_reaching_the_server(path) as posts:
        with database_held():
            press()
            until(
                page,
                lambda: posts,
                what="the first press to reach the server",
                within_ms=HELD_WAIT_MS,
            )
            refreshes.clear()
            until(
                page,
                lambda: refreshes,
                what="the buttons drawn again while it waits",
                within_ms=HELD_WAIT_MS,
            )
            press()
        expect(
            page.get_by_role("alert").filter(has_text=re.compile("已请求停止任务|停止后将被删除"))
        ).to_be_visible()

    assert posts == [path] and len(questions) == 1
    assert stop_events(job) == (1 if button == "#job-stop" else 0)
    assert job.events.filter(reason="Stopping").count() == 1
