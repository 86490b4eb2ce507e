"""Stopping a Kubernetes job deletes its resource. A person's Stop (the job page's, Stop
selected, the API's, the admin's) waits on that request, holding a web thread, so it is one
try of KUBERNETES_PAGE_READ_TIMEOUT, as a Delete's are: a delete with no answer is taken all
the same (Stopping), and the worker sends it again while the resource is there. Until
review45 it waited the worker's KUBERNETES_READ_TIMEOUT (30 s by default), each job of a Stop
selected in turn. Against the strict fake, with short timeouts."""

from __future__ import annotations

import time

from django.urls import reverse

from jobs.models import JobStatus
from tests import test_delete_hung_platform as hung_platform
from tests.test_delete_hung_platform import job_with_a_secret

# The fake with a short page read timeout, English pages (fixtures).
cluster, english = hung_platform.cluster, hung_platform.english


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
