"""A hang that hang detection finds restarts a job with fault tolerance on, as AIHC's 训练容错
does (qa109: the job was only warned about, and held its cards until its time limit)."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import translation

from jobs import spec as S
from jobs.actions import job_stop
from jobs.logs import replica_log_path
from jobs.models import JobStatus, LocalRun
from jobs.runner import _restart_hung
from jobs.worker import Worker

from .runner_helpers import (
    log_text,
    make_spec,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)

pytestmark = pytest.mark.usefixtures("runner_settings")

# A stack capture reads every replica (jobs.stacks, at most TOTAL_SECONDS): room for it.
CAPTURED_WITHIN = 90


def silent_for_minutes(job, minutes: int) -> None:
    """Moves the start of the job's current attempt and its log's last write back in time, as
    if it had been silent that long, instead of waiting (tests/test_runner.py's way)."""
    LocalRun.objects.filter(job=job).update(
        attempt_started_at=F("attempt_started_at") - timedelta(minutes=minutes)
    )
    log = replica_log_path(job.public_id, "master-0")
    if log.exists():  # a job that never wrote has none
        past = log.stat().st_mtime - minutes * 60
        os.utime(log, (past, past))


def hanging_spec(**changes) -> S.JobSpec:
    return make_spec(
        "echo started; sleep 300",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(
            enabled_hang_detection=True, hang_detection_timeout_minutes=1, **changes
        ),
        alert=S.AlertConfig(items=["jobHang", "jobFT", "jobFailed"], emails=["ops@example.com"]),
    )


def test_a_hung_job_with_fault_tolerance_is_restarted_after_its_stacks_are_captured_then_fails(
    alice,
):
    from django.core import mail

    job = submit(alice, hanging_spec(fault_tolerance_limit=1))
    worker = Worker()
    run_until(worker, lambda: "started" in log_text(job, "master-0"), what="its line")
    silent_for_minutes(job, 2)

    run_until(
        worker,
        lambda: job.events.filter(reason="Restarted").exists(),
        timeout=CAPTURED_WITHIN,
        what="the restart",
    )

    reasons = list(job.events.order_by("pk").values_list("reason", flat=True))
    # The stacks of the hung attempt are read before the restart ends its processes.
    assert reasons.index("HangSuspected") < reasons.index("StacksCaptured")
    assert reasons.index("StacksCaptured") < reasons.index("Restarted"), reasons
    restarted = job.events.get(reason="Restarted")
    assert restarted.message == (
        "整体重启任务（第 1 次，共 1 次）：任务hang：所有实例已 1 分钟未输出日志（hang 阈值）。"
    )
    with translation.override("en"):
        assert restarted.message_shown == (
            "Restarting the whole job (1 of 1): The job hung: no replica wrote a log line "
            "for 1 minute (the hang threshold)."
        )
    # Its jobFT alert, beside the hang's jobHang alert.
    bodies = [m.body for m in mail.outbox]
    assert sum("整体重启任务（第 1 次，共 1 次）：任务hang" in body for body in bodies) == 1, bodies
    assert status_of(job) == JobStatus.RUNNING
    assert job.restarts == 1
    assert LocalRun.objects.get(job=job).attempt == 2

    # Its second attempt hangs too: its one restart used, it fails, freeing its cards.
    run_until(
        worker, lambda: "第 2 次运行开始" in log_text(job, "master-0"), what="the second attempt"
    )
    run_until(worker, lambda: log_text(job, "master-0").count("started") == 2, what="its line")
    silent_for_minutes(job, 2)
    run_until(
        worker,
        lambda: status_of(job) == JobStatus.FAILED,
        timeout=CAPTURED_WITHIN,
        what="the failure",
    )

    assert job.status_reason == (
        "任务hang：所有实例已 1 分钟未输出日志（hang 阈值）。（容错重启次数已用完：共 1 次）"
    )
    with translation.override("en"):
        assert job.status_reason_shown == (
            "The job hung: no replica wrote a log line for 1 minute (the hang threshold). "
            "(fault-tolerance restarts used up: 1 of 1)"
        )
    assert job.restarts == 1
    assert job.events.filter(reason="StacksCaptured").count() == 2
    assert not processes_with(job.public_id)
    # One warning per attempt's silence, never two for one (fix142: two warnings a threshold
    # apart, seen under load, were these: the restart's attempt is a new silence).
    reasons = list(job.events.order_by("pk").values_list("reason", flat=True))
    hang = [r for r in reasons if r in ("HangSuspected", "HangCleared", "Restarted", "Failed")]
    assert hang == ["HangSuspected", "Restarted", "HangSuspected", "Failed"], reasons


def test_a_hung_job_with_fault_tolerance_and_no_retries_fails_at_once(alice):
    job = submit(alice, hanging_spec(fault_tolerance_limit=0))
    worker = Worker()
    run_until(worker, lambda: "started" in log_text(job, "master-0"), what="its line")
    silent_for_minutes(job, 2)

    run_until(
        worker,
        lambda: status_of(job) == JobStatus.FAILED,
        timeout=CAPTURED_WITHIN,
        what="the failure",
    )

    assert job.status_reason == "任务hang：所有实例已 1 分钟未输出日志（hang 阈值）。"
    assert job.restarts == 0
    assert not job.events.filter(reason="Restarted").exists()
    assert job.events.filter(reason="StacksCaptured").exists()
    assert not processes_with(job.public_id)


def test_a_hung_job_without_fault_tolerance_keeps_running_after_its_stacks_are_captured(alice):
    spec = hanging_spec()
    spec.fault_tolerance = False
    spec.alert.items = ["jobHang"]
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "started" in log_text(job, "master-0"), what="its line")
    silent_for_minutes(job, 2)
    run_until(
        worker,
        lambda: job.events.filter(reason="StacksCaptured").exists(),
        timeout=CAPTURED_WITHIN,
        what="the capture",
    )

    for _ in range(5):
        worker.tick()

    assert status_of(job) == JobStatus.RUNNING
    assert job.restarts == 0
    assert not job.events.filter(reason__in=["Restarted", "Failed"]).exists()
    assert job.events.filter(reason="HangSuspected").count() == 1


def running_replica(job) -> bool:
    return job.replicas.filter(status="running").exists()


def test_a_job_silent_from_its_start_is_not_judged_hung_within_the_default_start_up_toleration(
    alice,
):
    # review59: the threshold counted from the attempt's start, so a job loading a checkpoint
    # silently for longer than it was restarted at every attempt, then failed.
    spec = hanging_spec(fault_tolerance_limit=0)
    spec.command = "sleep 300"
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: running_replica(job), what="its start")
    silent_for_minutes(job, 14)  # past the 1-minute threshold, within the 15 minutes

    for _ in range(5):
        worker.tick()

    assert status_of(job) == JobStatus.RUNNING
    assert not job.events.filter(reason__in=["HangSuspected", "Restarted", "Failed"]).exists()
    assert LocalRun.objects.get(job=job).stop_target == ""


def test_a_job_silent_past_its_own_start_up_toleration_is_judged_hung(alice):
    spec = hanging_spec(fault_tolerance_limit=0, hang_detection_startup_toleration_minutes=3)
    spec.command = "sleep 300"
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: running_replica(job), what="its start")
    silent_for_minutes(job, 2)
    for _ in range(3):
        worker.tick()
    assert not job.events.filter(reason="HangSuspected").exists()

    silent_for_minutes(job, 2)  # 4 minutes since its start: past the 3 minutes it asked
    run_until(
        worker,
        lambda: status_of(job) == JobStatus.FAILED,
        timeout=CAPTURED_WITHIN,
        what="the failure",
    )

    assert job.status_reason == "任务hang：所有实例已 1 分钟未输出日志（hang 阈值）。"
    assert job.events.filter(reason="HangSuspected").exists()
    assert not processes_with(job.public_id)


def test_a_hung_job_is_not_restarted_while_its_stack_capture_is_pending_then_is(alice):
    job = submit(alice, hanging_spec(fault_tolerance_limit=1))
    worker = Worker()
    run_until(worker, lambda: "started" in log_text(job, "master-0"), what="its line")
    silent_for_minutes(job, 2)

    # The runner's part of the tick only: no capture is taken, it stays pending.
    for _ in range(5):
        worker.supervise_local()

    assert status_of(job) == JobStatus.RUNNING
    assert job.events.filter(reason="HangSuspected").count() == 1
    assert job.stack_captures.filter(finished_at=None).count() == 1
    assert LocalRun.objects.get(job=job).stop_target == ""
    assert not job.events.filter(reason="Restarted").exists()

    run_until(
        worker,
        lambda: job.events.filter(reason="Restarted").exists(),
        timeout=CAPTURED_WITHIN,
        what="the restart",
    )
    assert job.stack_captures.filter(finished_at=None).count() == 0
    job.refresh_from_db()
    assert job.restarts == 1


def test_a_stop_recorded_before_the_hang_restart_is_decided_wins(alice):
    spec = hanging_spec(fault_tolerance_limit=1)
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "started" in log_text(job, "master-0"), what="its line")
    silent_for_minutes(job, 2)
    run_until(
        worker,
        lambda: job.events.filter(reason="StacksCaptured").exists(),
        timeout=CAPTURED_WITHIN,
        what="the capture",
    )
    # The capture is stored; the next tick would restart. The run as a tick reads it, then
    # the owner's Stop, recorded before that tick decides.
    read_by_the_tick = LocalRun.objects.get(job=job)
    assert read_by_the_tick.stop_target == ""
    job.refresh_from_db()
    assert job_stop(job=job, actor=alice)

    assert not _restart_hung(job, read_by_the_tick, spec, 1)
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, what="the stop")

    assert job.restarts == 0
    assert not job.events.filter(reason="Restarted").exists()
    assert not processes_with(job.public_id)
