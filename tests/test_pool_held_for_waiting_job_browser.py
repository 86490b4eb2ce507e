"""The pools page in a browser while a standalone job waits first in line (left26): no card
shown idle and the note saying for what they are held, then, once the job can start, what it
leaves, brought by the page's poll without a reload."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from jobs.models import Job, JobStatus, LocalRun
from jobs.services import jobs_submit
from tests.conftest import log_in
from tests.test_pool_held_for_waiting_job import A800, _admitted, _spec, four_cards  # noqa: F401


@pytest.mark.browser
def test_in_a_browser_the_pools_page_shows_the_cards_held_then_follows_the_waiting_job(
    page, alice, bob
):
    # Made in the live server's database (the page fixture's): Alice's standalone job
    # waits for 3 cards while a run the admission did not see holds 3 of the 4.
    _refusals, standalone = _admitted(alice, _spec("alices-private-run", 3))
    assert standalone is not None
    [outside] = jobs_submit(
        owner=bob, spec=_spec("outside", 3, queue_task=True), submit_key=uuid.uuid4().hex
    )
    Job.objects.filter(pk=outside.pk).update(status=JobStatus.RUNNING)
    LocalRun.objects.create(job=outside, devices={A800: [0, 1, 2]}, cpus=[])
    log_in(page, "bob", "bob-password")

    page.click("#nav-pools")
    local = page.locator('section[data-pool="local"]')
    idle = local.locator(f'tr[data-card="{A800}"] .card-idle')
    note = local.locator(".pool-note")

    expect(idle).to_have_text("0")
    expect(note).to_contain_text("没有可供新任务使用的空闲加速芯片")
    expect(note).to_contain_text(f"它需要 3 张 A800 80GB ({A800})，当前只有 1 张空闲")
    page.evaluate("window.notReloaded = true")

    Job.objects.filter(pk=outside.pk).update(status=JobStatus.SUCCEEDED)  # its cards are free

    # The poll (every 5 s) brings what the waiting job leaves, and the note goes.
    expect(idle).to_have_text("1")
    expect(note).to_have_count(0)
    assert page.evaluate("window.notReloaded") is True
