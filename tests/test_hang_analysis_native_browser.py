"""Hang analysis's native frames in the browser: each run of native frames between two Python
frames is one dimmed line, and a click on it (a <details>, no JavaScript) shows its frames."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from jobs import spec as S
from jobs.stacks import py_spy

from .runner_helpers import make_spec, runner_settings, submit, volume, worker_in_thread  # noqa: F401
from .test_hang_analysis import until_started
from .test_hang_analysis_native import NATIVE_TRAIN
from .test_runner_job_users import job_users_on  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(os.geteuid() != 0, reason="native frames are read by a worker run as root"),
    pytest.mark.skipif(py_spy() is None, reason="py-spy is not installed"),
]


def test_a_run_of_native_frames_is_one_line_a_click_unfolds(
    logged_in_page,
    alice,
    job_users_on,  # noqa: F811
):
    (volume(job_users_on) / "train.py").write_text(NATIVE_TRAIN)
    job = submit(
        alice,
        make_spec(
            "/usr/bin/python3 /workspace/train.py", roles=[S.Role("master", 1), S.Role("worker", 2)]
        ),
    )
    page = logged_in_page
    with worker_in_thread():
        page.goto(f"/jobs/{job.public_id}/")
        expect(page.locator("#job-status")).to_have_text(re.compile("运行中"), timeout=20_000)
        until_started(job)  # Running is as they start, not when they have reached the hang

        page.click("#hang-capture")

        groups = page.locator("#hang .hang-group")
        expect(groups).to_have_count(2, timeout=20_000)
        stuck = groups.nth(0)
        expect(stuck.locator(".hang-replicas")).to_have_text("worker-0")
        # The Python frames read as before; the native run above them is one line, folded.
        native = stuck.locator(".hang-frames details.hang-native").first
        expect(native.locator("summary")).to_contain_text(
            "PyThread_acquire_lock_timed (python3.11) … · 3 个原生栈帧"
        )
        expect(native.locator(".hang-native-frame").first).to_be_hidden()
        expect(stuck.locator(".hang-frame").first).to_contain_text(
            "stuck_in_allreduce (/workspace/train.py:10)"
        )

        native.locator("summary").click()

        expect(native.locator(".hang-native-frame")).to_have_count(3)
        expect(native.locator(".hang-native-frame").nth(2)).to_have_text(
            "PyThread_acquire_lock_timed (python3.11)"
        )
        expect(native.locator(".hang-native-frame").first).to_be_visible()
