"""A LOCAL_BWRAP (the path of bubblewrap) that names no program stops `serve` and the worker at
their start, naming the variable, where the local runner is enabled (QA 46: both started, and
each local job failed at its launch)."""

from __future__ import annotations

import os
import subprocess
import sys

from django.utils import translation

from jobs.checks import bwrap_problems
from jobs.health import refusal_shown
from jobs.management.commands.worker import EXIT_REFUSED
from jobs.runner import free_port

from .test_alerts import smtp_server  # noqa: F401  (the world's mail server)
from .test_worker import ROOT, query, world  # noqa: F401

MISTYPED = "/usr/bin/bwarp"


def test_the_worker_refuses_a_mistyped_bwrap_at_its_start_and_records_why(world):  # noqa: F811
    done = subprocess.run(
        [sys.executable, "manage.py", "worker", "--no-tasks"],
        cwd=ROOT,
        env={**world["env"], "LOCAL_BWRAP": MISTYPED},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == EXIT_REFUSED
    assert f"LOCAL_BWRAP={MISTYPED} is not a program this machine can run" in done.stderr
    assert "apt-get install bubblewrap" in done.stderr and "Traceback" not in done.stderr
    [(refused,)] = query(world, "SELECT refused FROM jobs_workerheartbeat")
    # /healthz's words name no path of this machine.
    assert refused == (
        "the worker refused to start: LOCAL_BWRAP does not name a program this machine can "
        "run: no local job can start"
    )


def test_serve_refuses_a_mistyped_bwrap_at_once_and_starts_no_worker(tmp_path):
    env = {
        **os.environ,
        "CONSOLE_VAR_DIR": str(tmp_path),
        "PORT": str(free_port()),
        "LOCAL_BWRAP": MISTYPED,
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)

    served = subprocess.run(
        [sys.executable, "manage.py", "serve"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert served.returncode == 1
    assert served.stderr.startswith(
        f"CommandError: LOCAL_BWRAP={MISTYPED} is not a program this machine can run: it is "
        "the path of bubblewrap (bwrap)"
    )
    assert "Console on" not in served.stdout
    assert not (tmp_path / "runs" / "worker.lock").exists()  # no worker ever started


def test_a_folder_or_a_file_that_cannot_be_run_is_refused_too(settings, tmp_path):
    not_executable = tmp_path / "bwrap"
    not_executable.write_text("#!/bin/sh\n")
    not_executable.chmod(0o644)

    for path in (str(tmp_path), str(not_executable), "bwrap"):
        settings.LOCAL_BWRAP = path
        [problem] = bwrap_problems()
        assert problem.startswith(f"LOCAL_BWRAP={path} is not a program")


def test_the_installed_bwrap_is_taken(settings):
    settings.LOCAL_BWRAP = "/usr/bin/bwrap"

    assert bwrap_problems() == []


def test_a_console_without_the_local_runner_does_not_check_it(settings):
    settings.CONSOLE_BACKENDS = ["aihc"]
    settings.LOCAL_BWRAP = MISTYPED

    assert bwrap_problems() == []


def test_staff_read_the_refusal_in_chinese(settings):
    settings.LOCAL_BWRAP = MISTYPED
    sources = [problem.source() for problem in bwrap_problems()]

    with translation.override("zh-hans"):
        shown = refusal_shown("", sources)

    assert f"LOCAL_BWRAP={MISTYPED}" in shown and "bubblewrap" in shown
    assert "is not a program" not in shown
