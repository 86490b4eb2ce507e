"""A worker that refuses its settings at its start (LOCAL_JOB_UID_BASE where jobs cannot run as
their owners' users: jobs.job_users.problems) records why in the lease before it exits: /healthz
answers `refused` with the reason, staff read it in their language, and the next worker that
starts fine clears it. `manage.py serve` keeps starting it again, saying the reason once.

The refusals are real: the run folder sits in a folder only root may enter (mode 0700), which
the jobs' users could never reach, and the worker is run as root (CI runs as root)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.db.models import F
from django.test import Client

from jobs import job_users
from jobs.health import WorkerIdentity, worker_beat, worker_refused, worker_state
from jobs.management.commands.serve import worker_exit_message
from jobs.management.commands.worker import EXIT_REFUSED
from jobs.runner import free_port

from .test_alerts import smtp_server  # noqa: F401  (the world's mail server)
from .test_worker import ROOT, query, wait_for, world  # noqa: F401

BASE = 1_500_000_000


@pytest.fixture
def closed_run_dir() -> Iterator[tuple[Path, Path]]:
    """(the folder only root may enter, the run folder inside it)."""
    if os.geteuid() != 0:
        pytest.skip("the checks past the first are made for a worker run as root (CI runs as root)")
    top = Path(tempfile.mkdtemp(prefix="console-refusal-"))
    top.chmod(0o755)
    closed = top / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    yield closed, closed / "runs"
    shutil.rmtree(top, ignore_errors=True)


def refusing(settings, run_dir: Path) -> list[job_users.Problem]:
    settings.LOCAL_JOB_UID_BASE = BASE
    settings.LOCAL_JOB_GID = ""
    settings.LOCAL_RUN_DIR = str(run_dir)
    settings.LOCAL_VOLUMES = ""
    found = job_users.problems()
    assert found, "the setting was not refused"
    return found


def test_a_refused_worker_started_for_real_exits_78_and_records_why_in_the_lease(
    world,  # noqa: F811
    closed_run_dir,
):
    closed, runs = closed_run_dir
    env = {
        **world["env"],
        "LOCAL_JOB_UID_BASE": str(BASE),
        "LOCAL_RUN_DIR": str(runs),
        # Its volume is in tmp_path, which the jobs' users cannot enter either: said apart.
        "LOCAL_VOLUMES": f"work={runs.parent.parent / 'volume'}",
    }

    done = subprocess.run(
        [sys.executable, "manage.py", "worker", "--no-tasks"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == EXIT_REFUSED == 78
    assert f"the jobs' users cannot enter {closed}, above {runs}" in done.stderr
    assert "Traceback" not in done.stderr
    [(refused, source, refused_at, holder, seen_at)] = query(
        world,
        "SELECT refused, refused_source, refused_at, holder, seen_at FROM jobs_workerheartbeat",
    )
    # /healthz's words name no folder of this machine; the full reason is kept to say again.
    assert refused == (
        f"the worker refused to start: LOCAL_JOB_UID_BASE={BASE}: the jobs' users cannot "
        "enter a folder above LOCAL_RUN_DIR or a volume's folder"
    )
    assert str(closed) not in refused
    [kept] = json.loads(source)
    assert kept["params"]["blocked"] == str(closed)
    assert refused_at is not None and (holder, seen_at) == ("", None)

    # The folder opened, the next start runs (and clears the refusal as it takes the lease).
    closed.chmod(0o711)
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "worker", "--no-tasks"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def cleared() -> bool:
            [(refused, holder)] = query(world, "SELECT refused, holder FROM jobs_workerheartbeat")
            return holder != "" and refused == ""

        wait_for(cleared, timeout=60, what="the good start taking the lease")
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)


def test_healthz_says_refused_with_the_reason_until_a_worker_starts_fine(
    settings, closed_run_dir, db
):
    _, runs = closed_run_dir
    worker_refused(problems=refusing(settings, runs))

    answer = Client(headers={"accept-language": "zh-hans"}).get("/healthz")

    assert answer.status_code == 503
    assert answer.json()["worker"] == {
        "status": "refused",
        "last_seen_seconds": None,
        "standby": 0,
        "problem": (
            f"the worker refused to start: LOCAL_JOB_UID_BASE={BASE}: the jobs' users cannot "
            "enter a folder above LOCAL_RUN_DIR or a volume's folder"
        ),
    }
    assert Client().get("/healthz?worker=0").status_code == 200

    # A worker that starts fine takes the lease: the refusal is gone.
    assert worker_beat(worker=WorkerIdentity.new()) is True
    answer = Client().get("/healthz")
    assert answer.status_code == 200
    assert answer.json()["worker"]["status"] == "ok"
    assert "problem" not in answer.json()["worker"]
    assert worker_state().refused == ""


def test_a_refusal_beside_a_running_worker_leaves_it_healthy_and_says_why_once_it_stops(
    settings, closed_run_dir, db
):
    """Decided: another host's worker refused while one runs is no fault of the console's
    (its jobs are dispatched); once none runs, the refusal is the reason why."""
    from jobs.health import worker_stopped

    _, runs = closed_run_dir
    running = WorkerIdentity.new()
    assert worker_beat(worker=running) is True
    worker_refused(problems=refusing(settings, runs))

    assert Client().get("/healthz").status_code == 200
    worker_stopped(worker=running)
    body = Client().get("/healthz").json()
    assert body["worker"]["status"] == "refused"


def test_staff_read_the_full_reason_in_their_language_and_users_the_banner_alone(
    settings, closed_run_dir, reviewer, alice
):
    closed, runs = closed_run_dir
    worker_refused(problems=refusing(settings, runs))
    staff, user = Client(), Client()
    staff.force_login(reviewer)
    user.force_login(alice)

    staff.cookies["django_language"] = "en"
    said = (
        f"The worker refused to start: LOCAL_JOB_UID_BASE={BASE}: the jobs' users cannot enter "
        f"{closed}, above {runs}, which their sandbox binds: let others enter it (chmod o+x "
        f"{closed})"
    )
    for url in ("/", "/admin/", "/admin/jobs/job/"):
        page = staff.get(url).content.decode()
        assert said.replace("'", "&#x27;") in page, url
    staff.cookies["django_language"] = "zh-hans"
    page = staff.get("/admin/").content.decode()
    assert (
        f"任务调度进程（worker）拒绝启动：LOCAL_JOB_UID_BASE={BASE}：任务的用户无法进入 {closed}"
        in page
    )

    # An ordinary user whose job waits is told the worker does not run, not the machine's folders.
    from .runner_helpers import make_spec, submit

    submit(alice, make_spec("true"))
    user.cookies["django_language"] = "en"
    page = user.get("/").content.decode()
    assert "The job scheduler (worker) is not running" in page
    assert str(closed) not in page and "refused" not in page


def test_serve_says_a_refusal_once_then_one_line_a_restart_and_again_when_it_changes():
    reason = "local jobs cannot run as their owners' users ...:\n- LOCAL_JOB_UID_BASE=200000: x"
    first, said = worker_exit_message(code=78, refusal=reason + "\n", said="", delay=1)
    again, said_again = worker_exit_message(code=78, refusal=reason, said=said, delay=2)
    other, _ = worker_exit_message(code=78, refusal="something else", said=said, delay=4)
    crash, forgotten = worker_exit_message(code=1, refusal="", said=said, delay=1)

    assert first.startswith(f"The worker refused to start (exit code 78): {reason}\n")
    assert "the worker is tried again in 1 s" in first
    assert again == (
        "The worker refused to start again, for the reason above; the worker is tried again in 2 s"
    )
    assert said_again == said == reason
    assert "something else" in other
    assert crash == "The worker exited with code 1; restarting it in 1 s"
    assert forgotten == ""


def test_serve_keeps_restarting_a_refused_worker_says_why_once_and_recovers_once_fixed(
    tmp_path, closed_run_dir
):
    closed, runs = closed_run_dir
    port = free_port()
    # Beside the closed folder, where the jobs' users may enter its volumes (var/volumes).
    var = closed.parent / "var"
    env = {
        **os.environ,
        "CONSOLE_VAR_DIR": str(var),
        "DEBUG": "0",
        "PORT": str(port),
        "LOCAL_JOB_UID_BASE": str(BASE),
        "LOCAL_RUN_DIR": str(runs),
        "LOG_LEVEL": "WARNING",
    }
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    output = tmp_path / "serve.out"
    with output.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve"],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def said() -> str:
        return output.read_text()

    def healthz() -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)
        except OSError:
            return 0, {}

    try:
        wait_for(lambda: said().count("refused to start again") >= 1, timeout=90, what="two")
        status, body = healthz()
        assert status == 503 and body["worker"]["status"] == "refused"
        assert "cannot enter a folder above LOCAL_RUN_DIR" in body["worker"]["problem"]
        # The operator opens the folder: the next start runs, with no one restarting serve.
        closed.chmod(0o711)
        wait_for(lambda: healthz()[0] == 200, timeout=90, what=f"the worker recovering: {said()}")
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=30)
    text = said()
    reason = f"the jobs' users cannot enter {closed}, above {runs}"
    assert text.count(reason) == 1, text
    assert "The worker refused to start (exit code 78): local jobs cannot run as" in text
    assert "the worker is tried again in 1 s" in text
    assert (
        "The worker refused to start again, for the reason above; the worker is tried again in"
        in text
    )
    assert "Traceback" not in text and "CommandError" not in text
    # Its refusal file is gone with it.
    assert not list(var.glob("worker-refusal-*"))


@pytest.mark.browser
def test_staff_read_why_the_worker_refused_in_the_language_they_switch_to(
    page, reviewer, settings, closed_run_dir
):
    from playwright.sync_api import expect

    from tests.conftest import log_in

    closed, runs = closed_run_dir
    worker_refused(problems=refusing(settings, runs))
    log_in(page, "carol", "carol-password")
    page.goto("/")
    problem = page.locator("#worker-problem")
    expect(problem).to_contain_text(f"任务调度进程（worker）拒绝启动：LOCAL_JOB_UID_BASE={BASE}")
    expect(problem).to_contain_text(f"chmod o+x {closed}")

    page.click("[data-language=en]")

    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(problem).to_contain_text(
        f"The worker refused to start: LOCAL_JOB_UID_BASE={BASE}: the jobs' users cannot "
        f"enter {closed}, above {runs}"
    )
    page.locator('a[href="/admin/"]').first.click()
    expect(page.locator("#worker-problem")).to_contain_text("The worker refused to start")


# -- review 18 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "public"),
    [
        ("no-such-group-rv18", "LOCAL_JOB_GID is no group of this machine"),
        ("root", "LOCAL_JOB_GID is a system group's, whose rights every job would have"),
    ],
)
def test_healthz_names_no_group_of_local_job_gid_and_staff_still_read_it(
    settings, tmp_path, reviewer, group, public
):
    """Found in review: /healthz (answered to anyone) said LOCAL_JOB_GID's group by name, and
    a system group's gid; it says which setting is wrong, and staff read the group."""
    if os.geteuid() != 0:
        pytest.skip("the group checks are made for a worker run as root (CI runs as root)")
    settings.LOCAL_JOB_UID_BASE = BASE
    settings.LOCAL_JOB_GID = group
    settings.LOCAL_RUN_DIR = str(tmp_path / "runs")
    settings.LOCAL_VOLUMES = ""
    worker_refused(problems=job_users.problems())

    problem = Client().get("/healthz").json()["worker"]["problem"]

    assert public in problem
    assert group not in problem and "gid 0" not in problem
    staff = Client()
    staff.force_login(reviewer)
    staff.cookies["django_language"] = "en"
    assert f"LOCAL_JOB_GID={group}" in staff.get("/admin/").content.decode()


def test_a_refusal_made_long_before_the_running_worker_stopped_is_not_said_as_why(
    settings, closed_run_dir, db
):
    """Found in review: a refusal made once beside a running worker (`manage.py worker` run
    by hand, a standby since fixed) stayed in the lease while that worker ran, and when it
    stopped days later /healthz and staff were told the old refusal instead of `stopped`.
    Decided: a refusal is why none runs if made after the last worker's last beat, or at
    most WORKER_STALE_SECONDS before it (a refused worker started again renews it)."""
    from jobs.health import worker_stopped
    from jobs.models import WorkerHeartbeat

    _, runs = closed_run_dir
    running = WorkerIdentity.new()
    assert worker_beat(worker=running) is True
    worker_refused(problems=refusing(settings, runs))
    # The refusal was made an hour ago; the worker has beaten since.
    WorkerHeartbeat.objects.update(refused_at=F("refused_at") - timedelta(hours=1))
    assert worker_beat(worker=running) is True
    worker_stopped(worker=running)

    answer = Client().get("/healthz")

    assert answer.status_code == 503
    assert answer.json()["worker"]["status"] == "stopped"
    assert "problem" not in answer.json()["worker"]
    assert worker_state().problem is None

    # Refused again now (started again by serve or a service manager): said again.
    worker_refused(problems=refusing(settings, runs))
    assert Client().get("/healthz").json()["worker"]["status"] == "refused"


def test_serve_killed_outright_leaves_no_refusal_file_behind(tmp_path):
    """Found in review: serve made a named refusal file in VAR_DIR at each start and removed
    it only when stopped cleanly, so each kill -9 left one; it is a file with no name now,
    handed to the worker, and the var folder holds nothing of it while serve runs either."""
    port = free_port()
    var = tmp_path / "var"
    env = {**os.environ, "CONSOLE_VAR_DIR": str(var), "DEBUG": "0", "PORT": str(port)}
    env.pop("DATABASE_URL", None)
    env.pop("LOCAL_JOB_UID_BASE", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_for(healthy, timeout=90, what="serve's worker running")
        assert not list(var.glob("worker-refusal-*"))
    finally:
        os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
        # Its children end with it (PR_SET_PDEATHSIG); whatever is left of its group too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
    assert not list(var.glob("worker-refusal-*"))


def test_a_refusal_file_that_cannot_be_written_leaves_the_reason_on_stderr(
    world,  # noqa: F811
    closed_run_dir,
    tmp_path,
):
    """Found in review: a refusal file the worker could not write (its folder gone) ended the
    worker with a traceback and exit code 1, the reason said nowhere; it is said on stderr,
    and the exit code is still 78."""
    closed, runs = closed_run_dir
    env = {**world["env"], "LOCAL_JOB_UID_BASE": str(BASE), "LOCAL_RUN_DIR": str(runs)}
    env["LOCAL_VOLUMES"] = ""

    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "worker",
            "--no-tasks",
            "--refusal-file",
            str(tmp_path / "gone" / "refusal"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == EXIT_REFUSED
    assert f"the jobs' users cannot enter {closed}, above {runs}" in done.stderr
    assert "Traceback" not in done.stderr


def test_staff_read_that_workers_started_since_a_clean_stop_refused_not_that_none_started(
    settings, closed_run_dir, reviewer
):
    # Found in QA 24: under a refusal the banner still said "none has started since", though
    # `make run` had started (and the refusal recorded) one worker after another.
    from jobs.health import worker_stopped

    _, runs = closed_run_dir
    running = WorkerIdentity.new()
    assert worker_beat(worker=running) is True
    worker_stopped(worker=running)
    worker_refused(problems=refusing(settings, runs))
    staff = Client()
    staff.force_login(reviewer)

    staff.cookies["django_language"] = "en"
    page = staff.get("/").content.decode()
    staff.cookies["django_language"] = "zh-hans"
    chinese = staff.get("/").content.decode()

    assert "each worker started since refused to run (why: above)" in page
    assert "none has started since" not in page
    assert "此后启动的每个任务调度进程（worker）都拒绝运行（原因见上）" in chinese
