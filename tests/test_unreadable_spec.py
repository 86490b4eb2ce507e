"""A job whose stored spec this console no longer reads (an upgrade that tightened a rule, an
old backup restored): every path that reads it still works, without a 500, a failure logged on
every worker tick, or a secret shown. The scheduler's part is in tests/test_waiting.py.

Decisions: a job not yet started fails at once naming the fields (SpecUnreadable); a started
one is followed to its end without its spec (said once; no time limit, hang detection, restart
or alert); what is shown of it is masked with the secret values read loosely from the stored
JSON (all env values when which are secret cannot be told); copy, run again and resubmit
refuse, naming the fields."""

from __future__ import annotations

import logging
import uuid

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.actions import job_stop
from jobs.backends import get_backend
from jobs.backends.kubernetes import usage_file
from jobs.logs import replica_log_path
from jobs.models import Draft, Job, JobReplica, JobStatus, ReviewState
from jobs.services import jobs_submit
from jobs.shim import read_usage
from jobs.texts import display_text, recorded, source_of
from jobs.worker import Worker
from tests.fake_kubernetes import FakeKubernetes
from tests.fake_kubernetes import configure as configure_kubernetes

from . import test_aihc_backend, test_kubernetes_backend
from .runner_helpers import (
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
)
from .test_aihc_backend import seed_spec, submitted

# The AIHC tests' fixtures: a strict fake AIHC with pool cce-pool1, and the console's backend.
fake, aihc = test_aihc_backend.fake, test_aihc_backend.aihc

pytestmark = pytest.mark.usefixtures("runner_settings")


@pytest.fixture(autouse=True)
def stored_in_english(settings):
    settings.LANGUAGE_CODE = "en"  # what events store; pages are read in either language


SECRET = "hunter2-topsecret"
BROKEN_FIELD = "roles[0].replicas"


def unreadable(job: Job) -> Job:
    """The job's stored spec as an older console may have left it: one this one refuses."""
    stored = Job.objects.get(pk=job.pk).spec
    stored["console"]["roles"][0]["replicas"] = "many"
    Job.objects.filter(pk=job.pk).update(spec=stored)
    job.refresh_from_db()
    return job


def local_job(owner, *, status: str = JobStatus.QUEUED, command: str = "true") -> Job:
    """A local job with a secret env and a plain one, whose spec no longer reads."""
    spec = make_spec(command, envs=[S.Env("TOKEN", SECRET, secret=True), S.Env("MODE", "fast")])
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    Job.objects.filter(pk=job.pk).update(status=status)
    return unreadable(job)


def with_log(job: Job, line: str) -> None:
    """A replica log holding `line` as a replica wrote it (as an older runner may have left
    it, unmasked)."""
    JobReplica.objects.get_or_create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"2026-11-30T09:00:00.000000Z {line}\n")


def client_of(user, language: str = "en") -> Client:
    client = Client()
    client.force_login(user)
    client.cookies["django_language"] = language
    return client


def shown(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


# -- secrets ------------------------------------------------------------------------------


def test_the_log_tail_of_a_job_whose_spec_no_longer_reads_still_masks_its_secret_values(
    alice, settings
):
    job = local_job(alice, status=JobStatus.SUCCEEDED)
    with_log(job, f"token is {SECRET}, mode fast")

    response = client_of(alice).get(
        reverse("job-logs", args=[job.public_id]),
        {"replica": "master-0"},
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 286  # an ended job's log: shown, and no longer polled
    page = response.content.decode()
    assert SECRET not in page
    assert "token is ******, mode fast" in page  # a plain env value is not masked


def test_when_a_stored_spec_says_nothing_readable_of_which_envs_are_secret_every_env_is_masked():
    document = {
        "jobSpec": {
            "envs": [{"name": "A", "value": "first-value"}, {"name": "B", "value": 12345}],
            "imageConfig": {"username": "me", "password": "registry-pass"},
        },
        "console": {"secretEnvs": "A"},  # not a list: which are secret cannot be told
    }

    assert S.stored_secret_values(document) == ["first-value", "12345", "registry-pass"]


def test_a_stored_spec_that_no_longer_parses_gives_the_values_its_secret_env_names_list():
    document = {
        "jobSpec": {
            "replicas": "many",  # what no longer parses
            "envs": [{"name": "TOKEN", "value": SECRET}, {"name": "MODE", "value": "fast"}],
        },
        "console": {"secretEnvs": ["TOKEN"]},
    }

    assert S.stored_secret_values(document) == [SECRET]


# -- copy, run again, resubmit ---------------------------------------------------------------


def test_copying_a_job_whose_spec_no_longer_reads_says_which_fields_and_makes_no_draft(alice, db):
    job = local_job(alice, status=JobStatus.FAILED)

    response = client_of(alice, "zh-hans").post(reverse("job-copy", args=[job.public_id]))

    assert response.status_code == 302
    assert response["Location"] == reverse("job-detail", args=[job.public_id])
    assert shown(response) == [f"该任务保存的配置无法读取（字段：{BROKEN_FIELD}），不能复制。"]
    assert not Draft.objects.exists()


def test_running_again_a_job_whose_spec_no_longer_reads_says_which_fields_and_submits_nothing(
    alice, db
):
    job = local_job(alice, status=JobStatus.SUCCEEDED)

    response = client_of(alice).post(reverse("job-rerun", args=[job.public_id]))

    assert response.status_code == 302
    assert shown(response) == [
        f"It cannot run again now: This job's stored spec cannot be read (fields: "
        f"{BROKEN_FIELD}), so it cannot run again."
    ]
    assert Job.objects.count() == 1


def test_a_reviewer_resubmitting_a_rejected_job_whose_spec_no_longer_reads_is_told_why(
    alice, superuser
):
    job = local_job(alice, status=JobStatus.REJECTED)

    response = client_of(superuser).post(
        reverse("admin:jobs_job_changelist"),
        {"action": "resubmit_jobs", "_selected_action": [job.pk], "post": "yes"},
    )

    assert response.status_code == 302
    assert any(
        f"{job.public_id}: This job's stored spec cannot be read (fields: {BROKEN_FIELD})" in m
        for m in shown(response)
    )
    assert status_of(job) == JobStatus.REJECTED


def held(job: Job) -> Job:
    """The job as the review policy holds it: Pending review, waiting for a reviewer."""
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.PENDING_REVIEW, review_state=ReviewState.PENDING
    )
    job.refresh_from_db()
    return job


def test_a_reviewer_approving_a_job_whose_spec_no_longer_reads_from_its_page_is_told_why(
    alice, reviewer
):
    job = held(local_job(alice, status=JobStatus.PENDING_REVIEW))
    changed = f"/admin/jobs/job/{job.pk}/change/"

    response = client_of(reviewer, "zh-hans").post(
        reverse("admin:jobs_job_changelist"),
        {"action": "approve_jobs", "_selected_action": [job.pk], "post": "yes", "_single": "1"},
    )

    assert response.status_code == 302
    assert response["Location"] == changed
    assert shown(response) == [
        f"{job.public_id}: 该任务保存的配置无法读取（字段：{BROKEN_FIELD}），不能批准。"
        "请驳回该任务，由提交者新建草稿重新提交。"
    ]
    job.refresh_from_db()
    assert (job.status, job.review_state) == (JobStatus.PENDING_REVIEW, ReviewState.PENDING)
    assert not job.events.filter(reason="Approved").exists()


def test_approving_in_bulk_approves_the_others_and_names_the_job_whose_spec_no_longer_reads(
    alice, reviewer
):
    broken = held(local_job(alice, status=JobStatus.PENDING_REVIEW))
    [fine] = jobs_submit(owner=alice, spec=make_spec("true"), submit_key=str(uuid.uuid4()))
    held(fine)

    response = client_of(reviewer).post(
        reverse("admin:jobs_job_changelist"),
        {"action": "approve_jobs", "_selected_action": [broken.pk, fine.pk], "post": "yes"},
    )

    assert response.status_code == 302
    assert shown(response) == [
        "1 job approved and queued.",
        f"{broken.public_id}: This job's stored spec cannot be read (fields: {BROKEN_FIELD}), "
        "so it cannot be approved. Reject it: its owner submits it again from a new draft.",
    ]
    assert status_of(broken) == JobStatus.PENDING_REVIEW
    assert status_of(fine) == JobStatus.QUEUED


# -- the worker and the local runner ----------------------------------------------------------


def started(owner, worker: Worker, command: str, **changes) -> Job:
    spec = make_spec(command, envs=[S.Env("TOKEN", SECRET, secret=True)], **changes)
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="the job to run")
    return unreadable(job)


def test_a_running_local_job_whose_spec_no_longer_reads_runs_to_its_end_saying_so_once(
    alice, settings, caplog
):
    worker = Worker()
    job = started(alice, worker, UNTIL_THE_GATE_OPENS)

    for _ in range(5):
        worker.tick()
    open_gate(settings)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to end")

    [said] = job.events.filter(reason="SpecUnreadable")
    assert said.type == "Warning"
    assert said.message == (
        f"Its stored spec can no longer be read (fields: {BROKEN_FIELD}). It is followed until "
        "it ends without it: no time limit, hang detection, restart or alert of the spec "
        "applies."
    )
    assert "supervising" not in caplog.text


def test_a_running_mpi_job_whose_spec_no_longer_reads_ends_once_its_launcher_has(alice, settings):
    # Its workers serve the launcher until the runner marks the launcher's end, which it
    # must do without the spec too: they would otherwise serve, and the job run, for ever.
    worker = Worker()
    job = started(
        alice,
        worker,
        UNTIL_THE_GATE_OPENS,
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )

    open_gate(settings)

    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to end")


def test_stopping_a_running_local_job_whose_spec_no_longer_reads_ends_its_processes(
    alice, settings
):
    worker = Worker()
    job_token = uuid.uuid4().hex
    job = started(alice, worker, f"{UNTIL_THE_GATE_OPENS} # {job_token}")
    assert processes_with(job_token)

    assert job_stop(job=job, actor=alice)
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, what="the job to stop")

    assert processes_with(job_token) == []


def test_a_failing_local_job_whose_spec_no_longer_reads_fails_without_a_restart(alice, settings):
    worker = Worker()
    # Its spec asked for restarts: they are in the spec that no longer reads.
    job = started(alice, worker, f"{UNTIL_THE_GATE_OPENS}; exit 3", fault_tolerance=True)

    open_gate(settings)
    run_until(worker, lambda: status_of(job) == JobStatus.FAILED, what="the job to fail")

    job.refresh_from_db()
    assert job.restarts == 0
    assert job.events.latest("created_at", "id").message == "master-0 exited with code 3."


# -- a remote backend (AIHC, its strict fake) ---------------------------------------------


@pytest.fixture
def english():
    with translation.override("en"):
        yield


def test_a_queued_aihc_job_whose_spec_no_longer_reads_fails_naming_the_fields_and_is_not_sent(
    fake, aihc, alice, english
):
    [job] = jobs_submit(owner=alice, spec=seed_spec(), submit_key=str(uuid.uuid4()), backend="aihc")
    unreadable(job)

    Worker().dispatch_remote()

    assert status_of(job) == JobStatus.FAILED
    assert job.events.latest("created_at", "id").reason == "SpecUnreadable"
    assert fake.calls("CreateJob") == []


def test_a_running_aihc_job_whose_spec_no_longer_reads_is_followed_to_its_end(
    fake, aihc, alice, english
):
    job = submitted(fake, aihc, alice)
    fake.set_job_status(job.external_id, "Running")
    unreadable(job)

    aihc.sync(job)
    aihc.sync(job)
    fake.set_job_status(job.external_id, "Succeeded")
    aihc.sync(job)

    assert status_of(job) == JobStatus.SUCCEEDED
    assert job.events.filter(reason="SpecUnreadable").count() == 1


def test_a_stop_aihc_does_not_answer_of_a_job_whose_spec_no_longer_reads_is_taken(
    fake, aihc, alice, english
):
    job = submitted(fake, aihc, alice, envs=[S.Env("TOKEN", SECRET, secret=True)])
    fake.set_job_status(job.external_id, "Running")
    aihc.sync(job)
    unreadable(job)
    fake.fail_next("StopJob", status=500, code="InternalError", message=f"echo {SECRET}")

    aihc.stop(job)

    assert status_of(job) == JobStatus.STOPPING
    stopping = job.events.get(reason="Stopping")
    assert SECRET not in stopping.message


# -- a remote backend (Kubernetes, its strict fake) -----------------------------------------


@pytest.fixture
def kube(settings):
    """The strict fake API server, as tests/test_kubernetes_backend.py sets it up (its `fake`
    is named for this module's AIHC one)."""
    kube = FakeKubernetes().start()
    kube.add_node("gpu-1", {"nvidia.com/gpu": "8"}, labels={"gpu": "a800"})
    kube.add_node("gpu-2", {"nvidia.com/gpu": "8"}, labels={"gpu": "a800"})
    configure_kubernetes(
        settings,
        kube,
        KUBERNETES_NAMESPACES="default",
        KUBERNETES_ACCELERATORS=f"{test_kubernetes_backend.A800}=nvidia.com/gpu;gpu=a800",
        KUBERNETES_VOLUMES="pfs=datasets",
    )
    yield kube
    kube.stop()


def test_stopping_a_kubernetes_job_whose_spec_no_longer_reads_deletes_its_resource(kube, alice):
    k8s = get_backend("kubernetes")
    job = unreadable(test_kubernetes_backend.submitted(alice, k8s))
    name = job.external_id

    k8s.stop(job)

    assert status_of(job) == JobStatus.STOPPING
    assert kube.jobs() == []
    assert kube.secret(f"{name}-env") is None


def test_deleting_a_kubernetes_job_whose_spec_no_longer_reads_removes_it_from_the_cluster(
    kube, alice
):
    k8s = get_backend("kubernetes")
    job = unreadable(test_kubernetes_backend.submitted(alice, k8s))
    name = job.external_id

    k8s.delete(job)

    assert kube.jobs() == []
    assert kube.secret(f"{name}-env") is None


def test_a_queued_kubernetes_job_whose_spec_no_longer_reads_fails_naming_the_fields_unsent(
    kube, alice
):
    [job] = jobs_submit(
        owner=alice,
        spec=test_kubernetes_backend.spec(),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )
    unreadable(job)

    Worker().dispatch_remote()

    assert status_of(job) == JobStatus.FAILED
    failed = job.events.latest("created_at", "id")
    assert (failed.reason, failed.message) == (
        "SpecUnreadable",
        f"Its stored spec can no longer be read (fields: {BROKEN_FIELD}), so it cannot start. "
        "Submit it again from a new draft.",
    )
    assert kube.jobs() == [] and kube.calls("create secrets") == []


def test_a_running_pytorchjob_whose_spec_no_longer_reads_is_followed_to_succeeded_saying_so_once(
    kube, alice, caplog, settings
):
    settings.KUBERNETES_METRICS_SECONDS = 0  # usage read at every sync
    worker = Worker()
    job = test_kubernetes_backend.submitted(alice, get_backend("kubernetes"))
    name = job.external_id
    kube.set_conditions(name, ("Created", "created"), ("Running", "PyTorchJob is running."))
    [master, _worker] = kube.run_pods(name)
    worker.sync_remote()
    assert status_of(job) == JobStatus.RUNNING
    unreadable(job)

    kube.set_usage(master, cpu="1500m", memory="2Gi", stamp="2099-01-01T00:00:00Z")
    kube.add_event("Pod", master, "Pulled", "token hf_secret_value pulled")
    for _ in range(3):
        worker.sync_remote()
    assert status_of(job) == JobStatus.RUNNING
    kube.set_conditions(name, ("Succeeded", "PyTorchJob succeeded."))
    kube.set_pod_phase(master, "Succeeded")
    worker.sync_remote()

    assert status_of(job) == JobStatus.SUCCEEDED
    [said] = job.events.filter(reason="SpecUnreadable")
    assert said.type == "Warning"
    assert said.message == (
        f"Its stored spec can no longer be read (fields: {BROKEN_FIELD}). It is followed until "
        "it ends without it: the time limit Kubernetes was sent still applies (and a custom "
        "job's restarts), the console's restarts and the spec's alerts do not."
    )
    assert job.events.get(reason="Succeeded").message == (
        "Kubernetes reports Succeeded: PyTorchJob succeeded."
    )
    assert job.events.get(reason="K8s:Pulled").message == f"{master}: token ****** pulled"
    assert sorted(job.replicas.values_list("role", "status")) == [
        ("master", "succeeded"),
        ("worker", "stopped"),
    ]
    last = read_usage(usage_file(job.public_id, "master-0"), last=1)
    assert [(s["cpu"], s["mem"]) for s in last] == [(1.5, 2 * 2**30)]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_kubernetes_follow_recorded_in_its_words_before_fix107_is_still_said_in_chinese(
    settings,
):
    # Recorded in English (the console's language then), as the release before fix107 put it.
    settings.LANGUAGE_CODE = "en"
    old = recorded(
        "Its stored spec can no longer be read (fields: %(fields)s). It is followed until it "
        "ends without it: the time limit and restarts Kubernetes was sent still apply, no alert "
        "of the spec does.",
        fields="envs",
    )

    with translation.override("zh-hans"):
        assert display_text(old, source_of(old)) == (
            "该任务保存的配置已无法读取（字段：envs）。控制台继续跟踪它直到结束：已发送给 "
            "Kubernetes 的运行时限和重启仍然生效，配置中的告警不再生效。"
        )


def test_a_custom_kubernetes_job_whose_spec_no_longer_reads_has_its_instances_by_the_jobset(
    kube, alice
):
    k8s = get_backend("kubernetes")
    job = test_kubernetes_backend.submitted(alice, k8s, **test_kubernetes_backend.custom())
    job = unreadable(job)
    name = job.external_id
    kube.run_pods(name)
    kube.set_jobset_status(
        name, {"trainer": {"active": 2, "ready": 2}, "param-server": {"active": 1}}
    )

    k8s.sync(job)

    assert status_of(job) == JobStatus.RUNNING
    assert sorted(job.replicas.values_list("role", "index", "status")) == [
        ("param-server", 0, "running"),
        ("trainer", 0, "running"),
        ("trainer", 1, "running"),
    ]


def test_the_logs_of_a_kubernetes_job_whose_spec_no_longer_reads_are_read_masked(kube, alice):
    k8s = get_backend("kubernetes")
    job = unreadable(test_kubernetes_backend.submitted(alice, k8s))
    [_master, worker] = kube.run_pods(job.external_id)
    kube.add_logs(worker, ["epoch 1 token hf_secret_value"])

    assert k8s.logs(job, "worker-0", tail=10) == ["epoch 1 token ******"]
    [call] = kube.calls("log pods")
    assert call.param("container") == "pytorch"


def test_a_kubernetes_job_whose_spec_no_longer_reads_and_is_gone_from_the_cluster_is_lost(
    kube, alice
):
    k8s = get_backend("kubernetes")
    job = unreadable(test_kubernetes_backend.submitted(alice, k8s))
    del kube.objects[("pytorchjobs", "default", job.external_id)]

    k8s.sync(job)

    assert status_of(job) == JobStatus.FAILED
    assert job.events.get(reason="Lost").message.startswith(
        f"Kubernetes no longer has {job.external_id}: it may have been deleted outside the console"
    )


def test_a_spec_whose_secret_env_names_name_no_env_masks_every_env():
    # Found in QA (round 33): "token" for TOKEN masked nothing in a refused body shown again.
    document = {
        "jobSpec": {
            "envs": [{"name": "TOKEN", "value": SECRET}, {"name": "MODE", "value": "fast"}],
        },
        "console": {"secretEnvs": ["token"]},  # a typo: which env it meant cannot be told
    }

    assert S.stored_secret_values(document) == [SECRET, "fast"]
