"""A Kubernetes whole-job restart keeps the failed run's pod logs, which its delete removes,
and the job page and the download show them before the current run's, as a local replica's
log shows its earlier attempts (fix115), against the strict fake API server."""

from __future__ import annotations

import pytest
from django.utils import translation

from jobs import spec as S
from jobs.backends.kubernetes import kept_log_file
from jobs.kubernetes import manifests as M
from jobs.logs import MAX_TAIL_BYTES, shown_lines
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


def test_the_failed_runs_pods_still_terminating_show_their_log_once(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    """review55 M3: while the failed run's pods terminate, their log was shown kept and again
    under "attempt 2 starting"."""
    job = running(fake, k8s, tolerant(alice, k8s))
    fake.add_logs(f"{job.external_id}-master-0", ["the failed run's line"])
    fake.hold_deletions = True  # the failed run's pods terminate slowly
    failed_on_kubernetes(fake, job)
    k8s.sync(job)  # the restart begun: its logs kept, its delete sent
    job.refresh_from_db()

    assert shown(k8s.logs(job, "master-0", tail=200)) == [
        "Console: master-0 attempt 1 starting",
        "the failed run's line",
    ]
    downloaded = "".join(k8s.download_lines(job, "master-0")).splitlines()
    assert downloaded[1:] == ["the failed run's line"]
    assert (job.restarts, job.status) == (1, JobStatus.RUNNING)


def test_the_current_runs_banner_is_its_pods_and_stamped_when_it_started(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    """review55 L1: the current run's banner was stamped with the time of each read."""
    job = restarted(fake, k8s, running(fake, k8s, tolerant(alice, k8s)))
    pod = fake.pods[("default", f"{job.external_id}-master-0")]
    pod["status"]["startTime"] = "2026-01-02T03:04:05Z"
    fake.add_logs(f"{job.external_id}-master-0", ["epoch 1 again"])

    lines = k8s.logs(job, "master-0", tail=2)

    assert lines[0].startswith("2026-01-02T03:04:05.000000Z ")
    assert shown(lines) == ["Console: master-0 attempt 2 starting", "epoch 1 again"]
    assert pod["metadata"]["labels"][M.RESTART_LABEL] == "1"


def test_a_secret_the_kept_tails_cut_falls_in_is_kept_in_no_part(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    """Of a failed run's log longer than MAX_TAIL_BYTES only its last are kept, and the cut
    can fall inside a secret: its second half, which no mask matches, would be kept in the
    clear. The kept tail starts at the first line that starts in it (qa111 checked it)."""
    job = running(fake, k8s, tolerant(alice, k8s))
    master = f"{job.external_id}-master-0"
    cut_line_rest = "et_value, step 40"  # of "token hf_secret_value, step 40", cut after hf_secr
    filler = "y" * 999
    # The answer's last MAX_TAIL_BYTES: the cut line's rest, then whole lines.
    count, last = divmod(MAX_TAIL_BYTES - len(cut_line_rest) - 1, len(filler) + 1)
    after_cut = [*[filler] * count, "z" * (last - 1)]
    assert len(cut_line_rest) + 1 + sum(len(line) + 1 for line in after_cut) == MAX_TAIL_BYTES
    fake.add_logs(master, ["epoch 1", f"token hf_secr{cut_line_rest}", *after_cut])

    job = restarted(fake, k8s, job)

    kept = kept_log_file(job.public_id, "master-0").read_text().splitlines()
    assert "et_value" not in "".join(kept) and "hf_secr" not in "".join(kept)
    assert kept[1:] == after_cut  # after the run's banner, from the first whole line on
    assert not job.events.filter(reason="LogsNotKept").exists()


def test_kept_logs_are_readable_by_the_console_only(fake, k8s, alice):  # noqa: F811
    """review55 L2: as the local runner's logs (jobs.shim), not 0644/0755."""
    job = restarted(fake, k8s, running(fake, k8s, tolerant(alice, k8s)))
    kept = kept_log_file(job.public_id, "master-0")

    assert kept.stat().st_mode & 0o777 == 0o640
    assert kept.parent.stat().st_mode & 0o777 == 0o750


def test_a_keep_cut_short_by_a_killed_worker_is_finished_by_the_next_for_the_rest(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    """review55 L3: the keep counted as done once any replica's file had the run's banner, so
    the replicas after the one a killed worker kept were never kept."""
    from datetime import timedelta

    from django.utils import timezone

    from jobs.backends.kubernetes import KubernetesBackend, attempt_banner, keep_record_file
    from jobs.backends.remote import STOP_RESEND
    from jobs.models import Job

    job = running(fake, k8s, tolerant(alice, k8s))
    fake.add_logs(f"{job.external_id}-master-0", ["master's line"])
    fake.add_logs(f"{job.external_id}-worker-0", ["worker's line"])
    failed_on_kubernetes(fake, job)
    # What a worker killed after keeping master-0's log leaves.
    Job.objects.filter(pk=job.pk).update(
        restarts=1, restart_begun_at=timezone.now() - STOP_RESEND - timedelta(seconds=1)
    )
    job.refresh_from_db()
    master = kept_log_file(job.public_id, "master-0")
    master.parent.mkdir(parents=True)
    master.write_text(f"{attempt_banner('master-0', 1, None)}\n")
    keep_record_file(job.public_id, 1).write_text("master-0\n")

    KubernetesBackend().sync(job)  # keeps the rest, then sends the delete again

    assert "worker's line" in kept_log_file(job.public_id, "worker-0").read_text()
    assert "master's line" not in master.read_text()  # kept once, by the first worker


def test_a_delete_while_the_logs_are_kept_leaves_no_folder_behind(
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
):
    """review55 M4: the keep's mkdir made the job's folder again after the Delete removed it,
    and it was left for good."""
    import threading

    job = running(fake, k8s, tolerant(alice, k8s))
    fake.add_logs(f"{job.external_id}-master-0", ["the failed run's line"])
    failed_on_kubernetes(fake, job)
    folder = kept_log_file(job.public_id, "master-0").parent
    release = fake.block_next("log pods")

    def a_delete_meanwhile() -> None:
        # Once the keep reads a log: the job's Delete removes its files (KubernetesBackend
        # .delete's clean-up, the part that needs no database), then the log is answered.
        while not any(r.op == "log pods" for r in list(fake.requests)):
            threading.Event().wait(0.01)
        k8s.delete_kept_files(job)
        release.set()

    deleting = threading.Thread(target=a_delete_meanwhile)
    deleting.start()
    k8s.sync(job)  # the restart begun: its logs kept while the Delete came
    deleting.join()

    assert not folder.exists()


def test_a_keep_that_runs_out_of_time_names_the_replicas_not_kept_and_the_restart_counts_from_its_delete(  # noqa: E501
    fake,  # noqa: F811
    k8s,  # noqa: F811
    alice,
    english,  # noqa: F811
    settings,
):
    """review55 M5: the keep read whole logs with no bound before the delete, and the
    restart's 5 minutes counted from before it."""
    from datetime import timedelta

    settings.LOG_DOWNLOAD_TOTAL_SECONDS = 1
    job = running(fake, k8s, tolerant(alice, k8s))
    fake.add_logs(f"{job.external_id}-master-0", ["a slow line"])
    fake.trickle_next("log pods", 0.5, pieces=10)  # master-0's log takes 5 s to come
    failed_on_kubernetes(fake, job)

    k8s.sync(job)  # the restart begun: its logs kept for 1 s at most, then the delete sent
    job.refresh_from_db()

    [event] = job.events.filter(reason="LogsNotKept")
    assert event.message.startswith("The logs of the failed run of master-0, worker-0 could not")
    assert ("pytorchjobs", "default", job.external_id) not in fake.objects  # deleted
    restarted_at = job.events.get(reason="Restarted").created_at
    assert job.restart_begun_at >= restarted_at + timedelta(seconds=1)
