"""The worker's heartbeat and what is said with it (jobs.health): `GET /healthz` for probes,
the banner for users whose jobs wait on a worker that does not run, staff's view of it, and
the job page's "why waiting" line. The heartbeat is written by a real worker process; a stale
one is an old heartbeat row, as a worker killed minutes ago leaves it."""

from __future__ import annotations

import errno
import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db.models.functions import Now
from django.test import Client
from django.urls import reverse

from jobs.health import WorkerIdentity, worker_beat, worker_stopped
from jobs.management.commands.serve import gunicorn_command
from jobs.models import Job, JobStatus, WorkerHeartbeat
from jobs.runner import free_port
from jobs.scheduler import DISK_PRESSURE, held_for

from .conftest import log_in
from .runner_helpers import make_spec, submit
from .test_alerts import smtp_server  # noqa: F401  (the world's mail server)
from .test_worker import query, start_worker, wait_for, world  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent

STALE_ZH = (
    "任务调度进程（worker）已 5 分钟未运行：排队中的任务不会启动，运行中的任务不会被跟踪。"
    "请联系管理员。"
)
STALE_EN = (
    "The job scheduler (worker) has not run for 5 minutes: queued jobs will not start and "
    "running jobs are not tracked. Please contact an administrator."
)
IN_QUEUE_EN = (
    "Waiting in its queue: it starts by itself, in the queue's order, once the local pool "
    "has room for it."
)
WORKER_DOWN_EN = (
    "Waiting for the job scheduler (worker), which is not running: no queued job starts "
    "until it runs again. Please contact an administrator."
)


def beat(seconds_ago: float = 0) -> None:
    """The worker's lease, as a worker that last ticked `seconds_ago` (by the database's
    clock) left it."""
    worker_beat(worker=WorkerIdentity.here())
    WorkerHeartbeat.objects.update(seen_at=Now() - timedelta(seconds=seconds_ago))


def client_in(user, language: str) -> Client:
    client = Client()
    client.force_login(user)
    client.cookies["django_language"] = language
    return client


def banner(page: str) -> str | None:
    found = re.search(r'<strong class="worker-banner-text">(.*?)</strong>', page, re.S)
    return html.unescape(found.group(1)) if found else None


def why_waiting(page: str) -> str | None:
    found = re.search(r'<p class="mb-2" id="why-waiting">(.*?)</p>', page, re.S)
    return html.unescape(found.group(1)) if found else None


# -- The health endpoint --------------------------------------------------------------


def test_healthz_answers_200_with_a_fresh_heartbeat_reading_one_row_and_writing_nothing(
    db, django_assert_num_queries
):
    beat(seconds_ago=3)

    with django_assert_num_queries(1) as queries:
        r = Client().get("/healthz")

    assert r.status_code == 200
    assert r.json() == {
        "status": "ok",
        "database": "ok",
        "disk": "ok",
        "worker": {"status": "ok", "last_seen_seconds": 3, "standby": 0},
    }
    assert queries.captured_queries[0]["sql"].startswith("SELECT")
    assert "no-store" in r["Cache-Control"] and "max-age=0" in r["Cache-Control"]
    assert not r.cookies  # no session, no CSRF cookie
    # Nothing of the machine it runs on: the endpoint answers anyone.
    assert socket.gethostname() not in r.content.decode()
    assert str(os.getpid()) not in r.content.decode()


def test_healthz_answers_503_once_the_worker_has_not_been_seen_for_longer_than_the_threshold(
    db, settings
):
    settings.WORKER_STALE_SECONDS = 60
    beat(seconds_ago=61)

    r = Client().get("/healthz")

    assert r.status_code == 503
    assert r.json() == {
        "status": "error",
        "database": "ok",
        "disk": "ok",
        "worker": {"status": "stale", "last_seen_seconds": 61, "standby": 0},
    }
    # The web server and its database alone are fine: a load balancer keeps sending to it.
    web = Client().get("/healthz", {"worker": "0"})
    assert web.status_code == 200
    assert web.json() == {"status": "ok", "database": "ok", "disk": "ok"}


def test_healthz_answers_503_when_no_worker_ever_reported_or_the_last_one_stopped(db):
    never = Client().get("/healthz")
    beat()
    worker_stopped(worker=WorkerIdentity.here())
    stopped = Client().get("/healthz")

    assert (never.status_code, never.json()["worker"]) == (
        503,
        {"status": "never_seen", "last_seen_seconds": None, "standby": 0},
    )
    assert (stopped.status_code, stopped.json()["worker"]) == (
        503,
        {"status": "stopped", "last_seen_seconds": 0, "standby": 0},
    )


def test_healthz_answers_503_disk_full_when_its_disk_has_less_than_the_threshold_free(db, settings):
    # qa89: with the database's disk full /healthz answered 200 "database": "ok" (it reads)
    # while every log-in and wizard step answered 503 "The console's disk is full".
    beat(seconds_ago=3)
    found = os.statvfs(settings.VAR_DIR)
    free_mb = found.f_bavail * found.f_frsize // (1024 * 1024)
    settings.HEALTH_DISK_FREE_MB = 2 * free_mb + 1

    full = Client().get("/healthz")
    web = Client().get("/healthz", {"worker": "0"})
    settings.HEALTH_DISK_FREE_MB = 0
    freed = Client().get("/healthz")

    assert full.status_code == 503
    assert full.json() == {
        "status": "error",
        "database": "ok",
        "disk": "full",
        "worker": {"status": "ok", "last_seen_seconds": 3, "standby": 0},
    }
    assert (web.status_code, web.json()) == (
        503,
        {"status": "error", "database": "ok", "disk": "full"},
    )
    assert (freed.status_code, freed.json()["disk"]) == (200, "ok")


@pytest.fixture
def full_run_dir_disk(db, settings, tmp_path):
    """LOCAL_RUN_DIR on a 16 MB file system of its own (a tmpfs, as root) with 4 MB free, the
    rest of the console on the test machine's disk; HEALTH_DISK_FREE_MB at 8."""
    if os.geteuid() != 0:
        pytest.skip("mounts a tmpfs: as root")
    disk = tmp_path / "runs-disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)], check=True)
    try:
        found = os.statvfs(disk)
        (disk / "filler").write_bytes(b"\0" * (found.f_bavail * found.f_frsize - 4 * 1024**2))
        settings.LOCAL_RUN_DIR = disk / "runs"  # not made yet: its disk is still looked at
        settings.HEALTH_DISK_FREE_MB = 8
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def test_healthz_answers_503_disk_full_when_the_run_folders_disk_alone_is_full(
    full_run_dir_disk, settings
):
    # qa112: with LOCAL_RUN_DIR's disk full (README recommends it apart from CONSOLE_VAR_DIR)
    # /healthz answered 200 "disk": "ok" while every new local job failed for want of space.
    beat(seconds_ago=3)

    full = Client().get("/healthz")
    web_pages = Client().get("/healthz", {"worker": "0"})
    settings.CONSOLE_BACKENDS = ["aihc"]  # no local runner: its folder is none of the console's
    remote_only = Client().get("/healthz")

    assert (full.status_code, full.json()["status"], full.json()["disk"]) == (503, "error", "full")
    # The web pages' probe (a load balancer's, README) leaves it out (review66: jobs filling
    # their own run disk took working web pages out of rotation).
    assert (web_pages.status_code, web_pages.json()) == (
        200,
        {"status": "ok", "database": "ok", "disk": "ok"},
    )
    assert (remote_only.status_code, remote_only.json()["disk"]) == (200, "ok")


def test_staff_pages_say_which_disk_is_full_and_a_users_page_does_not(
    full_run_dir_disk, alice, reviewer, settings
):
    staff = Client(headers={"Accept-Language": "en"})
    staff.force_login(reviewer)
    user = Client(headers={"Accept-Language": "en"})
    user.force_login(alice)

    pages = {
        "jobs": staff.get(reverse("job-list")).content.decode(),
        "admin": staff.get(reverse("admin:index")).content.decode(),
    }
    users_page = user.get(reverse("job-list")).content.decode()

    for name, page in pages.items():
        found = re.search(r'id="disk-notice">(.*?)</(?:div|ul)>', page, re.S)
        assert found, name
        said = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())
        assert said == (
            f"The disk of LOCAL_RUN_DIR ({full_run_dir_disk}/runs) is full: 4 MB free, under "
            "HEALTH_DISK_FREE_MB (8 MB). No local job starts until space is freed on it (they "
            'wait Queued, saying so), and /healthz answers 503 "disk": "full".'
        ), name
    assert "disk-notice" not in users_page


@pytest.fixture
def run_dir_disk_out_of_inodes(db, settings, tmp_path):
    """LOCAL_RUN_DIR on a 16 MB file system of its own (a tmpfs of 200 inodes, as root) whose
    every inode is taken by empty files, its bytes nearly all free; HEALTH_DISK_FREE_MB at 1."""
    if os.geteuid() != 0:
        pytest.skip("mounts a tmpfs: as root")
    disk = tmp_path / "runs-disk"
    disk.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=16m,nr_inodes=200", "tmpfs", str(disk)]
    subprocess.run(mount, check=True)
    try:
        (disk / "runs").mkdir()
        for n in range(1000):
            try:
                (disk / f"empty-{n}").touch()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
        settings.LOCAL_RUN_DIR = disk / "runs"
        settings.HEALTH_DISK_FREE_MB = 1
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.mark.parametrize(
    ("language", "notice"),
    [
        (
            "en",
            "The disk of LOCAL_RUN_DIR ({runs}) is full: no free inodes (files) left, though "
            "{free} MB are free. No local job starts until files are removed from it (they wait "
            'Queued, saying so), and /healthz answers 503 "disk": "full".',
        ),
        (
            "zh-hans",
            "LOCAL_RUN_DIR ({runs}) 所在磁盘已满：已没有可用的 inode（文件数），尽管还有 {free} "
            "MB 可用空间。删除其上的文件之前，本机任务都不会启动（它们保持排队并说明原因），"
            '/healthz 回应 503 "disk": "full"。',
        ),
    ],
)
def test_a_disk_with_bytes_free_but_no_inode_left_is_full_saying_no_free_inodes(
    run_dir_disk_out_of_inodes, reviewer, language, notice
):
    # fix155: full_disks counted bytes alone, so a disk that could make no file (every inode
    # taken) read as healthy, and /healthz said "disk": "ok" while every new job waited.
    found = os.statvfs(run_dir_disk_out_of_inodes)
    assert found.f_favail == 0 and found.f_bavail * found.f_frsize > 15 * 1024 * 1024
    beat(seconds_ago=3)
    staff = Client(headers={"Accept-Language": language})
    staff.force_login(reviewer)

    answer = Client().get("/healthz")
    page = staff.get(reverse("job-list")).content.decode()

    assert (answer.status_code, answer.json()["disk"]) == (503, "full")
    said = re.search(r'id="disk-notice">(.*?)</(?:div|ul)>', page, re.S)
    assert said
    said = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", said.group(1))).split())
    free = found.f_bavail * found.f_frsize // (1024 * 1024)
    assert said == notice.format(runs=run_dir_disk_out_of_inodes / "runs", free=free)


@pytest.mark.parametrize(
    ("language", "message"),
    [
        ("en", "worker is 0 (leave the worker out) or 1 (check it too, the default)."),
        ("zh-hans", "worker 只能是 0（不检查 worker）或 1（也检查 worker，默认）。"),
    ],
)
def test_healthz_refuses_an_unknown_worker_parameter_naming_it(db, language, message):
    r = Client().get("/healthz", {"worker": "yes"}, headers={"Accept-Language": language})

    assert r.status_code == 400
    assert r.json() == {"status": "error", "errors": {"worker": [message]}}


def test_healthz_answers_503_without_logging_an_error_each_time_a_probe_asks(db, caplog):
    beat(seconds_ago=5 * 60 + 10)

    answers = [Client().get("/healthz").status_code for _ in range(3)]
    wrong = Client().get("/healthz?worker=2")

    assert answers == [503, 503, 503] and wrong.status_code == 400
    assert [r for r in caplog.records if r.name == "django.request"] == []


def test_a_request_healthz_does_not_answer_by_design_is_still_logged(db, caplog):
    r = Client().post("/healthz")

    assert r.status_code == 405
    assert [r.status_code for r in caplog.records if r.name == "django.request"] == [405]


def test_healthz_answers_503_when_the_database_cannot_be_opened(tmp_path):
    """A real web server (gunicorn, as `manage.py serve` runs it) whose database is a SQLite
    file in a folder that does not exist: every query fails as with a database that is down."""
    port = str(free_port())
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CONSOLE_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'gone' / 'console.sqlite3'}",
    }
    command = gunicorn_command(python=sys.executable, host="127.0.0.1", port=port)
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    answers = {}
    try:
        deadline = time.monotonic() + 30
        for url in ("/healthz", "/healthz?worker=0"):
            while url not in answers:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{url}", timeout=5)
                    answers[url] = (200, b"")
                except urllib.error.HTTPError as e:
                    answers[url] = (e.code, e.read())
                except OSError:
                    assert server.poll() is None, "gunicorn exited"
                    assert time.monotonic() < deadline, "gunicorn never answered"
                    time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(timeout=30)

    assert answers["/healthz"] == (
        503,
        b'{"status": "error", "database": "error", "disk": "ok", '
        b'"worker": {"status": "unknown", "last_seen_seconds": null, "standby": null}}',
    )
    assert answers["/healthz?worker=0"] == (
        503,
        b'{"status": "error", "database": "error", "disk": "ok"}',
    )


# -- The heartbeat of a real worker -----------------------------------------------------


def heartbeat(world) -> dict | None:  # noqa: F811
    rows = query(
        world,
        "SELECT seen_at, stopped_at, started_at, host, pid, version FROM jobs_workerheartbeat",
    )
    if not rows:
        return None
    return dict(
        zip(("seen_at", "stopped_at", "started_at", "host", "pid", "version"), rows[0], strict=True)
    )


def test_a_running_worker_writes_its_heartbeat_at_most_every_five_seconds(world):  # noqa: F811
    worker = start_worker(world)  # ticks every 0.1 s

    wait_for(lambda: heartbeat(world) is not None, what="the first heartbeat")
    first = heartbeat(world)
    assert first["pid"] == worker.pid
    assert first["host"] == socket.gethostname()
    assert first["version"] == "0.1.0"
    assert first["stopped_at"] is None
    assert first["started_at"] <= first["seen_at"]
    wait_for(lambda: heartbeat(world)["seen_at"] != first["seen_at"], what="the next heartbeat")

    gap = datetime.fromisoformat(heartbeat(world)["seen_at"]) - datetime.fromisoformat(
        first["seen_at"]
    )
    # At most every 5 s (not each 0.1 s tick); well before WORKER_STALE_SECONDS (60), with
    # room for a busy machine. The 5 s are counted on the worker's monotonic clock from just
    # before a write, and the stored times are taken inside it: a slow first write makes the
    # stored gap a few ms short of 5 s (4.995 s seen in CI), so a tick's margin is allowed.
    assert 4.9 <= gap.total_seconds() < 30


def test_a_worker_stopped_with_sigterm_records_a_clean_stop(world):  # noqa: F811
    worker = start_worker(world)
    wait_for(lambda: heartbeat(world) is not None, what="the first heartbeat")

    worker.send_signal(signal.SIGTERM)

    assert worker.wait(timeout=15) == 0
    stopped = heartbeat(world)
    assert stopped["stopped_at"] is not None
    assert stopped["stopped_at"] == stopped["seen_at"]
    assert stopped["pid"] == worker.pid


def test_a_worker_killed_outright_leaves_its_last_beat_without_a_stop(world):  # noqa: F811
    worker = start_worker(world)
    wait_for(lambda: heartbeat(world) is not None, what="the first heartbeat")

    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=15)

    assert heartbeat(world)["stopped_at"] is None  # it goes stale as time passes


# -- What users and staff are told ------------------------------------------------------


@pytest.mark.parametrize(("language", "text"), [("zh-hans", STALE_ZH), ("en", STALE_EN)])
def test_the_page_of_a_queued_job_says_the_worker_has_not_run_when_it_is_stale(
    alice, language, text
):
    job = submit(alice, make_spec("echo hi"))
    beat(seconds_ago=5 * 60 + 10)

    page = client_in(alice, language).get(reverse("job-detail", args=[job.public_id]))

    assert page.status_code == 200
    assert banner(page.content.decode()) == text
    assert 'id="worker-last-seen"' not in page.content.decode()  # no host or pid for users


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_the_page_of_a_queued_job_has_no_banner_while_the_worker_runs(alice, language):
    job = submit(alice, make_spec("echo hi"))
    beat(seconds_ago=2)

    page = client_in(alice, language).get(reverse("job-detail", args=[job.public_id]))

    assert page.status_code == 200
    assert 'id="worker-banner"' not in page.content.decode()


def test_the_status_poll_brings_the_banner_and_takes_it_away_when_the_worker_is_back(alice):
    job = submit(alice, make_spec("echo hi"))
    client = client_in(alice, "en")
    live = reverse("job-live", args=[job.public_id])
    beat(seconds_ago=5 * 60 + 10)

    stale = client.get(live, headers={"HX-Request": "true"}).content.decode()
    beat()
    fresh = client.get(live, headers={"HX-Request": "true"}).content.decode()

    assert banner(stale) == STALE_EN
    assert banner(fresh) is None


def test_the_page_of_a_finished_job_never_has_the_banner(alice):
    job = submit(alice, make_spec("echo hi"))
    job.status = JobStatus.SUCCEEDED
    job.save(update_fields=["status"])

    page = client_in(alice, "en").get(reverse("job-detail", args=[job.public_id]))

    assert 'id="worker-banner"' not in page.content.decode()


def test_why_waiting_says_the_worker_is_not_running_before_any_other_reason(alice, settings):
    settings.LANGUAGE_CODE = "en"
    job = submit(alice, make_spec("echo hi"))
    held_for(job, DISK_PRESSURE, "Waiting for disk space")
    client = client_in(alice, "en")
    url = reverse("job-detail", args=[job.public_id])
    beat(seconds_ago=2)
    running = why_waiting(client.get(url).content.decode())

    beat(seconds_ago=120)
    stale = why_waiting(client.get(url).content.decode())
    zh = why_waiting(client_in(alice, "zh-hans").get(url).content.decode())

    assert running != WORKER_DOWN_EN
    assert stale == WORKER_DOWN_EN
    assert (
        zh
        == "正在等待任务调度进程（worker）：它没有在运行，恢复运行之前不会启动任何排队中的任务。请联系管理员。"
    )


def test_the_job_list_shows_the_banner_to_a_user_with_a_queued_job_and_not_to_others(
    alice, bob, django_assert_num_queries
):
    submit(alice, make_spec("echo hi"))
    beat(seconds_ago=5 * 60 + 10)
    alices, bobs = client_in(alice, "en"), client_in(bob, "en")
    alices.get(reverse("job-list"))  # warm the session

    # Session, user, one page of jobs, the heartbeat with whether she has jobs waiting, and
    # the pools her jobs used (the pool filter lists removed ones too; it names the offered
    # pools without reading the local pool's running jobs), and the label filter's suggestions.
    with django_assert_num_queries(6):
        page = alices.get(reverse("job-list")).content.decode()

    assert banner(page) == STALE_EN
    assert banner(bobs.get(reverse("job-list")).content.decode()) is None
    beat()
    assert banner(alices.get(reverse("job-list")).content.decode()) is None


def test_staff_see_the_banner_with_when_and_where_the_worker_was_last_seen(reviewer, settings):
    settings.TIME_ZONE = "UTC"
    beat()
    WorkerHeartbeat.objects.update(
        seen_at=datetime(2026, 12, 1, 9, 30, 5, tzinfo=UTC), host="gpu-host-1", pid=4242
    )
    client = client_in(reviewer, "en")

    pages = {
        "job list": client.get(reverse("job-list")).content.decode(),
        "admin index": client.get(reverse("admin:index")).content.decode(),
        "admin jobs": client.get(reverse("admin:jobs_job_changelist")).content.decode(),
    }

    for name, page in pages.items():
        assert banner(page), name
        assert (
            "Worker last seen 2026-12-01 09:30:05 on gpu-host-1 (process 4242, version 0.1.0)."
            in page
        ), name


def test_staff_read_when_the_worker_stopped_as_one_text_in_either_language(reviewer, settings):
    # Found in QA: the Chinese banner put an English-style space between its two sentences
    # ("...版本 0.1.0）。 它已被正常停止...").
    settings.TIME_ZONE = "UTC"
    beat()
    worker_stopped(worker=WorkerIdentity.here())
    WorkerHeartbeat.objects.update(
        seen_at=datetime(2026, 12, 1, 9, 30, 5, tzinfo=UTC), host="gpu-host-1", pid=4242
    )

    def last_seen(language: str) -> str:
        page = client_in(reviewer, language).get(reverse("job-list")).content.decode()
        found = re.search(r'id="worker-last-seen">(.*?)</div>', page, re.S)
        return html.unescape(found.group(1)).strip()

    assert last_seen("zh-hans") == (
        "任务调度进程（worker）最近一次心跳：2026-12-01 09:30:05，主机 gpu-host-1（进程 4242，版本 0.1.0）。"
        "它已被正常停止（SIGTERM 或 Ctrl-C），此后没有新的 worker 启动。"
    )
    assert last_seen("en") == (
        "Worker last seen 2026-12-01 09:30:05 on gpu-host-1 (process 4242, version 0.1.0). "
        "It was stopped (SIGTERM or Ctrl-C) and none has started since."
    )


@pytest.mark.parametrize(
    ("language", "what_to_check"),
    [
        (
            "en",
            "Its log says why: the output of manage.py serve (the terminal of make run, or "
            "journalctl -u ai-job-console under systemd); /healthz says once it runs again.",
        ),
        (
            "zh-hans",
            "原因见其日志：manage.py serve 的输出（make run 的终端，或 systemd 下的 journalctl "
            "-u ai-job-console）；它恢复运行后 /healthz 会显示。",
        ),
    ],
)
def test_staff_are_told_where_to_look_instead_of_to_contact_an_administrator(
    reviewer, alice, language, what_to_check
):
    # qa102: staff are the administrators the users' text sends them to.
    submit(alice, make_spec("echo hi"))
    beat(seconds_ago=5 * 60 + 10)

    staffs = banner(client_in(reviewer, language).get(reverse("job-list")).content.decode())
    users = banner(client_in(alice, language).get(reverse("job-list")).content.decode())

    assert staffs.endswith(what_to_check)
    assert users == {"en": STALE_EN, "zh-hans": STALE_ZH}[language]
    assert Job.objects.filter(status=JobStatus.QUEUED).count() == 1


def test_the_worker_list_says_how_long_ago_in_minutes_or_hours_past_two_minutes(reviewer):
    # Found in QA: "1655 seconds ago" (and "1655 秒前") for a worker stopped half an hour ago.
    from jobs.models import WorkerProcess

    def last_seen(seconds_ago: int, language: str) -> str:
        beat(seconds_ago=seconds_ago)
        WorkerProcess.objects.update(seen_at=Now() - timedelta(seconds=seconds_ago))
        page = client_in(reviewer, language).get(reverse("admin:index")).content.decode()
        row = re.search(r'<tr class="known-worker"[^>]*>(.*?)</tr>', page, re.S).group(1)
        return re.findall(r"<td[^>]*>(.*?)</td>", row)[-1]

    assert last_seen(30, "en") == "30 seconds ago"
    assert last_seen(1655, "en") == "27 minutes ago"
    assert last_seen(1655, "zh-hans") == "27 分钟前"
    assert last_seen(5 * 3600 + 60, "en") == "5 hours ago"
    assert last_seen(5 * 3600 + 60, "zh-hans") == "5 小时前"


def test_staff_see_that_the_worker_runs_on_the_admin_index(reviewer):
    beat(seconds_ago=3)

    page = client_in(reviewer, "en").get(reverse("admin:index")).content.decode()

    assert banner(page) is None
    assert re.search(r"The worker runs: last seen [34] seconds ago on \S+ \(process \d+\)", page)


# -- In the browser ---------------------------------------------------------------------


@pytest.mark.browser
def test_a_queued_jobs_page_shows_the_banner_in_the_browser_when_the_worker_is_stale(page, alice):
    from playwright.sync_api import expect

    job = submit(alice, make_spec("echo hi"))
    beat(seconds_ago=5 * 60 + 10)
    log_in(page, "alice", "alice-password")

    page.goto(reverse("job-detail", args=[job.public_id]))

    expect(page.locator("#worker-banner")).to_have_text(STALE_ZH)
    expect(page.locator("#why-waiting")).to_contain_text("任务调度进程（worker）")
    beat()  # the worker is back: the next status poll takes the banner away
    expect(page.locator("#worker-banner")).to_have_count(0)


# Requests made with Django's test client in a process whose database cannot be opened (its
# folder does not exist): the session and the API key are read from it.
REQUESTS_WITHOUT_A_DATABASE = """
import json, django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="127.0.0.1")
client.cookies["sessionid"] = "abcdefgh12345678"
page = client.get("/")
from datetime import UTC, datetime
from jobs.aihc.signer import authorization
now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
headers = {"host": "127.0.0.1", "x-bce-date": now}
signed = authorization(access_key="a" * 32, secret_key="b" * 32, method="GET",
    path="/api/v1/aijobs", params=[], headers=headers, timestamp=now)
api = client.get("/api/v1/aijobs", HTTP_AUTHORIZATION=signed, HTTP_X_BCE_DATE=now)
health = client.get("/healthz")
print(json.dumps({
    "page": [page.status_code, page.content.decode(), page.get("Retry-After")],
    "api": [api.status_code, api.json()],
    "health": [health.status_code, health.json()],
}))
"""


def _run_without_a_database(tmp_path, script: str) -> subprocess.CompletedProcess:
    """Runs `script` in a console process whose SQLite database's folder does not exist."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "CONSOLE_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'gone' / 'console.sqlite3'}",
    }
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )


def test_pages_and_the_api_answer_503_saying_the_database_cannot_be_reached(tmp_path):
    # Found in QA: with PostgreSQL stopped, a logged-in user's every page was "Server error"
    # (500), each with a traceback in the log.
    done = _run_without_a_database(tmp_path, REQUESTS_WITHOUT_A_DATABASE)
    answers = json.loads(done.stdout.splitlines()[-1])

    status, body, retry_after = answers["page"]
    assert status == 503
    # LANGUAGE_CODE's; lang24: each language's own
    assert "<h1 data-request-error>数据库暂时无法访问</h1>" in body
    assert retry_after == "30"
    assert answers["api"][0] == 503
    assert answers["api"][1]["code"] == "ServiceUnavailable"
    assert answers["health"] == [
        503,
        {
            "status": "error",
            "database": "error",
            "disk": "ok",
            "worker": {"status": "unknown", "last_seen_seconds": None, "standby": None},
        },
    ]
    assert "Traceback" not in done.stderr
    assert "the database cannot be reached (GET /): unable to open database file" in done.stderr


# Pages not found and a form's expired CSRF token, for a logged-in browser (its session
# cookie), in a process whose database cannot be opened.
ERROR_PAGES_WITHOUT_A_DATABASE = """
import json, django
django.setup()
from django.test import Client
answers = {}
for path in ["/favicon.ico", "/no/such/page/"]:
    client = Client(HTTP_HOST="127.0.0.1", raise_request_exception=False)
    client.cookies["sessionid"] = "abcdefgh12345678"
    page = client.get(path)
    answers[path] = [page.status_code, page.get("Retry-After")]
client = Client(HTTP_HOST="127.0.0.1", enforce_csrf_checks=True, raise_request_exception=False)
client.cookies["sessionid"] = "abcdefgh12345678"
expired = client.post("/jobs/x/stop/")
answers["csrf"] = [expired.status_code, expired.get("Retry-After")]
print(json.dumps(answers))
"""


def test_a_page_not_found_or_expired_answers_503_too_while_the_database_cannot_be_reached(
    tmp_path,
):
    # Review 25: those pages show the logged-in user in their header, read from the database
    # after the view, where the 503 middleware does not look: every address not found (a
    # browser's /favicon.ico with each page) was a 500 with a traceback.
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "CONSOLE_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'gone' / 'console.sqlite3'}",
    }
    done = subprocess.run(
        [sys.executable, "-c", ERROR_PAGES_WITHOUT_A_DATABASE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )

    assert json.loads(done.stdout.splitlines()[-1]) == {
        "/favicon.ico": [503, "30"],
        "/no/such/page/": [503, "30"],
        "csrf": [503, "30"],
    }
    assert "Traceback" not in done.stderr
    assert "the database cannot be reached (GET /favicon.ico)" in done.stderr


# A logged-in page's refresh (htmx, with the page's user in X-Console-User: base.html), in a
# process whose database cannot be opened.
POLL_WITHOUT_A_DATABASE = """
import json, django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="127.0.0.1", raise_request_exception=False)
client.cookies["sessionid"] = "abcdefgh12345678"
poll = client.get("/", headers={"HX-Request": "true", "X-Console-User": "1"})
print(json.dumps([poll.status_code, poll.get("Retry-After")]))
"""


def test_a_pages_refresh_answers_503_too_while_the_database_cannot_be_reached(tmp_path):
    # The check that the page's user is the one logged in (jobs.http.HtmxLoginEndedMiddleware,
    # qa36) reads the session before the 503 middleware looks: every refresh of every open
    # page was a 500 with a traceback, two every 2 s per job page.
    done = _run_without_a_database(tmp_path, POLL_WITHOUT_A_DATABASE)

    assert json.loads(done.stdout.splitlines()[-1]) == [503, "30"]
    assert "Traceback" not in done.stderr
    assert "the database cannot be reached (GET /)" in done.stderr
