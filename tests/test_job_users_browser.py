"""A job submitted in the browser on a console that runs each user's jobs as a user of their
own (LOCAL_JOB_UID_BASE): its page says the uid, and the job's own output shows it is so."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from .runner_helpers import worker_in_thread
from .test_job_pages_browser import A800, submit_from_the_wizard

pytestmark = pytest.mark.browser

BASE = 1_500_000_000


@pytest.fixture
def worker_as_users(settings):
    if os.geteuid() != 0:
        pytest.skip("jobs run as other users only for a worker run as root (CI runs as root)")
    top = Path(tempfile.mkdtemp(prefix="console-job-users-"))
    top.chmod(0o755)
    (top / "scratch").mkdir()
    (top / "scratch").chmod(0o1777)
    settings.LOCAL_RUN_DIR = top / "runs"
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={top / 'scratch'}"
    settings.WORKER_POLL_SECONDS = 0.2
    settings.LOCAL_STOP_GRACE_SECONDS = 1
    settings.LOCAL_JOB_UID_BASE = BASE
    settings.LOCAL_JOB_GID = ""
    with worker_in_thread():
        yield
    shutil.rmtree(top, ignore_errors=True)


def test_a_jobs_page_says_the_uid_it_runs_as_and_its_output_agrees(
    logged_in_page, alice, worker_as_users
):
    page = logged_in_page
    uid = BASE + alice.pk
    submit_from_the_wizard(page, "echo my-uid-$(id -u) && touch /workspace/mine")

    expect(page.locator("#log-lines")).to_contain_text(f"my-uid-{uid}", timeout=30_000)
    expect(page.locator("#runs-as")).to_have_text(
        f"以 uid {uid}、gid {uid} 运行：它写入存储卷的文件归该用户所有。"
    )
    page.click("[data-language=en]")
    expect(page.locator("#runs-as")).to_have_text(
        f"Runs as uid {uid}, gid {uid}: files it writes to a volume are that user's."
    )
