"""Jobs of a remote platform this console cannot reach, its settings unusable (never set up, or
its credentials taken away: jobs.backends.configured; README "Jobs of a platform not
configured"): nothing follows them, so staff mark them as lost (jobs.review.job_mark_lost), a Stop says why
it cannot reach them instead of "stopped or stopping", their pages and the admin's index say
so, and a Delete of one stuck Stopping says why it waits (qa114)."""

from __future__ import annotations

import html
import itertools
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone, translation

from jobs import spec as S
from jobs.actions import ActionError, job_delete, job_delete_refusal, job_stop
from jobs.models import DeletedJob, Job, JobEvent, JobReplica, JobStatus, LocalRun, ReplicaStatus
from jobs.review import job_mark_lost

from .test_api import alice_key, api, wsgi  # noqa: F401

CHANGELIST = "/admin/jobs/job/"
A800 = "baidu.com/a800_80g_cgpu"
_ids = itertools.count(1)


@pytest.fixture(autouse=True)
def local_only(settings):
    """AIHC and Kubernetes not configured, as in qa114's console."""
    settings.CONSOLE_BACKENDS = ["local"]
    settings.AIHC_ACCESS_KEY = settings.AIHC_SECRET_KEY = ""
    settings.KUBERNETES_API_URL = settings.KUBERNETES_TOKEN = settings.KUBERNETES_TOKEN_FILE = ""


def aihc_settings(settings) -> None:
    """AIHC's credentials there (nothing here sends a request): the worker follows its jobs,
    whether CONSOLE_BACKENDS lists it or not (jobs.worker.Worker.remote_backends)."""
    settings.AIHC_ACCESS_KEY, settings.AIHC_SECRET_KEY = "ak-test", "sk-test"


def remote_job(
    owner,
    *,
    backend: str = "aihc",
    status: str = JobStatus.RUNNING,
    external_id: str = "",
    hours: float = 3,
) -> Job:
    """A job of `owner` on `backend` (8 cards), running for `hours`, with one replica shown
    running; no platform job id unless given (qa114's seeded jobs had none)."""
    spec = S.JobSpec(
        name="train",
        resource_pool_id="cce-a800-train",
        image="python:3.12",
        command="python train.py",
        roles=[S.Role("master", 1, A800, 8)],
    )
    job = Job.objects.create(
        public_id=f"pytorchjob-{next(_ids)}",
        name="train",
        owner=owner,
        spec=spec.to_document(),
        backend=backend,
        resource_pool="cce-a800-train",
        total_cards=spec.total_accelerators,
        status=status,
        external_id=external_id,
        started_at=timezone.now() - timedelta(hours=hours),
    )
    JobReplica.objects.create(job=job, role="master", index=0, status=ReplicaStatus.RUNNING)
    return job


def english(user) -> Client:
    client = Client()
    client.force_login(user)
    client.cookies["django_language"] = "en"
    return client


# -- Mark as lost -------------------------------------------------------------------------


def test_a_running_job_of_a_platform_not_configured_is_marked_lost_failed_its_card_time_ending(
    alice, reviewer
):
    job = remote_job(alice)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert timezone.now() - job.finished_at < timedelta(minutes=1)
    with translation.override("en"):
        assert job.status_reason_shown.startswith(
            "Marked as lost by carol: its platform (AIHC) is not configured on this console"
        )
    [event] = job.events.filter(reason="MarkedLost")
    assert event.actor == reviewer and event.type == "Warning"
    replica = JobReplica.objects.get(job=job)
    assert replica.status == ReplicaStatus.STOPPED and replica.finished_at == job.finished_at


def test_a_stopping_job_with_a_platform_id_of_a_platform_not_configured_ends_stopped(
    alice, reviewer
):
    job = remote_job(alice, backend="kubernetes", status=JobStatus.STOPPING, external_id="pj-1")

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert "Kubernetes" in job.status_reason and "carol" in job.status_reason


@pytest.mark.parametrize("listed", [["local", "aihc"], ["local"]])
def test_a_job_of_a_platform_whose_settings_are_there_is_still_not_marked_lost(
    alice, reviewer, settings, listed
):
    """Listed in CONSOLE_BACKENDS or taken out of it: the worker follows it while its
    settings are there."""
    settings.CONSOLE_BACKENDS = listed
    aihc_settings(settings)
    job = remote_job(alice)

    with translation.override("en"), pytest.raises(ActionError, match="its platform follows"):
        job_mark_lost(job=job, reviewer=reviewer)

    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING


def test_the_admin_list_marks_jobs_of_a_platform_not_configured_as_lost(alice, reviewer):
    running = remote_job(alice)
    stopping = remote_job(alice, backend="kubernetes", status=JobStatus.STOPPING)
    queued = remote_job(alice, status=JobStatus.QUEUED)
    ids = [running.pk, stopping.pk, queued.pk]
    client = english(reviewer)

    page = client.post(CHANGELIST, {"action": "mark_lost_jobs", "_selected_action": ids})
    done = client.post(
        CHANGELIST,
        {"action": "mark_lost_jobs", "_selected_action": ids, "post": "yes"},
        follow=True,
    )

    text = page.content.decode()
    eligible = text.split('class="review-jobs"', 1)[1].split("</ul>", 1)[0]
    assert running.public_id in eligible and stopping.public_id in eligible
    assert queued.public_id not in eligible
    assert "2 jobs marked as lost; their cards are released." in done.content.decode()
    assert Job.objects.get(pk=running.pk).status == JobStatus.FAILED
    assert Job.objects.get(pk=stopping.pk).status == JobStatus.STOPPED
    assert Job.objects.get(pk=queued.pk).status == JobStatus.QUEUED


def test_a_job_of_a_platform_listed_without_its_credentials_is_marked_lost(
    alice, reviewer, settings
):
    settings.CONSOLE_BACKENDS = ["local", "aihc"]  # "enabled but unusable"
    job = remote_job(alice)

    assert job_mark_lost(job=job, reviewer=reviewer) is True

    assert Job.objects.get(pk=job.pk).status == JobStatus.FAILED


def test_the_admin_job_page_says_its_platform_is_not_configured_and_offers_mark_as_lost(
    alice, reviewer
):
    job = remote_job(alice, status=JobStatus.STOPPING)

    page = english(reviewer).get(f"{CHANGELIST}{job.pk}/change/").content.decode()

    assert "review-mark_lost" in page
    note = page.split('id="platform-not-configured">', 1)[1].split("</p>", 1)[0]
    assert note.startswith("Its platform (AIHC) is not configured on this console")
    assert "AIHC credentials are not configured (AIHC_ACCESS_KEY, AIHC_SECRET_KEY)." in note
    assert "Mark it as lost to end it here" in note


def test_the_admin_job_page_of_a_configured_platform_says_nothing_of_it(alice, reviewer, settings):
    aihc_settings(settings)
    job = remote_job(alice)

    page = english(reviewer).get(f"{CHANGELIST}{job.pk}/change/").content.decode()

    assert "review-mark_lost" not in page and "platform-not-configured" not in page


def test_the_admin_index_counts_the_jobs_of_platforms_not_configured_and_links_to_them(
    alice, reviewer
):
    first, second = remote_job(alice), remote_job(alice, backend="kubernetes")
    ended = remote_job(alice, status=JobStatus.SUCCEEDED)  # nothing to do
    local = remote_job(alice, backend="local")  # a worker follows it
    client = english(reviewer)

    index = client.get("/admin/").content.decode()

    warning = index.split('id="unfollowed-jobs">', 1)[1].split("</ul>", 1)[0]
    assert (
        "2 running or stopping jobs are on platforms not configured on this console "
        "(AIHC, Kubernetes)" in warning
    )
    link = warning.split('href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    listed = client.get(link)
    assert listed.status_code == 200
    shown = listed.content.decode()
    assert first.public_id in shown and second.public_id in shown
    assert ended.public_id not in shown and local.public_id not in shown
    assert "1 job" not in shown.split("result-list", 1)[0]  # (no ?e=1 error redirect)


def test_the_admin_index_says_nothing_while_every_platform_with_jobs_is_configured(
    alice, reviewer, settings
):
    aihc_settings(settings)
    remote_job(alice)

    assert "unfollowed-jobs" not in english(reviewer).get("/admin/").content.decode()


# -- Stop -----------------------------------------------------------------------------------


def test_a_stop_of_a_running_job_of_a_platform_not_configured_says_why_and_changes_nothing(
    alice, reviewer
):
    job = remote_job(alice)

    done = english(reviewer).post(
        CHANGELIST,
        {"action": "stop_jobs", "_selected_action": [job.pk], "post": "yes", "reason": ""},
        follow=True,
    )

    text = done.content.decode()
    assert "stopped or stopping" not in text
    # (The admin's messages begin with a capital: "Pytorchjob-…".)
    assert (
        f"{job.public_id[1:]}: Its platform (AIHC) is not configured on this console, so "
        "nothing can reach it to stop the job. Staff can end the job here with Mark as lost" in text
    )
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert not job.events.filter(reason__in=["StopRequested", "Stopping"]).exists()


def test_the_owners_stop_of_such_a_job_says_the_same(alice, alice_en):
    job = remote_job(alice, backend="kubernetes", external_id="pj-2")

    page = alice_en.post(f"/jobs/{job.public_id}/stop/", {"confirmed": "1"}, follow=True)

    assert "Its platform (Kubernetes) is not configured on this console" in page.content.decode()
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING


def test_a_queued_job_of_a_platform_not_configured_is_still_stopped_at_once(alice):
    job = remote_job(alice, status=JobStatus.QUEUED)

    assert job_stop(job=job, actor=alice) is True

    assert Job.objects.get(pk=job.pk).status == JobStatus.STOPPED


def test_the_owners_job_page_says_its_platform_is_not_configured(alice, alice_en):
    job = remote_job(alice)

    page = alice_en.get(f"/jobs/{job.public_id}/").content.decode()

    note = page.split('id="platform-not-configured">', 1)[1].split("</div>", 1)[0]
    assert note.startswith("Its platform (AIHC) is not configured on this console")
    assert "until an administrator ends it (Mark as lost)" in note


# -- Delete ---------------------------------------------------------------------------------


def test_a_delete_of_a_job_stuck_stopping_on_a_platform_not_configured_says_so(alice, alice_en):
    job = remote_job(alice, status=JobStatus.STOPPING)

    page = alice_en.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"}, follow=True)

    text = page.content.decode()
    assert "being sent to its platform" not in text
    assert (
        "The job is stopping, and its platform (AIHC) is not configured on this console, so "
        "nothing can finish its stop." in text
    )
    assert Job.objects.filter(pk=job.pk).exists()


def test_a_delete_of_a_job_stopped_while_being_sent_says_it_is_stopping(alice, settings):
    aihc_settings(settings)
    job = remote_job(alice, status=JobStatus.STOPPING)

    with translation.override("en"):
        said = job_delete_refusal(job)

    assert said.startswith("The job is stopping: it was stopped while it was being sent")


# -- review64 ---------------------------------------------------------------------------------


def confirmation(client, jobs: list[Job]) -> str:
    page = client.post(
        CHANGELIST, {"action": "mark_lost_jobs", "_selected_action": [j.pk for j in jobs]}
    )
    return " ".join(page.content.decode().split())


def test_mark_as_lost_of_a_remote_job_asks_with_its_platform_never_a_worker_ending_it(
    alice, reviewer
):
    """Nothing ends what still runs on a platform: no worker reaches it, and a final job is
    not synced."""
    job = remote_job(alice)

    asked = confirmation(english(reviewer), [job])

    assert "Its platform is not configured on this console" in asked
    assert "Nothing is sent to its platform; if it still runs there, stop it there" in asked
    assert "the worker ends them" not in asked


def test_mark_as_lost_of_local_and_remote_jobs_together_says_what_becomes_of_each(alice, reviewer):
    local = remote_job(alice, backend="local")
    remote = remote_job(alice, backend="kubernetes")
    LocalRun.objects.create(job=local, runner="gpu-far-away:/srv/console/var/runs", devices={})

    asked = confirmation(english(reviewer), [local, remote])

    assert "Mark these 2 jobs as lost?" in asked
    assert "processes that still run are ended by the worker when it runs there again" in asked
    assert "a job that still runs on its platform is to be stopped there" in asked


def test_kubernetes_with_its_url_and_a_token_file_that_cannot_be_read_counts_as_configured(
    alice, reviewer, settings, tmp_path
):
    """Judged from the settings alone, no file read: a token file that cannot be read now is an
    outage (503), not a platform taken away (no Mark as lost)."""
    settings.KUBERNETES_API_URL = "https://10.0.0.1:6443"
    settings.KUBERNETES_TOKEN_FILE = str(tmp_path / "not-there")
    job = remote_job(alice, backend="kubernetes", external_id="pj-3")

    page = english(reviewer).get(f"{CHANGELIST}{job.pk}/change/").content.decode()

    assert "platform-not-configured" not in page and "review-mark_lost" not in page
    with translation.override("en"), pytest.raises(ActionError, match="its platform follows"):
        job_mark_lost(job=job, reviewer=reviewer)
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING


def test_the_admin_job_page_says_why_kubernetes_is_not_configured_in_chinese(
    alice, reviewer, settings
):
    settings.KUBERNETES_API_URL = "https://10.0.0.1:6443"
    job = remote_job(alice, backend="kubernetes")
    client = Client()
    client.force_login(reviewer)

    page = client.get(f"{CHANGELIST}{job.pk}/change/").content.decode()

    reason = page.split('id="platform-problem">', 1)[1].split("</span>", 1)[0]
    assert reason == "Kubernetes 访问凭证未配置（KUBERNETES_TOKEN 或 KUBERNETES_TOKEN_FILE）。"


def test_a_queued_job_with_a_platform_id_of_a_platform_not_configured_is_stopped_at_once(
    alice,
):
    """Put back to Queued (a Kubernetes whole-job restart): it holds no cards here, and Mark as
    lost is for running or stopping jobs; until review64 its Stop sent staff there."""
    job = remote_job(alice, backend="kubernetes", status=JobStatus.QUEUED, external_id="pj-4")

    assert job_stop(job=job, actor=alice) is True

    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    with translation.override("en"):
        assert job.status_reason_shown == (
            "Stopped here only: its platform (Kubernetes) is not configured on this console, so "
            "nothing was sent to it. If the job runs there, stop it there."
        )


def test_the_job_list_offers_the_not_configured_filter_only_while_such_jobs_run(alice, reviewer):
    """A local-only console, its remote backends never set up, offered it always."""
    client = english(reviewer)
    remote_job(alice, status=JobStatus.SUCCEEDED)

    before = client.get(CHANGELIST).content.decode()
    remote_job(alice)
    after = client.get(CHANGELIST).content.decode()

    assert "Not configured: running or stopping" not in before
    assert "Not configured: running or stopping" in after


def test_a_delete_of_a_job_stuck_stopping_with_a_platform_id_says_its_platform_is_not_configured(
    alice,
):
    job = remote_job(alice, backend="kubernetes", status=JobStatus.STOPPING, external_id="pj-5")

    with translation.override("en"):
        said = job_delete_refusal(job)

    assert said.startswith(
        "The job is stopping, and its platform (Kubernetes) is not configured on this console"
    )


def test_the_owners_page_of_a_queued_job_of_such_a_platform_says_nothing_of_mark_as_lost(
    alice, alice_en
):
    """Its Stop ends it at once: it holds no cards, and Mark as lost is not for it."""
    job = remote_job(alice, backend="kubernetes", status=JobStatus.QUEUED, external_id="pj-6")

    page = alice_en.get(f"/jobs/{job.public_id}/").content.decode()

    assert page.count("platform-not-configured") == 0


def test_the_admin_page_of_a_queued_job_of_such_a_platform_says_nothing_of_it(alice, reviewer):
    """It said a Stop cannot reach it, which ends it at once."""
    job = remote_job(alice, backend="kubernetes", status=JobStatus.QUEUED, external_id="pj-7")

    page = english(reviewer).get(f"{CHANGELIST}{job.pk}/change/").content.decode()

    assert "platform-not-configured" not in page and "review-mark_lost" not in page


def test_a_delete_of_a_job_stuck_stopping_and_looked_for_says_nothing_will_look(alice):
    """A create of it got no clear answer, so a configured platform's worker would look for it;
    nothing will here (it said when it would be looked for)."""
    job = remote_job(alice, backend="kubernetes", status=JobStatus.STOPPING)
    JobEvent.objects.create(job=job, reason="SubmitTimedOut", message="no answer")

    with translation.override("en"):
        said = job_delete_refusal(job)

    assert said.startswith(
        "The job is stopping, and its platform (Kubernetes) is not configured on this console"
    )


# -- Delete of an ended job (CI of session 55: the operator's "KUBERNETES_API_URL is not set") --


def test_deleting_a_job_that_may_be_on_kubernetes_not_configured_deletes_it_here_saying_so(
    alice, alice_en
):
    """A queued job whose create got no clear answer: the Delete stops it here only, and until
    now kept it, saying "KUBERNETES_API_URL is not set (and the console does not run in a pod,
    …)" in English on every page language, for as long as Kubernetes stayed unset."""
    job = remote_job(alice, backend="kubernetes", status=JobStatus.QUEUED)
    JobEvent.objects.create(job=job, reason="SubmitTimedOut", message="no answer")

    page = alice_en.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"}, follow=True)

    assert page.status_code == 200
    assert [str(m) for m in page.context["messages"]] == [
        f"Job {job.task_name} deleted here only: its platform (Kubernetes) is not configured on "
        "this console, so nothing was removed there. If the job is still there, delete it there."
    ]
    assert not Job.objects.filter(pk=job.pk).exists()
    assert DeletedJob.objects.filter(public_id=job.public_id).exists()


def test_deleting_an_ended_job_never_sent_to_a_platform_not_configured_just_deletes_it(
    alice, alice_client
):
    """Nothing of it can be on its platform: deleted, with no word of that platform."""
    job = remote_job(alice, backend="aihc", status=JobStatus.STOPPED)

    page = alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"}, follow=True)

    assert page.status_code == 200
    assert [str(m) for m in page.context["messages"]] == [f"任务 {job.task_name} 已删除。"]
    assert not Job.objects.filter(pk=job.pk).exists()


def test_delete_selected_says_in_chinese_which_jobs_were_deleted_here_only(alice, alice_client):
    sent = remote_job(alice, backend="kubernetes", status=JobStatus.FAILED, external_id="pj-8")
    unsent = remote_job(alice, backend="aihc", status=JobStatus.STOPPED)

    page = alice_client.post(
        "/jobs/bulk/",
        {"action": "delete", "confirmed": "1", "jobs": [sent.public_id, unsent.public_id]},
        follow=True,
    )

    assert page.status_code == 200
    said = [str(m) for m in page.context["messages"]]
    assert said[-1] == (
        f"{sent.task_name} 仅在本控制台删除：Kubernetes 未在本控制台配置，未在那里删除任何内容。"
        "若任务仍在那里，请在那里删除。"
    )
    assert not Job.objects.filter(pk__in=[sent.pk, unsent.pk]).exists()


# -- review68 ---------------------------------------------------------------------------------


def test_a_delete_of_a_running_job_of_a_platform_not_configured_is_refused_and_the_job_kept(
    alice, alice_en
):
    """Deleted here, it ran on there unwatched, its card-hours no longer counted: the owner's
    Delete did what staff's Mark as lost does, which its Stop sends them to."""
    job = remote_job(alice, backend="aihc", external_id="job-123")

    asked = alice_en.post(f"/jobs/{job.public_id}/delete/")
    page = alice_en.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"}, follow=True)

    refusal = (
        "The job runs on its platform (AIHC), which is not configured on this console, so "
        "nothing can stop it there. Staff can end it here with Mark as lost (in the admin); "
        "delete it once it has ended."
    )
    assert f"This job cannot be deleted now: {refusal}" in asked.content.decode()
    assert [str(m) for m in page.context["messages"]] == [refusal]
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING
    assert not DeletedJob.objects.exists()


def test_delete_selected_says_a_running_job_of_such_a_platform_will_not_be_deleted(alice, alice_en):
    job = remote_job(alice, backend="kubernetes", external_id="pj-9")

    plan = alice_en.post("/jobs/bulk/", {"action": "delete", "jobs": [job.public_id]})
    alice_en.post("/jobs/bulk/", {"action": "delete", "confirmed": "1", "jobs": [job.public_id]})

    assert "Will not be deleted: The job runs on its platform (Kubernetes)" in plan.content.decode()
    assert Job.objects.filter(pk=job.pk).exists()


def test_a_queued_job_whose_create_got_no_clear_answer_is_asked_to_be_deleted_here_only(
    alice, alice_en
):
    """It asked "Stop this job and keep it? … the worker looks for it", then deleted it: no
    worker follows a platform not configured here."""
    job = remote_job(alice, backend="kubernetes", status=JobStatus.QUEUED)
    JobEvent.objects.create(job=job, reason="SubmitTimedOut", message="no answer")

    page = alice_en.get(f"/jobs/{job.public_id}/").content.decode()
    plan = alice_en.post("/jobs/bulk/", {"action": "delete", "jobs": [job.public_id]})

    assert (
        "Delete this job here only? Its platform (Kubernetes) is not configured on this "
        "console, so nothing is removed there"
    ) in html.unescape(page)
    assert "Stop this job and keep it?" not in html.unescape(page)
    assert (
        "Will be deleted here only: its platform (Kubernetes) is not configured on this "
        "console, so nothing is removed there."
    ) in html.unescape(plan.content.decode())


def test_the_apis_delete_of_a_job_deleted_here_only_warns_so_beside_its_result(
    alice,
    api,  # noqa: F811
):
    job = remote_job(alice, backend="aihc", status=JobStatus.FAILED, external_id="job-456")

    answer = api.request(
        "DELETE",
        f"/api/v1/aijobs/{job.public_id}",
        params=[("resourcePoolId", job.resource_pool)],
        idempotent=False,
    )

    assert answer["result"] == {"jobId": job.public_id, "jobName": "train"}
    assert answer["warnings"] == [
        {
            "code": "DeletedHereOnly",
            "message": "Job train deleted here only: its platform (AIHC) is not configured on "
            "this console, so nothing was removed there. If the job is still there, delete it "
            "there.",
        }
    ]
    assert not Job.objects.filter(pk=job.pk).exists()


def test_the_secret_of_a_kubernetes_job_deleted_here_only_is_left_for_the_worker(alice):
    """Its secret env values stayed in the cluster with no record of them."""
    job = remote_job(alice, backend="kubernetes", status=JobStatus.FAILED, external_id="pj-10")
    spec = job.job_spec()
    spec.envs = [S.Env("TOKEN", "s3cret", secret=True)]
    Job.objects.filter(pk=job.pk).update(spec=spec.to_document())
    job.refresh_from_db()

    assert job_delete(job=job, actor=alice) is True

    left = DeletedJob.objects.get(public_id=job.public_id).secret_left
    assert left.startswith("cce-a800-train/") and left.endswith("-env")


def test_the_worker_leaves_such_a_secret_quietly_until_kubernetes_is_configured(alice, caplog):
    """Not "removing Secret … failed: KUBERNETES_API_URL is not set" every minute."""
    from jobs.worker import Worker

    DeletedJob.objects.create(
        public_id="pytorchjob-gone",
        owner=alice,
        name="train",
        deleted_at=timezone.now(),
        secret_left="ns/train-env",
    )

    with caplog.at_level("INFO", logger="jobs"):
        Worker().remove_secrets_left()

    assert [r.getMessage() for r in caplog.records if "Secret" in r.getMessage()] == []
    assert DeletedJob.objects.get(public_id="pytorchjob-gone").secret_left == "ns/train-env"
