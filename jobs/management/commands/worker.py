from __future__ import annotations

import argparse
import logging
import signal
import threading
from pathlib import Path
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandError

from jobs import job_users
from jobs.checks import bwrap_problems, not_migrated_problem
from jobs.health import worker_refused
from jobs.worker import run_forever


class Command(BaseCommand):
    help = (
        "Runs the background worker: dispatches and supervises local jobs, submits and syncs "
        "remote ones, delivers alerts, deletes expired jobs. Stop with Ctrl-C or SIGTERM; "
        "running jobs keep running and are adopted by the next worker."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--no-tasks",
            action="store_true",
            help="Do not run django tasks (alert delivery) in this process.",
        )
        # Given by `manage.py serve`: a refusal is written there, not to stderr, and serve
        # says it once per distinct reason however often the worker is started again.
        parser.add_argument("--refusal-file", default="", help=argparse.SUPPRESS)

    def handle(
        self, *args: Any, no_tasks: bool = False, refusal_file: str = "", **options: Any
    ) -> None:
        # LOCAL_JOB_UID_BASE set where jobs cannot run as their owners' users: the worker
        # stops here, saying why, rather than run them as its own user or fail each one.
        problems = job_users.problems()
        if problems:
            refuse(
                "local jobs cannot run as their owners' users (LOCAL_JOB_UID_BASE; see "
                'README, "Each user\'s jobs as a user of their own"):\n- ' + "\n- ".join(problems),
                problems=problems,
                refusal_file=refusal_file,
            )
        # A mistyped LOCAL_BWRAP: every local job would fail at its launch (QA 46).
        if problems := bwrap_problems():
            refuse(
                "local jobs cannot start (LOCAL_BWRAP):\n- " + "\n- ".join(problems),
                problems=problems,
                refusal_file=refusal_file,
            )
        # After the settings, which need no database: a worker refused for both is told
        # first what the migrations will not fix (and its refusal still exits 78).
        if problem := not_migrated_problem():
            raise CommandError(problem)
        stop = threading.Event()

        def request_stop(*_: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        run_forever(stop, tasks=not no_tasks)


# sysexits.h's EX_CONFIG: the worker refused its settings (README, "Health checks"), as opposed
# to a crash (1) or a signal; `manage.py serve` tells the two apart by it.
EXIT_REFUSED = 78


def refuse(message: str, *, problems: list[job_users.Problem], refusal_file: str) -> NoReturn:
    """Ends the worker refusing its settings: recorded in the lease first (/healthz and staff's
    pages say why until a worker starts fine), then said in full, to `refusal_file` when
    serve gave one (it says it once per distinct reason), else on stderr; exit code 78."""
    try:
        worker_refused(problems=problems)
    except Exception:  # the database out of reach too: the refusal is still said below
        logging.getLogger("jobs.worker").exception("recording the worker's refusal failed")
    if refusal_file:
        try:
            Path(refusal_file).write_text(message + "\n")
        except OSError:
            pass  # the file cannot be written: said on stderr below, not lost in a traceback
        else:
            raise SystemExit(EXIT_REFUSED)
    raise CommandError(message, returncode=EXIT_REFUSED)
