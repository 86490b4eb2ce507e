"""Card types named as people name them, the resource name in brackets (jobs.spec.card_shown),
wherever a person reads one (qa113: only the AIAK preview did; everywhere else it was the
resource name alone, "baidu.com/a800_80g_cgpu"). Values a form sends stay the resource name."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs import wizard as W
from jobs.backends.local import LocalBackend
from jobs.health import WorkerIdentity, worker_beat
from jobs.models import CardQuota, Job
from jobs.quotas import Excess, never_allowed_note
from jobs.runner import card_nodes_refusal
from jobs.scheduler import card_nodes_message, dispatch_local
from jobs.services import jobs_submit
from jobs.texts import display_text, source_of
from tests.test_quotas import running_job
from tests.test_spec import pytorch_spec
from tests.test_wizard import (
    A800,
    A800_SHOWN,
    _local_pool,  # noqa: F401 (autouse fixture)
    complete_steps,
    field_errors,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
    submission_data,
)


def test_the_review_names_the_cards_of_the_roles_and_their_fit(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    fit = review.split('id="review-fit"')[1].split("</div>")[0]
    assert f"{A800_SHOWN}：需要 3 张，空闲 8 张" in fit
    assert f"master × 1、1 × {A800_SHOWN}" in review


def test_more_cards_than_the_local_pool_has_are_refused_naming_the_card(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    table = resources_data(roles=[role("master", 1, A800, 4), role("worker", 2, A800, 4)])

    r = post_step(alice_client, draft, W.RESOURCES, table)

    assert field_errors(r, "id_roles-0-accelerators") == [
        f"任务需要 12 张 {A800_SHOWN} 加速芯片，本机资源池只有 8 张。"
    ]


@pytest.mark.django_db
def test_the_local_backends_refusal_names_the_card_as_a_run_again_is_refused():
    # 再次运行 checks the spec with the local backend: the same words.
    spec = pytorch_spec(roles=[S.Role("master", 1, A800, 8), S.Role("worker", 1, A800, 4)])

    with translation.override("en"):
        errors = LocalBackend().check_spec(spec)

    assert errors["roles[0].accelerators"] == [
        f"The job needs 12 {A800_SHOWN} cards; the local pool has 8."
    ]


def test_the_pools_page_names_each_card_and_keeps_the_resource_name_for_scripts(alice_client):
    page = alice_client.get(reverse("pool-list")).content.decode()

    assert f'<tr data-card="{A800}">' in page
    assert re.search(rf'<th scope="row" class="fw-normal">{re.escape(A800_SHOWN)}</th>', page)


# -- the waiting texts (fix154: they named the resource name alone) ---------------------------


def _queue_task(owner, cards: int) -> Job:
    spec = pytorch_spec(roles=[S.Role("master", 1, A800, cards)])
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE)
    return jobs_submit(owner=owner, spec=spec, submit_key=uuid.uuid4().hex)[0]


def test_a_job_held_for_its_owners_quota_names_the_card_on_its_page_and_in_its_event(
    alice, alice_client
):
    CardQuota.objects.create(user=alice, card_type=A800, max_cards=1)
    running_job(alice, {A800: [0]})
    job = _queue_task(alice, 1)

    dispatch_local()
    worker_beat(worker=WorkerIdentity.here())  # a worker runs: the page says the quota
    chinese = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert f"等待配额：您的配额为 1 张 {A800_SHOWN}；您运行中的任务已占用 1 张" in chinese
    assert f"Waiting for your quota: your quota is 1 {A800_SHOWN} card; your running" in english
    event = job.events.get(reason="QuotaExceeded")
    assert f"您的配额为 1 张 {A800_SHOWN}；" in event.message  # stored in the console's language
    with translation.override("en"):
        assert f"your quota is 1 {A800_SHOWN} card;" in event.message_shown


def test_the_review_step_says_a_queue_task_waits_for_the_quota_counting_its_cards_in_zhang(
    alice, alice_client
):
    CardQuota.objects.create(user=alice, card_type=A800, max_cards=4)
    draft = new_draft(alice_client)
    complete_steps(
        alice_client,
        draft,
        upto=W.SUBMISSION,
        **{W.RESOURCES: resources_data(roles=[role("master", 1, A800, 2)])},
    )
    post_step(alice_client, draft, W.SUBMISSION, submission_data(mode="queue"))
    running_job(alice, {A800: [0, 1, 2]})

    chinese = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    assert (
        f"在本机资源池，您的配额为 4 张 {A800_SHOWN}，您运行中的任务已占用 3 张：本任务申请 2 张，"
        "将在队列中等待，直到它们结束。"
    ) in chinese
    assert (
        f"On the local pool your quota is 4 {A800_SHOWN} cards and your running jobs hold 3: "
        "this job, asking for 2, will wait in its queue until they end."
    ) in english


def test_a_reviewer_is_told_in_either_language_of_a_quota_that_never_allows_the_named_cards(
    alice,
):
    excess = Excess(A800, allowed=2, held=0, asked=4, jobs=False)

    with translation.override("zh-hans"):
        chinese = never_allowed_note(excess)
    with translation.override("en"):
        english = never_allowed_note(excess)

    assert chinese.startswith(f"所有者的配额最多允许 2 张 {A800_SHOWN}，而此任务需要 4 张：")
    assert english.startswith(f"Its owner's quota allows 2 {A800_SHOWN} cards and this job asks")


def test_a_job_waiting_for_device_nodes_names_its_cards_in_either_language():
    waiting = card_nodes_message(("nvidia.com/gpu", 3, 2, ["/dev/nvidia0"]))

    with translation.override("zh-hans"):
        chinese = display_text(waiting, source_of(waiting))
    with translation.override("en"):
        english = display_text(waiting, source_of(waiting))

    assert chinese.startswith("等待卡的设备节点：它需要 3 张 NVIDIA GPU (nvidia.com/gpu) 卡，")
    assert english.startswith(
        "Waiting for the device nodes of its cards: it needs 3 NVIDIA GPU (nvidia.com/gpu) cards,"
    )


def test_the_pools_page_names_the_card_of_the_viewers_quota(alice, alice_client):
    CardQuota.objects.create(user=alice, card_type=A800, max_cards=4)

    page = alice_client.get(reverse("pool-list")).content.decode()

    # The quota's row keeps the resource name for scripts; its heading is the card shown.
    assert re.search(
        rf'<tr data-quota-card="{re.escape(A800)}">\s*'
        rf'<th scope="row" class="fw-normal">{re.escape(A800_SHOWN)}</th>',
        page,
    )


def test_a_start_on_cards_without_their_device_node_names_the_card_in_either_language(
    settings, tmp_path
):
    settings.LOCAL_DEVICE_DIR = str(tmp_path)  # no node in it
    refusal = card_nodes_refusal({"nvidia.com/gpu": [0]})

    with translation.override("zh-hans"):
        chinese = display_text(refusal, source_of(refusal))
    with translation.override("en"):
        english = display_text(refusal, source_of(refusal))

    assert chinese.startswith(
        f"本机没有 NVIDIA GPU (nvidia.com/gpu) 卡的设备节点 {tmp_path}/nvidia0（"
    )
    assert english.startswith(
        f"this machine has no device node {tmp_path}/nvidia0 for its NVIDIA GPU (nvidia.com/gpu) "
        "cards ("
    )
