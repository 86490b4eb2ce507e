"""The worker's start-up check of LOCAL_JOB_NETWORK=isolated (jobs.network.isolation_problem,
jobs.worker.checked_identity): where the kernel refuses the network namespaces jobs need, the
worker says so in its log, in the lease (so /healthz and staff's banner say it), and queued
local jobs wait saying why instead of failing one by one.

The refusal is the kernel's own, made certain without touching the host's sysctls: the worker
runs inside bubblewrap with `--disable-userns` (no further user namespace may be made in its
sandbox, as with `user.max_user_namespaces=0`) and without capabilities (`--cap-drop ALL`,
as any unprivileged user), so the holder's unshare fails there as it would on such a machine."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from django.test import Client
from django.utils import translation

from jobs.health import WorkerIdentity, worker_beat, worker_stopped
from jobs.models import JobStatus
from jobs.network import isolation_problem
from jobs.runner import live_shim
from jobs.scheduler import why_waiting
from jobs.worker import Worker

from .runner_helpers import make_spec, run_until, runner_settings, status_of, submit  # noqa: F401
from .test_alerts import smtp_server  # noqa: F401  (the world's mail server)
from .test_worker import ROOT, job_status, query, wait_for, world  # noqa: F401

BWRAP = "/usr/bin/bwrap"
# What the kernel answered the holder in the sandbox below (ENOSPC: no user namespace may be
# made there, as with user.max_user_namespaces=0).
REFUSAL = "[Errno 28] No space left on device"


def without_namespaces(argv: list[str]) -> list[str]:
    """`argv` run where this kernel refuses new user namespaces, without capabilities."""
    return [
        BWRAP,
        "--dev-bind", "/", "/",
        "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
        "--uid", str(os.getuid()), "--gid", str(os.getgid()),
        "--", *argv,
    ]  # fmt: skip


def test_the_check_makes_a_namespace_as_a_job_would_and_leaves_nothing_behind(settings, tmp_path):
    settings.LOCAL_RUN_DIR = str(tmp_path / "runs")
    Path(settings.LOCAL_RUN_DIR).mkdir()

    assert isolation_problem() == ""

    state = tmp_path / "runs" / "network-check"
    assert live_shim(state) is None
    assert not (state / "lock").exists() and not (state / "pid").exists()


def test_where_the_kernel_refuses_namespaces_the_check_says_why(tmp_path):
    code = (
        "import django; django.setup()\n"
        "from jobs.network import isolation_problem\n"
        "print(repr(isolation_problem()))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "console.settings"}
    env["CONSOLE_VAR_DIR"] = str(tmp_path / "var")
    (tmp_path / "var" / "runs").mkdir(parents=True)

    out = subprocess.run(
        without_namespaces([sys.executable, "-c", code]),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )

    assert out.stdout.strip() == repr(REFUSAL), out.stderr


def test_a_worker_whose_check_fails_says_so_and_queued_jobs_wait_instead_of_failing(world):  # noqa: F811
    env = {**world["env"], "LOCAL_JOB_NETWORK": "isolated", "LOG_LEVEL": "INFO"}
    job_id = subprocess.run(
        [sys.executable, "-c", SUBMIT_ONE, "true"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    worker = subprocess.Popen(
        without_namespaces([sys.executable, "manage.py", "worker"]),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:

        def held() -> bool:
            return bool(
                query(
                    world,
                    "SELECT 1 FROM jobs_jobevent e JOIN jobs_job j ON e.job_id = j.id "
                    "WHERE j.public_id = ? AND e.reason = 'NetworkUnavailable'",
                    job_id,
                )
            )

        wait_for(held, what="the job to say it waits for isolated networking")
        [(problem,)] = query(world, "SELECT network_problem FROM jobs_workerheartbeat")
        assert problem == REFUSAL
        assert job_status(world) == JobStatus.QUEUED
        [(message,)] = query(
            world, "SELECT message FROM jobs_jobevent WHERE reason = 'NetworkUnavailable'"
        )
        assert REFUSAL in message
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGTERM)
        log = worker.communicate(timeout=30)[0].decode()
    assert f"isolated networking unavailable: {REFUSAL}" in log


SUBMIT_ONE = """
import django, sys
django.setup()
from django.contrib.auth.models import User
from jobs import spec as S
from jobs.services import jobs_submit
owner = User.objects.create_user("alice")
spec = S.JobSpec(name="waits", resource_pool_id="local", image="python:3.12",
    command=sys.argv[1], roles=[S.Role("master", 1)])
print(jobs_submit(owner=owner, spec=spec, submit_key="k")[0].public_id)
"""


# -- what the lease's finding shows -------------------------------------------------------


def failing_worker() -> WorkerIdentity:
    """A worker whose start-up check failed holds the lease (as the test above records it)."""
    identity = replace(WorkerIdentity.new(), network_problem=REFUSAL)
    assert worker_beat(worker=identity) is True
    return identity


def test_healthz_answers_503_naming_the_problem(db):
    failing_worker()

    response = Client().get("/healthz")

    assert response.status_code == 503
    body = json.loads(response.content)
    assert body["status"] == "error"
    assert body["worker"]["status"] == "ok"
    assert body["worker"]["problem"] == f"isolated networking unavailable: {REFUSAL}"
    # The web server alone is fine.
    assert Client().get("/healthz?worker=0").status_code == 200


def test_healthz_is_ok_without_a_problem(db):
    assert worker_beat(worker=WorkerIdentity.new()) is True

    response = Client().get("/healthz")

    assert response.status_code == 200
    assert "problem" not in json.loads(response.content)["worker"]


def test_staff_see_the_problem_on_the_job_list_and_the_admin_and_users_do_not(alice, reviewer):
    failing_worker()
    staff, user = Client(), Client()
    staff.force_login(reviewer)
    user.force_login(alice)
    staff.cookies["django_language"] = user.cookies["django_language"] = "en"
    said = f"isolated networking unavailable: {REFUSAL}"

    assert said in staff.get("/").content.decode()
    assert said in staff.get("/admin/").content.decode()
    assert said in staff.get("/admin/jobs/job/").content.decode()
    assert said not in user.get("/").content.decode()
    staff.cookies["django_language"] = "zh-hans"
    assert f"隔离网络不可用：{REFUSAL}" in staff.get("/").content.decode()


def test_a_queued_job_says_it_waits_for_isolated_networking_until_a_worker_can_make_it(
    alice,
    runner_settings,  # noqa: F811
):
    job = submit(alice, make_spec("true"))
    failing = Worker(failing_worker())

    failing.tick()
    failing.tick()

    assert status_of(job) == JobStatus.QUEUED
    # Said once, not once a tick.
    assert list(job.events.filter(reason="NetworkUnavailable").values_list("type", flat=True)) == [
        "Warning"
    ]
    with translation.override("en"):
        line = why_waiting(job)
    assert line.startswith("Waiting for isolated networking:") and REFUSAL in line

    # A worker that can make namespaces takes over: the job starts.
    worker_stopped(worker=failing.identity)
    run_until(Worker(WorkerIdentity.new()), lambda: status_of(job) == JobStatus.SUCCEEDED)


def test_the_checks_own_words_are_said_in_each_language_and_healthz_keeps_them_in_english(
    alice,
    reviewer,
    runner_settings,  # noqa: F811
):
    # The holder ended without a word: the console's own wording, not the kernel's.
    identity = replace(WorkerIdentity.new(), network_problem="exit code 1")
    assert worker_beat(worker=identity) is True
    job = submit(alice, make_spec("true"))
    Worker(identity).tick()
    staff = Client()
    staff.force_login(reviewer)

    staff.cookies["django_language"] = "zh-hans"
    zh = staff.get("/").content.decode()
    with translation.override("zh-hans"):
        zh_waiting = why_waiting(job)
    staff.cookies["django_language"] = "en"
    en = staff.get("/").content.decode()
    with translation.override("en"):
        en_waiting = why_waiting(job)

    assert "隔离网络不可用：命名空间占位进程已结束，退出码 1" in zh
    assert "isolated networking unavailable: the namespace holder ended with exit code 1" in en
    assert "命名空间占位进程已结束，退出码 1" in zh_waiting
    assert "the namespace holder ended with exit code 1" in en_waiting
    # A machine's answer, read by monitoring: English, as stored.
    for language in ("zh-hans", "en"):
        body = Client(headers={"accept-language": language}).get("/healthz").json()
        assert body["worker"]["problem"] == "isolated networking unavailable: exit code 1"


def test_staff_see_which_worker_cannot_make_networks_in_the_list_of_workers(reviewer):
    # The active worker can; the one standing by cannot (a takeover would hold local jobs).
    assert worker_beat(worker=WorkerIdentity.new()) is True
    standby = replace(WorkerIdentity.new(), network_problem="the check failed: boom")
    assert worker_beat(worker=standby) is False
    staff = Client()
    staff.force_login(reviewer)

    pages = {}
    for language in ("zh-hans", "en"):
        staff.cookies["django_language"] = language
        pages[language] = staff.get("/admin/").content.decode()

    def problems(page: str) -> list[tuple[str, str]]:
        return re.findall(
            r'<tr class="known-worker" data-role="(\w+)">.*?(?:class="[^"]*\bworker-problem">'
            r"([^<]*)</div>)?</td>",
            page,
            re.S,
        )

    assert problems(pages["zh-hans"]) == [
        ("active", ""),
        ("standby", "隔离网络不可用：无法进行检查：boom"),
    ]
    assert problems(pages["en"]) == [
        ("active", ""),
        ("standby", "isolated networking unavailable: the check could not be made: boom"),
    ]


@pytest.mark.browser
def test_staff_read_a_workers_network_problem_in_the_language_they_switch_to(page, reviewer):
    from playwright.sync_api import expect

    from tests.conftest import log_in

    assert worker_beat(worker=replace(WorkerIdentity.new(), network_problem="exit code 1"))
    log_in(page, "carol", "carol-password")
    page.goto("/")
    banner = page.locator("#worker-problem")
    listed = page.locator('tr.known-worker[data-role="active"] .worker-problem')
    for shown in (banner, listed):
        expect(shown).to_have_text("隔离网络不可用：命名空间占位进程已结束，退出码 1")

    page.click("[data-language=en]")

    expect(page.locator("html")).to_have_attribute("lang", "en")
    for shown in (banner, listed):
        expect(shown).to_have_text(
            "isolated networking unavailable: the namespace holder ended with exit code 1"
        )
