"""A queue held by its first job, which does not fit, in a browser (qa91): the pools page
says so under the queue, beside the idle cards its jobs cannot use, its owner follows the link
to the job, and the note goes with the next poll once the job fits."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from jobs import spec as S
from jobs.models import Job, JobStatus, LocalRun
from jobs.services import jobs_submit

pytestmark = pytest.mark.browser

V100 = "baidu.com/v100_32g_cgpu"


def _job(owner, cards: int, name: str) -> Job:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="a/b:1",
        command="true",
        roles=[S.Role("master", 1, accelerator_type=V100, accelerators=cards, cpu=1)],
        submission=S.Submission(mode=S.SUBMIT_QUEUE, total=1, concurrency=1),
    )
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)[0]


def test_the_owner_of_the_job_holding_a_queue_reads_it_under_the_queue_and_opens_it(
    logged_in_page, alice, settings
):
    settings.LOCAL_ACCELERATORS = f"{V100}=4"
    settings.LOCAL_QUEUES = ["default"]
    busy = _job(alice, 2, "busy")
    Job.objects.filter(pk=busy.pk).update(status=JobStatus.RUNNING)
    LocalRun.objects.create(job=busy, devices={V100: [0, 1]}, cpus=[])
    held = _job(alice, 3, "big-run")
    page = logged_in_page

    page.click("#nav-pools")
    page.wait_for_url(re.compile(r"/pools/$"))
    local = page.locator('section[data-pool="local"]')
    expect(local.locator(f'tr[data-card="{V100}"] .card-idle')).to_have_text("2")
    note = local.locator('tr[data-held-queue="default"] .queue-held')
    expect(note).to_contain_text(
        f"队列“default”被您的任务 big-run 占住，它在等待 3 张 {S.card_shown(V100)}"
    )
    expect(note).to_contain_text("此队列中这些优先级的独立任务也会被拒绝。")

    note.get_by_role("link", name="big-run").click()
    page.wait_for_url(f"**/jobs/{held.public_id}/")
    page.go_back()
    page.wait_for_url(re.compile(r"/pools/$"))
    expect(note).to_be_visible()

    # The running job ends: the 3 cards are there for it, and the next poll drops the note.
    Job.objects.filter(pk=busy.pk).update(status=JobStatus.SUCCEEDED)
    expect(local.locator(".queue-held")).to_have_count(0, timeout=15_000)
    expect(local.locator(f'tr[data-card="{V100}"] .card-idle')).to_have_text("1")
