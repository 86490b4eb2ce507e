"""A Kubernetes whole-job restart keeps the failed run's pod logs, which its delete removes,
and the job page and the download show them before the current run's, as a local replica's
log shows its earlier attempts (fix115), against the strict fake API server."""

from __future__ import annotations

import pytest
from django.utils import translation

from jobs import spec as S
from jobs.backends.kubernetes import kept_log_file
from jobs.kubernetes import manifests as M
from jobs.logs import shown_lines
from jobs.models import JobStatus
from tests.test_kubernetes_backend import (  # noqa: F401
    english,
    failed_on_kubernetes,
    fake,
    k8s,
    running,
    submitted,
)


def tolerant(owner, k8s):  # noqa: F811
    return submitted(
        owner,
        k8s,
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=2),
    )


def restarted(fake, k8s, job):  # noqa: F811
    """The job failed, restarted (its failed resource and pods deleted), and running again."""
    failed_on_kubernetes(fake, job)
    k8s.sync(job)  # the restart begun: the logs kept, the failed resource deleted
    k8s.sync(job)  # created again
    return running(fake, k8s, job)


def shown(lines: list[str]) -> list[str]:
    return [f"{'Console: ' if line.console else ''}{line.said}" for line in shown_lines(lines)]


def test_a_restarted_job_shows_its_failed_runs_log_then_the_current_runs(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    job = running(fake, k8s, tolerant(alice, k8s))
    master = f"{job.external_id}-master-0"
    fake.add_logs(master, ["epoch 1", "loss nan, token hf_secret_value"])

    job = restarted(fake, k8s, job)
    fake.add_logs(master, ["epoch 1 again"])

    assert shown(k8s.logs(job, "master-0", tail=200)) == [
        "Console: master-0 attempt 1 starting",
        "epoch 1",
        "loss nan, token ******",
        "Console: master-0 attempt 2 starting",
        "epoch 1 again",
    ]
    assert shown(k8s.logs(job, "master-0", tail=2)) == [
        "Console: master-0 attempt 2 starting",
        "epoch 1 again",
    ]
    downloaded = "".join(k8s.download_lines(job, "master-0"))
    assert downloaded.splitlines()[1:] == [
        "epoch 1",
        "loss nan, token ******",
        downloaded.splitlines()[3],
        "epoch 1 again",
    ]
    assert downloaded.splitlines()[3].endswith(" [console] master-0 attempt 2 starting")
    assert "hf_secret_value" not in kept_log_file(job.public_id, "master-0").read_text()
    assert not job.events.filter(reason="LogsNotKept").exists()


def test_the_earlier_runs_log_shows_while_the_next_runs_pod_is_not_made_yet(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    job = running(fake, k8s, tolerant(alice, k8s))
    fake.add_logs(f"{job.external_id}-worker-0", ["worker says hello"])
    failed_on_kubernetes(fake, job)
    k8s.sync(job)  # restart begun; the failed pods gone with their resource

    assert shown(k8s.logs(job, "worker-0", tail=200, say_gone=True)) == [
        "Console: worker-0 attempt 1 starting",
        "worker says hello",
    ]


def test_a_restart_whose_logs_cannot_be_read_goes_on_and_says_they_were_not_kept(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    job = running(fake, k8s, tolerant(alice, k8s))
    fake.add_logs(f"{job.external_id}-master-0", ["lost line"])
    # The console's service account may not read pods/log (its Role without it): refused.
    fake.fail_next("log pods", status=403, reason="Forbidden", message="cannot get pods/log")

    job = restarted(fake, k8s, job)

    assert (job.status, job.restarts) == (JobStatus.RUNNING, 1)
    [event] = job.events.filter(reason="LogsNotKept")
    assert event.message == (
        "The logs of the failed run of master-0 could not be kept (cannot get pods/log "
        "(Forbidden, HTTP 403)): the job is restarted all the same, and the job page shows "
        "those replicas' logs from this run on."
    )
    assert event.type == "Warning"
    with translation.override("zh-hans"):
        assert "日志" in event.message_shown
    assert "lost line" not in "\n".join(k8s.logs(job, "master-0", tail=200))
    assert kept_log_file(job.public_id, "worker-0").is_file()  # the other replica's kept


def test_deleting_the_job_removes_its_kept_logs(fake, k8s, alice):  # noqa: F811
    job = restarted(fake, k8s, running(fake, k8s, tolerant(alice, k8s)))
    kept = kept_log_file(job.public_id, "master-0")
    assert kept.is_file()

    k8s.delete(job)

    assert not kept.parent.exists()


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = str(tmp_path)


def test_a_worker_killed_after_counting_the_restart_leaves_the_next_to_keep_the_logs_once(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    from datetime import timedelta

    from django.utils import timezone

    from jobs.backends.kubernetes import KubernetesBackend
    from jobs.backends.remote import STOP_RESEND
    from jobs.models import Job

    job = running(fake, k8s, tolerant(alice, k8s))
    fake.add_logs(f"{job.external_id}-master-0", ["the failed run's line"])
    failed_on_kubernetes(fake, job)
    # What a worker killed right after committing the restart's count leaves: the restart
    # begun a while ago, its failed resource still there, its logs neither kept nor deleted.
    Job.objects.filter(pk=job.pk).update(
        restarts=1, restart_begun_at=timezone.now() - STOP_RESEND - timedelta(seconds=1)
    )
    job.refresh_from_db()

    next_worker = KubernetesBackend()
    next_worker.sync(job)  # keeps the logs, then sends the delete again
    next_worker.sync(job)  # gone: created again
    job = running(fake, k8s, job)

    lines = shown(k8s.logs(job, "master-0", tail=200))
    assert lines == ["Console: master-0 attempt 1 starting", "the failed run's line"]
    kept = kept_log_file(job.public_id, "master-0").read_text()
    assert kept.count("the failed run's line") == 1


def test_a_restarts_delete_sent_again_by_another_worker_keeps_the_logs_not_twice(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    from datetime import timedelta

    from jobs.backends.kubernetes import KubernetesBackend
    from jobs.backends.remote import STOP_RESEND
    from jobs.models import Job

    job = running(fake, k8s, tolerant(alice, k8s))
    fake.add_logs(f"{job.external_id}-master-0", ["the failed run's line"])
    failed_on_kubernetes(fake, job)
    # The restart's delete never reaches the server (nor do the client's tries again).
    fake.drop_next("delete pytorchjobs", times=10)
    k8s.sync(job)  # the restart begun, its logs kept
    job.refresh_from_db()
    Job.objects.filter(pk=job.pk).update(
        restart_begun_at=job.restart_begun_at - STOP_RESEND - timedelta(seconds=1)
    )
    job.refresh_from_db()

    assert fake.job(job.external_id)["metadata"]["labels"].get(M.RESTART_LABEL) is None
    fake.faults.pop("delete pytorchjobs")
    KubernetesBackend().sync(job)  # another worker sends the delete again

    assert ("pytorchjobs", "default", job.external_id) not in fake.objects
    kept = kept_log_file(job.public_id, "master-0").read_text()
    assert kept.count("the failed run's line") == 1
    assert kept.count("attempt 1 starting") == 1
