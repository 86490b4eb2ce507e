"""Stop selected / Delete selected on the job list: a page that lists the chosen jobs and what
happens to each, then each job through its own page's action (jobs.actions), one message."""

from __future__ import annotations

import re
import uuid

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from jobs.actions import MAX_SELECTED
from jobs.models import Job, JobStatus, ReviewMode, ReviewPolicy
from jobs.services import jobs_submit
from jobs.worker import Worker

from .runner_helpers import (  # noqa: F401
    UNTIL_THE_GATE_OPENS,
    make_spec,
    run_until,
    runner_settings,
    status_of,
)
from .test_aihc_backend import fake as fake_aihc  # noqa: F401 (the strict fake AIHC)
from .test_aihc_backend import given_up_and_held_for_review
from .test_job_pages import awaiting_review, finish, submit

pytestmark = pytest.mark.usefixtures("runner_settings")

BULK = reverse("job-bulk")


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def plans(html: str) -> dict[str, str]:
    """The confirmation page's rows: job id -> what happens to it."""
    rows = re.findall(r'<tr data-job="([^"]+)">.*?class="bulk-plan[^"]*">([^<]+)<', html, re.S)
    return dict(rows)


def test_the_list_has_a_box_per_row_and_costs_no_more_queries_for_them(
    alice, alice_client, django_assert_num_queries
):
    jobs = [submit(alice) for _ in range(3)]
    alice_client.get(reverse("job-list"))  # warm the session

    with django_assert_num_queries(6):  # session, user, the page, the heartbeat, the pools
        # Alice's jobs are in (the pool filter names pools only: the local pool's busy cards are
        # not read) and her labels (the label filter's suggestions)
        html = alice_client.get(reverse("job-list")).content.decode()

    for job in jobs:
        assert (
            f'name="jobs" value="{job.public_id}" id="select-{job.public_id}" hx-preserve' in html
        )
    assert 'id="select-all"' in html and f'action="{BULK}"' in html
    assert 'id="bulk-stop"' in html and 'id="bulk-delete"' in html


def test_delete_selected_says_their_logs_go_and_what_they_wrote_to_their_mounts_stays(
    alice, alice_client
):
    # Copy edit: "gone with their logs and files" made people fear for their checkpoints.
    jobs = [submit(alice).public_id, submit(alice).public_id]

    chinese = alice_client.post(BULK, {"action": "delete", "jobs": jobs}).content.decode()
    alice_client.cookies["django_language"] = "en"
    english = alice_client.post(BULK, {"action": "delete", "jobs": jobs}).content.decode()

    assert "其日志一并删除，它们写入挂载的内容会保留。" in chinese
    assert "gone with their logs; what they wrote to their mounts is kept." in english
    assert "files" not in english


def test_stop_selected_asks_on_a_page_listing_each_job_then_stops_and_says_what_came_of_it(
    alice, alice_en
):
    queued = submit(alice, name="queued")
    also_queued = submit(alice, name="also-queued")
    done = submit(alice, name="done")
    finish(done)
    not_chosen = submit(alice, name="not-chosen")
    chosen = [queued.public_id, also_queued.public_id, done.public_id]
    form = {"action": "stop", "jobs": chosen, "back": "status=&q=que&page=1&evil=1"}

    asked = alice_en.post(BULK, form)
    untouched = [status_of(j) for j in (queued, also_queued)]
    confirmed = alice_en.post(BULK, {**form, "confirmed": "1"})

    html = asked.content.decode()
    # Of what it applies to: the finished one is left as it is (qa91: "Stop 3 jobs?").
    assert (
        asked.status_code == 200
        and '<h1 class="h4 text-break">Stop 2 of the 3 selected jobs?</h1>' in html
    )
    assert plans(html) == {
        queued.public_id: "Will be stopped.",
        also_queued.public_id: "Will be stopped.",
        done.public_id: "Already finished: will not be stopped.",
    }
    assert not_chosen.public_id not in html
    assert untouched == [JobStatus.QUEUED, JobStatus.QUEUED]
    # Back to the list as it was (its filters and page), nothing else from the form.
    assert confirmed.status_code == 302 and confirmed.url == reverse("job-list") + "?q=que&page=1"
    assert said(confirmed) == [
        "Stop requested for 2 jobs. 1 had already finished or was stopping and was left as it is."
    ]
    assert [status_of(j) for j in (queued, also_queued, done, not_chosen)] == [
        JobStatus.STOPPED,
        JobStatus.STOPPED,
        JobStatus.FAILED,
        JobStatus.QUEUED,
    ]
    assert queued.events.get(reason="Stopped").actor == alice


def test_stop_selected_of_finished_jobs_only_says_there_is_nothing_to_stop_and_offers_no_stop(
    alice, alice_en
):
    """No "Stop 0 of the 2 selected jobs?" above a Stop button that would do nothing (qa113)."""
    done, also_done = submit(alice, name="done"), submit(alice, name="also-done")
    finish(done)
    finish(also_done)
    form = {"action": "stop", "jobs": [done.public_id, also_done.public_id], "back": ""}

    english = alice_en.post(BULK, form).content.decode()
    alice_en.cookies["django_language"] = "zh-hans"
    chinese = alice_en.post(BULK, form).content.decode()

    assert (
        '<h1 class="h4 text-break">Nothing to stop among the 2 selected jobs (see why below).'
        in (english)
    )
    assert "所选 2 个任务中没有可停止的任务（原因见下表）。" in chinese
    for html in (english, chinese):
        assert 'id="bulk-confirm-form"' not in html and 'id="bulk-question"' not in html
        assert 'id="bulk-nothing-back"' in html
    assert plans(english) == {
        done.public_id: "Already finished: will not be stopped.",
        also_done.public_id: "Already finished: will not be stopped.",
    }


def test_stop_selected_while_no_worker_runs_says_the_running_ones_stop_when_one_runs(
    alice, alice_en
):
    from jobs.models import LocalRun
    from jobs.services import job_transition

    running = [submit(alice, name=f"running-{n}") for n in range(2)]
    for job in running:
        job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
        LocalRun.objects.create(job=job, attempt=1)
    queued = submit(alice, name="queued")
    form = {"action": "stop", "jobs": [j.public_id for j in [*running, queued]], "back": ""}

    confirmed = alice_en.post(BULK, {**form, "confirmed": "1"})

    assert confirmed.status_code == 302
    assert said(confirmed) == [
        "Stop requested for 3 jobs. No worker (job scheduler) is running now: 2 running jobs "
        "are stopped as soon as one runs again."
    ]
    assert [status_of(j) for j in [*running, queued]] == [
        JobStatus.STOPPING,
        JobStatus.STOPPING,
        JobStatus.STOPPED,
    ]


def test_stop_selected_says_a_job_awaiting_review_will_not_be_sent_or_started(alice, alice_en):
    waiting = awaiting_review(alice, "waiting")
    also_waiting = awaiting_review(alice, "also-waiting")
    ReviewPolicy.objects.update_or_create(pk=1, defaults={"mode": ReviewMode.NONE})
    queued = submit(alice, name="queued")

    def question(jobs: list[Job], language: str = "en") -> tuple[str, dict[str, str]]:
        alice_en.cookies["django_language"] = language
        html = alice_en.post(BULK, {"action": "stop", "jobs": [j.public_id for j in jobs]})
        html = html.content.decode()
        return re.search(r'<p id="bulk-question">([^<]*)</p>', html).group(1), plans(html)

    # Only jobs awaiting review: no instances to end.
    said_of_waiting, rows = question([waiting, also_waiting])
    assert said_of_waiting == (
        "Stopped jobs cannot be resumed. Jobs still waiting for review have not started: they "
        "are withdrawn from review and will not be sent or started. Jobs that have already "
        "finished are left as they are."
    )
    assert set(rows.values()) == {"Waiting for review: will be withdrawn, and not sent or started."}
    assert question([waiting], "zh-hans") == (
        "停止后无法恢复。仍在等待审核的任务尚未启动：将撤出审核，不会被提交或启动。"
        "已结束的任务保持不变。",
        {waiting.public_id: "等待审核中：将撤出审核，不会被提交或启动。"},
    )
    # With a queued one: both said.
    said_of_both, rows = question([waiting, queued])
    assert said_of_both == (
        "Stopped jobs cannot be resumed: the replicas of those that started are ended, and "
        "those still waiting for review are withdrawn from it and will not be sent or started. "
        "Jobs that have already finished are left as they are."
    )
    assert rows[queued.public_id] == "Will be stopped."
    assert status_of(waiting) == JobStatus.PENDING_REVIEW

    alice_en.post(BULK, {"action": "stop", "jobs": [waiting.public_id], "confirmed": "1"})

    assert status_of(waiting) == JobStatus.STOPPED


def test_stop_selected_says_a_job_held_for_review_after_its_looks_were_given_up_is_looked_for(
    alice,
    alice_en,
    settings,
    fake_aihc,  # noqa: F811 (a fixture)
):
    """left51: not "not sent or started" (its platform may have made it): withdrawn, and
    looked for there by the worker, Stopping."""
    from jobs.backends import get_backend

    held = given_up_and_held_for_review(fake_aihc, get_backend("aihc"), alice, settings, made=True)
    waiting = awaiting_review(alice, "waiting")
    form = {"action": "stop", "jobs": [held.public_id, waiting.public_id]}

    html = alice_en.post(BULK, form).content.decode()

    assert plans(html) == {
        held.public_id: "Waiting for review: will be withdrawn. Its last submission may have "
        "been made on its platform: the worker looks for it there and stops it.",
        waiting.public_id: "Waiting for review: will be withdrawn, and not sent or started.",
    }
    question = re.search(r'<p id="bulk-question">([^<]*)</p>', html).group(1)
    assert question.startswith("Stopped jobs cannot be resumed: the replicas of those that")

    alice_en.post(BULK, {**form, "confirmed": "1"})

    assert [status_of(held), status_of(waiting)] == [JobStatus.STOPPING, JobStatus.STOPPED]


def test_delete_selected_says_a_job_held_for_review_after_its_looks_were_given_up_is_withdrawn_and_kept(
    alice,
    alice_en,
    settings,
    fake_aihc,  # noqa: F811 (a fixture)
):
    """Until session 40 its row said "Will be stopped and kept", as for a Queued job, and not
    that Delete also takes it off the reviewers' list."""
    from jobs.backends import get_backend

    held = given_up_and_held_for_review(fake_aihc, get_backend("aihc"), alice, settings, made=True)
    form = {"action": "delete", "jobs": [held.public_id]}

    html = alice_en.post(BULK, form).content.decode()
    alice_en.post(BULK, {**form, "confirmed": "1"})

    assert plans(html) == {
        held.public_id: "Waiting for review: will be withdrawn, stopped and kept, not deleted: "
        "its last submission may have been made on its platform. The worker looks for it there "
        "and stops it; delete the job again once it has stopped."
    }
    assert status_of(held) == JobStatus.STOPPING


def test_sending_the_same_confirmed_stop_again_changes_nothing_more(alice, alice_en):
    job = submit(alice)
    form = {"action": "stop", "jobs": [job.public_id], "confirmed": "1"}
    alice_en.post(BULK, form, follow=True)  # the list shows (and so clears) its message
    events = job.events.count()

    again = alice_en.post(BULK, form)

    assert said(again) == ["1 had already finished or was stopping and was left as it is."]
    assert status_of(job) == JobStatus.STOPPED and job.events.count() == events


def test_select_all_on_the_page_takes_every_row_it_showed_without_javascript(alice, alice_en):
    first, second = submit(alice, name="first"), submit(alice, name="second")
    submit(alice, name="on-another-page")

    asked = alice_en.post(
        BULK, {"action": "stop", "all": "1", "shown": [first.public_id, second.public_id]}
    )

    assert set(plans(asked.content.decode())) == {first.public_id, second.public_id}


def test_another_users_job_ids_are_ignored_and_look_like_ids_that_never_existed(
    alice, bob, alice_en
):
    mine = submit(alice, name="mine")
    theirs = submit(bob, name="theirs")

    def asked(other_id: str) -> str:
        html = alice_en.post(BULK, {"action": "delete", "jobs": [mine.public_id, other_id]})
        # Per response anyway: the CSRF token and the CSP nonce.
        return re.sub(r'nonce="[^"]+"|\b[A-Za-z0-9]{64}\b', "", html.content.decode())

    with_theirs = asked(theirs.public_id)
    with_unknown = asked(f"pytorchjob-{uuid.uuid4()}")
    only_theirs = alice_en.post(BULK, {"action": "stop", "jobs": [theirs.public_id]})
    said_only_theirs = said(alice_en.get(only_theirs.url))
    both = alice_en.post(
        BULK, {"action": "stop", "jobs": [mine.public_id, theirs.public_id], "confirmed": "1"}
    )

    assert with_theirs == with_unknown
    assert "theirs" not in with_theirs and theirs.public_id not in with_theirs
    assert "1 selected job no longer exists and is left out." in with_theirs
    assert only_theirs.status_code == 302
    assert said_only_theirs == ["The selected jobs no longer exist; nothing was done."]
    assert said(both) == ["Stop requested for 1 job. 1 selected job no longer exists."]
    assert status_of(theirs) == JobStatus.QUEUED
    assert list(theirs.events.values_list("reason", flat=True)) == ["Created"]


def test_delete_selected_deletes_what_it_can_waits_for_a_running_job_and_keeps_one_being_sent(
    alice, alice_en
):
    finished = submit(alice, name="finished")
    finish(finished)
    [running] = jobs_submit(
        owner=alice, spec=make_spec(UNTIL_THE_GATE_OPENS, name="running"), submit_key="running"
    )
    worker = Worker()
    run_until(worker, lambda: status_of(running) == JobStatus.RUNNING, what="the job to run")
    queued = submit(alice, name="queued")
    # A job on its way to a remote platform: deleting it now would orphan what it creates.
    sending = submit(alice, name="sending")
    Job.objects.filter(pk=sending.pk).update(backend="aihc", status=JobStatus.SUBMITTING)
    chosen = [j.public_id for j in (finished, queued, running, sending)]

    asked = alice_en.post(BULK, {"action": "delete", "jobs": chosen})
    confirmed = alice_en.post(BULK, {"action": "delete", "jobs": chosen, "confirmed": "1"})

    shown = plans(asked.content.decode())
    assert "<title>Delete 3 of the 4 selected jobs? · " in asked.content.decode()
    assert shown[finished.public_id] == "Will be deleted."
    assert shown[queued.public_id] == "Will be stopped and deleted."
    assert shown[running.public_id] == "Will be stopped first, then deleted."
    assert shown[sending.public_id].startswith("Will not be deleted: The job is being sent")
    assert said(confirmed) == [
        "Deleted 2 jobs. 1 job will be deleted once it has stopped.",
        "Job sending was not deleted: The job is being sent to its platform right now. Stop it, "
        "or wait a moment; it can be deleted once the platform has answered.",
    ]
    assert set(Job.objects.values_list("name", flat=True)) == {"running", "sending"}
    run_until(worker, lambda: not Job.objects.filter(pk=running.pk).exists(), what="the delete")
    assert status_of(sending) == JobStatus.SUBMITTING


def test_more_jobs_than_the_limit_are_refused_whole_and_nothing_is_stopped(alice, alice_en):
    job = submit(alice)
    ids = [job.public_id] + [f"pytorchjob-{uuid.uuid4()}" for _ in range(MAX_SELECTED)]

    r = alice_en.post(BULK, {"action": "stop", "jobs": ids, "confirmed": "1"})

    assert r.status_code == 302
    assert said(r) == [
        f"Select at most {MAX_SELECTED} jobs at a time; nothing was done.",
        # Back to the list with as many ticked as its address carries, the rest said (left27).
        "51 ticked jobs were not kept ticked: the list's address carries at most 50 jobs "
        "(fewer with long filters). Act on those still ticked first, then tick the others "
        "again.",
    ]
    assert status_of(job) == JobStatus.QUEUED


def test_a_bulk_post_without_the_csrf_token_is_refused_and_stops_nothing(alice):
    job = submit(alice)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    r = client.post(BULK, {"action": "stop", "jobs": [job.public_id], "confirmed": "1"})

    assert r.status_code == 403
    assert status_of(job) == JobStatus.QUEUED


@pytest.mark.parametrize(
    "form",
    [
        {},
        {"action": "stop"},
        {"action": "restart", "jobs": ["x"]},
        {"action": "stop", "jobs": ["x" * 100_000, "a\x00b", ""]},
        {"action": "delete", "back": "page=%00&q=" + "x" * 5000},
    ],
)
def test_odd_forms_go_back_to_the_list_with_a_message_never_an_error(alice, alice_en, form):
    job = submit(alice)

    r = alice_en.post(BULK, form)

    assert r.status_code == 302 and r.url.startswith(reverse("job-list"))
    assert said(r)
    assert status_of(job) == JobStatus.QUEUED


def test_a_job_that_ended_between_the_question_and_the_answer_is_reported_as_ended(alice, alice_en):
    job = submit(alice)
    asked = alice_en.post(BULK, {"action": "stop", "jobs": [job.public_id]})
    finish(job)

    r = alice_en.post(BULK, {"action": "stop", "jobs": [job.public_id], "confirmed": "1"})

    assert plans(asked.content.decode()) == {job.public_id: "Will be stopped."}
    assert said(r) == ["1 had already finished or was stopping and was left as it is."]
    assert status_of(job) == JobStatus.FAILED


def test_the_question_says_which_task_of_a_queue_group_each_row_is(alice, alice_en):
    from jobs import spec as S

    spec = make_spec("sleep 60", name="qa-grp")
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=1)
    tasks = jobs_submit(owner=alice, spec=spec, submit_key="grp")

    html = alice_en.post(
        BULK, {"action": "stop", "jobs": [t.public_id for t in tasks]}
    ).content.decode()

    # The tasks share a name; as on the list, each row says which task it is.
    rows = re.findall(
        r'<tr data-job="([^"]+)">\s*<td>qa-grp <span[^>]*group-task[^>]*>(\d+/3)<', html
    )
    assert sorted(rows) == sorted((t.public_id, f"{t.group_index}/3") for t in tasks)
    assert sorted(index for _, index in rows) == ["1/3", "2/3", "3/3"]


def create_unanswered(job: Job) -> Job:
    """The job as a Kubernetes create that got no clear answer left it: Queued again, no name
    of its own yet, while the API server may have made its PyTorchJob."""
    from jobs.backends.kubernetes import UNANSWERED_EVENT
    from jobs.services import job_event

    Job.objects.filter(pk=job.pk).update(backend="kubernetes", external_id="")
    job_event(job=job, reason=UNANSWERED_EVENT, message="no answer", warning=True)
    job.refresh_from_db()
    return job


@pytest.mark.usefixtures("kubernetes_settings")
def test_delete_selected_lists_a_job_it_only_stops_apart_and_says_to_delete_it_again(
    alice, alice_en
):
    """Until left45 the page said "Will be stopped and deleted." of a job queued again after
    a create with no clear answer, which Delete stops and keeps (jobs.actions.
    job_delete_only_stops), and afterwards that it was "being sent right now"."""
    unsettled = create_unanswered(submit(alice, name="unsettled"))
    queued = submit(alice, name="queued")
    form = {"action": "delete", "jobs": [unsettled.public_id, queued.public_id]}

    asked = alice_en.post(BULK, form)
    confirmed = alice_en.post(BULK, {**form, "confirmed": "1"})

    html = asked.content.decode()
    shown = plans(html)
    assert shown[unsettled.public_id] == (
        "Will be stopped and kept, not deleted: a create of it got no clear answer, so its "
        "platform may have made it. The worker looks for it there and stops it; delete the "
        "job again once it has stopped."
    )
    assert shown[queued.public_id] == "Will be stopped and deleted."
    assert 'id="bulk-only-stopped">1 job will be stopped and kept, not deleted' in html
    assert said(confirmed) == [
        "Deleted 1 job.",
        "Job unsettled was not deleted: The job was stopped, not deleted: a create of it got "
        "no clear answer, so its platform may have made it. The worker looks for it there and "
        "stops it; delete the job again once it has stopped.",
    ]
    assert status_of(unsettled) == JobStatus.STOPPING


@pytest.mark.usefixtures("kubernetes_settings")
def test_delete_selected_says_in_chinese_that_a_job_it_only_stops_is_kept(alice, alice_client):
    unsettled = create_unanswered(submit(alice, name="unsettled"))

    html = alice_client.post(
        BULK, {"action": "delete", "jobs": [unsettled.public_id]}
    ).content.decode()

    assert "将停止并保留，不会删除" in plans(html)[unsettled.public_id]
    assert "1 个任务将停止并保留，不会删除" in html


def test_the_question_counts_every_job_when_the_action_applies_to_all_in_chinese_too(
    alice, alice_client
):
    queued = [submit(alice, name=f"q{n}") for n in range(2)]
    done = submit(alice, name="done")
    finish(done)
    every = [job.public_id for job in queued]

    applies_to_all = alice_client.post(BULK, {"action": "stop", "jobs": every}).content.decode()
    one_left = alice_client.post(
        BULK, {"action": "stop", "jobs": [*every, done.public_id]}
    ).content.decode()
    nothing = alice_client.post(BULK, {"action": "stop", "jobs": [done.public_id]}).content.decode()

    assert '<h1 class="h4 text-break">停止 2 个任务？</h1>' in applies_to_all
    assert '<h1 class="h4 text-break">停止所选 3 个任务中的 2 个？</h1>' in one_left
    assert (
        '<h1 class="h4 text-break">所选 1 个任务中没有可停止的任务（原因见下表）。</h1>' in nothing
    )
