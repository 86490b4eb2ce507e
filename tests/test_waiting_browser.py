"""A waiting job's page in a browser (QA 63): a queue task behind its queue's first job, while
the card it asks for is idle, says the job ahead holds it, and the page's poll follows once
that job's room is there, without a reload."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from jobs.health import WorkerIdentity, worker_beat
from jobs.models import Job, JobStatus, LocalRun
from jobs.services import jobs_submit
from tests.conftest import log_in
from tests.test_pool_held_for_waiting_job import A800, _spec, four_cards  # noqa: F401

pytestmark = pytest.mark.browser


def test_a_job_behind_its_queues_first_says_so_and_its_page_follows_when_that_one_fits(
    page, alice, bob
):
    # Made in the live server's database: Bob's job holds 3 of the 4 cards, his queue task
    # asking 2 is first in queue default, and Alice's asking 1 waits behind it.
    [running] = jobs_submit(
        owner=bob, spec=_spec("running", 3, queue_task=True), submit_key=uuid.uuid4().hex
    )
    Job.objects.filter(pk=running.pk).update(status=JobStatus.RUNNING)
    LocalRun.objects.create(job=running, devices={A800: [0, 1, 2]}, cpus=[])
    jobs_submit(owner=bob, spec=_spec("first", 2, queue_task=True), submit_key=uuid.uuid4().hex)
    [behind] = jobs_submit(
        owner=alice, spec=_spec("behind", 1, queue_task=True), submit_key=uuid.uuid4().hex
    )
    worker_beat(worker=WorkerIdentity.here())  # a worker runs (its pass is not the test's)
    log_in(page, "alice", "alice-password")

    page.get_by_role("link", name="behind").first.click()
    page.wait_for_url(f"**/jobs/{behind.public_id}/")
    line = page.locator("#why-waiting")

    expect(line).to_contain_text("排在队列“default”中一个更早的任务之后等待")
    expect(line).to_contain_text("尽管本任务所需的资源现在是空闲的")
    page.evaluate("window.notReloaded = true")

    Job.objects.filter(pk=running.pk).update(status=JobStatus.SUCCEEDED)  # 4 idle: both fit

    expect(line).to_have_text("排队等待：本机资源池有空余资源时，本任务会按队列顺序自动启动。")
    assert page.evaluate("window.notReloaded") is True
