"""Deleting a Kubernetes job deletes its resource, then looks at its Secret (the job's secret
env values) and deletes it when it is the job's. A person's Delete waits on those requests,
holding a web thread: until session 33 the Secret's look took the worker's three tries of
KUBERNETES_READ_TIMEOUT (91.5 s by default) when the API server hung, and then let the
Secret be, with nothing left to remove it. Now each request of a Delete is one try of
KUBERNETES_PAGE_READ_TIMEOUT; a Secret the cluster does not answer about is left to the
worker, and the person is told so. Against the strict fake, with short timeouts."""

from __future__ import annotations

import time
import uuid

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.models import DeletedJob, Job, JobStatus
from jobs.services import jobs_submit
from jobs.worker import Worker
from tests.fake_kubernetes import FakeKubernetes
from tests.fake_kubernetes import configure as configure_kubernetes


@pytest.fixture(autouse=True)
def english(settings):
    settings.LANGUAGE_CODE = "en"
    with translation.override("en"):
        yield


@pytest.fixture
def cluster(settings, tmp_path):
    fake = FakeKubernetes().start()
    # The worker's read timeout is long: a Delete that waited on it would show.
    configure_kubernetes(
        settings,
        fake,
        KUBERNETES_READ_TIMEOUT=5,
        KUBERNETES_PAGE_READ_TIMEOUT=0.3,
        KUBERNETES_METRICS_SECONDS=0,
    )
    settings.VAR_DIR = tmp_path
    yield fake
    fake.stop()


def job_with_a_secret(owner, cluster: FakeKubernetes) -> Job:
    """A PyTorchJob the worker created, Running, with its Secret of secret env values (a job
    not started yet is stopped first, and its stop deletes the Secret without a look)."""
    spec = S.JobSpec(
        name="train",
        resource_pool_id="k8s-default",
        framework=S.PYTORCH,
        image="registry.example.com/train:1.0",
        command="python train.py",
        roles=[S.Role("master", 1), S.Role("worker", 1)],
        envs=[S.Env("HF_TOKEN", "hf_secret_value", secret=True)],
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()), backend="kubernetes")
    Worker().dispatch_remote()
    job.refresh_from_db()
    cluster.set_conditions(job.external_id, ("Running", "PyTorchJob is running."))
    cluster.run_pods(job.external_id)
    Worker().sync_remote()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert cluster.secret(f"{job.external_id}-env") is not None
    cluster.requests.clear()
    return job


def test_a_delete_whose_secret_the_cluster_does_not_answer_about_is_done_and_says_so_quickly(
    cluster, alice, alice_en
):
    job = job_with_a_secret(alice, cluster)
    secret = f"{job.external_id}-env"
    cluster.delay_next("get secrets", 6.0, times=3)

    started = time.monotonic()
    page = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )
    waited = time.monotonic() - started

    assert page.status_code == 200
    assert waited < 3  # one 0.3 s look; with the worker's client: three of 5 s
    assert not Job.objects.filter(pk=job.pk).exists()
    assert cluster.jobs() == []
    assert "the worker removes it once the cluster answers" in page.content.decode()
    assert DeletedJob.objects.get(public_id=job.public_id).secret_left == f"default/{secret}"
    assert cluster.secret(secret) is not None  # not lost: left for the worker
    assert len(cluster.calls("get secrets")) == 1


def test_the_worker_removes_the_secret_a_delete_left_once_the_cluster_answers(
    cluster, alice, alice_en
):
    job = job_with_a_secret(alice, cluster)
    secret = f"{job.external_id}-env"
    cluster.delay_next("get secrets", 6.0)
    alice_en.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})
    assert cluster.secret(secret) is not None

    Worker().remove_secrets_left()

    assert cluster.secret(secret) is None
    assert DeletedJob.objects.get(public_id=job.public_id).secret_left == ""


def test_a_delete_the_cluster_answers_removes_the_secret_at_once_and_leaves_nothing(
    cluster, alice, alice_en
):
    job = job_with_a_secret(alice, cluster)

    page = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert f"Job {job.name} deleted." in page.content.decode()
    assert cluster.secret(f"{job.external_id}-env") is None
    assert DeletedJob.objects.get(public_id=job.public_id).secret_left == ""


def test_the_worker_removes_only_a_secret_still_the_deleted_jobs_not_one_of_its_name_resubmitted(
    cluster, alice, alice_en
):
    """The same job submitted again under its name is another resource and Secret (the id's
    12 hex digits in their names): the worker's pass leaves it. And a Secret at the deleted
    job's name that has become another's (removed, then made again by someone else: its id
    label not the deleted job's) is left too, the deleted job's record done with."""
    job = job_with_a_secret(alice, cluster)
    secret = f"{job.external_id}-env"
    cluster.delay_next("get secrets", 6.0)
    alice_en.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})
    again = job_with_a_secret(alice, cluster)
    cluster.secret(secret)["metadata"]["labels"]["ai-job-console/job-id"] = "someone-else"

    Worker().remove_secrets_left()

    assert again.name == job.name
    assert cluster.secret(f"{again.external_id}-env") is not None
    assert cluster.secret(secret) is not None
    assert DeletedJob.objects.get(public_id=job.public_id).secret_left == ""
