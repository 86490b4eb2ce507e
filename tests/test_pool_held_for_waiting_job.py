"""The local pool's idle figure while a standalone job waits first in line (left26).

A Queued standalone job the scheduler cannot start (its cards taken by a run the console did
not admit, a worker restarted with fewer cards) waits first, and no job behind it starts. The
cards it leaves are then no new job's: the pools page and the wizard's live count show none
idle, and say the cards are held for a waiting standalone job, with its need, as admission
refuses a new standalone job meanwhile."""

from __future__ import annotations

import re
import uuid

import pytest
from django.db import transaction
from django.urls import reverse

from jobs import spec as S
from jobs.models import Job, JobStatus, LocalRun
from jobs.services import jobs_submit
from jobs.wizard import standalone_claim_refusals
from tests.test_wizard import new_draft

A800 = "baidu.com/a800_80g_cgpu"
POOLS = reverse("pool-list")
HTMX = {"HX-Request": "true"}
HELD_EN = "No card is idle for a new job: a standalone job submitted earlier waits first in line"
NEED_EN = f"it needs 3 {S.card_shown(A800)} cards and 1 are idle now"


@pytest.fixture(autouse=True)
def four_cards(settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=4"
    settings.LOCAL_QUEUES = ["default"]
    settings.LANGUAGE_CODE = "en"


def _spec(name: str, cards: int, *, queue_task: bool = False) -> S.JobSpec:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="a/b:1",
        command="true",
        roles=[S.Role("master", 1, accelerator_type=A800, accelerators=cards, cpu=1)],
    )
    if queue_task:
        spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=1, concurrency=1)
    return spec


def _admitted(owner, spec: S.JobSpec) -> tuple[list[str], Job | None]:
    """A standalone job submitted as the wizard submits one (its admission under the lock)."""
    key = uuid.uuid4().hex
    with transaction.atomic():
        refusals = standalone_claim_refusals(spec=spec, owner=owner, submit_key=key)
        if refusals:
            return refusals, None
        return [], jobs_submit(owner=owner, spec=spec, submit_key=key)[0]


@pytest.fixture
def waiting(alice, bob) -> tuple[Job, Job]:
    """Alice's standalone job for 3 of the 4 cards, admitted; then 3 cards taken by a run the
    admission did not see: 1 card is left, which the waiting job does not fit in."""
    _refusals, standalone = _admitted(alice, _spec("alices-private-run", 3))
    assert standalone is not None
    [outside] = jobs_submit(
        owner=bob, spec=_spec("outside", 3, queue_task=True), submit_key=uuid.uuid4().hex
    )
    Job.objects.filter(pk=outside.pk).update(status=JobStatus.RUNNING)
    LocalRun.objects.create(job=outside, devices={A800: [0, 1, 2]}, cpus=[])
    return standalone, outside


def _idle_cell(html: str) -> str:
    cell = re.search(
        rf'<tr data-card="{re.escape(A800)}">.*?<td class="card-idle">(\d+)</td>', html, re.S
    )
    assert cell, html
    return cell.group(1)


def test_the_pools_page_shows_no_idle_card_and_says_they_are_held_for_the_waiting_job_until_it_can_start(
    waiting, bob, client
):
    client.force_login(bob)

    page = client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en")
    poll = client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en", headers=HTMX)

    assert page.status_code == poll.status_code == 200
    for html in (page.content.decode(), poll.content.decode()):
        assert _idle_cell(html) == "0"
        assert "0 idle of 4" in html
        note = re.search(r'<p class="small text-muted pool-note">(.*?)</p>', html, re.S)
        assert note, html
        assert HELD_EN in note.group(1) and NEED_EN in note.group(1)
        assert "alices-private-run" not in html  # Bob sees others' jobs as numbers only

    # Once the waiting job can start, the figure is what it leaves, without the note.
    _standalone, outside = waiting
    Job.objects.filter(pk=outside.pk).update(status=JobStatus.SUCCEEDED)  # its cards are free
    html = client.get(POOLS, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert _idle_cell(html) == "1"  # the 4 less the 3 the waiting job is about to get
    assert "pool-note" not in html


def test_the_note_is_said_in_chinese_to_a_chinese_reader(waiting, bob, client):
    client.force_login(bob)

    html = client.get(POOLS, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    note = re.search(r'<p class="small text-muted pool-note">(.*?)</p>', html, re.S)
    assert note, html
    assert "没有可供新任务使用的空闲加速芯片" in note.group(1)
    assert "等待加速芯片" in note.group(1)  # the waiting job's own reason, in Chinese too
    assert f"它需要 3 张 {S.card_shown(A800)}，当前只有 1 张空闲" in note.group(1)


def test_the_wizards_live_idle_count_and_stock_line_agree_with_the_pools_page(waiting, bob, client):
    client.force_login(bob)
    draft = new_draft(client)
    query = {
        "row": "0",
        "roles-0-use_accelerator": "on",
        "roles-0-accelerator_type": A800,
        "roles-0-accelerators": "1",
        "roles-0-replicas": "1",
    }

    poll = client.get(
        reverse("wizard-idle", args=[draft.id]), query, HTTP_ACCEPT_LANGUAGE="en", headers=HTMX
    )

    assert poll.status_code == 200
    count, stock = poll.content.decode().split('id="pool-stock"')
    assert "0 cards idle" in count and "(this role asks for 1)" in count
    assert "0 idle of 4" in stock and HELD_EN in stock and NEED_EN in stock


def test_a_new_standalone_job_is_told_the_earlier_one_waits_not_only_that_no_card_is_idle(
    waiting, bob
):
    refusals, job = _admitted(bob, _spec("two-cards", 2))

    assert job is None
    assert refusals == [
        "A standalone job must start now, but a standalone job submitted before it is waiting "
        "for cards or room the pool does not have now, and it starts first; submit this one as "
        "a queue task, which waits its turn."
    ]
