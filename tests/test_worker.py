"""The worker as a real process (`manage.py worker`) on its own SQLite file, killed with
SIGKILL mid-job and restarted."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .runner_helpers import remove_cgroups_of
from .test_alerts import smtp_server  # noqa: F401  (the world's mail server)

ROOT = Path(__file__).resolve().parent.parent

SUBMIT = """
import django, json, sys
django.setup()
from django.contrib.auth.models import User
from jobs import spec as S
from jobs.services import jobs_submit
owner = User.objects.create_user("alice")
ft = json.loads(sys.argv[2])
alert = S.AlertConfig(items=sys.argv[3:], emails=["ops@example.com"] if sys.argv[3:] else [])
spec = S.JobSpec(name="survivor", resource_pool_id="local", image="python:3.12",
    command=sys.argv[1], roles=[S.Role("master", 1), S.Role("worker", 1)],
    datasources=[S.Datasource("hostpath", "work", mount_path="/workspace")], alert=alert,
    fault_tolerance=ft["on"],
    fault_tolerance_config=S.FaultToleranceConfig(**ft["config"]) if ft["config"] else None)
print(jobs_submit(owner=owner, spec=spec, submit_key="k")[0].public_id)
"""


@pytest.fixture
def world(tmp_path, smtp_server):  # noqa: F811
    """A var dir, a volume and an environment for manage.py commands; kills leftovers. Alert
    emails go to a mail server on 127.0.0.1 (`smtp_server`: without one, mail is only written
    to the log and its event says it was not sent, QA 59)."""
    var = tmp_path / "var"
    vol = tmp_path / "vol"
    vol.mkdir()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "CONSOLE_VAR_DIR": str(var),
        "LOCAL_VOLUMES": f"work={vol}",
        "WORKER_POLL_SECONDS": "0.1",
        "LOCAL_STOP_GRACE_SECONDS": "1",
        "LOG_LEVEL": "WARNING",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(smtp_server.server_address[1]),
    }
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    workers: list[subprocess.Popen] = []
    state = {"env": env, "db": var / "console.sqlite3", "vol": vol, "workers": workers}
    yield state
    for proc in workers:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with sqlite3.connect(state["db"]) as db:
        for (pid,) in db.execute("SELECT pid FROM jobs_jobreplica WHERE pid IS NOT NULL"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        job_ids = [public_id for (public_id,) in db.execute("SELECT public_id FROM jobs_job")]
    # Their cgroups too (every replica has one where the number of processes is held).
    remove_cgroups_of(job_ids)


# `manage.py worker`, killed with SIGKILL by Django's own execute hook as it writes its first
# alert task (the django-tasks-db row): the moment an alert is decided and not yet queued.
KILLED_AS_IT_QUEUES_AN_ALERT = """
import os, signal, django
django.setup()
from django.core.management import call_command
from django.db.backends.signals import connection_created

def killed_at_the_alert(execute, sql, params, many, context):
    if sql.startswith("INSERT") and "django_tasks_database_dbtaskresult" in sql:
        os.kill(os.getpid(), signal.SIGKILL)
    return execute(sql, params, many, context)

def hooked(connection, **kwargs):
    connection.execute_wrappers.append(killed_at_the_alert)

connection_created.connect(hooked)
call_command("worker")
"""


def start_worker(world, *, argv: tuple[str, ...] = ("manage.py", "worker")) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, *argv],
        cwd=ROOT,
        env=world["env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    world["workers"].append(proc)
    return proc


def query(world, sql: str, *args) -> list[tuple]:
    with sqlite3.connect(world["db"], timeout=20) as db:
        return list(db.execute(sql, args))


def wait_for(check, timeout: float = 30, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def job_status(world) -> str:
    rows = query(world, "SELECT status FROM jobs_job")
    return rows[0][0] if rows else ""


def submit(
    world,
    command: str,
    *alerts: str,
    fault_tolerance: bool = False,
    fault_tolerance_config: dict | None = None,
) -> str:
    ft = json.dumps({"on": fault_tolerance, "config": fault_tolerance_config})
    out = subprocess.run(
        [sys.executable, "-c", SUBMIT, command, ft, *alerts],
        cwd=ROOT,
        env=world["env"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def started_roles(world) -> list[str]:
    starts = world["vol"] / "starts"
    return sorted(starts.read_text().split()) if starts.exists() else []


def test_a_worker_killed_mid_job_is_replaced_and_the_job_finishes_without_starting_twice(world):
    # Each replica notes its start, then runs until the test lets it end (however long the
    # workers take to start on a loaded machine, the job is still running when they do).
    submit(
        world,
        "echo $AIHC_ROLE >> /workspace/starts; "
        "until [ -e /workspace/gate-open ]; do sleep 0.05; done",
    )
    first = start_worker(world)
    wait_for(lambda: job_status(world) == "running", what="running")
    wait_for(lambda: started_roles(world) == ["master", "worker"], what="the replicas to start")
    wait_for(
        lambda: all(pid for (pid,) in query(world, "SELECT pid FROM jobs_jobreplica")),
        what="pids",
    )

    first.send_signal(signal.SIGKILL)
    first.wait()
    pids = [pid for (pid,) in query(world, "SELECT pid FROM jobs_jobreplica")]
    assert all(os.path.exists(f"/proc/{pid}") for pid in pids)  # the job lives on

    # Two workers started at once: one waits for the other's lock.
    start_worker(world)
    start_worker(world)
    (world["vol"] / "gate-open").touch()
    wait_for(lambda: job_status(world) == "succeeded", what="success")

    assert started_roles(world) == ["master", "worker"]
    # The worker that took over said it follows the job again (left24), once.
    assert query(world, "SELECT reason FROM jobs_jobevent ORDER BY id") == [
        ("Created",),
        ("Started",),
        ("FollowedAgain",),
        ("Succeeded",),
    ]
    assert query(world, "SELECT SUM(restarts) FROM jobs_jobreplica") == [(0,)]


def test_a_job_whose_processes_died_with_the_worker_is_not_left_running(world):
    submit(world, "sleep 300")
    first = start_worker(world)
    wait_for(lambda: job_status(world) == "running", what="running")
    wait_for(
        lambda: all(pid for (pid,) in query(world, "SELECT pid FROM jobs_jobreplica")),
        what="pids",
    )

    # Both replicas' shims are under way (a shim killed before it began means the replica
    # never ran, and is launched again: see test_runner_races).
    runs = world["db"].parent / "runs"
    wait_for(lambda: len(list(runs.glob("*/attempt-1/*/started"))) == 2, what="shims started")

    # The machine "reboots": the worker and every process of the job die at once.
    first.send_signal(signal.SIGKILL)
    first.wait()
    for (pid,) in query(world, "SELECT pid FROM jobs_jobreplica"):
        os.killpg(pid, signal.SIGKILL)

    start_worker(world)
    wait_for(lambda: job_status(world) == "failed", what="failed")

    [(reason,)] = query(world, "SELECT status_reason FROM jobs_job")
    assert "已丢失" in reason


def test_the_worker_stops_cleanly_on_sigterm_and_leaves_jobs_running(world):
    submit(world, "sleep 300")
    worker = start_worker(world)
    wait_for(lambda: job_status(world) == "running", what="running")
    wait_for(
        lambda: all(pid for (pid,) in query(world, "SELECT pid FROM jobs_jobreplica")),
        what="pids",
    )

    worker.send_signal(signal.SIGTERM)

    assert worker.wait(timeout=15) == 0
    pids = [pid for (pid,) in query(world, "SELECT pid FROM jobs_jobreplica")]
    assert all(os.path.exists(f"/proc/{pid}") for pid in pids)
    assert job_status(world) == "running"


@pytest.mark.parametrize(("exit_code", "status"), [(0, "succeeded"), (3, "failed")])
def test_a_worker_killed_as_it_queues_a_jobs_final_alert_leaves_it_to_the_next_one_to_send_once(
    world, exit_code, status
):
    submit(
        world,
        f"until [ -e /workspace/gate-open ]; do sleep 0.05; done; exit {exit_code}",
        "jobSucceed",
        "jobFailed",
    )
    doomed = start_worker(world, argv=("-c", KILLED_AS_IT_QUEUES_AN_ALERT))
    wait_for(lambda: job_status(world) == "running", what="running")
    (world["vol"] / "gate-open").touch()
    assert doomed.wait(timeout=30) == -signal.SIGKILL

    # Killed before the job's end was committed with its alert: neither landed, so the
    # next worker sees the replicas' exits again (never an ended job whose alert nobody sends).
    assert job_status(world) == "running"
    assert query(world, "SELECT COUNT(*) FROM django_tasks_database_dbtaskresult") == [(0,)]

    start_worker(world)
    wait_for(
        lambda: (
            query(world, "SELECT status FROM django_tasks_database_dbtaskresult")
            == [("SUCCESSFUL",)]
        ),
        what="the alert's delivery",
    )
    assert job_status(world) == status
    assert alerts_sent(world) == 1
    time.sleep(1)  # ten more ticks: nothing is sent twice
    assert alerts_sent(world) == 1


def alerts_sent(world) -> int:
    return query(world, "SELECT COUNT(*) FROM jobs_jobevent WHERE reason = 'AlertSent'")[0][0]


def alert_deliveries(world) -> list[tuple]:
    return query(world, "SELECT status FROM django_tasks_database_dbtaskresult")


def test_a_worker_killed_as_it_queues_the_running_alert_leaves_it_to_the_next_one_to_send_once(
    world,
):
    submit(
        world,
        "echo $AIHC_ROLE >> /workspace/starts; "
        "until [ -e /workspace/gate-open ]; do sleep 0.05; done",
        "jobRunning",
    )
    doomed = start_worker(world, argv=("-c", KILLED_AS_IT_QUEUES_AN_ALERT))
    assert doomed.wait(timeout=30) == -signal.SIGKILL
    # Killed once every replica had started, as it queued the alert: nothing is left to
    # launch, and still the alert is due.
    assert job_status(world) == "running"
    assert alert_deliveries(world) == []
    wait_for(lambda: started_roles(world) == ["master", "worker"], what="the replicas to start")

    start_worker(world)
    wait_for(lambda: alert_deliveries(world) == [("SUCCESSFUL",)], what="the alert's delivery")
    (world["vol"] / "gate-open").touch()
    wait_for(lambda: job_status(world) == "succeeded", what="success")

    assert alerts_sent(world) == 1
    assert started_roles(world) == ["master", "worker"]  # nothing launched twice


def test_a_worker_killed_as_it_queues_a_hang_alert_leaves_the_warning_to_the_next_one_to_give_once(
    world,
):
    world["env"]["JOB_MINUTE_SECONDS"] = "1"
    submit(
        world,
        "echo started; sleep 300",
        "jobHang",
        fault_tolerance_config={
            "enabled_hang_detection": True,
            "hang_detection_timeout_minutes": 1,
        },
    )
    doomed = start_worker(world, argv=("-c", KILLED_AS_IT_QUEUES_AN_ALERT))
    assert doomed.wait(timeout=30) == -signal.SIGKILL
    # Killed before the warning was committed with its alert: the silence is not marked as
    # warned about, so the next worker warns (never a warning whose alert nobody sends).
    assert job_status(world) == "running"
    assert query(world, "SELECT hang_warned_at FROM jobs_localrun") == [(None,)]
    assert query(world, "SELECT COUNT(*) FROM jobs_jobevent WHERE reason = 'HangSuspected'") == [
        (0,)
    ]

    start_worker(world)
    wait_for(lambda: alert_deliveries(world) == [("SUCCESSFUL",)], what="the alert's delivery")
    time.sleep(1)  # ten more ticks of the same silence: nothing is said twice

    assert alerts_sent(world) == 1
    assert query(world, "SELECT COUNT(*) FROM jobs_jobevent WHERE reason = 'HangSuspected'") == [
        (1,)
    ]
    assert job_status(world) == "running"


def test_a_worker_killed_as_it_queues_a_restarts_alert_leaves_the_restart_to_the_next_one_to_do_once(
    world,
):
    # The master fails the first attempt once the worker has started; the second attempt
    # runs until the gate opens.
    submit(
        world,
        "echo $AIHC_ROLE >> /workspace/starts; "
        "if [ $AIHC_ROLE = master ] && [ ! -e /workspace/failed-once ]; then "
        "until grep -q worker /workspace/starts; do sleep 0.05; done; "
        "touch /workspace/failed-once; exit 3; fi; "
        "until [ -e /workspace/gate-open ]; do sleep 0.05; done",
        "jobFT",
        fault_tolerance=True,
        fault_tolerance_config={"fault_tolerance_limit": 3},
    )
    doomed = start_worker(world, argv=("-c", KILLED_AS_IT_QUEUES_AN_ALERT))
    assert doomed.wait(timeout=30) == -signal.SIGKILL
    # Killed before the switch to the next attempt was committed with its event and alert:
    # none of them landed and no process of a second attempt started, so the restart is
    # still to do.
    assert query(world, "SELECT attempt, stop_target FROM jobs_localrun") == [(1, "restart")]
    assert query(world, "SELECT restarts FROM jobs_job") == [(0,)]
    assert query(world, "SELECT COUNT(*) FROM jobs_jobevent WHERE reason = 'Restarted'") == [(0,)]
    assert alert_deliveries(world) == []
    assert started_roles(world) == ["master", "worker"]

    start_worker(world)
    wait_for(lambda: alert_deliveries(world) == [("SUCCESSFUL",)], what="the alert's delivery")
    wait_for(
        lambda: started_roles(world) == ["master", "master", "worker", "worker"],
        what="the second attempt",
    )
    (world["vol"] / "gate-open").touch()
    wait_for(lambda: job_status(world) == "succeeded", what="success")

    assert alerts_sent(world) == 1
    assert query(world, "SELECT restarts FROM jobs_job") == [(1,)]
    assert query(world, "SELECT attempt FROM jobs_localrun") == [(2,)]
    assert query(world, "SELECT COUNT(*) FROM jobs_jobevent WHERE reason = 'Restarted'") == [(1,)]
    assert started_roles(world) == ["master", "master", "worker", "worker"]  # once each


def test_a_second_worker_waiting_for_the_run_directorys_lock_stops_on_sigterm(world):
    # Found in QA: it waited in a blocking flock, which Python resumes after the signal
    # handler (it only sets the stop flag), so SIGTERM or Ctrl-C left it waiting for ever.
    first = start_worker(world)
    wait_for(
        lambda: query(world, "SELECT COUNT(*) FROM jobs_workerheartbeat") == [(1,)],
        what="the first worker",
    )
    second = start_worker(world)
    assert second.stdout is not None
    while "another worker holds" not in (line := second.stdout.readline().decode()):
        assert line, "the second worker ended without waiting for the lock"

    second.send_signal(signal.SIGTERM)

    assert second.wait(timeout=30) == 0
    assert first.poll() is None  # the worker holding the lock runs on


def test_a_worker_that_loses_its_database_says_so_in_a_line_not_a_traceback_each_tick(
    world, tmp_path
):
    # Found in QA: with PostgreSQL stopped, the worker logged two tracebacks (130 lines) each
    # second while it held the lease, then "another worker took the lease over", which none had.
    # Here the database's folder is renamed away (SQLite cannot open the file) for 4 s: past
    # half of WORKER_STALE_SECONDS, so the worker also stops dispatching and stands by.
    database = tmp_path / "db" / "console.sqlite3"
    database.parent.mkdir()
    Path(world["db"]).rename(database)
    world["db"] = database
    world["env"] = {
        **world["env"],
        "DATABASE_URL": f"sqlite:///{database}",
        "DATABASE_CONN_MAX_AGE": "0",  # a new connection each tick, as after a server restart
        "WORKER_HEARTBEAT_SECONDS": "0.5",
        "WORKER_STALE_SECONDS": "2",
        "LOG_LEVEL": "INFO",
    }
    worker = start_worker(world)
    wait_for(
        lambda: (
            query(world, "SELECT pid, stopped_at FROM jobs_workerheartbeat") == [(worker.pid, None)]
        ),
        what="the worker's lease",
    )
    time.sleep(1)  # its first ticks, with the database there

    database.parent.rename(tmp_path / "db-away")
    time.sleep(4)
    (tmp_path / "db-away").rename(database.parent)
    time.sleep(3)  # it takes its lease again and ticks on
    worker.send_signal(signal.SIGTERM)
    output = worker.communicate(timeout=30)[0].decode()

    assert worker.returncode == 0
    assert "Traceback" not in output
    assert output.count("the database cannot be reached: unable to open database file") == 1
    assert "another worker took the lease over" not in output
    assert "stopped dispatching: the database could not be reached for" in output
    assert "the database can be reached again after " in output
    # qa89: taking its lease again, it said "worker started" as if it had been restarted.
    assert output.count("worker started (poll") == 1
    assert output.count("worker resumed dispatching (poll") == 1
    assert output.index("worker resumed dispatching") > output.index("stopped dispatching")
    assert output.rindex("the database can be reached again") > output.rindex("cannot be reached")
    assert query(world, "SELECT pid, stopped_at IS NOT NULL FROM jobs_workerheartbeat") == [
        (worker.pid, 1)
    ]


def test_queued_mails_are_still_sent_after_the_database_was_out_of_reach_for_a_moment(
    world, tmp_path
):
    # Found in QA: the task thread (alert and review mails) ended at the first query the
    # database refused, and only a worker that lost its lease (an outage past half of
    # WORKER_STALE_SECONDS) started another; after a shorter one, no mail went out again.
    database = tmp_path / "db" / "console.sqlite3"
    database.parent.mkdir()
    Path(world["db"]).rename(database)
    world["db"] = database
    world["env"] = {
        **world["env"],
        "DATABASE_URL": f"sqlite:///{database}",
        "DATABASE_CONN_MAX_AGE": "0",
        "WORKER_STALE_SECONDS": "60",
    }
    worker = start_worker(world)
    wait_for(
        lambda: query(world, "SELECT pid FROM jobs_workerheartbeat") == [(worker.pid,)],
        what="the worker's lease",
    )
    time.sleep(1)
    database.parent.rename(tmp_path / "db-away")
    time.sleep(2)
    (tmp_path / "db-away").rename(database.parent)

    subprocess.run([sys.executable, "-c", QUEUE_A_MAIL], cwd=ROOT, env=world["env"], check=True)

    wait_for(
        lambda: (
            query(world, "SELECT status FROM django_tasks_database_dbtaskresult")
            == [("SUCCESSFUL",)]
        ),
        what="the mail's task",
    )
    assert worker.poll() is None


# A review mail about a job deleted meanwhile: the task runs and sends nothing.
QUEUE_A_MAIL = """
import django
django.setup()
from jobs.tasks import mail_owner
mail_owner.enqueue(job_id=999999, subject="s", body="b")
"""


def test_a_worker_whose_databases_disk_fills_says_so_in_a_line_not_tracebacks_and_goes_on(
    world, tmp_path
):
    # QA 69: with the database's disk full, the worker logged a traceback for its lease and
    # one for each running job every tick ("database or disk is full"), on that same disk's
    # machine, until space was freed. The database here is on a small tmpfs of its own.
    if os.geteuid() != 0:
        pytest.skip("mounts a tmpfs: as root")
    disk = tmp_path / "db"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)], check=True)
    first_database = world["db"]
    try:
        database = disk / "console.sqlite3"
        with sqlite3.connect(world["db"]) as source, sqlite3.connect(database) as target:
            source.backup(target)
        world["db"] = database
        world["env"] = {
            **world["env"],
            "DATABASE_URL": f"sqlite:///{database}",
            "WORKER_HEARTBEAT_SECONDS": "0.5",
            "WORKER_STALE_SECONDS": "4",
            "LOG_LEVEL": "INFO",
        }
        submit(world, "until [ -e /workspace/gate-open ]; do sleep 0.05; done")
        worker = start_worker(world)
        wait_for(lambda: job_status(world) == "running", what="running")
        time.sleep(1)  # its ticks following the job

        filler = disk / "filler"
        with open(filler, "wb", buffering=0) as out, contextlib.suppress(OSError):
            while True:
                out.write(b"\0" * 4096)
        time.sleep(4)
        filler.unlink()
        time.sleep(2)  # it takes its lease again and ticks on
        (world["vol"] / "gate-open").touch()
        wait_for(lambda: job_status(world) == "succeeded", what="success")
        worker.send_signal(signal.SIGTERM)
        output = worker.communicate(timeout=30)[0].decode()
    finally:
        for proc in world["workers"]:  # before its database goes, as the fixture would
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        with sqlite3.connect(world["db"]) as db:
            for (pid,) in db.execute("SELECT pid FROM jobs_jobreplica WHERE pid IS NOT NULL"):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
        world["db"] = first_database
        subprocess.run(["umount", "-l", str(disk)], check=True)

    assert worker.returncode == 0
    assert "Traceback" not in output
    assert (
        output.count("the database takes no writes: its disk is full (database or disk is full)")
        == 1
    )
    assert "the database takes writes again after " in output
    # qa89: it said "the database could not be reached", which answered every read.
    assert (
        "stopped dispatching: the database's disk is full and it took no writes for half of "
        "WORKER_STALE_SECONDS" in output
    )
    assert "could not be reached" not in output
    assert "worker resumed dispatching (poll" in output
