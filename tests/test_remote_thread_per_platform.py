"""Each remote platform's jobs are submitted and synced in a thread of their own
(jobs.worker.RemoteThread, one for AIHC and one for Kubernetes): a platform that is slow to
answer (a create or a sync waiting out its read timeout) holds up none of the other's jobs.
Until fix85b one thread served both, and a Kubernetes job stayed 排队中 while an AIHC create
waited. Against the strict fakes of AIHC and the Kubernetes API server, both configured;
a request is held unanswered by the fake (block_next, delay_next, stall)."""

from __future__ import annotations

import re
import threading
import time

import pytest
from django.test import Client
from django.utils import translation

from jobs import worker as worker_module
from jobs.health import worker_state
from jobs.models import Job, JobStatus
from tests.fake_aihc import FakeAihc
from tests.fake_aihc import configure as configure_aihc
from tests.fake_kubernetes import FakeKubernetes
from tests.fake_kubernetes import configure as configure_kubernetes
from tests.test_worker_remote import A800, POOL
from tests.test_worker_remote import submit as queued_on_aihc

from .runner_helpers import runner_settings  # noqa: F401
from .test_worker_remote_thread import (
    GPU,
    on_kubernetes,
    queued_on_kubernetes,
    serving_worker,
    wait_for,
)


class Fakes:
    def __init__(self, aihc: FakeAihc, k8s: FakeKubernetes) -> None:
        self.aihc = aihc
        self.k8s = k8s


@pytest.fixture
def fakes(runner_settings, transactional_db):  # noqa: F811
    aihc = FakeAihc().start()
    k8s = FakeKubernetes().start()
    try:
        aihc.add_pool(POOL, "训练池", gpus={A800: (16, 16)}, pfs="pfs-7xWeAt")
        k8s.add_node("gpu-1", {GPU: "8"})
        configure_aihc(runner_settings, aihc, AIHC_READ_TIMEOUT=20)
        configure_kubernetes(runner_settings, k8s, KUBERNETES_READ_TIMEOUT=20)
        runner_settings.CONSOLE_BACKENDS = ["local", "aihc", "kubernetes"]
        runner_settings.WORKER_REMOTE_SYNC_SECONDS = 0
        yield Fakes(aihc, k8s)
    finally:
        k8s.stop()
        aihc.stop()


def submitted(job: Job) -> bool:
    """Its create sent and answered: Queued on its platform, with the id it gave."""
    job.refresh_from_db()
    return job.status == JobStatus.QUEUED and bool(job.external_id)


def test_a_kubernetes_job_is_submitted_while_an_aihc_create_waits_for_its_answer(fakes, alice):
    slow = queued_on_aihc(alice)
    release = fakes.aihc.block_next("CreateJob")
    try:
        with serving_worker():
            wait_for(lambda: fakes.aihc.calls("CreateJob"), seconds=5, what="the AIHC create")
            job = queued_on_kubernetes(alice)
            took = wait_for(lambda: submitted(job), seconds=5, what="the Kubernetes job sent")
            slow_status = Job.objects.get(pk=slow.pk).status
            release.set()
            wait_for(lambda: submitted(slow), seconds=5, what="the AIHC create answered")
    finally:
        release.set()

    assert took < 5
    assert slow_status == JobStatus.SUBMITTING  # the AIHC create was still waiting then
    assert len(fakes.k8s.calls("create pytorchjobs")) == 1
    assert len(fakes.aihc.calls("CreateJob")) == 1


def test_an_aihc_job_is_submitted_while_a_kubernetes_create_waits_for_its_answer(fakes, alice):
    slow = queued_on_kubernetes(alice)
    release = fakes.k8s.block_next("create pytorchjobs")
    try:
        with serving_worker():
            wait_for(
                lambda: fakes.k8s.calls("create pytorchjobs"), seconds=5, what="the k8s create"
            )
            job = queued_on_aihc(alice)
            took = wait_for(lambda: submitted(job), seconds=5, what="the AIHC job sent")
            slow_status = Job.objects.get(pk=slow.pk).status
            release.set()
            wait_for(lambda: submitted(slow), seconds=5, what="the Kubernetes create answered")
    finally:
        release.set()

    assert took < 5
    assert slow_status == JobStatus.SUBMITTING
    assert len(fakes.aihc.calls("CreateJob")) == 1
    assert len(fakes.k8s.calls("create pytorchjobs")) == 1


def test_a_stop_waits_for_the_create_on_its_way_on_each_platform(fakes, alice, caplog):
    """SIGTERM while a create waits on AIHC and another on Kubernetes: the worker ends once
    both are answered (each within its own timeout, 25 s here, waited side by side), each job
    Queued on its platform with the id it gave, not left Submitting."""
    from jobs.worker import REMOTE_JOIN_SECONDS, run_forever

    on_aihc, on_k8s = queued_on_aihc(alice), queued_on_kubernetes(alice)
    aihc_answers = fakes.aihc.block_next("CreateJob")
    k8s_answers = fakes.k8s.block_next("create pytorchjobs")
    stop = threading.Event()
    loop = threading.Thread(target=run_forever, args=(stop,), kwargs={"tasks": False})
    loop.start()
    timers = [
        threading.Timer(REMOTE_JOIN_SECONDS + 2, aihc_answers.set),
        threading.Timer(REMOTE_JOIN_SECONDS + 4, k8s_answers.set),
    ]
    try:
        wait_for(lambda: fakes.aihc.calls("CreateJob"), seconds=5, what="the AIHC create")
        wait_for(lambda: fakes.k8s.calls("create pytorchjobs"), seconds=5, what="the k8s create")
        with caplog.at_level("WARNING", logger="jobs.worker"):
            stop.set()
            for timer in timers:
                timer.start()
            loop.join(timeout=40)
            # The process ends here: what the jobs show is what the next worker finds.
            after = {
                job.backend: Job.objects.values_list("status", "external_id").get(pk=job.pk)
                for job in (on_aihc, on_k8s)
            }
    finally:
        aihc_answers.set()
        k8s_answers.set()
        for timer in timers:
            timer.cancel()

    assert not loop.is_alive()
    assert after["aihc"][0] == JobStatus.QUEUED and after["aihc"][1]
    assert after["kubernetes"][0] == JobStatus.QUEUED and after["kubernetes"][1]
    assert {r.getMessage() for r in caplog.records if "create of" in r.getMessage()} == {
        f"waiting up to 25 s for the create of {on_aihc.public_id} on aihc to be answered "
        "before stopping",
        f"waiting up to 25 s for the create of {on_k8s.public_id} on kubernetes to be answered "
        "before stopping",
    }


def test_a_stop_while_neither_platforms_create_is_answered_ends_within_the_longest_wait(
    fakes, alice, settings, caplog
):
    """SIGTERM while a create waits on AIHC and another on Kubernetes, and neither platform
    ever answers: the worker ends once both creates' own timeouts have passed, waited side by
    side (REMOTE_JOIN_SECONDS, then the longer of the two, 11 s here), each job left Queued
    again with its create recorded as unanswered, as README says: AIHC's looked for after
    AIHC_CREATE_SETTLE_SECONDS (sent again only if AIHC shows none), Kubernetes' sent again by
    its name (the cluster refuses a second one, and what it made is adopted)."""
    from django.utils import timezone

    from jobs.backends import get_backend
    from jobs.worker import REMOTE_JOIN_SECONDS, create_wait_seconds, run_forever

    # Both longer than REMOTE_JOIN_SECONDS: the creates are still on their way once the
    # remote threads have been joined, so the stop's own wait for them (finish_submits) runs.
    settings.AIHC_CONNECT_TIMEOUT, settings.AIHC_READ_TIMEOUT = 1, 8
    settings.KUBERNETES_CONNECT_TIMEOUT, settings.KUBERNETES_READ_TIMEOUT = 1, 10
    bound = REMOTE_JOIN_SECONDS + max(
        create_wait_seconds("aihc"), create_wait_seconds("kubernetes")
    )
    on_aihc, on_k8s = queued_on_aihc(alice), queued_on_kubernetes(alice)
    aihc_answers = fakes.aihc.block_next("CreateJob")
    k8s_answers = fakes.k8s.block_next("create pytorchjobs")
    stop = threading.Event()
    loop = threading.Thread(target=run_forever, args=(stop,), kwargs={"tasks": False})
    loop.start()
    try:
        wait_for(lambda: fakes.aihc.calls("CreateJob"), seconds=5, what="the AIHC create")
        wait_for(lambda: fakes.k8s.calls("create pytorchjobs"), seconds=5, what="the k8s create")
        with caplog.at_level("WARNING", logger="jobs.worker"):
            stop.set()
            started = time.monotonic()
            loop.join(timeout=bound + 15)
            ended_in = time.monotonic() - started
            # The process ends here: what the jobs show is what the next worker finds.
            after = {job.backend: Job.objects.get(pk=job.pk) for job in (on_aihc, on_k8s)}
    finally:
        aihc_answers.set()  # never answered while the worker ran
        k8s_answers.set()

    assert not loop.is_alive()
    assert ended_in < bound + 3  # a generous bound (16 s here), not a speed
    for backend, job in after.items():
        assert (job.status, job.external_id) == (JobStatus.QUEUED, ""), backend
        assert get_backend(backend).create_unsettled(job), backend  # looked for, not forgotten
    assert get_backend("aihc").create_wait(after["aihc"]) > timezone.now()
    # Each create sent once: nothing is sent again before the next worker looks.
    assert len(fakes.aihc.calls("CreateJob")) == 1
    assert len(fakes.k8s.calls("create pytorchjobs")) == 1
    assert {r.getMessage() for r in caplog.records if "waiting up to" in r.getMessage()} == {
        f"waiting up to 9 s for the create of {on_aihc.public_id} on aihc to be answered "
        "before stopping",
        f"waiting up to 11 s for the create of {on_k8s.public_id} on kubernetes to be answered "
        "before stopping",
    }


def remote_part() -> dict | None:
    return Client().get("/healthz").json()["worker"].get("remote")


@pytest.fixture
def stuck_after_a_second(fakes, settings, monkeypatch):
    monkeypatch.setattr(worker_module, "REMOTE_STUCK_SECONDS", 1.0)
    settings.WORKER_HEARTBEAT_SECONDS = 0.2  # the lease (and what it says) written often
    settings.AIHC_READ_TIMEOUT = 3
    settings.KUBERNETES_READ_TIMEOUT = 3
    return fakes


def on_aihc(fake: FakeAihc, owner) -> Job:
    """An AIHC job the platform has (submitted before any worker runs)."""
    from jobs.backends import get_backend

    job = queued_on_aihc(owner)
    get_backend("aihc").submit(job)
    job.refresh_from_db()
    assert job.external_id
    return job


def test_a_platform_stuck_is_named_in_the_log_and_to_staff_while_the_other_goes_on(
    stuck_after_a_second, alice, caplog
):
    fakes = stuck_after_a_second
    stalled = on_aihc(fakes.aihc, alice)
    k8s_job = on_kubernetes(fakes.k8s, alice)
    fakes.aihc.delay_next("DescribeJob", 20, times=20)

    def said(words: str) -> list[str]:
        return [r.getMessage() for r in caplog.records if words in r.getMessage()]

    with caplog.at_level("WARNING", logger="jobs.worker"), serving_worker():
        wait_for(lambda: fakes.aihc.calls("DescribeJob"), seconds=5, what="the AIHC sync")
        wait_for(lambda: (remote_part() or {}).get("stuck"), seconds=6, what="said stuck")
        health = remote_part()
        state = worker_state()
        fakes.k8s.set_conditions(k8s_job.external_id, ("Created", "c"), ("Running", "r"))
        wait_for(
            lambda: Job.objects.get(pk=k8s_job.pk).status == JobStatus.RUNNING,
            seconds=5,
            what="the Kubernetes job synced meanwhile",
        )
        wait_for(lambda: said("no aihc job submitted"), seconds=5, what="said in the log")
        with fakes.aihc.lock:
            fakes.aihc.faults.clear()

    assert health["platform"] == "aihc" and health["platforms"] == ["aihc"]
    assert state.remote_problem.startswith("AIHC 任务暂停提交与同步：")
    assert "本机任务照常运行" in state.remote_problem
    assert said("no kubernetes job") == []
    assert all(
        re.fullmatch(
            rf"no aihc job submitted or synced for \d+ s: still syncing {stalled.public_id} "
            "with aihc",
            line,
        )
        for line in said("no aihc job submitted")
    )


def test_both_platforms_stuck_are_both_named_the_longest_first(stuck_after_a_second, alice):
    fakes = stuck_after_a_second
    on_aihc(fakes.aihc, alice)
    stalled = on_kubernetes(fakes.k8s, alice)
    fakes.aihc.delay_next("DescribeJob", 20, times=20)

    with serving_worker():
        wait_for(lambda: (remote_part() or {}).get("stuck"), seconds=6, what="AIHC stuck")
        fakes.k8s.stall(stalled.external_id, 20)
        wait_for(
            lambda: len((remote_part() or {}).get("platforms", [])) == 2,
            seconds=8,
            what="both stuck",
        )
        health = remote_part()
        with translation.override("en"):
            problem = worker_state().remote_problem
        fakes.k8s.stalled.clear()
        with fakes.aihc.lock:
            fakes.aihc.faults.clear()

    assert health["platforms"] == ["aihc", "kubernetes"] and health["platform"] == "aihc"
    assert re.fullmatch(
        r"AIHC and Kubernetes jobs are not being submitted or synced: the worker has waited on "
        r"AIHC since \S+ \S+ \(0 minutes\) and on Kubernetes for less long\. Local jobs run as "
        r"usual; the worker's log names the jobs it waits on\.",
        problem,
    ), problem


def test_after_the_lease_comes_back_aihc_jobs_go_on_while_the_last_kubernetes_thread_waits(
    fakes, alice, settings, caplog
):
    """The lease lost while the Kubernetes thread waits on a sync, then taken back by the same
    worker: no new Kubernetes thread starts beside the one still waiting (two never send side
    by side to one platform), but AIHC's starts at once."""
    from jobs.health import worker_stopped

    from .test_worker_remote_thread import remote_thread, take_lease_over
    from .test_workers import worker_on

    settings.WORKER_HEARTBEAT_SECONDS = 0.5  # the takeover is found within half a second
    stalled = on_kubernetes(fakes.k8s, alice)
    fakes.k8s.stall(stalled.external_id, 30)
    other = worker_on("gpu-b", 202)

    def said(words: str) -> list[str]:
        return [r.getMessage() for r in caplog.records if words in r.getMessage()]

    with caplog.at_level("WARNING", logger="jobs.worker"), serving_worker():
        wait_for(lambda: fakes.k8s.calls("get pytorchjobs"), seconds=5, what="the sync under way")
        waiting = remote_thread("kubernetes")
        take_lease_over(other)
        wait_for(lambda: said("another worker is active"), seconds=10, what="standing by")
        worker_stopped(worker=other)
        wait_for(lambda: said("the last remote thread still waits"), seconds=15, what="back")
        job = queued_on_aihc(alice)
        wait_for(lambda: submitted(job), seconds=5, what="the AIHC job sent")
        still_waiting = waiting.is_alive() and remote_thread("kubernetes") is waiting
        fakes.k8s.stalled.clear()

    assert still_waiting
    assert said("the last remote thread still waits") == [
        f"the last remote thread still waits (syncing {stalled.public_id} with kubernetes): "
        "kubernetes jobs are submitted and synced once it ends"
    ]
