"""The serving worker submits and syncs remote jobs in a thread of its own (jobs.worker
.RemoteThread), beside the loop that supervises local jobs: a platform that takes connections
and never answers no longer holds up a local job's stop or start, only the lease's holder
sends anything, and a stop ends both threads. Against the strict fakes of the Kubernetes API
server and AIHC (the outside services that cannot run here); local jobs run for real."""

from __future__ import annotations

import contextlib
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from django.db.models.functions import Now

from jobs import spec as S
from jobs.actions import job_stop
from jobs.backends import get_backend
from jobs.health import WorkerIdentity
from jobs.models import Job, JobStatus, WorkerHeartbeat
from jobs.services import jobs_submit
from tests.fake_aihc import FakeAihc
from tests.fake_aihc import configure as configure_aihc
from tests.fake_kubernetes import FakeKubernetes
from tests.fake_kubernetes import configure as configure_kubernetes

from .runner_helpers import (  # noqa: F401
    UNTIL_THE_GATE_OPENS,
    make_spec,
    runner_settings,
    status_of,
    submit,
)
from .test_workers import worker_on

GPU = "nvidia.com/gpu"


@pytest.fixture
def k8s_fake(runner_settings, transactional_db):  # noqa: F811
    fake = FakeKubernetes().start()
    fake.add_node("gpu-1", {GPU: "8"})
    configure_kubernetes(runner_settings, fake, KUBERNETES_READ_TIMEOUT=3)
    runner_settings.WORKER_REMOTE_SYNC_SECONDS = 0
    yield fake
    fake.stop()


def k8s_spec(name: str) -> S.JobSpec:
    return S.JobSpec(
        name=name,
        resource_pool_id="k8s-default",
        framework=S.PYTORCH,
        image="registry.example.com/train:1.0",
        command="python train.py",
        roles=[S.Role("master", 1, GPU, 1)],
    )


def queued_on_kubernetes(owner, name: str = "train") -> Job:
    [job] = jobs_submit(
        owner=owner, spec=k8s_spec(name), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )
    return job


def on_kubernetes(fake: FakeKubernetes, owner, name: str = "train") -> Job:
    """A job the cluster has (submitted by the test, before any worker runs); the requests
    that made it forgotten, so those seen next are the worker's."""
    job = queued_on_kubernetes(owner, name)
    get_backend("kubernetes").submit(job)
    job.refresh_from_db()
    assert job.external_id
    fake.requests.clear()
    return job


@contextlib.contextmanager
def serving_worker() -> Iterator[threading.Event]:
    """The worker's loop (jobs.worker.run_forever, without the task queue) in a thread; its
    stop event is given (SIGTERM sets it in `manage.py worker`). Stopped at the end."""
    from jobs.worker import run_forever

    stop = threading.Event()
    thread = threading.Thread(target=run_forever, args=(stop,), kwargs={"tasks": False})
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(timeout=30)
        for remote in remote_threads():
            remote.join(timeout=30)


def remote_threads() -> list:
    from jobs import worker

    return list(worker.remote_threads.values())


def remote_thread(backend: str = "kubernetes"):
    """The serving worker's RemoteThread for `backend` (None before it started one)."""
    from jobs import worker

    return worker.remote_threads.get(backend)


def take_lease_over(other: WorkerIdentity) -> None:
    """The lease as `other` (another host) leaves it on taking it over."""
    WorkerHeartbeat.objects.update(holder=other.instance, **other.fields(), seen_at=Now())


def wait_for(done: Callable[[], object], *, seconds: float, what: str) -> float:
    """Waits until `done()` is true; how long it took."""
    started = time.monotonic()
    while not done():
        assert time.monotonic() - started < seconds, f"not within {seconds} s: {what}"
        time.sleep(0.05)
    return time.monotonic() - started


def test_a_local_jobs_stop_and_start_are_carried_out_while_kubernetes_does_not_answer(
    k8s_fake, alice
):
    """Until the remote thread, one job's sync with an API server that took connections and
    never answered held the worker's loop for three read timeouts (91.5 s by default; 10.5 s
    here), and a local job's 停止 waited as long, as did a queued local job's start."""
    stalled = on_kubernetes(k8s_fake, alice)
    k8s_fake.stall(stalled.external_id, 20)
    running = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))

    with serving_worker():
        wait_for(lambda: status_of(running) == JobStatus.RUNNING, seconds=10, what="started")
        # The remote thread is in the stalled job's reads now.
        wait_for(lambda: k8s_fake.calls("get pytorchjobs"), seconds=5, what="the sync under way")
        job_stop(job=Job.objects.get(pk=running.pk), actor=alice)
        stopped_in = wait_for(
            lambda: status_of(running) == JobStatus.STOPPED, seconds=6, what="stopped"
        )
        queued = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, name="next"))
        started_in = wait_for(
            lambda: status_of(queued) == JobStatus.RUNNING, seconds=3, what="next started"
        )
        still_syncing = remote_thread().lane.doing

    assert stopped_in < 6 and started_in < 3  # local jobs: 0.1 s ticks, 1 s stop grace
    assert still_syncing == f"syncing {stalled.public_id} with kubernetes"


def test_a_local_job_is_started_while_aihc_does_not_answer(
    runner_settings,  # noqa: F811
    transactional_db,
    alice,
):
    from tests.test_worker_remote import A800, POOL
    from tests.test_worker_remote import submit as submit_to_aihc

    fake = FakeAihc().start()
    try:
        fake.add_pool(POOL, "训练池", gpus={A800: (16, 16)}, pfs="pfs-7xWeAt")
        configure_aihc(runner_settings, fake)
        runner_settings.AIHC_READ_TIMEOUT = 3
        runner_settings.WORKER_REMOTE_SYNC_SECONDS = 0
        remote = submit_to_aihc(alice)
        get_backend("aihc").submit(remote)
        remote.refresh_from_db()
        assert remote.external_id
        with fake.lock:
            fake.requests.clear()  # those seen next are the worker's
        fake.delay_next("DescribeJob", 20, times=10)

        with serving_worker():
            wait_for(lambda: fake.calls("DescribeJob"), seconds=5, what="the sync under way")
            local = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
            started_in = wait_for(
                lambda: status_of(local) == JobStatus.RUNNING, seconds=3, what="started"
            )
            still_syncing = remote_thread("aihc").lane.doing
    finally:
        fake.stop()

    assert started_in < 3
    assert still_syncing == f"syncing {remote.public_id} with aihc"


def test_after_the_lease_is_taken_over_the_old_holder_submits_and_syncs_nothing(
    k8s_fake, alice, settings
):
    """The old holder's loop finds the takeover at its next renewal (WORKER_HEARTBEAT_SECONDS,
    5 s here); its remote thread asks the lease before each submit and each sync, so it sends
    nothing meanwhile either."""
    settings.WORKER_HEARTBEAT_SECONDS = 5
    synced = on_kubernetes(k8s_fake, alice)
    other = worker_on("gpu-b", 202)

    with serving_worker():
        wait_for(lambda: k8s_fake.calls("get pytorchjobs"), seconds=5, what="a first sync")
        take_lease_over(other)
        time.sleep(0.5)  # a request on its way when the lease went is answered meanwhile
        k8s_fake.requests.clear()
        later = queued_on_kubernetes(alice, "later")
        k8s_fake.set_conditions(synced.external_id, ("Created", "c"), ("Running", "r"))
        time.sleep(3)  # 30 passes' worth (0.1 s polls, a sync round each)
        sent = [r.op for r in k8s_fake.requests]

    assert sent == []
    assert status_of(later) == JobStatus.QUEUED and Job.objects.get(pk=later.pk).external_id == ""
    assert status_of(synced) == JobStatus.QUEUED  # not synced to Running by the old holder


def test_a_worker_waiting_on_an_api_server_that_does_not_answer_keeps_its_lease(
    k8s_fake, alice, settings
):
    """One job's sync with a server that takes connections and never answers waits for three
    read timeouts (91.5 s by default, 10.5 s here), past WORKER_STALE_SECONDS (60 s, 2 s
    here). Until review 36 the worker then read as not running once a round (/healthz 503, the
    users' banner) and a standby took its lease over, to wait on the same server in turn. The
    loop renews the lease while its remote thread waits on the platform."""
    from jobs.health import worker_beat, worker_state

    settings.WORKER_HEARTBEAT_SECONDS = 0.5
    settings.WORKER_STALE_SECONDS = 2
    stalled = on_kubernetes(k8s_fake, alice)
    k8s_fake.stall(stalled.external_id, 20)

    with serving_worker():
        wait_for(lambda: k8s_fake.calls("get pytorchjobs"), seconds=5, what="the sync under way")
        time.sleep(settings.WORKER_STALE_SECONDS + 1)  # the wait this is about
        still_syncing = remote_thread().lane.doing
        state = worker_state().status
        standby_took_over = worker_beat(worker=worker_on("gpu-b", 202))

    assert still_syncing == f"syncing {stalled.public_id} with kubernetes"
    assert state == "ok"
    assert standby_took_over is False  # a standby waits on


def test_a_worker_whose_lease_is_taken_over_while_it_waits_on_the_api_server_stands_by(
    k8s_fake, alice, settings, caplog
):
    """The lease is taken over (here: by a worker the test writes into the lease's row)
    while the remote thread waits on a platform: the loop finds it at its next renewal and
    stands by, its remote thread sends nothing more once its wait is over, and the new
    holder keeps the lease, instead of the old worker going on as the holder."""
    settings.WORKER_HEARTBEAT_SECONDS = 0.5
    stalled = on_kubernetes(k8s_fake, alice)
    k8s_fake.stall(stalled.external_id, 20)
    other = worker_on("gpu-b", 202)

    with caplog.at_level("ERROR", logger="jobs.worker"), serving_worker():
        wait_for(lambda: k8s_fake.calls("get pytorchjobs"), seconds=5, what="the sync under way")
        take_lease_over(other)
        later = queued_on_kubernetes(alice, "later")
        wait_for(
            lambda: any("standing by" in r.getMessage() for r in caplog.records),
            seconds=5,
            what="standing by",
        )
        waiting = remote_thread()
        wait_for(lambda: not waiting.is_alive(), seconds=15, what="the remote thread's end")
        holder = WorkerHeartbeat.objects.get().holder

    assert holder == other.instance
    assert k8s_fake.calls("create pytorchjobs") == []
    assert status_of(later) == JobStatus.QUEUED and Job.objects.get(pk=later.pk).external_id == ""


def test_a_stop_ends_the_loop_and_the_remote_thread_in_bounded_time_while_a_sync_waits(
    k8s_fake, alice
):
    """The loop waits REMOTE_JOIN_SECONDS at most for the remote thread, which ends once the
    job's requests under way are answered or timed out (three reads of 3 s here), and
    gives the lease up."""
    from jobs.health import worker_state
    from jobs.worker import REMOTE_JOIN_SECONDS, run_forever

    stalled = on_kubernetes(k8s_fake, alice)
    k8s_fake.stall(stalled.external_id, 20)
    stop = threading.Event()
    loop = threading.Thread(target=run_forever, args=(stop,), kwargs={"tasks": False})
    loop.start()
    wait_for(lambda: k8s_fake.calls("get pytorchjobs"), seconds=5, what="the sync under way")
    remote = remote_thread()

    stop.set()
    started = time.monotonic()
    loop.join(timeout=30)
    loop_ended_in = time.monotonic() - started
    remote.join(timeout=30)
    remote_ended_in = time.monotonic() - started

    assert not loop.is_alive() and loop_ended_in < REMOTE_JOIN_SECONDS + 1
    assert not remote.is_alive() and remote_ended_in < 3 * 3 + 2 * 1.5 + 1
    assert worker_state().status == "stopped"
    assert [r.op for r in k8s_fake.requests if r.op.startswith("create")] == []


def test_a_create_in_flight_when_the_lease_is_handed_over_makes_one_job_on_the_cluster(
    k8s_fake, alice
):
    """The old holder's create is on its way (the job is Submitting) when another worker
    takes the lease over: the new holder neither sends it again nor takes it back to Queued
    (STUCK_SUBMITTING), and follows what the old one's create made."""
    from jobs.worker import RemoteThread, Worker

    job = queued_on_kubernetes(alice)
    release = k8s_fake.block_next("create pytorchjobs")
    new_holder = Worker(worker_on("gpu-b", 202))
    # The new holder's remote thread, its passes driven here: each after a tick of its loop.
    new_holders_remote = RemoteThread(new_holder, threading.Event(), "kubernetes")

    def new_holders_turn() -> None:
        new_holder.tick()  # renews the lease it holds now
        new_holder.remote_pass(go_on=new_holders_remote.holding)  # submits and syncs

    with serving_worker():
        wait_for(lambda: k8s_fake.calls("create pytorchjobs"), seconds=5, what="the create")
        assert status_of(job) == JobStatus.SUBMITTING
        take_lease_over(new_holder.identity)
        for _ in range(3):
            new_holders_turn()
        release.set()
        wait_for(
            lambda: Job.objects.get(pk=job.pk).external_id, seconds=5, what="the create's answer"
        )
        job.refresh_from_db()
        k8s_fake.set_conditions(job.external_id, ("Created", "c"), ("Running", "r"))
        new_holders_turn()

    assert len(k8s_fake.calls("create pytorchjobs")) == 1
    assert len(k8s_fake.jobs()) == 1
    assert status_of(job) == JobStatus.RUNNING


def test_a_remote_thread_stuck_on_one_job_is_said_in_the_log_with_the_job_and_when_it_goes_on(
    k8s_fake, alice, settings, caplog, monkeypatch
):
    """The worker runs (its loop supervises local jobs and renews the lease, so /healthz and
    the banner say so); what is stuck, its remote jobs' submits and syncs, is said in its log,
    naming what it waits on. REMOTE_STUCK_SECONDS (10 minutes) is made 1 s here."""
    from jobs import worker

    monkeypatch.setattr(worker, "REMOTE_STUCK_SECONDS", 1.0)
    settings.KUBERNETES_READ_TIMEOUT = 1  # three reads of 1 s, 0.5 s and 1 s between: 4.5 s
    stalled = on_kubernetes(k8s_fake, alice)
    k8s_fake.stall(stalled.external_id, 20)

    def said(words: str) -> list[str]:
        return [r.getMessage() for r in caplog.records if words in r.getMessage()]

    with caplog.at_level("WARNING", logger="jobs.worker"), serving_worker():
        wait_for(lambda: said("no kubernetes job submitted"), seconds=4, what="said stuck")
        k8s_fake.stalled.clear()
        wait_for(lambda: said("goes on again"), seconds=8, what="said going on")

    stuck = said("no kubernetes job submitted")  # (said again each second it lasts, here)
    assert stuck and all(
        re.fullmatch(
            rf"no kubernetes job submitted or synced for \d+ s: still syncing "
            rf"{stalled.public_id} with kubernetes",
            line,
        )
        for line in stuck
    )
    assert said("goes on again") == ["submitting and syncing kubernetes jobs goes on again"]


def test_a_stop_while_a_create_waits_for_its_answer_leaves_the_job_submitted_not_submitting(
    k8s_fake, alice, settings, caplog
):
    """SIGTERM (a restart of the console) while a create is on its way: the worker ends once
    the create is answered, its job Queued on the cluster with its name. Until review 40 it
    ended REMOTE_JOIN_SECONDS after the stop, its process taking the create with it: the job
    stayed 提交中 (Submitting) for 2 minutes after the next start, then "The submission was
    interrupted" and was sent again."""
    from jobs.worker import REMOTE_JOIN_SECONDS, run_forever

    settings.KUBERNETES_READ_TIMEOUT = 20  # a slow API server: answered after 7 s, in time
    job = queued_on_kubernetes(alice)
    release = k8s_fake.block_next("create pytorchjobs")
    stop = threading.Event()
    loop = threading.Thread(target=run_forever, args=(stop,), kwargs={"tasks": False})
    loop.start()
    wait_for(lambda: k8s_fake.calls("create pytorchjobs"), seconds=5, what="the create")
    answer = threading.Timer(REMOTE_JOIN_SECONDS + 2, release.set)

    with caplog.at_level("WARNING", logger="jobs.worker"):
        stop.set()
        answer.start()
        loop.join(timeout=30)
        # The process ends here: what the job shows is what the next worker finds.
        status, external_id = Job.objects.values_list("status", "external_id").get(pk=job.pk)
    answer.join()

    assert not loop.is_alive()
    assert status == JobStatus.QUEUED and external_id
    assert [r.getMessage() for r in caplog.records if "create of" in r.getMessage()] == [
        f"waiting up to 25 s for the create of {job.public_id} on kubernetes to be answered "
        "before stopping"
    ]


def test_a_stop_while_a_create_gets_no_answer_ends_once_the_create_timed_out(
    k8s_fake, alice, settings
):
    """The wait for a create on its way is bounded by its client's timeout (8 s here): then
    the job is Queued again, saying the create got no answer, and the worker ends."""
    from jobs.worker import run_forever

    settings.KUBERNETES_READ_TIMEOUT = 8
    job = queued_on_kubernetes(alice)
    release = k8s_fake.block_next("create pytorchjobs")
    stop = threading.Event()
    loop = threading.Thread(target=run_forever, args=(stop,), kwargs={"tasks": False})
    loop.start()
    wait_for(lambda: k8s_fake.calls("create pytorchjobs"), seconds=5, what="the create")

    stop.set()
    started = time.monotonic()
    loop.join(timeout=30)
    ended_in = time.monotonic() - started
    status = status_of(job)
    release.set()

    assert not loop.is_alive() and ended_in < 8 + 2
    assert status == JobStatus.QUEUED


def test_a_last_remote_thread_stuck_after_the_lease_came_back_is_said_in_the_log_while_it_lasts(
    k8s_fake, alice, settings, caplog, monkeypatch
):
    """The lease lost while the remote thread waits on a platform, then taken back by the same
    worker: no remote job is submitted or synced until that thread ends. Said once as the
    lease came back, and then (until review 40) never again, however long it lasted.
    REMOTE_STUCK_SECONDS (10 minutes) is made 1 s here."""
    from jobs import worker
    from jobs.health import worker_stopped

    monkeypatch.setattr(worker, "REMOTE_STUCK_SECONDS", 1.0)
    settings.WORKER_HEARTBEAT_SECONDS = 0.5  # the takeover is found within half a second
    settings.KUBERNETES_READ_TIMEOUT = 20
    stalled = on_kubernetes(k8s_fake, alice)
    k8s_fake.stall(stalled.external_id, 30)
    other = worker_on("gpu-b", 202)

    def said(words: str, since: int = 0) -> list[str]:
        return [r.getMessage() for r in caplog.records[since:] if words in r.getMessage()]

    with caplog.at_level("WARNING", logger="jobs.worker"), serving_worker():
        wait_for(lambda: k8s_fake.calls("get pytorchjobs"), seconds=5, what="the sync under way")
        take_lease_over(other)
        wait_for(lambda: said("another worker is active"), seconds=10, what="standing by")
        worker_stopped(worker=other)
        wait_for(lambda: said("the last remote thread still waits"), seconds=15, what="back")
        back = len(caplog.records)
        wait_for(lambda: said("no kubernetes job submitted", back), seconds=5, what="said stuck")
        k8s_fake.stalled.clear()

    assert re.fullmatch(
        rf"no kubernetes job submitted or synced for \d+ s: still syncing {stalled.public_id} "
        "with kubernetes",
        said("no kubernetes job submitted", back)[0],
    )
