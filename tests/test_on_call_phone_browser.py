"""The console as an on-call engineer finds it at night: on a phone (390 pixels, touch), on a
slow or flaky network, after the phone slept through the end of the log-in."""

from __future__ import annotations

import re

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from jobs.models import Job, JobStatus
from tests.conftest import BROWSER_TIMEOUT_MS, log_in

from .runner_helpers import worker_in_thread  # noqa: F401
from .test_job_pages_browser import submitted, worker_thread  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.fixture
def phone(browser, live_server, transactional_db):
    """A phone's page: 390 by 844 pixels, touch, in Chinese."""
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
        locale="zh-CN",
    )
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    yield context.new_page()
    context.close()


def stop_events(job: Job) -> int:
    return job.events.filter(message_source__key="Stop requested by %(user)s.").count()


@pytest.mark.usefixtures("worker_thread")
def test_stop_tapped_after_the_log_in_ended_says_nothing_was_done_and_comes_back_to_the_job(
    phone, alice
):
    job = submitted(alice, "night-run", command="sleep 120")
    log_in(phone, "alice", "alice-password")
    phone.goto(f"/jobs/{job.public_id}/")
    expect(phone.locator("#job-live")).to_contain_text("运行中")
    Session.objects.all().delete()  # the log-in ended while the phone slept

    phone.on("dialog", lambda dialog: dialog.accept())
    phone.locator("#job-stop-form button").tap()

    # Before qa45 the login form came up without a word: nothing said the Stop was not done.
    phone.wait_for_url(re.compile(r"/login/"))
    expect(phone.get_by_role("alert")).to_contain_text("登录已失效")
    expect(phone.get_by_role("alert")).to_contain_text("未执行")
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and stop_events(job) == 0

    phone.fill("input[name=username]", "alice")
    phone.fill("input[name=password]", "alice-password")
    phone.locator("#login-submit").tap()
    phone.wait_for_url(re.compile(rf"/jobs/{job.public_id}/$"))
    expect(phone.locator("#job-live")).to_contain_text("运行中")
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and stop_events(job) == 0  # not done on log-in

    phone.locator("#job-stop-form button").tap()
    expect(phone.get_by_role("alert").filter(has_text="已请求停止任务")).to_be_visible()
    job.refresh_from_db()
    assert stop_events(job) == 1


@pytest.mark.usefixtures("worker_thread")
def test_a_list_refresh_left_unanswered_is_given_up_said_and_the_list_catches_up_after(
    phone, alice
):
    job = submitted(alice, "night-run", command="sleep 4")
    log_in(phone, "alice", "alice-password")
    expect(phone.locator(f'tr[data-job="{job.public_id}"]')).to_contain_text("运行中")
    # The phone's connection dies in the middle of a refresh: no answer, no error either.
    held = []
    phone.route(
        "**/*",
        lambda route: (
            held.append(route) if route.request.headers.get("hx-request") else route.continue_()
        ),
    )
    while not held:
        phone.wait_for_timeout(100)

    # Before qa45 htmx waited on it for good: the next refreshes were queued behind it, and
    # the list showed 运行中 without a word long after the job had ended.
    banner = phone.locator("#request-error")
    expect(banner).to_contain_text("控制台一段时间未响应", timeout=30_000)
    phone.unroute("**/*")  # the network is back

    expect(phone.locator(f'tr[data-job="{job.public_id}"]')).to_contain_text("成功", timeout=30_000)
    expect(banner).to_be_hidden()


@pytest.mark.usefixtures("worker_thread")
def test_stop_tapped_again_while_the_first_is_on_its_way_is_sent_once(phone, alice):
    job = submitted(alice, "night-run", command="sleep 120")
    log_in(phone, "alice", "alice-password")
    phone.goto(f"/jobs/{job.public_id}/")
    expect(phone.locator("#job-live")).to_contain_text("运行中")
    sent = []

    def slow_network(route) -> None:
        sent.append(route.request.method)
        phone.wait_for_timeout(2000)
        route.continue_()

    phone.route("**/stop/", slow_network)
    questions = []
    phone.on("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    button = phone.locator("#job-stop-form button").bounding_box()
    for _ in range(2):  # nothing seems to happen after the first: tapped again
        phone.touchscreen.tap(button["x"] + button["width"] / 2, button["y"] + button["height"] / 2)

    # Before qa45 both were sent, and the second's answer was all the person saw of their Stop:
    # "任务已结束或正在停止。", as if it had not been theirs.
    expect(phone.get_by_role("alert").filter(has_text="已请求停止任务")).to_be_visible()
    assert sent == ["POST"] and len(questions) == 1
    assert stop_events(job) == 1


def test_stop_selected_after_the_log_in_ended_comes_back_to_the_filtered_list_it_was_on(
    phone, alice
):
    # Found (qa45's leftover): the log-in came back to the whole list, its filter gone.
    wanted = submitted(alice, "night-sweep")
    submitted(alice, "day-run")
    log_in(phone, "alice", "alice-password")
    phone.goto("/?q=night")
    expect(phone.locator(f"#select-{wanted.public_id}")).to_be_visible()
    phone.locator(f"#select-{wanted.public_id}").tap()
    Session.objects.all().delete()  # the log-in ended while the phone slept

    phone.locator("#bulk-stop").tap()

    phone.wait_for_url(re.compile(r"/login/"))
    expect(phone.get_by_role("alert")).to_contain_text("未执行")
    phone.fill("input[name=username]", "alice")
    phone.fill("input[name=password]", "alice-password")
    phone.locator("#login-submit").tap()
    phone.wait_for_url(re.compile(r"/\?q=night$"))
    expect(phone.locator(f"#select-{wanted.public_id}")).to_be_visible()
    assert phone.locator("input[name=q]").input_value() == "night"
    wanted.refresh_from_db()
    assert wanted.status == JobStatus.QUEUED and stop_events(wanted) == 0
