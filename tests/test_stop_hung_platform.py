"""Stopping a Kubernetes job deletes its resource; an AIHC job's is AIHC's StopJob. A person's
Stop (the job page's, Stop selected, the API's, the admin's) waits on that request, holding a
web thread, so it is one try of *_PAGE_READ_TIMEOUT, as a Kubernetes Delete's are: a stop
with no answer is taken all the same (Stopping), and the worker sends it again while the job
runs there. Until review45 it waited the worker's *_READ_TIMEOUT (30 s by default), each job
of a Stop selected in turn. Against the strict fakes, with short timeouts."""

from __future__ import annotations

import time
from datetime import timedelta

from django.urls import reverse

from jobs.backends import remote
from jobs.models import JobStatus
from jobs.worker import Worker
from tests import test_delete_hung_platform as hung_platform
from tests import test_log_download_hung_platform as hung_aihc
from tests.test_delete_hung_platform import job_with_a_secret
from tests.test_sync_unanswered_reads import aihc_jobs

# The fakes with short page read timeouts (AIHC's set below), English pages (fixtures).
cluster, english, aihc = hung_platform.cluster, hung_platform.english, hung_aihc.aihc


def stop_pressed(client, job) -> float:
    """Stop on the job's page, confirmed; how long the page took."""
    started = time.monotonic()
    page = client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"}, follow=True)
    assert page.status_code == 200
    return time.monotonic() - started


def test_a_stop_the_api_server_does_not_answer_is_taken_within_the_pages_short_try(
    cluster, alice, alice_en
):
    job = job_with_a_secret(alice, cluster)
    cluster.delay_next("delete pytorchjobs", 6.0)

    started = time.monotonic()
    page = alice_en.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"}, follow=True)
    waited = time.monotonic() - started

    assert page.status_code == 200
    assert waited < 3  # one 0.3 s try; with the worker's client: one of 5 s
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert "Kubernetes did not answer it yet" in job.status_reason
    assert len(cluster.calls("delete pytorchjobs")) == 1  # one try: the worker sends it again


def test_an_aihc_stop_aihc_does_not_answer_is_taken_within_the_pages_short_try(
    aihc, alice, alice_en, settings
):
    settings.AIHC_PAGE_READ_TIMEOUT = 0.3
    [job] = aihc_jobs(alice, aihc, 1)
    Worker().sync_remote()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    aihc.delay_next("StopJob", 6.0)

    waited = stop_pressed(alice_en, job)

    assert waited < 3  # one 0.3 s try; with the worker's client: one of 5 s
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING
    assert "AIHC did not answer it yet" in job.status_reason
    assert len(aihc.calls("StopJob")) == 1  # one try: the worker sends it again


def test_a_kubernetes_stop_the_short_try_got_no_answer_to_is_sent_again_by_the_worker(
    cluster, alice, alice_en, monkeypatch
):
    """The page's one try was held and never carried out (review 46): the worker's sync
    deletes the job's resource itself, a STOP_RESEND after the stop (none here), and the job
    ends Stopped."""
    job = job_with_a_secret(alice, cluster)
    held = cluster.block_next("delete pytorchjobs")
    try:
        assert stop_pressed(alice_en, job) < 3
        monkeypatch.setattr(remote, "STOP_RESEND", timedelta(0))

        Worker().sync_remote()  # sends the delete again
        Worker().sync_remote()  # finds the resource gone
    finally:
        held.set()

    job.refresh_from_db()
    assert len(cluster.calls("delete pytorchjobs")) == 2
    assert job.status == JobStatus.STOPPED


def test_an_aihc_stop_the_short_try_got_no_answer_to_is_sent_again_by_the_worker(
    aihc, alice, alice_en, settings, monkeypatch
):
    settings.AIHC_PAGE_READ_TIMEOUT = 0.3
    [job] = aihc_jobs(alice, aihc, 1)
    Worker().sync_remote()
    held = aihc.block_next("StopJob")
    try:
        assert stop_pressed(alice_en, job) < 3
        monkeypatch.setattr(remote, "STOP_RESEND", timedelta(0))

        Worker().sync_remote()  # sends the stop again
        Worker().sync_remote()  # AIHC reports the job ended
    finally:
        held.set()

    job.refresh_from_db()
    assert len(aihc.calls("StopJob")) == 2
    assert job.status == JobStatus.STOPPED
