"""Standalone jobs and the local pool's last cards, in a browser. Two people at the review of
a standalone job for the last cards: both are told it fits, both press 提交; one gets the
job, the other's page says why, with the numbers, and keeps the draft; 资源池 shows the cards
taken before the job starts. And a standalone job whose queue waits for a bigger job before
it is refused on 投递方式, since it would wait too."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from playwright.sync_api import expect

from jobs import wizard as W
from jobs.models import Draft, Job, JobStatus
from tests.conftest import BROWSER_TIMEOUT_MS, log_in
from tests.test_wizard import complete_steps, data_data, new_draft, resources_data, role, step_url

from .runner_helpers import CARD, runner_settings  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("runner_settings")]


def _review_of_both_cards(user) -> str:
    """A draft of `user` at its review: a standalone job asking for the pool's 2 cards."""
    client = Client()
    client.force_login(user)
    draft = new_draft(client)
    complete_steps(
        client,
        draft,
        **{
            W.RESOURCES: resources_data(
                [role("master", 1, card=CARD), role("worker", 1, card=CARD)]
            ),
            W.DATA: data_data(mounts=(("hostpath", "work", "/workspace"),)),
        },
    )
    return step_url(draft, W.REVIEW)


@pytest.mark.parametrize("width", [1280, 390])
def test_of_two_people_submitting_for_the_last_cards_one_gets_the_job_and_the_other_is_told_why(
    browser, live_server, transactional_db, alice, bob, width
):
    pages = {}
    for user, password in ((alice, "alice-password"), (bob, "bob-password")):
        context = browser.new_context(base_url=live_server.url, locale="zh-CN")
        context.set_default_timeout(BROWSER_TIMEOUT_MS)
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": 900})
        log_in(page, user.username, password)
        page.goto(_review_of_both_cards(user))
        expect(page.locator("#wizard-submit")).to_be_visible()
        expect(page.get_by_text("当前空闲卡数足够。")).to_be_visible()
        pages[user.username] = page

    pages["alice"].click("#wizard-submit")
    pages["alice"].wait_for_url(re.compile(r"/jobs/[^/]+/$"))
    pages["bob"].click("#wizard-submit")

    bob_page = pages["bob"]
    expect(bob_page.get_by_text("任务暂不能提交，请先修改下列问题。")).to_be_visible()
    expect(bob_page.locator("#review-problems")).to_contain_text(
        f"独立任务需要 2 张 A800 80GB ({CARD})，当前只有 0 张空闲"
    )
    expect(bob_page.get_by_text("当前空闲卡数不足。")).to_be_visible()
    assert re.search(r"/create/[0-9a-f-]+/review/$", bob_page.url)
    [job] = Job.objects.all()
    assert job.owner == alice and job.status == JobStatus.QUEUED
    assert Draft.objects.get(owner=bob).submitted_at is None

    # Not started yet (no worker runs here): its cards are already not idle for anyone.
    bob_page.goto("/pools/")
    expect(
        bob_page.locator(f'section[data-pool="local"] tr[data-card="{CARD}"] .card-idle')
    ).to_have_text("0")
    for page in pages.values():
        page.context.close()


def test_a_standalone_job_whose_queue_waits_for_a_bigger_job_is_refused_on_the_submission_step(
    browser, live_server, transactional_db, alice, bob
):
    from jobs import spec as S
    from jobs.models import LocalRun
    from jobs.services import jobs_submit

    holder = S.JobSpec(name="holds-one", resource_pool_id="local", image="a/b:1", command="x")
    holder.roles = [S.Role(name="master", replicas=1, accelerator_type=CARD, accelerators=1)]
    [running] = jobs_submit(owner=alice, spec=holder, submit_key="holds-one")
    Job.objects.filter(pk=running.pk).update(status=JobStatus.RUNNING)
    LocalRun.objects.create(job=running, devices={CARD: [0]})  # 1 of the 2 cards idle
    both = S.JobSpec(name="wants-both", resource_pool_id="local", image="a/b:1", command="x")
    both.roles = [S.Role(name="master", replicas=1, accelerator_type=CARD, accelerators=2)]
    both.submission.mode = S.SUBMIT_QUEUE
    jobs_submit(owner=alice, spec=both, submit_key="wants-both")  # first in the queue, waits

    client = Client()
    client.force_login(bob)
    draft = new_draft(client)
    complete_steps(
        client,
        draft,
        upto=W.SUBMISSION,
        **{
            W.RESOURCES: resources_data([role("master", 1, card=CARD)]),
            W.DATA: data_data(mounts=(("hostpath", "work", "/workspace"),)),
        },
    )
    context = browser.new_context(base_url=live_server.url, locale="zh-CN")
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 900})
    log_in(page, "bob", "bob-password")
    page.goto(step_url(draft, W.SUBMISSION))

    page.click("#wizard-next")

    expect(page.locator("body")).to_contain_text(
        "独立任务须立即启动，但队列“default”中排在它前面的任务所需卡数超过当前空闲卡数"
    )
    assert re.search(r"/submission/", page.url)
    assert not Job.objects.filter(owner=bob).exists()
    context.close()
