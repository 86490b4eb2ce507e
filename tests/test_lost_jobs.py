"""Local jobs whose worker is gone with its machine (README "What a takeover means for local
jobs"): a reviewer marks them as lost (jobs.review.job_mark_lost, the admin's action), which
ends them and frees their cards without touching a process; the worker that started them,
back later, ends what still runs (jobs.runner.end_leftover_replicas); a user's Stop of such a
job says it waits for that worker."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db.models.functions import Now
from django.test import Client
from django.urls import reverse
from django.utils import timezone, translation
from playwright.sync_api import expect

from jobs import spec as S
from jobs.actions import ActionError, job_stop
from jobs.health import WorkerIdentity, worker_beat, worker_stopped
from jobs.models import Job, JobReplica, JobStatus, LocalRun, UserPreference, WorkerHeartbeat
from jobs.review import job_mark_lost
from jobs.runner import current_capacity, live_shim, replica_state_dir, requirement, runner_key
from jobs.worker import Worker

from .conftest import log_in, run_queued_tasks
from .runner_helpers import (
    CARD,
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    submit,
)
from .test_runner_network import alive
from .test_workers import worker_on

pytestmark = pytest.mark.usefixtures("runner_settings")

CHANGELIST = "/admin/jobs/job/"
ELSEWHERE = "gpu-a:/srv/console/var/runs"


def running_elsewhere(
    owner, *, status: str = JobStatus.RUNNING, runner: str = ELSEWHERE, **changes
) -> Job:
    """A local job a worker on another machine started, holding both cards of the pool."""
    job = submit(owner, make_spec("sleep 600", roles=[S.Role("master", 1, CARD, 2)], **changes))
    Job.objects.filter(pk=job.pk).update(status=status, started_at=timezone.now())
    LocalRun.objects.create(job=job, runner=runner, devices={CARD: [0, 1]})
    JobReplica.objects.create(job=job, role="master", index=0, status="running")
    job.refresh_from_db()
    return job


def active_here() -> WorkerIdentity:
    """The worker of this machine and run directory holds the lease."""
    identity = WorkerIdentity.new()
    assert worker_beat(worker=identity) is True
    return identity


def needs_both_cards(owner) -> Job:
    return submit(owner, make_spec("true", roles=[S.Role("master", 1, CARD, 2)]))


# -- the service --------------------------------------------------------------------------


def test_a_running_job_whose_worker_is_elsewhere_is_marked_lost_failed_by_whom_and_its_cards_freed(
    alice, reviewer
):
    active_here()
    job = running_elsewhere(alice)
    want = requirement(needs_both_cards(alice).job_spec())
    assert current_capacity().allocate(want) is None  # the lost job holds both cards

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.finished_at is not None
    assert "carol" in job.status_reason
    [event] = job.events.filter(reason="MarkedLost")
    assert event.actor == reviewer and event.type == "Warning"
    assert current_capacity().allocate(want) is not None


def test_the_failed_alert_of_a_job_marked_lost_is_mailed_in_its_owners_language(
    alice, reviewer, mailoutbox
):
    UserPreference.objects.create(user=alice, language="en")
    active_here()
    alert = S.AlertConfig(items=["jobFailed"], emails=["alice@example.com"], webhooks=[])
    job = running_elsewhere(alice, alert=alert)

    assert job_mark_lost(job=job, reviewer=reviewer) is True
    run_queued_tasks()  # what the worker does

    # The job's name, then the reason, said again in English (recorded in Chinese).
    [mail] = mailoutbox
    assert mail.subject == "[AI Job Console] local-test failed"
    assert mail.body.startswith("local-test: Marked as lost by carol: ")
    assert "丢失" in Job.objects.get(pk=job.pk).status_reason


def test_a_stopping_job_marked_lost_ends_stopped(alice, reviewer):
    active_here()
    job = running_elsewhere(alice, status=JobStatus.STOPPING)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert "carol" in job.status_reason


def test_with_no_worker_running_at_all_a_job_may_be_marked_lost(alice, reviewer):
    """Nothing follows it then either (decision: README)."""
    worker_stopped(worker=active_here())
    job = running_elsewhere(alice, runner=runner_key())

    assert job_mark_lost(job=job, reviewer=reviewer) is True
    assert Job.objects.get(pk=job.pk).status == JobStatus.FAILED


@pytest.mark.parametrize("runner", ["here", ""])
def test_a_job_the_active_worker_follows_is_not_marked_lost_and_says_to_stop_it(
    alice, reviewer, runner
):
    active_here()
    job = running_elsewhere(alice, runner=runner_key() if runner == "here" else "")

    with translation.override("en"), pytest.raises(ActionError, match="stop it instead"):
        job_mark_lost(job=job, reviewer=reviewer)

    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING
    assert not job.events.filter(reason="MarkedLost").exists()


def test_only_running_or_stopping_local_jobs_are_marked_lost(alice, reviewer):
    active_here()
    queued = needs_both_cards(alice)

    with translation.override("en"), pytest.raises(ActionError, match="running or stopping"):
        job_mark_lost(job=queued, reviewer=reviewer)
    assert Job.objects.get(pk=queued.pk).status == JobStatus.QUEUED


# -- the admin ----------------------------------------------------------------------------


def reviewer_client(reviewer) -> Client:
    client = Client()
    client.force_login(reviewer)
    client.cookies["django_language"] = "en"
    return client


def test_the_admin_confirms_which_jobs_are_marked_lost_and_says_why_others_are_not(alice, reviewer):
    active_here()
    lost = running_elsewhere(alice)
    followed = running_elsewhere(alice, runner=runner_key())
    client = reviewer_client(reviewer)
    ids = [lost.pk, followed.pk]

    page = client.post(CHANGELIST, {"action": "mark_lost_jobs", "_selected_action": ids})

    text = page.content.decode()
    assert re.search(r'<p id="review-question">Mark this job as lost\?', text)
    eligible = text.split('class="review-jobs"', 1)[1].split("</ul>", 1)[0]
    assert lost.public_id in eligible and followed.public_id not in eligible
    skipped = text.split('class="review-skipped"', 1)[1].split("</ul>", 1)[0]
    assert followed.public_id in skipped and "The active worker follows this job" in skipped
    assert Job.objects.get(pk=lost.pk).status == JobStatus.RUNNING  # nothing done yet

    done = client.post(
        CHANGELIST,
        {"action": "mark_lost_jobs", "_selected_action": ids, "post": "yes"},
        follow=True,
    )

    assert "1 job marked as lost; its cards are released." in done.content.decode()
    assert Job.objects.get(pk=lost.pk).status == JobStatus.FAILED
    assert Job.objects.get(pk=followed.pk).status == JobStatus.RUNNING


def test_a_job_page_offers_mark_as_lost_only_where_no_active_worker_follows_it(alice, reviewer):
    active_here()
    lost = running_elsewhere(alice)
    followed = running_elsewhere(alice, runner=runner_key())
    client = reviewer_client(reviewer)

    lost_page = client.get(f"{CHANGELIST}{lost.pk}/change/").content.decode()
    followed_page = client.get(f"{CHANGELIST}{followed.pk}/change/").content.decode()

    assert "review-mark_lost" in lost_page and 'id="not-markable-lost"' not in lost_page
    assert "review-mark_lost" not in followed_page
    assert "Mark as lost is not offered: The active worker follows this job" in followed_page
    # A user without the review permission is offered nothing.
    alice.is_staff = True
    alice.save()
    client.force_login(alice)
    assert client.get(f"{CHANGELIST}{lost.pk}/change/").status_code in (302, 403)


def test_the_mark_lost_confirmation_from_a_job_page_ends_that_job(alice, reviewer):
    active_here()
    job = running_elsewhere(alice)
    client = reviewer_client(reviewer)

    page = client.get(f"{CHANGELIST}{job.pk}/review/mark_lost/")
    assert "Mark this job as lost?" in page.content.decode()
    done = client.post(
        CHANGELIST,
        {"action": "mark_lost_jobs", "_selected_action": [job.pk], "post": "yes", "_single": "1"},
    )

    assert done.status_code == 302
    assert done["Location"] == reverse("admin:jobs_job_change", args=[job.pk])
    assert Job.objects.get(pk=job.pk).status == JobStatus.FAILED


# -- a user's Stop --------------------------------------------------------------------------


def test_stopping_a_job_whose_worker_is_elsewhere_says_it_waits_for_that_worker(alice):
    active_here()
    job = running_elsewhere(alice)
    client = Client()
    client.force_login(alice)
    client.cookies["django_language"] = "en"

    page = client.post(
        reverse("job-stop", kwargs={"public_id": job.public_id}), {"confirmed": "1"}, follow=True
    )

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    text = page.content.decode()
    assert "it stops once a worker runs where it started again" in text
    assert "SIGKILL after" not in job.status_reason
    assert "再次运行" in job.status_reason  # recorded in the console's language


def test_stopping_a_job_the_active_worker_follows_still_says_sigterm_then_sigkill(alice):
    active_here()
    job = running_elsewhere(alice, runner=runner_key())

    assert job_stop(job=job, actor=alice) is True

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert "SIGKILL" in job.status_reason


@pytest.mark.parametrize("absent", ["never_seen", "lapsed", "stopped"])
def test_stopping_a_job_while_no_worker_runs_says_at_once_the_stop_waits_for_one(alice, absent):
    # Before left23 the page read "Stopping every replica (SIGTERM, SIGKILL after 10 s)" until
    # a worker came back, though nothing could send them.
    if absent != "never_seen":
        identity = active_here()
        if absent == "lapsed":  # killed: its lease lapsed, as the worker banner reads it
            WorkerHeartbeat.objects.update(seen_at=Now() - timedelta(minutes=2))
        else:
            worker_stopped(worker=identity)
    job = running_elsewhere(alice, runner=runner_key())
    client = Client()
    client.force_login(alice)
    client.cookies["django_language"] = "en"

    page = client.post(
        reverse("job-stop", kwargs={"public_id": job.public_id}), {"confirmed": "1"}, follow=True
    )

    said = "No worker (job scheduler) is running now, so nothing can end the replicas yet"
    text = page.content.decode()
    assert page.status_code == 200
    # The Stop's message and the job's status say it, beside the worker's banner.
    assert f'<div class="alert alert-warning" role="alert">Stop requested. {said}' in text
    assert text.count(said) == 3  # the message, the status's reason and its event
    assert 'id="worker-banner"' in text
    assert "SIGKILL after" not in text
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert "已记录" in job.status_reason  # recorded in the console's language
    assert LocalRun.objects.get(job=job).stop_target == "stopped"  # done when a worker runs


def test_deleting_a_running_job_while_no_worker_runs_says_it_goes_once_one_runs(alice):
    job = running_elsewhere(alice, runner=runner_key())
    client = Client()
    client.force_login(alice)
    client.cookies["django_language"] = "en"

    page = client.post(
        reverse("job-delete", kwargs={"public_id": job.public_id}), {"confirmed": "1"}, follow=True
    )

    text = page.content.decode()
    assert page.status_code == 200 and page.redirect_chain[-1][0] == reverse("job-list")
    assert f"Job {job.name} will be deleted once it has stopped. No worker (job scheduler)" in text
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert "SIGKILL" not in job.status_reason and "日志" in job.status_reason
    assert LocalRun.objects.get(job=job).delete_when_stopped


# -- the worker where it ran comes back ---------------------------------------------------


def take_over_elsewhere() -> None:
    """The worker here goes quiet; one on another machine takes the lease over."""
    WorkerHeartbeat.objects.update(seen_at=Now() - timedelta(seconds=3600))
    assert worker_beat(worker=worker_on("gpu-b", 202)) is True


@pytest.mark.parametrize("then", ["kept", "deleted"])
def test_the_worker_back_where_a_lost_job_ran_ends_its_replicas(alice, reviewer, settings, then):
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    here = Worker()
    run_until(here, lambda: (r := job.replicas.get()).pid is not None and r.status == "running")
    state = replica_state_dir(job.public_id, 1, "master-0")
    found = live_shim(state)
    assert found is not None
    take_over_elsewhere()
    assert job_mark_lost(job=job, reviewer=reviewer) is True
    assert alive(found)  # marking touched no process
    if then == "deleted":  # by a web server on another machine: this folder stays
        Job.objects.filter(pk=job.pk).delete()

    Worker()  # the worker here starts again (takes the lease, or stands by)

    assert not alive(found)
    if then == "kept":
        [event] = Job.objects.get(pk=job.pk).events.filter(reason="LeftoverEnded")
        assert event.type == "Warning"
        assert not (state / "tmp").exists()
    else:
        assert not state.exists()
    open_gate(settings)


def test_a_worker_that_hung_past_its_lease_ends_replicas_of_a_job_marked_lost_meanwhile(
    alice, reviewer, settings
):
    """No other worker took the lease over: the hung one renews it and carries on, without
    starting again, and still ends what a reviewer marked as lost while it seemed gone."""
    settings.WORKER_STALE_SECONDS = 60
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    worker = Worker()
    run_until(worker, lambda: (r := job.replicas.get()).pid is not None and r.status == "running")
    found = live_shim(replica_state_dir(job.public_id, 1, "master-0"))
    assert found is not None
    WorkerHeartbeat.objects.update(seen_at=Now() - timedelta(seconds=3600))  # it hung
    assert job_mark_lost(job=job, reviewer=reviewer) is True  # no worker runs, by the lease
    worker.last_beat -= 3600

    worker.tick()

    assert not alive(found)
    assert Job.objects.get(pk=job.pk).events.filter(reason="LeftoverEnded").exists()
    open_gate(settings)


# -- in a browser -------------------------------------------------------------------------


@pytest.mark.browser
def test_a_reviewer_marks_a_lost_job_from_the_admin_list_in_a_browser(page, alice, reviewer):
    active_here()
    job = running_elsewhere(alice)
    log_in(page, "carol", "carol-password")

    page.goto(CHANGELIST)
    page.check(f"input[name=_selected_action][value='{job.pk}']")
    page.select_option("select[name=action]", "mark_lost_jobs")
    page.click("button[name=index]")
    expect(page.locator("#review-question")).to_have_text(
        re.compile(r"^(Mark this job as lost\?|将该任务标记为丢失？)")
    )
    page.click("#confirm-review")
    expect(page.locator(".messagelist .success")).to_be_visible()

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.events.get(reason="MarkedLost").actor == reviewer
