"""The machine's power cut, as near as one machine can come to it: `manage.py serve`, its web
server, its worker and every process of a running local job killed at once (SIGKILL), then
`serve` started again on the same CONSOLE_VAR_DIR (QA 69). What a user and a script see
afterwards: the job once, ended with a reason and each event once, its log whole, the API key
working and a create retried with its clientToken still that one job, `/healthz` ok.

A real power cut also loses what the disk had not synced; SQLite is told to sync each commit
(the last test), which killing processes cannot show."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from jobs.aihc.client import AihcClient, Credentials
from jobs.runner import free_port

from .runner_helpers import runner_settings  # noqa: F401
from .test_foundation import children_of

ROOT = Path(__file__).resolve().parent.parent

MAKE_KEY = """
import django
django.setup()
from django.contrib.auth.models import User
from jobs.api_keys import api_key_create
alice = User.objects.create_user("alice", "alice@example.com", "alice-password")
key, secret = api_key_create(owner=alice, description="power cut")
print(key.access_key_id, secret)
"""


def wait_for(check, *, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def query(database: Path, sql: str) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(database)) as db:
        return db.execute(sql).fetchall()


def healthz(port: int) -> tuple[int, dict] | None:
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
    except httpx.TransportError:
        return None
    return answer.status_code, answer.json()


def job_body() -> dict:
    return {
        "name": "power-cut",
        "queue": "default",
        "jobFramework": "PyTorchJob",
        "jobSpec": {
            "command": "i=0; while true; do i=$((i+1)); echo line-$i; sleep 0.05; done",
            "image": "python:3.12",
            "replicas": 1,
            "resources": [{"name": "cpu", "quantity": 1}],
        },
        "datasources": [{"type": "hostpath", "name": "work", "mountPath": "/workspace"}],
    }


def create(api: AihcClient) -> str:
    answer = api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", "local"), ("clientToken", "before-the-cut")],
        body=job_body(),
        idempotent=False,
    )
    return answer["result"]["jobId"]


def test_after_everything_is_killed_at_once_the_console_comes_back_with_each_job_once(tmp_path):
    var = tmp_path / "var"
    volume = tmp_path / "volume"
    volume.mkdir()
    port = free_port()
    env = {
        **os.environ,
        "CONSOLE_VAR_DIR": str(var),
        "DEBUG": "0",
        "PORT": str(port),
        "LOCAL_VOLUMES": f"work={volume}",
        "LANGUAGE_CODE": "en",
        "WORKER_POLL_SECONDS": "0.2",
        "LOCAL_DISK_MIN_FREE_GB": "0",
        "LOCAL_DISK_EVICT_FREE_GB": "0",
    }
    env.pop("DATABASE_URL", None)
    database = var / "console.sqlite3"
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    made = subprocess.run(
        [sys.executable, "-c", MAKE_KEY],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "console.settings"},
        check=True,
        capture_output=True,
        text=True,
    )
    access_key, secret = made.stdout.split()[-2:]
    api = AihcClient(
        endpoint=f"http://127.0.0.1:{port}",
        credentials=Credentials(access_key, secret),
        retries=0,
    )

    def serve() -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "manage.py", "serve"],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def replica_pids() -> list[int]:
        return [pid for (pid,) in query(database, "SELECT pid FROM jobs_jobreplica") if pid]

    def log_lines() -> list[str]:
        logs = list((var / "runs").glob("*/logs/master-0.log"))
        return logs[0].read_text().splitlines() if logs else []

    server = serve()
    try:
        wait_for(lambda: (healthz(port) or (0, {}))[0] == 200, what="the console")
        job_id = create(api)
        wait_for(lambda: replica_pids() != [], what="the job's replica")
        wait_for(lambda: len(log_lines()) > 5, what="its first lines")
        assert query(database, "SELECT status FROM jobs_job") == [("running",)]

        # The cut: every process at once, none able to tidy up after another.
        groups = {server.pid, *children_of(server.pid), *replica_pids()}
        for group in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        server.wait()
        wait_for(
            lambda: not any(Path(f"/proc/{pid}").exists() for pid in replica_pids()),
            what="the job's processes to go",
        )
        lines_at_the_cut = len(log_lines())

        server = serve()
        wait_for(
            lambda: query(database, "SELECT status FROM jobs_job") != [("running",)],
            what="the job's end",
        )
        wait_for(lambda: (healthz(port) or (0, {}))[0] == 200, what="the console again")
        retried = create(api)  # a script that got no answer sends its create again
        health = healthz(port)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
        for pid in replica_pids():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)

    assert retried == job_id
    assert query(database, "SELECT public_id, status, status_reason FROM jobs_job") == [
        (job_id, "failed", "master-0 was lost (its process ended without an exit code).")
    ]
    events = [reason for (reason,) in query(database, "SELECT reason FROM jobs_jobevent")]
    assert sorted(events) == sorted(
        ["Created", "Started", "FollowedAgain", "ReplicaFailed", "Failed"]
    )
    assert health is not None and health[1]["status"] == "ok"
    assert health[1]["worker"]["status"] == "ok"
    # The log as the cut left it, each line whole, nothing after it.
    lines = log_lines()
    assert len(lines) == lines_at_the_cut
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z "
    whole = re.compile(rf"{stamp}(\x1f\[console\] .*|line-\d+)")
    assert [line for line in lines if not whole.fullmatch(line)] == []


def test_every_commit_is_synced_to_disk_so_a_power_cut_takes_back_no_answered_submit(db):
    # SQLite's WAL mode with synchronous=NORMAL (the setting until QA 69) is consistent after
    # a power cut but may roll back the last transactions committed before it: a job whose
    # submit the wizard or the API had answered could be gone after the machine restarted.
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's setting")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        (level,) = cursor.fetchone()
        cursor.execute("PRAGMA journal_mode")
        (journal,) = cursor.fetchone()

    assert (journal, level) == ("wal", 2)  # 2: FULL, a sync at each commit


@pytest.mark.usefixtures("runner_settings")
def test_a_job_whose_machine_restarted_under_it_fails_saying_so(alice, settings):
    # QA 69: after a power cut its reason said only that master-0 was "lost (its process
    # ended without an exit code)", which reads as a fault of the job. A replica started
    # before the machine's last boot was ended by the machine going down.
    from jobs.models import JobStatus
    from jobs.runner import machine_boot_time, replica_state_dir
    from jobs.worker import Worker

    from .runner_helpers import UNTIL_THE_GATE_OPENS, make_spec, run_until, status_of, submit

    settings.LANGUAGE_CODE = "en"  # the language reasons are recorded in
    job = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="its start")
    started = replica_state_dir(job.public_id, job.local_run.attempt, "master-0") / "started"
    run_until(worker, started.exists, what="its shim")
    [replica] = job.replicas.all()
    os.killpg(replica.pid, signal.SIGKILL)  # the job's processes and its shim, at once
    with contextlib.suppress(ChildProcessError):  # the shim is this process's child here
        os.waitpid(replica.pid, 0)
    # As the machine shows it after it booted again: the replica started before that boot.
    boot = machine_boot_time()
    assert boot is not None
    os.utime(started, (boot - 60, boot - 60))

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="its end")

    assert job.status_reason == (
        "master-0 was lost: this machine restarted while it ran (a power cut, a crash or a "
        "reboot), ending its process without an exit code."
    )
