"""Several people wanting the local pool's last cards at once (QA as a team, qa34).

The pool's idle figure is the cards the next scheduling pass leaves idle: a Queued job whose
turn it is will have its cards within a tick, so they are not offered to a standalone job
again; and the wizard's submit reads them again, one submit at a time, inside the transaction
that creates the job, so two people submitting for the last cards at the same instant get
one job, and the other is told why with the numbers."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs import wizard as W
from jobs.actions import ActionError, job_rerun
from jobs.models import Job, JobStatus, LocalRun
from tests.test_concurrent_limits import at_once
from tests.test_wizard import (
    A800,
    V100,
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    field_errors,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
    submission_data,
)

ALL_FOUR_V100 = [role("master", 1, card=V100, cards=2), role("worker", 1, card=V100, cards=2)]


def _client(user) -> Client:
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(user)
    return client


def _four_v100_draft(client, *, mode: str = "standalone", upto: str = W.REVIEW):
    draft = new_draft(client)
    complete_steps(
        client,
        draft,
        upto=upto,
        **{W.RESOURCES: resources_data(ALL_FOUR_V100), W.SUBMISSION: submission_data(mode=mode)},
    )
    draft.refresh_from_db()
    return draft


def _running(owner, cards: list[int]) -> Job:
    """A local job of `owner` holding V100 cards `cards`, as the runner records a dispatch."""
    spec = S.JobSpec(name="busy", resource_pool_id="local", image="a/b:1", command="x")
    spec.roles = [S.Role(name="master", replicas=1, accelerator_type=V100, accelerators=len(cards))]
    job = Job.objects.create(
        public_id=f"pytorchjob-busy{owner.pk}",
        name="busy",
        owner=owner,
        spec=spec.to_document(),
        status=JobStatus.RUNNING,
        backend="local",
        resource_pool="local",
    )
    LocalRun.objects.create(job=job, devices={V100: cards})
    return job


def test_a_standalone_job_is_refused_the_cards_a_job_queued_just_before_it_is_about_to_get(
    alice, bob
):
    alice_client, bob_client = _client(alice), _client(bob)
    bob_draft = _four_v100_draft(bob_client, upto=W.SUBMISSION)
    alice_draft = _four_v100_draft(alice_client)

    # Alice's job is Queued; the worker has not made its pass yet (or is down).
    submitted = alice_client.post(reverse("wizard-submit", args=[alice_draft.id]))
    refused = post_step(bob_client, bob_draft, W.SUBMISSION, submission_data())
    as_queue_task = post_step(bob_client, bob_draft, W.SUBMISSION, submission_data(mode="queue"))

    assert submitted.status_code == 302
    assert any(
        "needs 4 V100 32GB (baidu.com/v100_32g_cgpu) cards but the pool has 0 idle now" in m
        for m in field_errors(refused, "id_mode")
    ), field_errors(refused, "id_mode")
    assert as_queue_task.status_code == 302
    assert Job.objects.get().owner == alice


def test_the_pools_page_counts_the_cards_a_queued_job_is_about_to_get_as_taken(alice, bob):
    alice_client = _client(alice)
    alice_client.post(reverse("wizard-submit", args=[_four_v100_draft(alice_client).id]))

    page = _client(bob).get(reverse("pool-list"))

    assert page.status_code == 200
    assert W.idle_for(W.find_pool("local"), V100) == 0
    assert W.idle_for(W.find_pool("local"), "baidu.com/a800_80g_cgpu") == 8


def test_a_queued_job_too_big_for_the_idle_cards_takes_none_of_them(alice, bob):
    _running(bob, [0, 1, 2])  # 1 V100 idle
    alice_client = _client(alice)
    queued = _four_v100_draft(alice_client, mode="queue")
    alice_client.post(reverse("wizard-submit", args=[queued.id]))

    idle = W.idle_for(W.find_pool("local"), V100)

    assert Job.objects.get(owner=alice).status == JobStatus.QUEUED
    assert idle == 1  # it waits for all 4; the one idle card is not promised to it


def test_the_review_refuses_a_submit_the_cards_were_taken_from_since_it_was_shown(alice, bob):
    alice_client, bob_client = _client(alice), _client(bob)
    bob_draft = _four_v100_draft(bob_client)
    alice_draft = _four_v100_draft(alice_client)
    fits = bob_client.get(step_url(bob_draft, W.REVIEW))

    alice_client.post(reverse("wizard-submit", args=[alice_draft.id]))
    refused = bob_client.post(reverse("wizard-submit", args=[bob_draft.id]), follow=True)

    assert "Fits in the pool's idle cards now." in fits.content.decode()
    page = refused.content.decode()
    assert refused.redirect_chain[-1][0] == step_url(bob_draft, W.REVIEW)
    assert "Does not fit in the idle cards now." in page
    assert "needs 4 V100 32GB (baidu.com/v100_32g_cgpu) cards but the pool has 0 idle now" in page
    assert list(Job.objects.values_list("owner__username", flat=True)) == ["alice"]
    bob_draft.refresh_from_db()
    assert bob_draft.submitted_at is None  # nothing lost: Bob's draft is still his to change


def test_run_again_of_a_standalone_job_is_refused_when_a_queued_job_is_about_to_get_its_cards(
    alice, bob
):
    alice_client = _client(alice)
    alice_client.post(reverse("wizard-submit", args=[_four_v100_draft(alice_client).id]))
    first = Job.objects.get()
    first.status = JobStatus.SUCCEEDED
    first.save(update_fields=["status"])
    bob_client = _client(bob)
    bob_client.post(reverse("wizard-submit", args=[_four_v100_draft(bob_client).id]))

    with pytest.raises(ActionError, match="the pool has 0 idle now"):
        job_rerun(job=first, owner=alice, request_key="a" * 32)

    assert Job.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_standalone_submits_at_the_same_instant_for_the_last_cards_make_one_job(alice, bob):
    drafts = [_four_v100_draft(_client(alice)), _four_v100_draft(_client(bob))]

    def submit():
        with translation.override("en"):
            return W.draft_submit(draft=drafts.pop())

    results = at_once(submit, table="jobs_job", times=2)

    made = [r for r in results if isinstance(r, list)]
    refused = [r for r in results if isinstance(r, W.WizardError)]
    assert len(made) == 1 and len(refused) == 1, results
    assert "needs 4 V100 32GB (baidu.com/v100_32g_cgpu) cards but the pool has 0 idle now" in str(
        refused[0]
    )
    assert Job.objects.count() == 1
    loser = {"alice", "bob"} - {made[0][0].owner.username}
    assert W.Draft.objects.get(owner__username__in=loser).submitted_at is None


@pytest.mark.django_db(transaction=True)
def test_one_draft_sent_twice_at_the_same_instant_for_all_the_cards_gives_both_sends_its_job(
    alice,
):
    # A double click on 提交: the second send must find the first one's job, not be told its
    # own job took the cards.
    draft_id = _four_v100_draft(_client(alice)).id

    def submit():
        with translation.override("en"):
            return W.draft_submit(draft=W.Draft.objects.get(pk=draft_id))

    results = at_once(submit, table="jobs_job", times=2)

    assert all(isinstance(r, list) for r in results), results
    job = Job.objects.get()
    assert [r[0].pk for r in results] == [job.pk, job.pk]


def test_a_standalone_job_is_refused_when_its_queue_waits_for_a_bigger_job_before_it(alice, bob):
    _running(bob, [0, 1, 2])  # 1 V100 idle
    bob_client, alice_client = _client(bob), _client(alice)
    waits = _four_v100_draft(bob_client, mode="queue")
    bob_client.post(reverse("wizard-submit", args=[waits.id]))
    one_card = resources_data([role("master", 1, card=V100, cards=1)])
    normal, high = new_draft(alice_client), new_draft(alice_client)
    complete_steps(alice_client, normal, upto=W.SUBMISSION, **{W.RESOURCES: one_card})
    complete_steps(
        alice_client,
        high,
        upto=W.SUBMISSION,
        **{W.RESOURCES: one_card, W.BASIC: basic_data(priority="high")},
    )

    refused = post_step(alice_client, normal, W.SUBMISSION, submission_data())
    ahead = post_step(alice_client, high, W.SUBMISSION, submission_data())

    # The card is idle, but Bob's job is first in the queue and no job passes it.
    assert W.idle_for(W.find_pool("local"), V100) == 1
    assert any(
        "queue “default” waits for a job before it that needs more cards than are idle" in m
        for m in field_errors(refused, "id_mode")
    ), field_errors(refused, "id_mode")
    assert ahead.status_code == 302  # a high-priority job goes before Bob's normal one


def test_a_second_standalone_job_is_refused_the_quota_a_queued_one_is_about_to_take(alice):
    from jobs.models import CardQuota

    CardQuota.objects.create(user=alice, card_type=V100, max_cards=2)
    alice_client = _client(alice)
    two_cards = {W.RESOURCES: resources_data([role("master", 1, card=V100, cards=2)])}
    first, second = new_draft(alice_client), new_draft(alice_client)
    complete_steps(alice_client, first, **two_cards)
    complete_steps(alice_client, second, upto=W.SUBMISSION, **two_cards)
    alice_client.post(reverse("wizard-submit", args=[first.id]))  # Queued, about to start

    refused = post_step(alice_client, second, W.SUBMISSION, submission_data())
    as_queue_task = post_step(alice_client, second, W.SUBMISSION, submission_data(mode="queue"))

    # 2 V100 are still idle, but the first job takes Alice's whole quota when it starts.
    assert W.idle_for(W.find_pool("local"), V100) == 2
    assert any(
        "your quota is 2 V100 32GB (baidu.com/v100_32g_cgpu) cards" in m
        for m in field_errors(refused, "id_mode")
    ), field_errors(refused, "id_mode")
    assert as_queue_task.status_code == 302


def test_a_standalone_job_is_refused_when_the_pool_runs_its_most_jobs_though_cards_are_idle(
    alice, bob, settings
):
    settings.LOCAL_MAX_RUNNING_JOBS = 2
    _running(bob, [0])
    bob_client, alice_client = _client(bob), _client(alice)
    one_card = {W.RESOURCES: resources_data([role("master", 1, card=V100, cards=1)])}
    bobs = new_draft(bob_client)
    complete_steps(bob_client, bobs, **one_card)
    bob_client.post(reverse("wizard-submit", args=[bobs.id]))  # Queued: the second one to run
    alices = new_draft(alice_client)
    complete_steps(alice_client, alices, upto=W.SUBMISSION, **one_card)

    refused = post_step(alice_client, alices, W.SUBMISSION, submission_data())
    as_queue_task = post_step(alice_client, alices, W.SUBMISSION, submission_data(mode="queue"))

    # 2 of the 4 V100 stay idle, but no third job may run beside Bob's two.
    assert W.idle_for(W.find_pool("local"), V100) == 2
    assert any(
        "the local pool runs at most 2 jobs at once and has no room for another" in m
        for m in field_errors(refused, "id_mode")
    ), field_errors(refused, "id_mode")
    assert as_queue_task.status_code == 302
    assert list(Job.objects.filter(owner=alice)) == []


def test_run_again_of_a_standalone_job_is_refused_when_the_pool_runs_its_most_jobs(
    alice, bob, settings
):
    settings.LOCAL_MAX_RUNNING_JOBS = 1
    alice_client = _client(alice)
    one_card = {W.RESOURCES: resources_data([role("master", 1, card=V100, cards=1)])}
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **one_card)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    first = Job.objects.get()
    first.status = JobStatus.SUCCEEDED
    first.save(update_fields=["status"])
    _running(bob, [0])

    with pytest.raises(ActionError, match="runs at most 1 job at once"):
        job_rerun(job=first, owner=alice, request_key="b" * 32)

    assert Job.objects.count() == 2  # the first run and Bob's


def test_a_cpu_only_standalone_job_is_refused_behind_a_queued_job_when_no_card_is_idle(alice, bob):
    busy = _running(bob, [0, 1, 2, 3])
    LocalRun.objects.filter(job=busy).update(devices={V100: [0, 1, 2, 3], A800: list(range(8))})
    bob_client, alice_client = _client(bob), _client(alice)
    bob_client.post(reverse("wizard-submit", args=[_four_v100_draft(bob_client, mode="queue").id]))
    cpu_only = new_draft(alice_client)
    complete_steps(
        alice_client,
        cpu_only,
        upto=W.SUBMISSION,
        **{W.RESOURCES: resources_data([role("master", 1, card="")])},
    )

    refused = post_step(alice_client, cpu_only, W.SUBMISSION, submission_data())

    # It asks no card, but Bob's job is first in the queue and no job passes it.
    assert any(
        "queue “default” waits for a job before it that needs more cards than are idle" in m
        for m in field_errors(refused, "id_mode")
    ), field_errors(refused, "id_mode")
    assert list(Job.objects.filter(owner=alice)) == []


def test_a_standalone_job_is_refused_while_running_jobs_pin_every_cpu_core(alice, bob):
    from jobs.runner import machine_cpus

    busy = _running(bob, [0])
    LocalRun.objects.filter(job=busy).update(cpus=machine_cpus())  # CPU-exclusive, all cores
    alice_client = _client(alice)
    draft = new_draft(alice_client)
    one_card = {W.RESOURCES: resources_data([role("master", 1, card=V100, cards=1)])}
    complete_steps(alice_client, draft, upto=W.SUBMISSION, **one_card)

    refused = post_step(alice_client, draft, W.SUBMISSION, submission_data())

    # 3 V100 are idle, but no core is left for a job beside Bob's.
    assert W.idle_for(W.find_pool("local"), V100) == 3
    assert any(
        "the CPU cores it needs are taken by jobs that run or are about to start" in m
        for m in field_errors(refused, "id_mode")
    ), field_errors(refused, "id_mode")


def _v100_spec(cards: int) -> S.JobSpec:
    spec = S.JobSpec(name="more", resource_pool_id="local", image="a/b:1", command="x")
    spec.roles = [S.Role(name="master", replicas=1, accelerator_type=V100, accelerators=cards)]
    return spec


@pytest.mark.parametrize(
    ("language", "said"),
    [
        (
            "en",
            "your quota is 3 V100 32GB (baidu.com/v100_32g_cgpu) cards: your running jobs hold 1 and your queued "
            "jobs about to start take 1; this job asks for 2.",
        ),
        (
            "zh-hans",
            "您的配额为 3 张 V100 32GB (baidu.com/v100_32g_cgpu)：您运行中的任务占用 1 张，即将启动的排队任务"
            "将占用 1 张；本任务申请 2 张。",
        ),
    ],
)
def test_a_quota_refusal_tells_the_running_jobs_cards_from_those_of_queued_jobs_about_to_start(
    alice, language, said
):
    from jobs.models import CardQuota
    from jobs.scheduler import next_pass
    from jobs.services import jobs_submit

    CardQuota.objects.create(user=alice, card_type=V100, max_cards=3)
    _running(alice, [0])
    [queued] = jobs_submit(owner=alice, spec=_v100_spec(1), submit_key="queued")

    with translation.override(language):
        [(_path, refusal)] = W.quota_refusals(
            _v100_spec(2), alice, standalone=True, plan=next_pass()
        )

    assert queued.status == JobStatus.QUEUED
    assert said in refusal, refusal


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("en", "and you have 0 running and 1 queued about to start;"),
        ("zh-hans", "当前已有 0 个在运行、1 个排队任务即将启动；"),
    ],
)
def test_a_running_jobs_quota_refusal_counts_a_queued_job_about_to_start_as_such(
    alice, language, said
):
    from jobs.models import CardQuota
    from jobs.scheduler import next_pass
    from jobs.services import jobs_submit

    CardQuota.objects.create(user=alice, max_running_jobs=1)
    jobs_submit(owner=alice, spec=_v100_spec(1), submit_key="queued")

    with translation.override(language):
        [(_path, refusal)] = W.quota_refusals(
            _v100_spec(1), alice, standalone=True, plan=next_pass()
        )

    assert said in refusal, refusal
