"""A job with outbound network (LOCAL_JOB_NETWORK=isolated-outbound) whose slirp4netns is
killed from outside while its page is open: the page says so in its events, in Chinese and
in English, the job keeps running, and a Stop from the page ends it with nothing left."""

from __future__ import annotations

import contextlib
import os
import re
import signal

import pytest
from playwright.sync_api import expect

from jobs.models import Job, JobStatus
from jobs.network import network_dir

from .runner_helpers import processes_with, worker_in_thread
from .test_job_pages_browser import A800, submit_from_the_wizard

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.access("/usr/bin/slirp4netns", os.X_OK),
        reason="slirp4netns is not installed (apt-get install slirp4netns)",
    ),
]


@pytest.fixture
def outbound_worker(settings, tmp_path):
    (tmp_path / "scratch").mkdir()
    settings.LOCAL_RUN_DIR = tmp_path / "runs"
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path / 'scratch'}"
    settings.LOCAL_JOB_NETWORK = "isolated-outbound"
    settings.WORKER_POLL_SECONDS = 0.2
    settings.LOCAL_STOP_GRACE_SECONDS = 1
    with worker_in_thread():
        yield


def helper_pid(job: Job) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        state = network_dir(job.public_id, 1)
        if (state / "pid").exists():
            return int((state / "helper").read_text())
    return None


def test_a_killed_slirp4netns_shows_on_the_jobs_page_and_a_stop_still_ends_the_job(
    logged_in_page, alice, outbound_worker
):
    page = logged_in_page
    submit_from_the_wizard(page, "sleep 300")
    expect(page.locator("#job-status")).to_have_text(re.compile("Running|运行中"), timeout=30_000)
    job = Job.objects.get(owner=alice)
    pid = None
    for _ in range(100):
        if (pid := helper_pid(job)) is not None:
            break
        page.wait_for_timeout(100)
    assert pid is not None, "slirp4netns did not start"
    expect(page.locator("#events")).not_to_contain_text("出站网络已中断")

    os.kill(pid, signal.SIGKILL)  # someone kills the job's slirp4netns

    # The page, refreshing itself while the job runs, brings the warning.
    warning = page.locator("#events li.text-danger", has_text="出站网络已中断")
    expect(warning).to_contain_text("向外的连接现在会失败", timeout=20_000)
    expect(page.locator("#job-status")).to_have_text(re.compile("运行中"))
    # QA round 24: said at the top too while it runs (at the end of a long event list nobody
    # saw it), with what to do (it spoke only of a fault-tolerance restart this job never gets).
    notice = page.locator("#network-lost")
    expect(notice).to_contain_text("出站网络已中断")
    expect(notice).to_contain_text("如需恢复：请停止任务，再点击“再次运行”，新任务会有自己的网络。")
    page.click("[data-language=en]")
    warning = page.locator("#events li.text-danger", has_text="Outbound network lost")
    expect(warning).to_contain_text("its connections out now fail", timeout=10_000)
    expect(notice).to_contain_text(
        "To have it back, stop the job and press Run again: the new job gets a network of its own."
    )
    expect(page.locator("#job-rerun")).to_have_text("Run again")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#job-stop")
    expect(page.locator("#job-status")).to_have_text("Stopped", timeout=20_000)
    expect(notice).to_have_count(0)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.events.filter(reason="OutboundLost").count() == 1
    assert processes_with(job.public_id) == []
