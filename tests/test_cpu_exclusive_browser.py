"""CPU 独占 ticked in the wizard, as a team from seed 004 does: the job's page shows, and keeps
through its refreshes, the core each replica is pinned to."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job

from .runner_helpers import runner_settings, worker_in_thread  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.fixture
def worker_thread(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = ""
    settings.LOCAL_VOLUMES = f"scratch={tmp_path / 'scratch'}"
    settings.WORKER_POLL_SECONDS = 0.2
    settings.LOCAL_STOP_GRACE_SECONDS = 1
    with worker_in_thread():
        yield


def next_step(page, slug):
    page.click("#wizard-next")
    page.wait_for_url(re.compile(rf"/{slug}/$"))


def test_a_job_with_cpu_exclusive_ticked_shows_its_pinned_core_on_its_page(
    logged_in_page, alice, worker_thread
):
    page = logged_in_page
    page.click("#nav-create-job")
    page.click("#new-draft")
    page.wait_for_url(re.compile(r"/create/[0-9a-f-]+/basic/$"))
    page.check("input[name=framework][value=PyTorchJob]")
    next_step(page, "image")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "grep Cpus_allowed_list /proc/self/status; sleep 60")
    for slug in ("resources", "data"):
        next_step(page, slug)
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ("fault", "advanced"):
        next_step(page, slug)
    page.check("#id_cpu_exclusive")
    for slug in ("submission", "review"):
        next_step(page, slug)
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))

    expect(page.locator("#job-status")).to_have_text(re.compile("Running|运行中"), timeout=20_000)
    expect(page.locator("#log-lines")).to_contain_text("Cpus_allowed_list", timeout=20_000)
    # The log shown is master-0's, the table's first row; the wizard's worker has a core too.
    pinned = re.search(r"Cpus_allowed_list:\s*(\S+)", page.locator("#log-lines").inner_text())[1]
    cores = page.locator("#replicas td.replica-cpus")
    expect(cores).to_have_count(2)
    expect(cores.first).to_have_text(pinned)
    assert cores.last.inner_text() not in ("", pinned)
    expect(page.locator("#replicas thead")).to_contain_text("独占 CPU 核")
    expect(page.locator("#cpus-pinned")).to_contain_text("CPU 亲和性")
    # Still there after the page's own refresh (every 2 s), not only as first drawn.
    page.wait_for_timeout(2500)
    expect(cores.first).to_have_text(pinned)
    job = Job.objects.get(owner=alice)
    assert job.replicas.get(role="master").cpus == pinned
