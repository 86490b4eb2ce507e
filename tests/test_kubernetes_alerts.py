"""A Kubernetes job's alerts, sent by the console from what its sync reads, against the strict
fake API server: as a local job's, once each (fix115; before, the pool refused alerts)."""

from __future__ import annotations

import logging

import pytest
from django.core import mail

from jobs import spec as S
from jobs.backends import get_backend
from jobs.backends.kubernetes import KubernetesBackend
from jobs.models import Job, JobStatus
from tests.conftest import run_queued_tasks
from tests.test_alerts import hook_server  # noqa: F401
from tests.test_kubernetes_backend import (  # noqa: F401
    english,
    failed_on_kubernetes,
    fake,
    k8s,
    running,
    submitted,
)

ALL_ITEMS = ["jobRunning", "jobSucceed", "jobFailed"]


@pytest.fixture
def webhook(settings, hook_server):  # noqa: F811
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on 127.0.0.1
    return hook_server


def alerting(owner, k8s, url: str, items: list[str], **changes):  # noqa: F811
    return submitted(
        owner,
        k8s,
        alert=S.AlertConfig(items=items, emails=["ops@example.com"], webhooks=[url]),
        **changes,
    )


def posted_events(webhook) -> list[str]:
    return [r["body"]["event"] for r in webhook.received]


def test_a_job_that_runs_and_succeeds_alerts_running_then_succeeded_once_each(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
    webhook,
    caplog,
):
    job = alerting(alice, k8s, webhook.url, ALL_ITEMS)

    with caplog.at_level(logging.DEBUG):
        job = running(fake, k8s, job)
        k8s.sync(job)  # still running: nothing new
        run_queued_tasks()
        fake.set_conditions(job.external_id, ("Succeeded", "PyTorchJob succeeded."))
        k8s.sync(job)
        k8s.sync(job)
        run_queued_tasks()
    job.refresh_from_db()

    assert job.status == JobStatus.SUCCEEDED
    assert posted_events(webhook) == ["jobRunning", "jobSucceed"]
    assert [m.subject.split("] ", 1)[-1] for m in mail.outbox] == [
        "llm-train is running",
        "llm-train succeeded",
    ]
    assert webhook.received[0]["body"]["message"] == "llm-train is running."
    assert job.events.filter(reason="AlertSent").count() == 4  # two alerts, by both channels
    # The webhook's token (its path) is never logged nor put in an event.
    assert "secret-token" not in caplog.text
    assert not job.events.filter(message__contains="secret-token").exists()


def test_a_failed_job_with_fault_tolerance_1_alerts_restarted_then_failed(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
    webhook,
):
    job = alerting(
        alice,
        k8s,
        webhook.url,
        ["jobFT", "jobFailed"],
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
    )
    job = running(fake, k8s, job)
    first = failed_on_kubernetes(fake, job)
    k8s.sync(job)  # the restart begun: its failed resource deleted
    k8s.sync(job)  # created again
    job = running(fake, k8s, job)
    run_queued_tasks()
    assert posted_events(webhook) == ["jobFT"]
    assert webhook.received[0]["body"]["message"] == (
        f"Restarting the whole job (1 of 1): Kubernetes reports Failed: {first}"
    )

    last = failed_on_kubernetes(fake, job)
    k8s.sync(job)
    k8s.sync(job)
    run_queued_tasks()
    job.refresh_from_db()

    assert job.status == JobStatus.FAILED
    assert posted_events(webhook) == ["jobFT", "jobFailed"]
    assert webhook.received[1]["body"]["message"] == (
        f"llm-train: Kubernetes reports Failed: {last} (fault-tolerance restarts used up: 1 of 1)"
    )
    assert len(mail.outbox) == 2


def test_nothing_is_sent_for_events_the_job_did_not_choose(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
    webhook,
):
    job = running(fake, k8s, alerting(alice, k8s, webhook.url, ["jobFailed"]))
    fake.set_conditions(job.external_id, ("Succeeded", "PyTorchJob succeeded."))
    k8s.sync(job)
    run_queued_tasks()
    job.refresh_from_db()

    assert job.status == JobStatus.SUCCEEDED
    assert webhook.received == []
    assert mail.outbox == []
    assert not job.events.filter(reason__startswith="Alert").exists()


def test_two_workers_syncing_the_same_job_alert_once(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
    webhook,
):
    """The move is conditional on the status each read and its alert is queued in the same
    transaction: the worker whose read is stale (the job Queued, moved to Running by the
    other meanwhile) moves nothing and queues nothing."""
    job = alerting(alice, k8s, webhook.url, ["jobRunning"])
    stale = Job.objects.get(pk=job.pk)
    fake.set_conditions(job.external_id, ("Running", "running"))
    fake.run_pods(job.external_id)

    k8s.sync(job)
    KubernetesBackend().sync(stale)  # another worker, with the job as it read it before
    run_queued_tasks()
    job.refresh_from_db()

    assert job.status == JobStatus.RUNNING
    assert posted_events(webhook) == ["jobRunning"]
    assert job.events.filter(reason="Running").count() == 1


def test_a_kubernetes_pool_takes_the_alerts_it_sends_and_refuses_those_that_never_come(
    fake,  # noqa: F811
    k8s,  # noqa: F811
):
    taken = k8s.check_spec(
        submitted_spec(
            alert=S.AlertConfig(items=["jobRunning", "jobSucceed", "jobFailed"], emails=["a@b.c"]),
        )
    )
    with_restarts = k8s.check_spec(
        submitted_spec(
            alert=S.AlertConfig(items=["jobFT"], emails=["a@b.c"]),
            fault_tolerance=True,
        )
    )
    refused = k8s.check_spec(
        submitted_spec(alert=S.AlertConfig(items=["jobHang", "jobFT", "nodeFT"], emails=["a@b.c"]))
    )

    assert "alertConfig.alertItems" not in taken
    assert "alertConfig.alertItems" not in with_restarts
    [hang, node, restart] = refused["alertConfig.alertItems"]
    assert hang.startswith("“Job hangs” never comes from a Kubernetes pool: the console detects")
    assert node.startswith("“A node of the job fails” never comes from a Kubernetes pool")
    assert restart.startswith("On a Kubernetes pool the console alerts “Job restarted by fault")
    assert "Turn fault tolerance on in step 5" in restart


def submitted_spec(**changes) -> S.JobSpec:
    from tests.test_kubernetes_backend import spec

    return spec(**changes)


@pytest.mark.parametrize(
    ("webhooks", "emails", "field", "said"),
    [
        (["http://93.184.215.14/hook"], ["a@b.c"], "alert.webhooks", "unencrypted"),
        (["http://gateway.corp/hook"], ["a@b.c"], "alert.webhooks", "wherever its host name"),
        (["https://127.0.0.1/hook"], ["a@b.c"], "alert.webhooks", "loopback, link-local"),
        (["https://169.254.169.254/latest"], ["a@b.c"], "alert.webhooks", "loopback, link-local"),
        ([], [], "alert.emails", "These alerts would reach nobody"),
    ],
)
def test_a_kubernetes_pool_refuses_alert_destinations_the_worker_never_sends_to_as_the_local_pool(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    english,  # noqa: F811
    settings,
    webhooks,
    emails,
    field,
    said,
):
    """review55 M1: the console's worker sends a Kubernetes job's alerts as a local job's, and
    refuses these at send time; the pool took them and only an AlertFailed event said so."""
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = False
    alert = S.AlertConfig(items=["jobFailed"], emails=emails, webhooks=webhooks)

    on_kubernetes = k8s.check_spec(submitted_spec(alert=alert))
    on_local = get_backend("local").check_spec(
        submitted_spec(alert=alert, resource_pool_id="local")
    )

    [message] = on_kubernetes[field]
    assert said in message
    assert on_kubernetes[field] == on_local[field]


def test_a_kubernetes_pool_takes_a_private_webhook_the_administrator_allows(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    settings,
):
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = True
    alert = S.AlertConfig(items=["jobFailed"], webhooks=["http://10.0.0.5:8080/hook"])

    errors = k8s.check_spec(submitted_spec(alert=alert))

    assert "alert.webhooks" not in errors and "alert.emails" not in errors


def test_a_restarted_job_alerts_running_once_then_its_restart(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
    webhook,
):
    """review55 M2: the restart's new resource, held by Kueue (Suspended) until admitted, moved
    the job Running → Queued → Running, and each Running sent jobRunning again."""
    job = alerting(
        alice,
        k8s,
        webhook.url,
        ["jobRunning", "jobFT"],
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=2),
    )
    job = running(fake, k8s, job)
    failed_on_kubernetes(fake, job)
    k8s.sync(job)  # the restart begun: its failed resource deleted
    k8s.sync(job)  # created again
    fake.set_conditions(job.external_id, ("Suspended", "Kueue holds the workload."))
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    job = running(fake, k8s, job)
    k8s.sync(job)
    run_queued_tasks()

    assert posted_events(webhook) == ["jobRunning", "jobFT"]
    assert job.events.filter(reason="Restarted").count() == 1


def test_a_job_kueue_suspends_and_resumes_alerts_running_once(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
    webhook,
):
    job = running(fake, k8s, alerting(alice, k8s, webhook.url, ["jobRunning"]))
    fake.set_conditions(job.external_id, ("Suspended", "Kueue preempted the workload."))
    k8s.sync(job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED

    job = running(fake, k8s, job)
    run_queued_tasks()

    assert posted_events(webhook) == ["jobRunning"]
    assert job.events.filter(reason="Running").count() == 2
