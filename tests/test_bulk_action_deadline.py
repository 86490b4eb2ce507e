"""Stop selected and Delete selected have one deadline for the whole (BULK_ACTION_SECONDS):
each platform call is bounded, but they went one after another, so N jobs of a platform that
did not answer held the page N times the bound (until left42). Past the deadline no platform
is asked: a stop is left to the worker (the job Stopping), a delete not done (the job kept as
it was, the page saying how many and to delete them again). A job whose action waits on no
platform (a local one) is still done. Against the strict AIHC fake, with short timeouts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from jobs.backends import remote
from jobs.models import Job, JobStatus
from jobs.worker import Worker
from tests import test_log_download_hung_platform as hung_aihc
from tests.runner_helpers import runner_settings  # noqa: F401
from tests.test_admin import client_for, confirm
from tests.test_delete_hung_platform import english, running_aihc_jobs  # noqa: F401
from tests.test_job_pages import submit

aihc = hung_aihc.aihc

pytestmark = pytest.mark.usefixtures("runner_settings", "english")

BULK = reverse("job-bulk")


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def bulk(client, action: str, jobs: list[Job]):
    """The action on the list, confirmed: the page it ends on."""
    page = client.post(
        BULK,
        {"action": action, "jobs": [job.public_id for job in jobs], "confirmed": "1"},
        follow=True,
    )
    assert page.status_code == 200
    return page


@pytest.fixture
def hung_jobs(aihc, alice, settings):
    """A local job (the oldest: its turn comes last) and six AIHC jobs Running there; AIHC's
    first answer to come is held past the page's 0.5 s try, and the whole has 0.2 s."""
    local = submit(alice, name="local-one")
    jobs = running_aihc_jobs(aihc, alice, 6, settings)
    settings.AIHC_PAGE_READ_TIMEOUT = 0.5
    settings.BULK_ACTION_SECONDS = 0.2
    return local, jobs


def test_stop_selected_asks_aihc_until_its_time_is_up_and_leaves_the_rest_to_the_worker(
    aihc, alice, alice_en, hung_jobs, monkeypatch
):
    local, jobs = hung_jobs
    aihc.delay_next("StopJob", 6.0)

    page = bulk(alice_en, "stop", [local, *jobs])

    # One platform asked, the newest job's stop, once: its 0.5 s try outlasts the 0.2 s, so
    # no other stop is sent (until left42 six of them, one by one, each waited out).
    assert [call.route["job"] for call in aihc.calls("StopJob")] == [jobs[-1].external_id]
    assert [Job.objects.get(pk=job.pk).status for job in jobs] == [JobStatus.STOPPING] * 6
    assert Job.objects.get(pk=local.pk).status == JobStatus.STOPPED  # no platform to wait on
    assert said(page) == [
        "Stop requested for 7 jobs. Time ran out (0.2 s) before 5 jobs' platforms were "
        "asked: they show Stopping, and the worker sends their stops."
    ]
    # The newest first: train-5's stop was sent (and not answered), the others' were not.
    assert "Stop selected ran out of time before it was sent" in (
        Job.objects.get(pk=jobs[0].pk).status_reason
    )
    assert "AIHC did not answer it yet" in Job.objects.get(pk=jobs[-1].pk).status_reason

    monkeypatch.setattr(remote, "STOP_RESEND", timedelta(0))
    Worker().sync_remote()  # sends every stop not sent (and the unanswered one again)
    Worker().sync_remote()  # AIHC reports them ended

    sent = [call.route["job"] for call in aihc.calls("StopJob")]
    assert sorted(sent[1:]) == sorted(job.external_id for job in jobs[:-1])  # once each
    assert [Job.objects.get(pk=job.pk).status for job in jobs] == [JobStatus.STOPPED] * 6


def test_delete_selected_keeps_the_jobs_it_had_no_time_to_ask_aihc_about_untouched(
    aihc, alice, alice_en, hung_jobs, settings
):
    local, jobs = hung_jobs
    aihc.delay_next("DeleteJob", 6.0)
    events = {job.pk: job.events.count() for job in jobs}

    page = bulk(alice_en, "delete", [local, *jobs])

    # One platform asked, once (as for Stop selected): no other delete is sent.
    assert [call.route["job"] for call in aihc.calls("DeleteJob")] == [jobs[-1].external_id]
    assert not Job.objects.filter(pk=local.pk).exists()  # no platform to wait on
    kept = Job.objects.filter(pk__in=[job.pk for job in jobs])
    assert kept.count() == 6
    assert {job.status for job in kept} == {JobStatus.RUNNING}  # as they were
    assert {job.pk: job.events.count() for job in kept} == events
    messages = said(page)
    assert messages[0] == "Deleted 1 job."
    assert (
        "5 jobs were not deleted: time ran out (0.2 s) before their platforms were asked. "
        "They are kept as they were; select them and delete them again."
    ) in messages
    assert sum("AIHC gave the delete no clear answer" in m for m in messages) == 1

    settings.BULK_ACTION_SECONDS = 30
    again = bulk(alice_en, "delete", jobs)

    assert said(again)[0] == "Deleted 6 jobs."
    assert not Job.objects.filter(pk__in=[job.pk for job in jobs]).exists()


def test_delete_selected_says_in_chinese_how_many_jobs_it_kept(
    aihc, alice, alice_client, hung_jobs
):
    _local, jobs = hung_jobs
    aihc.delay_next("DeleteJob", 6.0)
    alice_client.cookies["django_language"] = "zh-hans"

    page = bulk(alice_client, "delete", jobs)

    assert (
        "5 个任务未删除：在询问其平台之前已超时（0.2 秒）。它们保持原样；请重新选中并再次删除。"
        in said(page)
    )


def test_the_admins_stop_selected_jobs_has_the_same_deadline(aihc, alice, reviewer, hung_jobs):
    local, jobs = hung_jobs
    aihc.delay_next("StopJob", 6.0)

    page = confirm(client_for(reviewer), "stop_jobs", [local, *jobs])

    assert page.status_code == 302
    # One stop sent, and not waited on past the page's try; the others left to the worker.
    assert [call.route["job"] for call in aihc.calls("StopJob")] == [jobs[-1].external_id]
    assert "AIHC did not answer it yet" in Job.objects.get(pk=jobs[-1].pk).status_reason
    assert all(
        "Stop selected ran out of time before it was sent"
        in Job.objects.get(pk=job.pk).status_reason
        for job in jobs[:-1]
    )
    assert [Job.objects.get(pk=job.pk).status for job in jobs] == [JobStatus.STOPPING] * 6
    assert Job.objects.get(pk=local.pk).status == JobStatus.STOPPED
