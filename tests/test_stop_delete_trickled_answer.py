"""A person's Stop or Delete of a Kubernetes or AIHC job (the job page's, Stop or Delete
selected) waits on its platform's answer, holding one of the console's few web threads, so
each of its requests is one short try (*_PAGE_READ_TIMEOUT). That timeout bounds each wait
for the answer's next bytes, not the whole answer: until review 46's finding was fixed, a
platform sending its answer a few bytes at a time held the page as long as it liked (a DELETE
answered in 30 pieces 0.2 s apart held a Stop 5.9 s with a read timeout of 0.3 s; a Stop of
100 selected jobs, a hundred times that). Now each request is given up once its client's
connect and page read timeouts have passed in all, and what the person sees is what a platform
that does not answer at all gets: the job Stopping, the worker sending the stop again; a
Delete kept, saying so. A page's log tail keeps reading a long answer as it comes. Against
the strict fakes, made to trickle their answers, with short timeouts."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import reverse

from jobs.models import Job, JobStatus
from tests import test_delete_hung_platform as hung_platform
from tests import test_log_download_hung_platform as hung_aihc
from tests.test_delete_hung_platform import job_with_a_secret, running_aihc_jobs

# The fakes with short page read timeouts (0.3 s: AIHC's set by running_aihc_jobs), English.
cluster, english, aihc = hung_platform.cluster, hung_platform.english, hung_aihc.aihc

# Each answer trickled comes in up to 30 pieces 0.2 s apart (each wait shorter than the
# 0.3 s read timeout): read whole, about 4.9 s for the shortest answer here (AIHC's StopJob),
# 5.8 s for the others.
GAP, PIECES = 0.2, 30
TRICKLE_AT_LEAST = 4.6
# The connect timeout (unchanged for a connection) with the read timeout: a request of a
# Stop or Delete is given up 0.8 s after it began, and the read under way then ends within
# one more gap.
CONNECT_TIMEOUT = 0.5
# The log tail test's read timeout: five gaps long, so that one slow gap on a loaded machine is
# not taken for a platform gone quiet.
LOG_READ_TIMEOUT = 1.0


@dataclass
class Platform:
    """One platform's fake, and what its Stop and Delete send and say."""

    name: str
    fake: Any
    settings: Any
    stop_op: str
    delete_op: str
    # What a Delete the platform did not answer says, the job kept (test_delete_hung_platform).
    delete_kept: str

    def running(self, owner, count: int) -> list[Job]:
        if self.name == "kubernetes":
            return [job_with_a_secret(owner, self.fake) for _ in range(count)]
        return running_aihc_jobs(self.fake, owner, count, self.settings)

    def trickle(self, op: str, *, times: int = 1) -> None:
        self.fake.trickle_next(op, GAP, pieces=PIECES, times=times)


@pytest.fixture(params=["kubernetes", "aihc"])
def platform(request, settings) -> Platform:
    settings.KUBERNETES_CONNECT_TIMEOUT = CONNECT_TIMEOUT
    settings.AIHC_CONNECT_TIMEOUT = CONNECT_TIMEOUT
    if request.param == "kubernetes":
        return Platform(
            name="kubernetes",
            fake=request.getfixturevalue("cluster"),
            settings=settings,
            stop_op="delete pytorchjobs",
            delete_op="delete pytorchjobs",
            delete_kept="Kubernetes gave the delete no clear answer: The Kubernetes API server "
            "did not answer in time (Timeout, ReadTimeout)",
        )
    return Platform(
        name="aihc",
        fake=request.getfixturevalue("aihc"),
        settings=settings,
        stop_op="StopJob",
        delete_op="DeleteJob",
        delete_kept=hung_platform.AIHC_KEPT,
    )


def pressed(client, url: str, data: dict) -> tuple[str, float]:
    """A confirmed form sent, its redirect followed: the page shown and how long it took."""
    started = time.monotonic()
    page = client.post(url, {**data, "confirmed": "1"}, follow=True)
    waited = time.monotonic() - started
    assert page.status_code == 200
    return page.content.decode(), waited


def test_a_stop_whose_answer_trickles_in_is_taken_as_one_that_got_no_answer_quickly(
    platform, alice, alice_en
):
    """The same status and reason as a stop the platform does not answer at all."""
    hung, trickled = platform.running(alice, 2)
    platform.fake.delay_next(platform.stop_op, 6.0)
    pressed(alice_en, reverse("job-stop", args=[hung.public_id]), {})
    platform.trickle(platform.stop_op)

    _page, waited = pressed(alice_en, reverse("job-stop", args=[trickled.public_id]), {})

    assert waited < TRICKLE_AT_LEAST / 2  # one 0.8 s bound; read whole: 4.6 s or more
    hung.refresh_from_db()
    trickled.refresh_from_db()
    assert trickled.status == hung.status == JobStatus.STOPPING
    assert "did not answer it yet" in trickled.status_reason
    assert trickled.status_reason == hung.status_reason
    assert len(platform.fake.calls(platform.stop_op)) == 2  # one try each: the worker resends


def test_a_delete_whose_answer_trickles_in_keeps_the_job_as_one_that_got_no_answer_quickly(
    platform, alice, alice_en
):
    [job] = platform.running(alice, 1)
    platform.trickle(platform.delete_op)

    page, waited = pressed(alice_en, reverse("job-delete", args=[job.public_id]), {})

    assert waited < TRICKLE_AT_LEAST / 2
    assert platform.delete_kept in page
    assert Job.objects.filter(pk=job.pk).exists()  # kept: nothing lost

    again, _waited = pressed(alice_en, reverse("job-delete", args=[job.public_id]), {})

    # The platform had carried the delete out: the second finds nothing left there.
    assert f"Job {job.name} deleted." in again
    assert not Job.objects.filter(pk=job.pk).exists()


def test_stop_selected_whose_answers_trickle_in_takes_one_short_bound_for_each_job(
    platform, alice, alice_en
):
    jobs = platform.running(alice, 2)
    platform.trickle(platform.stop_op, times=2)

    page, waited = pressed(
        alice_en,
        reverse("job-bulk"),
        {"action": "stop", "jobs": [job.public_id for job in jobs]},
    )

    assert waited < 2 * TRICKLE_AT_LEAST / 2  # two 0.8 s bounds; read whole: 9.2 s or more
    assert "Stop requested for 2 jobs." in page
    for job in jobs:
        job.refresh_from_db()
        assert job.status == JobStatus.STOPPING
        assert "did not answer it yet" in job.status_reason


def test_delete_selected_whose_answers_trickle_in_keeps_each_job_saying_so_quickly(
    platform, alice, alice_en
):
    jobs = platform.running(alice, 2)
    platform.trickle(platform.delete_op, times=2)

    page, waited = pressed(
        alice_en,
        reverse("job-bulk"),
        {"action": "delete", "jobs": [job.public_id for job in jobs]},
    )

    assert waited < 2 * TRICKLE_AT_LEAST / 2
    assert page.count(platform.delete_kept) == 2
    assert Job.objects.filter(pk__in=[job.pk for job in jobs]).count() == 2


def test_a_log_tail_whose_answer_trickles_in_past_a_stops_bound_is_still_shown_whole(
    platform, alice, alice_en
):
    """A page's log tail takes the page's short read timeout too, but not a Stop's bound on
    the whole answer: a long tail on a slow link comes as it comes (each piece within the
    read timeout)."""
    [job] = platform.running(alice, 1)
    # Each gap (0.2 s) well inside the read timeout, so a machine under load does not turn
    # a gap into a timeout; the whole answer (~5.8 s) still far past a Stop's bound (1.5 s).
    platform.settings.KUBERNETES_PAGE_READ_TIMEOUT = LOG_READ_TIMEOUT
    platform.settings.AIHC_PAGE_READ_TIMEOUT = LOG_READ_TIMEOUT
    lines = [f"step {i}" for i in range(40)]
    if platform.name == "kubernetes":
        platform.fake.add_logs(f"{job.external_id}-master-0", lines)
        platform.trickle("log pods")
    else:
        platform.fake.add_logs(job.external_id, "train-0-master-0", lines)
        platform.trickle("DescribeJobLogs")

    started = time.monotonic()
    tail = alice_en.get(
        reverse("job-logs", args=[job.public_id]),
        {"replica": "master-0"},
        headers={"HX-Request": "true"},
    )
    waited = time.monotonic() - started

    assert "step 0" in tail.content.decode() and "step 39" in tail.content.decode()
    assert waited > 2 * (
        CONNECT_TIMEOUT + LOG_READ_TIMEOUT
    )  # longer than a Stop's request may take
