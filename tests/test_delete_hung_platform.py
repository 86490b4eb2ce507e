"""Deleting a Kubernetes job deletes its resource, then looks at its Secret (the job's secret
env values) and deletes it when it is the job's. A person's Delete waits on those requests,
holding a web thread: until session 33 the Secret's look took the worker's three tries of
KUBERNETES_READ_TIMEOUT (91.5 s by default) when the API server hung, and then let the
Secret be, with nothing left to remove it. Now each request of a Delete is one try of
KUBERNETES_PAGE_READ_TIMEOUT; a Secret the cluster does not answer about is left to the
worker, and the person is told so. An AIHC job's Delete (AIHC's DeleteJob) is one try of
AIHC_PAGE_READ_TIMEOUT too (until left39 the worker's AIHC_READ_TIMEOUT, 30 s, each job of
a Delete selected in turn); one AIHC does not answer keeps the job, saying so, and a Delete
again finishes it. Against the strict fakes, with short timeouts."""

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
from tests import test_log_download_hung_platform as hung_aihc
from tests.fake_kubernetes import FakeKubernetes
from tests.fake_kubernetes import configure as configure_kubernetes
from tests.test_api import alice_key, api, refused, wsgi  # noqa: F401
from tests.test_api_v2 import action
from tests.test_sync_unanswered_reads import AIHC_POOL, aihc_jobs

# The AIHC fake, its worker's read timeout 5 s (AIHC_PAGE_READ_TIMEOUT set in each test).
aihc = hung_aihc.aihc


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
    # One 0.3 s look; with the worker's client three of 5 s. The bound sits between the two,
    # not at the look's own time: a loaded machine adds seconds to any page.
    assert waited < 4.5
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


def test_delete_selected_on_the_list_says_which_jobs_secret_was_left_for_the_worker(
    cluster, alice, alice_en
):
    # Until left35 the list's Delete said "Deleted 1 job." and nothing of a Secret still in
    # the cluster, where the job page's Delete said it.
    job = job_with_a_secret(alice, cluster)
    cluster.delay_next("get secrets", 6.0, times=3)

    page = alice_en.post(
        reverse("job-bulk"),
        {"action": "delete", "jobs": [job.public_id], "confirmed": "1"},
        follow=True,
    )

    shown = page.content.decode()
    assert "Deleted 1 job." in shown
    assert (
        "Kubernetes did not answer when the Secret (the job&#x27;s secret env values) of train "
        "was to be removed: the worker removes it once the cluster answers."
    ) in shown
    assert not Job.objects.filter(pk=job.pk).exists()
    assert cluster.secret(f"{job.external_id}-env") is not None


def test_delete_selected_says_nothing_of_secrets_when_the_cluster_answered(
    cluster, alice, alice_en
):
    job = job_with_a_secret(alice, cluster)

    page = alice_en.post(
        reverse("job-bulk"),
        {"action": "delete", "jobs": [job.public_id], "confirmed": "1"},
        follow=True,
    )

    assert "Deleted 1 job." in page.content.decode()
    assert "Secret" not in page.content.decode()


def test_the_apis_delete_warns_beside_its_result_that_the_secret_was_left_for_the_worker(
    cluster,
    alice,
    api,  # noqa: F811
):
    v1_job, v2_job = job_with_a_secret(alice, cluster), job_with_a_secret(alice, cluster)
    cluster.delay_next("get secrets", 6.0, times=3)
    v1_answer = api.request(
        "DELETE",
        f"/api/v1/aijobs/{v1_job.public_id}",
        params=[("resourcePoolId", "k8s-default")],
        idempotent=False,
    )
    cluster.delay_next("get secrets", 6.0, times=3)
    v2_answer = action(api, "DeleteJob", resourcePoolId="k8s-default", jobId=v2_job.public_id)

    assert v1_answer["result"] == {"jobId": v1_job.public_id, "jobName": "train"}
    [v1_warning] = v1_answer["warnings"]
    assert v1_warning["code"] == "SecretLeftForWorker"
    assert v1_warning["message"] == (
        "Job train deleted. Kubernetes did not answer when its Secret (the job's secret env "
        "values) was to be removed: the worker removes it once the cluster answers."
    )
    # v2's answers are flat: `warnings` beside jobId, as a v2 create's.
    assert v2_answer["jobId"] == v2_job.public_id
    assert [w["code"] for w in v2_answer["warnings"]] == ["SecretLeftForWorker"]
    assert not Job.objects.filter(pk__in=[v1_job.pk, v2_job.pk]).exists()


def test_the_apis_delete_answers_as_aihc_does_when_the_cluster_answered(
    cluster,
    alice,
    api,  # noqa: F811
):
    job = job_with_a_secret(alice, cluster)

    answer = api.request(
        "DELETE",
        f"/api/v1/aijobs/{job.public_id}",
        params=[("resourcePoolId", "k8s-default")],
        idempotent=False,
    )

    assert set(answer) == {"requestId", "result"}


def test_a_deleted_job_whose_secret_is_still_left_is_remembered_past_its_keep_days(
    cluster, alice, alice_en, settings
):
    # Until left35 forget_deleted_jobs forgot it after DELETED_JOB_KEEP_DAYS like any other,
    # and with it the only note of the Secret still in the cluster.
    from datetime import timedelta

    from django.utils import timezone

    from jobs.actions import forget_deleted_jobs

    settings.DELETED_JOB_KEEP_DAYS = 1
    job = job_with_a_secret(alice, cluster)
    secret = f"{job.external_id}-env"
    cluster.delay_next("get secrets", 6.0, times=3)
    alice_en.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})
    long_ago = timezone.now() - timedelta(days=2)
    DeletedJob.objects.filter(public_id=job.public_id).update(deleted_at=long_ago)

    assert forget_deleted_jobs() == 0
    Worker().remove_secrets_left()
    assert cluster.secret(secret) is None
    assert forget_deleted_jobs() == 1
    assert not DeletedJob.objects.filter(public_id=job.public_id).exists()


def test_deleting_the_owner_of_a_secret_still_left_names_it_in_the_log_once(
    cluster, alice, alice_en, caplog
):
    job = job_with_a_secret(alice, cluster)
    secret = f"{job.external_id}-env"
    cluster.delay_next("get secrets", 6.0, times=3)
    alice_en.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})

    caplog.clear()  # (the Delete's own warning, that the cluster did not answer, is before)
    with caplog.at_level("WARNING"):
        alice.delete()

    said = [r.getMessage() for r in caplog.records if secret in r.getMessage()]
    assert len(said) == 1
    assert f"remove it by hand (kubectl delete secret -n default {secret})" in said[0]
    assert job.public_id in said[0]
    assert not DeletedJob.objects.filter(public_id=job.public_id).exists()


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


# -- Kubernetes: the API server's own failure or throttling -----------------------------------

KUBERNETES_AGAIN = "The job is kept here: delete it again in a moment"
API_SERVER_FAILURES = [
    (500, "InternalError"),
    (502, "BadGateway"),
    (503, "ServiceUnavailable"),
    (504, "Timeout"),
    (429, "TooManyRequests"),
]


def api_delete(api, job: Job):  # noqa: F811
    return refused(
        lambda: api.request(
            "DELETE",
            f"/api/v1/aijobs/{job.public_id}",
            params=[("resourcePoolId", "k8s-default")],
            idempotent=False,
        )
    )


@pytest.mark.parametrize(("status", "reason"), API_SERVER_FAILURES)
def test_the_apis_delete_the_api_server_answers_with_its_own_failure_is_a_503_to_send_again(
    cluster,
    alice,
    api,  # noqa: F811
    status,
    reason,
):
    """Until left41 a 409 Conflict ("Kubernetes did not delete the job"), which a script reads
    as a refusal not to retry, where AIHC's same answer was a 503 (review 47)."""
    job = job_with_a_secret(alice, cluster)
    cluster.fail_next("delete pytorchjobs", status=status, reason=reason, times=10)

    error = api_delete(api, job)
    error_v2 = refused(
        lambda: action(api, "DeleteJob", resourcePoolId="k8s-default", jobId=job.public_id)
    )

    assert (error.status, error.code) == (503, "ServiceUnavailable")
    assert (error_v2.status, error_v2.code) == (503, "ServiceUnavailable")
    assert "Kubernetes gave the delete no clear answer: " in str(error)
    assert KUBERNETES_AGAIN in str(error) and reason in str(error)
    assert Job.objects.filter(pk=job.pk).exists()


@pytest.mark.parametrize(
    ("status", "reason"), [(403, "Forbidden"), (409, "Conflict"), (422, "Invalid")]
)
def test_the_apis_delete_the_api_server_refuses_stays_a_409_saying_its_reason(
    cluster,
    alice,
    api,  # noqa: F811
    status,
    reason,
):
    job = job_with_a_secret(alice, cluster)
    cluster.fail_next("delete pytorchjobs", status=status, reason=reason, times=10)

    error = api_delete(api, job)

    assert (error.status, error.code) == (409, "Conflict")
    assert "Kubernetes did not delete the job: " in str(error) and reason in str(error)
    assert KUBERNETES_AGAIN not in str(error)
    assert Job.objects.filter(pk=job.pk).exists()


def test_a_delete_the_api_server_fails_keeps_the_job_saying_to_delete_it_again_on_its_page(
    cluster, alice, alice_en
):
    job = job_with_a_secret(alice, cluster)
    cluster.fail_next("delete pytorchjobs", status=503, reason="ServiceUnavailable", times=10)

    page = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    shown = page.content.decode()
    assert "Kubernetes gave the delete no clear answer: " in shown and KUBERNETES_AGAIN in shown
    assert Job.objects.filter(pk=job.pk).exists()
    assert cluster.jobs() != []

    cluster.faults.clear()  # the API server answers again
    again = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert f"Job {job.name} deleted." in again.content.decode()
    assert not Job.objects.filter(pk=job.pk).exists()
    assert cluster.jobs() == []


def test_a_delete_the_api_server_does_not_answer_says_to_delete_it_again_on_its_page(
    cluster, alice, alice_en
):
    """As AIHC's: the delete may have been carried out. Until review 48 the page said
    "Kubernetes did not delete the job: ... did not answer in time", which reads as a refusal
    and says nothing of deleting it again (a 5xx said so; no answer at all did not)."""
    job = job_with_a_secret(alice, cluster)
    cluster.delay_next("delete pytorchjobs", 6.0)

    page = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    shown = page.content.decode()
    assert "Kubernetes gave the delete no clear answer: " in shown and KUBERNETES_AGAIN in shown
    assert "did not answer in time" in shown
    assert "Kubernetes did not delete the job" not in shown
    assert Job.objects.filter(pk=job.pk).exists()


def test_a_delete_the_api_server_throttles_says_to_delete_it_again_in_chinese(
    cluster, alice, alice_client
):
    job = job_with_a_secret(alice, cluster)
    cluster.fail_next("delete pytorchjobs", status=429, reason="TooManyRequests", times=10)
    alice_client.cookies["django_language"] = "zh-hans"

    page = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert "Kubernetes 未对删除请求给出明确答复：" in page.content.decode()
    assert "该任务仍保留在这里：请稍后再次删除" in page.content.decode()
    assert Job.objects.filter(pk=job.pk).exists()


def test_delete_selected_of_jobs_the_api_server_fails_says_to_delete_each_again(
    cluster, alice, alice_en
):
    job = job_with_a_secret(alice, cluster)
    cluster.fail_next("delete pytorchjobs", status=500, reason="InternalError", times=10)

    page = alice_en.post(
        reverse("job-bulk"),
        {"action": "delete", "jobs": [job.public_id], "confirmed": "1"},
        follow=True,
    )

    shown = page.content.decode()
    assert shown.count(KUBERNETES_AGAIN) == 1
    assert "Deleted 1 job." not in shown
    assert Job.objects.filter(pk=job.pk).exists()


# -- AIHC: DeleteJob ---------------------------------------------------------------------------

AIHC_KEPT = "AIHC gave the delete no clear answer: AIHC did not answer in time (RequestTimeout"
AIHC_AGAIN = "The job is kept here: delete it again in a moment"


def running_aihc_jobs(aihc, owner, count: int, settings) -> list[Job]:
    settings.AIHC_PAGE_READ_TIMEOUT = 0.3
    jobs = aihc_jobs(owner, aihc, count)
    Worker().sync_remote()
    for job in jobs:
        job.refresh_from_db()
        assert job.status == JobStatus.RUNNING
    aihc.requests.clear()
    return jobs


def test_an_aihc_delete_aihc_does_not_answer_keeps_the_job_within_the_pages_short_try(
    aihc, alice, alice_en, settings
):
    [job] = running_aihc_jobs(aihc, alice, 1, settings)
    aihc.delay_next("DeleteJob", 6.0)  # carried out, then answered too late

    started = time.monotonic()
    page = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )
    waited = time.monotonic() - started

    assert page.status_code == 200
    assert waited < 4.5  # one 0.3 s try; with the worker's client one of 5 s (between the two)
    shown = page.content.decode()
    assert AIHC_KEPT in shown and AIHC_AGAIN in shown
    assert Job.objects.filter(pk=job.pk).exists()  # kept: nothing lost
    assert len(aihc.calls("DeleteJob")) == 1

    again = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert f"Job {job.name} deleted." in again.content.decode()  # AIHC: JobNotFound
    assert not Job.objects.filter(pk=job.pk).exists()


def test_an_aihc_delete_aihc_does_not_answer_says_the_job_is_kept_in_chinese(
    aihc, alice, alice_client, settings
):
    [job] = running_aihc_jobs(aihc, alice, 1, settings)
    aihc.delay_next("DeleteJob", 6.0)
    alice_client.cookies["django_language"] = "zh-hans"

    page = alice_client.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    assert "百舸 AIHC 未对删除请求给出明确答复：" in page.content.decode()
    assert "该任务仍保留在这里：请稍后再次删除" in page.content.decode()
    assert Job.objects.filter(pk=job.pk).exists()


def test_delete_selected_of_aihc_jobs_aihc_does_not_answer_takes_a_short_try_each(
    aihc, alice, alice_en, settings
):
    jobs = running_aihc_jobs(aihc, alice, 2, settings)
    aihc.delay_next("DeleteJob", 6.0, times=2)

    started = time.monotonic()
    page = alice_en.post(
        reverse("job-bulk"),
        {"action": "delete", "jobs": [job.public_id for job in jobs], "confirmed": "1"},
        follow=True,
    )
    waited = time.monotonic() - started

    assert page.status_code == 200
    assert waited < 8  # two 0.3 s tries; with the worker's client two of 5 s (between the two)
    assert page.content.decode().count(AIHC_AGAIN) == 2
    assert Job.objects.filter(pk__in=[job.pk for job in jobs]).count() == 2


def test_the_apis_delete_aihc_does_not_answer_is_a_503_to_send_again_and_keeps_the_job(
    aihc,
    alice,
    api,  # noqa: F811
    settings,
):
    """A 503, which the SDKs send again (until left39 a 409 Conflict, read as a refusal)."""
    [job] = running_aihc_jobs(aihc, alice, 1, settings)
    aihc.delay_next("DeleteJob", 6.0)

    started = time.monotonic()
    error = refused(
        lambda: api.request(
            "DELETE",
            f"/api/v1/aijobs/{job.public_id}",
            params=[("resourcePoolId", AIHC_POOL)],
            idempotent=False,
        )
    )
    waited = time.monotonic() - started

    assert waited < 4.5  # one 0.3 s try; the worker's client would wait 5 s
    assert (error.status, error.code) == (503, "ServiceUnavailable")
    assert AIHC_AGAIN in str(error)
    assert Job.objects.filter(pk=job.pk).exists()
    answer = action(api, "DeleteJob", resourcePoolId=AIHC_POOL, jobId=job.public_id)
    assert answer["jobId"] == job.public_id
    assert not Job.objects.filter(pk=job.pk).exists()


def test_a_delete_of_a_queued_aihc_job_aihc_does_not_answer_says_it_was_stopped_before_deleting(
    aihc, alice, alice_en, settings
):
    """qa112: a Delete of a job not started yet stops it first (README); AIHC answering
    neither, its event read "Stop requested; …" though its owner had asked to delete it, and
    the answer said only that the job was kept."""
    [job] = running_aihc_jobs(aihc, alice, 1, settings)
    aihc.set_job_status(job.external_id, "Pending")
    Worker().sync_remote()
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    aihc.delay_next("StopJob", 6.0)
    aihc.delay_next("DeleteJob", 6.0)

    page = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    shown = page.content.decode()
    assert (
        "The job was stopped before deleting and is kept here: delete it again in a moment"
    ) in shown
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPING  # kept, the stop sent again by the worker
    event = job.events.get(reason="Stopping")
    with translation.override("en"):
        assert event.message_shown.startswith(
            "Stopped before deleting; AIHC did not answer the stop yet (AIHC did not answer in "
            "time (RequestTimeout"
        ), event.message_shown
    asked = job.events.get(reason="StopRequested")
    with translation.override("en"):
        assert asked.message_shown == (
            "Delete requested by alice: the job is stopped before deleting."
        )


def test_an_aihc_delete_with_no_clear_answer_is_logged_in_english_and_shown_in_chinese(
    aihc, alice, settings
):
    # qa112: what the worker logged of a platform's failure (a deletion for its retention
    # period: "deleting … failed: …") quoted the message in the console's language.
    from jobs.backends import get_backend
    from jobs.backends.base import BackendError
    from jobs.backends.remote import logged_error

    [job] = running_aihc_jobs(aihc, alice, 1, settings)
    aihc.fail_next("DeleteJob", status=503, code="ServiceUnavailable", times=5)

    with translation.override("zh-hans"), pytest.raises(BackendError) as caught:
        get_backend("aihc").delete(job)

    assert caught.value.message.startswith("百舸 AIHC 未对删除请求给出明确答复：")
    assert logged_error(caught.value).startswith("AIHC gave the delete no clear answer: ")
    assert "ServiceUnavailable" in logged_error(caught.value)
    assert "该任务" not in logged_error(caught.value)


def test_an_aihc_delete_aihc_refuses_keeps_the_job_saying_aihcs_reason(
    aihc, alice, alice_en, settings
):
    [job] = running_aihc_jobs(aihc, alice, 1, settings)
    # AIHC answers at once here: a longer try than the 0.3 s, so that a machine under load
    # does not turn the refusal into "no clear answer".
    settings.AIHC_PAGE_READ_TIMEOUT = 5
    aihc.fail_next("DeleteJob", status=403, code="AccessDenied", message="not allowed here")

    page = alice_en.post(
        reverse("job-delete", args=[job.public_id]), {"confirmed": "1"}, follow=True
    )

    shown = page.content.decode()
    assert "AIHC did not delete the job: " in shown and "AccessDenied" in shown
    assert AIHC_AGAIN not in shown
    assert Job.objects.filter(pk=job.pk).exists()


def test_the_apis_delete_the_api_server_does_not_answer_is_a_503_to_send_again_too(
    cluster,
    alice,
    api,  # noqa: F811
):
    job = job_with_a_secret(alice, cluster)
    cluster.delay_next("delete pytorchjobs", 6.0)

    error = refused(
        lambda: api.request(
            "DELETE",
            f"/api/v1/aijobs/{job.public_id}",
            params=[("resourcePoolId", "k8s-default")],
            idempotent=False,
        )
    )

    assert (error.status, error.code) == (503, "ServiceUnavailable")
    assert "Kubernetes gave the delete no clear answer" in str(error)
    assert KUBERNETES_AGAIN in str(error)
    assert Job.objects.filter(pk=job.pk).exists()


@pytest.mark.parametrize(
    ("status", "code"), [(500, "InternalError"), (503, "ServiceUnavailable"), (429, "Throttling")]
)
def test_the_apis_delete_aihc_answers_with_its_own_failure_is_a_503_to_send_again_too(
    aihc,
    alice,
    api,  # noqa: F811
    settings,
    status,
    code,
):
    """AIHC answered, but with its own failure or throttling (not a refusal): the job is kept
    and its message says to delete it again in a moment, as for no answer at all; until review
    47 the API's answer was a 409 Conflict, which a script reads as a refusal not to retry."""
    [job] = running_aihc_jobs(aihc, alice, 1, settings)
    aihc.fail_next("DeleteJob", status=status, code=code, message="try later", times=10)

    error = refused(
        lambda: api.request(
            "DELETE",
            f"/api/v1/aijobs/{job.public_id}",
            params=[("resourcePoolId", AIHC_POOL)],
            idempotent=False,
        )
    )
    error_v2 = refused(
        lambda: action(api, "DeleteJob", resourcePoolId=AIHC_POOL, jobId=job.public_id)
    )

    assert (error.status, error.code) == (503, "ServiceUnavailable")
    assert (error_v2.status, error_v2.code) == (503, "ServiceUnavailable")
    assert AIHC_AGAIN in str(error) and code in str(error)
    assert Job.objects.filter(pk=job.pk).exists()
