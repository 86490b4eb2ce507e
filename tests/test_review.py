from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.utils import translation

from jobs import spec as S
from jobs.actions import ActionError, job_stop
from jobs.backends import get_backend
from jobs.models import (
    CardQuota,
    Job,
    JobStatus,
    LocalRun,
    ReviewMode,
    ReviewPolicy,
    ReviewState,
)
from jobs.review import (
    current_policy,
    job_approve,
    job_reject,
    job_resubmit,
    review_reason,
)
from jobs.services import jobs_submit
from tests.conftest import run_queued_tasks
from tests.test_aihc_backend import fake as fake_aihc  # noqa: F401 (the strict fake AIHC)
from tests.test_aihc_backend import given_up_and_held_for_review
from tests.test_concurrent_limits import at_once

A800 = "baidu.com/a800_80g_cgpu"


@pytest.fixture(autouse=True)
def _local_cards(settings):
    """The local pool has room for every standalone job these tests approve at once: an
    approval reads the idle cards (a standalone job that cannot start now is not queued)."""
    settings.LOCAL_ACCELERATORS = f"{A800}=64"


def make_spec(cards_per_instance: int = 2, queue: str = "default", **changes) -> S.JobSpec:
    spec = S.JobSpec(
        name="demo",
        resource_pool_id="local",
        queue=queue,
        image="python:3.12",
        command="echo hi",
        roles=[
            S.Role("master", 1, A800, cards_per_instance),
            S.Role("worker", 1, A800, cards_per_instance),
        ],
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


def save_policy(mode: str, *, above_cards: int = 8, queues: str = "") -> None:
    ReviewPolicy.objects.update_or_create(
        pk=1, defaults={"mode": mode, "above_cards": above_cards, "queues": queues}
    )


def submit(owner, spec=None, key="k") -> Job:
    [job] = jobs_submit(owner=owner, spec=spec or make_spec(), submit_key=key)
    return job


# -- policy ----------------------------------------------------------------------------


def test_without_a_saved_policy_the_settings_decide(settings, db):
    settings.REVIEW_POLICY = "above_cards"
    settings.REVIEW_ABOVE_CARDS = 3

    assert current_policy().mode == ReviewMode.ABOVE_CARDS
    assert review_reason(spec=make_spec(cards_per_instance=2)) != ""
    assert review_reason(spec=make_spec(cards_per_instance=1)) == ""


def test_a_policy_saved_by_a_superuser_wins_over_the_settings(settings, db):
    settings.REVIEW_POLICY = "all"
    save_policy(ReviewMode.NONE)

    assert review_reason(spec=make_spec()) == ""


def test_review_policy_per_queue_matches_a_queue_name_or_pool_and_queue(db):
    save_policy(ReviewMode.QUEUES, queues="big\nlocal/urgent")

    assert review_reason(spec=make_spec(queue="big"))
    assert review_reason(spec=make_spec(queue="urgent"))
    assert not review_reason(spec=make_spec(queue="urgent", resource_pool_id="other"))
    assert not review_reason(spec=make_spec(queue="default"))


def test_jobs_above_the_card_threshold_wait_for_review_and_others_queue(alice):
    save_policy(ReviewMode.ABOVE_CARDS, above_cards=4)

    small = submit(alice, make_spec(cards_per_instance=2), key="small")  # 4 cards
    large = submit(alice, make_spec(cards_per_instance=4), key="large")  # 8 cards

    assert small.status == JobStatus.QUEUED
    assert small.review_state == ReviewState.NOT_REQUIRED
    assert large.status == JobStatus.PENDING_REVIEW
    assert large.review_state == ReviewState.PENDING
    assert "任务申请 8 卡，超过 4 卡" in large.status_reason
    assert [e.reason for e in large.events.all()] == ["Created", "ReviewRequired"]


def test_every_task_of_a_queue_group_waits_for_review(alice):
    save_policy(ReviewMode.ALL)
    spec = make_spec(submission=S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=1))

    jobs = jobs_submit(owner=alice, spec=spec, submit_key="group")

    assert [j.status for j in jobs] == [JobStatus.PENDING_REVIEW] * 3


def test_an_explicit_initial_status_overrides_the_policy(alice):
    save_policy(ReviewMode.ALL)

    [job] = jobs_submit(
        owner=alice, spec=make_spec(), submit_key="x", initial_status=JobStatus.QUEUED
    )

    assert job.status == JobStatus.QUEUED


def test_the_submitter_approving_their_own_job_is_refused_by_the_review_rule_itself(reviewer):
    save_policy(ReviewMode.ALL)
    job = submit(reviewer)

    with translation.override("zh-hans"), pytest.raises(ActionError, match="此任务由您提交"):
        job_approve(job=job, reviewer=reviewer)

    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.PENDING_REVIEW, ReviewState.PENDING)
    assert [e.reason for e in job.events.all()] == ["Created", "ReviewRequired"]


def test_a_self_approval_the_setting_allows_is_recorded_as_one(reviewer, settings):
    settings.REVIEW_POLICY = "all"
    settings.REVIEW_ALLOW_SELF_APPROVAL = True
    job = submit(reviewer)

    assert job_approve(job=job, reviewer=reviewer)

    event = job.events.get(reason="Approved")
    assert event.actor == reviewer
    with translation.override("en"):
        assert event.message_shown == (
            "Approved by carol, who submitted it (the review policy allows it)."
        )
    with translation.override("zh-hans"):
        assert event.message_shown == "已由 carol 审核通过（任务由其本人提交，审核策略允许）。"
    assert job.reviewed_by == reviewer


def test_the_reviewers_group_carries_the_review_permission(reviewer):
    group = Group.objects.get(name="Reviewers")

    assert set(group.permissions.values_list("codename", flat=True)) == {
        "view_job",
        "view_jobevent",
        "review_job",
    }
    assert reviewer.has_perm("jobs.review_job")


# -- actions ---------------------------------------------------------------------------


def test_approving_queues_the_job_records_who_and_mails_the_owner(alice, reviewer, mailoutbox):
    save_policy(ReviewMode.ALL)
    job = submit(alice)

    assert job_approve(job=job, reviewer=reviewer) is True
    mailed_at_once = list(mailoutbox)
    run_queued_tasks()  # what the worker does

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert (job.review_state, job.reviewed_by) == (ReviewState.APPROVED, reviewer)
    event = job.events.last()
    assert (event.reason, event.actor) == ("Approved", reviewer)
    # Sent by the worker, not during the reviewer's request: a slow mail server never
    # holds up the review page.
    assert mailed_at_once == []
    assert [m.to for m in mailoutbox] == [["alice@example.com"]]
    assert job.public_id in mailoutbox[0].body


@pytest.mark.parametrize(
    ("console_language", "reviewer_language", "expected"),
    [("zh-hans", "en", "已由 rita 审核通过。"), ("en", "zh-hans", "Approved by rita.")],
)
def test_what_a_review_records_is_in_the_consoles_language_not_the_reviewers(
    alice, reviewer, settings, mailoutbox, console_language, reviewer_language, expected
):
    from django.utils import translation

    settings.LANGUAGE_CODE = console_language
    reviewer.username = "rita"
    reviewer.save()
    save_policy(ReviewMode.ALL)
    job = submit(alice)

    with translation.override(reviewer_language):  # as the reviewer's request would be
        job_approve(job=job, reviewer=reviewer)
    run_queued_tasks()

    job.refresh_from_db()
    assert job.status_reason == expected
    assert job.events.last().message == expected
    assert mailoutbox[0].subject == (
        "任务 demo 已通过审核" if console_language == "zh-hans" else "Job demo approved"
    )


def test_rejecting_keeps_the_reason_for_the_owner(alice, reviewer, mailoutbox):
    save_policy(ReviewMode.ALL)
    job = submit(alice)

    assert job_reject(job=job, reviewer=reviewer, reason="Use at most 8 cards.") is True
    run_queued_tasks()

    job.refresh_from_db()
    assert job.status == JobStatus.REJECTED
    assert job.status_reason == "Use at most 8 cards."
    assert job.review_state == ReviewState.REJECTED
    event = job.events.last()
    assert event.actor == reviewer
    # The event names the reviewer, as an approval's does (qa98), in either language.
    with translation.override("en"):
        assert event.message_shown == f"Rejected by {reviewer.username}: Use at most 8 cards."
    with translation.override("zh-hans"):
        assert event.message_shown == f"已由 {reviewer.username} 驳回：Use at most 8 cards."
    assert "Use at most 8 cards." in mailoutbox[0].body


def test_an_owner_without_an_email_address_gets_no_mail(alice, reviewer, mailoutbox):
    alice.email = ""
    alice.save()
    save_policy(ReviewMode.ALL)
    job = submit(alice)

    job_reject(job=job, reviewer=reviewer, reason="no")
    run_queued_tasks()

    assert mailoutbox == []


def test_rejecting_without_a_reason_is_refused(alice, reviewer):
    save_policy(ReviewMode.ALL)
    job = submit(alice)

    with pytest.raises(ValueError):
        job_reject(job=job, reviewer=reviewer, reason="  ")
    job.refresh_from_db()
    assert job.status == JobStatus.PENDING_REVIEW


def test_approving_a_job_that_is_not_pending_review_does_nothing(alice, reviewer):
    job = submit(alice)

    assert job_approve(job=job, reviewer=reviewer) is False
    assert job.events.count() == 1


def test_stopping_a_queued_job_stops_it_and_records_who(alice, reviewer):
    job = submit(alice)

    assert job_stop(job=job, actor=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.events.last().actor == reviewer


def test_a_job_its_owner_stops_while_it_waits_for_review_leaves_the_reviewers_pending_list(
    alice, reviewer, admin_client
):
    save_policy(ReviewMode.ALL)
    job = submit(alice)

    assert job_stop(job=job, actor=alice) is True

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert job.review_state == ReviewState.WITHDRAWN
    pending = admin_client.get("/admin/jobs/job/?review_state__exact=pending")
    assert job.public_id not in pending.content.decode()


def test_a_job_held_for_review_after_its_looks_were_given_up_leaves_the_list_as_it_stops(
    alice,
    admin_client,
    settings,
    fake_aihc,  # noqa: F811 (a fixture)
):
    """left51: its Stop makes it Stopping, to look for what the given-up submission made on
    AIHC (until then: Stopped at once, that job left running); withdrawn all the same, so no
    reviewer is asked to approve a job being stopped."""
    job = given_up_and_held_for_review(fake_aihc, get_backend("aihc"), alice, settings, made=True)

    assert job_stop(job=job, actor=alice) is True

    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.STOPPING, ReviewState.WITHDRAWN)
    pending = admin_client.get("/admin/jobs/job/?review_state__exact=pending")
    assert job.public_id not in pending.content.decode()
    page = admin_client.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()
    assert f"/admin/jobs/job/{job.pk}/review/approve/" not in page


def test_approving_a_job_stopped_out_of_review_to_be_looked_for_is_skipped_and_it_stays_stopping(
    alice,
    reviewer,
    admin_client,
    settings,
    fake_aihc,  # noqa: F811 (a fixture)
):
    """The approval a reviewer sends from a page loaded before the owner's Stop: skipped,
    said so, no error page; the job is not queued to be sent again."""
    job = given_up_and_held_for_review(fake_aihc, get_backend("aihc"), alice, settings, made=True)
    job_stop(job=job, actor=alice)

    done = admin_client.post(
        "/admin/jobs/job/",
        {"action": "approve_jobs", "_selected_action": [job.pk], "post": "yes", "_single": "1"},
        follow=True,
    )

    assert done.status_code == 200
    said = [str(m) for m in done.context["messages"]]
    assert any("跳过" in m for m in said), said
    assert job_approve(job=job, reviewer=reviewer) is False
    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.STOPPING, ReviewState.WITHDRAWN)
    assert not job.events.filter(reason="Approved").exists()


def test_a_finished_job_cannot_be_stopped(alice, reviewer):
    job = submit(alice)
    job_stop(job=job, actor=reviewer)

    assert job_stop(job=job, actor=reviewer) is False


def test_resubmitting_a_rejected_job_goes_back_to_review_while_the_policy_asks(alice, reviewer):
    save_policy(ReviewMode.ALL)
    job = submit(alice)
    job_reject(job=job, reviewer=reviewer, reason="fix the image")

    assert job_resubmit(job=job, actor=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.PENDING_REVIEW
    assert job.review_state == ReviewState.PENDING


def test_resubmitting_when_review_is_no_longer_required_queues_the_job(alice, reviewer):
    save_policy(ReviewMode.ALL)
    job = submit(alice)
    job_reject(job=job, reviewer=reviewer, reason="busy week")
    save_policy(ReviewMode.NONE)

    assert job_resubmit(job=job, actor=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert job.events.last().reason == "Resubmitted"


def test_a_rejected_job_resubmitted_without_review_no_longer_names_the_rejecter_as_reviewer(
    alice, reviewer
):
    save_policy(ReviewMode.ALL)
    job = submit(alice)
    job_reject(job=job, reviewer=reviewer, reason="busy week")
    save_policy(ReviewMode.NONE)

    job_resubmit(job=job, actor=reviewer)

    job.refresh_from_db()
    # Review "not required", reviewed by the one who rejected it, read as if they passed it.
    assert job.review_state == ReviewState.NOT_REQUIRED
    assert job.reviewed_by is None and job.reviewed_at is None
    rejected = job.events.get(reason="Rejected")
    assert rejected.actor == reviewer  # who rejected it stays in its history


def test_the_owner_sees_the_review_state_and_reason_on_the_list_and_job_page(
    alice, alice_client, reviewer
):
    save_policy(ReviewMode.ALL)
    held = submit(alice, key="held")
    rejected = submit(alice, key="rejected")
    job_reject(job=rejected, reviewer=reviewer, reason="Too many cards for this week.")

    listing = alice_client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    page = alice_client.get(f"/jobs/{held.public_id}/", HTTP_ACCEPT_LANGUAGE="en")

    assert "Pending review" in listing and "Rejected" in listing
    assert "Too many cards for this week." in listing
    # Recorded once, in the console's language (what mails carry); shown in the reader's.
    held.refresh_from_db()
    assert held.status_reason == "等待审核：所有任务运行前都需审核。"
    assert "Waiting for review: every job is reviewed before it runs." in page.content.decode()


def test_a_resubmitted_job_says_who_resubmitted_it_and_why_it_waits_in_the_readers_language(
    alice, reviewer
):
    from django.utils import translation

    save_policy(ReviewMode.ALL)
    job = submit(alice)
    job_reject(job=job, reviewer=reviewer, reason="Fewer cards, please.")

    assert job_resubmit(job=job, actor=alice) is True

    job.refresh_from_db()
    assert job.status == JobStatus.PENDING_REVIEW
    event = job.events.last()
    assert event.message.startswith("已由 alice 重新提交。")  # stored in the console's language
    with translation.override("en"):
        assert (
            event.message_shown
            == job.status_reason_shown
            == ("Resubmitted by alice. Waiting for review: every job is reviewed before it runs.")
        )


# -- a held standalone job approved after its cards were taken (qa34's leftover) --------


def _holding(owner, cards: list[int]) -> Job:
    """A running local job of `owner` holding A800 cards `cards`, as the runner records a
    dispatch."""
    spec = make_spec(cards_per_instance=len(cards), name="busy")
    spec.roles = spec.roles[:1]
    [job] = jobs_submit(
        owner=owner, spec=spec, submit_key=f"busy-{owner.pk}", initial_status=JobStatus.RUNNING
    )
    LocalRun.objects.create(job=job, devices={A800: cards})
    return job


@pytest.fixture
def eight_a800(settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"


def test_approving_a_held_standalone_job_whose_cards_were_taken_meanwhile_is_refused_with_the_numbers(
    alice, bob, reviewer, eight_a800
):
    save_policy(ReviewMode.ALL)
    job = submit(alice, make_spec(cards_per_instance=4))  # all 8 cards, idle when submitted
    _holding(bob, [0, 1])  # taken while it waited for review

    with translation.override("en"), pytest.raises(ActionError) as refused:
        job_approve(job=job, reviewer=reviewer)

    assert str(refused.value).startswith("Not approved: a standalone job must start at once")
    assert "needs 8 A800 80GB (baidu.com/a800_80g_cgpu) cards but the pool has 6 idle now" in str(
        refused.value
    )
    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.PENDING_REVIEW, ReviewState.PENDING)
    assert [e.reason for e in job.events.all()] == ["Created", "ReviewRequired"]


def test_the_refused_approval_says_why_in_chinese_too(alice, bob, reviewer, eight_a800):
    save_policy(ReviewMode.ALL)
    job = submit(alice, make_spec(cards_per_instance=4))
    _holding(bob, [0, 1])

    with translation.override("zh-hans"), pytest.raises(ActionError) as refused:
        job_approve(job=job, reviewer=reviewer)

    assert str(refused.value).startswith("未通过：独立任务须立即启动")
    assert "当前只有 6 张空闲" in str(refused.value)


def test_of_two_held_standalone_jobs_for_the_same_cards_only_the_first_approval_queues_its_job(
    alice, bob, reviewer, eight_a800
):
    save_policy(ReviewMode.ALL)
    first = submit(alice, make_spec(cards_per_instance=4), key="first")
    second = submit(bob, make_spec(cards_per_instance=2), key="second")

    assert job_approve(job=first, reviewer=reviewer) is True
    # The first is Queued and the scheduler's next pass gives it all 8 cards.
    with translation.override("en"), pytest.raises(ActionError, match="has 0 idle now"):
        job_approve(job=second, reviewer=reviewer)

    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (JobStatus.QUEUED, JobStatus.PENDING_REVIEW)


@pytest.mark.django_db(transaction=True)
def test_two_approvals_at_the_same_instant_for_the_last_cards_queue_one_job(
    alice, bob, reviewer, eight_a800
):
    save_policy(ReviewMode.ALL)
    held = [
        submit(alice, make_spec(cards_per_instance=4), key="a"),
        submit(bob, make_spec(cards_per_instance=4), key="b"),
    ]
    turn = iter(held)

    def approve():
        with translation.override("en"):
            return job_approve(job=Job.objects.get(pk=next(turn).pk), reviewer=reviewer)

    results = at_once(approve, table="jobs_job", times=2)

    assert sorted(type(r).__name__ for r in results) == ["ActionError", "bool"], results
    assert "has 0 idle now" in str(next(r for r in results if isinstance(r, ActionError)))
    statuses = sorted(Job.objects.values_list("status", flat=True))
    assert statuses == sorted([JobStatus.QUEUED, JobStatus.PENDING_REVIEW])


def test_a_held_queue_task_whose_cards_are_taken_is_approved_and_waits_its_turn(
    alice, bob, reviewer, eight_a800
):
    save_policy(ReviewMode.ALL)
    job = submit(
        alice, make_spec(cards_per_instance=4, submission=S.Submission(mode=S.SUBMIT_QUEUE))
    )
    _holding(bob, [0, 1])

    assert job_approve(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


def test_approving_a_held_standalone_job_its_owners_quota_has_no_room_for_now_is_refused(
    alice, reviewer, eight_a800
):
    CardQuota.objects.create(user=alice, max_cards=4)
    save_policy(ReviewMode.ALL)
    job = submit(alice, make_spec(cards_per_instance=2), key="held")  # 4 cards
    _holding(alice, [0, 1])

    with translation.override("en"), pytest.raises(ActionError, match="your quota is 4"):
        job_approve(job=job, reviewer=reviewer)

    job.refresh_from_db()
    assert job.status == JobStatus.PENDING_REVIEW


def test_resubmitting_a_rejected_standalone_job_whose_cards_are_taken_is_refused(
    alice, bob, reviewer, eight_a800
):
    save_policy(ReviewMode.ALL)
    job = submit(alice, make_spec(cards_per_instance=4))
    job_reject(job=job, reviewer=reviewer, reason="later")
    save_policy(ReviewMode.NONE)  # no longer asks: a resubmit queues it at once
    _holding(bob, [0, 1])

    with translation.override("en"), pytest.raises(ActionError) as refused:
        job_resubmit(job=job, actor=reviewer)

    assert "Not resubmitted" in str(refused.value) and "has 6 idle now" in str(refused.value)
    job.refresh_from_db()
    assert job.status == JobStatus.REJECTED
