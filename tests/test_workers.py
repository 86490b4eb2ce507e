"""Several workers on one database (jobs.health's lease): only one dispatches, a second stands
by and takes over once the first stopped cleanly or went stale; ages are read on the
database's clock, whatever the machines' clocks say; staff see every worker; the job list's
banner comes and goes as its table refreshes."""

from __future__ import annotations

import html
import re
import signal
import socket
import threading
from datetime import datetime, timedelta

import pytest
from django.db import connections
from django.db.models.functions import Now
from django.test import Client
from django.urls import reverse
from django.utils import timezone, translation

from jobs.health import (
    WorkerIdentity,
    forget_old_workers,
    worker_beat,
    worker_state,
    worker_stopped,
)
from jobs.models import (
    Job,
    JobReplica,
    JobStatus,
    LocalRun,
    WorkerHeartbeat,
    WorkerProcess,
)
from jobs.runner import attempt_dir, current_capacity, requirement, start_job
from jobs.scheduler import dispatch_local
from jobs.spec import SUBMIT_QUEUE, Role, Submission
from jobs.worker import LeaseLost, Worker, wait_for_lease

from .conftest import log_in
from .runner_helpers import (  # noqa: F401
    CARD,
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    run_until,
    runner_settings,
    status_of,
    submit,
)
from .test_alerts import smtp_server  # noqa: F401  (the world's mail server)
from .test_worker import query, start_worker, wait_for, world  # noqa: F401

STALE_EN = (
    "The job scheduler (worker) has not run for 5 minutes: queued jobs will not start and "
    "running jobs are not tracked. Please contact an administrator."
)


def worker_on(host: str, pid: int, run_dir: str = "/srv/console/var/runs") -> WorkerIdentity:
    """A worker process as it would name itself on another machine."""
    return WorkerIdentity(
        instance=f"{host}-{pid}".ljust(32, "x")[:32],
        host=host,
        pid=pid,
        run_dir=run_dir,
        version="0.1.0",
    )


def lease_renewed(seconds_ago: float) -> None:
    """The lease, as a holder that last renewed it `seconds_ago` (database clock) left it."""
    WorkerHeartbeat.objects.update(seen_at=Now() - timedelta(seconds=seconds_ago))


def banner(page: str) -> str | None:
    found = re.search(r'<strong class="worker-banner-text">(.*?)</strong>', page, re.S)
    return html.unescape(found.group(1)) if found else None


def skewed_clock(monkeypatch, skew: timedelta) -> None:
    """This machine's clock (Django's timezone.now) off by `skew`; the database's is right."""
    real = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real() + skew)


# -- The lease --------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_workers_racing_for_the_lease_never_both_take_it():
    """Two workers, each on its own database connection, ask at the same moment: first for
    a lease nobody ever took (two INSERTs), then, round after round, for a lapsed one (two
    conditional UPDATEs). Exactly one wins each time."""
    a, b = worker_on("gpu-a", 101), worker_on("gpu-b", 202)
    winners: list[list[str]] = []

    def race(worker: WorkerIdentity, start: threading.Barrier, won: list[str]) -> None:
        try:
            start.wait()
            if worker_beat(worker=worker):
                won.append(worker.host)
        finally:
            connections.close_all()  # this thread's connection

    for round_ in range(8):
        if round_:
            lease_renewed(seconds_ago=3600)  # the last winner went stale
        start, won = threading.Barrier(2), []
        threads = [threading.Thread(target=race, args=(w, start, won)) for w in (a, b)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners.append(won)

    assert [len(won) for won in winners] == [1] * 8
    # And the row says who won, as the one that won it wrote it.
    assert WorkerHeartbeat.objects.get().host == winners[-1][0]
    assert WorkerHeartbeat.objects.count() == 1


def test_a_second_worker_stands_by_while_the_first_holds_the_lease(db):
    a, b = worker_on("gpu-a", 101), worker_on("gpu-b", 202)

    assert worker_beat(worker=a) is True
    assert worker_beat(worker=b) is False
    assert worker_beat(worker=a) is True  # renewed
    assert worker_beat(worker=b) is False

    state = worker_state()
    assert (state.status, state.host, state.pid, state.standby) == ("ok", "gpu-a", 101, 1)


def test_a_standby_worker_takes_over_once_the_holder_stopped_cleanly(db):
    a, b = worker_on("gpu-a", 101), worker_on("gpu-b", 202)
    worker_beat(worker=a)
    worker_beat(worker=b)

    worker_stopped(worker=a)

    assert worker_state().status == "stopped"
    assert worker_beat(worker=b) is True
    state = worker_state()
    assert (state.status, state.host, state.pid, state.standby) == ("ok", "gpu-b", 202, 0)
    assert WorkerHeartbeat.objects.get().run_dir == b.run_dir


def test_a_standby_worker_takes_over_only_once_the_lease_is_older_than_the_threshold(db, settings):
    settings.WORKER_STALE_SECONDS = 60
    a, b = worker_on("gpu-a", 101), worker_on("gpu-b", 202)
    worker_beat(worker=a)

    lease_renewed(seconds_ago=50)
    assert worker_beat(worker=b) is False
    lease_renewed(seconds_ago=61)
    assert worker_beat(worker=b) is True

    # The old holder, back from its hang, finds the lease gone and does not get it back.
    assert worker_beat(worker=a) is False
    assert worker_state().host == "gpu-b"


def test_a_worker_restarted_in_the_same_place_takes_over_from_its_killed_one_at_once(db):
    """Same host, same run directory: the new worker holds `worker.lock` there, which the old
    one held while it lived, so its lease (fresh as it is: killed a moment ago) is taken at
    once. A worker elsewhere, lock or not, still waits it out."""
    killed = worker_on("gpu-a", 101)
    restarted, elsewhere = worker_on("gpu-a", 102), worker_on("gpu-b", 202)
    worker_beat(worker=killed)

    assert worker_beat(worker=elsewhere, run_dir_locked=True) is False
    assert worker_beat(worker=restarted) is False  # without the lock: it might live
    assert worker_beat(worker=restarted, run_dir_locked=True) is True
    assert (worker_state().host, worker_state().pid) == ("gpu-a", 102)


def test_a_worker_whose_lease_was_taken_over_stops_dispatching(db, runner_settings):  # noqa: F811
    """The old holder's next tick ends at its lease: the queued job is left to the new one."""
    settings = runner_settings
    settings.WORKER_STALE_SECONDS = 60
    old = Worker(worker_on("gpu-a", 101, run_dir=str(settings.LOCAL_RUN_DIR)))
    old.tick()  # holds the lease
    lease_renewed(seconds_ago=61)
    assert worker_beat(worker=worker_on("gpu-b", 202)) is True
    job = submit(_owner(), make_spec("true"))
    old.last_beat = None  # its renewal is due

    with pytest.raises(LeaseLost):
        old.tick()

    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


def test_a_worker_whose_pass_blocked_past_a_takeover_does_not_start_a_job_on_cards_given_away(
    db,
    runner_settings,  # noqa: F811
    tmp_path,
):
    """The gap a lease without a fence leaves: worker A worked out where a queued job goes
    (the pool's one card), then its pass blocked past WORKER_STALE_SECONDS (a slow disk, a
    paused machine); B took the lease over and started a job submitted meanwhile (high
    priority) on that card. A's start, carried on after the takeover, must not happen: its
    switch to Running is conditional on Queued, which still held, so only the lease, checked
    in the same transaction, stops it from running a second job on the card."""
    settings = runner_settings
    settings.LOCAL_ACCELERATORS = f"{CARD}=1"
    settings.WORKER_STALE_SECONDS = 60
    owner = _owner()
    one_card = [Role("master", 1, accelerator_type=CARD, accelerators=1)]
    a = Worker(worker_on("gpu-a", 101, run_dir=str(settings.LOCAL_RUN_DIR)))
    a.tick()  # holds the lease
    # Queue tasks, which a higher priority passes (a standalone job would start first).
    queued = {"submission": Submission(SUBMIT_QUEUE, 1, 1)}
    waiting = submit(owner, make_spec(UNTIL_THE_GATE_OPENS, roles=one_card, **queued))
    # A's pass, up to the start of the job: the card is free.
    allocation = current_capacity().allocate(requirement(waiting.job_spec()))
    assert allocation is not None
    lease_renewed(seconds_ago=61)  # A blocked
    urgent = submit(
        owner, make_spec(UNTIL_THE_GATE_OPENS, roles=one_card, priority="high", **queued)
    )
    b = Worker(worker_on("gpu-b", 202, run_dir=str(tmp_path / "b-runs")))
    b.tick()  # takes over, starts the urgent job on the card
    assert status_of(urgent) == JobStatus.RUNNING

    started = start_job(waiting, allocation, children=a.children, worker=a.identity)

    assert started is False
    assert status_of(waiting) == JobStatus.QUEUED
    assert not attempt_dir(waiting.public_id, 1).exists()  # nothing launched for it
    assert [run.devices for run in LocalRun.objects.all()] == [{CARD: [0]}]
    open_gate(settings)


def test_a_pass_ends_at_the_first_start_refused_for_a_lost_lease(db, runner_settings):  # noqa: F811
    """Once the lease is gone mid-pass, the rest of the queue is left to the new holder."""
    settings = runner_settings
    settings.WORKER_STALE_SECONDS = 60
    owner = _owner()
    a = Worker(worker_on("gpu-a", 101, run_dir=str(settings.LOCAL_RUN_DIR)))
    a.tick()
    jobs = [submit(owner, make_spec("true")) for _ in range(3)]
    lease_renewed(seconds_ago=61)
    assert worker_beat(worker=worker_on("gpu-b", 202)) is True

    assert dispatch_local(children=a.children, worker=a.identity) == []
    assert {status_of(job) for job in jobs} == {JobStatus.QUEUED}


def _owner():
    from django.contrib.auth.models import User

    return User.objects.create_user("carol", password="carol-password")


# -- Local jobs started by a worker elsewhere ---------------------------------------------


def test_a_worker_never_relaunches_a_local_job_started_by_a_worker_elsewhere(
    db,
    runner_settings,  # noqa: F811
):
    """A job Running on another host (or run directory) has no files here: to this worker
    its replicas look never launched. It neither launches them nor fails the job, and says
    on the job why it does not follow it."""
    job = submit(_owner(), make_spec("sleep 30"))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, started_at=timezone.now())
    LocalRun.objects.create(job=job, runner="gpu-a:/srv/console/var/runs", devices={})
    JobReplica.objects.create(job=job, role="master", index=0)
    worker = Worker()

    worker.tick()
    worker.note_runs_elsewhere()

    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert not attempt_dir(job.public_id, 1).exists()  # nothing launched here
    assert list(job.replicas.values_list("pid", flat=True)) == [None]
    [event] = job.events.filter(reason="NotFollowed")
    assert "看不到本任务的进程" in event.message  # in the console's language (Chinese by default)
    assert "gpu-a" not in event.message  # no machine names for users


def test_a_job_run_by_a_worker_with_another_run_directory_shows_its_log_and_goes_when_deleted(
    alice,
    alice_client,
    runner_settings,  # noqa: F811
    tmp_path,
):
    """Found live: a worker standing by on this host with a run directory of its own took
    over and ran a job. The web server (whose LOCAL_RUN_DIR is the first worker's) said "No
    output yet" on the job page, the download was a 404 and a search found nothing, and
    Delete left the job's folder (its logs, up to LOCAL_LOG_MAX_MB a replica) behind. The job
    records where it ran (LocalRun.runner): on this host, its files are read and removed
    there."""
    standby_dir = tmp_path / "runs-of-the-standby"
    runner_settings.LOCAL_RUN_DIR = standby_dir  # the worker that took over
    job = submit(alice, make_spec("echo trained-$((6 * 7))"))  # the page shows the command
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED, what="the job to end")
    assert (standby_dir / job.public_id / "logs" / "master-0.log").exists()
    runner_settings.LOCAL_RUN_DIR = tmp_path / "runs"  # the web server's
    alice_client.cookies["django_language"] = "en"
    page_url = reverse("job-detail", args=[job.public_id])

    page = alice_client.get(page_url).content.decode()
    download = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))
    searched = alice_client.get(page_url, {"replica": "master-0", "q": "trained"})

    assert "trained-42" in page
    assert "No output yet" not in page
    assert download.status_code == 200
    assert b"trained-42" in b"".join(download.streaming_content)
    assert "<mark>trained</mark>-42" in searched.content.decode()
    alice_client.post(reverse("job-delete", args=[job.public_id]), {"confirmed": "1"})
    assert not Job.objects.filter(pk=job.pk).exists()
    assert not (standby_dir / job.public_id).exists()


def test_the_log_of_a_job_run_on_another_machine_is_said_to_be_there_not_missing(
    alice,
    alice_client,
    runner_settings,  # noqa: F811
):
    """Found live: a web server showed a job run by a worker on another machine "No output
    yet", as if it had printed nothing, and its download said it had no log yet."""
    job = submit(alice, make_spec("echo hello"))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, started_at=timezone.now())
    LocalRun.objects.create(job=job, runner="gpu-far-away:/srv/console/var/runs", devices={})
    JobReplica.objects.create(job=job, role="master", index=0, status="running")
    alice_client.cookies["django_language"] = "en"
    page_url = reverse("job-detail", args=[job.public_id])
    elsewhere = "This job runs on another machine than this web server, and its log is kept there"

    page = html.unescape(alice_client.get(page_url).content.decode())
    searched = html.unescape(alice_client.get(page_url, {"q": "hello"}).content.decode())
    download = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))

    assert elsewhere in page and "No output yet" not in page
    assert elsewhere in searched
    # Download: a page saying where the log is, with the way back, not "Page not found".
    assert download.status_code == 404
    said = html.unescape(download.content.decode())
    assert elsewhere in said and "Page not found" not in said
    assert f'href="{page_url}#logs"' in said and "gpu-far-away" not in said
    assert "gpu-far-away" not in page  # users are not shown machines
    # Its usage is sampled there too: no table saying the first sample comes within seconds.
    assert 'id="usage"' not in page and "Not measured yet" not in page


def test_a_job_left_alone_is_told_so_once_however_often_a_worker_elsewhere_takes_over(
    db,
    runner_settings,  # noqa: F811
):
    """Found live: each start of a worker elsewhere (serve restarting one that died, a
    standby taking over and handing back) added the same NotFollowed event again."""
    job = submit(_owner(), make_spec("sleep 30"))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, started_at=timezone.now())
    LocalRun.objects.create(job=job, runner="gpu-a:/srv/console/var/runs", devices={})

    for _ in range(3):
        Worker().note_runs_elsewhere()

    assert list(job.events.values_list("reason", flat=True)) == ["Created", "NotFollowed"]


def test_a_worker_taking_the_lease_over_says_once_on_a_job_it_follows_again_after_how_long(
    db,
    runner_settings,  # noqa: F811
):
    """qa32: a job followed again after a takeover got no event, so its events had a gap and
    an exit or a stop acted on late with nothing saying why."""
    owner = _owner()
    job = submit(owner, make_spec(UNTIL_THE_GATE_OPENS))
    first = Worker()
    run_until(first, lambda: job.replicas.filter(status="running").exists())
    elsewhere = submit(owner, make_spec("sleep 30"))
    Job.objects.filter(pk=elsewhere.pk).update(status=JobStatus.RUNNING, started_at=timezone.now())
    LocalRun.objects.create(job=elsewhere, runner="gpu-a:/srv/console/var/runs", devices={})
    JobReplica.objects.create(job=elsewhere, role="master", index=0, status="running")
    lease_renewed(seconds_ago=61)  # the first worker killed a minute ago
    standby = WorkerIdentity.new()

    lease = wait_for_lease(threading.Event(), standby)
    assert lease is not None
    _taken, unfollowed = lease
    second = Worker(standby)
    for _ in range(2):  # started again with nothing else happening: said once
        second.note_followed_again(unfollowed_seconds=unfollowed)

    assert unfollowed is not None and 61 <= unfollowed < 70
    [event] = job.events.filter(reason="FollowedAgain")
    assert event.type == "Normal"
    assert event.reason_label == "接管后重新跟踪"
    assert event.message.startswith("一个 worker（任务调度进程）接管后重新跟踪本任务")
    with translation.override("en"):
        assert f"after {unfollowed} seconds in which no worker followed it" in event.message_shown
    assert not elsewhere.events.filter(reason="FollowedAgain").exists()
    open_gate(runner_settings)
    run_until(second, lambda: status_of(job) == JobStatus.SUCCEEDED)
    reasons = list(job.events.order_by("created_at", "id").values_list("reason", flat=True))
    assert reasons == ["Created", "Started", "FollowedAgain", "Succeeded"]


def test_each_later_takeover_says_again_that_a_job_is_followed_again_once_for_each_takeover(
    db,
    runner_settings,  # noqa: F811
):
    """Left25: worker A dies, B takes over, B dies, C takes over: only B's takeover was said,
    as a job whose last event was FollowedAgain got none."""
    job = submit(_owner(), make_spec(UNTIL_THE_GATE_OPENS))
    run_until(Worker(), lambda: job.replicas.filter(status="running").exists())

    takers = []
    for _ in range(2):  # B, then C, each after the last holder was killed a minute ago
        lease_renewed(seconds_ago=61)
        identity = WorkerIdentity.new()
        lease = wait_for_lease(threading.Event(), identity)
        assert lease is not None
        takers.append((identity, lease[1]))
        for _ in range(2):  # its loop started again, still holding the lease: nothing more
            assert wait_for_lease(threading.Event(), identity) is not None
            Worker(identity).note_followed_again(unfollowed_seconds=lease[1])

    events = list(job.events.filter(reason="FollowedAgain").order_by("created_at", "id"))
    assert len(events) == 2
    with translation.override("en"):
        for event, (_identity, unfollowed) in zip(events, takers, strict=True):
            assert unfollowed is not None
            assert f"after {unfollowed} seconds in which no worker" in event.message_shown
    open_gate(runner_settings)


def test_a_job_a_worker_elsewhere_left_alone_is_followed_again_without_a_gap_it_cannot_know(
    db,
    runner_settings,  # noqa: F811
    tmp_path,
):
    """Left alone while a worker elsewhere held the lease (NotFollowed), the job went
    unfollowed far longer than the lease's last gap: the seconds are not said then."""
    job = submit(_owner(), make_spec(UNTIL_THE_GATE_OPENS))
    here = runner_settings.LOCAL_RUN_DIR
    run_until(Worker(), lambda: job.replicas.filter(status="running").exists())
    runner_settings.LOCAL_RUN_DIR = tmp_path / "runs-elsewhere"  # a standby's, which takes over
    Worker().note_runs_elsewhere()
    runner_settings.LOCAL_RUN_DIR = here  # and back where the job runs

    Worker().note_followed_again(unfollowed_seconds=4)

    [event] = job.events.filter(reason="FollowedAgain")
    with translation.override("en"):
        assert event.message_shown.startswith(
            "A worker (job scheduler) took over and follows this job again: what its replicas "
            "did while no worker followed them"
        )
    assert list(job.events.values_list("reason", flat=True))[-2:] == [
        "NotFollowed",
        "FollowedAgain",
    ]
    open_gate(runner_settings)


# -- One clock --------------------------------------------------------------------------


def test_a_live_worker_whose_clock_is_behind_still_reads_as_running(db, monkeypatch):
    """The worker's machine is ten minutes slow: its renewal is stamped by the database."""
    skewed_clock(monkeypatch, -timedelta(minutes=10))
    worker_beat(worker=worker_on("gpu-a", 101))
    monkeypatch.undo()

    r = Client().get("/healthz")

    assert r.status_code == 200
    assert r.json()["worker"] == {"status": "ok", "last_seen_seconds": 0, "standby": 0}


def test_a_dead_worker_reads_as_stale_to_a_web_server_whose_clock_is_behind(db, monkeypatch):
    """Renewed two minutes ago by the database's clock; the web server's clock is ten minutes
    slow, so by its own clock the renewal would be in the future (a fresh worker)."""
    worker_beat(worker=worker_on("gpu-a", 101))
    lease_renewed(seconds_ago=120)
    skewed_clock(monkeypatch, -timedelta(minutes=10))

    r = Client().get("/healthz")

    assert r.status_code == 503
    assert r.json()["worker"] == {"status": "stale", "last_seen_seconds": 120, "standby": 0}


def test_the_job_list_banner_reads_the_database_clock_too(alice, monkeypatch, settings):
    settings.LANGUAGE_CODE = "en"
    submit(alice, make_spec("echo hi"))
    worker_beat(worker=worker_on("gpu-a", 101))
    lease_renewed(seconds_ago=5 * 60 + 10)
    client = Client()
    client.force_login(alice)
    client.cookies["django_language"] = "en"
    skewed_clock(monkeypatch, -timedelta(minutes=30))  # the web server's clock is slow

    assert banner(client.get(reverse("job-list")).content.decode()) == STALE_EN


# -- What staff see ---------------------------------------------------------------------


def test_staff_see_every_worker_seen_in_the_last_day_and_users_none(reviewer, alice, settings):
    settings.LANGUAGE_CODE = "en"
    active, standby, gone = (
        worker_on("gpu-a", 101),
        worker_on("gpu-b", 202),
        worker_on("gpu-c", 303),
    )
    for worker in (active, standby, gone):
        worker_beat(worker=worker)
    WorkerProcess.objects.filter(host="gpu-c").update(seen_at=Now() - timedelta(days=2))
    staff, user = Client(), Client()
    staff.force_login(reviewer)
    user.force_login(alice)
    for client in (staff, user):
        client.cookies["django_language"] = "en"

    page = staff.get(reverse("admin:index")).content.decode()

    rows = re.findall(r'<tr class="known-worker" data-role="(\w+)">(.*?)</tr>', page, re.S)
    assert [(role, re.findall(r"<td[^>]*>(.*?)</td>", cells)[1:3]) for role, cells in rows] == [
        ("active", ["gpu-a", "101"]),
        ("standby", ["gpu-b", "202"]),
    ]
    assert "Active (dispatching)" in page and "Standing by" in page
    assert Client().get("/healthz").json()["worker"]["standby"] == 1
    # The worker stops: staff's banner on the job list lists both, stopped and standing by.
    worker_stopped(worker=active)
    listed = staff.get(reverse("job-list")).content.decode()
    assert sorted(re.findall(r'data-role="(\w+)"', listed)) == ["standby", "stopped"]
    assert 'id="known-workers"' not in user.get(reverse("job-list")).content.decode()


def test_a_worker_killed_and_restarted_in_its_place_is_not_counted_or_listed_as_standing_by(
    reviewer, settings
):
    """Found live: after a kill -9 and a restart in the same place, /healthz said
    "standby": 2 (the dead worker and the real standby) and staff saw the dead one as
    "Standing by" for WORKER_STALE_SECONDS. Only one worker runs per run directory, so the
    one started before in that place is gone."""
    settings.LANGUAGE_CODE = "en"
    killed, standby = worker_on("gpu-a", 101), worker_on("gpu-b", 202)
    worker_beat(worker=killed)
    worker_beat(worker=standby)
    restarted = worker_on("gpu-a", 102)  # killed's row beat a moment ago: not stale yet

    assert worker_beat(worker=restarted, run_dir_locked=True) is True

    assert worker_state().standby == 1
    assert Client().get("/healthz").json()["worker"]["standby"] == 1
    staff = Client()
    staff.force_login(reviewer)
    staff.cookies["django_language"] = "en"
    page = staff.get(reverse("admin:index")).content.decode()
    rows = re.findall(r'<tr class="known-worker" data-role="(\w+)"><td>(.*?)</td>', page)
    pids = re.findall(r'<tr class="known-worker"[^>]*><td>.*?</td><td>.*?</td><td>(\d+)</td>', page)
    assert list(zip(pids, rows, strict=True)) == [
        ("102", ("active", "Active (dispatching)")),
        ("202", ("standby", "Standing by")),
        ("101", ("replaced", "Gone (restarted in its place)")),
    ]


def test_rows_of_workers_not_seen_for_a_week_are_forgotten(db):
    for worker in (worker_on("gpu-a", 101), worker_on("gpu-b", 202), worker_on("gpu-c", 303)):
        worker_beat(worker=worker)
    WorkerProcess.objects.filter(host="gpu-b").update(seen_at=Now() - timedelta(days=6))
    WorkerProcess.objects.filter(host="gpu-c").update(seen_at=Now() - timedelta(days=8))

    assert forget_old_workers() == 1
    assert sorted(WorkerProcess.objects.values_list("host", flat=True)) == ["gpu-a", "gpu-b"]


# -- The job list's banner, refreshed with its table -------------------------------------


def test_the_job_lists_refresh_brings_the_banner_and_takes_it_away(alice, settings):
    settings.LANGUAGE_CODE = "en"
    submit(alice, make_spec("echo hi"))  # queued: the list refreshes
    client = Client()
    client.force_login(alice)
    client.cookies["django_language"] = "en"
    url = reverse("job-list")
    worker_beat(worker=worker_on("gpu-a", 101))

    def refresh() -> str:
        r = client.get(url, headers={"HX-Request": "true"})
        assert r.status_code == 200
        return r.content.decode()

    running = refresh()
    lease_renewed(seconds_ago=5 * 60 + 10)
    stale = refresh()
    lease_renewed(seconds_ago=0)
    back = refresh()

    for body in (running, stale, back):
        assert '<div id="worker-slot" hx-swap-oob="true">' in body
        assert 'id="job-table"' in body
    assert banner(running) is None
    assert banner(stale) == STALE_EN
    assert banner(back) is None


@pytest.mark.browser
def test_the_job_lists_banner_appears_and_goes_as_the_list_refreshes_in_the_browser(page, alice):
    from playwright.sync_api import expect

    job = submit(alice, make_spec("echo hi"))
    worker_beat(worker=worker_on("gpu-a", 101))
    log_in(page, "alice", "alice-password")
    page.goto(reverse("job-list"))
    expect(page.locator(f'tr[data-job="{job.public_id}"]')).to_be_visible()
    expect(page.locator("#worker-banner")).to_have_count(0)

    lease_renewed(seconds_ago=5 * 60 + 10)  # the worker was killed five minutes ago
    expect(page.locator("#worker-banner")).to_contain_text("任务调度进程（worker）已 5 分钟未运行")

    lease_renewed(seconds_ago=0)  # it is back
    expect(page.locator("#worker-banner")).to_have_count(0)
    expect(page.locator(f'tr[data-job="{job.public_id}"]')).to_be_visible()


# -- Two real workers on one database ---------------------------------------------------


def test_a_second_real_worker_waits_and_takes_over_when_the_first_stops(world, tmp_path):  # noqa: F811
    """Two `manage.py worker` processes with their own run directories (as on two hosts)
    sharing one SQLite database: the second waits, saying for whom, and takes over once the
    first stops with SIGTERM."""
    first = start_worker(world)
    wait_for(lambda: query(world, "SELECT pid FROM jobs_workerheartbeat") == [(first.pid,)])
    world["env"] = {**world["env"], "LOCAL_RUN_DIR": str(tmp_path / "other-runs")}
    second = start_worker(world)
    wait_for(
        lambda: (second.pid,) in query(world, "SELECT pid FROM jobs_workerprocess"),
        what="the second worker's own beat",
    )
    assert query(world, "SELECT pid FROM jobs_workerheartbeat") == [(first.pid,)]

    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=15) == 0
    wait_for(
        lambda: (
            query(world, "SELECT pid, stopped_at FROM jobs_workerheartbeat") == [(second.pid, None)]
        ),
        what="the takeover",
    )
    second.send_signal(signal.SIGTERM)
    output = second.communicate(timeout=15)[0].decode()

    assert (
        f"another worker is active on host {socket.gethostname()} (pid {first.pid}) since "
        in output
    )
    assert "took over as the active worker" in output
    started = query(world, "SELECT started_at FROM jobs_workerheartbeat")[0][0]
    assert datetime.fromisoformat(started)  # when the second took it, by the database
