"""A backup restored as README's "Backup and restore" says, into another folder or onto another
machine: the local jobs' logs come back with it (jobs.logs.job_dir reads a job's folder in this
LOCAL_RUN_DIR once the run directory it recorded no longer holds it), and a job that was
running when the backup was taken is still left alone by the restored worker."""

from __future__ import annotations

import html
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from django.urls import reverse
from django.utils import timezone

from jobs.models import FINAL_STATUSES, Job, JobReplica, JobStatus, LocalRun
from jobs.worker import Worker

from .runner_helpers import (  # noqa: F401
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    open_gate,
    run_until,
    runner_settings,
    status_of,
    submit,
)
from .test_api import alice_key, api, wsgi  # noqa: F401


def restored(runner_settings, tmp_path, job) -> None:  # noqa: F811
    """The job's run directory moved to another folder and LOCAL_RUN_DIR set to it, as a
    restore into CONSOLE_VAR_DIR=.../var6 after a lost disk does; the old folder is gone."""
    old = runner_settings.LOCAL_RUN_DIR
    new = tmp_path / "var6" / "runs"
    new.parent.mkdir()
    shutil.move(old, new)
    runner_settings.LOCAL_RUN_DIR = new
    assert not (old / job.public_id).exists()


def test_a_finished_jobs_log_restored_into_another_folder_is_shown_downloaded_and_read_by_the_api(
    alice,
    alice_client,
    api,  # noqa: F811
    runner_settings,  # noqa: F811
    tmp_path,
):
    """qa89: after a restore into another folder every local job's log read "No output yet",
    its download was a 404 and a search found nothing, though the files were restored: the
    job recorded the run directory it started in (LocalRun.runner), which was gone."""
    runner_settings.LOCAL_RUN_DIR = tmp_path / "var3" / "runs"
    job = submit(alice, make_spec("echo trained-$((6 * 7))"))  # the page shows the command
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to end")
    restored(runner_settings, tmp_path, job)
    alice_client.cookies["django_language"] = "en"
    page_url = reverse("job-detail", args=[job.public_id])

    # The API first: the test client's requests close the connection the API's share.
    read = api.pod_logs(pool="local", job_id=job.public_id, pod=f"{job.name}-master-0")
    page = alice_client.get(page_url).content.decode()
    download = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))
    searched = alice_client.get(page_url, {"replica": "master-0", "q": "trained"})

    assert "trained-42" in page and "No output yet" not in page
    assert download.status_code == 200
    assert b"trained-42" in b"".join(download.streaming_content)
    assert "<mark>trained</mark>-42" in searched.content.decode()
    assert any("trained-42" in line for line in read)


def test_a_finished_jobs_log_restored_on_another_machine_is_shown_not_said_to_be_kept_there(
    alice,
    alice_client,
    runner_settings,  # noqa: F811
    tmp_path,
):
    """Restored on another machine, the job names the lost one: its log was said to be kept
    there, though the backup had put it here."""
    runner_settings.LOCAL_RUN_DIR = tmp_path / "var3" / "runs"
    job = submit(alice, make_spec("echo trained-$((6 * 7))"))
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to end")
    restored(runner_settings, tmp_path, job)
    LocalRun.objects.filter(job=job).update(runner="the-lost-machine:/srv/console/var/runs")
    alice_client.cookies["django_language"] = "en"

    page = html.unescape(alice_client.get(reverse("job-detail", args=[job.public_id])).text)
    download = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))

    assert "trained-42" in page
    assert "kept there" not in page and "No output yet" not in page
    assert download.status_code == 200
    assert b"trained-42" in b"".join(download.streaming_content)


def test_a_job_running_when_the_backup_was_taken_is_still_left_alone_and_its_log_is_shown(
    alice,
    alice_client,
    runner_settings,  # noqa: F811
    tmp_path,
):
    """Its replicas ran in the lost run directory: the restored worker neither launches them
    again nor fails the job (README, "What a takeover means for local jobs"), while the log the
    backup holds is read from the restored folder."""
    lost = tmp_path / "var3" / "runs"
    runner_settings.LOCAL_RUN_DIR = tmp_path / "var6" / "runs"
    job = submit(alice, make_spec("sleep 30"))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, started_at=timezone.now())
    LocalRun.objects.create(job=job, runner=f"{socket.gethostname()}:{lost}", devices={})
    JobReplica.objects.create(job=job, role="master", index=0, status="running")
    logs = runner_settings.LOCAL_RUN_DIR / job.public_id / "logs"
    logs.mkdir(parents=True)
    (logs / "master-0.log").write_text("2026-12-06T20:00:00.000Z epoch 3 of 10\n")
    worker = Worker()

    worker.tick()
    worker.note_runs_elsewhere()
    alice_client.cookies["django_language"] = "en"
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert list(job.replicas.values_list("pid", flat=True)) == [None]  # nothing launched
    assert not (runner_settings.LOCAL_RUN_DIR / job.public_id / "attempt-1").exists()
    assert job.events.filter(reason="NotFollowed").exists()
    assert "epoch 3 of 10" in page


def readme_restore_of_logs() -> str:
    """README's lines that restore the job logs (Backup and restore), as an operator pastes them."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    [block] = [
        b for b in re.findall(r"```sh\n(.*?)```", readme, re.S) if "runs.tar.gz" in b and "-x" in b
    ]
    return block


def restore_logs(var: Path) -> str:
    """Runs README's restore of the job logs in `var`'s parent (the checkout, where `backup/`
    is) with CONSOLE_VAR_DIR set to `var`; what it printed."""
    done = subprocess.run(
        ["bash", "-c", readme_restore_of_logs()],
        cwd=var.parent,
        env={**os.environ, "CONSOLE_VAR_DIR": str(var)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout + done.stderr


def backed_up(var: Path) -> None:
    """runs.tar.gz as README's backup lines make it."""
    (var.parent / "backup").mkdir()
    subprocess.run(
        ["tar", "-C", str(var), "-czf", str(var.parent / "backup" / "runs.tar.gz"), "runs"],
        check=True,
    )


def test_readmes_restore_of_logs_is_refused_while_a_job_runs_and_its_live_log_keeps_its_output(
    alice,
    runner_settings,  # noqa: F811
    tmp_path,
):
    """qa110: README's `tar -xzf` replaced a running job's live log and lock: its output went
    to the deleted file, and the worker failed it as lost (no exit, lock free) though alive."""
    var = tmp_path / "checkout" / "var"
    runner_settings.LOCAL_RUN_DIR = var / "runs"
    job = submit(
        alice, make_spec(f"echo before-backup; {UNTIL_THE_GATE_OPENS}; echo after-restore")
    )
    worker = Worker()
    run_until(worker, lambda: "before-backup" in log_text(job, "master-0"), what="its first line")
    backed_up(var)
    log = var / "runs" / job.public_id / "logs" / "master-0.log"
    inode = log.stat().st_ino

    said = restore_logs(var)
    open_gate(runner_settings)
    run_until(worker, lambda: status_of(job) in FINAL_STATUSES, what="the job to end")

    assert job.status == JobStatus.SUCCEEDED
    assert "after-restore" in log_text(job, "master-0")
    assert said.startswith("Local jobs still run; stop them or let them end:\n")
    assert f"runs/{job.public_id}/attempt-1/master-0/lock" in said
    assert log.stat().st_ino == inode  # nothing extracted over it


def test_readmes_restore_of_logs_once_no_job_runs_brings_back_lost_logs_and_keeps_newer_ones(
    alice,
    runner_settings,  # noqa: F811
    tmp_path,
):
    var = tmp_path / "checkout" / "var"
    runner_settings.LOCAL_RUN_DIR = var / "runs"
    lost = submit(alice, make_spec("echo lost-with-the-disk"))
    grown = submit(alice, make_spec("echo in-the-backup"))
    worker = Worker()
    run_until(worker, lambda: {status_of(lost), status_of(grown)} == {JobStatus.SUCCEEDED})
    backed_up(var)
    shutil.rmtree(var / "runs" / lost.public_id)
    with (var / "runs" / grown.public_id / "logs" / "master-0.log").open("a") as log:
        log.write("written after the backup\n")

    said = restore_logs(var)

    assert said == ""
    assert "lost-with-the-disk" in log_text(lost, "master-0")
    assert "written after the backup" in log_text(grown, "master-0")
